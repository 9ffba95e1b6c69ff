"""The Dask campaign: strong scaling of ``warplab.dask`` on 1 and 2 workers, Dask's overhead
against the direct single-machine call, and the fixed cost of one ``compute()``.

Workloads (``variant``):

* ``corr_pairs``: random-walk series generated on the workers (``warplab.random_walk`` per
  block, persisted before timing), ``corr_pairs(threshold=0.9)``; the pairs are persisted on
  the workers (their count is read afterwards, untimed); TFLOP/s from ``M (M + 1) / 2 * N``
  multiply-adds.
* ``corrcoef``: the same kind of series, ``corrcoef(x).persist()``: the M x M blocks stay on
  the workers; TFLOP/s likewise.
* ``histogram_files``: ``histogram_files`` over files written first (in the page cache);
  GB/s = bytes / time.

Per workload: ``mode="direct"`` (the single-machine call in this process: the GPU's or
NumPy's), then ``mode="cluster"`` with 1 and 2 workers (``dask_cuda.LocalCUDACluster`` on
cuda, one GPU each; ``distributed.LocalCluster`` processes on cpu). Records carry
``speedup`` and ``efficiency`` against the one-worker cluster and ``overhead_pct`` of the
one-worker cluster over the direct call. ``variant="fixed_cost"``: one ``compute()`` of a
two-chunk sum per cluster. Verification: counts exactly, coefficients within 1e-9 (float64)
on a checked block, the pair count within 1e-6 of the direct call's (pairs within rounding
of the threshold may fall either way).
"""
from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from warplab.lab.harness.campaign import finish_campaign
from warplab.lab.harness.ceilings import measure_all
from warplab.lab.harness.results import make_result
from warplab.lab.harness.stats import summarize
from warplab.core.errors import InvalidValueError

WORKLOADS = ("corr_pairs", "corrcoef", "histogram_files")
MiB, GiB = 1 << 20, 1 << 30


@dataclass(frozen=True)
class DaskCampaign:
    pairs: tuple[int, int]      # (M, N) of corr_pairs
    corr: tuple[int, int]       # (M, N) of corrcoef
    files: tuple[int, int]      # (count, bytes each) of histogram_files
    blocks: int                 # blocks of series (row chunks)
    runs: int
    warmup: int
    workers: tuple[int, ...] = (1, 2)
    threshold: float = 0.9


CAMPAIGNS = {
    "quick": DaskCampaign((2000, 64), (512, 128), (4, 4 * MiB), blocks=4, runs=3, warmup=1),
    "table": DaskCampaign((400_000, 512), (65_536, 4096), (4, 8 * GiB), blocks=8, runs=3,
                          warmup=1),
}
CAMPAIGNS["full"] = CAMPAIGNS["table"]


def _walk_block(m: int, n: int, blocks: int, device: str, block_info: Any = None) -> Any:
    import warplab

    i = block_info[None]["chunk-location"][0] if block_info else 0
    rows = -(-m // blocks)
    return warplab.random_walk(min(rows, m - i * rows), n, seed=1000 + i, device=device)


def _series(m: int, n: int, blocks: int, backend: str) -> Any:
    """Lazy (M, N) float32 random walks, one block of rows per task, made on the workers."""
    import dask.array as da

    rows = -(-m // blocks)
    chunks = (tuple(min(rows, m - s) for s in range(0, m, rows)), (n,))
    meta = _meta(backend)
    return da.map_blocks(_walk_block, m, n, len(chunks[0]), backend, chunks=chunks,
                         dtype=np.float32, meta=meta)


def _meta(backend: str) -> Any:
    if backend == "cuda":
        import cupy

        return cupy.empty((0, 0), np.float32)
    return np.empty((0, 0), np.float32)


def _sync(backend: str) -> None:
    if backend == "cuda":
        import cupy

        cupy.cuda.get_current_stream().synchronize()


def _times(fn: Callable[[], Any], s: DaskCampaign) -> tuple[Any, list[float]]:
    out, ms = None, []
    for i in range(s.warmup + s.runs):
        t0 = time.perf_counter()
        out = fn()
        if i >= s.warmup:
            ms.append(1e3 * (time.perf_counter() - t0))
    return out, ms


def _cluster(backend: str, workers: int, notes: list[str]) -> Any:
    from distributed import LocalCluster

    if backend == "cuda":
        import cupy

        gpus = cupy.cuda.runtime.getDeviceCount()
        try:
            from dask_cuda import LocalCUDACluster
        except ImportError:
            LocalCUDACluster = None
            notes.append("dask_cuda not importable: workers are LocalCluster processes on GPU 0")
        if LocalCUDACluster is not None and workers <= gpus:
            return LocalCUDACluster(n_workers=workers, dashboard_address=None,
                                    CUDA_VISIBLE_DEVICES=",".join(map(str, range(workers))))
        if workers > gpus:
            notes.append(f"{workers} workers on {gpus} GPU(s): they share GPU 0")
    return LocalCluster(n_workers=workers, processes=True, threads_per_worker=1,
                        dashboard_address=None)


def _direct(workload: str, s: DaskCampaign, backend: str, paths: list[str]) -> tuple:
    """The single-machine call on the whole data in this process: (result, samples)."""
    import warplab

    if workload == "histogram_files":
        return _times(lambda: warplab.byte_histogram(paths, device=backend), s)
    m, n = s.pairs if workload == "corr_pairs" else s.corr
    x = _series(m, n, s.blocks, backend).compute(scheduler="sync")
    if workload == "corr_pairs":
        def call() -> Any:
            p = warplab.corr_pairs(x, threshold=s.threshold, device=backend)
            _sync(backend)
            return int(p.i.size)
        return _times(call, s)
    # a device result of M = 65,536 (34 GB) is computed tile by tile into a preallocated out
    out = __import__("cupy").empty((m, m)) if backend == "cuda" else None

    def corr() -> Any:
        r = warplab.corrcoef(x, device=backend, out=out)
        _sync(backend)
        return r
    r, ms = _times(corr, s)
    b = min(1024, m)
    corner = r[:b, -b:].copy()  # what _verify checks; the rest is freed before the clusters
    del r, out
    return corner, ms


def _on_cluster(workload: str, s: DaskCampaign, backend: str, client: Any,
                paths: list[str]) -> tuple:
    import dask
    import warplab.dask as wd
    from distributed import wait

    if workload == "histogram_files":
        return _times(lambda: wd.histogram_files(paths, device=backend).compute(
            scheduler=client.get), s)
    m, n = s.pairs if workload == "corr_pairs" else s.corr
    x = client.persist(_series(m, n, s.blocks, backend))
    wait(x)
    if workload == "corr_pairs":
        def call() -> Any:
            ps = client.persist(list(wd.corr_pairs(x, threshold=s.threshold)))
            wait(ps)
            return ps
        ps, ms = _times(call, s)
        lens = [dask.delayed(len)(d) for d in ps[0].to_delayed().ravel()]
        return int(sum(dask.compute(*lens, scheduler=client.get))), ms

    def persist() -> Any:
        r = client.persist(wd.corrcoef(x))
        wait(r)
        return r
    return _times(persist, s)


def _verify(workload: str, got: Any, ref: Any, s: DaskCampaign, client: Any) -> str | None:
    """None when the cluster's result matches the direct call's, else what differs."""
    from warplab.core.arrays import to_host

    if workload == "histogram_files":
        ok = np.array_equal(to_host(got), to_host(ref))
    elif workload == "corr_pairs":
        ok = abs(got - ref) <= 1e-6 * max(ref, 1)
    else:
        b = min(1024, s.corr[0])
        block = to_host(got[:b, -b:].compute(scheduler=client.get))
        ok = np.allclose(block, to_host(ref), atol=1e-9, equal_nan=True)
    return None if ok else f"{workload}: the cluster's result differs from the direct call's"


def _work(workload: str, s: DaskCampaign) -> tuple[int, float]:
    """(bytes of input, flops) of a workload."""
    if workload == "histogram_files":
        return s.files[0] * s.files[1], 0.0
    m, n = s.pairs if workload == "corr_pairs" else s.corr
    return m * n * 4, m * (m + 1) / 2 * n * 2


def _record(workload: str, mode: str, workers: int, s: DaskCampaign, backend: str,
            ceilings: dict, ms: list[float], error: str | None, extra: dict) -> dict:
    size, flops = _work(workload, s)
    m, n = (s.pairs if workload == "corr_pairs" else s.corr) \
        if workload != "histogram_files" else s.files
    params = {"size": size, "m": m, "n": n, "mode": mode, "workers": workers,
              "blocks": s.blocks, **extra}
    st = summarize(ms) if ms else None
    r = make_result(family="dask", variant=workload, provider="warplab", backend=backend,
                    params=params, phases={"total": st}, bytes_moved=size, ceilings=ceilings,
                    verified=error is None and st is not None, error=error)
    sec = st["median"] * 1e-3 if st else None
    r["time_s"] = sec
    r["tflops"] = flops / sec / 1e12 if sec and flops and r["verified"] else None
    r["e2e_gbps"] = size / sec / 1e9 if sec and not flops and r["verified"] else None
    return r


def _write_files(d: Path, count: int, each: int) -> list[str]:
    block = np.random.default_rng(3).integers(0, 256, min(each, 64 * MiB), dtype=np.uint8)
    paths = []
    for i in range(count):
        p = d / f"part{i}.bin"
        with open(p, "wb") as f:
            for off in range(0, each, block.size):
                f.write(block[:min(block.size, each - off)].tobytes())
        paths.append(str(p))
    return paths


def _fixed_cost(client: Any, workers: int, backend: str, ceilings: dict, runs: int) -> dict:
    import dask
    import dask.array as da

    tiny = da.ones(10, chunks=5).sum()
    dask.compute(tiny, scheduler=client.get)
    ms = []
    for _ in range(runs):
        t0 = time.perf_counter()
        dask.compute(tiny, scheduler=client.get)
        ms.append(1e3 * (time.perf_counter() - t0))
    return make_result(family="dask", variant="fixed_cost", provider="warplab",
                       backend=backend, params={"size": 80, "workers": workers,
                                                "mode": "cluster"},
                       phases={"total": summarize(ms)}, bytes_moved=80, ceilings=ceilings,
                       verified=True)


def _scaling(records: list[dict]) -> None:
    """``speedup``/``efficiency`` against one worker, ``overhead_pct`` against direct."""
    for r in records:
        if r["variant"] == "fixed_cost":
            continue
        same = [q for q in records if q["variant"] == r["variant"] and q["time_s"]]
        one = next((q for q in same if q["params"]["mode"] == "cluster"
                    and q["params"]["workers"] == 1), None)
        direct = next((q for q in same if q["params"]["mode"] == "direct"), None)
        w = r["params"]["workers"]
        ok = r["time_s"] and one and r["params"]["mode"] == "cluster"
        r["speedup"] = one["time_s"] / r["time_s"] if ok else None
        r["efficiency"] = r["speedup"] / w if r["speedup"] else None
        r["overhead_pct"] = (100 * (one["time_s"] / direct["time_s"] - 1)
                             if r is one and direct else None)


def run_dask(*, campaign: str, backend: str, json_path: Path | None,
             workloads: list[str] | None = None, runs: int | None = None,
             warmup: int | None = None, tmp_dir: str | None = None,
             progress: Callable[[int, int, dict], None] | None = None) -> dict:
    """Run the campaign; returns (and writes to ``json_path``) the results document."""
    from distributed import Client

    s = CAMPAIGNS[campaign]
    s = replace(s, runs=s.runs if runs is None else max(1, runs),
                warmup=s.warmup if warmup is None else max(0, warmup))
    chosen = list(workloads or WORKLOADS)
    bad = [w for w in chosen if w not in WORKLOADS]
    if bad:
        raise InvalidValueError(f"unknown dask workload(s) {bad}; valid: {', '.join(WORKLOADS)}")
    ceilings = measure_all(backend)
    notes = ["time: the public call end to end (cluster: persist + wait, or compute); "
             "series generated and persisted on the workers before timing",
             "overhead_pct: the one-worker cluster over the direct single-machine call"]
    records: list[dict] = []
    total = len(chosen) * (1 + len(s.workers)) + len(s.workers)

    def add(r: dict) -> None:
        records.append(r)
        if progress is not None:
            progress(len(records), total, r)

    with tempfile.TemporaryDirectory(dir=tmp_dir) as d:
        paths = _write_files(Path(d), *s.files) if "histogram_files" in chosen else []
        refs = {}
        for w in chosen:
            refs[w], ms = _direct(w, s, backend, paths)
            add(_record(w, "direct", 1, s, backend, ceilings, ms, None, {}))
        if backend == "cuda":  # the workers on GPU 0 get the memory the direct calls cached
            __import__("cupy").get_default_memory_pool().free_all_blocks()
        for workers in s.workers:
            cluster = _cluster(backend, workers, notes)
            with cluster, Client(cluster) as client:
                kind = type(cluster).__name__
                for w in chosen:
                    error, ms = None, []
                    try:
                        got, ms = _on_cluster(w, s, backend, client, paths)
                        error = _verify(w, got, refs[w], s, client)
                    except Exception as exc:  # a record with the error, never a crash
                        error = f"{type(exc).__name__}: {exc}"
                    add(_record(w, "cluster", workers, s, backend, ceilings, ms, error,
                                {"cluster": kind}))
                add(_fixed_cost(client, workers, backend, ceilings, 20))
    _scaling(records)
    return finish_campaign(backend, ceilings, list(dict.fromkeys(notes)), campaign, records,
                           json_path)

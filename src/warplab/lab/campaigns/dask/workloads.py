"""The Dask campaign's workloads: their sizes per campaign, the data each run makes, the
timed call, and what a run's result is checked by.

Every run has its own seed: the series are random walks made from it on the workers (one
task per block of rows, persisted and waited for before the clock starts), so every run
computes new keys; ``histogram_files`` reads the same files each run under new keys
(``dask.graph_manipulation.clone`` with the run's seed). The timed part is the call and a
``persist()`` of its result, stopped by ``wait()``. The direct mode makes the same data
(the same seeds) in this process and times the single-machine call to a synchronised
result, so each cluster run is checked against the direct run of its seed.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

MiB, GiB = 1 << 20, 1 << 30
#: Side of the corner block of a corrcoef result compared with the direct call's.
CORNER = 1024


@dataclass(frozen=True)
class Workload:
    """One workload: ``op`` ``pairs`` (``corr_pairs`` above ``threshold``), ``corrcoef`` or
    ``files`` (``histogram_files``; ``cold``: evicted from the page cache before each run)."""

    name: str
    op: str
    m: int = 0                  # series
    n: int = 0                  # values per series
    threshold: float = 0.9
    precision: str = "float64"
    files: tuple[int, int] = (0, 0)   # (count, bytes each)
    cold: bool = False
    blocks: int = 8             # blocks of rows (the same in every mode: strong scaling)
    warmup: int = 1
    runs: int = 2
    min_gpus: int = 0           # fewer GPUs on cuda: not run; fewer workers: that mode not run
    direct: bool = True         # False: cluster modes only (no single GPU holds the result)

    def work(self) -> tuple[int, float]:
        """(bytes of input, flops): ``M (M + 1) / 2 * N`` multiply-adds of the Gram product."""
        if self.op == "files":
            return self.files[0] * self.files[1], 0.0
        return self.m * self.n * 4, self.m * (self.m + 1) / 2 * self.n * 2


def _set(kind: str) -> list[Workload]:
    quick = kind == "quick"
    pairs = (2000, 64) if quick else (400_000, 512)
    corr = (512, 128) if quick else (65_536, 4096)
    large = (1024, 128) if quick else (131_072, 4096)
    files = (4, 4 * MiB) if quick else (4, 8 * GiB)
    w, r = 1, 2  # warm-up and timed runs of the series workloads
    return [
        Workload("corr_pairs_0.9", "pairs", *pairs, threshold=0.9,
                 blocks=4 if quick else 16, warmup=w, runs=r),
        Workload("corr_pairs_0.99", "pairs", *pairs, threshold=0.99,
                 blocks=4 if quick else 16, warmup=w, runs=r),
        Workload("corrcoef", "corrcoef", *corr, blocks=4 if quick else 8, warmup=w, runs=r),
        Workload("corrcoef_large", "corrcoef", *large, blocks=8 if quick else 16, warmup=w,
                 runs=r, min_gpus=4, direct=False),
        Workload("histogram_files", "files", files=files, warmup=1, runs=3 if not quick else 2),
        Workload("histogram_files_cold", "files", files=files, cold=True, warmup=0, runs=1),
    ]


CAMPAIGNS: dict[str, list[Workload]] = {"quick": _set("quick"), "table": _set("table")}
WORKLOADS = tuple(w.name for w in CAMPAIGNS["table"])


def chosen(campaign: str, names: list[str] | None, runs: int | None, warmup: int | None
           ) -> list[Workload]:
    """The campaign's workloads named (all by default), with runs/warm-up overridden."""
    out = [w for w in CAMPAIGNS[campaign] if names is None or w.name in names]
    return [replace(w, runs=w.runs if runs is None else max(1, runs),
                    warmup=w.warmup if warmup is None else max(0, warmup)) for w in out]


# ---------------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------------

def _walk_block(m: int, n: int, blocks: int, backend: str, seed: int,
                block_info: Any = None) -> Any:
    import warplab

    i = block_info[None]["chunk-location"][0] if block_info else 0
    rows = -(-m // blocks)
    return warplab.random_walk(min(rows, m - i * rows), n, seed=seed * 1000 + i,
                               device=backend)


def series(w: Workload, backend: str, seed: int) -> Any:
    """Lazy (M, N) float32 random walks of ``seed``, one task per block of rows."""
    import dask.array as da

    rows = -(-w.m // w.blocks)
    chunks = (tuple(min(rows, w.m - s) for s in range(0, w.m, rows)), (w.n,))
    if backend == "cuda":
        import cupy

        meta = cupy.empty((0, 0), np.float32)
    else:
        meta = np.empty((0, 0), np.float32)
    return da.map_blocks(_walk_block, w.m, w.n, len(chunks[0]), backend, seed, chunks=chunks,
                         dtype=np.float32, meta=meta)


def write_files(folder: Any, count: int, each: int) -> list[str]:
    """``count`` files of ``each`` random bytes in ``folder``; files already there with that
    size are kept (a campaign split over several commands writes them once)."""
    from pathlib import Path

    block = np.random.default_rng(3).integers(0, 256, min(each, 64 * MiB), dtype=np.uint8)
    paths = []
    for i in range(count):
        p = Path(folder) / f"part{i}.bin"
        if not (p.exists() and p.stat().st_size == each):
            with open(p, "wb") as f:
                for off in range(0, each, block.size):
                    f.write(block[:min(block.size, each - off)].tobytes())
        paths.append(str(p))
    return paths


# ---------------------------------------------------------------------------------------------
# the timed calls
# ---------------------------------------------------------------------------------------------

def lazy_call(w: Workload, x: Any, paths: list[str], backend: str, seed: int) -> list:
    """The workload's warplab.dask call on the persisted series ``x`` (or on the files), as a
    list of collections to persist."""
    import warplab.dask as wd

    if w.op == "files":  # new keys per call: with a client the shares are submitted anew
        return [wd.histogram_files(paths, device=backend)]
    if w.op == "pairs":
        return list(wd.corr_pairs(x, threshold=w.threshold, precision=w.precision))
    return [wd.corrcoef(x, precision=w.precision)]


def on_cluster(w: Workload, client: Any, paths: list[str], backend: str, seed: int
               ) -> tuple[list, list, float]:
    """One cluster run: the data of ``seed`` made and persisted (untimed), then the call
    persisted and waited for (timed). Returns (data, result, seconds); release both."""
    from distributed import wait

    data: list = []
    x = None
    if w.op != "files":
        x = client.persist(series(w, backend, seed))
        wait(x)
        data = [x]
    t0 = time.perf_counter()  # the call itself counts: with a client corr submits its tasks
    lazy = lazy_call(w, x, paths, backend, seed)
    out = client.persist(lazy)
    wait(out)
    return data, out, time.perf_counter() - t0


def cluster_summary(w: Workload, out: list, client: Any) -> Any:
    """What a cluster run is checked by (untimed): the pair count, the corner block of the
    matrix, or the histogram, on the host."""
    import dask

    from warplab.core.arrays import to_host

    if w.op == "pairs":
        lens = [dask.delayed(len)(d) for d in out[0].to_delayed().ravel()]
        return int(sum(dask.compute(*lens, scheduler=client.get)))
    if w.op == "corrcoef":
        b = min(CORNER, w.m)
        return to_host(out[0][:b, -b:].compute(scheduler=client.get))
    return to_host(out[0].compute(scheduler=client.get))


def direct(w: Workload, paths: list[str], backend: str, seed: int) -> tuple[Any, float]:
    """One direct run: the data of ``seed`` made in this process (untimed), then the
    single-machine call to a synchronised result (timed). Returns (summary, seconds)."""
    import warplab
    from warplab.core.arrays import to_host

    def sync() -> None:
        if backend == "cuda":
            import cupy

            cupy.cuda.runtime.deviceSynchronize()

    if w.op == "files":
        t0 = time.perf_counter()
        h = warplab.byte_histogram(paths, device=backend)
        return to_host(h), time.perf_counter() - t0
    x = series(w, backend, seed).compute(scheduler="sync")
    sync()
    t0 = time.perf_counter()
    if w.op == "pairs":
        p = warplab.corr_pairs(x, threshold=w.threshold, precision=w.precision, device=backend)
        sync()
        sec = time.perf_counter() - t0
        summary: Any = int(p.i.size)
        del p
    else:  # into a result allocated first (untimed): on a GPU the call fills it tile by tile
        out = None
        if backend == "cuda":
            import cupy

            out = cupy.empty((w.m, w.m))
            t0 = time.perf_counter()
        r = warplab.corrcoef(x, precision=w.precision, device=backend, out=out)
        sync()
        sec = time.perf_counter() - t0
        b = min(CORNER, w.m)
        summary = to_host(r[:b, -b:])
        del r, out
    if backend == "cuda":
        import cupy

        cupy.get_default_memory_pool().free_all_blocks()
    return summary, sec


def differs(w: Workload, got: Any, ref: Any) -> str | None:
    """None where a run's summary matches the reference's (the same seed), else what
    differs: histograms exactly, the pair count within 1e-6 of the reference's (pairs within
    rounding of the threshold may fall either way), the corner block within 1e-9."""
    if w.op == "files":
        ok = np.array_equal(got, ref)
    elif w.op == "pairs":
        ok = abs(got - ref) <= 1e-6 * max(ref, 1)
        if not ok:
            return f"{got:,} pairs against the reference's {ref:,}"
    else:
        ok = np.allclose(got, ref, atol=1e-9, equal_nan=True)
    return None if ok else "the result differs from the reference run's"

"""The Dask campaign: strong scaling of ``warplab.dask`` from one GPU to a cluster of
separate processes, Dask's overhead over the direct call, and no figure above its ceiling.

Workloads (``workloads.py``, ``variant``): ``corr_pairs_0.9`` and ``corr_pairs_0.99``
(400,000 x 512 float32 random walks), ``corrcoef`` (65,536 x 4,096, float64 products, the
result blocks persisted on the workers), ``corrcoef_large`` (131,072 x 4,096, only with 4 or
more GPUs, cluster modes only), ``histogram_files`` (4 x 8 GiB of files in the page cache)
and ``histogram_files_cold`` (evicted before each run). Modes (``modes.py``): ``direct``,
``cluster`` with 1, 2 and 4 workers over ``tcp`` (and ``ucx`` where it imports), and
``processes`` (Dask's CLI, every GPU).

Every run makes its own data (a seed per run, persisted on the workers and waited for before
the clock starts, the previous run's data and result released first), then times the call
with its result persisted until ``wait()`` returns; afterwards (untimed) every worker
synchronises its device and the record carries the longest such synchronisation
(``completion_lag_ms``; above ``limits.LATE_MS`` it is flagged ``completion_late``). A run's
result is checked against the direct run of the same seed (or, where the direct call failed,
the first mode that succeeded: ``params.reference``). A record whose rate is above the
ceiling of its devices is failed (``limits.judge``). Records carry ``speedup`` and
``efficiency`` against the one-worker cluster of the same protocol (``processes``: tcp) and,
on one-worker clusters, ``overhead_pct`` over the direct call. ``fixed_cost``: one
``compute()`` of a tiny graph per cluster; ``host_read``: the host's read bandwidth (memory
with a thread per core; the page-cached files also with each worker count's streaming
threads) beside the file workloads; the fastest page-cache read is the files' ceiling.
"""
from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from warplab.core import staging
from warplab.core.errors import InvalidValueError
from warplab.lab.campaigns.dask import limits, modes as md, workloads as wl
from warplab.lab.campaigns.dask.modes import Mode
from warplab.lab.campaigns.dask.workloads import WORKLOADS, Workload
from warplab.lab.harness.campaign import finish_campaign
from warplab.lab.harness.data import evict_from_page_cache
from warplab.lab.harness.ceilings import measure_all
from warplab.lab.harness.results import make_result
from warplab.lab.harness.stats import summarize

__all__ = ["MODE_KINDS", "WORKLOADS", "run_dask"]

MODE_KINDS = ("direct", "cluster", "processes")
SEED0 = 1000
Runner = Callable[[int], tuple[Any, float, float, dict]]  # seed -> (summary, s, lag ms, info)


def _params(w: Workload, mode: Mode, extra: dict) -> dict:
    size, _ = w.work()
    p: dict[str, Any] = {"size": size, "mode": mode.kind, "workers": mode.workers,
                         "protocol": mode.protocol, "runs": w.runs, "warmup": w.warmup}
    if w.op == "files":
        p.update(files=w.files[0], file_bytes=w.files[1], cold=w.cold)
    else:
        p.update(m=w.m, n=w.n, blocks=w.blocks, precision=w.precision)
        if w.op == "pairs":
            p["threshold"] = w.threshold
    return {**p, **extra}


def _record(w: Workload, mode: Mode, backend: str, ceilings: dict, secs: list[float],
            error: str | None, extra: dict) -> dict:
    size, flops = w.work()
    st = summarize([1e3 * s for s in secs]) if secs else None
    ok = error is None and st is not None
    r = make_result(family="dask", variant=w.name, provider="warplab", backend=backend,
                    params=_params(w, mode, extra), phases={"total": st}, bytes_moved=size,
                    ceilings=ceilings, verified=ok, error=error if st or error else "no run")
    sec = st["median"] * 1e-3 if st else None
    r["time_s"] = sec
    r["tflops"] = flops / sec / 1e12 if sec and flops and ok else None
    r["e2e_gbps"] = size / sec / 1e9 if sec and not flops and ok else None
    return r


def _run_mode(w: Workload, mode: Mode, backend: str, ceilings: dict, run: Runner,
              refs: dict, bound: tuple[float | None, str]) -> dict:
    """``w.warmup + w.runs`` runs of ``run`` (seeds SEED0...), checked against ``refs``."""
    secs: list[float] = []
    lags: list[float] = []
    infos: list[dict] = []
    error = reference = None
    for i in range(w.warmup + w.runs):
        seed = SEED0 + i
        try:
            summary, sec, lag, info = run(seed)
        except Exception as exc:  # a record with the error, never a crash
            error = f"{type(exc).__name__}: {exc}"
            break
        lags.append(lag)
        infos.append(info)
        if i >= w.warmup:
            secs.append(sec)
        ref = refs.setdefault((w.name, seed), (summary, mode.label))
        reference = ref[1]
        if ref[1] != mode.label:
            bad = wl.differs(w, summary, ref[0])
            if bad:
                error = f"seed {seed}: {bad} ({ref[1]})"
        if isinstance(summary, int):
            infos[-1]["pairs"] = summary
    extra: dict[str, Any] = {"seeds": [SEED0 + i for i in range(len(lags))],
                             "reference": reference}
    for key in ("pairs", "resident_after_evict", "cluster", "threads_per_worker"):
        vals = [x[key] for x in infos if key in x]
        if vals:
            extra[key] = vals[-1] if key in ("cluster", "threads_per_worker") else vals
    if w.cold and "resident_after_evict" in extra:
        extra["evicted"] = max(extra["resident_after_evict"]) < 0.05
    r = _record(w, mode, backend, ceilings, secs if error is None else [], error, extra)
    r["completion_lag_ms"] = max(lags, default=None)
    r["completion_late"] = bool(lags) and max(lags) > limits.LATE_MS
    rate = r["tflops"] if w.op != "files" else r["e2e_gbps"]
    limits.judge(r, rate, "TFLOP/s" if w.op != "files" else "GB/s", *bound)
    return r


def _cold(w: Workload, paths: list[str]) -> dict:
    if not w.cold:
        return {}
    evict_from_page_cache(paths)
    return {"resident_after_evict": limits.resident_share(paths)}


def _direct_runner(w: Workload, backend: str, paths: list[str]) -> Runner:
    def run(seed: int) -> tuple[Any, float, float, dict]:
        info = _cold(w, paths)
        summary, sec = wl.direct(w, paths, backend, seed)
        return summary, sec, md.completion_lag_ms(None), info
    return run


def _cluster_runner(w: Workload, client: Any, backend: str, paths: list[str], kind: str,
                    held: list, threads: int) -> Runner:
    """Runs on the cluster; ``held`` keeps the last run's persisted data and result (the
    caller releases them after the last run)."""
    def run(seed: int) -> tuple[Any, float, float, dict]:
        md.release(client, held)  # the previous run's data and result first
        info = {"cluster": kind, "threads_per_worker": threads, **_cold(w, paths)}
        data, out, sec = wl.on_cluster(w, client, paths, backend, seed)
        held.extend([*data, *out])
        del data
        lag = md.completion_lag_ms(client)
        return wl.cluster_summary(w, out, client), sec, lag, info
    return run


def _bound(w: Workload, peaks: list[dict], backend: str, page_cache: float | None,
           engines: dict[str, str]) -> tuple[float | None, str]:
    if w.op == "files":
        return limits.byte_ceiling(peaks, page_cache, backend)
    return limits.flop_ceiling(peaks, w.precision, backend, engines.get(w.name, ""))


def _engines(ws: list[Workload], backend: str, notes: list[str]) -> dict[str, str]:
    """The corrcoef engine of each correlation workload (``limits.corr_engine``; cuda only),
    for its ceiling; where it cannot be told, a note, and the GEMM's ceiling is used."""
    out: dict[str, str] = {}
    for w in ws:
        if w.op == "files" or backend != "cuda":
            continue
        try:
            out[w.name] = limits.corr_engine(w.m, w.n, w.precision, backend)
        except Exception as e:  # noqa: BLE001 - a ceiling, not a result: say why, go on
            notes.append(f"{w.name}: engine unknown ({type(e).__name__}: {e}); its ceiling "
                         f"is the GEMM's")
    return out


def _host_reads(paths: list[str], backend: str, ceilings: dict, quick: bool,
                worker_counts: list[int]) -> list[dict]:
    """The host's read bandwidth: memory with a thread per core; the page-cached files with
    a thread per core, with the direct call's streaming threads (``staging.threads()``) and
    with the streaming threads of all the workers of each count (``staging.shared_threads``
    each), so a file workload's scaling is read against what the host gives that many
    readers."""
    cores = md.cores()
    size = (64 << 20) if quick else (4 << 30)
    reads = [("memory", limits.host_read_gbps(size, cores), size, cores)]
    files = sum(Path(p).stat().st_size for p in paths)
    counts = sorted({cores, staging.threads(),
                     *(staging.shared_threads(w) * w for w in worker_counts)})
    reads += [("page_cache", limits.page_cache_read_gbps(paths, t), files, t) for t in counts]
    out = []
    for source, gbps, nbytes, threads in reads:
        r = make_result(family="dask", variant="host_read", provider="host", backend=backend,
                        params={"size": nbytes, "source": source, "threads": threads,
                                "mode": "host", "workers": 0},
                        phases={"total": summarize([1e3 * nbytes / gbps / 1e9])},
                        bytes_moved=nbytes, ceilings=ceilings, verified=True)
        r.update(time_s=nbytes / gbps / 1e9, tflops=None, e2e_gbps=gbps)
        out.append(r)
    return out


def _scaling(records: list[dict]) -> None:
    """``speedup``/``efficiency`` against the one-worker cluster of the same protocol,
    ``overhead_pct`` of each one-worker cluster over the direct call."""
    for r in records:
        r["speedup"] = r["efficiency"] = r["overhead_pct"] = None
        p = r["params"]
        if r["variant"] in ("fixed_cost", "host_read") or not r.get("time_s") \
                or not r["verified"] or p["mode"] == "direct":
            continue
        proto = p["protocol"] or "tcp"
        same = [q for q in records if q["variant"] == r["variant"] and q.get("time_s")
                and q["verified"]]
        one = next((q for q in same if q["params"]["mode"] == "cluster"
                    and q["params"]["workers"] == 1 and q["params"]["protocol"] == proto), None)
        direct = next((q for q in same if q["params"]["mode"] == "direct"), None)
        if one is not None:
            r["speedup"] = one["time_s"] / r["time_s"]
            r["efficiency"] = r["speedup"] / p["workers"]
        if r is one and direct is not None:
            r["overhead_pct"] = 100 * (r["time_s"] / direct["time_s"] - 1)


def run_dask(*, campaign: str, backend: str, json_path: Path | None,
             workloads: list[str] | None = None, runs: int | None = None,
             warmup: int | None = None, tmp_dir: str | None = None,
             files_dir: str | None = None, mode_kinds: list[str] | None = None,
             threads: int = 1, progress: Callable[[int, int, dict], None] | None = None
             ) -> dict:
    """Run the campaign; returns (and writes to ``json_path``) the results document.
    ``files_dir``: where the files of the file workloads are written, and kept (default: a
    temporary folder); ``mode_kinds``: some of ``MODE_KINDS`` (default all); ``threads``:
    threads per worker of the clusters (``params.threads_per_worker`` of their records)."""
    if int(threads) < 1:
        raise InvalidValueError(f"threads must be >= 1, got {threads}")
    bad = [w for w in workloads or [] if w not in WORKLOADS]
    bad += [k for k in mode_kinds or [] if k not in MODE_KINDS]
    if bad:
        raise InvalidValueError(f"unknown dask workload(s) or mode(s) {bad}; valid: "
                                f"{', '.join(WORKLOADS)}; modes {', '.join(MODE_KINDS)}")
    gpus, cores = md.gpu_count(backend), md.cores()
    notes = ["time: the call with its result persisted, until wait(); data made with a new "
             "seed per run and persisted on the workers before the clock starts",
             "overhead_pct: the one-worker cluster over the direct call; speedup against the "
             "one-worker cluster of the same protocol"]
    ws = []
    for w in wl.chosen(campaign, workloads, runs, warmup):
        if w.min_gpus and (backend != "cuda" or gpus < w.min_gpus):
            notes.append(f"{w.name} skipped: it needs {w.min_gpus} GPUs ({gpus} here)")
        else:
            ws.append(w)
    engines = _engines(ws, backend, notes)
    ucx = md.ucx_available()
    if backend == "cuda" and not ucx:
        notes.append("ucx not run: distributed_ucxx (dask-cuda's UCX transport) is missing")
    mode_list = [m for m in md.plan_modes(backend, gpus, cores, ucx)
                 if mode_kinds is None or m.kind in mode_kinds]
    ceilings = measure_all(backend)
    precisions = tuple(sorted({w.precision for w in ws if w.op != "files"}))
    records: list[dict] = []
    total = sum(len(_runs_in(ws, m)) + (m.kind != "direct") for m in mode_list)

    def add(r: dict) -> None:
        records.append(r)
        if progress is not None:
            progress(len(records), max(total, len(records)), r)

    refs: dict = {}
    peaks_by_mode: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory(dir=tmp_dir) as d:
        files = next((w.files for w in ws if w.op == "files"), None)
        folder = Path(files_dir or d)
        folder.mkdir(parents=True, exist_ok=True)
        paths = wl.write_files(folder, *files) if files else []
        page_cache = None
        if paths:
            counts = sorted({m.workers for m in mode_list if m.kind != "direct"} | {1})
            reads = _host_reads(paths, backend, ceilings, campaign == "quick", counts)
            records += reads
            page_cache = max(r["e2e_gbps"] for r in reads if r["params"]["source"] ==
                             "page_cache")  # the fastest read of the cached files
        for mode in mode_list:
            if mode.kind == "direct":
                peaks = [limits.device_peaks(backend, precisions)]
                peaks_by_mode[mode.label] = peaks
                for w in _runs_in(ws, mode):
                    add(_run_mode(w, mode, backend, ceilings,
                                  _direct_runner(w, backend, paths), refs,
                                  _bound(w, peaks, backend, page_cache, engines)))
                _free_device(backend)
                continue
            try:
                with md.open_cluster(mode, backend, Path(d) / "cluster",
                                     int(threads)) as (client, kind):
                    peaks = list(client.run(limits.device_peaks, backend, precisions).values())
                    peaks_by_mode[mode.label] = peaks
                    for w in _runs_in(ws, mode):
                        held: list = []
                        run = _cluster_runner(w, client, backend, paths, kind, held,
                                              int(threads))
                        add(_run_mode(w, mode, backend, ceilings, run, refs,
                                      _bound(w, peaks, backend, page_cache, engines)))
                        md.release(client, held)
                    add(_fixed_cost(client, mode, kind, backend, ceilings))
            except Exception as exc:  # the cluster did not start (or stop): one record each
                done = {r["variant"] for r in records if r["params"].get("mode") == mode.kind
                        and r["params"].get("workers") == mode.workers
                        and r["params"].get("protocol") == mode.protocol}
                for w in _runs_in(ws, mode):
                    if w.name not in done:
                        add(_record(w, mode, backend, ceilings, [],
                                    f"cluster: {type(exc).__name__}: {exc}", {}))
            if json_path is not None:  # what is measured so far survives a cut-off run
                _finish(backend, ceilings, peaks_by_mode, page_cache, notes, campaign, records,
                        json_path)
    return _finish(backend, ceilings, peaks_by_mode, page_cache, notes, campaign, records,
                   json_path)


def _runs_in(ws: list[Workload], mode: Mode) -> list[Workload]:
    """The workloads ``mode`` runs: not those too large for one GPU in ``direct``, not those
    needing ``min_gpus`` GPUs on a cluster with fewer workers."""
    if mode.kind == "direct":
        return [w for w in ws if w.direct]
    return [w for w in ws if mode.workers >= w.min_gpus]


def _finish(backend: str, ceilings: dict, peaks: dict, page_cache: float | None,
            notes: list[str], campaign: str, records: list[dict], json_path: Path | None
            ) -> dict:
    _scaling(records)
    meta_ceilings = {**ceilings, "dask": {"peaks": peaks, "page_cache_gbps": page_cache,
                                          "margin": limits.MARGIN, "late_ms": limits.LATE_MS}}
    return finish_campaign(backend, meta_ceilings, list(dict.fromkeys(notes)), campaign,
                           records, json_path)


def _fixed_cost(client: Any, mode: Mode, kind: str, backend: str, ceilings: dict) -> dict:
    r = make_result(family="dask", variant="fixed_cost", provider="warplab", backend=backend,
                    params={"size": 80, "mode": mode.kind, "workers": mode.workers,
                            "protocol": mode.protocol, "cluster": kind},
                    phases={"total": md.fixed_cost(client)}, bytes_moved=80,
                    ceilings=ceilings, verified=True)
    r.update(time_s=r["phases"]["total"]["median"] * 1e-3, tflops=None, e2e_gbps=None)
    return r


def _free_device(backend: str) -> None:
    """Give this process's cached device memory back before the clusters start (their
    workers share GPU 0 with it)."""
    if backend == "cuda":
        import cupy

        cupy.get_default_memory_pool().free_all_blocks()
        cupy.get_default_pinned_memory_pool().free_all_blocks()

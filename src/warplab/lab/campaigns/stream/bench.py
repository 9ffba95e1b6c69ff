"""The stream campaign: host data to a result at bus speed (``core/streaming.py``).

Per size, the public calls a user makes on host data, end to end on the host clock (the call
until its NumPy result is back), and the phases inside it from ``streaming.collect()``:

* sources (``variant``): ``pageable`` (a NumPy array, staged by the worker threads),
  ``register`` (the same array page-locked in place for the call: ``WARPLAB_STREAM_HOST``),
  ``pinned`` (a ``cupyx.empty_pinned`` array, copied from directly), ``oneshot`` (the
  pageable array with streaming off: the path before streaming, one pageable copy),
  ``file_cached`` (a file in the page cache), ``file_cold`` (the file evicted from the page
  cache before every run with ``posix_fadvise(DONTNEED)``: no root needed) and
  ``file_direct`` (cold, read through ``O_DIRECT``);
* ops (``params.op``): ``histogram`` (``byte_histogram``, 256 bins) on every source, ``sum``
  (``warplab.sum`` of the bytes seen as int32) on the arrays.

Records (family ``stream``): ``phases.total`` the end-to-end samples, ``phases.h2d`` and
``phases.kernel`` the per-run sums over chunks of the copy and kernel times (CUDA events),
``read`` the same for filling the staging buffers (host clock, per chunk); ``e2e_gbps`` =
bytes / total median, ``pct_of_h2d_pinned`` of ``meta.ceilings.h2d_pinned_gbps``, and
``overlap`` = (read + h2d + kernel) / total (medians): 1 means the phases ran one after the
other, up to 3 that they ran side by side. Every result is checked against NumPy.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from warplab.lab.harness.campaign import finish_campaign
from warplab.lab.harness.data import evict_from_page_cache
from warplab.lab.harness.ceilings import measure_all
from warplab.lab.harness.results import make_result
from warplab.lab.harness.stats import summarize
from warplab.core import staging, streaming
from warplab.families.histogram.api import byte_histogram
from warplab.families.reduce.api import sum as wl_sum
from warplab.core.errors import InvalidValueError

MiB, GiB = 1 << 20, 1 << 30
ARRAY_SOURCES = ("pageable", "register", "pinned", "oneshot")
FILE_SOURCES = ("file_cached", "file_cold", "file_direct")
SOURCES = ARRAY_SOURCES + FILE_SOURCES
OPS = ("histogram", "sum")


@dataclass(frozen=True)
class StreamCampaign:
    sizes: tuple[int, ...]
    runs: int
    warmup: int


CAMPAIGNS = {
    "quick": StreamCampaign((64 * MiB, 256 * MiB), runs=3, warmup=1),
    "table": StreamCampaign((256 * MiB, 1 * GiB, 4 * GiB), runs=5, warmup=1),
    "full": StreamCampaign((64 * MiB, 256 * MiB, 1 * GiB, 4 * GiB, 16 * GiB), runs=5, warmup=1),
}
CPU_MAX = 64 * MiB


def _fill(dst: np.ndarray, seed: int = 1) -> None:
    """Random bytes: a 64 MiB block tiled over ``dst`` by the worker threads."""
    block = np.random.default_rng(seed).integers(0, 256, min(dst.size, 64 * MiB),
                                                  dtype=np.uint8)
    starts = range(0, dst.size, block.size)
    list(staging.executor().map(
        lambda s: np.copyto(dst[s:s + block.size], block[:min(block.size, dst.size - s)]),
        starts))


@contextlib.contextmanager
def _env(**values: str) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _case(source: str, op: str, h: np.ndarray, path: Path | None, backend: str
          ) -> tuple[Callable[[], Any], Callable[[], None], dict[str, str]]:
    """(the call, what runs before each run, environment) of one (source, op)."""
    env = {"WARPLAB_STREAM_HOST": "register" if source == "register" else "auto",
           "WARPLAB_STREAM_MIN": str(1 << 62) if source == "oneshot" else "0",
           "WARPLAB_STREAM_DIRECT": "1" if source == "file_direct" else "0"}
    before: Callable[[], None] = (lambda: evict_from_page_cache([path])) if source in ("file_cold",
                                                                      "file_direct") else \
        (lambda: None)
    if op == "sum":
        x = h.view(np.int32)
        return (lambda: wl_sum(x, device=backend)), before, env
    data: Any = path if source.startswith("file") else h
    return (lambda: byte_histogram(data, device=backend)), before, env


def _reference(op: str, h: np.ndarray) -> Any:
    if op == "sum":
        return int(np.sum(h.view(np.int32), dtype=np.int64))
    return byte_histogram(h, device="cpu")


def _time(call: Callable[[], Any], before: Callable[[], None], env: dict[str, str],
          settings: StreamCampaign) -> tuple[Any, dict[str, list[float]]]:
    samples: dict[str, list[float]] = {k: [] for k in ("total", "read", "h2d", "kernel")}
    out = None
    with _env(**env):
        for i in range(settings.warmup + settings.runs):
            before()
            with streaming.collect() as st:
                t0 = time.perf_counter()
                out = call()
                total = time.perf_counter() - t0
            if i < settings.warmup:
                continue
            samples["total"].append(1e3 * total)
            for k in ("read", "h2d", "kernel"):
                samples[k].append(1e3 * sum(s[f"{k}_s"] for s in st))
            samples.setdefault("host", []).append(st[-1]["host"] if st else "none")
            samples.setdefault("chunk", []).append(st[-1]["chunk_bytes"] if st else 0)
    return out, samples


def _record(source: str, op: str, size: int, backend: str, ceilings: dict, samples: dict,
            ok: bool, error: str | None) -> dict:
    stats = {k: summarize(samples[k]) if samples.get(k) else None
             for k in ("total", "read", "h2d", "kernel")}
    cuda = backend == "cuda"
    phases = {"total": stats["total"], "h2d": stats["h2d"] if cuda else None,
              "kernel": stats["kernel"] if cuda else None}
    params = {"size": size, "op": op, "source": source, "mode": "stream",
              "host": (samples.get("host") or ["-"])[-1],
              "chunk_bytes": (samples.get("chunk") or [0])[-1], "threads": staging.threads(),
              "runs": len(samples.get("total", []))}
    r = make_result(family="stream", variant=source, provider="warplab", backend=backend,
                    params=params, phases=phases, bytes_moved=size, ceilings=ceilings,
                    verified=ok and stats["total"] is not None, error=error)
    tot = stats["total"]["median"] if stats["total"] else None
    r["read"] = stats["read"]
    r["e2e_gbps"] = size / (tot * 1e-3) / 1e9 if tot and r["verified"] else None
    h2d_ceiling = ceilings.get("h2d_pinned_gbps")
    r["pct_of_h2d_pinned"] = (100 * r["e2e_gbps"] / h2d_ceiling
                              if r["e2e_gbps"] and h2d_ceiling else None)
    phase_sum = sum(s["median"] for s in (stats["read"], stats["h2d"], stats["kernel"]) if s)
    r["overlap"] = phase_sum / tot if tot and phase_sum and source != "oneshot" else None
    return r


def _sources(backend: str, names: list[str] | None) -> list[str]:
    chosen = list(names or SOURCES)
    bad = [s for s in chosen if s not in SOURCES]
    if bad:
        raise InvalidValueError(f"unknown stream source(s) {bad}; valid: {', '.join(SOURCES)}")
    if backend != "cuda":
        chosen = [s for s in chosen if s not in ("register", "pinned", "oneshot")]
    return chosen


def run_stream(*, campaign: str, backend: str, json_path: Path | None,
               sizes: list[int] | None = None, sources: list[str] | None = None,
               ops: list[str] | None = None, runs: int | None = None,
               warmup: int | None = None, tmp_dir: str | None = None,
               progress: Callable[[int, int, dict], None] | None = None) -> dict:
    """Run the campaign (``sizes``, ``sources``, ``ops``, ``runs``, ``warmup`` replace the
    campaign's); returns (and writes to ``json_path``) the results document. On the cpu
    backend the campaign's sizes stop at 64 MiB and only the file and pageable sources run
    (no bus: threads over chunks)."""
    settings = CAMPAIGNS[campaign]
    settings = replace(settings, runs=settings.runs if runs is None else max(1, runs),
                       warmup=settings.warmup if warmup is None else max(0, warmup))
    bad_ops = [o for o in (ops or []) if o not in OPS]
    if bad_ops:
        raise InvalidValueError(f"unknown stream op(s) {bad_ops}; valid: {', '.join(OPS)}")
    ceilings = measure_all(backend)
    chosen = _sources(backend, sources)
    ops = list(ops or OPS)
    explicit = sizes is not None
    sizes = list(sizes or settings.sizes)
    rates = staging.measure_rates(backend)
    notes = [f"stream rates ({backend}): H2D {rates.h2d_gbps:.1f} GB/s, staging "
             f"{rates.stage_gbps:.1f} GB/s ({rates.source})",
             "file_cold / file_direct: the file is evicted with posix_fadvise(DONTNEED) before "
             "each run (" + ("/proc/sys/vm/drop_caches is writable, not used"
                             if os.access("/proc/sys/vm/drop_caches", os.W_OK) else
                             "/proc/sys/vm/drop_caches is not writable here") + ")",
             "e2e_gbps: bytes / end-to-end median of the public call; overlap: (read + h2d + "
             "kernel medians) / end-to-end median"]
    if backend != "cuda" and not explicit:
        sizes = [s for s in sizes if s <= CPU_MAX] or [CPU_MAX]
    if any(s <= 0 for s in sizes):
        raise InvalidValueError(f"stream sizes must be > 0 bytes, got {min(sizes)}")
    if any(s % 4 for s in sizes):
        raise InvalidValueError("stream sizes must be multiples of 4 bytes (sum reads int32)")
    cases = [(s, src, op) for s in sizes for src in chosen for op in ops
             if not (op == "sum" and src.startswith("file"))]
    records: list[dict] = []
    for size in sizes:
        records += _run_size(size, [(src, op) for s, src, op in cases if s == size], backend,
                             ceilings, settings, tmp_dir, progress, len(records), len(cases))
    return finish_campaign(backend, ceilings, notes, campaign, records, json_path)


def _run_size(size: int, cases: list[tuple[str, str]], backend: str, ceilings: dict,
              settings: StreamCampaign, tmp_dir: str | None,
              progress: Callable[[int, int, dict], None] | None, done: int, total: int
              ) -> list[dict]:
    h = np.empty(size, np.uint8)
    _fill(h)
    refs = {op: _reference(op, h) for op in {op for _, op in cases}}
    pinned = None
    records = []
    with tempfile.TemporaryDirectory(dir=tmp_dir) as d:
        path = Path(d) / "stream.bin"
        if any(src.startswith("file") for src, _ in cases):
            h.tofile(path)
        for src, op in cases:
            data = h
            if src == "pinned":
                if pinned is None:
                    import cupyx

                    pinned = cupyx.empty_pinned(size, np.uint8)
                    np.copyto(pinned, h)
                data = pinned
            error = None
            samples: dict = {}
            try:
                call, before, env = _case(src, op, data, path, backend)
                got, samples = _time(call, before, env, settings)
                ok = bool(np.array_equal(np.asarray(got), np.asarray(refs[op])))
                if not ok:
                    error = f"result differs from NumPy ({op}, {src}, {size} bytes)"
            except Exception as exc:  # a record with the error, never a crash
                ok, error = False, f"{type(exc).__name__}: {exc}"
            rec = _record(src, op, size, backend, ceilings, samples, ok, error)
            records.append(rec)
            if progress is not None:
                progress(done + len(records), total, rec)
    return records

"""Measure histogram variants and comparators on one input, as the histogram report did.

Per run: H2D copy of the input (pinned or pageable host memory), the kernel(s) (clearing the
bins included), D2H copy of the bins; each timed with CUDA events. The kernel phase is held
behind a blocking kernel (``params.held``) so that Python and launch overhead stay outside the
events; calls that synchronise internally (``cupy.bincount`` reads the maximum back, for one)
cannot be held and are timed as the user would see them, overhead included
(``params.held = false``). The bins of the last run are compared with the CPU reference; a
mismatch is recorded as a failure with no speed.

On the cpu backend there are no copies: the kernel phase alone, host-timed, of warplab's NumPy
variant and of the comparator there, NumPy's own ``np.bincount`` on the same bytes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from warplab.core import registry as _registry
from warplab.families.histogram.spec import HistogramProblem, Mapping, histogram_bytes_moved
from warplab.lab.harness import data
from warplab.lab.harness.campaign import cap_sizes, finish_campaign
from warplab.lab.harness.ceilings import measure_all
from warplab.lab.harness.comparators import Provider, campaign_targets, cpu_note
from warplab.core.arrays import map_file
from warplab.lab.campaigns.histogram import comparators
from warplab.families.histogram.cpu import byte_counts
from warplab.families.histogram.spec import resolve
from warplab.lab.harness.results import make_result
from warplab.lab.harness.stats import summarize
from warplab.lab.harness.measure import Settings, time_device_runs
from warplab.lab.harness.timing import time_runs


@dataclass
class HostInput:
    """One input: its name (``uniform``, ``file:x.txt``...), host bytes and 256 byte counts."""

    name: str
    data: np.ndarray
    counts256: np.ndarray
    extra: dict = field(default_factory=dict)


class DeviceStage:
    """Device (and pinned host) buffers for one input, reused by every measured target."""

    def __init__(self, inp: HostInput, settings: Settings) -> None:
        import cupy
        import cupyx

        self.inp, self.settings = inp, settings
        n = inp.data.size
        if settings.pinned:
            self.h_src = cupyx.empty_pinned(n, dtype=np.uint8)
            self.h_src[...] = inp.data
        else:
            self.h_src = inp.data
        self.d_data = cupy.empty(n, dtype=np.uint8)
        self.d_data.set(self.h_src)
        self.h_bins = (cupyx.empty_pinned if settings.pinned else np.empty)(256, dtype=np.int64)
        self._flush = None
        if settings.flush_l2:
            l2 = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["l2CacheSize"]
            self._flush = cupy.empty(max(1, 2 * int(l2)), dtype=np.uint8)

    def flush(self) -> None:
        if self._flush is not None:
            self._flush.fill(0)

    def h2d(self) -> None:
        if self.d_data.size:
            self.d_data.set(self.h_src)


def _params(inp: HostInput, mapping: Mapping, s: Settings, runs: int, backend: str) -> dict:
    return {"size": int(inp.data.size), "data": inp.name, "bins": mapping.name,
            "nbins": mapping.nbins, "pinned": bool(s.pinned and backend == "cuda"),
            "runs": runs, "warmup": s.warmup, **inp.extra}


def _finish(samples: dict[str, list[float]], got: np.ndarray | None, ref: np.ndarray,
            **kw: Any) -> dict:
    phases = {k: summarize(v) for k, v in samples.items()}
    if got is None:
        return make_result(phases=phases, verified=False, error="no result", **kw)
    bad = int(np.count_nonzero(got != ref))
    err = None if bad == 0 else f"result differs from the CPU reference in {bad} of {ref.size} bins"
    return make_result(phases=phases, verified=bad == 0, error=err, **kw)


def _failure(exc: BaseException, **kw: Any) -> dict:
    return make_result(phases={}, verified=False, error=f"{type(exc).__name__}: {exc}", **kw)


def measure_cuda(stage: DeviceStage, mapping: Mapping, target: _registry.Variant | Provider,
                 ceilings: dict) -> dict:
    """Time a cuda variant or a comparator provider on a staged input."""
    import cupy

    s, inp = stage.settings, stage.inp
    ref = mapping.apply_to_counts(inp.counts256)
    problem = HistogramProblem(inp.data.size, mapping.nbins, mapping.name, False)
    if isinstance(target, Provider):
        name, provider = target.name, target.library
        bytes_moved = histogram_bytes_moved(problem)
    else:
        name, provider = target.name, "warplab"
        bytes_moved = target.bytes_moved(problem)
    h_bins = stage.h_bins[:mapping.nbins]
    d_bins = cupy.zeros(mapping.nbins, dtype=np.int64)
    holder: list[Any] = [None]

    def kernel() -> Any:
        if isinstance(target, Provider):
            return target.run(stage.d_data, mapping)
        d_bins.fill(0)
        target.fn(stage.d_data, d_bins, mapping)
        return d_bins

    def run(rec: Any, held: bool) -> None:
        with rec.phase("h2d"):
            stage.h2d()
        with rec.phase("kernel", hold=held):
            holder[0] = kernel()
        with rec.phase("d2h"):
            holder[0].get(out=h_bins)

    kw = dict(family="histogram", variant=name, provider=provider, backend="cuda",
              bytes_moved=bytes_moved, ceilings=ceilings)
    try:
        kernel()  # compile and allocate outside any held phase
        cupy.cuda.get_current_stream().synchronize()
        samples, held = time_device_runs(run, s, stage.flush)
    except Exception as exc:  # a comparator that fails (or OOM) is a recorded failure
        return _failure(exc, params=_params(inp, mapping, s, 0, "cuda"), **kw)
    params = _params(inp, mapping, s, len(samples["total"]), "cuda")
    params["held"] = held
    return _finish(samples, np.array(h_bins), ref, params=params, **kw)


def measure_cpu(inp: HostInput, mapping: Mapping, target: _registry.Variant | Provider,
                settings: Settings, ceilings: dict) -> dict:
    """Time a cpu variant or NumPy's own call (one phase: ``kernel``; there are no copies)."""
    problem = HistogramProblem(inp.data.size, mapping.nbins, mapping.name, False)
    counts = np.zeros(mapping.nbins, dtype=np.int64)

    if isinstance(target, Provider):
        name, provider, bytes_moved = target.name, target.library, histogram_bytes_moved(problem)

        def kernel() -> None:
            counts[...] = target.run(inp.data, mapping)
    else:
        name, provider, bytes_moved = target.name, "warplab", target.bytes_moved(problem)

        def kernel() -> None:
            counts[...] = 0
            target.fn(inp.data, counts, mapping)

    def run(rec: Any) -> None:
        with rec.phase("kernel"):
            kernel()

    kw = dict(family="histogram", variant=name, provider=provider, backend="cpu",
              bytes_moved=bytes_moved, ceilings=ceilings)
    try:
        samples = time_runs(run, warmup=settings.warmup, runs=settings.runs, cuda=False,
                            max_seconds=settings.max_seconds)
    except Exception as exc:
        if not isinstance(target, Provider):
            raise
        return _failure(exc, params=_params(inp, mapping, settings, 0, "cpu"), **kw)
    runs = len(samples["total"])
    return _finish(samples, counts.copy(), mapping.apply_to_counts(inp.counts256),
                   params=_params(inp, mapping, settings, runs, "cpu"), **kw)


def measure_input(inp: HostInput, mappings: list[Mapping], targets: list[Any], backend: str,
                  settings: Settings, ceilings: dict,
                  on_record: Callable[[dict], None] | None = None) -> list[dict]:
    """Measure every target (variants and providers) for every mapping on one input."""
    out: list[dict] = []
    stage = DeviceStage(inp, settings) if backend == "cuda" else None
    try:
        for mapping in mappings:
            for t in targets:
                if stage is not None:
                    rec = measure_cuda(stage, mapping, t, ceilings)
                else:
                    rec = measure_cpu(inp, mapping, t, settings, ceilings)
                out.append(rec)
                if on_record:
                    on_record(rec)
    finally:
        del stage
    return out


@dataclass(frozen=True)
class Campaign:
    sizes: tuple[int, ...]
    data: tuple[str, ...]
    bins: tuple[str, ...]
    runs: int
    warmup: int


CAMPAIGNS = {
    "quick": Campaign(tuple(1 << k for k in (10, 14, 18, 22, 26)), ("uniform", "const"),
                      ("ascii128", "letters"), runs=10, warmup=2),
    "full": Campaign(tuple(1 << k for k in range(3, 33)), ("uniform", "const"),
                     ("ascii128", "letters"), runs=20, warmup=3),
    "table": Campaign((1 << 30,), ("uniform", "const", "text"), ("bytes", "ascii128"),
                      runs=20, warmup=3),
}
CPU_QUICK_MAX = 1 << 22  # the NumPy backend's quick campaign stops here


def targets_for(backend: str, variant_names: list[str] | None, with_comparators: bool
                ) -> tuple[list[Any], list[str]]:
    """Variants (by name, or all of the backend) and the usable comparators, plus notes."""
    targets, notes = campaign_targets("histogram", backend, comparators.HISTOGRAM_PROVIDERS,
                                      variant_names, with_comparators,
                                      cpu_providers=comparators.NUMPY_PROVIDERS)
    if backend == "cpu" and with_comparators:
        notes.append(cpu_note("CuPy, torch, cuda.compute", "np.bincount"))
    return targets, notes


def inputs(kinds: tuple[str, ...], sizes: list[int], file: str | None = None):
    """Yield HostInput per (kind, size): the largest input is generated once and its prefixes
    serve the smaller sizes; reference counts are accumulated prefix by prefix."""
    if file is not None:
        arr = map_file(file)
        yield HostInput(f"file:{Path(file).name}", arr, byte_counts(arr))
        return
    for kind in kinds:
        full = data.generate_fast(kind, max(sizes))
        counts, done = np.zeros(256, dtype=np.int64), 0
        for n in sorted(sizes):
            counts = counts + byte_counts(full[done:n])
            done = n
            yield HostInput(kind, full[:n], counts.copy())


def run_histogram(*, campaign: str = "quick", backend: str, json_path: Path | None,
                  sizes: list[int] | None = None, kinds: list[str] | None = None,
                  bins: list[str] | None = None, variant_names: list[str] | None = None,
                  with_comparators: bool = True, settings: Settings | None = None,
                  file: str | None = None, progress: Callable[[int, int, dict], None] | None = None,
                  on_input: Callable[[HostInput], None] | None = None) -> dict:
    """Run a histogram campaign; write the results to ``json_path`` (if given) and return the
    document. ``on_input`` sees every input (with its reference counts) before it is measured;
    ``progress(done, total, record)`` every record."""
    c = CAMPAIGNS[campaign]
    settings = settings or Settings(runs=c.runs, warmup=c.warmup)
    mappings = [resolve(b) for b in (bins or c.bins)]
    targets, notes = targets_for(backend, variant_names, with_comparators)
    kept, size_notes = cap_sizes(tuple(sizes or c.sizes), backend, explicit=bool(sizes),
                                 cpu_max=CPU_QUICK_MAX)
    notes += size_notes
    kinds_t = tuple(kinds or c.data)
    ceilings = measure_all(backend)
    total = (1 if file else len(kept) * len(kinds_t)) * len(mappings) * len(targets)
    records: list[dict] = []

    def on_record(rec: dict) -> None:
        records.append(rec)
        if progress:
            progress(len(records), total, rec)

    for inp in inputs(kinds_t, kept, file):
        if on_input:
            on_input(inp)
        measure_input(inp, mappings, targets, backend, settings, ceilings, on_record)
    return finish_campaign(backend, ceilings, notes, campaign if not file else "file", records,
                           json_path)

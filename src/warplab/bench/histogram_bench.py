"""Measure histogram variants and comparators on one input, as the histogram report did.

Per run: H2D copy of the input (pinned or pageable host memory), the kernel(s) (clearing the
bins included), D2H copy of the bins; each timed with CUDA events. The kernel phase is held
behind a blocking kernel (``params.held``) so that Python and launch overhead stay outside the
events; calls that synchronise internally (``cupy.bincount`` reads the maximum back, for one)
cannot be held and are timed as the user would see them, overhead included
(``params.held = false``). The bins of the last run are compared with the CPU reference; a
mismatch is recorded as a failure with no speed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .. import _registry
from .._mapping import HistogramProblem, Mapping, histogram_bytes_moved
from .comparators import Provider
from .results import make_result
from .stats import summarize
from .measure import Settings, time_device_runs
from .timing import time_runs


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


def measure_cpu(inp: HostInput, mapping: Mapping, variant: _registry.Variant, settings: Settings,
                ceilings: dict) -> dict:
    """Time a cpu variant (one phase: ``kernel``; there are no copies)."""
    problem = HistogramProblem(inp.data.size, mapping.nbins, mapping.name, False)
    counts = np.zeros(mapping.nbins, dtype=np.int64)

    def run(rec: Any) -> None:
        with rec.phase("kernel"):
            counts[...] = 0
            variant.fn(inp.data, counts, mapping)

    kw = dict(family="histogram", variant=variant.name, provider="warplab", backend="cpu",
              bytes_moved=variant.bytes_moved(problem), ceilings=ceilings)
    samples = time_runs(run, warmup=settings.warmup, runs=settings.runs, cuda=False,
                        max_seconds=settings.max_seconds)
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

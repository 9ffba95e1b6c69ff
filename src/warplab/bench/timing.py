"""Timing of runs split into phases (H2D, kernel, D2H), with CUDA events or the host clock.

A run is a function ``run(rec)`` that wraps each of its phases in ``with rec.phase(name):``.
:func:`time_runs` calls it for warm-up, then ``runs`` times, and returns per-phase samples in
milliseconds plus ``total`` = the sum of the phases of each run.

CUDA timing records an event before and after each phase on the current stream and reads the
elapsed times after synchronising on the run's last event, once per run (outside the phases).
"""
from __future__ import annotations

import contextlib
import time
from typing import Any, Callable, Iterator


class _CudaRecorder:
    def __init__(self) -> None:
        import cupy

        self._cupy = cupy
        self.events: list[tuple[str, Any, Any]] = []

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        start, end = self._cupy.cuda.Event(), self._cupy.cuda.Event()
        start.record()
        yield
        end.record()
        self.events.append((name, start, end))

    def elapsed(self) -> dict[str, float]:
        if self.events:
            self.events[-1][2].synchronize()
        return {n: self._cupy.cuda.get_elapsed_time(s, e) for n, s, e in self.events}


class _HostRecorder:
    def __init__(self) -> None:
        self.times: dict[str, float] = {}

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        yield
        self.times[name] = (time.perf_counter() - t0) * 1e3

    def elapsed(self) -> dict[str, float]:
        return dict(self.times)


def time_runs(run: Callable[[Any], None], *, warmup: int, runs: int, cuda: bool,
              max_seconds: float | None = None, between: Callable[[], None] | None = None,
              ) -> dict[str, list[float]]:
    """Time ``run`` per phase.

    Args:
        run: ``run(rec)``; each phase inside ``with rec.phase(name)``.
        warmup: untimed calls first (compilation, clocks, allocator).
        runs: timed calls (at least 1).
        cuda: CUDA events on the current stream (else ``time.perf_counter``).
        max_seconds: if set, fewer runs (but at least 3, or ``runs`` if smaller) so that the
            timed runs take about this long, estimated from the last warm-up run.
        between: called before every run, untimed (e.g. an L2 flush).

    Returns:
        ``{phase: [ms per run]}`` with an extra ``"total"`` phase (sum of the phases per run).
    """
    make = _CudaRecorder if cuda else _HostRecorder
    t_est = None
    for _ in range(max(0, warmup)):
        if between:
            between()
        rec = make()
        run(rec)
        t_est = sum(rec.elapsed().values())
    n = max(1, runs)
    if max_seconds is not None and t_est:
        n = max(min(3, n), min(n, int(max_seconds * 1e3 / max(t_est, 1e-6))))
    samples: dict[str, list[float]] = {}
    for _ in range(n):
        if between:
            between()
        rec = make()
        run(rec)
        el = rec.elapsed()
        for k, v in el.items():
            samples.setdefault(k, []).append(v)
        samples.setdefault("total", []).append(sum(el.values()))
    return samples

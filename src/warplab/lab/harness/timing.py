"""Timing of runs split into phases (H2D, kernel, D2H), with CUDA events or the host clock.

A run is a function ``run(rec)`` that wraps each of its phases in ``with rec.phase(name):``
(``rec.phase(name, hold=True)`` for device work that does not synchronise: see below).
:func:`time_runs` calls it for warm-up, then ``runs`` times, and returns per-phase samples in
milliseconds plus ``total`` = the sum of the phases of each run.

CUDA timing records an event before and after each phase on the current stream and reads the
elapsed times after synchronising on the run's last event, once per run (outside the phases).
A held phase is enqueued behind a blocking kernel that the host releases once the phase's end
event is enqueued, so the events bracket device work only, not the host's launch overhead (as
nvbench does). A held phase whose host code synchronises would wait for the blocking kernel;
that is detected (the phase lasts as long as the kernel's timeout) and raised as
:class:`HeldPhaseSynchronised`.
"""
from __future__ import annotations

from pathlib import Path

import contextlib
import time
from typing import Any, Callable, Iterator


class HeldPhaseSynchronised(RuntimeError):
    """A held phase waited for the device: the code inside it synchronises, so it cannot be
    timed behind a blocking kernel (time it with ``hold=False``)."""


class _StreamHold:
    """A pinned flag and the ``hold_stream`` kernel that spins on it (see kernels/timing.cu)."""

    TIMEOUT_S = 0.05

    def __init__(self) -> None:
        import cupyx
        import numpy as np

        from warplab.core.loader import get_kernel

        self.flag = cupyx.empty_pinned(1, dtype=np.int32)
        # Pinned memory is mapped into the device's address space at the same address under
        # unified virtual addressing (every 64-bit CUDA platform).
        self.dptr = np.uint64(self.flag.ctypes.data)
        self.kernel = get_kernel(Path(__file__).with_name("timing.cu"), "hold_stream")
        self.timeout = np.uint64(int(self.TIMEOUT_S * 1e9))

    def block(self) -> None:
        self.flag[0] = 0
        self.kernel((1,), (1,), (self.dptr, self.timeout))

    def release(self) -> None:
        self.flag[0] = 1


_HOLD: list[_StreamHold] = []


def _stream_hold() -> _StreamHold:
    if not _HOLD:
        _HOLD.append(_StreamHold())
    return _HOLD[0]


class _CudaRecorder:
    def __init__(self) -> None:
        import cupy

        self._cupy = cupy
        self.events: list[tuple[str, Any, Any]] = []

    @contextlib.contextmanager
    def phase(self, name: str, hold: bool = False) -> Iterator[None]:
        """Time the enclosed device work with events. ``hold=True`` queues it behind a blocking
        kernel released after the end event is enqueued, so host-side launch cost and Python
        overhead between the events are not timed (only for code that does not synchronise)."""
        start, end = self._cupy.cuda.Event(), self._cupy.cuda.Event()
        h = _stream_hold() if hold else None
        if h:
            h.block()
        t0 = time.perf_counter()
        start.record()
        try:
            yield
        finally:
            end.record()
            if h:
                h.release()
        if h and time.perf_counter() - t0 >= 0.9 * h.TIMEOUT_S:
            end.synchronize()
            raise HeldPhaseSynchronised(f"phase {name!r} synchronised while held")
        self.events.append((name, start, end))

    def elapsed(self) -> dict[str, float]:
        if self.events:
            self.events[-1][2].synchronize()
        return {n: self._cupy.cuda.get_elapsed_time(s, e) for n, s, e in self.events}


class _HostRecorder:
    def __init__(self) -> None:
        self.times: dict[str, float] = {}

    @contextlib.contextmanager
    def phase(self, name: str, hold: bool = False) -> Iterator[None]:
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


def back_to_back_samples(fn: Callable[[], None], runs: int, warmup: int, hold: bool = True
                         ) -> tuple[list[float], bool]:
    """CUDA-event times (ms) of ``fn`` launched ``warmup + runs`` times back to back on the
    current stream, the first ``warmup`` not returned, and whether they were held.

    ``hold``: all launches are enqueued behind the blocking kernel and released together, so
    the device runs them back to back whatever the host's cost per call (a call slower to
    enqueue than to run is timed as the device runs it, not as the host feeds it). Where
    enqueuing takes longer than the blocking kernel's timeout (or ``fn`` synchronises), the
    kernel lets go early and the later launches are fed as the host goes: held is False.
    One synchronisation in all, after the last launch."""
    import cupy

    ev = [(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(warmup + runs)]
    h = _stream_hold() if hold else None
    if h:
        h.block()
    t0 = time.perf_counter()
    try:
        for a, b in ev:
            a.record()
            fn()
            b.record()
    finally:
        if h:
            h.release()
    held = h is not None and time.perf_counter() - t0 < 0.9 * h.TIMEOUT_S
    ev[-1][1].synchronize()
    return [cupy.cuda.get_elapsed_time(a, b) for a, b in ev[warmup:]], held


def back_to_back_ms(fn: Callable[[], None], runs: int, warmup: int) -> float:
    """Median CUDA-event time (ms) of ``fn`` launched ``warmup + runs`` times back to back on
    the current stream, the first ``warmup`` not counted: the tuning sweeps' quick timer
    (launch overhead overlaps the previous launch; no phases, no hold)."""
    import cupy
    import numpy as np

    ev = [(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(warmup + runs)]
    for a, b in ev:
        a.record()
        fn()
        b.record()
    ev[-1][1].synchronize()
    return float(np.median([cupy.cuda.get_elapsed_time(a, b) for a, b in ev[warmup:]]))

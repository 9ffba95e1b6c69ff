"""Host time per call for the probe scripts (GPU machine; not part of the package's API).

:func:`per_call` runs a call back to back, ``calls`` times a round, the queue drained only
between rounds (or after every call with ``sync_each``: the call latency), and returns the
median over ``rounds`` of the host microseconds per call. The probes import it by name (they
run as ``python3 benchmarks/<probe>.py``, so this folder is on the import path).
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def per_call(fn: Callable[[], object], *, calls: int = 2000, rounds: int = 20,
             warm: int = 200, sync_each: bool = False) -> float:
    """Median over ``rounds`` of the host microseconds per call of ``fn`` (``warm`` calls
    first; the current CuPy stream synchronised after them and after every round)."""
    import cupy

    stream = cupy.cuda.get_current_stream()
    for _ in range(warm):
        fn()
    stream.synchronize()
    ts = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
            if sync_each:
                stream.synchronize()
        ts.append((time.perf_counter() - t) / calls * 1e6)
        stream.synchronize()
    return statistics.median(ts)


def device_per_call(fn: Callable[[], object], calls: int, samples: int,
                    before: Callable[[], object] | None = None) -> float:
    """Median over ``samples`` of the device seconds per call of ``fn``: ``calls`` calls back
    to back between two CUDA events on the current stream (one call first, to warm up);
    ``before`` is queued ahead of each sample's first event (a spinning kernel that hides the
    host's launch time behind the device's)."""
    import cupy

    fn()
    out = []
    for _ in range(samples):
        if before is not None:
            before()
        a, b = cupy.cuda.Event(), cupy.cuda.Event()
        a.record()
        for _ in range(calls):
            fn()
        b.record()
        b.synchronize()
        out.append(cupy.cuda.get_elapsed_time(a, b) / 1e3 / calls)
    return statistics.median(out)


_SPIN_SRC = r"""
extern "C" __global__ void spin(long long cycles) {
    const long long t0 = clock64();
    while (clock64() - t0 < cycles) { }
}
extern "C" __global__ void nop() { }
"""


def spin_and_nop() -> tuple[Callable[[int], None], Callable[..., None]]:
    """Two kernels for the probes: ``spin(cycles)`` (one thread holding the stream for about
    ``cycles`` clocks: calls queued behind it are timed on the device alone) and ``nop(grid)``
    (an empty kernel on ``grid`` blocks of 256, or one thread)."""
    import cupy
    import numpy as np

    mod = cupy.RawModule(code=_SPIN_SRC)
    s, n = mod.get_function("spin"), mod.get_function("nop")

    def spin(cycles: int) -> None:
        s((1,), (1,), (np.int64(cycles),))

    def nop(grid: int | None = None) -> None:
        n((grid or 1,), (256 if grid else 1,), ())

    return spin, nop

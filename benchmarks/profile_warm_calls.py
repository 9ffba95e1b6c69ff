"""Host time of warm small calls on device input, and where it goes (GPU machine).

For each case: the median over bursts of the host time per call (calls back to back, no wait
for the device), then a cProfile of a burst of the same calls, its top functions by own time.
Run it from two trees (``PYTHONPATH=<tree>/src``) to compare their warm paths.

Usage: ``PYTHONPATH=src python3 benchmarks/profile_warm_calls.py [--profile] [CASE...]``
"""
from __future__ import annotations

import cProfile
import pstats
import sys
from typing import Any, Callable

import cupy
import numpy as np
from host_timing import per_call

import warplab as wl


def cases() -> dict[str, Callable[[], Any]]:
    """The latency campaign's small device calls."""
    rng = np.random.default_rng(0)
    x = cupy.asarray(rng.integers(0, 64, size=1024, dtype=np.int32))
    w = cupy.asarray(rng.integers(0, 8, size=1024).astype(np.float32))
    f = cupy.asarray(rng.random(1024, dtype=np.float32))
    b = cupy.asarray(rng.integers(0, 256, size=4096, dtype=np.uint8))
    a = cupy.asarray(rng.random((64, 64), dtype=np.float32))
    rows = cupy.asarray(rng.random((64, 64), dtype=np.float32))
    srcs = [cupy.asarray(rng.integers(0, 256, size=1024, dtype=np.uint8)) for _ in range(8)]
    dsts = [cupy.empty(1024, np.uint8) for _ in range(8)]
    return {
        "bincount_1k": lambda: wl.bincount(x, weights=w),
        "histogram_1k": lambda: wl.histogram(f, bins=64, range=(0.0, 1.0)),
        "byte_hist_4k": lambda: wl.byte_histogram(b),
        "matmul_64": lambda: wl.matmul(a, a),
        "copy_batched_8": lambda: wl.copy_batched(srcs, dsts),
        "sum_1k": lambda: wl.sum(f),
        "mean_1k": lambda: wl.mean(f),
        "mean_rows_64": lambda: wl.mean(rows, axis=1),
        "series_stats_64": lambda: wl.series_stats(rows),
    }


def host_us(fn: Callable[[], Any], burst: int = 1000, bursts: int = 9) -> float:
    """Median over bursts of the host time per call (µs)."""
    return per_call(fn, calls=burst, rounds=bursts, warm=50)


def main(argv: list[str]) -> int:
    profile = "--profile" in argv
    if "--count" in argv:  # Python-level calls per warm call (deterministic, unlike time)
        table = cases()
        for name in [a for a in argv[1:] if not a.startswith("-")] or list(table):
            fn = table[name]
            for _ in range(20):
                fn()
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(100):
                fn()
            prof.disable()
            st = pstats.Stats(prof)
            print(f"{name}: {st.total_calls / 100:.1f} calls per warm call "
                  f"({st.prim_calls / 100:.1f} primitive)")
        return 0
    names = [a for a in argv[1:] if not a.startswith("-")]
    table = cases()
    for name in names or list(table):
        fn = table[name]
        print(f"{name}: {host_us(fn):.2f} us host per call", flush=True)
        if profile:
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(2000):
                fn()
            prof.disable()
            cupy.cuda.Device().synchronize()
            pstats.Stats(prof).sort_stats("tottime").print_stats(12)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""What a result's allocation costs the host, by size (GPU machine; not part of the package's
API).

The public ``mean(x, axis=0)`` of 16 x 2^20 float32 takes ~23 us of host time a call where its
kernel launched directly takes ~7 us and ``mean(x, axis=1)`` of 64 x 64 ~11 us: its 4 MiB
result comes from CuPy's pool, the small one from the slab of small results. Here, each alone
in a loop of back-to-back calls (``host_timing.per_call``, median microseconds a call; the
result dropped at once, as a caller that keeps only the last does), at result sizes from 1 KiB
to 16 MiB: CuPy's pool (``malloc``), ``cupy.empty``, warplab's result arrays
(``core.scalar.empty``) and torch's ``empty``; then the public ``mean(x, axis=0)`` of 16 rows
whose result is each size, and the same call with an empty kernel queue (one synchronisation
after each call, untimed), and, with results kept alive eight at a time, the pool again.

Usage: PYTHONPATH=src python3 benchmarks/explore_result_alloc.py [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import cupy
import numpy as np
from host_timing import per_call

import warplab
from warplab.core import scalar

SIZES = (1 << 10, 4 << 10, 64 << 10, 1 << 20, 4 << 20, 16 << 20)


def alone(fn, calls: int = 300) -> float:
    """Median host microseconds of one call of ``fn``, the stream synchronised (untimed)
    after each call."""
    stream = cupy.cuda.get_current_stream()
    ts = []
    for _ in range(calls):
        stream.synchronize()
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    stream.synchronize()
    return 1e6 * statistics.median(ts)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", default=None)
    a = p.parse_args()
    import torch

    pool = cupy.get_default_memory_pool()
    f32 = np.dtype(np.float32)
    rows = []
    print(f"{'bytes':>9s} {'pool':>6s} {'empty':>6s} {'ours':>6s} {'torch':>6s} {'mean0':>6s} "
          f"{'alone':>6s} {'kept8':>6s}   (host us a call)", flush=True)
    for nbytes in SIZES:
        n = nbytes // 4
        x = cupy.ones((16, n), f32)
        kept: list = []

        def keep8(nbytes: int = nbytes) -> None:
            kept.append(pool.malloc(nbytes))
            if len(kept) > 8:
                kept.pop(0)

        row = {"bytes": nbytes,
               "pool_malloc": per_call(lambda: pool.malloc(nbytes), calls=1000, rounds=9),
               "cupy_empty": per_call(lambda: cupy.empty(n, f32), calls=1000, rounds=9),
               "warplab_empty": per_call(lambda: scalar.empty((n,), f32), calls=1000,
                                         rounds=9),
               "torch_empty": per_call(lambda: torch.empty(n, device="cuda"), calls=1000,
                                       rounds=9),
               "mean_axis0": per_call(lambda: warplab.mean(x, axis=0), calls=200, rounds=9),
               "mean_axis0_alone": alone(lambda: warplab.mean(x, axis=0)),
               "pool_malloc_kept8": per_call(keep8, calls=1000, rounds=9)}
        kept.clear()
        rows.append(row)
        print(f"{nbytes:9d} {row['pool_malloc']:6.2f} {row['cupy_empty']:6.2f} "
              f"{row['warplab_empty']:6.2f} {row['torch_empty']:6.2f} {row['mean_axis0']:6.2f} "
              f"{row['mean_axis0_alone']:6.2f} {row['pool_malloc_kept8']:6.2f}", flush=True)
        x = None  # the input freed before the next size
        pool.free_all_blocks()
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rows": rows, "cupy": cupy.__version__}, f, indent=1)


if __name__ == "__main__":
    main()

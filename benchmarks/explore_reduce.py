"""Tuning sweep of ``reduce_persistent_vec`` (GPU machine; not part of the package's API).

Float32 and int32 sums of 2^28 elements: load instruction x accumulators per thread x blocks
per SM (block 512), CUDA-event medians of back-to-back launches. Every configuration is timed
in three rounds alternating with cupy.sum, and its ratio is the median of the per-round ratios
(both sides see the same clocks and temperature).
Usage: PYTHONPATH=src python3 benchmarks/explore_reduce.py
"""
from __future__ import annotations

import itertools

import cupy
import numpy as np

from warplab._reduce_spec import spec
from warplab.kernels._loader import get_kernel, occupancy_blocks_per_sm

N = 1 << 28
LOADS = {0: "ldcs", 1: "ldg", 2: "nc.L2::256B"}


def median_ms(fn, runs=40):
    ev = [(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(runs + 5)]
    for a, b in ev:
        a.record()
        fn()
        b.record()
    ev[-1][1].synchronize()
    return float(np.median([cupy.cuda.get_elapsed_time(a, b) for a, b in ev[5:]]))


def main() -> None:
    sms = cupy.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    for dtype in ("float32", "int32"):
        s = spec("sum", np.dtype(dtype))
        x = cupy.random.random(N).astype(dtype) if dtype == "float32" else \
            cupy.random.randint(-1000, 1000, N, dtype=np.int32)
        ref = float(x.astype(np.float64).sum())
        t_cupy = median_ms(lambda: cupy.sum(x))
        print(f"{dtype}: cupy.sum {t_cupy:.4f} ms ({4 * N / t_cupy / 1e6:.0f} GB/s)", flush=True)
        counter = cupy.zeros(1, np.uint32)
        partials = cupy.empty(1 << 16, dtype=s.acc)
        out = cupy.empty((), dtype=s.out)
        expr = f"reduce_persistent_vec<{s.c_types}>"
        for load, (acc, minb) in itertools.product(LOADS, ((4, 4), (8, 2))):
            opts = (f"-DWARPLAB_REDUCE_VEC_ACC={acc}", f"-DWARPLAB_REDUCE_VEC_MINB={minb}",
                    f"-DWARPLAB_REDUCE_VEC_LOAD={load}")
            k = get_kernel("reduce", expr, all_expressions=(expr,), options=opts)
            occ = occupancy_blocks_per_sm(k, 512, 0)
            for per_sm in sorted({max(1, occ // 2), occ}):
                grid = sms * per_sm
                args = (x, np.uint64(N), partials, counter, out)
                ts, ratios = [], []
                for _ in range(3):
                    t = median_ms(lambda: k((grid,), (512,), args))
                    c = median_ms(lambda: cupy.sum(x))
                    ts.append(t)
                    ratios.append(c / t)
                ok = abs(float(out.get()) - ref) <= 1e-6 * abs(ref)
                t = float(np.median(ts))
                print(f"  load {LOADS[load]:12s} acc {acc} regs {k.num_regs:2d} blocks/SM "
                      f"{per_sm}: {t:.4f} ms ({4 * N / t / 1e6:.0f} GB/s) x cupy "
                      f"{np.median(ratios):.4f} (rounds {min(ratios):.4f}..{max(ratios):.4f}) "
                      f"ok={ok}", flush=True)


if __name__ == "__main__":
    main()

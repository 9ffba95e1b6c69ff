"""Tuning sweep of ``reduce_persistent_vec`` (GPU machine; not part of the package's API).

Float32 and int32 sums of 2^28 elements: block size x accumulators per thread x blocks per SM,
CUDA-event medians of back-to-back launches, next to cupy.sum timed the same way.
Usage: PYTHONPATH=src python3 benchmarks/explore_reduce.py
"""
from __future__ import annotations

import itertools

import cupy
import numpy as np

from warplab._reduce_cuda import _expressions
from warplab._reduce_spec import spec
from warplab.kernels._loader import get_kernel, occupancy_blocks_per_sm

N = 1 << 28


def median_ms(fn, runs=30):
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
        for bs, acc in itertools.product((256, 512), (2, 4, 8)):
            opts = (f"-DWARPLAB_REDUCE_VEC_BS={bs}", f"-DWARPLAB_REDUCE_VEC_ACC={acc}")
            k = get_kernel("reduce", f"reduce_persistent_vec<{s.c_types}>",
                           all_expressions=_expressions("reduce_persistent_vec"), options=opts)
            occ = occupancy_blocks_per_sm(k, bs, 0)
            for per_sm in sorted({max(1, occ // 2), occ}):
                grid = sms * per_sm
                args = (x, np.uint64(N), partials, counter, out, np.float64(1.0 / N))
                t = median_ms(lambda: k((grid,), (bs,), args))
                ok = abs(float(out.get()) - ref) <= 1e-5 * abs(ref)
                print(f"  block {bs} acc {acc} regs {k.num_regs} blocks/SM {per_sm}: {t:.4f} ms "
                      f"({4 * N / t / 1e6:.0f} GB/s, x cupy {t_cupy / t:.3f}) ok={ok}", flush=True)


if __name__ == "__main__":
    main()

"""Where the time of a small reduction call goes (GPU machine; not part of the package's API).

Host clock, median of 3000 calls per column, each followed by a stream synchronisation, the
columns interleaved in rounds of 500 calls; device-resident input: the floor (an empty kernel),
the pieces of warplab.sum (a 0-d result from the slab, the prepared launch with array
arguments and with raw pointers, the variant function, the public call) and cupy.sum, at 2^10,
2^16 and 2^20 float32 and int32 elements. Also the GPU-side duration (CUDA events) of one call.
Usage: PYTHONPATH=src python3 benchmarks/explore_reduce_latency.py
"""
from __future__ import annotations

import time

import cupy
import numpy as np

import warplab
from warplab import _reduce_cuda
from warplab.families.reduce.spec import spec

EMPTY = cupy.RawKernel('extern "C" __global__ void empty_kernel(const float* x) {}',
                       "empty_kernel")


def host_us(fns, rounds=6, calls=500):
    """Median host time (us) of each function, interleaved: ``rounds`` rounds of ``calls``
    calls of each in turn, so that every column sees the same host state."""
    stream = cupy.cuda.get_current_stream()
    samples = [[] for _ in fns]
    for fn in fns:
        for _ in range(200):
            fn()
            stream.synchronize()
    for _ in range(rounds):
        for fn, out in zip(fns, samples):
            for _ in range(calls):
                t0 = time.perf_counter()
                fn()
                stream.synchronize()
                out.append(time.perf_counter() - t0)
    return [float(np.median(ts)) * 1e6 for ts in samples]


def event_us(fn, runs=200):
    ev = [(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(runs)]
    for a, b in ev:
        a.record()
        fn()
        b.record()
        b.synchronize()
    return float(np.median([cupy.cuda.get_elapsed_time(a, b) for a, b in ev])) * 1e3


def main() -> None:
    print("us (median)          host:  empty   slab  launch  ptrs  variant  public  cupy.sum"
          " | gpu: warplab  cupy.sum")
    for dtype in ("float32", "int32"):
        s = spec("sum", np.dtype(dtype))
        for n in (1 << 10, 1 << 16, 1 << 20):
            x = cupy.arange(n, dtype=dtype) % 7
            p = _reduce_cuda.vec_plan(s)
            grid = min(p.full, -(-n // p.per_block)) or 1
            out = cupy.empty((), dtype=s.out)
            args = (x, np.uint64(n), p.partials, p.counter, out)
            ptrs = tuple(np.uint64(a.data.ptr) if isinstance(a, cupy.ndarray) else a
                         for a in args)
            row = host_us([lambda: EMPTY((1,), (32,), (x,)),
                           lambda: p.results.take(s.out),
                           lambda: p.kernel((grid,), p.block, args),
                           lambda: p.kernel((grid,), p.block, ptrs),
                           lambda: _reduce_cuda.persistent_vec(x, s),
                           lambda: warplab.sum(x),
                           lambda: cupy.sum(x)])
            gpu = [event_us(lambda: warplab.sum(x)), event_us(lambda: cupy.sum(x))]
            assert float(warplab.sum(x)) == float(cupy.sum(x.astype(np.float64)))
            print(f"{dtype:8s} 2^{n.bit_length() - 1:<2d}       " + " ".join(
                f"{v:6.1f}" for v in row) + "   | " + " ".join(f"{v:7.1f}" for v in gpu),
                flush=True)


if __name__ == "__main__":
    main()

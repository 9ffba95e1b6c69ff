"""Call latency of ``memcpy_batched`` of 8 buffers of 1 KiB (the latency campaign's
``memcpy_batched_8``) through ``memcpy_table_walk`` at several grids, beside
``torch._foreach_copy_`` of the same buffers (GPU machine; not part of the package's API).
The walk's grid is ``WALK_BLOCKS_PER_SM`` blocks per SM (the sizes are on the device, so the
host cannot size it); does a smaller grid shorten a call of a few small buffers? Each sample:
the launch, then the stream synchronised; medians of 3 rounds of 300 calls, microseconds.
Usage: PYTHONPATH=src python3 benchmarks/explore_table_walk_grid.py
"""
import time

import cupy
import numpy as np

import warplab
from warplab.core.launch import ARRAY, Prepared
from warplab.core.loader import defines, get_kernel
from warplab.families.memcpy import table_cuda

rng = np.random.default_rng(0)
srcs = [cupy.asarray(rng.integers(0, 255, 1024, dtype=np.uint8)) for _ in range(8)]
dsts = [cupy.empty(1024, np.uint8) for _ in range(8)]
sp = cupy.asarray(np.array([a.data.ptr for a in srcs], np.uint64))
dp = cupy.asarray(np.array([a.data.ptr for a in dsts], np.uint64))
n = cupy.asarray(np.full(8, 1024, np.int64))
kernel = get_kernel(table_cuda.SOURCE, "memcpy_table_walk", options=defines(table_cuda.DEFINES))
stream = cupy.cuda.get_current_stream()


def timed(fn) -> float:
    for _ in range(50):
        fn()
    stream.synchronize()
    rounds = []
    for _ in range(3):
        ts = []
        for _ in range(300):
            t = time.perf_counter()
            fn()
            stream.synchronize()
            ts.append(time.perf_counter() - t)
        rounds.append(np.median(ts) * 1e6)
    return float(np.median(rounds))


rows = {"warplab.memcpy_batched (default)": lambda: warplab.memcpy_batched(sp, dp, n)}
sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
for grid in (8, 32, sms // 2, sms, 2 * sms):
    go = Prepared(kernel, (grid,), (table_cuda.DEFINES["MEMCPY_TABLE_BLOCK"],),
                  (ARRAY, ARRAY, ARRAY, np.int32(0)))
    rows[f"table walk, grid {grid}"] = (lambda g: lambda: table_cuda.walk(g, sp, dp, n))(go)
try:
    import torch

    ts_ = [torch.as_tensor(a, device="cuda") for a in srcs]
    td_ = [torch.as_tensor(a, device="cuda") for a in dsts]
    rows["torch._foreach_copy_"] = lambda: torch._foreach_copy_(td_, ts_)
except ImportError:
    pass
for name, fn in rows.items():
    print(f"{name:34s} {timed(fn):6.2f} us")
assert all(bool((d == s).all()) for s, d in zip(srcs, dsts))

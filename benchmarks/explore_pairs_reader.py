"""Where the host time of ``copy_batched`` of 8 small device buffers goes, without a profiler
(GPU machine; not part of the package's API): each attribute the C reader of the pairs reads,
timed alone on one CuPy array; the reader itself (``transfer.device_table``) on 8 pairs; the
plan's launch alone on its table; the public call. Medians of 20 rounds of 2,000 back-to-back
calls, microseconds each (the launches queue without waiting: host time, as the latency
campaign's "host time per call").
Usage: PYTHONPATH=src python3 benchmarks/explore_pairs_reader.py
"""
from operator import attrgetter

import cupy
import numpy as np
from host_timing import per_call

import warplab
from warplab.families.memcpy import table_cuda, transfer

N, ROUNDS = 2000, 20
rng = np.random.default_rng(0)
srcs = [cupy.asarray(rng.integers(0, 255, 1024, dtype=np.uint8)) for _ in range(8)]
dsts = [cupy.empty(1024, np.uint8) for _ in range(8)]
a, data = srcs[0], srcs[0].data
warplab.copy_batched(srcs, dsts)
go = table_cuda.prepared()
table = transfer.device_table(srcs, dsts)[0]

CASES = {
    "a._c_contiguous": lambda: a._c_contiguous,
    "a.nbytes": lambda: a.nbytes,
    "a.data": lambda: a.data,
    "a.data.ptr": lambda: data.ptr,
    "a.data.device_id": lambda: data.device_id,
    "getDevice()": cupy.cuda.runtime.getDevice,
    "16 x 5 attribute reads (map)": lambda: [list(map(attrgetter(
        "_c_contiguous", "nbytes", "data.ptr", "data.device_id"), srcs + dsts))],
    "device_table(8 pairs)": lambda: transfer.device_table(srcs, dsts),
    "the table launch alone": lambda: table_cuda.copy(go, table, 8),
    "copy_batched(8 pairs)": lambda: warplab.copy_batched(srcs, dsts),
}
for name, fn in CASES.items():
    print(f"{name:30s} {per_call(fn, calls=N, rounds=ROUNDS):6.2f} us")
assert all(bool((d == s).all()) for s, d in zip(srcs, dsts))

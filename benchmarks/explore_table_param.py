"""Does the size of ``memcpy_table``'s by-value parameter cost host time? (GPU machine; not
part of the package's API.)

``copy_batched`` of 8 small device buffers launches ``memcpy_table`` with its address table
as the kernel parameter: three rows of ``MEMCPY_TABLE_MAX`` (32) uint64, 772 bytes with the
count, whatever the number of buffers. The launch alone measured 7.1 us of host time against
about 5 for an empty launch. This compiles the same kernel with tables of 8, 16 and 32 rows
and times, for the same 8 pairs of 1 KiB buffers through the C launch (``core/launch.py``):
the host time per launch (2,000 back-to-back launches, the queue never drained inside a
round) and the call latency (launch, then synchronise), beside an empty kernel with a 4-byte
parameter. Medians of 20 rounds, microseconds. Every table's copies are checked.
Usage: PYTHONPATH=src python3 benchmarks/explore_table_param.py [--json PATH]
"""
import argparse
import json
import struct

import cupy
import numpy as np
from host_timing import per_call

from warplab.core import launch
from warplab.core.launch import Prepared
from warplab.core.loader import defines, get_kernel
from warplab.families.memcpy import table_cuda

N, ROUNDS, PAIRS = 2000, 20, 8
EMPTY = r'extern "C" __global__ void empty_kernel(int n) { if (n < 0) asm volatile("trap;"); }'


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", default=None)
    a = p.parse_args()
    print(f"launch: {launch.status()}")
    rng = np.random.default_rng(0)
    srcs = [cupy.asarray(rng.integers(0, 255, 1024, dtype=np.uint8)) for _ in range(PAIRS)]
    out: dict = {"pairs": PAIRS, "bytes_each": 1024, "cases": []}
    empty = cupy.RawKernel(EMPTY, "empty_kernel")
    go_empty = Prepared(empty, (1,), (32,), (np.int32(0),))
    cases = [("empty kernel, 4-byte parameter", lambda: go_empty(np.int32(1)), 4)]
    for rows in (8, 16, table_cuda.MAX_BUFFERS):
        kernel = get_kernel(table_cuda.SOURCE, "memcpy_table",
                            options=defines({**table_cuda.DEFINES, "MEMCPY_TABLE_MAX": rows}))
        dtype = np.dtype([("src", np.uint64, (rows,)), ("dst", np.uint64, (rows,)),
                          ("size", np.uint64, (rows,))])
        go = Prepared(kernel, None, (table_cuda.DEFINES["MEMCPY_TABLE_BLOCK"],),
                      (np.zeros(1, dtype), np.int32(0)))
        dsts = [cupy.zeros(1024, np.uint8) for _ in range(PAIRS)]
        pad = f"{8 * (rows - PAIRS)}x"
        table = struct.pack("<" + (f"{PAIRS}Q" + pad) * 3, *(s.data.ptr for s in srcs),
                            *(d.data.ptr for d in dsts), *(s.nbytes for s in srcs))
        arg = table if go.c else np.frombuffer(table, dtype)
        go.at((PAIRS,), arg, np.int32(PAIRS))
        cupy.cuda.get_current_stream().synchronize()
        assert all(bool((d == s).all()) for s, d in zip(srcs, dsts)), rows
        cases.append((f"memcpy_table, {rows}-row table",
                      lambda go=go, arg=arg: go.at((PAIRS,), arg, np.int32(PAIRS)),
                      len(table) + 4))
    print(f"{'launch':34s} {'param B':>8s} {'host us':>8s} {'latency us':>11s}")
    for name, fn, nbytes in cases:
        host = per_call(fn, calls=N, rounds=ROUNDS)
        lat = per_call(fn, calls=N, rounds=ROUNDS, sync_each=True)
        print(f"{name:34s} {nbytes:8d} {host:8.2f} {lat:11.2f}")
        out["cases"].append({"name": name, "param_bytes": nbytes, "host_us": host,
                             "latency_us": lat})
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()

"""Where ``memcpy_batched`` of 8 small buffers spends its call latency, next to the table
launch of ``copy_batched`` and PyTorch's fused multi-tensor copy (GPU machine; not part of the
package's API).

The latency campaign's ``memcpy_batched_8`` (8 buffers of 1 KiB, the addresses in device
memory) is 1.07-1.10x ``torch._foreach_copy_`` in call latency while its host time is under
torch's. Its one launch, ``memcpy_table_walk``, runs 2 blocks a SM that each read the table
from device memory before copying. Here, on the same bytes, every piece alternates round by
round: the public call; the walk kernel launched directly on grids of 2 x SMs (the library's),
SMs, 32 and 8 blocks; ``copy_batched`` (the table passed in the launch) and its kernel
directly; torch; an empty kernel. Three numbers each (median microseconds): the call latency
(call, then a stream synchronisation), the host time per call (back to back), and the device
time per call (calls queued behind a spinning kernel, between two events). Every copy is
checked once.

Usage: PYTHONPATH=src python3 benchmarks/explore_walk_latency.py [--rounds N] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import statistics

import cupy
import numpy as np
from host_timing import device_per_call, per_call, spin_and_nop

import warplab
from warplab.core.launch import ARRAY, Prepared
from warplab.core.loader import defines, get_kernel
from warplab.families.memcpy import table_cuda

PAIRS, NBYTES = 8, 1024


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--json", default=None)
    a = p.parse_args()
    import torch

    spin, nop = spin_and_nop()
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    rng = np.random.default_rng(0)
    srcs = [cupy.asarray(rng.integers(0, 255, NBYTES, dtype=np.uint8)) for _ in range(PAIRS)]
    dsts = [cupy.zeros(NBYTES, np.uint8) for _ in range(PAIRS)]
    sp = cupy.asarray([s.data.ptr for s in srcs], np.uint64)
    dp = cupy.asarray([d.data.ptr for d in dsts], np.uint64)
    sz = cupy.full(PAIRS, NBYTES, np.int64)
    tsrcs = [torch.as_tensor(s, device="cuda") for s in srcs]
    tdsts = [torch.as_tensor(d, device="cuda") for d in dsts]

    k = get_kernel(table_cuda.SOURCE, "memcpy_table_walk", options=defines(table_cuda.DEFINES))
    walks = {f"walk grid={g}": Prepared(k, (g,), (table_cuda.DEFINES["MEMCPY_TABLE_BLOCK"],),
                                        (ARRAY, ARRAY, ARRAY, np.int32(0)))
             for g in (2 * sms, sms, 32, 8)}
    table = table_cuda.pack([s.data.ptr for s in srcs], [d.data.ptr for d in dsts],
                            [NBYTES] * PAIRS)
    by_value = table_cuda.prepared()
    cases = {"memcpy_batched (public)": lambda: warplab.memcpy_batched(sp, dp, sz)}
    for name, go in walks.items():
        cases[name] = lambda go=go: table_cuda.walk(go, sp, dp, sz)
    cases.update({
        "copy_batched (public)": lambda: warplab.copy_batched(srcs, dsts),
        "table by value (kernel)": lambda: table_cuda.copy(by_value, table, PAIRS),
        "torch._foreach_copy_": lambda: torch._foreach_copy_(tdsts, tsrcs),
        "empty kernel": nop,
    })
    checked = {}
    for name, fn in cases.items():
        if name == "empty kernel":
            continue
        for d in dsts:
            d.fill(0)
        fn()
        cupy.cuda.get_current_stream().synchronize()
        checked[name] = all(bool((d == s).all()) for s, d in zip(srcs, dsts))
    print(f"launch grid of the library's walk: {2 * sms}; checked: "
          f"{'all' if all(checked.values()) else checked}", flush=True)

    lat: dict[str, list[float]] = {n: [] for n in cases}
    host: dict[str, list[float]] = {n: [] for n in cases}
    dev: dict[str, list[float]] = {n: [] for n in cases}
    for r in range(a.rounds):
        names = list(cases)
        names = names[r % len(names):] + names[:r % len(names)]  # rotating order
        for n in names:
            fn = cases[n]
            lat[n].append(per_call(fn, calls=300, rounds=1, warm=20, sync_each=True))
            host[n].append(per_call(fn, calls=1000, rounds=1, warm=20))
            dev[n].append(1e6 * device_per_call(
                fn, 50, 1, lambda: spin(3_000_000)))
    out = {"pairs": PAIRS, "bytes_each": NBYTES, "sms": sms, "rounds": a.rounds,
           "checked": checked, "cases": []}
    print(f"{'piece':30s} {'latency us':>10s} {'host us':>8s} {'device us':>9s}")
    for n in cases:
        row = {"name": n, "latency_us": statistics.median(lat[n]),
               "host_us": statistics.median(host[n]), "device_us": statistics.median(dev[n]),
               "latency_samples": lat[n], "host_samples": host[n], "device_samples": dev[n]}
        out["cases"].append(row)
        print(f"{n:30s} {row['latency_us']:10.2f} {row['host_us']:8.2f} "
              f"{row['device_us']:9.2f}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()

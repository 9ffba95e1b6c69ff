"""Where ``copy_batched`` of 8 small device buffers spends its host time, piece by piece, next
to PyTorch's fused multi-tensor copy (GPU machine; not part of the package's API).

The latency campaign's ``copy_batched_8`` (8 pairs of 1 KiB CuPy arrays) is 1.2-1.4x
``torch._foreach_copy_`` in host time. This times, each alone in a loop of back-to-back calls
(``host_timing.per_call``: median of rounds, microseconds per call): the public call; its
steps as the call runs them (the two list reads, the host path's refusal, the C reader of the
pairs and its table, the plan key and lookup, the launch; the C reader launching the table
kernel itself, as a warm call does where launches go from C); the attribute reads the C reader
makes, done in Python for scale; torch's call on the same bytes, and its latency. The copies
are checked once.

Usage: PYTHONPATH=src python3 benchmarks/explore_copy_batched_costs.py [--json PATH]
"""
from __future__ import annotations

import argparse
import json

import cupy
import numpy as np
from host_timing import per_call

import warplab
from warplab.core import launch, registry
from warplab.families.memcpy import api, host, table_cuda, transfer
from warplab.families.memcpy.plan import PLANS

PAIRS, NBYTES = 8, 1024


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", default=None)
    a = p.parse_args()
    import torch

    print(f"launch: {launch.status()}", flush=True)
    rng = np.random.default_rng(0)
    srcs = [cupy.asarray(rng.integers(0, 255, NBYTES, dtype=np.uint8)) for _ in range(PAIRS)]
    dsts = [cupy.zeros(NBYTES, np.uint8) for _ in range(PAIRS)]
    warplab.copy_batched(srcs, dsts)
    cupy.cuda.get_current_stream().synchronize()
    assert all(bool((d == s).all()) for s, d in zip(srcs, dsts))
    tsrcs = [torch.as_tensor(s, device="cuda") for s in srcs]
    tdsts = [torch.empty_like(t) for t in tsrcs]
    torch._foreach_copy_(tdsts, tsrcs)
    torch.cuda.synchronize()
    assert all(bool((d == s).all()) for s, d in zip(tsrcs, tdsts))

    read = transfer.device_table(srcs, dsts)
    assert read is not None, "the C reader refused the pairs"
    table, largest, total, where = read
    key = ("pairs", where, PAIRS, (largest - 1).bit_length(), (total - 1).bit_length(),
           None, None, registry.generation, api.DEFAULT)
    plan = PLANS.get(key)
    assert plan is not None and plan.table is not None, "not the table launch"

    def attributes() -> None:
        for x in srcs + dsts:
            x._c_contiguous, x.nbytes, x.data.device_id, x.data.ptr  # noqa: B018

    def keyed() -> None:
        PLANS.get(("pairs", where, len(srcs), (largest - 1).bit_length(),
                   (total - 1).bit_length(), None, None, registry.generation, api.DEFAULT))

    cases = [
        ("copy_batched (public)", lambda: warplab.copy_batched(srcs, dsts)),
        ("torch._foreach_copy_", lambda: torch._foreach_copy_(tdsts, tsrcs)),
        ("_as_list x 2", lambda: (api._as_list(srcs, "srcs"), api._as_list(dsts, "dsts"))),
        ("host.copy_pairs (refuses)", lambda: host.copy_pairs(srcs, dsts)),
        ("transfer.device_table", lambda: transfer.device_table(srcs, dsts)),
        ("transfer.device_table, launching", lambda: transfer.device_table(srcs, dsts, PAIRS)),
        ("cupy getDevice", cupy.cuda.runtime.getDevice),
        ("16 arrays' 4 attributes (Python)", attributes),
        ("plan key + PLANS.get", keyed),
        ("registry.ran", lambda: registry.ran(plan.variant)),
        ("table_cuda.copy (launch)", lambda: table_cuda.copy(plan.table, table, PAIRS)),
    ]
    out: dict = {"pairs": PAIRS, "bytes_each": NBYTES, "launch": launch.status(), "cases": []}
    print(f"{'piece':36s} {'host us':>8s}")
    for name, fn in cases:
        us = per_call(fn, calls=2000, rounds=15)
        print(f"{name:36s} {us:8.2f}", flush=True)
        out["cases"].append({"name": name, "host_us": us})
    for name, fn in cases[:2]:
        us = per_call(fn, calls=500, rounds=15, sync_each=True)
        print(f"{name + ', synchronised':36s} {us:8.2f}", flush=True)
        out["cases"].append({"name": name + ", synchronised", "latency_us": us})
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()

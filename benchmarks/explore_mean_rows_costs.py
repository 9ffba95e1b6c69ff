"""Where ``mean(x, axis=1)`` of a 64 x 64 float32 device array spends its host time, piece by
piece, next to PyTorch's ``x.mean(dim=1)`` (GPU machine; not part of the package's API).

The latency campaign's ``mean_rows_64`` is 1.07-1.11x torch's host time. This times, each
alone in a loop of back-to-back calls (``host_timing.per_call``: median of rounds,
microseconds per call): the public call; the plan's key and lookup as ``reduce.plan.call``
forms them; the result's allocation (warplab's ``DeviceArray``, ``cupy.empty``, and as the plan
makes it: carved from the slab of small results); the
planned launch as the plan makes it (programmatic dependent launch where the device has it)
and the same launch plain (``cuLaunchKernel``); the stream query; torch's call. The results
are checked once.

Usage: PYTHONPATH=src python3 benchmarks/explore_mean_rows_costs.py [--json PATH]
"""
from __future__ import annotations

import argparse
import copy
import json

import cupy
import numpy as np
from host_timing import per_call

import warplab
from warplab.core import fastpath, launch, registry
from warplab.families.reduce import axis_cuda
from warplab.families.reduce.plan import PLANS

ROWS = COLS = 64


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", default=None)
    a = p.parse_args()
    import torch

    print(f"launch: {launch.status()}", flush=True)
    h = np.random.default_rng(0).random((ROWS, COLS), dtype=np.float32)
    x = cupy.asarray(h)
    got = warplab.mean(x, axis=1).get()
    np.testing.assert_allclose(got, h.astype(np.float64).mean(axis=1), rtol=1e-6)
    tx = torch.as_tensor(x, device="cuda")
    assert np.allclose(tx.mean(dim=1).cpu().numpy(), got, rtol=1e-6)

    def key() -> tuple:  # reduce.plan.call's key of one int axis of a C-contiguous array
        return ("mean", 1, x.dtype, x.shape, x.strides, x.data.ptr % 16 == 0,
                cupy.cuda.runtime.getDevice(), fastpath.current_stream()[1],
                registry.generation)

    plan = PLANS.get(key())
    assert plan is not None, "the key is not the one reduce.plan.call forms"
    record, stream = plan[1], fastpath.current_stream()[0]
    go = record.launch
    assert go.partials is None, "not a one-launch plan"
    out = axis_cuda._empty(record.shape, record.dtype)
    plain = copy.copy(go.go)
    plain.call = launch.function() or plain.call
    cases = [
        ("warplab.mean(x, axis=1) (public)", lambda: warplab.mean(x, axis=1)),
        ("torch x.mean(dim=1)", lambda: tx.mean(dim=1)),
        ("key + PLANS.get", lambda: PLANS.get(key())),
        ("result: DeviceArray", lambda: axis_cuda._empty(record.shape, record.dtype)),
        ("result: from the slab", lambda: record.cls(record.shape, record.dtype,
                                                     record.slab.carve(record.nbytes))),
        ("result: cupy.empty", lambda: cupy.empty(record.shape, record.dtype)),
        ("current stream", fastpath.current_stream),
        (f"planned launch (overlap={axis_cuda.OVERLAP})",
         lambda: go.go(x, *go.mid, out, *go.tail)),
        ("the same launch, plain", lambda: plain(x, *go.mid, out, *go.tail)),
        ("Plan run (result + launch)", lambda: record(x)),
        ("Plan run, the stream given", lambda: record(x, stream)),
    ]
    res: dict = {"shape": [ROWS, COLS], "launch": launch.status(), "cases": []}
    print(f"{'piece':40s} {'host us':>8s}")
    for name, fn in cases:
        us = per_call(fn, calls=2000, rounds=15)
        print(f"{name:40s} {us:8.2f}", flush=True)
        res["cases"].append({"name": name, "host_us": us})
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()

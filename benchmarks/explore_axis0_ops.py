"""Axis 0: the mean against the sum, in one process (GPU machine; not part of the package's API).

The public ``mean(x, axis=0)`` of few long float32 columns (32 x 2^20, 64 x 2^20) has read 3-8
points under the public ``sum`` in every run of ``explore_rows_shapes.py``, which times the
mean first; the two run the same columns kernel but for the mean's final division. Here each
shape's four candidates (the columns kernel of each op launched directly at the plan's
geometry, and the two public calls) alternate batch by batch, in a rotating order, so the
order and the process cannot explain a difference. Every result is checked against a float64
reduction.

Usage: PYTHONPATH=src python3 benchmarks/explore_axis0_ops.py [--shapes RxC,...] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
from typing import Any

import cupy
import numpy as np

import warplab
from warplab.core.launch import Prepared
from warplab.core.loader import defines, get_kernel
from warplab.families.reduce import axis_cuda as ac, axis_plan as ap
from warplab.lab.campaigns.series.bench import back_to_back
from warplab.lab.campaigns.series.measure import max_rel
from warplab.lab.harness.ceiling_rates import read_bandwidth

from explore_rows_shapes import cols_args  # benchmarks/, the script's folder

CALLS, ROUNDS = 10, 15


def kernel_call(x: Any, op: str, sms: int) -> tuple[Any, Any]:
    """(launch, output) of ``op``'s columns kernel at the plan's geometry."""
    nred, ncols = x.shape
    dt = x.dtype
    p = ap.plan_cols(nred, ncols, dt.itemsize, True, sms)
    a = ac.targs(op, dt)
    k = get_kernel(ac.SOURCE, ac.cols_expr(a, p.vec), all_expressions=ac._expressions(a),
                   options=defines(ac.DEFINES))
    out = cupy.empty(ncols, dt)
    args = cols_args(x, p.cg, p.gx, p.splits, p.chunk, out)
    go = Prepared(k, (p.gx, p.splits), (ap.COLS_BLOCK,), args)
    def launch() -> None:
        go(*args)
    return launch, out


def main() -> None:
    ap_ = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap_.add_argument("--shapes", default="32x1048576,64x1048576,8192x8192")
    ap_.add_argument("--json", default=None)
    args = ap_.parse_args()
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    dev = cupy.cuda.runtime.getDevice()
    sms = ac.sm_count(dev)
    read = read_bandwidth("cuda")["read_gbps"]
    doc: dict[str, Any] = {"read_gbps": read, "calls": CALLS, "rounds": ROUNDS, "rows": []}
    for rows, cols in shapes:
        for dt in (np.dtype(np.float32), np.dtype(np.float64)):
            x = (cupy.random.default_rng(1).random((rows, cols)) + 1.0).astype(dt)
            ref = x.astype(np.float64).sum(axis=0)
            cands = {}
            for op in ("mean", "sum"):
                want = ref / rows if op == "mean" else ref
                launch, out = kernel_call(x, op, sms)
                launch()
                err_k = max_rel(cupy.asnumpy(out), cupy.asnumpy(want))
                def pub(op: str = op, x: Any = x) -> Any:
                    return getattr(warplab, op)(x, axis=0)
                err_p = max_rel(cupy.asnumpy(pub()), cupy.asnumpy(want))
                cands[f"kernel_{op}"] = (launch, err_k)
                cands[f"public_{op}"] = (pub, err_p)
            names = list(cands)
            times: dict[str, list[float]] = {n: [] for n in names}
            for r in range(ROUNDS):  # a batch of each, the order rotated every round
                for n in names[r % len(names):] + names[:r % len(names)]:
                    times[n] += back_to_back(cands[n][0], CALLS, 1, 1)[0]
            nbytes = x.nbytes + cols * dt.itemsize
            line = []
            for n in names:
                ms = float(np.median(times[n]))
                pct = 100 * nbytes / ms / 1e6 / read
                doc["rows"].append({"rows": rows, "cols": cols, "dtype": dt.name, "call": n,
                                    "ms": ms, "pct_read": pct, "rel_err": cands[n][1]})
                line.append(f"{n} {pct:5.1f}")
            print(f"{rows}x{cols} {dt.name}: " + "  ".join(line), flush=True)
            del x, ref
            cupy.get_default_memory_pool().free_all_blocks()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()

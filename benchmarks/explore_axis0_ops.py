"""Axis 0: the mean against the sum, in one process (GPU machine; not part of the package's API).

The public ``mean(x, axis=0)`` of few long float32 columns (32 x 2^20, 64 x 2^20) has read 3-8
points under the public ``sum`` in every run of ``explore_rows_shapes.py``, which times the
mean first; the two run the same columns kernel but for the mean's final division. Here each
shape's four candidates (the columns kernel of each op launched directly at the plan's
geometry, and the two public calls) alternate batch by batch, in a rotating order, so the
order and the process cannot explain a difference. Each candidate's host microseconds a call
(back to back) and its rate with the calls queued behind a spinning kernel (the device's alone)
say whether the back-to-back rate meets the host or the device. Every result is checked
against a float64 reduction.

``--shuffle``: each round in a random order, not rotated (a rotation keeps each candidate's
predecessor the same, whose input may be left in L2 for it).

``--one-lane``: each op's kernel also at the plan's geometry without its row lanes of one
unrolled step (axis_plan.COLS_LANE_COLUMN_BYTES: the column threads the plan has for longer
columns, one row lane at 2^20 columns), in the form axis_plan.short_walk gives it; only where
the rule changed the plan. The rule's A/B in the same rotation (benchmarks/NOTES.md).

Usage: PYTHONPATH=src python3 benchmarks/explore_axis0_ops.py [--shapes RxC,...]
    [--overlap 0|1] [--one-lane] [--shuffle]
    [--json PATH]
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
from host_timing import device_per_call, per_call, spin_and_nop

CALLS, ROUNDS = 10, 15


def one_lane_plan(nred: int, ncols: int, itemsize: int, sms: int) -> Any:
    """The columns plan without the row lanes of one unrolled step, or None where the rule
    leaves the plan as it is."""
    p = ap.plan_cols(nred, ncols, itemsize, True, sms, lane_bytes=0)
    return None if p == ap.plan_cols(nred, ncols, itemsize, True, sms) else p


def kernel_call(x: Any, op: str, sms: int, plan: Any = None) -> tuple[Any, Any]:
    """(launch, output) of ``op``'s columns kernel at the plan's geometry, or at ``plan``."""
    nred, ncols = x.shape
    dt = x.dtype
    p = plan or ap.plan_cols(nred, ncols, dt.itemsize, True, sms)
    a = ac.targs(op, dt)
    k = get_kernel(ac.SOURCE, ac.cols_expr(a, p.vec, p.short_walk),
                   all_expressions=ac._expressions(a), options=defines(ac.DEFINES))
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
    ap_.add_argument("--overlap", type=int, choices=(0, 1), default=None,
                     help="launch the public calls' kernels with programmatic stream "
                     "serialization (1) or plainly (0); default the library's")
    ap_.add_argument("--shuffle", action="store_true",
                     help="a random order each round instead of the rotation (which keeps each "
                     "candidate's predecessor fixed)")
    ap_.add_argument("--one-lane", action="store_true",
                     help="each op's kernel also without the row lanes of one unrolled step")
    args = ap_.parse_args()
    if args.overlap is not None:
        ac.OVERLAP = bool(args.overlap)  # read when a plan's launch is made
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    dev = cupy.cuda.runtime.getDevice()
    sms = ac.sm_count(dev)
    read = read_bandwidth("cuda")["read_gbps"]
    spin, _ = spin_and_nop()
    doc: dict[str, Any] = {"read_gbps": read, "calls": CALLS, "rounds": ROUNDS,
                           "overlap": ac.OVERLAP, "rows": []}
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
                wide = one_lane_plan(rows, cols, dt.itemsize, sms) if args.one_lane else None
                if wide is not None:
                    launch1, out1 = kernel_call(x, op, sms, wide)
                    launch1()
                    cands[f"kernel_{op}_cg{wide.cg}"] = (
                        launch1, max_rel(cupy.asnumpy(out1), cupy.asnumpy(want)))
            names = list(cands)
            times: dict[str, list[float]] = {n: [] for n in names}
            order = np.random.default_rng(rows)
            for r in range(ROUNDS):  # a batch of each, the order rotated (or shuffled) each round
                turn = list(order.permutation(names)) if args.shuffle else \
                    names[r % len(names):] + names[:r % len(names)]
                for n in turn:
                    times[n] += back_to_back(cands[n][0], CALLS, 1, 1)[0]
            nbytes = x.nbytes + cols * dt.itemsize
            line, costs = [], []
            for n in names:
                ms = float(np.median(times[n]))
                pct = 100 * nbytes / ms / 1e6 / read
                # the host's microseconds a call (back to back, the queue drained between
                # rounds), and the device's a call queued behind a spinning kernel (the host's
                # launch time hidden): which of the two the back-to-back rate above meets
                host_us = per_call(cands[n][0], calls=100, rounds=5, warm=5)
                queued_pct = 100 * nbytes / device_per_call(
                    cands[n][0], 20, 5, lambda: spin(4_000_000)) / 1e9 / read
                doc["rows"].append({"rows": rows, "cols": cols, "dtype": dt.name, "call": n,
                                    "ms": ms, "pct_read": pct, "rel_err": cands[n][1],
                                    "host_us": host_us, "queued_pct_read": queued_pct})
                line.append(f"{n} {pct:5.1f}")
                costs.append(f"{n} {host_us:5.1f} us, {queued_pct:5.1f}")
            print(f"{rows}x{cols} {dt.name}: " + "  ".join(line), flush=True)
            print("    host a call, queued % of read: " + "; ".join(costs), flush=True)
            del x, ref
            cupy.get_default_memory_pool().free_all_blocks()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()

"""One launch of each target kernel inside a profiler range, for Nsight Compute's hardware
counters (GPU machine; not part of the package's API).

Targets:

* ``memcpy_<cell>[_w<W>]``: the default batched copy's warp kernel (``WARP_TIERS_WORDS``, the
  one-launch form: the largest size known), or its shape with ``WarpClasses.words`` W, on
  1-8 B buffers at align 1 and 4, consecutive or shuffled sources into consecutive
  destinations (``CELLS``, ``TOTAL`` of data): where the byte stream of align 1 spends the
  time that align 4's lanes do not. ``--cells`` (``explore_memcpy_floor.py``'s format,
  ``LO-HI:TOTAL:LAYOUT:aN``) profiles other cells, the default's shape only; with
  ``--public`` the public ``memcpy_batched`` of each cell instead of the warp kernel (every
  kernel it launches: the destination windows' judging and grouping where it takes them).
* ``cols_<dtype>_<acc>``: the columns kernel of the axis-0 sum at the plan's geometry on
  8192 x 8192: float32 into float64 accumulators (the library's), float32 into float32
  accumulators (a probe of the conversions' cost, not the library's semantics), float64.

Every target's result is checked (the copies' destination bytes against the source, the
sums against a float64 reduction) before it is profiled. ``--time``: no profiler range; each
target's device time per call, queued behind a spinning kernel, printed and written to JSON.

Usage:
  ncu --profile-from-start off --clock-control none --set full -o REPORT \\
      python3 benchmarks/profile_ncu.py [--cells ... [--public]] [--no-cols]
  PYTHONPATH=src python3 benchmarks/profile_ncu.py --time [--json PATH] [same options]
"""
from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

import cupy
import numpy as np

import warplab
from warplab.core.launch import Prepared
from warplab.core.loader import defines, get_kernel
from warplab.families.memcpy import cuda
from warplab.families.memcpy.spec import WARP_TIERS_WORDS
from warplab.families.reduce import axis_cuda as ac, axis_plan as ap
from warplab.lab.campaigns.memcpy import cells as mcells
from warplab.lab.campaigns.series.measure import max_rel

from explore_memcpy_floor import cell_arrays, parse_cell  # benchmarks/
from explore_rows_shapes import cols_args
from host_timing import device_per_call, spin_and_nop

TOTAL = 256 << 20
#: (lo, hi, align, total, layout)
CELLS = tuple((1, 8, a, TOTAL, lay) for a, lay in ((1, "C_C"), (4, "C_C"), (1, "S_C"),
                                                   (4, "S_C")))
#: The shapes of the align-1 cells (``WarpClasses.words``): the byte stream's (3) and the
#: default's (7: the lanes' shifted copies where destinations are packed).
A1_WORDS = (3, 7)
SHAPE = 8192
CALLS, SAMPLES = 20, 7


def memcpy_targets(cells: tuple = CELLS, shapes: bool = True, public: bool = False
                   ) -> dict[str, tuple[Callable[[], None], Callable[[], bool]]]:
    """(launch, check) of the warp kernel on each cell (lo, hi, align, total, layout) and
    shape (``A1_WORDS`` at align 1 with ``shapes``, else the default's), or of the public
    call (``public``)."""
    out = {}
    for lo, hi, align, total, layout in cells:
        c = cell_arrays(lo, hi, align, total, layout)
        b = cuda.DeviceBatch(c.sp, c.dp, c.sizes, c.count, None, hi)
        for w in A1_WORDS if align == 1 and shapes else (WARP_TIERS_WORDS.words,):
            shape = WARP_TIERS_WORDS._replace(words=w)

            def launch(b: Any = b, shape: Any = shape) -> None:
                if public:
                    warplab.memcpy_batched(b.src, b.dst, b.sizes)
                else:
                    cuda.run_warp_classes(b, shape, False)

            def check(c: Any = c, launch: Any = launch) -> bool:
                c.dst.fill(mcells.POISON)
                launch()
                return c.exact()
            suffix = ("_public" if public else "") + (
                "" if w == WARP_TIERS_WORDS.words else f"_w{w}")
            out[f"memcpy_{lo}_{hi}_a{align}_{layout}_{total >> 20}m{suffix}"] = (launch, check)
    return out


def cols_targets() -> dict[str, tuple[Callable[[], None], Callable[[], bool]]]:
    """(launch, check) of the columns kernel of the sum on SHAPE x SHAPE."""
    sms = ac.sm_count(cupy.cuda.runtime.getDevice())
    out = {}
    for dt, acc in ((np.float32, "double"), (np.float32, "float"), (np.float64, "double")):
        x = (cupy.random.default_rng(1).random((SHAPE, SHAPE)) + 1.0).astype(dt)
        ref = x.astype(np.float64).sum(axis=0)
        p = ap.plan_cols(SHAPE, SHAPE, x.itemsize, True, sms)
        t = "float" if dt == np.float32 else "double"
        targs = f"{t}, {acc}, {t}, OpSum"
        expr = ac.cols_expr(targs, p.vec, p.short_walk)
        exprs = ac._expressions(targs) if acc == "double" else (expr,)
        k = get_kernel(ac.SOURCE, expr, all_expressions=exprs, options=defines(ac.DEFINES))
        res = cupy.empty(SHAPE, dt)
        args = cols_args(x, p.cg, p.gx, p.splits, p.chunk, res)
        go = Prepared(k, (p.gx, p.splits), (ap.COLS_BLOCK,), args)
        tol = 1e-3 if acc == "float" else (1e-6 if dt == np.float32 else 1e-12)

        def launch(go: Any = go, args: tuple = args) -> None:
            go(*args)

        def check(launch: Any = launch, res: Any = res, ref: Any = ref, tol: float = tol
                  ) -> bool:
            launch()
            return max_rel(cupy.asnumpy(res), cupy.asnumpy(ref)) < tol
        out[f"cols_{np.dtype(dt).name}_{acc}"] = (launch, check)
    return out


def main() -> None:
    ap_ = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap_.add_argument("--time", action="store_true", help="time each target, no profiler range")
    ap_.add_argument("--json", default=None)
    ap_.add_argument("--cells", default=None, help="LO-HI:TOTAL:LAYOUT:aN,... (default: CELLS "
                     "and their shapes)")
    ap_.add_argument("--public", action="store_true", help="the public call of each cell")
    ap_.add_argument("--no-cols", action="store_true", help="no columns-kernel targets")
    args = ap_.parse_args()
    try:
        cells = CELLS if args.cells is None else tuple(parse_cell(c)
                                                       for c in args.cells.split(","))
    except ValueError as e:
        ap_.error(f"--cells: {e}")
    targets = memcpy_targets(cells, args.cells is None, args.public)
    if not args.no_cols:
        targets.update(cols_targets())
    spin, _ = spin_and_nop()
    doc: dict[str, Any] = {"device": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(),
                           "cells": [list(c) for c in cells], "shape": SHAPE, "rows": []}
    for name, (launch, check) in targets.items():
        ok = check()  # compiles, warms up and verifies
        cupy.cuda.get_current_stream().synchronize()
        if args.time:
            us = 1e6 * device_per_call(launch, CALLS, SAMPLES, lambda: spin(4_000_000))
            doc["rows"].append({"target": name, "us": us, "ok": ok})
            print(f"{name:28} {us:9.1f} us{'' if ok else '  WRONG'}", flush=True)
        else:
            cupy.cuda.profiler.start()
            launch()
            cupy.cuda.get_current_stream().synchronize()
            cupy.cuda.profiler.stop()
            print(f"{name}: profiled{'' if ok else ', WRONG result'}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()

"""Per-row (axis 1) and per-column (axis 0) reductions on every shape, not only the tuned ones
(GPU machine; not part of the package's API).

Two parts, one JSON:

* ``public``: what users call, ``warplab.mean``/``sum(x, axis=a)`` next to ``cupy.mean`` and
  ``torch.mean(dim=a)`` on the same device array, ``CALLS`` calls back to back between two CUDA
  events, median of ``BATCHES`` batches (the series campaign's "calls" mode); GB/s of the
  input plus the results, and that over the read ceiling (``read_words`` over 1 GiB).
* ``kernels``: the axis kernels launched directly with other geometries and compile-time
  settings than the plan's (``CONFIGS``): loads with and without the L2::256B prefetch hint
  (``*_STREAM``), the columns kernel with 4 loads in flight instead of 8 and its finish with
  64 or 128 bytes of partials in flight (128: the library's); the persistent group grid against the
  full one, the split kernel at 1, 2, 4 or 8 blocks per SM in total (or one block per row),
  the columns kernel's column threads per block and splits; staged tiles of 32 KiB
  (``stage32k``: 8 words a thread) and the staged tile's boundary words loaded with the tile
  (``stage_no_hoist``: after the tile's other loads); ``overlap*``: launched with
  programmatic stream serialization (``Prepared(overlap=True)``, the kernel's blocks
  scheduled while the previous call's kernel drains) where the others launch the plain way,
  with the library's early triggers (``overlap``), every kernel's (``overlap_all``) or none
  (``overlap_none``); ``default_again``: the first configuration measured again last (the
  run's noise). Every candidate's
  result is checked against a float64 reduction of the same data.

``--hint-ab`` (axis 0): the columns kernel at every geometry above with the L2::256B hint
(``WARPLAB_AXIS_COLS_STREAM`` 1) and without (0, the library's), both compiled, their batches
alternating in one process (process-to-process noise moves these kernels 1-3 points).

Usage: PYTHONPATH=src python3 benchmarks/explore_rows_shapes.py [--json PATH] [--quick]
[--default-only] [--axis 0|1] [--shapes RxC,...] [--define NAME=INT ...] [--hint-ab]
"""
from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
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

ROWS = ((1 << 20, 32), (1 << 17, 256), (1 << 21, 33), (65536, 1000), (32768, 4097),
        (8192, 8192), (256, 1 << 20), (16, 1 << 24))
COLS = ((8192, 8192), (32, 1 << 20), (1 << 20, 32))
CALLS, BATCHES, WARMUP = 10, 11, 3
#: Compile-time settings tried per axis: (name, DEFINES changed from the library's).
CONFIGS = {1: (("default", {}),
               ("no_stream", {"WARPLAB_AXIS_GROUP_STREAM": 0}),
               ("split_stream", {"WARPLAB_AXIS_SPLIT_STREAM": 1}),
               ("stage_no_hoist", {"WARPLAB_AXIS_STAGE_HOIST": 0}),
               ("stage32k", {"WARPLAB_AXIS_STAGE_UNROLL": 8}),
               ("overlap", {}),
               ("overlap_all", {"WARPLAB_AXIS_TRIGGER": 31}),
               ("overlap_none", {"WARPLAB_AXIS_TRIGGER": 0}),
               ("default_again", {})),
           0: (("default", {}),
               ("overlap", {}),
               ("overlap_all", {"WARPLAB_AXIS_TRIGGER": 31}),
               ("no_stream", {"WARPLAB_AXIS_COLS_STREAM": 0}),
               ("unroll4", {"WARPLAB_AXIS_COLS_UNROLL": 4}),
               ("fin64", {"WARPLAB_AXIS_COLS_FIN_BYTES": 64}),
               ("fin128", {"WARPLAB_AXIS_COLS_FIN_BYTES": 128}),
               ("default_again", {}))}


def per_call_ms(call: Callable[[], Any]) -> float:
    """Median ms per call of ``CALLS`` calls back to back (the series campaign's calls mode)."""
    samples, _ = back_to_back(call, CALLS, BATCHES, WARMUP)
    return float(np.median(samples))


def module_defines(changes: dict) -> tuple[str, ...]:
    return defines({**ac.DEFINES, **changes})


def kernel(expr: str, args: str, opts: tuple[str, ...]) -> Any:
    return get_kernel(ac.SOURCE, expr, all_expressions=ac._expressions(args), options=opts)


def check(got: Any, ref: Any) -> float:
    """max |got - ref| / |ref| of device results (``series.measure.max_rel``)."""
    return max_rel(cupy.asnumpy(got), cupy.asnumpy(ref))


def row_candidates(x: Any, dt: np.dtype, sms: int, stage_unroll: int = ap.STAGE_UNROLL,
                   staged_only: bool = False) -> list[tuple[str, str, tuple, tuple, Any]]:
    """(label, expression template, grid, arguments, output) of the rows launches to try: the
    packed and staged kernels where they apply, the group kernel on the full and on the
    resident grid, the split kernel a block per row and at power-of-two chunks."""
    rows, cols = x.shape
    vec, g = ap.group_size(cols, dt.itemsize)
    vs = "true" if vec else "false"
    per = 16 // dt.itemsize if vec else 1
    out = cupy.empty(rows, dt)
    r64, c64, ld = np.uint64(rows), np.uint64(cols), np.uint64(cols)
    tail = (np.float64(0), np.uint64(rows))
    cands = []
    row_bytes = cols * dt.itemsize
    lanes = row_bytes // 16
    if row_bytes == 16 * lanes and lanes in ap.PACKED_LANES:
        warps = -(-rows * lanes // (32 * ap.UNROLL))
        cands.append(("packed", f"axis_rows_packed<{{a}}, {lanes}>",
                      (max(1, -(-warps * 32 // ap.BLOCK)),), (x, r64, c64, out, *tail), out))
    elif ap.staged_rows(cols, dt.itemsize) >= 2 and rows > 1:  # the plan's rows up to a
        # half tile; with the module's default U (the define), the plan's U
        u = ap.stage_unroll(cols, dt.itemsize) if stage_unroll == ap.STAGE_UNROLL else stage_unroll
        rt = ap.staged_rows(cols, dt.itemsize, u)
        gs = min(32, ap._pow2_floor(ap.BLOCK // min(rt, ap.BLOCK)))
        cands.append((f"staged G={gs} RT={rt} U={u}", ac.staged_expr("{a}", gs, u, stage_unroll),
                      (min(-(-rows // rt), 2 ** 31 - 1),),
                      (x, r64, c64, np.uint64(rt), out, *tail), out))
    if staged_only:
        return cands
    if g < 32 or row_bytes < 64 * 1024:
        warps = -(-rows // (32 // g))
        full = max(1, -(-warps * 32 // ap.BLOCK))
        for name, mult in (("group_resident", 1), ("group_full", 0)):
            grid = full if mult == 0 else min(full, mult * sms * 8)
            cands.append((f"{name} G={g}", f"axis_rows_group<{{a}}, {g}, {vs}>", (grid,),
                          (x, r64, c64, ld, out, *tail), out))
    if row_bytes >= 2048:  # a block per row from 2 KiB rows (the plan's from 4 KiB)
        chunks = [cols] + [1 << k for k in range(30, 7, -1) if (1 << k) < cols]
        for chunk in chunks:
            s = -(-cols // chunk)
            if (chunk < ap.BLOCK * per and s > 1) or not (sms <= rows * s <= 16 * sms or s == 1):
                continue
            parts = cupy.empty(max(1, rows * s), np.float64)
            tickets = cupy.zeros(max(1, rows), np.uint32)
            cands.append((f"split S={s} chunk={chunk}", f"axis_rows_split<{{a}}, {vs}>",
                          (rows * s,), (x, r64, c64, ld, np.uint32(s), np.uint64(chunk), parts,
                                        tickets, out, *tail), out))
    return cands


def col_candidates(x: Any, dt: np.dtype, sms: int) -> list[tuple[str, str, tuple, tuple, Any]]:
    """(label, expression template, grid, arguments, output) of the columns launches to try:
    column threads per block (cg) from as many as the columns need (up to 256) to a sixteenth
    of that (the rest of the block row lanes), each at about two blocks per SM and at 1/4 to
    4x that (1.5x: three blocks per SM), in the form the planner gives its walks
    (axis_plan.short_walk); the plan's own geometry also in the other form ("other form")."""
    nred, ncols = x.shape
    vec = ncols * dt.itemsize >= 16
    p = ap.plan_cols(nred, ncols, dt.itemsize, True, sms)
    groups = -(-ncols // (16 // dt.itemsize if vec else 1))
    out = cupy.empty(ncols, dt)
    cands = []
    seen = set()
    widest = min(ap.COLS_BLOCK, 1 << max(0, groups - 1).bit_length())
    for cg in sorted({max(1, widest >> i) for i in range(5)} | {p.cg}, reverse=True):
        gx = -(-groups // cg)
        base = max(1, min((ap.COLS_BLOCKS_PER_SM * sms) // gx, -(-nred // ap.COLS_MIN_ROWS)))
        for mult in (0.25, 0.5, 1, 1.5, 2, 4):
            s = max(1, min(int(base * mult), -(-nred // 32), 65535))
            chunk = -(-nred // s)
            s = -(-nred // chunk)
            if (cg, s) in seen:
                continue
            seen.add((cg, s))
            # "{a}": the arguments, formatted later
            short = ap.short_walk(vec, cg, chunk)
            cands.append((f"cols cg={cg} S={s}", ac.cols_expr("{a}", vec, short), (gx, s),
                          cols_args(x, cg, gx, s, chunk, out), out))
            if vec and (cg, s) == (p.cg, p.splits):
                cands.append((f"cols cg={cg} S={s} other form", ac.cols_expr("{a}", vec, not short),
                              (gx, s), cols_args(x, cg, gx, s, chunk, out), out))
    return cands


def cols_args(x: Any, cg: int, gx: int, s: int, chunk: int, out: Any) -> tuple:
    """The columns kernel's arguments for the 2-D C-contiguous ``x``: ``cg`` column threads a
    block, ``gx`` column blocks, ``s`` row ranges of ``chunk`` rows (new partials and
    tickets), results into ``out``."""
    nred, ncols = x.shape
    parts = cupy.empty(max(1, ncols * s), np.float64)
    tickets = cupy.zeros(max(1, gx), np.uint32)
    return (x, np.uint64(nred), np.uint64(ncols), np.uint64(ncols), np.uint32(cg), np.uint32(s),
            np.uint64(chunk), parts, tickets, out, np.float64(0), np.uint64(ncols))


def hint_ab(doc: dict, x: Any, dt: np.dtype, sms: int, nbytes: int, read: float, ref: Any,
            a: str) -> None:
    """The columns kernel at every geometry of ``col_candidates`` with the hint (1) and
    without (0), batches alternating; records in ``doc["hint_ab"]``."""
    rows, cols = x.shape
    plan = ap.plan_cols(rows, cols, dt.itemsize, True, sms)
    pairs = zip(col_candidates(x, dt, sms), col_candidates(x, dt, sms))
    for (label, e, grid, kargs, out), (_, _, _, kargs1, out1) in pairs:
        launches = []
        for h, ka, o in ((0, kargs, out), (1, kargs1, out1)):
            opts = module_defines({"WARPLAB_AXIS_COLS_STREAM": h})
            go = Prepared(kernel(e.format(a=a), a, opts), grid, (ap.COLS_BLOCK,), ka)
            o.fill(0)
            go(*ka)
            launches.append((go, ka, check(o, ref) < (1e-5 if dt == np.float32 else 1e-12)))
        samples: list[list[float]] = [[], []]
        for _ in range(BATCHES):
            for h, (go, ka, _) in enumerate(launches):
                samples[h] += back_to_back(lambda go=go, ka=ka: go(*ka), CALLS, 1, 1)[0]
        pct = [100 * nbytes / float(np.median(v)) / 1e6 / read for v in samples]
        is_plan = tuple(grid) == (plan.gx, plan.splits) and f"cg={plan.cg} " in label
        doc["hint_ab"].append({"rows": rows, "cols": cols, "dtype": dt.name, "launch": label,
                               "grid": list(grid), "plan": is_plan,
                               "pct_read": {"0": pct[0], "1": pct[1]},
                               "verified": all(v for _, _, v in launches)})
        print(f"    {label:22s} hint 0 {pct[0]:5.1f}  1 {pct[1]:5.1f}"
              f"{'  <- plan' if is_plan else ''}"
              f"{'' if all(v for _, _, v in launches) else '  NOT VERIFIED'}", flush=True)


def main() -> None:
    ap_ = argparse.ArgumentParser()
    ap_.add_argument("--json", default="rows_shapes.json")
    ap_.add_argument("--quick", action="store_true", help="float32 only, default settings")
    ap_.add_argument("--default-only", action="store_true", help="the library's settings only")
    ap_.add_argument("--axis", type=int, choices=(0, 1), help="one axis only (default both)")
    ap_.add_argument("--shapes", default=None, metavar="RxC,...",
                     help="these shapes instead of the module's lists (both axes, or the one "
                          "--axis names), e.g. 16x1048576,64x1048576")
    ap_.add_argument("--hint-ab", action="store_true",
                     help="axis 0: every geometry with and without the L2::256B hint, "
                          "alternating in one process (instead of CONFIGS)")
    ap_.add_argument("--define", action="append", default=[], metavar="NAME=INT",
                     help="change one of axis_cuda.DEFINES for the whole run, the public "
                          "calls included (e.g. WARPLAB_AXIS_COLS_STREAM=0); repeatable")
    args = ap_.parse_args()
    changed = {}
    for d in args.define:
        name, _, value = d.partition("=")
        if name not in ac.DEFINES or not value.lstrip("-").isdigit():
            ap_.error(f"--define {d}: expected NAME=INT with NAME one of axis_cuda.DEFINES")
        changed[name] = int(value)
    ac.DEFINES.update(changed)  # before the first compile: the public calls' module too
    given = None
    if args.shapes:
        try:
            given = tuple(tuple(int(v) for v in s.lower().split("x")) for s in
                          args.shapes.split(","))
        except ValueError:
            given = ()
        if not given or any(len(g) != 2 or min(g) < 1 for g in given):
            ap_.error(f"--shapes {args.shapes}: expected ROWSxCOLS[,ROWSxCOLS...], e.g. 16x1048576")
    import torch

    dev = cupy.cuda.runtime.getDevice()
    sms = ac.sm_count(dev)
    read = read_bandwidth("cuda")["read_gbps"]
    name = cupy.cuda.runtime.getDeviceProperties(dev)["name"].decode()
    print(f"{name}: {sms} SMs, read ceiling {read:.0f} GB/s (read_words, 1 GiB)", flush=True)
    doc: dict[str, Any] = {"device": name, "read_gbps": read, "defines": changed,
                           "public": [], "kernels": [], "hint_ab": []}
    dtypes = (np.float32,) if args.quick else (np.float32, np.float64)
    t0 = time.time()
    for axis, shapes in ((1, given or ROWS), (0, given or COLS)):
        if args.axis is not None and axis != args.axis:
            continue
        for rows, cols in shapes:
            for dtype in dtypes:
                dt = np.dtype(dtype)
                rng = cupy.random.default_rng(1)
                x = (rng.random((rows, cols), dtype=np.float64) + 1.0).astype(dt)
                ref = {op: x.astype(np.float64).sum(axis=axis) for op in ("sum",)}
                ref["mean"] = ref["sum"] / x.shape[axis]
                nout = x.shape[1 - axis]
                nbytes = x.nbytes + nout * dt.itemsize
                t = torch.from_dlpack(x)
                line = []
                for op in ("mean", "sum"):
                    calls = {"warplab": lambda op=op, x=x, a=axis: getattr(warplab, op)(x, axis=a),
                             "cupy": lambda op=op, x=x, a=axis: getattr(cupy, op)(x, axis=a),
                             "torch": lambda op=op, t=t, a=axis: getattr(torch, op)(t, dim=a)}
                    for prov, call in calls.items():
                        got = call()
                        if prov == "torch":
                            got = cupy.from_dlpack(got)
                        err = check(got, ref[op])
                        ms = per_call_ms(call)
                        gbps = nbytes / ms / 1e6
                        doc["public"].append({"axis": axis, "rows": rows, "cols": cols,
                                              "dtype": dt.name, "op": op, "provider": prov,
                                              "ms": ms, "gbps": gbps, "pct_read": 100 * gbps / read,
                                              "rel_err": err})
                        line.append(f"{op[0]}:{prov[0]} {100 * gbps / read:5.1f}")
                print(f"axis {axis} {rows}x{cols} {dt.name}: public % of read: {' '.join(line)}",
                      flush=True)
                a = ac.targs("mean", dt)
                if args.hint_ab and axis == 0:
                    hint_ab(doc, x, dt, sms, nbytes, read, ref["mean"], a)
                    del x, t, ref
                    cupy.get_default_memory_pool().free_all_blocks()
                    continue
                best = []
                configs = CONFIGS[axis][:1] if args.quick or args.default_only else CONFIGS[axis]
                for cname, changes in configs:
                    opts = module_defines(changes)
                    unroll = changes.get("WARPLAB_AXIS_STAGE_UNROLL", ap.STAGE_UNROLL)
                    cands = (row_candidates(x, dt, sms, unroll, cname.startswith("stage"))
                             if axis == 1 else col_candidates(x, dt, sms))
                    for label, expr, grid, kargs, out in cands:
                        e = expr.format(a=a)
                        k = kernel(e, a, opts)
                        block = (ap.COLS_BLOCK,) if axis == 0 else (ap.BLOCK,)
                        go = Prepared(k, grid, block, kargs, overlap=cname.startswith("overlap"))
                        def launch(go=go, kargs=kargs) -> None:
                            go(*kargs)
                        out.fill(0)
                        launch()
                        err = check(out, ref["mean"])
                        ms = per_call_ms(launch)
                        gbps = nbytes / ms / 1e6
                        ok = err < (1e-5 if dt == np.float32 else 1e-12)
                        doc["kernels"].append({"axis": axis, "rows": rows, "cols": cols,
                                               "dtype": dt.name, "config": cname,
                                               "launch": label, "grid": list(grid), "ms": ms,
                                               "gbps": gbps, "pct_read": 100 * gbps / read,
                                               "rel_err": err, "verified": ok})
                        best.append((gbps, cname, label, ok))
                best.sort(reverse=True)
                for gbps, cname, label, ok in best[:4]:
                    print(f"    {100 * gbps / read:5.1f}%  {cname:10s} {label}"
                          f"{'' if ok else '  NOT VERIFIED'}", flush=True)
                cur = [b for b in best if b[1] == "default"]
                print("    default settings: " + ", ".join(
                    f"{lab} {100 * g / read:.1f}" for g, _, lab, _ in cur), flush=True)
                del x, t, ref
                cupy.get_default_memory_pool().free_all_blocks()
    doc["seconds"] = time.time() - t0
    with open(args.json, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"done in {doc['seconds']:.0f} s -> {args.json}")


if __name__ == "__main__":
    main()

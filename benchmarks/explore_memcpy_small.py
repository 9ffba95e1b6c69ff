"""Small buffers of the batched copy (issue 13): can ``warp_classes`` (size classes decided per
warp by ballots: a lane per buffer up to 16 B, groups of lanes up to 256 B, a warp up to 8 KiB)
beat CUB's ``DeviceMemcpy::Batched`` by 1.2x where the default ``size_classes_tuned`` trails it?
GPU machine; not part of the package's API.

Cells: 1-8 B, 16 B, 64 B, 1-64 B, 256 B, 1 KiB; CONSECUTIVE/CONSECUTIVE and SHUFFLE/SHUFFLE;
alignment 1 and 16 (cells with no multiple of the alignment are left out); per cell the
planned grid's data total (``plan.cell_total``: a launch >= 100 us at the copy ceiling) unless
``--total`` is given. Targets: the default, ``warp_classes``, every shape of
``spec.WARP_CLASSES_SWEEP`` (through ``cuda.run_warp_classes``) and CUB, all on one batch per
cell drawn on the device (``grid.GridCell``). Each record is the planned grid's
(``grid.measure_planned``: launches back to back behind a blocking kernel, median of
``--runs``, then a run into a poisoned destination checked on a sample of buffers, the byte
sum and the guards); here every destination byte is then also compared with its source byte.
GB/s counts all bytes as the benchmark does (2 x data + 24 bytes per buffer). Prints the
plan's estimate, then one line per target and cell with x CUB; writes JSON to
``$OUT/explore_memcpy_small.json`` when ``$OUT`` is set.

Usage: PYTHONPATH=src python3 benchmarks/explore_memcpy_small.py [--total 256M] [--quick]
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import cupy
import numpy as np

import warplab
from warplab.lab.harness.campaign import finish_campaign
from warplab.lab.harness.ceilings import measure_all
from warplab.lab.console import parse_size
from warplab.families.memcpy import cuda as mc
from warplab.lab.campaigns.memcpy.bench import GUARD, Case, targets
from warplab.lab.campaigns.memcpy.grid import GridCell, run_planned
from warplab.lab.campaigns.memcpy.plan import RUNS, WARMUP, estimate_s, plan_cells
from warplab.families.memcpy.spec import WARP_CLASSES_SWEEP
from warplab.lab.report.memcpy_target import CEILING_MODE, INVALID, valid_scatter

CELLS = ((1, 8), (16, 16), (64, 64), (1, 64), (256, 256), (1024, 1024))
LAYOUTS = (("consecutive", "consecutive"), ("shuffle", "shuffle"))
CUB = "cub::DeviceMemcpy::Batched"
VARIANTS = ["size_classes_tuned", "warp_classes"]
PIECE = 32 << 20  # bytes of destination compared per step of the full check


def full_check(dc: GridCell) -> str | None:
    """Every destination byte against its source byte (buffers are packed: the region has no
    gaps). None when all match, else a description."""
    sizes = cupy.asarray(dc.sizes)
    starts = cupy.cumsum(sizes) - sizes  # buffer starts in the packed byte stream
    s_off, d_off = cupy.asarray(dc.src_off), cupy.asarray(dc.dst_off)
    bad = 0
    for lo in range(0, dc.data, PIECE):
        j = cupy.arange(lo, min(lo + PIECE, dc.data), dtype=np.int64)
        owner = cupy.searchsorted(starts, j, side="right") - 1
        rel = j - starts[owner]
        got = dc.dst[GUARD + d_off[owner] + rel]
        want = dc.src[GUARD + s_off[owner] + rel]
        bad += int(cupy.count_nonzero(got != want))
    return f"{bad} destination bytes differ from their source" if bad else None


def measure_cells(grid: list[Case], tgts: list[Any], notes: list[str], runs: int,
                  auto_total: bool = True, reset_l2: bool = True) -> tuple[list[dict], dict]:
    """The cells of ``grid`` planned (``auto_total``: the plan's data total per cell) and
    measured for ``tgts`` with :func:`full_check`, the copy ceiling measured first; prints the
    plan's estimate and a line per cell; adds run_planned's notes to ``notes``; ``reset_l2``:
    the persisting L2 lines reset before each target (``grid.fresh_l2``). Returns
    (records, ceilings)."""
    ceilings = measure_all("cuda")
    copy = ceilings.get("copy_gbps")
    cells = plan_cells(grid, [t.name for t in tgts], copy, auto_total=auto_total, runs=runs,
                       warmup=WARMUP)
    print(f"{warplab.__file__}; copy ceiling {copy} GB/s; {len(cells)} cells x {len(tgts)} "
          f"targets, about {estimate_s(cells, startup=False, calls=False):.0f} s planned; "
          f"notes: {notes}", flush=True)
    with cupy.cuda.Stream(non_blocking=True):
        records, more, _ = run_planned(cells, tgts, ceilings, check=full_check,
                                       log=lambda line: print(line, flush=True),
                                       reset_l2=reset_l2)
    notes += more
    return records, ceilings


def cells_args(doc: str) -> argparse.Namespace:
    """The options of the cell scripts (``explore_memcpy_cells``, ``explore_memcpy_ceiling``):
    ``--out`` (JSON path) and ``--runs`` (the planned grid's by default)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", default=None, help="JSON path")
    ap.add_argument("--runs", type=int, default=RUNS)
    return ap.parse_args()


def records_by_case(records: list[dict]) -> dict[str, dict[str, dict]]:
    """Records per cell label, then per variant."""
    out: dict[str, dict[str, dict]] = {}
    for r in records:
        out.setdefault(r["params"]["case"], {})[r["variant"]] = r
    return out


def judge_scatter(records: list[dict]) -> dict[str, bool | None]:
    """Per cell (``params.case``) whether its scatter ceiling is valid
    (``report.memcpy_target.valid_scatter``: at least as fast as every verified copy of the
    cell); each ceiling record gets ``params.valid`` and, where invalid, ``params.invalid``
    (``memcpy_target.INVALID``). None where the cell has no verified ceiling."""
    by_case: dict[str, list[dict]] = {}
    for r in records:
        by_case.setdefault(r["params"]["case"], []).append(r)
    out: dict[str, bool | None] = {}
    for case, recs in by_case.items():
        ceil = next((r for r in recs if r["params"].get("mode") == CEILING_MODE), None)
        copies = [r["gbps"] for r in recs if r["verified"]
                  and r["params"].get("mode") != CEILING_MODE]
        ok = valid_scatter(ceil["gbps"] if ceil and ceil["verified"] else None, copies)
        out[case] = ok
        if ceil is not None and ok is not None:
            ceil["params"]["valid"] = ok
            if not ok:
                ceil["params"]["invalid"] = INVALID
    return out


def finish_script(name: str, records: list[dict], ceilings: dict, notes: list[str],
                  out: str | None, t0: float) -> None:
    """Print the wrong records (or that every record verified), write the JSON to ``out``
    (when given) and print the seconds since ``t0``."""
    bad = [f"{r['params']['case']} {r['variant']}: {r['error']}" for r in records
           if not r["verified"]]
    print("every record verified" if not bad else "WRONG: " + "; ".join(bad), flush=True)
    path = Path(out) if out else None
    finish_campaign("cuda", ceilings, notes, name, records, path)
    print(f"done in {time.perf_counter() - t0:.0f} s" + (f"; JSON {path}" if path else ""),
          flush=True)


def shape_name(c: Any) -> str:
    """``warp_classes[t16,g8,s256,b4,st0]``; a second group tier adds ``g32,s1024``, zeroed
    register arrays ``,z3``, a load policy other than 0 ``,l1``, words in neighbouring lanes
    ``,w1``."""
    tier2 = f"g{c.group2},s{c.tier2_max}," if c.tier2_max > c.sub_max else ""
    zeroed = f",z{c.zeroed}" if c.zeroed else ""
    loads = f",l{c.loads}" if c.loads else ""
    words = f",w{c.words}" if c.words else ""
    return (f"warp_classes[t{c.tlev_max},g{c.group},s{c.sub_max},{tier2}b{c.min_blocks},"
            f"st{c.stream}{zeroed}{loads}{words}]")


def shape_targets() -> list[Any]:
    """The sweep's shapes as targets (a name and a launch function)."""
    return [SimpleNamespace(name=shape_name(c), fn=lambda b, c=c: mc.run_warp_classes(b, c))
            for c in WARP_CLASSES_SWEEP]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--total", default=None, help="data bytes per cell (default: the plan's)")
    ap.add_argument("--quick", action="store_true", help="CC, align 1, no sweep shapes")
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    t0 = time.perf_counter()
    variants, notes = targets(VARIANTS, True)
    cub = [t for t in variants if getattr(t, "name", "") == CUB]
    tgts = [t for t in variants if getattr(t, "name", "") in VARIANTS]
    tgts += ([] if args.quick else shape_targets()) + cub
    layouts = LAYOUTS[:1] if args.quick else LAYOUTS
    aligns = (1,) if args.quick else (1, 16)
    total = parse_size(args.total) if args.total else 1
    grid = [Case(lo, hi, s, d, a, total) for lo, hi in CELLS for a in aligns
            if hi // a >= max(-(-lo // a), 1) for s, d in layouts]
    records, ceilings = measure_cells(grid, tgts, notes, args.runs, args.total is None)
    by_case: dict[str, list[dict]] = {}
    for r in records:
        by_case.setdefault(r["params"]["case"], []).append(r)
    for case, cell in by_case.items():
        ref = next((r["gbps"] for r in cell if r["variant"] == CUB), None)
        print(f"{case} ({cell[0]['params']['count']} buffers, "
              f"{cell[0]['data_bytes'] / 2 / (1 << 20):.0f} MiB)")
        for r in cell:
            g = r["gbps"]
            ratio = f"{g / ref:5.2f}x CUB" if g and ref else "   -"
            ok = "ok" if r["verified"] else f"WRONG: {r['error']}"
            gbps = f"{g:7.0f}" if g else "      -"
            pct = r.get("pct_of_copy_bw")
            pct_s = f"{pct:5.1f}%" if pct is not None else "    -"
            print(f"  {r['variant']:<40} {gbps} GB/s {pct_s} {ratio}  {ok}", flush=True)
    out = os.environ.get("OUT")
    path = Path(out) / "explore_memcpy_small.json" if out else None
    finish_campaign("cuda", ceilings, notes, "explore_memcpy_small", records, path)
    print(f"done in {time.perf_counter() - t0:.0f} s" + (f"; JSON {path}" if path else ""),
          flush=True)


if __name__ == "__main__":
    main()

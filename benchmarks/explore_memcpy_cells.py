"""Candidate shapes of ``warp_tiers_words`` (issue 13) against the default, CUB and the cell's
scatter ceiling on the same batches: since session 17 the load policies 10 (the thread-level
source bytes evict-first, ``ld.global.cs``, in warps whose destinations are scattered, and
the default's evict-first descriptors: +4-8% on the tiny cells with a scattered destination,
-7% at C_C 1-8 B a1, each such load selecting between two instructions) and 130 (the same
loads L2 evict-first by a policy register chosen per warp: one instruction); session 17's
calls 2, 4 and 5 timed policies 0, 8 and two other forms of 10, and session 18 five ways of
choosing the loads once per launch (NOTES; their kernels are at 45b39d0 and 5f771e0);
session 16 compared the word shapes (``spec.WarpClasses.words``; the default's 3: groups of 8 lanes copy buffers of 17-64 bytes as 4-byte words of
the destination in neighbouring lanes, each funnel-shifted from two aligned source words, and
in warps whose destinations are scattered the thread-level buffers that would take two or
more words of their own lane go through a stream of the warp's words; the candidates: 0,
session 14's default without them, 1 and 2, each half alone; session 16's calls 1-3, 7 and
10 timed other shapes: NOTES),
and the default's kernel once more (``default again``: the noise). Session 14 ran this script
with the load policies as candidates (its JSON records that commit). GPU machine; not part of
the package's API.

Why (at session 16's start): the cells left under the target were shuffled on both sides.
Session 11's scatter ceiling (touching each buffer's first and last byte, warp-cooperatively)
ran 12% above the default at 1-8 B align 4 and 31-39% above it at 1-64 B; the touch spends one
load and one store instruction per buffer and side, while the default spent two 4-byte words
per lane on most 8-byte buffers at align 4 and, for 17-64 B buffers, up to three 8-byte loads
per chunk plus a byte load and store per edge byte, each instruction touching the same
scattered sectors again (benchmarks/NOTES.md, session 16).

Cells (session 12's 35): 1-8, 1-64, fixed 16 and 1-1024 B, all four layouts, alignment 1 and
4, then 1-256 B C/C at align 1 and 4 and fixed 64 B C/C at align 1; each at the planned
grid's data total (``plan.cell_total``). Every record is the planned grid's
(``grid.measure_planned``: launches back to back behind a blocking kernel, median of
``--runs``, a run into a poisoned destination checked on sampled buffers, the byte sum and the
guard bytes); here every destination byte is then compared with its source byte too
(``explore_memcpy_small.measure_cells``). GB/s counts all bytes (2 x data + 24 per buffer).

The cell's scatter ceiling (``lab/campaigns/memcpy/ceiling.py``, column ``ceiling``: not a copy)
is measured beside them and judged: valid only where no verified copy of the cell ran faster
(``explore_memcpy_small.judge_scatter``). Prints one line per cell (CUB's GB/s, then each
target's GB/s and x CUB; ``!`` marks a wrong record), per target the cells at >= 1.2x CUB and
the geometric mean of x CUB, and per candidate the geometric mean of x default over the 35
cells (and over the 1-8 B align-1 cells), its worst cell x default and x ``default again``,
then per copy the cells that meet the target with the cell's scatter ceiling; full records
as JSON.

Usage: PYTHONPATH=src python3 benchmarks/explore_memcpy_cells.py --out $OUT/memcpy-cells.json
"""
from __future__ import annotations

import math
import time
from types import SimpleNamespace

from explore_memcpy_small import (
    cells_args,
    finish_script,
    judge_scatter,
    measure_cells,
    records_by_case,
    shape_name,
)

from warplab.lab.campaigns.memcpy.bench import Case, targets
from warplab.lab.campaigns.memcpy.ceiling import CEILING
from warplab.lab.campaigns.memcpy.ceiling_cuda import cuda_ceiling
from warplab.families.memcpy.cuda import run_warp_classes
from warplab.families.memcpy.spec import WARP_TIERS_WORDS, WarpClasses
from warplab.lab.report.memcpy_target import INVALID, target_met, valid_scatter

CUB = "cub::DeviceMemcpy::Batched"
DEFAULT = "warp_tiers_words"
AGAIN = shape_name(WARP_TIERS_WORDS)  # the default's kernel as a shape: the run's noise
VARIANTS = [DEFAULT]
C, S = "consecutive", "shuffle"
LAYOUTS = ((C, C), (C, S), (S, C), (S, S))
#: (lo, hi, align, layouts)
CELLS = ([(lo, hi, a, l) for lo, hi in ((1, 8), (1, 64), (16, 16), (1, 1024)) for a in (1, 4)
          for l in LAYOUTS]
         + [(1, 256, 1, (C, C)), (1, 256, 4, (C, C)), (64, 64, 1, (C, C))])
#: the candidates timed beside the default (``spec.WarpClasses`` shapes) and their headers
CANDIDATES = {WARP_TIERS_WORDS._replace(loads=10): "10: 8 + EF desc",
              WARP_TIERS_WORDS._replace(loads=130): "130: L2 EF reg"}
#: column headers: the candidates and the noise column
SHAPES = {**{shape_name(c)[len("warp_classes["):-1]: v for c, v in CANDIDATES.items()},
          AGAIN[len("warp_classes["):-1]: "default again"}


def shape_target(c: WarpClasses) -> SimpleNamespace:
    """The default's kernel shape ``c`` (``spec.WARP_CLASSES_SWEEP``), launched as the default
    is."""
    return SimpleNamespace(name=shape_name(c), fn=lambda b: run_warp_classes(b, c))


def short(name: str) -> str:
    """A column header: the variant's or shape's short name."""
    names = {DEFAULT: "default", CEILING: "ceiling"}
    if name in names:
        return names[name]
    inner = name[len("warp_classes["):-1]
    return SHAPES.get(inner, inner)


def tiny_misaligned(case: str) -> bool:
    """The cells session 12's shapes sped up by code generation: 1-8 B at alignment 1.
    ``case``: ``S_C_1_8_a1`` (layouts, smallest and largest size, alignment)."""
    _, _, lo, hi, align = case.split("_")
    return (lo, hi, align) == ("1", "8", "a1")


def geomean(xs: list[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def summary(by_case: dict[str, dict[str, dict]], names: list[str]) -> list[str]:
    """One line per cell, then per target the cells >= 1.2x CUB and the geometric mean, then
    per candidate its geometric mean x default (all cells; 1-8 B align 1), its worst cell x
    default and its worst cell x ``default again``."""
    cols = [n for n in names if n != CUB]
    lines = [f"{'cell':<21} {'CUB GB/s':>8} " + " ".join(f"{short(n):>14}" for n in cols)]
    ratios: dict[str, list[float]] = {n: [] for n in cols}
    vs: dict[str, dict[str, list[tuple[float, str]]]] = {n: {DEFAULT: [], AGAIN: []}
                                                          for n in cols}
    for case, recs in by_case.items():
        ref = recs.get(CUB, {}).get("gbps")
        row = f"{case:<21} {ref or 0:8.0f} "
        for n in cols:
            r = recs.get(n)
            if not r or not r.get("gbps") or not ref:
                row += f"{'-':>14} "
                continue
            ratios[n].append(r["gbps"] / ref)
            for base in (DEFAULT, AGAIN):
                b = recs.get(base, {}).get("gbps")
                if b:
                    vs[n][base].append((r["gbps"] / b, case))
            row += f"{r['gbps']:8.0f} {r['gbps'] / ref:4.2f}{' ' if r['verified'] else '!'} "
        lines.append(row.rstrip())
    lines.append("target: cells >= 1.2x CUB / cells, geometric mean x CUB")
    for n in cols:
        if ratios[n]:
            lines.append(f"  {short(n):<22} {sum(x >= 1.2 for x in ratios[n]):3d} / "
                         f"{len(ratios[n])}  {geomean(ratios[n]):5.3f}")
    lines.append("candidate: geometric mean x default (all cells; 1-8 B align 1), worst cell x "
                 "default, worst cell x default again")
    for n in cols:
        xs, ys = vs[n][DEFAULT], vs[n][AGAIN]
        if n == DEFAULT or n.startswith(CEILING) or not xs:
            continue
        worst = min(xs)
        line = (f"  {short(n):<14} {geomean([x for x, _ in xs]):5.3f} "
                f"({geomean([x for x, c in xs if tiny_misaligned(c)]):5.3f})  "
                f"worst {worst[0]:5.3f} at {worst[1]}")
        if ys and n != AGAIN:
            line += f"; x again worst {min(ys)[0]:5.3f} at {min(ys)[1]}"
        lines.append(line)
    return lines


def copy_targets(by_case: dict[str, dict[str, dict]], copy_gbps: float | None) -> list[str]:
    """Per copy (the default and each candidate) the cells that meet issue 13's target
    (``report.memcpy_target.target_met``) with the cell's scatter ceiling, where it is valid
    against every verified copy of the cell (``valid_scatter``)."""
    lines = ["target with the cell's scatter ceiling: cells met / cells"]
    for copy in [DEFAULT, *(shape_name(c) for c in CANDIDATES)]:
        met, cells, missed = 0, 0, []
        for case, recs in by_case.items():
            r, c, cub = recs.get(copy), recs.get(CEILING), recs.get(CUB, {}).get("gbps")
            if not r or not cub or not copy_gbps:
                continue
            cells += 1
            copies = [x["gbps"] for n, x in recs.items()
                      if x["verified"] and not n.startswith(CEILING)]
            scatter = (c["gbps"] if c and c["verified"] and valid_scatter(c["gbps"], copies)
                       else None)
            ok = r["verified"] and bool(target_met(
                r["gbps"] / cub, 100 * r["gbps"] / copy_gbps, cub, copy_gbps,
                r["params"]["min"], scatter))
            met += ok
            if not ok:
                missed.append(case)
        lines.append(f"  {short(copy):<16} {met:3d} / {cells}  missed: {', '.join(missed)}")
    return lines


def main() -> None:
    args = cells_args(__doc__)
    t0 = time.perf_counter()
    variants, notes = targets(VARIANTS, True)
    tgts = [t for t in variants if getattr(t, "name", "") in VARIANTS]
    tgts += [shape_target(c) for c in CANDIDATES]
    tgts.append(SimpleNamespace(name=AGAIN, fn=lambda b: run_warp_classes(b, WARP_TIERS_WORDS)))
    tgts += [t for t in variants if getattr(t, "name", "") == CUB] + [cuda_ceiling()]
    names = [t.name for t in tgts]
    grid = [Case(lo, hi, s, d, a, 1) for lo, hi, a, (s, d) in CELLS]
    print(f"{len(grid)} cells", flush=True)
    records, ceilings = measure_cells(grid, tgts, notes, args.runs)
    by_case = records_by_case(records)
    print("\n".join(summary(by_case, names)), flush=True)
    print("\n".join(copy_targets(by_case, ceilings.get("copy_gbps"))), flush=True)
    bad = [case for case, ok in judge_scatter(records).items() if ok is False]
    print(f"{INVALID}: {', '.join(bad) or 'none'} (those cells fall back to the copy ceiling)",
          flush=True)
    finish_script("explore_memcpy_cells", records, ceilings, notes, args.out, t0)


if __name__ == "__main__":
    main()

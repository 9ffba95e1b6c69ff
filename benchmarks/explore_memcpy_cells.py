"""Issue 13's cells where the default ``warp_classes`` trails 1.2x CUB (H100, session 9:
``results/memcpy-analysis-session9.md``) and those where round 5's ``warp_tiers`` lost to it
(session 10): the round-5 tiers (``warp_tiers``: every tiny buffer streamed but single aligned
moves), the round-6 tiers (``warp_tiers_words``: word-aligned tiny buffers copied in words by
their lane) and the shapes of ``spec.WARP_CLASSES_SWEEP`` (both at 3 blocks per SM) against
the default and CUB, on the same batches. GPU machine; not part of the package's API.

Cells: the 26 below 1.2x CUB in session 9 (1-8 B and 1-64 B with a shuffled side, 1-1024 B,
fixed 16 B S/S; and 1-64 B C/S align 4 at 1.20x), then guards: round 5's losses of
``warp_tiers`` (1-8 B and 1-64 B align 4 C/C and S/C, 1-256 B C/C align 4, 1-4096 B C/C
align 1) and four cells that pass (1-8 B and 1-64 B C/C align 1, fixed 1 KiB C/S, 1-64 KiB
S/S); each at the planned grid's
data total (``plan.cell_total``). Every record is the planned
grid's (``grid.measure_planned``: launches back to back behind a blocking kernel, median of
``--runs``, a run into a poisoned destination checked on sampled buffers, the byte sum and the
guard bytes); here every destination byte is then compared with its source byte too
(``explore_memcpy_small.measure_cells``). GB/s counts all bytes (2 x data + 24 per buffer).

The cell's scatter ceiling (``families/memcpy/ceiling.py``, column ``ceiling``: not a copy)
is measured beside them, and judged: valid only where no verified copy of the cell ran
faster (``explore_memcpy_small.judge_scatter``). Prints one line per cell (CUB's GB/s, then each target's x CUB;
``!`` marks a wrong record) and per target the cells at >= 1.2x CUB and the geometric mean of
x CUB; full records as JSON. ``explore_memcpy_ceiling.py`` judges session 10's misses against
the ceiling.

Usage: PYTHONPATH=src python3 benchmarks/explore_memcpy_cells.py --out $OUT/memcpy-cells.json
"""
from __future__ import annotations

import math
import time

from explore_memcpy_small import (
    cells_args,
    finish_script,
    judge_scatter,
    measure_cells,
    records_by_case,
    shape_targets,
)

from warplab.families.memcpy.bench import Case, targets
from warplab.families.memcpy.ceiling import CEILING
from warplab.families.memcpy.ceiling_cuda import cuda_ceiling
from warplab.report.memcpy_target import INVALID

CUB = "cub::DeviceMemcpy::Batched"
VARIANTS = ["warp_classes", "warp_tiers", "warp_tiers_words"]
C, S = "consecutive", "shuffle"
#: (lo, hi, align, layouts): session 9's misses, then the guards
CELLS = ([(1, 8, 1, l) for l in ((C, S), (S, C), (S, S))]
         + [(1, 8, 4, l) for l in ((C, S), (S, S))]
         + [(1, 64, 1, l) for l in ((C, S), (S, C), (S, S))]
         + [(1, 64, 4, l) for l in ((C, S), (S, C), (S, S))]
         + [(1, 1024, a, l) for a in (1, 4, 16) for l in ((C, C), (C, S), (S, C), (S, S))]
         + [(16, 16, 1, (S, S))]
         + [(1, 8, 4, (C, C)), (1, 8, 4, (S, C)), (1, 64, 4, (C, C)), (1, 256, 4, (C, C)),
            (1, 4096, 1, (C, C))]
         + [(1, 8, 1, (C, C)), (1, 64, 1, (C, C)), (1024, 1024, 1, (C, S)),
            (1, 65536, 1, (S, S))])
GUARDS = 9
#: column headers of the sweep's shapes (spec.WARP_CLASSES_SWEEP)
SHAPES = {"t16,g8,s256,g32,s1024,b3,st4": "words,b3", "t16,g8,s256,g32,s1024,b3,st3": "tiers,b3"}


def short(name: str) -> str:
    """A column header: the variant's or shape's short name."""
    names = {"warp_classes": "default", "warp_tiers": "tiers", "warp_tiers_words": "words",
             CEILING: "ceiling"}
    if name in names:
        return names[name]
    inner = name[len("warp_classes["):-1]
    return SHAPES.get(inner, inner.replace("t16,", "").replace(",b4", ""))


def summary(by_case: dict[str, dict[str, dict]], names: list[str]) -> list[str]:
    """One line per cell, then per target: cells >= 1.2x CUB and the geometric mean."""
    cols = [n for n in names if n != CUB]
    lines = [f"{'cell':<20} {'CUB GB/s':>8} " + " ".join(f"{short(n):>14}" for n in cols)]
    ratios: dict[str, list[float]] = {n: [] for n in cols}
    for case, recs in by_case.items():
        ref = recs.get(CUB, {}).get("gbps")
        row = f"{case:<20} {ref or 0:8.0f} "
        for n in cols:
            r = recs.get(n)
            if not r or not r.get("gbps") or not ref:
                row += f"{'-':>14} "
                continue
            x = r["gbps"] / ref
            ratios[n].append(x)
            row += f"{r['gbps']:8.0f} {x:4.2f}{' ' if r['verified'] else '!'} "
        lines.append(row.rstrip())
    lines.append("target: cells >= 1.2x CUB / cells, geometric mean x CUB (guards included)")
    for n in cols:
        xs = ratios[n]
        if xs:
            g = math.exp(sum(map(math.log, xs)) / len(xs))
            lines.append(f"  {short(n):<22} {sum(x >= 1.2 for x in xs):3d} / {len(xs)}  "
                         f"{g:5.3f}")
    return lines


def main() -> None:
    args = cells_args(__doc__)
    t0 = time.perf_counter()
    variants, notes = targets(VARIANTS, True)
    tgts = [t for t in variants if getattr(t, "name", "") in VARIANTS]
    tgts += shape_targets()
    tgts += [t for t in variants if getattr(t, "name", "") == CUB] + [cuda_ceiling()]
    names = [t.name for t in tgts]
    grid = [Case(lo, hi, s, d, a, 1) for lo, hi, a, (s, d) in CELLS]
    print(f"{len(grid)} cells, the last {GUARDS} guards", flush=True)
    records, ceilings = measure_cells(grid, tgts, notes, args.runs)
    print("\n".join(summary(records_by_case(records), names)), flush=True)
    bad = [case for case, ok in judge_scatter(records).items() if ok is False]
    print(f"{INVALID}: {', '.join(bad) or 'none'} (those cells fall back to the copy ceiling)",
          flush=True)
    finish_script("explore_memcpy_cells", records, ceilings, notes, args.out, t0)


if __name__ == "__main__":
    main()

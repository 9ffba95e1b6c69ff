"""Is the scatter ceiling the fastest way to touch a scattered batch's sectors (issue 13)?
GPU machine; not part of the package's API.

Why (session 17): in four cells the default copy ran 0.3-0.5% faster than the cell's scatter
ceiling (``families/memcpy/ceiling.py``: each buffer's end sectors touched, the fastest of six
launch shapes) in both full grids of session 16, every sample of the copy above the
ceiling's median: S_S 16 B at alignment 1, 4 and 16 and C_S 1-8 B at alignment 4. A copy
that beats the touch of its own sectors means the touch's shapes are not the fastest way to
touch them; the validity guard then drops the ceiling. This script times more ways to touch
the same sectors, each a shape of one ceiling record (``params.shape_ms``): the six shapes
of then with a resident grid (as then) and with a block per chunk (``g``: as the copies launch), with
half and a quarter of the resident grid (``r0.5``, ``r0.25``: fewer warps an SM, as the
default copy whose registers let 4 blocks of 256 threads share an SM), a thread per buffer at
128 threads and at four buffers a thread, and the default copy's load policy against 0 (plain loads), 8 (evict-first loads where the warp's destinations are
scattered), 32 (stores L2 evict-last) and 64 (the hints where scattered).

Cells: every cell with a shuffled destination at 1-8, 16 and 1-64 B, alignment 1 and 4 (16 B
also 16), and for contrast S_C and C_C 1-8 B at alignment 4 and C_C 16 B at alignment 16;
each at the planned grid's data total. Targets: the default, CUB, the default again (the
noise), the package's ceiling (its own ways: six in call 1, ``ceiling.TOUCHES`` since) and ``scatter_touch[explore]`` (every shape
above, the fastest shape's record checked with ``ceiling.touch_check``). Prints per cell the
copies' and the ceilings' GB/s (all bytes: 2 x data + 24 per buffer) and the explore's five
fastest shapes, then per shape the geometric mean of its GB/s over the package ceiling's.

Outcome of call 1 (NOTES, session 17): the warp kernel with a block per chunk, most with
plain descriptor loads, touched 1-11% faster than the six; those ways joined the ceiling.

Usage: PYTHONPATH=src python3 benchmarks/explore_memcpy_touch.py --out $OUT/memcpy-touch.json
"""
from __future__ import annotations

import math
import time
from types import SimpleNamespace

from explore_memcpy_small import cells_args, finish_script, measure_cells, records_by_case

from warplab.families.memcpy.bench import Case, targets
from warplab.families.memcpy.ceiling import CEILING, ScatterCeiling, Touch
from warplab.families.memcpy.ceiling_cuda import cuda_ceiling
from warplab.families.memcpy.cuda import run_warp_classes
from warplab.families.memcpy.spec import WARP_TIERS_WORDS

CUB = "cub::DeviceMemcpy::Batched"
DEFAULT = "warp_tiers_words"
AGAIN = "default again"
EXPLORE = f"{CEILING}[explore]"
C, S = "consecutive", "shuffle"
CELLS = ([(lo, hi, a, (s, S)) for lo, hi, aligns in ((1, 8, (1, 4)), (16, 16, (1, 4, 16)),
                                                      (1, 64, (1, 4)))
          for a in aligns for s in (C, S)]
         + [(1, 8, 4, (S, C)), (1, 8, 4, (C, C)), (16, 16, 16, (C, C))])
#: Every way to touch timed in session 17's call 1 (``ceiling.Touch``; grid 0: a block per
#: chunk, 0.5 and 0.25: part of the resident grid, fewer warps an SM, as the default copy
#: whose registers let 4 blocks of 256 threads share an SM).
TOUCHES = tuple(
    [Touch(b, p, grid=g) for b, p in ((256, 1), (256, 2), (512, 1), (512, 2), (128, 1),
                                      (128, 2), (256, 4)) for g in (1.0, 0.0)]
    + [Touch(b, warp=True, grid=g) for b in (256, 512) for g in (1.0, 0.0)]
    + [Touch(256, p, grid=g) for p in (1, 2) for g in (0.5, 0.25)]
    + [Touch(256, warp=True, grid=g) for g in (0.5, 0.25)]
    + [t._replace(loads=k) for t in (Touch(256, grid=0), Touch(512, 2),
                                     Touch(256, warp=True, grid=0)) for k in (0, 8, 32, 64)])


def explore_ceiling() -> ScatterCeiling:
    """Every way to touch of :data:`TOUCHES` as the shapes of one ceiling target."""
    return ScatterCeiling(EXPLORE, cuda_ceiling(touches=TOUCHES).shapes)


def geomean(xs: list[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def summary(by_case: dict[str, dict[str, dict]]) -> list[str]:
    """Per cell: CUB, the default, the default again, the package's ceiling and the explore
    (GB/s; the copy above both ceilings marked ``<``), then the explore's five fastest
    shapes; then per shape the geometric mean over the package's ceiling."""
    lines = [f"{'cell':<16} {'CUB':>6} {'default':>7} {'again':>6} {'ceiling':>14} "
             f"{'explore':>16}  fastest shapes (GB/s)"]
    per_shape: dict[str, list[float]] = {}
    for case, recs in by_case.items():
        cub, d, a = (recs.get(n, {}).get("gbps") or 0 for n in (CUB, DEFAULT, AGAIN))
        c, e = recs.get(CEILING), recs.get(EXPLORE)
        if not c or not e or not c.get("gbps") or not e.get("gbps"):
            lines.append(f"{case:<16} {cub:6.0f} {d:7.0f} {a:6.0f}  ceiling records missing")
            continue
        gbps = {s: e["bytes_moved"] / ms / 1e6 for s, ms in e["params"]["shape_ms"].items()}
        for s, g in gbps.items():
            per_shape.setdefault(s, []).append(g / c["gbps"])
        top = sorted(gbps, key=gbps.__getitem__, reverse=True)[:5]
        mark = "<" if d > max(c["gbps"], e["gbps"]) else " "
        lines.append(f"{case:<16} {cub:6.0f} {d:7.0f}{mark}{a:6.0f} {c['gbps']:6.0f} "
                     f"{c['params']['shape']:>7} {e['gbps']:6.0f}{'' if e['verified'] else '!'} "
                     f"{e['params']['shape']:>9}  "
                     + " ".join(f"{s} {gbps[s]:.0f}" for s in top))
    lines.append("per shape: geometric mean of GB/s over the package ceiling's (all cells)")
    for s, xs in sorted(per_shape.items(), key=lambda kv: -geomean(kv[1])):
        lines.append(f"  {s:<12} {geomean(xs):6.4f}  min {min(xs):6.4f}  max {max(xs):6.4f}")
    return lines


def main() -> None:
    args = cells_args(__doc__)
    t0 = time.perf_counter()
    variants, notes = targets([DEFAULT], True)
    tgts = [t for t in variants if getattr(t, "name", "") in (DEFAULT, CUB)]
    tgts.append(SimpleNamespace(name=AGAIN, fn=lambda b: run_warp_classes(b, WARP_TIERS_WORDS)))
    tgts += [cuda_ceiling(), explore_ceiling()]
    grid = [Case(lo, hi, s, d, a, 1) for lo, hi, a, (s, d) in CELLS]
    print(f"{len(grid)} cells, {len(TOUCHES)} ways to touch", flush=True)
    records, ceilings = measure_cells(grid, tgts, notes, args.runs)
    print("\n".join(summary(records_by_case(records))), flush=True)
    finish_script("explore_memcpy_touch", records, ceilings, notes, args.out, t0)


if __name__ == "__main__":
    main()

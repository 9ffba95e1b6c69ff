"""Issue 13's cells where the default ``warp_tiers_words`` trails 1.2x CUB (H100, session 10
full grid, 21 of 140 cells) and a few
guards, each against its own scatter ceiling (``lab/campaigns/memcpy/ceiling.py``, round 2): per
buffer the descriptor and each 32-byte sector holding one of its ends touched once a side
(the first byte, and the last only where it lies in another sector on either side), the
fastest of six launch shapes (four a thread per buffer, two warp-cooperative). GPU machine;
not part of the package's API.

Every record is the planned grid's (``grid.measure_planned`` / ``grid.measure_ceiling``:
launches back to back behind a blocking kernel, median of ``--runs``, then a run into a
poisoned destination and its check); the default's destination is also compared byte for
byte with its source (``explore_memcpy_small.full_check``); the ceiling's check is its own
(end bytes equal the source's, the bytes between and the guards still poisoned). GB/s
counts all bytes for every record, the ceiling's too (2 x data + 24 per buffer).

Prints per cell: CUB's and the default's GB/s, default / CUB, the scatter ceiling's GB/s,
touch / default and touch / CUB, its fastest shape, whether it is valid (``ok``: at least as
fast as every verified copy of the cell, ``report.memcpy_target.valid_scatter``; ``INVALID``
else, and the cell falls back to the copy ceiling), the cell's ceiling (the lower of copy and
a valid scatter ceiling), 1.2x CUB over that ceiling, the default's % of it, and the target
under the old rule (copy ceiling only) and the new one (``report.memcpy_target.target_met``);
then each shape's median over the fastest's per cell; full records as JSON (the ceiling's
record has ``params.valid`` and, where invalid, ``params.invalid``).

Usage: PYTHONPATH=src python3 benchmarks/explore_memcpy_ceiling.py --out $OUT/memcpy-ceiling.json
"""
from __future__ import annotations

import time

from explore_memcpy_small import (
    cells_args,
    finish_script,
    judge_scatter,
    measure_cells,
    records_by_case,
)

from warplab.lab.campaigns.memcpy.bench import Case, targets
from warplab.lab.campaigns.memcpy.ceiling import CEILING
from warplab.lab.campaigns.memcpy.ceiling_cuda import cuda_ceiling
from warplab.lab.report.memcpy_target import INVALID, TARGET_RATIO, cell_ceiling, target_met

CUB = "cub::DeviceMemcpy::Batched"
DEFAULT = "warp_tiers_words"
C, S = "consecutive", "shuffle"
#: (lo, hi, align, layouts): session 10's 21 misses, then guards
CELLS = ([(1, 8, a, lay) for a in (1, 4) for lay in ((C, S), (S, S))]
         + [(1, 8, 1, (S, C)), (1, 8, 1, (C, C))]
         + [(1, 64, a, lay) for a in (1, 4) for lay in ((C, S), (S, C), (S, S))]
         + [(16, 16, a, (S, S)) for a in (1, 4, 16)]
         + [(1, 1024, a, (C, C)) for a in (1, 4, 16)]
         + [(1, 1024, 16, lay) for lay in ((C, S), (S, C), (S, S))]
         + [(1, 64, 1, (C, C)), (16, 16, 1, (C, C)), (256, 256, 1, (S, S)),
            (1024, 1024, 1, (C, S)), (65536, 65536, 1, (S, S))])
GUARDS = 5


def _f(x: float | None, fmt: str) -> str:
    width = int(fmt.split(".")[0] or 0)
    return "-".rjust(width) if x is None else format(x, fmt)


def _yn(x: bool | None) -> str:
    return "-" if x is None else ("pass" if x else "FAIL")


def summary(by_case: dict[str, dict[str, dict]], valid: dict[str, bool | None],
            copy: float | None) -> list[str]:
    """One line per cell, the counts of passes under the old and the new rule and of valid
    scatter ceilings, then each shape's median over the fastest's per cell."""
    head = (f"{'cell':<18} {'buffers':>10} {'CUB':>5} {'dflt':>5} {'xCUB':>5} {'touch':>6} "
            f"{'t/dflt':>6} {'t/CUB':>5} {'shape':>6} {'valid':>7} {'ceil':>5} "
            f"{'1.2CUB/c':>8} {'%ceil':>6} {'old':>4} {'new':>4}")
    lines = [f"GB/s counting all bytes; copy ceiling {_f(copy, '.0f')} GB/s", head]
    old_n = new_n = total = ok_n = 0
    for case, recs in by_case.items():
        d, cub, sc = recs.get(DEFAULT), recs.get(CUB), recs.get(CEILING)
        dg = d["gbps"] if d and d["verified"] else None
        cg = cub["gbps"] if cub and cub["verified"] else None
        sg = sc["gbps"] if sc and sc["verified"] else None
        ok = valid.get(case)
        lo = int((d or cub or sc)["params"]["min"])
        count = (d or cub or sc)["params"]["count"]
        ratio = dg / cg if dg and cg else None
        pct = 100 * dg / copy if dg and copy else None
        used = sg if ok else None
        cap = cell_ceiling(copy, used)
        old = target_met(ratio, pct, cg, copy, lo)
        new = target_met(ratio, pct, cg, copy, lo, used)
        total += 1
        old_n += bool(old)
        new_n += bool(new)
        ok_n += bool(ok)
        lines.append(
            f"{case:<18} {count:>10,} {_f(cg, '5.0f')} {_f(dg, '5.0f')} {_f(ratio, '5.2f')} "
            f"{_f(sg, '6.0f')} {_f(sg / dg if sg and dg else None, '6.2f')} "
            f"{_f(sg / cg if sg and cg else None, '5.2f')} "
            f"{(sc or {}).get('params', {}).get('shape', '-'):>6} "
            f"{'-' if ok is None else ('ok' if ok else 'INVALID'):>7} {_f(cap, '5.0f')} "
            f"{_f(TARGET_RATIO * cg / cap if cg and cap else None, '8.2f')} "
            f"{_f(100 * dg / cap if dg and cap else None, '6.1f')} {_yn(old):>4} {_yn(new):>4}")
    lines.append(f"target met: old rule (copy ceiling) {old_n} / {total}, new rule (min of copy "
                 f"and a valid scatter ceiling) {new_n} / {total} (the last {GUARDS} cells are "
                 f"guards); scatter ceiling valid in {ok_n} / {total}; INVALID = {INVALID}")
    lines.append("scatter shapes, median / fastest median per cell:")
    for case, recs in by_case.items():
        ms = (recs.get(CEILING) or {}).get("params", {}).get("shape_ms") or {}
        if ms:
            best = min(ms.values())
            lines.append(f"  {case:<18} " + " ".join(f"{s} {v / best:.2f}"
                                                      for s, v in ms.items()))
    return lines


def main() -> None:
    args = cells_args(__doc__)
    t0 = time.perf_counter()
    found, notes = targets([DEFAULT], True)
    tgts = [t for t in found if getattr(t, "name", "") in (DEFAULT, CUB)] + [cuda_ceiling()]
    grid = [Case(lo, hi, s, d, a, 1) for lo, hi, a, (s, d) in CELLS]
    print(f"{len(grid)} cells, the last {GUARDS} guards; targets "
          f"{[t.name for t in tgts]}", flush=True)
    records, ceilings = measure_cells(grid, tgts, notes, args.runs)
    valid = judge_scatter(records)
    print("\n".join(summary(records_by_case(records), valid, ceilings.get("copy_gbps"))),
          flush=True)
    finish_script("explore_memcpy_ceiling", records, ceilings, notes, args.out, t0)


if __name__ == "__main__":
    main()

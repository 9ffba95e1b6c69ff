"""Is the scatter ceiling the fastest way to touch a scattered batch's sectors, and does what
ran before a measurement change it (issue 13)? GPU machine; not part of the package's API.

Call 1 (session 17, commit 75e25ac: that version timed 36 ways to touch, each a shape of one
ceiling record: the six shapes of then with a resident grid and a block per chunk, part of
the resident grid, 128 threads, four buffers a thread, and load policies 0, 8, 32 and 64):
the warp kernel with a block per chunk touched 3-11% faster than the six at policies 0 and 8
in every cell with a shuffled destination. Call 2 (`explore_memcpy_cells.py`, the same ways
in the package's ceiling, no L2 hints in that run) found them 5-10% slower than in call 1,
at the rate of the same kernel under policy 2. In call 1 those two ways were timed right
after ways with L2 hints (policy 32: stores evict-last, 64: both hints where scattered).

This version tests that: per cell, after the default, CUB and the default again, the
package's ceiling (``ceiling.TOUCHES``, no hints), then one ceiling record whose ways run in
this order: the warp kernel with a block per chunk at policies 2 and 8 (``before``), at 32
and 64 (the hints), at 2 and 8 again (``after hints``); then the default once more
(``default after hints``); then ``grid.fresh_l2`` (``cuCtxResetPersistingL2Cache``: lines
kept evict-last back to normal) and the default (``default after reset``) and a ceiling
record of the two ways once more (``after reset``). If the hints leave state that speeds up
later kernels on the same buffers, ``after hints`` beats ``before`` and ``after reset`` does
not. The script turns off the grid's own reset before each target (``reset_l2=False``).

Outcome of call 3 (d8f3a55): they do. Right after the hint kernels the default copy ran 4.2%
faster by geometric mean over the 17 cells (up to 10%: C_S 1-8 B 465 -> 512 GB/s), the touches
4.5%; after the reset both exactly as before (0.9997). Since then the planned grid resets the
persisting lines before every target.

Cells: every cell with a shuffled destination at 1-8, 16 and 1-64 B, alignment 1 and 4 (16 B
also 16), and for contrast S_C and C_C 1-8 B at alignment 4 and C_C 16 B at alignment 16;
each at the planned grid's data total. GB/s counts all bytes (2 x data + 24 per buffer).
Prints per cell the copies' and the ceilings' GB/s and each ordered way's. The records timed
after the hint kernels get ``params.mode`` ``"l2-state"``: the report reads them neither as
copies nor as ceilings.

Usage: PYTHONPATH=src python3 benchmarks/explore_memcpy_touch.py --out $OUT/memcpy-touch.json
"""
from __future__ import annotations

import math
import time
from types import SimpleNamespace
from typing import Any

import cupy
from explore_memcpy_small import cells_args, finish_script, measure_cells, records_by_case

from warplab.lab.campaigns.memcpy.bench import Case, targets
from warplab.lab.campaigns.memcpy.ceiling import CEILING, ScatterCeiling, Touch
from warplab.lab.campaigns.memcpy.ceiling_cuda import cuda_ceiling, touch_launch
from warplab.families.memcpy.cuda import run_warp_classes
from warplab.lab.campaigns.memcpy.grid import fresh_l2
from warplab.families.memcpy.spec import WARP_TIERS_WORDS

CUB = "cub::DeviceMemcpy::Batched"
DEFAULT = "warp_tiers_words"
AGAIN, AFTER_HINTS, AFTER_RESET = "default again", "default after hints", "default after reset"
ORDERED, RESET = f"{CEILING}[ordered]", f"{CEILING}[after reset]"
#: ``params.mode`` of the records timed after the hint kernels (reports read neither a copy
#: nor a ceiling in them)
L2_STATE = "l2-state"
C, S = "consecutive", "shuffle"
CELLS = ([(lo, hi, a, (s, S)) for lo, hi, aligns in ((1, 8, (1, 4)), (16, 16, (1, 4, 16)),
                                                      (1, 64, (1, 4)))
          for a in aligns for s in (C, S)]
         + [(1, 8, 4, (S, C)), (1, 8, 4, (C, C)), (16, 16, 16, (C, C))])
WARP_G = Touch(256, warp=True, grid=0)
#: The ordered ways: (name, load policy), timed in this order.
ORDER = (("before", 2), ("before,l8", 8), ("hints,l32", 32), ("hints,l64", 64),
         ("after hints", 2), ("after hints,l8", 8))


def reset_per_batch(fn: Any, log: list[str]) -> Any:
    """``fn`` that resets the persisting L2 lines before its first call on each batch
    (whether it could goes to ``log``); the last batch is held, so a new one is never
    mistaken for it."""
    last: list[Any] = [None]

    def call(b: Any) -> None:
        if b is not last[0]:
            last[0] = b
            log.append(str(fresh_l2(cupy)))
        fn(b)
    return call


def geomean(xs: list[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def summary(by_case: dict[str, dict[str, dict]]) -> list[str]:
    """Per cell: CUB, the default before, again, after the hints and after the reset, the
    package's ceiling, then each ordered way's GB/s and the two ways after the reset."""
    heads = ["CUB", "default", "again", "aft.hint", "aft.rst", "ceiling",
             *(n for n, _ in ORDER), "rst w", "rst w,l8"]
    lines = [f"{'cell':<16} " + " ".join(f"{h[:8]:>8}" for h in heads)]
    gains: dict[str, list[float]] = {}
    for case, recs in by_case.items():
        row = [recs.get(n, {}).get("gbps") or 0.0
               for n in (CUB, DEFAULT, AGAIN, AFTER_HINTS, AFTER_RESET, CEILING)]
        for name in (ORDERED, RESET):
            r = recs.get(name)
            ms = r["params"].get("shape_ms", {}) if r else {}
            row += [r["bytes_moved"] / v / 1e6 if r and v else 0.0 for v in ms.values()]
        lines.append(f"{case:<16} " + " ".join(f"{g:8.0f}" for g in row))
        named = dict(zip(heads, row))
        for h, base in (("aft.hint", "default"), ("aft.rst", "default"),
                        ("after hints", "before"), ("after hints,l8", "before,l8"),
                        ("rst w", "before"), ("rst w,l8", "before,l8")):
            if named.get(h) and named.get(base):
                gains.setdefault(f"{h} / {base}", []).append(named[h] / named[base])
    lines.append("geometric mean over the cells (min, max)")
    for k, xs in gains.items():
        lines.append(f"  {k:<26} {geomean(xs):6.4f} ({min(xs):6.4f}, {max(xs):6.4f})")
    return lines


def main() -> None:
    args = cells_args(__doc__)
    t0 = time.perf_counter()
    variants, notes = targets([DEFAULT], True)
    resets: list[str] = []

    def default(b: Any) -> None:
        run_warp_classes(b, WARP_TIERS_WORDS)

    tgts = [t for t in variants if getattr(t, "name", "") in (DEFAULT, CUB)]
    tgts += [SimpleNamespace(name=AGAIN, fn=default), cuda_ceiling(),
             ScatterCeiling(ORDERED, {n: touch_launch(WARP_G._replace(loads=k))
                                      for n, k in ORDER}),
             SimpleNamespace(name=AFTER_HINTS, fn=default),
             SimpleNamespace(name=AFTER_RESET, fn=reset_per_batch(default, resets)),
             ScatterCeiling(RESET, {"w256g": touch_launch(WARP_G),
                                    "w256g,l8": touch_launch(WARP_G._replace(loads=8))})]
    grid = [Case(lo, hi, s, d, a, 1) for lo, hi, a, (s, d) in CELLS]
    print(f"{len(grid)} cells", flush=True)
    # no reset between targets: the L2 state one target leaves is what this script measures
    records, ceilings = measure_cells(grid, tgts, notes, args.runs, reset_l2=False)
    print("\n".join(summary(records_by_case(records))), flush=True)
    for r in records:  # timed after the hint kernels: no report may take them for a measurement
        if r["variant"] in (AFTER_HINTS, ORDERED):
            r["params"]["mode"] = L2_STATE
    print(f"resets: {len(resets)}, done: {sorted(set(resets))}", flush=True)
    notes.append(f"fresh_l2 before each cell's '{AFTER_RESET}': {sorted(set(resets))}")
    finish_script("explore_memcpy_touch", records, ceilings, notes, args.out, t0)


if __name__ == "__main__":
    main()

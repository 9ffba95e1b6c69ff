"""Issue 13's speed target for the batched copy, per grid case, and the cell's scatter ceiling
it is judged against (records of ``families/memcpy/ceiling.py``).

The rule: the default at >= 1.2x CUB; or, where 1.2x CUB is above the cell's ceiling, the
default at >= 95% of that ceiling; cases whose buffers are all >= 1 KiB also at >= 85% of the
copy ceiling. The cell's ceiling is the lower of the measured copy ceiling and, where the run
measured it, the cell's scatter ceiling (``scatter_touch``: the sectors a copy of that batch
must touch, touched; ``params.mode`` ``"ceiling"``, provider ``"ceiling"``). Ceiling records
are no copy: :func:`is_ceiling` keeps them out of every variant, figure and "best" choice.
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, Sequence

from .groups import latest
from .load import Results, Row

TARGET_RATIO, TARGET_CAP_PCT, TARGET_LARGE_PCT, LARGE = 1.2, 95.0, 85.0, 1024
CEILING_MODE = "ceiling"


def is_ceiling(r: Row) -> bool:
    """A scatter-ceiling record (``params.mode`` ``"ceiling"``), not a copy."""
    return r.params.get("mode") == CEILING_MODE


def cell_ceiling(roof: float | None, scatter: float | None) -> float | None:
    """The cell's ceiling (GB/s): the lower of the copy ceiling and the scatter ceiling,
    whichever are known."""
    known = [v for v in (roof, scatter) if v]
    return min(known) if known else None


def target_met(ratio: float | None, pct: float | None, cub: float | None, roof: float | None,
               lo: int, scatter: float | None = None) -> bool | None:
    """Issue 13's target for one case (see the module docstring). ``ratio``: default / CUB;
    ``pct``: the default's % of the copy ceiling ``roof``; ``cub``, ``roof``, ``scatter``:
    GB/s (``scatter`` None where not measured: the copy ceiling alone); ``lo``: the smallest
    buffer. None when CUB or the copy ceiling is missing."""
    if ratio is None or pct is None or not cub or not roof:
        return None
    cap = cell_ceiling(roof, scatter) or roof
    of_cap = pct * roof / cap
    fast = ratio >= TARGET_RATIO or (TARGET_RATIO * cub > cap and of_cap >= TARGET_CAP_PCT)
    return fast and (lo < LARGE or pct >= TARGET_LARGE_PCT)


def scatter_ceilings(results: Results, key: Callable[[Row], Hashable]
                     ) -> dict[tuple[str, Hashable], Row]:
    """The newest verified scatter-ceiling record per (device, ``key(row)``)."""
    rows = [r for r in results.rows if r.family == "memcpy" and r.ok and r.gbps
            and is_ceiling(r)]
    return latest(rows, lambda r: (r.device, key(r)))


def cell_ceiling_line(ax: Any, xs: Sequence[float], ys: Sequence[float | None]) -> None:
    """The cells' ceilings of one figure panel (None where not measured), dashed grey."""
    if any(y is not None for y in ys):
        ax.plot(xs, [float("nan") if y is None else y for y in ys], color="0.45",
                linestyle="--", linewidth=1.2, marker="_", markersize=10,
                label="cell ceiling (lower of copy and scatter)")


def pct_of(gbps: float | None, ceiling: Row | None) -> float | None:
    """``gbps`` as % of a ceiling record's GB/s (None when either is missing)."""
    return 100.0 * gbps / ceiling.gbps if gbps and ceiling is not None and ceiling.gbps else None


NOTE = ("Target (issue 13): default >= 1.2x CUB, or >= 95% of the cell's ceiling where 1.2x "
        "CUB would be above it; the cell's ceiling is the lower of the copy ceiling and the "
        "scatter ceiling (scatter_touch: per buffer its descriptor and the first and last "
        "byte read and written, the fastest of its launch shapes; for buffers <= 33 B every "
        "sector a copy must touch, for larger ones a subset, so it only lowers the ceiling "
        "of tiny buffers); cases whose buffers are all >= 1 KiB also >= 85% of copy.")

__all__ = ["CEILING_MODE", "LARGE", "NOTE", "TARGET_CAP_PCT", "TARGET_LARGE_PCT",
           "TARGET_RATIO", "cell_ceiling", "cell_ceiling_line", "is_ceiling", "pct_of",
           "scatter_ceilings", "target_met"]

"""The batched copy's speed target, per grid case, and the cell's scatter ceiling it is
judged against (records of ``lab/campaigns/memcpy/ceiling.py``).

The rule: the default at >= 1.2x CUB; or, where 1.2x CUB is above the cell's ceiling, the
default at >= 95% of that ceiling; cases whose buffers are all >= 1 KiB also at >= 90% of the
copy ceiling. The cell's ceiling is the lower of the measured copy ceiling and, where the run
measured it and it is valid, the cell's scatter ceiling (``scatter_touch``: the sectors a copy
of that batch must touch, touched; ``params.mode`` ``"ceiling"``, provider ``"ceiling"``).
Valid (:func:`valid_scatter`): at least as fast as every verified copy measured in the same
cell of the same run, variants and comparators; a ceiling that a correct copy beats bounds
nothing (a touch kernel issuing two byte requests per shared end sector runs below CUB and
the default in nine tiny-buffer cells on the H100, benchmarks/NOTES.md), so such a cell is
marked :data:`INVALID` and judged against the copy ceiling alone. Only the same run counts:
another run drew other batches, and an explore run may have timed copies in a state no grid
measures (e.g. right after kernels whose evict-last stores left persisting L2 lines,
benchmarks/NOTES.md). Ceiling records are no copy: :func:`is_ceiling` keeps them out of
every variant, figure and "best" choice.
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, Iterable, NamedTuple, Sequence

from warplab.lab.report.load import Results, Row

TARGET_RATIO, TARGET_CAP_PCT, TARGET_LARGE_PCT, LARGE = 1.2, 95.0, 90.0, 1024
CEILING_MODE = "ceiling"
INVALID = "invalid: a copy was faster"


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
    """The speed target for one case (see the module docstring). ``ratio``: default / CUB;
    ``pct``: the default's % of the copy ceiling ``roof``; ``cub``, ``roof``, ``scatter``:
    GB/s (``scatter`` None where not measured: the copy ceiling alone); ``lo``: the smallest
    buffer. None when CUB or the copy ceiling is missing."""
    if ratio is None or pct is None or not cub or not roof:
        return None
    cap = cell_ceiling(roof, scatter) or roof
    of_cap = pct * roof / cap
    fast = ratio >= TARGET_RATIO or (TARGET_RATIO * cub > cap and of_cap >= TARGET_CAP_PCT)
    return fast and (lo < LARGE or pct >= TARGET_LARGE_PCT)


def valid_scatter(scatter: float | None, copies: Iterable[float | None]) -> bool | None:
    """Whether a scatter ceiling (GB/s) may serve as its cell's ceiling: at least as fast as
    every verified copy measured in that cell (``copies``: their GB/s, None for a missing or
    wrong one). None when the scatter ceiling was not measured."""
    if not scatter:
        return None
    return all(scatter >= c for c in copies if c)


class Scatter(NamedTuple):
    """A cell's scatter ceiling: its record, whether it is valid (:func:`valid_scatter`) and
    the fastest verified copy of the cell (GB/s; None when none)."""

    row: Row
    valid: bool
    best_copy: float | None

    @property
    def gbps(self) -> float | None:
        """The ceiling's GB/s where valid, else None (the copy ceiling decides)."""
        return self.row.gbps if self.valid else None

    @property
    def verdict(self) -> str:
        return "valid" if self.valid else INVALID


def scatter_ceilings(results: Results, key: Callable[[Row], Hashable]
                     ) -> dict[tuple[str, Hashable], Scatter]:
    """Per (device, ``key(row)``) the scatter ceiling of the newest run that measured one (the
    fastest of its verified ceiling records there), judged against every verified kernel
    record of a copy in the same cell of that run."""
    rows = [r for r in results.rows if r.family == "memcpy" and r.ok and r.gbps]
    runs: dict[tuple[str, Hashable], dict[str, list[Row]]] = {}  # sources in run order
    copies: dict[tuple[str, Hashable, str], list[float | None]] = {}
    for r in rows:
        if is_ceiling(r):
            runs.setdefault((r.device, key(r)), {}).setdefault(r.source, []).append(r)
        elif r.params.get("mode", "kernel") == "kernel":
            copies.setdefault((r.device, key(r), r.source), []).append(r.gbps)
    out = {}
    for at, by_source in runs.items():
        source, ceils = list(by_source.items())[-1]
        best = max(ceils, key=lambda r: r.gbps or 0.0)
        got = copies.get((*at, source), [])
        out[at] = Scatter(best, bool(valid_scatter(best.gbps, got)),
                          max((g for g in got if g), default=None))
    return out


def cell_ceiling_line(ax: Any, xs: Sequence[float], ys: Sequence[float | None]) -> None:
    """The cells' ceilings of one figure panel (None where not measured), dashed grey."""
    if any(y is not None for y in ys):
        ax.plot(xs, [float("nan") if y is None else y for y in ys], color="0.45",
                linestyle="--", linewidth=1.2, marker="_", markersize=10,
                label="cell ceiling (lower of copy and scatter)")


def pct_of(gbps: float | None, ceiling: Scatter | None) -> float | None:
    """``gbps`` as % of a valid scatter ceiling's GB/s (None when either is missing or the
    ceiling is invalid)."""
    return 100.0 * gbps / ceiling.gbps if gbps and ceiling is not None and ceiling.gbps else None


NOTE = ("Speed target: default >= 1.2x CUB, or >= 95% of the cell's ceiling where 1.2x "
        "CUB would be above it; the cell's ceiling is the lower of the copy ceiling and the "
        "scatter ceiling where that is valid (scatter_touch: per buffer its descriptor and "
        "each 32-byte sector holding an end touched once a side, the fastest of its launch "
        "shapes; for buffers <= 33 B every sector a copy must touch, for larger ones a "
        "subset; valid only when no verified copy of the cell ran faster, else '" + INVALID
        + "' and the copy ceiling alone); cases whose buffers are all >= 1 KiB also >= "
        f"{TARGET_LARGE_PCT:.0f}% of copy.")

__all__ = ["CEILING_MODE", "INVALID", "LARGE", "NOTE", "Scatter", "TARGET_CAP_PCT",
           "TARGET_LARGE_PCT", "TARGET_RATIO", "cell_ceiling", "cell_ceiling_line",
           "is_ceiling", "pct_of", "scatter_ceilings", "target_met", "valid_scatter"]

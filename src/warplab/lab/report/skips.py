"""Why a figure is not drawn: empty, one point, one bar, or nothing but noise.

Every check takes the rows one figure would show and returns a sentence for the page, or None
when the figure is worth drawing. The report lists the sentences under each family instead of
drawing empty axes, a lone bar or a line that only wiggles inside its own measurement spread.

Noise: a ratio of two kernel medians (``letters / ascii128`` time, speedup vs the baseline) is
*pure noise* when, at every size, the run-to-run ranges (Q10 to Q90 of the kernel samples) of
its numerator and denominator overlap: no point of the figure shows a difference that the
measurement could tell from noise, so the page says so instead of drawing it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from warplab.lab.report.groups import fmt_size, largest_size, latest
from warplab.lab.report.load import Row

Config = tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class SkippedFigure:
    """A figure the report chose not to draw, and why.

    Attributes:
        family: Family it belongs to.
        kind: Figure kind (``time``, ``bandwidth``, ``throughput``, ``speedup``, ``step``,
            ``ratio``, ``phases``, ``shape``).
        config: Config it would have shown.
        title: The title it would have had.
        reason: One sentence for the page.
    """

    family: str
    kind: str
    config: Config
    title: str
    reason: str


def overlap(a: Row, b: Row) -> bool:
    """Whether the Q10–Q90 ranges of two rows' kernel samples overlap (no measurable
    difference); rows without quantiles overlap only when their medians are equal."""
    a_lo, a_hi = a.stat("kernel", "q10") or a.median, a.stat("kernel", "q90") or a.median
    b_lo, b_hi = b.stat("kernel", "q10") or b.median, b.stat("kernel", "q90") or b.median
    if None in (a_lo, a_hi, b_lo, b_hi):
        return False
    return a_lo <= b_hi and b_lo <= a_hi  # type: ignore[operator]


def line_reason(rows: Sequence[Row], value: Callable[[Row], float | None], what: str) -> str | None:
    """For a line figure over sizes: no plottable value, or one size per line only."""
    pts: dict[str, set[int]] = {}
    newest = latest((r for r in rows if r.ok and r.size), lambda r: (r.series, r.size))
    for r in newest.values():  # what the figure draws: the newest record per series and size
        v = value(r)
        if v is not None and v > 0:
            pts.setdefault(r.series, set()).add(int(r.size or 0))
    if not pts:
        return f"no verified record with {what}"
    sizes = set().union(*pts.values())
    if all(len(s) < 2 for s in pts.values()):
        at = fmt_size(max(sizes)) if len(sizes) == 1 else "one size per variant"
        return f"a single size ({at}): a line needs two; the tables give the numbers"
    return None


def phases_reason(rows: Sequence[Row]) -> str | None:
    """Phases at the largest size: one bar, or only the kernel phase (the time figure's data)."""
    ok = [r for r in rows if r.ok and r.size is not None]
    size = largest_size(ok)
    if size is None:
        return "no verified record with a size"
    at = latest((r for r in ok if r.size == size), lambda r: r.series)
    if not any(r.stat(p) is not None for r in at.values() for p in ("h2d", "d2h")):
        return "only the kernel phase was timed: the kernel-time figure shows it"
    if len(at) < 2:
        return "one bar (a single variant)"
    return None


def ratio_noise_reason(pairs: Sequence[tuple[Row, Row]], what: str) -> str | None:
    """``pairs`` are ``(numerator, denominator)`` rows of every point a ratio figure would draw;
    a reason when there is none, or when at every point their Q10–Q90 ranges overlap."""
    pairs = [(a, b) for a, b in pairs if a.ok and b.ok and a.median and b.median]
    if not pairs:
        return f"no size where {what} could be formed"
    if all(overlap(a, b) for a, b in pairs):
        return (f"pure noise: at every size the two times behind the {what} overlap within "
                "their run-to-run range (Q10–Q90), so the figure could not show a difference")
    return None


def speedup_reason(rows: Sequence[Row], baseline: str) -> str | None:
    """Speedup vs the baseline: no baseline, nothing else, or every speedup within noise."""
    base = {(r.device, r.size): r for r in rows if r.ok and r.variant == baseline and r.median}
    if not base:
        return f"no verified {baseline} record to compare with"
    pairs = [(base[(r.device, r.size)], r) for r in rows
             if r.ok and r.variant != baseline and (r.device, r.size) in base]
    if not pairs:
        return f"only {baseline} was measured"
    return ratio_noise_reason(pairs, f"speedup vs {baseline}")


def step_reason(n_bars: int) -> str | None:
    """A step chart of fewer than two bars says nothing."""
    return "one bar (the baseline alone)" if n_bars < 2 else None

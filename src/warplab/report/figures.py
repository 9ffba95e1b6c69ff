"""Matplotlib figures for the report, one function per figure kind.

Figures are drawn on :class:`matplotlib.figure.Figure` objects and saved with
the Agg renderer; pyplot (and its global backend state) is never used, so
importing this module does not change the backend of an interactive session.
Every plotting function only draws rows that are ``ok`` (verified, no error)
and returns the written PNG path, or None when there is nothing to draw.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from .groups import BASELINE, fmt_size, largest_size, latest, step_speedups
from .load import Row

Styles = Mapping[str, Mapping[str, Any]]
PHASE_COLORS = {"h2d": "#9ecae1", "kernel": "#3182bd", "d2h": "#fdae6b"}


def _text(s: str) -> str:
    """Make a data string safe for matplotlib text (no mathtext, no hidden label)."""
    s = s.replace("$", r"\$")
    return " " + s if s.startswith("_") else s


def _new_axes(figsize: tuple[float, float] = (8.5, 4.6)) -> tuple[Figure, Any]:
    fig = Figure(figsize=figsize, dpi=100, layout="constrained")
    return fig, fig.add_subplot()


def _finish(fig: Figure, ax: Any, path: Path, title: str, xlabel: str, ylabel: str,
            legend: bool = True) -> Path:
    ax.set_title(_text(title), fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="major", alpha=0.3)
    if legend and ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return path


def _points(rows: Sequence[Row], series: str,
            value: Callable[[Row], float | None]) -> list[tuple[int, float, Row]]:
    """Sorted ``(size, value, row)`` for one series, positive values only."""
    pts: dict[int, Row] = {r.size: r for r in rows
                           if r.ok and r.series == series and r.size and r.size > 0}
    out = []
    for size, r in sorted(pts.items()):
        v = value(r)
        if v is not None and v > 0:
            out.append((size, v, r))
    return out


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _pow2_label(x: float, _pos: Any = None) -> str:
    k = round(math.log2(x)) if x > 0 else 0
    return "2" + str(k).translate(_SUPERSCRIPT)


def _minor_label(ax: Any, v: float) -> str:
    """Label minor log ticks 2, 3 and 5 only when the y axis spans < 1.5 decades."""
    lo, hi = ax.get_ylim()
    if v <= 0 or lo <= 0 or hi / lo > 30:
        return ""
    mant = round(v / 10 ** math.floor(math.log10(v) + 1e-9))
    return f"{v:g}" if mant in (2, 3, 5) else ""


def _log_axes(ax: Any, sizes: Sequence[float], logy: bool = True) -> None:
    """Log2 x axis with plain-text ``2ᵏ`` ticks; optional log10 y axis, plain labels.

    Plain-text tick labels (instead of mathtext) keep rendering fast.
    """
    ax.set_xscale("log", base=2)
    lo, hi = (math.floor(math.log2(min(sizes))), math.ceil(math.log2(max(sizes)))) \
        if sizes else (0, 1)
    step = max(1, math.ceil((hi - lo + 1) / 10))
    ax.xaxis.set_major_locator(FixedLocator([2.0**k for k in range(lo, hi + 1, step)]))
    ax.xaxis.set_major_formatter(FuncFormatter(_pow2_label))
    ax.xaxis.set_minor_locator(NullLocator())
    if logy:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _p: _minor_label(ax, v)))


Points = dict[str, list[tuple[int, float, Row]]]


def _collect(rows: Sequence[Row], order: Sequence[str],
             value: Callable[[Row], float | None]) -> Points:
    """Per series (in order) its plottable points; series without points are left out."""
    out = {s: _points(rows, s, value) for s in order}
    return {s: p for s, p in out.items() if p}


def _draw_lines(ax: Any, pts: Points, styles: Styles) -> list[int]:
    """Draw one line per series; return every x drawn."""
    xs: list[int] = []
    for s, p in pts.items():
        x = [q[0] for q in p]
        ax.plot(x, [q[1] for q in p], label=_text(s), markersize=3, linewidth=1.3,
                **dict(styles.get(s, {})))
        xs += x
    return xs


def plot_time_vs_size(rows: Sequence[Row], path: Path, *, title: str, styles: Styles,
                      order: Sequence[str], xlabel: str = "size (bytes)") -> Path | None:
    """Kernel median time vs size, one line per series, shaded Q10–Q90 band.

    Args:
        rows: Rows of one config (failed rows are ignored).
        path: PNG to write.
        title: Figure title.
        styles: Series -> matplotlib line style.
        order: Series in legend order.
        xlabel: X-axis label.

    Returns:
        ``path``, or None when no ok row has a positive size and median.
    """
    pts = _collect(rows, order, lambda r: r.median)
    if not pts:
        return None
    fig, ax = _new_axes()
    xs = _draw_lines(ax, pts, styles)
    for s, p in pts.items():
        lo = [min(q[2].stat("kernel", "q10") or q[1], q[1]) for q in p]
        hi = [max(q[2].stat("kernel", "q90") or q[1], q[1]) for q in p]
        ax.fill_between([q[0] for q in p], lo, hi, color=styles.get(s, {}).get("color"),
                        alpha=0.15, linewidth=0)
    _log_axes(ax, xs)
    return _finish(fig, ax, path, title, xlabel, "kernel time, median (ms)")


def plot_speedup_vs_baseline(rows: Sequence[Row], path: Path, *, baseline: str, title: str,
                             styles: Styles, order: Sequence[str],
                             xlabel: str = "size (bytes)") -> Path | None:
    """Speedup ``median(baseline) / median(series)`` vs size.

    The baseline is matched per device and size. Returns None when there is no
    ok baseline row or no other series to compare with it.
    """
    base = {(r.device, r.backend, r.size): r.median for r in rows
            if r.ok and r.variant == baseline}
    pts = _collect(rows, order, lambda r: None if not r.median else
                   (base.get((r.device, r.backend, r.size)) or 0.0) / r.median)
    if not any(q[2].variant != baseline for p in pts.values() for q in p):
        return None
    fig, ax = _new_axes()
    xs = _draw_lines(ax, pts, styles)
    ax.axhline(1.0, color="0.4", linestyle=":", linewidth=1)
    _log_axes(ax, xs)
    return _finish(fig, ax, path, title, xlabel, f"speedup vs {baseline} (×)")


def plot_ratio_vs_size(num_rows: Sequence[Row], den_rows: Sequence[Row], path: Path, *,
                       title: str, ylabel: str, styles: Styles, order: Sequence[str],
                       xlabel: str = "size (bytes)") -> Path | None:
    """Ratio of kernel medians ``num / den`` at equal series and size.

    Returns None when no (series, size) is ok on both sides.
    """
    den = {(r.series, r.size): r.median for r in den_rows if r.ok and r.median}
    pts = _collect(num_rows, order, lambda r: None if not den.get((r.series, r.size))
                   or r.median is None else r.median / den[(r.series, r.size)])
    if not pts:
        return None
    fig, ax = _new_axes()
    xs = _draw_lines(ax, pts, styles)
    ax.axhline(1.0, color="0.4", linestyle=":", linewidth=1)
    _log_axes(ax, xs, logy=False)
    return _finish(fig, ax, path, title, xlabel, ylabel)


def plot_bandwidth_vs_size(rows: Sequence[Row], path: Path, *, title: str, styles: Styles,
                           order: Sequence[str], ceilings: Mapping[str, float],
                           xlabel: str = "size (bytes)") -> Path | None:
    """Achieved GB/s vs size, with the measured copy bandwidth as a dashed roof.

    Args:
        rows: Rows of one config (failed rows are ignored).
        path: PNG to write.
        title: Figure title.
        styles: Series -> matplotlib line style.
        order: Series in legend order.
        ceilings: Device name -> copy GB/s; only devices present in ``rows`` are drawn.
        xlabel: X-axis label.

    Returns:
        ``path``, or None when no ok row has a positive ``gbps``.
    """
    pts = _collect(rows, order, lambda r: r.gbps)
    if not pts:
        return None
    fig, ax = _new_axes()
    xs = _draw_lines(ax, pts, styles)
    devices = sorted({q[2].device for p in pts.values() for q in p})
    roofs = [(d, ceilings[d]) for d in devices if ceilings.get(d)]
    for d, c in roofs:
        label = "measured copy bandwidth" + (f" ({_text(d)})" if len(roofs) > 1 else "")
        ax.axhline(c, color="k", linestyle="--", linewidth=1.2, label=label)
    _log_axes(ax, xs)
    return _finish(fig, ax, path, title, xlabel, "bandwidth (GB/s)")


def plot_phases_at_largest(rows: Sequence[Row], path: Path, *, title: str,
                           order: Sequence[str]) -> Path | None:
    """Stacked h2d / kernel / d2h medians per series at the largest size.

    Phases that are null for every series are left out. Returns None when
    there are no ok rows with a size.
    """
    ok = [r for r in rows if r.ok and r.size is not None]
    size = largest_size(ok)
    if size is None:
        return None
    at = latest((r for r in ok if r.size == size), lambda r: r.series)
    names = [s for s in order if s in at]
    phases = [p for p in PHASE_COLORS if any(at[s].stat(p) is not None for s in names)]
    if not names or not phases:
        return None
    fig, ax = _new_axes((max(5.0, 0.8 * len(names) + 2.5), 4.6))
    bottom = [0.0] * len(names)
    for p in phases:
        vals = [at[s].stat(p) or 0.0 for s in names]
        ax.bar(range(len(names)), vals, bottom=bottom, label=p, color=PHASE_COLORS[p])
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xticks(range(len(names)), [_text(s) for s in names], rotation=30, ha="right",
                  fontsize=8)
    return _finish(fig, ax, path, f"{title} (size {size:,})", "", "median time (ms)")


STEP_COLOR = "#3182bd"
OFF_CHAIN_COLOR = "#fdae6b"


def _times(x: float) -> str:
    return f"{x:.2f}×" if abs(x) < 10 else f"{x:.1f}×"


def plot_step_speedup(rows: Sequence[Row], path: Path, *, family: str, title: str,
                      baseline: str | None = None) -> Path | None:
    """Step speedups of a family's kernel chain at the largest size, as bars.

    One solid bar per canonical warplab variant, in canonical (lecture) order,
    with height ``median(previous variant) / median(variant)`` (the baseline's
    bar is 1); the cumulative speedup ``median(baseline) / median(variant)`` is
    printed above each bar. Comparators (and warplab variants off the chain)
    follow at the right as hatched bars whose height is their cumulative speedup.
    Log y axis, dotted line at 1×.

    Args:
        rows: Rows of one config on one device (failed rows are ignored).
        path: PNG to write.
        family: Family (selects canonical order and default baseline).
        title: Figure title (the size is appended).
        baseline: Reference variant (default: the family's baseline).

    Returns:
        ``path``, or None when the baseline has no ok row.
    """
    baseline = baseline or BASELINE.get(family)
    size, steps = step_speedups(family, rows, baseline)
    if size is None or not steps:
        return None
    chain = [s for s in steps if s.on_chain]
    off = [s for s in steps if not s.on_chain]
    heights = [s.step if s.step is not None else (s.cumulative or 1.0) for s in chain]
    heights += [s.cumulative or 0.0 for s in off]
    values = [h for h in heights if h > 0] + [s.cumulative for s in steps if s.cumulative]
    lo, hi = min(values + [1.0]), max(values + [1.0])
    n = len(steps)
    fig, ax = _new_axes((max(6.0, 0.72 * n + 2.8), 4.8))
    ax.set_yscale("log")
    ax.set_ylim(lo / 1.6, hi * 3.5)  # head room for the two-line labels
    xs = list(range(n))
    nc = len(chain)
    ax.bar(xs[:nc], heights[:nc], color=STEP_COLOR, edgecolor="k", linewidth=0.6)
    if off:
        ax.bar(xs[nc:], heights[nc:], color="white", edgecolor=OFF_CHAIN_COLOR, hatch="//",
               linewidth=1.0)
        if chain:
            ax.axvline(nc - 0.5, color="0.5", linewidth=0.8)
    for x, s, h in zip(xs, steps, heights):
        cum = f"cum {_times(s.cumulative)}" if s.cumulative is not None else "cum —"
        if not s.on_chain:
            label = cum
        elif s.step is not None:
            label = f"{_times(s.step)}\n{cum}"
        else:
            label = ("baseline" if s.row.variant == baseline else "first") + "\n" + cum
        ax.annotate(label, (x, h if h > 0 else lo / 1.6), xytext=(0, 3),
                    textcoords="offset points", ha="center", va="bottom", fontsize=6.5)
    ax.axhline(1.0, color="0.4", linestyle=":", linewidth=1)
    ax.set_xticks(xs, [_text(s.row.variant) for s in steps], rotation=35, ha="right",
                  fontsize=8)
    ax.set_xlim(-0.6, n - 0.4)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}×"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _p: _minor_label(ax, v)))
    handles = []
    if chain:
        handles.append(Patch(facecolor=STEP_COLOR, edgecolor="k",
                             label="step: previous kernel / this one"))
    if off:
        who = "comparator" if all(s.comparator for s in off) else "comparator / other"
        handles.append(Patch(facecolor="white", edgecolor=OFF_CHAIN_COLOR, hatch="//",
                             label=f"{who}: {baseline} / this one"))
    handles.append(Patch(facecolor="none", edgecolor="none",
                         label=f"cum: {baseline} / this one"))
    ax.legend(handles=handles, fontsize=7, loc="upper left")
    return _finish(fig, ax, path, f"{title} (size {fmt_size(size)})", "", "speedup (×)",
                   legend=False)

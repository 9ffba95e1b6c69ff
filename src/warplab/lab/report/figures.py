"""Matplotlib figures for the report, one function per figure kind.

Figures are drawn on :class:`matplotlib.figure.Figure` objects and saved with
the Agg renderer (:mod:`warplab.lab.report.plotkit`: size, fonts, titles, legends, log2 axes);
pyplot is never used, so importing this module does not change the backend of an interactive
session. Every plotting function only draws rows that are ``ok`` (verified, no error) and
returns the written PNG path, or None when there is nothing to draw.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

from warplab.lab.report.groups import BASELINE, fmt_size, largest_size, latest, step_speedups
from warplab.lab.report.load import Row
from warplab.lab.report.plotkit import (  # noqa: F401  (re-exported: roofline, series and others draw with them)
    FIGSIZE, TICK_PT, _finish, _log_axes, _minor_label, _new_axes, _text, pow2_label,
)
from warplab.lab.report.units import fmt_bandwidth, fmt_flops, fmt_ms, flops_unit, time_unit

Styles = Mapping[str, Mapping[str, Any]]
PHASE_COLORS = {"h2d": "#9ecae1", "kernel": "#3182bd", "d2h": "#fdae6b"}
Points = dict[str, list[tuple[int, float, Row]]]


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


def _collect(rows: Sequence[Row], order: Sequence[str],
             value: Callable[[Row], float | None]) -> Points:
    """Per series (in order) its plottable points; series without points are left out."""
    out = {s: _points(rows, s, value) for s in order}
    return {s: p for s, p in out.items() if p}


def _draw_lines(ax: Any, pts: Points, styles: Styles, scale: float = 1.0) -> list[int]:
    """Draw one line per series (values times ``scale``); return every x drawn."""
    xs: list[int] = []
    for s, p in pts.items():
        x = [q[0] for q in p]
        ax.plot(x, [q[1] * scale for q in p], label=_text(s), markersize=3.5, linewidth=1.4,
                **dict(styles.get(s, {})))
        xs += x
    return xs


def plot_time_vs_size(rows: Sequence[Row], path: Path, *, title: str, styles: Styles,
                      order: Sequence[str], xlabel: str = "size (bytes)") -> Path | None:
    """Kernel median time vs size, one line per series, shaded Q10–Q90 band.

    Log axes; every y tick carries its own unit (``10 µs``, ``1 ms``, ``2 s``), so a curve
    spanning microseconds to seconds reads without exponents.

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
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: fmt_ms(v)))
    ax.yaxis.set_minor_formatter(FuncFormatter(
        lambda v, _p: fmt_ms(v) if _minor_label(ax, v) else ""))
    return _finish(fig, ax, path, title, xlabel, "kernel time, median (log scale)")


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
    return _finish(fig, ax, path, title, xlabel, f"speedup vs {_text(baseline)} (×)")


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


def _roof_lines(ax: Any, devices: Sequence[str], roofs: Sequence[tuple[str, Mapping[str, float],
                str]], fmt: Callable[[float], str], scale: float = 1.0) -> None:
    """Horizontal roofs: ``(label, device -> value, linestyle)``, one line per device with one."""
    for label, values, style in roofs:
        have = [(d, values[d]) for d in devices if values.get(d)]
        for d, v in have:
            name = f"{label} ({fmt(v)})" + (f" — {_text(d)}" if len(have) > 1 else "")
            ax.axhline(v * scale, color="k", linestyle=style, linewidth=1.2, label=name)


def plot_bandwidth_vs_size(rows: Sequence[Row], path: Path, *, title: str, styles: Styles,
                           order: Sequence[str], ceilings: Mapping[str, float],
                           xlabel: str = "size (bytes)",
                           read_ceilings: Mapping[str, float] | None = None) -> Path | None:
    """Achieved GB/s vs size, with the measured bandwidth ceilings as roofs.

    Args:
        rows: Rows of one config (failed rows are ignored).
        path: PNG to write.
        title: Figure title.
        styles: Series -> matplotlib line style.
        order: Series in legend order.
        ceilings: Device name -> copy GB/s (dashed roof "measured copy bandwidth (... GB/s)");
            only devices present in ``rows`` are drawn.
        xlabel: X-axis label.
        read_ceilings: Device name -> read GB/s (solid roof "measured read bandwidth").

    Returns:
        ``path``, or None when no ok row has a positive ``gbps``.
    """
    pts = _collect(rows, order, lambda r: r.gbps)
    if not pts:
        return None
    fig, ax = _new_axes()
    xs = _draw_lines(ax, pts, styles)
    devices = sorted({q[2].device for p in pts.values() for q in p})
    _roof_lines(ax, devices, [("measured read bandwidth", read_ceilings or {}, "-"),
                              ("measured copy bandwidth", ceilings, "--")], fmt_bandwidth)
    _log_axes(ax, xs)
    ax.set_ylim(top=ax.get_ylim()[1] * 1.6)  # room above the roofs
    return _finish(fig, ax, path, title, xlabel, "achieved bandwidth (GB/s)")


def plot_throughput_vs_size(rows: Sequence[Row], path: Path, *, title: str, styles: Styles,
                            order: Sequence[str], roofs: Sequence[tuple[str, float]] = (),
                            xlabel: str = "matrix size N") -> Path | None:
    """Achieved FLOP/s vs size (matmul: vs N), the compute ceilings as roofs.

    The unit (GFLOP/s, TFLOP/s, ...) is chosen from the largest value drawn; the y axis is
    linear unless the values span more than 30x. Plain-integer x labels (N).

    Args:
        rows: Rows of one config (failed rows are ignored).
        path: PNG to write.
        title: Figure title.
        styles: Series -> matplotlib line style.
        order: Series in legend order.
        roofs: ``(label, GFLOP/s)`` horizontal roofs, e.g. ``("measured SGEMM", 51213.0)``.
        xlabel: X-axis label.

    Returns:
        ``path``, or None when no ok row has a positive rate.
    """
    pts = _collect(rows, order, flops_rate)
    if not pts:
        return None
    values = [q[1] for p in pts.values() for q in p]
    div, unit = flops_unit(max(values + [v for _, v in roofs]))
    fig, ax = _new_axes()
    xs = _draw_lines(ax, pts, styles, 1.0 / div)
    for (label, v), style in zip(roofs, ("-", "--", ":", "-.")):
        ax.axhline(v / div, color="k", linestyle=style, linewidth=1.2,
                   label=f"{label} ({fmt_flops(v)})")
    logy = max(values) / min(values) > 30
    _log_axes(ax, xs, logy=logy, plain=True)
    if not logy:
        ax.set_ylim(0, max(values + [v for _, v in roofs]) / div * 1.12)
    return _finish(fig, ax, path, title, xlabel, f"achieved throughput ({unit})")


def flops_rate(r: Row) -> float | None:
    """GFLOP/s of a row: ``gflops``, else ``flops`` over the kernel median; None without."""
    if r.gflops:
        return r.gflops
    if r.flops and r.median:
        return r.flops / (r.median * 1e-3) / 1e9
    return None


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
    mult, unit = time_unit(max(sum(at[s].stat(p) or 0.0 for p in phases) for s in names))
    fig, ax = _new_axes()
    bottom = [0.0] * len(names)
    for p in phases:
        vals = [(at[s].stat(p) or 0.0) * mult for s in names]
        ax.bar(range(len(names)), vals, bottom=bottom, label=p, color=PHASE_COLORS[p])
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xticks(range(len(names)), [_text(s) for s in names], rotation=30, ha="right",
                  fontsize=TICK_PT)
    return _finish(fig, ax, path, f"{title} (size {fmt_size(size)})", "",
                   f"median time ({unit})")


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
    fig, ax = _new_axes((max(FIGSIZE[0], 0.6 * n + 2.0), FIGSIZE[1] + 0.4))
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
                    textcoords="offset points", ha="center", va="bottom", fontsize=7.5)
    ax.axhline(1.0, color="0.4", linestyle=":", linewidth=1)
    ax.set_xticks(xs, [_text(s.row.variant) for s in steps], rotation=35, ha="right",
                  fontsize=TICK_PT)
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
    ax.legend(handles=handles, fontsize=8, loc="upper left")
    return _finish(fig, ax, path, f"{title} (size {fmt_size(size)})", "", "speedup (×)",
                   legend=False)

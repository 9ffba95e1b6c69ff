"""Figures and tables of the stream campaign (``lab/campaigns/stream/bench.py``, docs/streaming.md).

Its records are public calls on host data, end to end: per size (``params.size`` bytes), op
(``params.op``: ``histogram``, ``sum``) and source (``variant``: ``pageable``, ``register``,
``pinned``, ``oneshot``, ``file_cached``, ``file_cold``, ``file_direct``), ``phases.total`` is
the call until its NumPy result is back (host clock), ``phases.h2d`` / ``phases.kernel`` and the
record's ``read`` the per-run sums over chunks of the copies, the kernels and the filling of the
staging buffers; ``e2e_gbps`` = bytes / end-to-end median, ``pct_of_h2d_pinned`` its share of
the measured pinned H2D ceiling, ``overlap`` = (read + H2D + kernel) / end to end (1: one after
the other; up to 3: side by side). The kernel phase is a sum over chunks of a call whose cost is
the bus, so the generic per-size figures and tables (kernel time, the record's kernel-phase
``gbps``) skip the family (``groups.STREAM_FAMILIES``) and this module draws, per device:

- GB/s end to end vs size, one panel per op, one line per source, the measured pinned H2D
  ceiling as the roof;
- per op the end-to-end table: per size and source the end-to-end time and GB/s, %
  of the pinned H2D ceiling, the read, H2D and kernel medians inside it, and their overlap.

``oneshot`` (streaming off: the path before streaming) collects no phases: its read, H2D and
kernel cells are empty.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, NullLocator

from warplab.lab.report.groups import STREAM_FAMILIES, group_by, latest, styles_for
from warplab.lab.report.load import Results, Row, num
from warplab.lab.report.memcpy_grid import fmt_bytes
from warplab.lab.report.plotkit import DPI, LABEL_PT, TICK_PT, _text, finish_panels
from warplab.lab.report.roofline import device_ceilings
from warplab.lab.report.skips import SkippedFigure
from warplab.lab.report.tables import Table
from warplab.lab.report.units import fmt_bandwidth, fmt_pct

SOURCES = ("pinned", "pageable", "file_cached", "register", "oneshot", "file_cold",
           "file_direct")
OPS = ("histogram", "sum")
STREAM_KINDS = ("stream",)
PHASES = ("read", "h2d", "kernel")
# (family, kind, config, title, path, series): gallery turns these into FigureRefs
StreamFigure = tuple[str, str, tuple[tuple[str, Any], ...], str, Path, tuple[str, ...]]


def stream_rows(results: Results) -> list[Row]:
    """Verified stream records with an end-to-end time."""
    return [r for r in results.rows if r.family in STREAM_FAMILIES and r.ok
            and r.stat("total") is not None]


def e2e_gbps(r: Row) -> float | None:
    """GB/s end to end: the record's ``e2e_gbps``, else bytes / end-to-end median."""
    v = num(r.extra.get("e2e_gbps"))
    total, size = r.stat("total"), r.size
    if v is None and total and size:
        v = size / (total * 1e-3) / 1e9
    return v


def phase_ms(r: Row, phase: str) -> float | None:
    """The median (ms) of ``read``, ``h2d`` or ``kernel``; None where the call collected no
    phases (every one zero or missing: ``oneshot``)."""
    def med(p: str) -> float | None:
        st = r.extra.get("read") if p == "read" else r.phases.get(p)
        return num(st.get("median")) if isinstance(st, dict) else None

    if not any(med(p) for p in PHASES):
        return None
    return med(phase)


def h2d_roof(results: Results, device: str) -> float | None:
    """The device's measured pinned H2D ceiling (GB/s)."""
    v = num(device_ceilings(results.sources, device).get("h2d_pinned_gbps"))
    return v if v and v > 0 else None


def source_key(source: str) -> tuple[int, str]:
    """Sources in :data:`SOURCES` order (fastest path first), others after them."""
    return (SOURCES.index(source) if source in SOURCES else len(SOURCES), source)


def _op(r: Row) -> str:
    return str(r.params.get("op") or "?")


def _ops(rows: Sequence[Row]) -> list[str]:
    present = {_op(r) for r in rows}
    return [o for o in OPS if o in present] + sorted(present - set(OPS))


def _suffix(devices: Sequence[str], device: str) -> str:
    return f" — {device}" if len(devices) > 1 else ""


def end_to_end_tables(results: Results) -> list[Table]:
    """Per device and op: a row per (size, source) as ``warplab stream`` prints it."""
    rows = stream_rows(results)
    by_device = group_by(rows, lambda r: r.device)
    tables = []
    for device, drows in sorted(by_device.items()):
        roof = h2d_roof(results, device)
        for op in _ops(drows):
            at = latest((r for r in drows if _op(r) == op), lambda r: (r.size, r.variant))
            t = Table(f"stream: {op} of host data, end to end{_suffix(list(by_device), device)}",
                      ["size", "source", "host", "chunk", "end to end (ms)", "GB/s",
                       "% of pinned H2D", "read (ms)", "H2D (ms)", "kernel (ms)", "overlap"],
                      [], "stream", "stream",
                      {4: ",.2f", 5: ".1f", 6: ".1f", 7: ",.2f", 8: ",.2f", 9: ",.2f", 10: ".2f"},
                      note="Medians. End to end: the public call until its NumPy result is back "
                           "(host clock); read, H2D and kernel: per-run sums over chunks of "
                           "filling the staging buffers, the copies and the kernels; overlap = "
                           "(read + H2D + kernel) / end to end (1: one after the other, up to 3: "
                           "side by side). % of pinned H2D: of the measured ceiling"
                           + (f" ({fmt_bandwidth(roof)})" if roof else " (not measured)")
                           + ". oneshot: streaming off (the path before streaming), no phases.")
            for r in sorted(at.values(), key=lambda r: (r.size or 0, source_key(r.variant))):
                gb = e2e_gbps(r)
                pct = num(r.extra.get("pct_of_h2d_pinned"))
                if pct is None and gb and roof:
                    pct = 100.0 * gb / roof
                chunk = int(num(r.params.get("chunk_bytes")) or 0)
                t.rows.append([fmt_bytes(r.size or 0), r.variant, str(r.params.get("host", "")),
                               fmt_bytes(chunk) if chunk else "—", r.stat("total"), gb, pct,
                               *(phase_ms(r, p) for p in PHASES), num(r.extra.get("overlap"))])
                t.row_keys.append(f"{op} {r.variant}")
            if t.rows:
                tables.append(t)
    return tables


def summary_lines(results: Results) -> list[str]:
    """Per device, at the largest size: the fastest source end to end and a pageable array's
    best (the common case), with their share of the pinned H2D ceiling."""
    by_device = group_by(stream_rows(results), lambda r: r.device)
    out = []
    for device, drows in sorted(by_device.items()):
        size = max(r.size or 0 for r in drows)
        at = [r for r in drows if r.size == size and e2e_gbps(r)]
        if not at:
            continue
        roof = h2d_roof(results, device)

        def say(r: Row) -> str:
            g = e2e_gbps(r) or 0.0
            return (f"{_op(r)} {fmt_bandwidth(g)}"
                    + (f" ({fmt_pct(100.0 * g / roof)} of pinned H2D)" if roof else ""))

        best = max(at, key=lambda r: e2e_gbps(r) or 0.0)
        page = max((r for r in at if r.variant == "pageable"), key=lambda r: e2e_gbps(r) or 0.0,
                   default=None)
        out.append(f"GB/s end to end at {fmt_bytes(size)}{_suffix(list(by_device), device)}: "
                   f"fastest from {best.variant}, {say(best)}"
                   + (f"; from a pageable array, {say(page)}" if page and page is not best
                      else ""))
    return out


# --- figures --------------------------------------------------------------------------------

def plot_e2e_vs_size(rows: Sequence[Row], path: Path, *, title: str,
                     styles: dict[str, dict[str, Any]], roof: float | None) -> Path | None:
    """GB/s end to end vs size, one panel per op, one line per source, the pinned H2D ceiling
    as the roof; None when no row has a rate."""
    rows = [r for r in rows if r.size and (e2e_gbps(r) or 0) > 0]
    if not rows:
        return None
    ops = _ops(rows)
    sizes = sorted({r.size for r in rows if r.size})
    width = 7.2 if len(ops) == 1 else 12.0
    fig = Figure(figsize=(width, 4.6), dpi=DPI, layout="constrained")
    axes = fig.subplots(1, len(ops), sharey=True, squeeze=False).ravel()
    top = max([e2e_gbps(r) or 0.0 for r in rows] + [roof or 0.0])
    for ax, op in zip(axes, ops):
        at = latest((r for r in rows if _op(r) == op), lambda r: (r.variant, r.size))
        for src in sorted({v for v, _ in at}, key=source_key):
            pts = sorted((s, e2e_gbps(r)) for (v, s), r in at.items() if v == src)
            ax.plot([s for s, _ in pts], [g for _, g in pts], label=_text(src), markersize=4,
                    **{"linewidth": 1.4, **styles.get(src, {})})
        if roof:
            ax.axhline(roof, color="k", linewidth=1.2,
                       label=f"measured pinned H2D copy ({fmt_bandwidth(roof)})")
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(FixedLocator(sizes))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticks(sizes, [fmt_bytes(s) for s in sizes], fontsize=TICK_PT)
        ax.set_xlim(sizes[0] / 2**0.4, sizes[-1] * 2**0.4)
        ax.set_ylim(0, top * 1.1)
        ax.set_title(op, fontsize=LABEL_PT)
        ax.set_xlabel("host data per call", fontsize=LABEL_PT)
        ax.grid(True, which="major", alpha=0.3)
        ax.tick_params(labelsize=TICK_PT)
    axes[0].set_ylabel("GB/s end to end (median)", fontsize=LABEL_PT)
    return finish_panels(fig, axes, path, title)


def stream_figures(results: Results, name: Callable[..., Path],
                   skipped: list[SkippedFigure]) -> list[StreamFigure]:
    """The end-to-end figure of every device; one with a single size is noted in ``skipped``
    instead (the table gives its numbers)."""
    rows = stream_rows(results)
    by_device = group_by(rows, lambda r: r.device)
    out: list[StreamFigure] = []
    for device, drows in sorted(by_device.items()):
        multi = len(by_device) > 1
        cfg = (("device", device),) if multi else ()
        title = ("stream: host data to a result, GB/s end to end vs size"
                 + _suffix(list(by_device), device))
        if len({r.size for r in drows}) < 2:
            skipped.append(SkippedFigure("stream", "stream", cfg, title, "a single size: a "
                                         "line needs two; the table gives the numbers"))
            continue
        styles = styles_for("stream", drows)
        if "oneshot" in styles:  # the path before streaming: the baseline, grey and dashed
            styles["oneshot"] = {**styles["oneshot"], "color": "0.35", "linestyle": "--"}
        path = name("stream", "e2e", *([device] if multi else []))
        got = plot_e2e_vs_size(drows, path, title=title, styles=styles,
                               roof=h2d_roof(results, device))
        if got is not None:
            series = tuple(sorted({r.variant for r in drows}, key=source_key))
            out.append(("stream", "stream", cfg, title, got, series))
    return out


__all__ = ["STREAM_KINDS", "e2e_gbps", "end_to_end_tables", "phase_ms", "plot_e2e_vs_size",
           "source_key", "stream_figures", "stream_rows", "summary_lines"]

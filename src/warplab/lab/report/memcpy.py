"""Figures and tables of the batched-copy campaign (``lab/campaigns/memcpy/bench.py``).

Its records are cells of CUB's DeviceBatchMemcpy benchmark grid (the cases are named and the
records picked in :mod:`warplab.lab.report.memcpy_grid`), so the generic per-size figures skip
this family (``groups.MEMCPY_FAMILIES``) and this module draws:

- per device and alignment, GB/s vs the buffer-size class (x: the classes ordered by their
  largest size, ``"1–8 B"``, ``"16 B"``, ``"1 B–64 KiB"``), one panel per layout (CC, CS, SC,
  SS), one line per variant and comparator, the measured copy ceiling as the roof and, where
  measured, each cell's ceiling (the lower of copy and scatter, ``memcpy_target``) dashed;
- the grid table: per case the default's GB/s, CUB's, their ratio, % of the copy ceiling, the
  cell's scatter ceiling (``memcpy_target``) and the default's % of it, and whether the speed
  target holds; every variant's GB/s (folded); the public call's time.

GB/s counts *all* bytes, as CUB's DeviceBatchMemcpy benchmarks do (record ``gbps``: data read
and written plus 24 bytes per buffer for its source pointer, destination pointer and size);
``data_gbps`` counts the data read and written only.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable, Sequence

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from warplab.lab.report.groups import group_by, latest, ordered_series, styles_for
from warplab.lab.report.load import Results, Row, num
from warplab.lab.report.memcpy_grid import (
    Class, _cases, _measured, _pct, align_of, case_key, class_key, class_label, copy_roof,
    default_name, is_cub, kernel_rows, layout, package_rows, size_class,
)
from warplab.lab.report.memcpy_target import (
    INVALID, NOTE, cell_ceiling, cell_ceiling_line, pct_of, scatter_ceilings, target_met,
)
from warplab.lab.report.plotkit import DPI, LABEL_PT, TICK_PT, _text, finish_panels
from warplab.lab.report.skips import SkippedFigure
from warplab.lab.report.tables import Table
from warplab.lab.report.units import fmt_bandwidth

PANELS = ("CC", "CS", "SC", "SS")
MEMCPY_KINDS = ("memcpy", "memcpy_calls")
# (family, kind, config, title, path, series): gallery turns these into FigureRefs
MemcpyFigure = tuple[str, str, tuple[tuple[str, Any], ...], str, Path, tuple[str, ...]]


def _suffix(rows: Sequence[Row], device: str) -> str:
    return f" — {device}" if len({r.device for r in rows}) > 1 else ""


def grid_tables(results: Results) -> list[Table]:
    """Per device and alignment: the default against CUB and the cell's ceilings in every
    case of the grid."""
    ok = kernel_rows(results)
    scatter = scatter_ceilings(results, case_key)
    tables = []
    for (device, a), rows in sorted(group_by(ok, lambda r: (r.device, align_of(r))).items()):
        default, roof = default_name(rows), copy_roof(results, device)
        if default is None:
            continue
        has_cub = any(is_cub(r) for r in rows)
        t = Table(f"memcpy: {default} (default) against CUB, align {a} — GB/s counting all "
                  f"bytes{_suffix(ok, device)}",
                  ["align", "layout", "buffer sizes", "buffers", "data (MiB)",
                   "default GB/s", "default data GB/s", "CUB GB/s", "default / CUB",
                   "% of copy", "scatter GB/s", "% of scatter", "scatter check", "target"],
                  [], "memcpy", "memcpy",
                  {3: ",.0f", 4: ",.0f", 5: ".1f", 6: ".1f", 7: ".1f", 8: ".3f", 9: ".1f",
                   10: ".1f", 11: ".1f"},
                  note="GB/s counts all bytes as CUB's DeviceBatchMemcpy benchmarks do: data read "
                       "and written plus 24 bytes per buffer (source and destination pointers, "
                       "size); data GB/s: the data read and written only; data (MiB): the bytes "
                       "copied in the case (the planned --full grid picks it per case so that a "
                       "launch lasts >= 100 us at the copy ceiling). % of copy: the default's GB/s"
                       " over the measured copy ceiling"
                       + (f" ({fmt_bandwidth(roof)})" if roof else " (not measured)")
                       + "; scatter GB/s: the case's scatter ceiling, counted with the same "
                       "bytes (empty where not measured), the default's % of it where it is "
                       "valid, and its check (valid, or '" + INVALID + "': a verified copy "
                       "of the case ran faster). default / CUB has three decimals: "
                       "the target is 1.2 exactly. " + NOTE
                       + ("" if has_cub else " CUB was not measured in this run."))
        for (a, lay, hi, lo), at in _cases(rows):
            d = next((r for r in at.values() if r.variant == default), None)
            cub = next((r for r in at.values() if is_cub(r)), None)
            if d is None and cub is None:
                continue
            ratio = d.gbps / cub.gbps if d and cub and d.gbps and cub.gbps else None
            pct = _pct(d, roof)
            sc = scatter.get((device, (a, lay, hi, lo)))
            count = num((d or cub).params.get("count"))  # type: ignore[union-attr]
            data = num((d or cub).extra.get("data_bytes"))  # type: ignore[union-attr]
            t.rows.append([a, lay, class_label(lo, hi), count,
                           data / 2 / (1 << 20) if data else None, d.gbps if d else None,
                           num(d.extra.get("data_gbps")) if d else None,
                           cub.gbps if cub else None, ratio, pct,
                           sc.row.gbps if sc else None, pct_of(d.gbps if d else None, sc),
                           sc.verdict if sc else None,
                           target_met(ratio, pct, cub.gbps if cub else None, roof, lo,
                                      sc.gbps if sc else None)])
            t.row_keys.append(f"{lay} {class_label(lo, hi)} align {a}")
        _small_rates(t, (5, 6, 7, 10))
        tables.append(t)
    return tables


def _small_rates(t: Table, cols: Sequence[int]) -> None:
    """Three significant digits in rate columns whose values all lie below 10 GB/s (a host
    run), one decimal otherwise."""
    for c in cols:
        vals = [v for row in t.rows if isinstance(v := row[c], float)]
        if vals and max(vals) < 10:
            t.formats[c] = ".3g"


def every_variant_tables(results: Results) -> list[Table]:
    """Per device: GB/s (all bytes) of every variant and comparator in every case (folded
    under "results at a glance"); a note counts the explore-only series left out
    (:func:`package_rows`)."""
    ok, left_out = package_rows(_measured(results))
    note = (f"{len(left_out)} more series of warplab kernels, timed only by the explore "
            "scripts or by variants since removed, are left out (their records stay in the "
            "JSON; benchmarks/NOTES.md tells what they measured)." if left_out else "")
    tables = []
    for device, rows in sorted(group_by(ok, lambda r: r.device).items()):
        series = ordered_series("memcpy", rows)
        t = Table(f"memcpy: GB/s (all bytes) of every variant and comparator"
                  f"{_suffix(ok, device)}", ["align", "layout", "buffer sizes"] + series, [],
                  "glance", "memcpy", {i: ".1f" for i in range(3, 3 + len(series))},
                  note=note)
        for (a, lay, hi, lo), at in _cases(rows):
            t.rows.append([a, lay, class_label(lo, hi)]
                          + [at[s].gbps if s in at else None for s in series])
            t.row_keys.append(f"{lay} {class_label(lo, hi)} align {a}")
        _small_rates(t, range(3, 3 + len(series)))
        tables.append(t)
    return tables


def call_tables(results: Results) -> list[Table]:
    """The public ``copy_batched`` on a list of device arrays against a Python loop of copies."""
    rows = [r for r in results.rows if r.family == "memcpy" and r.ok and r.median
            and r.params.get("mode") == "call"]
    if not rows:
        return []
    multi = len({r.device for r in rows}) > 1
    t = Table("memcpy: the public call on a list of device arrays",
              (["device"] if multi else []) + ["arrays", "call", "provider", "per call (ms)",
                                               "per array (µs)"], [], "memcpy_calls", "memcpy",
              {0 + multi: ",.0f", 3 + multi: ".4g", 4 + multi: ".3g"},
              note="host clock until the stream is idle, median; arrays of 1 to 4096 bytes; "
                   "copy_batched: addresses, overlap check, one host-to-device copy of the "
                   "batch and the launches; the loop: dst[...] = src per array.")
    for r in sorted(rows, key=lambda r: (r.device, num(r.params.get("count")) or 0,
                                         r.provider != "warplab", r.variant)):
        count = int(num(r.params.get("count")) or 0)
        t.rows.append(([r.device] if multi else []) + [
            float(count), r.variant, r.provider, r.median,
            1e3 * r.median / count if count and r.median else None])
        t.row_keys.append(f"{count} arrays")
    return [t]


def memcpy_tables(results: Results) -> list[Table]:
    """Every memcpy table, in page order."""
    return grid_tables(results) + call_tables(results) + every_variant_tables(results)


# --- figures --------------------------------------------------------------------------------

def plot_bandwidth_vs_class(rows: Sequence[Row], path: Path, *, title: str,
                            styles: dict[str, dict[str, Any]], order: Sequence[str],
                            copy_gbps: float | None,
                            scatter: dict[tuple[str, Class], float] | None = None
                            ) -> Path | None:
    """GB/s (all bytes) vs the buffer-size class, one panel per layout present, one line per
    series (a missing case breaks its line), the copy ceiling as a roof in every panel and,
    where ``scatter`` ((layout, class) -> the valid scatter ceiling's GB/s) has cases, the cells'
    ceilings dashed. None when no row has a bandwidth."""
    rows = [r for r in rows if r.ok and r.gbps and r.gbps > 0]
    if not rows:
        return None
    classes = sorted({size_class(r) for r in rows}, key=class_key)
    panels = [p for p in PANELS if any(layout(r) == p for r in rows)]
    panels += sorted({layout(r) for r in rows} - set(panels))
    ncols = 1 if len(panels) == 1 else 2
    nrows = -(-len(panels) // ncols)
    width = 7.2 if ncols == 1 else 12.0
    fig = Figure(figsize=(width, 1.3 + 3.3 * nrows), dpi=DPI, layout="constrained")
    axes = fig.subplots(nrows, ncols, sharey=True, sharex=True, squeeze=False).ravel()
    values = [r.gbps for r in rows] + ([copy_gbps] if copy_gbps else [])
    logy = max(values) / min(values) > 30  # type: ignore[operator]
    xs = list(range(len(classes)))
    for ax, panel in zip(axes, panels):
        at = latest((r for r in rows if layout(r) == panel), lambda r: (r.series, size_class(r)))
        for s in order:
            ys = [at[(s, c)].gbps if (s, c) in at else float("nan") for c in classes]
            if any(not math.isnan(y) for y in ys):
                ax.plot(xs, ys, label=_text(s), markersize=4,
                        **{"linewidth": 1.4, **styles.get(s, {})})
        if scatter:
            cell_ceiling_line(ax, xs, [cell_ceiling(copy_gbps, scatter[(panel, c)])
                                       if (panel, c) in scatter else None for c in classes])
        if copy_gbps:
            ax.axhline(copy_gbps, color="k", linewidth=1.2,
                       label=f"measured copy bandwidth ({fmt_bandwidth(copy_gbps)})")
        ax.set_title(f"{panel}: {_layout_words(panel)}", fontsize=LABEL_PT)
        ax.grid(True, which="major", alpha=0.3)
        ax.tick_params(labelsize=TICK_PT)
        if logy:
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:,g}"))
        ax.set_xticks(xs, [class_label(*c) for c in classes], rotation=40, ha="right",
                      fontsize=TICK_PT)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    for i, ax in enumerate(axes[:len(panels)]):
        if i % ncols == 0:
            ax.set_ylabel("GB/s, all bytes" + (" (log scale)" if logy else ""), fontsize=LABEL_PT)
        if i >= len(panels) - ncols:
            ax.set_xlabel("buffer sizes (uniform in the range)", fontsize=LABEL_PT)
    top = max(values)  # type: ignore[type-var]
    if logy:  # room above the roof
        axes[0].set_ylim(top=top * 2.2)
    else:
        axes[0].set_ylim(0, top * 1.12)
    return finish_panels(fig, axes[:len(panels)], path, title)


def _layout_words(panel: str) -> str:
    words = {"C": "consecutive", "S": "shuffled"}
    return f"{words.get(panel[:1], '?')} in, {words.get(panel[1:], '?')} out"


def memcpy_figures(results: Results, name: Callable[..., Path],
                   skipped: list[SkippedFigure]) -> list[MemcpyFigure]:
    """The bandwidth-vs-buffer-size figure of every (device, alignment); a figure with one
    size class is noted in ``skipped`` instead (the table gives its numbers)."""
    ok = kernel_rows(results)
    out: list[MemcpyFigure] = []
    multi = len({r.device for r in ok}) > 1
    styles = styles_for("memcpy", ok)
    scatter = scatter_ceilings(results, lambda r: (align_of(r), layout(r), size_class(r)))
    for r in ok:  # CUB, the comparator to beat: black, dashed, bold
        if is_cub(r):
            styles[r.series] = {"color": "0.1", "marker": "D", "linestyle": "--",
                                "linewidth": 2.0}
    for (device, a), rows in sorted(group_by(ok, lambda r: (r.device, align_of(r))).items()):
        cfg = (("align", a),) + ((("device", device),) if multi else ())
        title = (f"memcpy: bandwidth vs buffer size, all bytes counted — align {a}"
                 + (f" — {device}" if multi else ""))
        classes = {size_class(r) for r in rows}
        if len(classes) < 2:
            skipped.append(SkippedFigure("memcpy", "bandwidth", cfg, title,
                                         f"a single buffer-size class ({class_label(*min(classes))}"
                                         "): a line needs two; the table gives the numbers"))
            continue
        order = ordered_series("memcpy", rows)
        path = name("memcpy", "bandwidth", f"align-{a}", *([device] if multi else []))
        got = plot_bandwidth_vs_class(rows, path, title=title, styles=styles, order=order,
                                      copy_gbps=copy_roof(results, device),
                                      scatter={k[1:]: s.gbps for (d, k), s in scatter.items()
                                               if d == device and k[0] == a and s.gbps})
        if got is not None:
            out.append(("memcpy", "bandwidth", cfg, title, got, tuple(order)))
    return out


__all__ = ["MEMCPY_KINDS", "call_tables", "every_variant_tables", "grid_tables",
           "memcpy_figures", "memcpy_tables", "plot_bandwidth_vs_class"]

"""Figures and tables of the batched-copy campaign (``lab/campaigns/memcpy/bench.py``).

Its records are cells of CUB's DeviceBatchMemcpy benchmark grid: a buffer-size class (uniform
random sizes in ``[params.min, params.max]``; a fixed size where they are equal), the source and
destination layouts (``params.in`` / ``params.out``: consecutive or shuffled, C/S), the
alignment of offsets and sizes (``params.align``), at a fixed total of data. So the generic
per-size figures skip this family (``groups.MEMCPY_FAMILIES``) and this module draws:

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

from warplab.lab.report.groups import Pick, group_by, latest, ordered_series, styles_for
from warplab.lab.report.load import Results, Row, num
from warplab.lab.report.memcpy_target import (INVALID, LARGE, NOTE, TARGET_LARGE_PCT, cell_ceiling,
                            cell_ceiling_line, pct_of, scatter_ceilings, target_met)
from warplab.lab.report.plotkit import DPI, LABEL_PT, TICK_PT, _text, finish_panels
from warplab.lab.report.roofline import device_ceilings
from warplab.lab.report.skips import SkippedFigure
from warplab.lab.report.tables import Table
from warplab.lab.report.units import fmt_bandwidth, fmt_pct

DEFAULT = "warp_tiers_windows"   # the cuda default (rank 0 of memcpy_batched)
#: The defaults before, newest first: what older runs measured as their default.
EARLIER_DEFAULTS = ("warp_tiers_words", "warp_classes", "size_classes_tuned")
LAYOUTS = ("consecutive", "shuffle")
PANELS = ("CC", "CS", "SC", "SS")
MEMCPY_KINDS = ("memcpy", "memcpy_calls")
Class = tuple[int, int]
# (family, kind, config, title, path, series): gallery turns these into FigureRefs
MemcpyFigure = tuple[str, str, tuple[tuple[str, Any], ...], str, Path, tuple[str, ...]]


def fmt_bytes(n: int) -> str:
    """``"16 B"``, ``"1 KiB"``, ``"64 KiB"``, ``"1.5 KiB"``: binary units from 1 KiB up."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            v = n / size
            return f"{v:g} {unit}" if v == int(v) else f"{v:.3g} {unit}"
    return f"{n} B"


def class_label(lo: int, hi: int) -> str:
    """A size class: ``"16 B"`` (fixed), ``"1–8 B"``, ``"1–4 KiB"`` (one unit), ``"1 B–64 KiB"``
    (units differ: ``"1–64 KiB"`` would read as 1 KiB to 64 KiB)."""
    if lo == hi:
        return fmt_bytes(hi)
    a, b = fmt_bytes(lo), fmt_bytes(hi)
    if a.split()[-1] == b.split()[-1]:
        return f"{a.split()[0]}–{b}"
    return f"{a}–{b}"


def size_class(r: Row) -> Class:
    """``(min, max)`` buffer bytes of a record."""
    return int(num(r.params.get("min")) or 0), int(num(r.params.get("max")) or 0)


def class_key(c: Class) -> tuple[int, int]:
    """Classes ordered by their largest size, then their smallest (a range before the fixed
    size it ends at)."""
    return c[1], c[0]


def layout(r: Row) -> str:
    """``"CC"``, ``"CS"``, ``"SC"`` or ``"SS"`` from ``params.in`` / ``params.out``."""
    return "".join(str(r.params.get(k) or "?")[:1].upper() for k in ("in", "out"))


def align_of(r: Row) -> int:
    """The alignment of offsets and sizes (1 when absent)."""
    return int(num(r.params.get("align")) or 1)


def case_key(r: Row) -> tuple[int, str, int, int]:
    """``(align, layout, max, min)``: the grid's order."""
    lo, hi = size_class(r)
    return align_of(r), layout(r), hi, lo


def case_text(r: Row) -> str:
    """``"CC 1–8 B · align 1"``."""
    return f"{layout(r)} {class_label(*size_class(r))} · align {align_of(r)}"


def is_cub(r: Row) -> bool:
    """CUB's ``DeviceMemcpy::Batched`` (provider ``cub``)."""
    return r.provider.lower().startswith("cub") or r.variant.lower().startswith("cub")


def _measured(results: Results) -> list[Row]:
    """Verified kernel-phase records with a bandwidth, of every series."""
    return [r for r in results.rows if r.family == "memcpy" and r.ok and r.gbps
            and r.params.get("mode", "kernel") == "kernel"]


def kernel_rows(results: Results) -> list[Row]:
    """Verified kernel-phase records with a bandwidth, of the package's variants and the
    comparators (:func:`package_rows`)."""
    return package_rows(_measured(results))[0]


def package_rows(rows: Sequence[Row]) -> tuple[list[Row], list[str]]:
    """The records of the variants the package registers (``warplab.variants`` of
    ``memcpy_batched`` on the record's backend) and of the comparators, and the series left
    out: the kernel shapes and candidates only the explore scripts time
    (``benchmarks/explore_memcpy_*.py``: "default again", ``warp_classes[...]``) and variants
    since removed. Their records stay in the JSON files, and ``benchmarks/NOTES.md`` tells what
    they measured; a table of every variant with dozens of them is not one a reader reads."""
    from warplab.core import registry

    names = {b: {v.name for v in registry.variants("memcpy_batched", b)}
             for b in {r.backend for r in rows}}
    keep, out = [], set()
    for r in rows:
        if r.provider != "warplab" or r.variant in names[r.backend]:
            keep.append(r)
        else:
            out.add(r.series)
    return keep, sorted(out)


def default_name(rows: Sequence[Row]) -> str | None:
    """The variant the tables call the default: :data:`DEFAULT` where measured, else
    :data:`EARLIER_DEFAULTS` in order (runs from before each switch), else the only warplab
    variant (the cpu backend's ``numpy``); None when none of these."""
    names = {r.variant for r in rows if r.provider == "warplab"}
    for name in (DEFAULT, *EARLIER_DEFAULTS):
        if name in names:
            return name
    return next(iter(names)) if len(names) == 1 else None


def copy_roof(results: Results, device: str) -> float | None:
    """The device's measured copy ceiling (GB/s, read + written)."""
    v = num(device_ceilings(results.sources, device).get("copy_gbps"))
    return v if v and v > 0 else None


def _suffix(rows: Sequence[Row], device: str) -> str:
    return f" — {device}" if len({r.device for r in rows}) > 1 else ""


def _pct(r: Row | None, roof: float | None) -> float | None:
    if r is None or not r.gbps:
        return None
    return 100.0 * r.gbps / roof if roof else num(r.pct_of_copy_bw)


def _cases(rows: Sequence[Row]) -> list[tuple[tuple[int, str, int, int], dict[str, Row]]]:
    """Per grid case (in order) the newest record of every series."""
    groups = group_by(rows, case_key)
    return [(k, latest(groups[k], lambda r: r.series)) for k in sorted(groups)]


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


# --- summary --------------------------------------------------------------------------------

def headline_pick(results: Results, device: str, rows: Sequence[Row]) -> Pick | None:
    """The grid in one row: the case where the default does worst against CUB (without CUB:
    its lowest % of copy), the ratio's spread over the grid, and the share of the cases with
    buffers >= 1 KiB at >= 85% of the copy ceiling; its roof is that case's cell ceiling where
    a valid scatter ceiling lies below the copy ceiling (``memcpy_target``), else the copy
    ceiling."""
    rows = [r for r in rows if r.ok and r.gbps and r.params.get("mode", "kernel") == "kernel"]
    default, roof = default_name(rows), copy_roof(results, device)
    if default is None:
        return None
    pairs = []
    for _, at in _cases(rows):
        d = next((r for r in at.values() if r.variant == default), None)
        cub = next((r for r in at.values() if is_cub(r)), None)
        if d is not None:
            pairs.append((d, cub))
    if not pairs:
        return None
    ratios = [(d.gbps / c.gbps, d, c) for d, c in pairs if c is not None and c.gbps]
    if ratios:
        _, best, rival = min(ratios, key=lambda t: t[0])
        spread = (min(t[0] for t in ratios), max(t[0] for t in ratios), len(ratios))
        detail = f"worst of {len(ratios)} cases vs CUB"
    else:
        best, rival, spread = min((d for d, _ in pairs), key=lambda d: d.gbps or 0.0), None, None
        detail = f"slowest of {len(pairs)} cases (no CUB)"
    large = [d for d, _ in pairs if size_class(d)[0] >= LARGE]
    if large and roof:
        fast = sum(1 for d in large if (_pct(d, roof) or 0) >= TARGET_LARGE_PCT)
        detail += (f"; ≥ 85% of copy in {fast} of {len(large)} cases ≥ 1 KiB "
                   f"({fmt_pct(100.0 * fast / len(large))})")
    cfg = (("align", align_of(best)), ("layout", layout(best)),
           ("min", size_class(best)[0]), ("max", size_class(best)[1]))
    scatter = scatter_ceilings(results, case_key).get((device, case_key(best)))
    cell = cell_ceiling(roof, scatter.gbps if scatter is not None else None)
    return Pick(cfg, best.size, best, rival, spread, f"{detail}, {case_text(best)}",
                ("cell ceiling", cell) if cell and roof and cell < roof else None)


__all__ = ["DEFAULT", "MEMCPY_KINDS", "call_tables", "class_label", "every_variant_tables",
           "grid_tables", "headline_pick", "memcpy_figures", "memcpy_tables",
           "plot_bandwidth_vs_class", "target_met"]

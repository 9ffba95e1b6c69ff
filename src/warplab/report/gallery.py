"""Decide which figures the results support, name them, and draw them.

File names are ``<family>_<kind>_<config>.png``, e.g.
``histogram_time_bins-letters_data-uniform.png``,
``histogram_ratio-letters-ascii128_data-const.png`` or
``reduce_step_op-sum_dtype-float32_data-random.png`` (step-speedup figures get
``_<device>`` appended when the family holds rows from more than one device).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from .figures import (
    Styles, plot_bandwidth_vs_size, plot_phases_at_largest, plot_ratio_vs_size,
    plot_speedup_vs_baseline, plot_step_speedup, plot_time_vs_size,
)
from .groups import (
    BASELINE, RATIO_PAIR, SERIES_FAMILIES, STEP_FAMILIES, by_config, config_label, config_slug,
    group_by, ordered_series, slug, sort_key_config, styles_for, without,
)
from .load import Results, Row
from .roofline import best_points, device_ceilings, plot_roofline
from .series import series_figures

Config = tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class FigureRef:
    """A written figure.

    Attributes:
        family: Family it belongs to.
        kind: ``time``, ``speedup``, ``step`` (step speedups at the largest
            size; for ``reduce_axis`` one per shape), ``bandwidth``, ``phases``,
            ``ratio``, ``shape`` (``reduce_axis``: bandwidth vs row length at a
            fixed total size) or ``roofline`` (family ``roofline``, config
            ``(("device", name),)``, one per device).
        config: Config it shows (for ``ratio``: the config without ``bins``).
        title: Caption text.
        path: The PNG file.
        series: Series with ok rows in that config, in legend order (rows that
            failed verification or carry an error are never among them).
    """

    family: str
    kind: str
    config: Config
    title: str
    path: Path
    series: tuple[str, ...]


class _Namer:
    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        self.used: set[str] = set()

    def __call__(self, *parts: str) -> Path:
        base = "_".join(slug(p) for p in parts)
        name, i = base, 2
        while name in self.used:
            name, i = f"{base}-{i}", i + 1
        self.used.add(name)
        return self.out_dir / f"{name}.png"


def make_figures(results: Results, out_dir: Path) -> list[FigureRef]:
    """Write every figure the results support.

    Per family and config: time vs size, bandwidth vs size, phases at the
    largest size, and speedup vs the family's baseline (histogram: ``global``,
    reduce: ``neighbored_gmem``). For families in ``STEP_FAMILIES`` (reduce)
    also the step speedups at the largest size (per device; none without a
    baseline row). For histogram also letters/ascii128 ratio vs size per
    remaining config. The series campaign's families (``SERIES_FAMILIES``) get
    theirs from :func:`warplab.report.series.series_figures` instead.
    File names are ``<family>_<kind>_<config>.png``.

    Args:
        results: Loaded results.
        out_dir: Directory to write PNGs into (created if needed).

    Returns:
        The figures written, in page order.
    """
    name = _Namer(out_dir)
    ceilings = {s.device_name: s.copy_gbps for s in results.sources if s.copy_gbps}
    refs: list[FigureRef] = []
    for family in results.families():
        if family in SERIES_FAMILIES:
            continue
        frows = [r for r in results.rows if r.family == family]
        ok = [r for r in frows if r.ok]
        styles = styles_for(family, ok)
        multi = len({(r.device, r.backend) for r in ok}) > 1
        xlabel = {"histogram": "size (bytes)", "reduce": "size (elements)"}.get(family, "size")
        for config, crows in by_config(ok):
            order = ordered_series(family, crows)
            label, cs = config_label(config), config_slug(config)
            specs: list[tuple[str, str]] = [("time", "kernel time vs size")]
            if family in BASELINE:
                specs.append(("speedup", f"speedup vs {BASELINE[family]}"))
            specs += [("bandwidth", "bandwidth vs size"), ("phases", "phases at largest size")]
            for kind, what in specs:
                tt = f"{family}: {what} — {label}"
                path = name(family, kind, cs)
                if kind == "time":
                    out = plot_time_vs_size(crows, path, title=tt, styles=styles, order=order,
                                            xlabel=xlabel)
                elif kind == "speedup":
                    out = plot_speedup_vs_baseline(crows, path, baseline=BASELINE[family],
                                                   title=tt, styles=styles, order=order,
                                                   xlabel=xlabel)
                elif kind == "bandwidth":
                    out = plot_bandwidth_vs_size(crows, path, title=tt, styles=styles,
                                                 order=order, ceilings=ceilings, xlabel=xlabel)
                else:
                    out = plot_phases_at_largest(crows, path, title=tt, order=order)
                if out is not None:
                    refs.append(FigureRef(family, kind, config, tt, out, tuple(order)))
            if family in STEP_FAMILIES and family in BASELINE:
                refs += _step_figures(family, config, crows, name, multi)
        if family == "histogram":
            refs += _ratio_figures(ok, name, styles)
    refs += [FigureRef(*f) for f in series_figures(results, name)]
    return refs + _roofline_figures(results, name)


def _roofline_figures(results: Results, name: _Namer) -> list[FigureRef]:
    """One roofline per device: its measured ceilings as the roof, its variants as points."""
    refs: list[FigureRef] = []
    by_device = group_by(best_points(results.rows), lambda p: p.row.device)
    for device, points in sorted(by_device.items()):
        title = f"roofline — {device}"
        out = plot_roofline(points, device_ceilings(results.sources, device),
                            name("roofline", device), title=title)
        if out is not None:
            refs.append(FigureRef("roofline", "roofline", (("device", device),), title, out,
                                  tuple(sorted({p.name for p in points}))))
    return refs


def _step_figures(family: str, config: Config, crows: Sequence[Row], name: _Namer,
                  multi: bool) -> list[FigureRef]:
    """Step-speedup bars at the largest size, one figure per device."""
    refs: list[FigureRef] = []
    baseline = BASELINE[family]
    label, cs = config_label(config), config_slug(config)
    for device, drows in sorted(group_by(crows, lambda r: r.device).items()):
        title = f"{family}: step speedup — {label}" + (f" — {device}" if multi else "")
        path = name(family, "step", cs, *([device] if multi else []))
        out = plot_step_speedup(drows, path, family=family, title=title, baseline=baseline)
        if out is not None:
            refs.append(FigureRef(family, "step", config, title, out,
                                  tuple(ordered_series(family, drows))))
    return refs


def _ratio_figures(ok: Sequence[Row], name: _Namer, styles: Styles) -> list[FigureRef]:
    num_b, den_b = RATIO_PAIR
    refs: list[FigureRef] = []
    with_bins = [r for r in ok if any(k == "bins" for k, _ in r.config)]
    groups = group_by(with_bins, lambda r: without(r.config, "bins"))
    for rest in sorted(groups, key=sort_key_config):
        rows = groups[rest]
        num = [r for r in rows if dict(r.config).get("bins") == num_b]
        den = [r for r in rows if dict(r.config).get("bins") == den_b]
        if not num or not den:
            continue
        order = ordered_series("histogram", num + den)
        title = f"histogram: {num_b} / {den_b} kernel time — {config_label(rest)}"
        path = name("histogram", f"ratio-{num_b}-{den_b}", config_slug(rest))
        out = plot_ratio_vs_size(num, den, path, title=title, styles=styles, order=order,
                                 ylabel=f"time({num_b}) / time({den_b})")
        if out is not None:
            refs.append(FigureRef("histogram", "ratio", rest, title, out, tuple(order)))
    return refs

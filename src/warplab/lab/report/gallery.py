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

from warplab.lab.report.corr import corr_figures
from warplab.lab.report.figures import (
    Styles, flops_rate, plot_bandwidth_vs_size, plot_phases_at_largest, plot_ratio_vs_size,
    plot_speedup_vs_baseline, plot_step_speedup, plot_throughput_vs_size, plot_time_vs_size,
)
from warplab.lab.report.groups import (
    BASELINE, OWN_REPORT_FAMILIES, RATIO_PAIR, STEP_FAMILIES, by_config, config_label,
    config_slug, group_by, ordered_series, slug, sort_key_config, step_speedups, styles_for,
    without,
)
from warplab.lab.report.latency import latency_figures
from warplab.lab.report.load import Results, Row, num
from warplab.lab.report.memcpy import memcpy_figures
from warplab.lab.report.roofline import best_points, device_ceilings, plot_roofline
from warplab.lab.report.series import series_figures
from warplab.lab.report.stream import stream_figures
from warplab.lab.report.skips import (
    SkippedFigure, line_reason, phases_reason, ratio_noise_reason, speedup_reason, step_reason,
)

Config = tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class FigureRef:
    """A written figure.

    Attributes:
        family: Family it belongs to.
        kind: ``time``, ``speedup``, ``step`` (step speedups at the largest
            size; for ``reduce_axis`` one per shape), ``bandwidth``, ``throughput`` (FLOP/s
            vs size, families with flops: matmul), ``phases``,
            ``ratio``, ``shape`` (``reduce_axis``: bandwidth vs row length at a
            fixed total size), ``time_error`` (corrcoef: time and error per precision, one
            per shape), ``latency`` (per case: call latency and host time per call),
            ``stream`` (GB/s end to end vs size) or ``roofline`` (family ``roofline``, config
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


XLABELS = {"histogram": "input size (bytes)", "reduce": "input size (elements)",
           "matmul": "matrix size N (N × N times N × N)"}
# kinds in page order (html.py shows them in this order)
KIND_ORDER = ("step", "throughput", "bandwidth", "shape", "time_error", "latency", "stream",
              "speedup", "ratio", "time", "phases")


def _title(family: str, what: str, config: Config) -> str:
    return f"{family}: {what}" + (f" — {config_label(config)}" if config else "")


def _roof_maps(results: Results) -> tuple[dict[str, float], dict[str, float]]:
    """Device -> measured copy GB/s, device -> measured read GB/s (newest run's values)."""
    copy: dict[str, float] = {}
    read: dict[str, float] = {}
    for dev in {s.device_name for s in results.sources}:
        ceil = device_ceilings(results.sources, dev)
        if (c := num(ceil.get("copy_gbps"))) and c > 0:
            copy[dev] = c
        if (r := num(ceil.get("read_gbps"))) and r > 0:
            read[dev] = r
    return copy, read


def compute_roofs(results: Results, rows: Sequence[Row]) -> list[tuple[str, float]]:
    """``(label, GFLOP/s)``: the measured SGEMM / DGEMM ceiling of each device and dtype in
    ``rows`` (float64 rows get DGEMM, every other dtype SGEMM)."""
    out: list[tuple[str, float]] = []
    devices = sorted({r.device for r in rows})
    for dev in devices:
        ceil = device_ceilings(results.sources, dev)
        dtypes = sorted({str(r.params.get("dtype")) for r in rows if r.device == dev})
        keys = sorted({"dgemm" if d == "float64" else "sgemm" for d in dtypes}, reverse=True)
        for key in keys:
            v = num(ceil.get(f"{key}_gflops"))
            if v and v > 0:
                out.append((f"measured {key.upper()}" + (f" — {dev}" if len(devices) > 1
                                                         else ""), v))
    return out


def make_figures(results: Results, out_dir: Path,
                 skipped: list[SkippedFigure] | None = None) -> list[FigureRef]:
    """Write every figure the results support; note the ones not worth drawing.

    Per family and config: bandwidth vs size with the measured read and copy roofs (matmul:
    throughput in FLOP/s vs N with the SGEMM / DGEMM roofs), speedup vs the family's baseline
    (histogram: ``global``, reduce: ``neighbored_gmem``), kernel time vs size, and phases at
    the largest size. For families in ``STEP_FAMILIES`` (reduce) also the step speedups at the
    largest size (per device; none without a baseline row). For histogram also letters/ascii128
    ratio vs size per remaining config. The families with a module of their own
    (``OWN_REPORT_FAMILIES``) get theirs from :func:`warplab.lab.report.series.series_figures`,
    :func:`warplab.lab.report.corr.corr_figures` (time and error per precision),
    :func:`warplab.lab.report.memcpy.memcpy_figures` (bandwidth vs buffer size),
    :func:`warplab.lab.report.latency.latency_figures` (per case: call latency and host time per
    call against CuPy, PyTorch and the floor) and :func:`warplab.lab.report.stream.stream_figures`
    (GB/s end to end vs size) instead. A
    figure with one point per line, one bar, only the kernel phase, or nothing but noise
    (:mod:`warplab.lab.report.skips`) is not drawn; ``skipped`` receives why.

    Args:
        results: Loaded results.
        out_dir: Directory to write PNGs into (created if needed).
        skipped: When given, a :class:`SkippedFigure` is appended for every figure left out.

    Returns:
        The figures written, in page order.
    """
    name = _Namer(out_dir)
    copy, read = _roof_maps(results)
    notes: list[SkippedFigure] = [] if skipped is None else skipped
    refs: list[FigureRef] = []
    for family in results.families():
        if family in OWN_REPORT_FAMILIES:
            continue
        ok = [r for r in results.rows if r.family == family and r.ok]
        styles = styles_for(family, ok)
        multi = len({(r.device, r.backend) for r in ok}) > 1
        xlabel = XLABELS.get(family, "size")
        flops = any(r.flops for r in ok)
        for config, crows in by_config(ok):
            order = ordered_series(family, crows)
            cs = config_slug(config)
            specs = ["throughput"] if flops else ["bandwidth"]
            specs += (["speedup"] if family in BASELINE else []) + ["time", "phases"]
            for kind in specs:
                what = {"throughput": "throughput vs N" if family == "matmul" else
                        "throughput vs size", "bandwidth": "bandwidth vs size",
                        "speedup": f"speedup vs {BASELINE.get(family)}",
                        "time": "kernel time vs " + ("N" if family == "matmul" else "size"),
                        "phases": "phases at the largest size"}[kind]
                tt = _title(family, what, config)
                why = _reason(kind, crows, family)
                if why is None:
                    path = name(family, kind, cs)
                    out = _draw(kind, crows, path, tt, styles, order, xlabel, family, copy,
                                read, compute_roofs(results, crows))
                    if out is not None:
                        refs.append(FigureRef(family, kind, config, tt, out, tuple(order)))
                        continue
                    why = "nothing to draw"
                notes.append(SkippedFigure(family, kind, config, tt, why))
            if family in STEP_FAMILIES and family in BASELINE:
                refs += _step_figures(family, config, crows, name, multi, notes)
        if family == "histogram":
            refs += _ratio_figures(ok, name, styles, notes)
    refs += [FigureRef(*f) for f in series_figures(results, name)]
    refs += [FigureRef(*f) for f in corr_figures(results, name, notes)]
    refs += [FigureRef(*f) for f in memcpy_figures(results, name, notes)]
    refs += [FigureRef(*f) for f in latency_figures(results, name, notes)]
    refs += [FigureRef(*f) for f in stream_figures(results, name, notes)]
    return refs + _roofline_figures(results, name)


def _reason(kind: str, rows: Sequence[Row], family: str) -> str | None:
    if kind == "time":
        return line_reason(rows, lambda r: r.median, "a kernel time")
    if kind == "bandwidth":
        return line_reason(rows, lambda r: r.gbps, "a bandwidth (GB/s)")
    if kind == "throughput":
        return line_reason(rows, flops_rate, "a FLOP/s rate")
    if kind == "speedup":
        return (line_reason(rows, lambda r: r.median, "a kernel time")
                or speedup_reason(rows, BASELINE[family]))
    return phases_reason(rows)


def _draw(kind: str, rows: Sequence[Row], path: Path, title: str, styles: Styles,
          order: Sequence[str], xlabel: str, family: str, copy: dict[str, float],
          read: dict[str, float], compute: list[tuple[str, float]]) -> Path | None:
    if kind == "time":
        return plot_time_vs_size(rows, path, title=title, styles=styles, order=order,
                                 xlabel=xlabel)
    if kind == "speedup":
        return plot_speedup_vs_baseline(rows, path, baseline=BASELINE[family], title=title,
                                        styles=styles, order=order, xlabel=xlabel)
    if kind == "bandwidth":
        return plot_bandwidth_vs_size(rows, path, title=title, styles=styles, order=order,
                                      ceilings=copy, xlabel=xlabel, read_ceilings=read)
    if kind == "throughput":
        return plot_throughput_vs_size(rows, path, title=title, styles=styles, order=order,
                                       roofs=compute, xlabel=xlabel)
    return plot_phases_at_largest(rows, path, title=title, order=order)


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
                  multi: bool, notes: list[SkippedFigure]) -> list[FigureRef]:
    """Step-speedup bars at the largest size, one figure per device."""
    refs: list[FigureRef] = []
    baseline = BASELINE[family]
    cs = config_slug(config)
    for device, drows in sorted(group_by(crows, lambda r: r.device).items()):
        title = _title(family, "step speedups", config) + (f" — {device}" if multi else "")
        size, steps = step_speedups(family, drows, baseline)
        if size is None:
            continue  # no baseline row: the speedup notes say so
        why = step_reason(len(steps))
        if why is not None:
            notes.append(SkippedFigure(family, "step", config, title, why))
            continue
        path = name(family, "step", cs, *([device] if multi else []))
        out = plot_step_speedup(drows, path, family=family, title=title, baseline=baseline)
        if out is not None:
            refs.append(FigureRef(family, "step", config, title, out,
                                  tuple(ordered_series(family, drows))))
    return refs


def _ratio_figures(ok: Sequence[Row], name: _Namer, styles: Styles,
                   notes: list[SkippedFigure]) -> list[FigureRef]:
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
        title = _title("histogram", f"{num_b} / {den_b} kernel time", rest)
        dens = {(r.series, r.size): r for r in den}
        pairs = [(r, dens[(r.series, r.size)]) for r in num if (r.series, r.size) in dens]
        why = (line_reason([a for a, _ in pairs], lambda r: r.median, "both mappings")
               or ratio_noise_reason(pairs, f"{num_b} / {den_b} time ratio"))
        if why is not None:
            notes.append(SkippedFigure("histogram", "ratio", rest, title, why))
            continue
        path = name("histogram", f"ratio-{num_b}-{den_b}", config_slug(rest))
        out = plot_ratio_vs_size(num, den, path, title=title, styles=styles, order=order,
                                 ylabel=f"time({num_b}) / time({den_b})")
        if out is not None:
            refs.append(FigureRef("histogram", "ratio", rest, title, out, tuple(order)))
    return refs

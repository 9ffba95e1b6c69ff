"""The roofline: measured ceilings as the roof, every measured variant as a point.

x = arithmetic intensity (operations per byte moved), y = achieved G-operations per second, both
logarithmic. The roof at intensity x is ``min(compute ceiling, x * bandwidth ceiling)``
(:func:`attainable`), drawn for the measured ceilings of the results' ``meta.ceilings``:
``copy_gbps`` and ``read_gbps`` as bandwidth roofs, ``sgemm_gflops`` and ``dgemm_gflops`` as
compute roofs. A file without the newer ceilings gets the copy roof alone; one without any,
points only.

Points (:func:`roofline_point`), one per variant and config, from its largest size:

- records with ``flops`` (matmul): ``x = flops / bytes_moved``, ``y = gflops`` (or flops per
  kernel median);
- records without: a per-family operation count (:data:`OPS_PER_BYTE`): reduce one operation per
  element (``x = 1 / itemsize``), histogram one counter increment per input byte (``x = 1``);
  ``y = x * achieved GB/s``. These are integer additions and compares, not floating-point flops,
  so their roof is the bandwidth alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from warplab.lab.report.figures import _finish, _new_axes, _text
from warplab.lab.report.groups import _COLORS, _MARKERS, CORR_FAMILIES, config_label, group_by
from warplab.lab.report.load import Row, Source, num
from warplab.lab.report.tables import Table
from warplab.lab.report.units import fmt_bandwidth, fmt_flops

BANDWIDTH_ROOFS = (("copy_gbps", "copy (read + write)"), ("read_gbps", "read"))
COMPUTE_ROOFS = (("sgemm_gflops", "SGEMM"), ("dgemm_gflops", "DGEMM"))
NOTE = ("x = operations per byte moved, y = achieved G-operations per second; roof = "
        "min(compute ceiling, x × bandwidth ceiling) from the measured ceilings. Points with "
        "flops (matmul) are floating-point; histogram (one counter increment per input byte, "
        "x = 1) and reduce (one operation per element, x = 1/itemsize) count integer and "
        "compare operations, not FP flops, and are judged against the bandwidth roof alone. "
        "One point per variant and config, from its largest size.")


def _reduce_ops(row: Row) -> float | None:
    try:
        return 1.0 / np.dtype(str(row.params.get("dtype"))).itemsize
    except TypeError:
        return None


OPS_PER_BYTE: dict[str, Callable[[Row], float | None]] = {
    "histogram": lambda row: 1.0,
    "reduce": _reduce_ops,
}


@dataclass(frozen=True)
class Roof:
    """One ceiling: ``kind`` is ``"bandwidth"`` (GB/s) or ``"compute"`` (GFLOP/s)."""

    kind: str
    label: str
    value: float

    @property
    def text(self) -> str:
        """``"SGEMM 91.0 GFLOP/s"``, ``"copy (read + write) 2,990 GB/s"``: the unit chosen from
        the value (:mod:`warplab.lab.report.units`)."""
        value = fmt_bandwidth(self.value) if self.kind == "bandwidth" else fmt_flops(self.value)
        return f"{self.label} {value}"


@dataclass(frozen=True)
class RoofPoint:
    """One variant at one config: intensity ``x`` (op/B), rate ``y`` (Gop/s)."""

    x: float
    y: float
    flops_based: bool
    row: Row

    @property
    def name(self) -> str:
        """Legend name: family and variant, plus the dtype of flops points (its roof)."""
        dtype = self.row.params.get("dtype") if self.flops_based else None
        return f"{self.row.family}: {self.row.variant}" + (f" ({dtype})" if dtype else "")


def roofs(ceilings: Mapping[str, Any]) -> list[Roof]:
    """The measured bandwidth and compute roofs present (positive) in ``ceilings``."""
    out = [Roof("bandwidth", label, v) for key, label in BANDWIDTH_ROOFS
           if (v := num(ceilings.get(key))) and v > 0]
    out += [Roof("compute", label, v) for key, label in COMPUTE_ROOFS
            if (v := num(ceilings.get(key))) and v > 0]
    return out


def attainable(x: float, bandwidth_gbps: float, compute_gflops: float | None) -> float:
    """The roof at intensity ``x``: ``min(compute, x * bandwidth)`` (no compute roof: the
    bandwidth line alone)."""
    line = x * bandwidth_gbps
    return line if compute_gflops is None else min(compute_gflops, line)


def ridge(bandwidth_gbps: float, compute_gflops: float) -> float:
    """Intensity where the bandwidth roof meets the compute roof (op/B)."""
    return compute_gflops / bandwidth_gbps


def roofline_point(row: Row) -> RoofPoint | None:
    """The point of an ok row, or None where it has no intensity or rate."""
    if not row.ok or not row.bytes_moved or row.family in CORR_FAMILIES:
        return None  # corr: effective flops of half a product; its table gives % of its GEMM
    if row.flops:
        rate = row.gflops
        if rate is None and row.median:
            rate = row.flops / (row.median * 1e-3) / 1e9
        x = row.flops / row.bytes_moved
        return RoofPoint(x, rate, True, row) if rate and rate > 0 else None
    ops = OPS_PER_BYTE.get(row.family)
    x = ops(row) if ops else None
    if not x or not row.gbps or row.gbps <= 0:
        return None
    return RoofPoint(x, x * row.gbps, False, row)


def best_points(rows: Iterable[Row]) -> list[RoofPoint]:
    """One point per (device, family, variant, provider, config): the largest size, and of
    equal sizes the fastest."""
    pts = [p for p in map(roofline_point, rows) if p is not None]
    groups = group_by(pts, lambda p: (p.row.device, p.row.family, p.row.variant,
                                      p.row.provider, p.row.config))
    return [max(g, key=lambda p: (p.row.size or 0, p.y)) for g in groups.values()]


def point_roof(point: RoofPoint, ceilings: Mapping[str, Any]) -> tuple[float, str] | None:
    """``(attainable rate, "memory" | "compute")`` for a point under the highest bandwidth roof;
    flops points also under the compute roof of their dtype (DGEMM for float64, else SGEMM)."""
    bw = max((r.value for r in roofs(ceilings) if r.kind == "bandwidth"), default=None)
    if bw is None:
        return None
    compute = None
    if point.flops_based:
        key = "dgemm_gflops" if point.row.params.get("dtype") == "float64" else "sgemm_gflops"
        compute = num(ceilings.get(key))
    roof = attainable(point.x, bw, compute)
    return roof, "compute" if compute is not None and roof >= compute else "memory"


def device_ceilings(sources: Sequence[Source], device: str) -> dict[str, Any]:
    """The ceilings of ``device``'s files merged in run order (the newest run's measured
    value wins; absent or null keys never overwrite)."""
    out: dict[str, Any] = {}
    for s in sources:
        if s.device_name == device:
            out.update({k: v for k, v in s.ceilings.items() if v is not None})
    return out


def _point_styles(points: Sequence[RoofPoint]) -> dict[str, dict[str, Any]]:
    """Colour per family, marker per variant within it; comparators hollow."""
    families = sorted({p.row.family for p in points})
    styles: dict[str, dict[str, Any]] = {}
    for fam_i, fam in enumerate(families):
        names = sorted({(p.row.provider != "warplab", p.name, p.row.provider) for p in points
                        if p.row.family == fam})
        for i, (_, name, provider) in enumerate(names):
            color = _COLORS[fam_i % len(_COLORS)]
            styles[name] = {"color": color, "marker": _MARKERS[i % len(_MARKERS)],
                            "markerfacecolor": color if provider == "warplab" else "none"}
    return styles


def _axis_range(values: Sequence[float]) -> tuple[float, float]:
    lo, hi = min(values), max(values)
    return 10 ** math.floor(math.log10(lo / 2)), 10 ** math.ceil(math.log10(hi * 2))


def plot_roofline(points: Sequence[RoofPoint], ceilings: Mapping[str, Any], path: Path, *,
                  title: str) -> Path | None:
    """Draw the roofs of ``ceilings`` and the points; None when there is no point."""
    if not points:
        return None
    rs = roofs(ceilings)
    bws = [r for r in rs if r.kind == "bandwidth"]
    comps = [r for r in rs if r.kind == "compute"]
    top_bw = max((r.value for r in bws), default=None)
    top_c = max((r.value for r in comps), default=None)
    ridges = [ridge(b.value, c.value) for b in bws for c in comps]
    x_lo, x_hi = _axis_range([p.x for p in points] + ridges)
    fig, ax = _new_axes((12.0, 6.0))  # a full row of the page: many points, a long legend
    for b in bws:
        end = ridge(b.value, top_c) if top_c else x_hi
        ax.plot([x_lo, end], [x_lo * b.value, end * b.value], color="k",
                linestyle="-" if b.value == top_bw else "--", linewidth=1.2,
                label=f"roof: {b.text}")
    for c in comps:
        start = ridge(top_bw, c.value) if top_bw else x_lo
        ax.plot([start, x_hi], [c.value, c.value], color="0.35",
                linestyle="-" if c.value == top_c else "--", linewidth=1.2,
                label=f"roof: {c.text}")
        above = c.value == top_c  # the top roof's label above its line, the others below
        ax.annotate(c.text, (x_hi, c.value),
                    xytext=(-4, 3 if above else -3), textcoords="offset points", ha="right",
                    va="bottom" if above else "top", fontsize=8, color="0.25")
    styles = _point_styles(points)
    for name in sorted(styles):
        pts = [p for p in points if p.name == name]
        ax.plot([p.x for p in pts], [p.y for p in pts], linestyle="none", markersize=6,
                label=_text(name), **styles[name])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_lo, x_hi)
    if any(not p.flops_based for p in points):
        title += "\n(histogram, reduce: integer and compare operations, not FP flops)"
    return _finish(fig, ax, path, title, "arithmetic intensity (operations / byte)",
                   "G-operations / s (GFLOP/s for flops)")


def roofline_table(rows: Iterable[Row], sources: Sequence[Source]) -> Table | None:
    """Every roofline point with its roof: intensity, achieved, attainable, % of roof, bound."""
    points = best_points(rows)
    if not points:
        return None
    table = Table("roofline: achieved vs the measured roof",
                  ["device", "family", "variant", "config", "size", "op/B", "achieved Gop/s",
                   "roof Gop/s", "% of roof", "bound", "ops"], [], kind="roofline",
                  formats={5: ".3g", 6: ",.1f", 7: ",.1f", 8: ".1f"})
    for p in sorted(points, key=lambda p: (p.row.device, p.row.family, p.x, -p.y)):
        roof = point_roof(p, device_ceilings(sources, p.row.device))
        r = p.row
        table.rows.append([r.device, r.family, r.variant, config_label(r.config), r.size, p.x,
                           p.y, roof[0] if roof else None,
                           100 * p.y / roof[0] if roof else None, roof[1] if roof else None,
                           "flops" if p.flops_based else "int/compare"])
    return table

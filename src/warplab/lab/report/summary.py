"""The summary at the top of the page: per family and device, warplab's best against the best
comparator, and how close it comes to the measured roof.

For each family with a speed (every family but ``series_accuracy`` and ``series_baseline``):

- the *rate* of a record is its kernel-phase throughput: ``gflops`` for matmul (FLOP/s), else
  ``gbps`` (bytes moved / kernel median); only verified kernel-mode records count (the public
  call timed with its overheads, ``params.mode`` ``call``/``calls``, does not);
- the *headline configuration* is the one with the most sizes measured (a curve, not a point)
  among those where warplab and a comparator both ran, then the family's preferred one
  (:data:`PREFERRED`: e.g. uniform data, float32), then the largest size;
- at the largest size where warplab and every comparator of that configuration ran (else the
  largest where warplab and any comparator ran: a comparator that fails at the largest sizes
  does not leave a weakened field), *best warplab* and *best comparator* are the fastest
  variant of each side (the newest record where runs repeat one), and ``warplab / comparator``
  is the ratio of their rates (> 1: warplab is faster);
- *% of roof* is best warplab's rate over the device's measured ceiling for the family
  (:data:`ROOFS`: the read bandwidth for histogram and the reductions, copy where read was not
  measured; copy for random_walk, which writes; SGEMM / DGEMM by dtype for matmul);
- *across configs*: the same ratio at the largest common size of every configuration, min to max.

On a CPU (cpu backend) the comparator is NumPy's own call on the same input (provider ``numpy``),
so the ratio says whether warplab's NumPy backend beats calling NumPy directly (:data:`CPU_NOTE`);
where NumPy has no such call the row says why (:data:`CPU_NO_COMPARATOR`). Without a comparator
the best warplab variant and its % of roof are still given. A % of roof above 105 is marked, on
a CPU with the reason where the input is smaller than the roof's buffer (:func:`pct_text`).

Two families pick their own row (their report modules, :mod:`warplab.lab.report.corr` and
:mod:`warplab.lab.report.memcpy_grid`): ``corrcoef`` one row per precision, the fastest warplab
variant of that precision against the fastest comparator at the largest M (the public call, rates
in effective FLOP/s, errors named next to the times; roof: the DGEMM or SGEMM its arithmetic runs
against); ``memcpy`` the grid's worst case of the default against CUB (GB/s counting all bytes,
roof: that case's cell ceiling, the lower of copy and a valid scatter ceiling), the ratio's
spread over the grid, and the share of cases with buffers >= 1 KiB at >= 90% of the copy
ceiling.

Three families are not rows of the table but a line under it (:func:`family_notes`):

- ``latency`` measures host-side times of small calls (smaller is better) against the latency
  targets (call latency <= PyTorch's, host time per call <= PyTorch's): no bytes, so no
  rate, and no roof (its floor, an empty launch, is a time, and the cpu backend has none). A
  row would have to invent a rate or squeeze eleven cases into one ratio that hides which
  miss. The line says per target which cases meet it
  (:func:`warplab.lab.report.latency.target_lines`); the section has the numbers.
- ``numpy`` times warplab's NumPy backend against NumPy's own call per case (times per call,
  cases of unrelated sizes): the line says how many cases are within 1.5× and the slowest
  (:func:`warplab.lab.report.numpy.summary_line`); the section has the table.
- ``stream`` measures GB/s end to end of host data with no comparator, where the table's
  kernel-phase rate would be a sum of per-chunk kernel times (not what a user gets): the line
  gives the fastest source at the largest size and a pageable array's rate, with their share of
  the pinned H2D ceiling (:func:`warplab.lab.report.stream.summary_lines`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from warplab.lab.report import corr as _corr
from warplab.lab.report import latency as _latency
from warplab.lab.report import memcpy_grid as _memcpy_grid
from warplab.lab.report import numpy as _numpy
from warplab.lab.report import stream as _stream
from warplab.lab.report.gallery import KIND_ORDER, FigureRef
from warplab.lab.report.groups import (
    CORR_FAMILIES, LATENCY_FAMILIES, MEMCPY_FAMILIES, NUMPY_FAMILIES, SERIES_FAMILIES,
    STREAM_FAMILIES, Pick,
    config_label, fmt_size, group_by, latest,
)
from warplab.lab.report.load import Results, Row, num
from warplab.lab.report.figures import flops_rate
from warplab.lab.report.roofline import device_ceilings
from warplab.lab.report.tables import Table
from warplab.lab.report.units import fmt_pct, fmt_rate, fmt_ratio

Config = tuple[tuple[str, Any], ...]
NOT_SPEED = frozenset({"series_accuracy", "series_baseline"})
KERNEL_MODES = (None, "kernel")
_BW_ROOFS = (("read_gbps", "read"), ("copy_gbps", "copy"))
ROOFS: dict[str, tuple[tuple[str, str], ...]] = {
    "histogram": _BW_ROOFS, "reduce": _BW_ROOFS, "reduce_axis": _BW_ROOFS,
    "random_walk": (("copy_gbps", "copy"),), "memcpy": (("copy_gbps", "copy"),),
}
PREFERRED: dict[str, tuple[tuple[str, Any], ...]] = {
    "histogram": (("data", "uniform"), ("bins", "bytes"), ("bins", "ascii128")),
    "reduce": (("mode", "kernel"), ("dtype", "float32"), ("op", "sum")),
    "matmul": (("dtype", "float32"),),
    "reduce_axis": (("dtype", "float32"), ("op", "mean")),
    "random_walk": (("dtype", "float32"),),
}
SIZE_UNIT = {"histogram": "bytes", "reduce": "elements"}
#: The note under the table when a row is a CPU's.
CPU_NOTE = ("On a CPU (cpu backend rows) the comparator is NumPy's own function on the same "
            "input; warplab / comparator above 1: warplab's NumPy backend is faster than "
            "calling NumPy directly (sums and means of float32: warplab accumulates in float64, "
            "NumPy in float32).")
#: A CPU row without a comparator: why NumPy offers none.
CPU_NO_COMPARATOR = {
    "random_walk": "none: no NumPy call draws these walks",
    "memcpy": "none: NumPy has no batched copy",
}
#: The ceiling key of a roof's buffer size (bytes it reads), by roof name.
ROOF_BYTES = {"read": "read_bytes", "copy": "copy_bytes"}


@dataclass(frozen=True)
class Headline:
    """One family on one device, summed up (see the module docstring).

    Attributes:
        family: Family.
        device: Device name.
        metric: ``"gflops"`` (FLOP/s) or ``"gbps"`` (bytes/s).
        config: The headline configuration (series families: dtype, op and shape).
        size: The size compared at (series families: ``m * n``).
        best: Fastest warplab row there, or None when warplab has none.
        rival: Fastest comparator row there, or None when no comparator ran.
        roof_name: ``"read"``, ``"copy"``, ``"SGEMM"``, ``"DGEMM"``, or ``""`` when none.
        roof: The ceiling in the metric's G-units per second, or None when not measured.
        spread: ``(lowest, highest, configs)`` of the ratio over every configuration where
            both sides ran, or None.
        where: The "compared at" text of families that pick their own headline (corrcoef,
            memcpy: :class:`~warplab.lab.report.groups.Pick`); "" for the rest.
        roof_bytes: The bytes the roof's measurement reads (bandwidth roofs), or None.
    """

    family: str
    device: str
    metric: str
    config: Config
    size: int | None
    best: Row | None
    rival: Row | None
    roof_name: str
    roof: float | None
    spread: tuple[float, float, int] | None
    where: str = ""
    roof_bytes: int | None = None

    @property
    def backend(self) -> str:
        """``"cpu"`` or ``"cuda"``: the backend of its rows ("" without any)."""
        r = self.best or self.rival
        return r.backend if r is not None else ""

    @property
    def best_rate(self) -> float | None:
        """Best warplab's rate (G-units/s)."""
        return rate(self.best, self.metric) if self.best else None

    @property
    def rival_rate(self) -> float | None:
        """Best comparator's rate (G-units/s)."""
        return rate(self.rival, self.metric) if self.rival else None

    @property
    def ratio(self) -> float | None:
        """``best_rate / rival_rate`` (> 1: warplab faster), or None."""
        a, b = self.best_rate, self.rival_rate
        return a / b if a and b else None

    @property
    def pct_of_roof(self) -> float | None:
        """Best warplab's rate as a percentage of the roof, or None."""
        return 100.0 * self.best_rate / self.roof if self.best_rate and self.roof else None


def rate(r: Row, metric: str) -> float | None:
    """A row's rate in G-units/s for ``metric``."""
    return flops_rate(r) if metric == "gflops" else r.gbps


def _key(r: Row) -> tuple[Config, int | None]:
    """``(configuration, size)`` of the problem a row solved."""
    if r.family in SERIES_FAMILIES:
        m, n = int(num(r.params.get("m")) or 0), int(num(r.params.get("n")) or 0)
        cfg = (("dtype", r.params.get("dtype")), ("op", r.params.get("op")),
               ("shape", f"{m} x {n}"))
        return cfg, m * n
    return r.config, r.size


def _best(rows: Sequence[Row], metric: str) -> Row | None:
    at = latest(rows, lambda r: r.variant)
    return max(at.values(), key=lambda r: rate(r, metric) or 0.0, default=None)


def _at(rows: Sequence[Row], size: int | None, metric: str) -> tuple[Row | None, Row | None]:
    here = [r for r in rows if _key(r)[1] == size]
    return (_best([r for r in here if r.provider == "warplab"], metric),
            _best([r for r in here if r.provider != "warplab"], metric))


def _roof(results: Results, family: str, device: str, best: Row | None) -> tuple[str, float | None]:
    ceil = device_ceilings(results.sources, device)
    if family == "matmul":
        key = "dgemm" if best is not None and best.params.get("dtype") == "float64" else "sgemm"
        v = num(ceil.get(f"{key}_gflops"))
        return key.upper(), v if v and v > 0 else None
    if family == "corrcoef":  # the GEMM its arithmetic runs against (record ``ceiling_key``)
        key = str(best.extra.get("ceiling_key") or "dgemm_gflops") if best else "dgemm_gflops"
        v = num(ceil.get(key))
        return key.split("_")[0].upper(), v if v and v > 0 else None
    for key, name in ROOFS.get(family, _BW_ROOFS):
        v = num(ceil.get(key))
        if v and v > 0:
            return name, v
    return "", None


def _roof_bytes(results: Results, device: str, roof_name: str) -> int | None:
    """The bytes the measurement of roof ``roof_name`` reads, where it says."""
    v = num(device_ceilings(results.sources, device).get(ROOF_BYTES.get(roof_name, "")))
    return int(v) if v else None


def _headline(results: Results, family: str, device: str, rows: Sequence[Row]) -> Headline:
    metric = "gflops" if any(r.flops for r in rows) else "gbps"
    rows = [r for r in rows if (rate(r, metric) or 0) > 0]
    info = []
    for cfg, crows in group_by(rows, lambda r: _key(r)[0]).items():
        sizes = {_key(r)[1] for r in crows}
        sides = group_by(crows, lambda r: (_key(r)[1], r.provider == "warplab"))
        common = [s for s in sizes if (s, True) in sides and (s, False) in sides]
        rivals = {r.variant for r in crows if r.provider != "warplab"}
        full = [s for s in common if {r.variant for r in sides[(s, False)]} == rivals]
        top = max(full or common, default=None, key=lambda s: s or 0)
        pref = sum(1 for k, v in PREFERRED.get(family, ()) if dict(cfg).get(k) == v)
        info.append((cfg, crows, top, len(sizes), pref, max(s or 0 for s in sizes)))
    cfg, crows, top, _, _, largest = min(info, key=lambda t: (
        t[2] is None, -t[3], -t[4], -(t[2] or t[5]), -len(t[1]), config_label(t[0])))
    size = top if top is not None else largest
    best, rival = _at(crows, size, metric)
    ratios = []
    for _, r_rows, r_top, *_ in info:
        if r_top is not None:
            a, b = _at(r_rows, r_top, metric)
            if a is not None and b is not None:
                ratios.append(rate(a, metric) / rate(b, metric))  # type: ignore[operator]
    spread = (min(ratios), max(ratios), len(ratios)) if ratios else None
    roof_name, roof = _roof(results, family, device, best)
    return Headline(family, device, metric, cfg, size, best, rival, roof_name, roof, spread,
                    roof_bytes=_roof_bytes(results, device, roof_name))


def headlines(results: Results) -> list[Headline]:
    """One :class:`Headline` per speed family and device, families in page order."""
    out: list[Headline] = []
    for family in results.families():
        if family in NOT_SPEED or family in LATENCY_FAMILIES or family in STREAM_FAMILIES \
                or family in NUMPY_FAMILIES:
            continue  # not rates against a comparator: family_notes
        if family in CORR_FAMILIES or family in MEMCPY_FAMILIES:
            out += _own_headlines(results, family)
            continue
        rows = [r for r in results.rows if r.family == family and r.ok
                and r.params.get("mode") in KERNEL_MODES]
        for device, drows in sorted(group_by(rows, lambda r: r.device).items()):
            if any((rate(r, "gflops" if r.flops else "gbps") or 0) > 0 for r in drows):
                out.append(_headline(results, family, device, drows))
    return out


def family_notes(results: Results) -> list[str]:
    """The lines under the summary table for the families that are not rows of it (see the
    module docstring): latency's targets, stream's end-to-end rates."""
    fams = set(results.families())
    out = []
    if fams & LATENCY_FAMILIES:
        lines = _latency.target_lines(results)
        if lines:
            out.append("latency (host times of small calls, medians; not rates): "
                       + "; ".join(lines) + ".")
    if fams & NUMPY_FAMILIES:
        line = _numpy.summary_line(results)
        if line:
            out.append(line)
    if fams & STREAM_FAMILIES:
        lines = _stream.summary_lines(results)
        if lines:
            out.append("stream (host data to a result, no comparator): " + "; ".join(lines)
                       + ".")
    return out


def _own_headlines(results: Results, family: str) -> list[Headline]:
    """Headlines of the families whose report module picks them: corrcoef (one per precision:
    the fastest warplab variant against the fastest comparator at the largest M, errors
    shown), memcpy (the grid's worst case of the default against CUB); corr_pairs has no
    comparator and no headline."""
    out: list[Headline] = []
    rows = [r for r in results.rows if r.family == family and r.ok]
    for device, drows in sorted(group_by(rows, lambda r: r.device).items()):
        picks: list[Pick] = []
        if family == "corrcoef":
            picks = _corr.headline_picks(drows)
        elif family == "memcpy":
            pick = _memcpy_grid.headline_pick(results, device, drows)
            picks = [pick] if pick is not None else []
        metric = "gflops" if family == "corrcoef" else "gbps"
        for p in picks:
            roof_name, roof = p.roof or _roof(results, family, device, p.best)
            out.append(Headline(family, device, metric, p.config, p.size, p.best, p.rival,
                                roof_name, roof, p.spread, p.where,
                                _roof_bytes(results, device, roof_name)))
    return out


def who(r: Row) -> str:
    """A headline's row in words: its variant (corrcoef: with precision, time and error)."""
    return _corr.who(r) if r.family == "corrcoef" else r.variant


def size_text(h: Headline) -> str:
    """Where the comparison was made: configuration and size, in words."""
    if h.where:
        return h.where
    cfg = dict(h.config)
    if h.family in SERIES_FAMILIES:
        return f"{cfg.get('dtype')} {cfg.get('op') or ''}, {cfg.get('shape')}".replace(" ,", ",")
    if h.family == "matmul":
        at = f"N = {h.size:,}" if h.size else "—"
    else:
        at = f"{fmt_size(h.size)} {SIZE_UNIT.get(h.family, '')}".strip()
    return (config_label(h.config) + ", " if h.config else "") + at


def pct_text(h: Headline) -> str:
    """% of roof; above 105% says so (the ceiling was measured lower than this run reached),
    and on a CPU why, where the input is smaller than the roof's buffer: it stays in the caches
    between runs, while the roof reads from memory."""
    x = h.pct_of_roof
    if x is None or x <= 105:
        return fmt_pct(x)
    moved = h.best.bytes_moved if h.best is not None else None
    if h.backend == "cpu" and moved and h.roof_bytes and moved < h.roof_bytes:
        size, roof = _memcpy_grid.fmt_bytes(moved), _memcpy_grid.fmt_bytes(h.roof_bytes)
        return (f"{fmt_pct(x)} (above the measured roof: its {size} stay in the CPU's caches "
                f"between runs; the {h.roof_name} roof reads {roof} from memory)")
    return fmt_pct(x) + " (above the measured roof)"


def rival_text(h: Headline) -> str:
    """The best comparator in words; without one, on a CPU, why NumPy offers none."""
    if h.rival is not None:
        return who(h.rival)
    return CPU_NO_COMPARATOR.get(h.family, "none measured") if h.backend == "cpu" else (
        "none measured")


def summary_table(heads: Sequence[Headline]) -> Table:
    """The summary as a table (``kind="summary"``), one row per family and device."""
    multi = len({h.device for h in heads}) > 1
    cols = ["family"] + (["device"] if multi else []) + [
        "compared at", "best warplab", "warplab rate", "best comparator", "comparator rate",
        "warplab / comparator", "roof (measured)", "% of roof", "across configs"]
    t = Table("Summary: warplab's best against the best comparator", cols, [], "summary",
              note="Kernel-phase rates of verified records (bandwidth: bytes moved / median "
                   "time; matmul: 2 N³ flops / median time), at the largest size where warplab "
                   "and every comparator ran, in the configuration with the most sizes. "
                   "warplab / comparator > 1: warplab is faster. Roof: the device's measured "
                   "ceiling (read bandwidth for histogram and reductions, copy where read was "
                   "not measured or for random_walk; SGEMM / DGEMM for matmul and corrcoef; "
                   "memcpy: its case's cell ceiling where a valid scatter ceiling lies below "
                   "copy). Across configs: the same ratio in every configuration where both "
                   "ran." + (" " + CPU_NOTE if any(h.backend == "cpu" for h in heads) else ""))
    for h in heads:
        spread = (f"{fmt_ratio(h.spread[0])} – {fmt_ratio(h.spread[1])} ({h.spread[2]} configs)"
                  if h.spread and h.spread[2] > 1 else "—")
        roof = f"{h.roof_name} {fmt_rate(h.roof, h.metric)}" if h.roof else "not measured"
        t.rows.append([h.family] + ([h.device] if multi else []) + [
            size_text(h), who(h.best) if h.best else "none",
            fmt_rate(h.best_rate, h.metric), rival_text(h),
            fmt_rate(h.rival_rate, h.metric), fmt_ratio(h.ratio), roof, pct_text(h), spread])
        t.row_keys.append(h.family)
    return t


def _same(h: Headline, f: FigureRef, strict: bool) -> bool:
    """Whether figure ``f`` shows the headline's configuration (series families: its dtype and
    op; strictly, a step chart also its shape)."""
    fc, cfg = dict(f.config), dict(h.config)
    if h.family in CORR_FAMILIES or h.family in MEMCPY_FAMILIES:  # a figure shows a part of it
        return (fc.pop("device", h.device) == h.device
                and all(cfg.get(k) == v for k, v in fc.items()))
    if h.family not in SERIES_FAMILIES:
        return f.config == h.config
    shape = f"{fc.get('m')} x {fc.get('n')}"
    return (fc.get("dtype") == cfg.get("dtype") and fc.get("op") == cfg.get("op")
            and (not strict or f.kind != "step" or shape == cfg.get("shape")))


def headline_figures(h: Headline, figures: Sequence[FigureRef]) -> list[FigureRef]:
    """Every figure of the headline's configuration, in page order of kinds."""
    return [f for k in KIND_ORDER for f in figures
            if f.family == h.family and f.kind == k and _same(h, f, True)]


def headline_figure(h: Headline, figures: Sequence[FigureRef]) -> FigureRef | None:
    """The figure that shows the headline: the throughput or bandwidth curve of its
    configuration (reduce_axis: bandwidth vs row length of its dtype and op, else the step
    chart of its shape), else the first figure of the family in page order."""
    fam = [f for f in figures if f.family == h.family]
    for strict in (True, False):
        for kind in ("throughput", "bandwidth", "shape", "time_error", "step", "speedup",
                     "time"):
            for f in fam:
                if f.kind == kind and _same(h, f, strict):
                    return f
    return next((f for k in KIND_ORDER for f in fam if f.kind == k), None)

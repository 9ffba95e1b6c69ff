"""Figures and tables of the corr campaign (``lab/campaigns/corr/bench.py``).

Its records are shapes (``params.m`` series of ``params.n`` values) measured per precision, with
the error next to the time, so the generic per-size figures and tables skip these families
(``groups.CORR_FAMILIES``):

- ``corrcoef``: per shape and device the corr table: every warplab variant x
  precision and the comparators (cupy.corrcoef, torch.corrcoef, cuBLAS DSYRK / SGEMM on
  pre-centred rows), grouped by precision: time, effective TFLOP/s (``M (M + 1) / 2 * N``
  multiply-adds for everyone), % of the measured GEMM ceiling of the row's arithmetic (DGEMM
  for float64, SGEMM otherwise; ``ceiling_key``), max abs error against the float64 reference,
  the stated bound, and the speedup over cupy.corrcoef. Its figure puts time and error side by
  side per precision: the Pearson report's float-or-double question answered with a picture.
- ``corr_pairs``: the threshold search without the M x M matrix: time, pairs found, and the
  sampled float64 verification.

``pairwise_direct`` may run at a smaller M than its configuration (the campaign caps its time;
``meta.notes`` says so): such a record joins the table of the nearest larger M of the same run
and N, its label saying the M it ran at; its speedup over cupy.corrcoef is then the ratio of
effective TFLOP/s (time would compare different work).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

from warplab.lab.report.figures import flops_rate
from warplab.lab.report.groups import CANONICAL_ORDER, Pick, group_by, latest
from warplab.lab.report.load import Results, Row, num
from warplab.lab.report.plotkit import DPI, LABEL_PT, LEGEND_PT, TICK_PT, TITLE_PT, _text, wrap_title
from warplab.lab.report.skips import SkippedFigure
from warplab.lab.report.tables import Table
from warplab.lab.report.units import clock_of, fmt_ms

PRECISIONS = ("float64", "float32", "tf32")
CUPY = "cupy.corrcoef"
DIRECT = "pairwise_direct"
CEILING_NAMES = {"dgemm_gflops": "DGEMM", "sgemm_gflops": "SGEMM"}
PRECISION_COLORS = {"float64": "#08519c", "float32": "#4292c6", "tf32": "#9ecae1"}
COMPARATOR_COLOR = "#f16913"
LIGHT = frozenset({PRECISION_COLORS["tf32"]})  # bar colours that take black text
CORR_KINDS = ("corr", "corr_pairs")
Shape = tuple[int, int]
# (family, kind, config, title, path, series): gallery turns these into FigureRefs
CorrFigure = tuple[str, str, tuple[tuple[str, Any], ...], str, Path, tuple[str, ...]]


def shape_of(r: Row) -> Shape:
    """``(m, n)`` a record ran at (0 where missing)."""
    return int(num(r.params.get("m")) or 0), int(num(r.params.get("n")) or 0)


def precision_of(r: Row) -> str:
    """The record's precision (comparators: the precision of their arithmetic)."""
    return str(r.params.get("precision") or "float64")


def _ok(results: Results, family: str) -> list[Row]:
    return [r for r in results.rows if r.family == family and r.ok and r.median]


def _suffix(rows: Sequence[Row], device: str) -> str:
    return f" — {device}" if len({r.device for r in rows}) > 1 else ""


def dims(m: int, n: int) -> str:
    """``"M = 8,192 · N = 8,192"``."""
    return f"M = {m:,} · N = {n:,}"


def table_shapes(rows: Sequence[Row]) -> list[tuple[Shape, Row]]:
    """Each row with the shape of the table it belongs to: its own, except for a
    ``pairwise_direct`` record run at a smaller M (no other target at that M in its file and
    N), which joins the nearest larger M of the same file and N."""
    full = {(r.device, r.source, *shape_of(r)) for r in rows if r.variant != DIRECT}
    out = []
    for r in rows:
        m, n = shape_of(r)
        if r.variant == DIRECT and (r.device, r.source, m, n) not in full:
            above = sorted(fm for d, s, fm, fn in full
                           if (d, s, fn) == (r.device, r.source, n) and fm > m)
            if above:
                m = above[0]
        out.append(((m, n), r))
    return out


def _entry_key(r: Row) -> tuple[Any, ...]:
    canon = CANONICAL_ORDER["corrcoef"]
    p = precision_of(r)
    return (PRECISIONS.index(p) if p in PRECISIONS else len(PRECISIONS), p,
            r.provider != "warplab", canon.index(r.variant) if r.variant in canon else len(canon),
            r.variant)


def entries(rows: Sequence[Row]) -> list[Row]:
    """One row per (variant, precision) (the newest), grouped by precision: warplab's variants
    in the lecture's order, then the comparators of that precision."""
    at = latest(rows, lambda r: (r.variant, r.provider, precision_of(r)))
    return sorted(at.values(), key=_entry_key)


def label(r: Row, shape: Shape) -> str:
    """``"tc_gram · float64"``; a record run at another M says so."""
    m = shape_of(r)[0]
    return f"{r.variant} · {precision_of(r)}" + (f" (at M = {m:,})" if m != shape[0] else "")


def tflops(r: Row) -> float | None:
    """Effective TFLOP/s of a record."""
    t = num(r.extra.get("tflops"))
    if t is None and (g := flops_rate(r)) is not None:
        t = g / 1e3
    return t


def error_of(r: Row) -> float | None:
    """The record's max abs error against the float64 reference."""
    return num(r.extra.get("max_abs_error"))


def bound_of(r: Row) -> float | None:
    """The stated bound on that error."""
    return num(r.extra.get("error_bound"))


def fmt_error(x: float | None) -> str:
    """An error as text: ``2.1e-12``, ``1.3e-6``, ``0``, ``-`` when absent."""
    if x is None:
        return "-"
    if x == 0:
        return "0"
    mant, exp = f"{x:.1e}".split("e")
    return f"{mant}e{int(exp)}"


def _x_cupy(r: Row, cupy: Row | None, shape: Shape) -> float | None:
    if shape_of(r) == shape and (x := num(r.extra.get("x_cupy"))) is not None:
        return x
    if cupy is None or not cupy.median or not r.median:
        return None
    if shape_of(r) == shape_of(cupy):
        return cupy.median / r.median
    a, b = tflops(r), tflops(cupy)
    return a / b if a and b else None


def _groups(results: Results) -> list[tuple[str, Shape, list[Row]]]:
    """``(device, table shape, rows)`` of every corrcoef table, largest shapes last."""
    placed = table_shapes(_ok(results, "corrcoef"))
    groups = group_by(placed, lambda sr: (sr[1].device, sr[0]))
    return [(d, s, [r for _, r in groups[(d, s)]])
            for d, s in sorted(groups, key=lambda k: (k[0], k[1][0] * k[1][1], k[1]))]


def corr_tables(results: Results) -> list[Table]:
    """The corr table of every (device, shape)."""
    tables = []
    ok = _ok(results, "corrcoef")
    for device, shape, rows in _groups(results):
        ents = entries(rows)
        cupy = next((r for r in ents if r.variant == CUPY and shape_of(r) == shape), None)
        dtypes = ", ".join(sorted({str(r.params.get("dtype")) for r in rows}))
        data = ", ".join(sorted({str(r.params.get("data")) for r in rows}))
        t = Table(f"corrcoef: {dims(*shape)} — {dtypes} input, {data} data"
                  f"{_suffix(ok, device)}",
                  ["precision", "variant", "provider", "time (ms)", "TFLOP/s", "ceiling",
                   "% of ceiling", "max abs error", "error bound", f"x {CUPY}"], [], "corr",
                  "corrcoef", {3: ".4g", 4: ".3g", 6: ".1f", 9: ".2f"},
                  note=f"the public call, {clock_of(rows)}, median; TFLOP/s counts "
                       "M (M + 1) / 2 · N multiply-adds (2 flops each) for every row; ceiling: "
                       "the measured DGEMM (float64 arithmetic) or SGEMM (otherwise; TF32 may "
                       "pass it) of the same run; max abs error against the float64 "
                       "coefficients, within the stated bound for every row shown (records "
                       "above it are failures); x " + CUPY + ": its time / this one's (for a "
                       "row measured at a smaller M: the ratio of TFLOP/s).")
        for r in ents:
            m = shape_of(r)[0]
            t.rows.append([precision_of(r),
                           r.variant + (f" (at M = {m:,})" if m != shape[0] else ""),
                           r.provider, r.median, tflops(r),
                           CEILING_NAMES.get(str(r.extra.get("ceiling_key")), "—"),
                           num(r.extra.get("pct_of_ceiling")), fmt_error(error_of(r)),
                           fmt_error(bound_of(r)), _x_cupy(r, cupy, shape)])
            t.row_keys.append(dims(*shape))
        tables.append(t)
    return tables


def pairs_tables(results: Results) -> list[Table]:
    """The corr_pairs runs (failed ones too, without a time): one short table."""
    rows = [r for r in results.rows if r.family == "corr_pairs"]
    if not rows:
        return []
    multi = len({r.device for r in rows}) > 1
    t = Table("corr_pairs: |r| ≥ threshold without the M × M matrix",
              (["device"] if multi else []) + [
                  "M", "N", "threshold", "variant", "time (ms)", "pairs found", "tiles checked",
                  "pairs checked", "max abs error", "error bound", "verified"], [],
              "corr_pairs", "corr_pairs",
              {0 + multi: ",.0f", 1 + multi: ",.0f", 4 + multi: ".4g", 5 + multi: ",.0f",
               6 + multi: ",.0f", 7 + multi: ",.0f"},
              note="the default call on clustered series (a shared factor per cluster plus "
                   f"noise), {clock_of(rows)}, median; verified on random tiles above the diagonal "
                   "against float64: every pair beyond threshold + bound found, none below "
                   "threshold - bound, values within the bound.")
    for r in sorted(rows, key=lambda r: (r.device, shape_of(r))):
        m, n = shape_of(r)
        t.rows.append(([r.device] if multi else []) + [
            float(m), float(n), num(r.params.get("threshold")), r.variant,
            r.median if r.ok else None, num(r.extra.get("pairs_found")),
            num(r.extra.get("checked_tiles")), num(r.extra.get("checked_pairs")),
            fmt_error(error_of(r)), fmt_error(bound_of(r)), r.ok])
        t.row_keys.append(dims(m, n))
    return [t]


def all_corr_tables(results: Results) -> list[Table]:
    """Every corr table, in page order."""
    return corr_tables(results) + pairs_tables(results)


# --- figures --------------------------------------------------------------------------------

def plot_time_and_error(rows: Sequence[Row], shape: Shape, path: Path, *,
                        title: str) -> Path | None:
    """Two panels sharing one row per (variant, precision): the time (log x) on the left, the
    max abs error (log x) on the right with the stated bound as a black tick; warplab's bars in
    the blue of their precision, comparators in orange. None without two such rows."""
    ents = [r for r in entries(rows) if r.median and r.median > 0]
    if len(ents) < 2:
        return None
    n = len(ents)
    fig = Figure(figsize=(12.0, 1.9 + 0.34 * n), dpi=DPI, layout="constrained")
    ax_t, ax_e = fig.subplots(1, 2, sharey=True, gridspec_kw={"width_ratios": [1, 1]})
    ys = list(range(n))[::-1]
    colors = [COMPARATOR_COLOR if r.provider != "warplab"
              else PRECISION_COLORS.get(precision_of(r), "0.5") for r in ents]
    times = [r.median for r in ents]
    ax_t.barh(ys, times, color=colors, height=0.7)
    ax_t.set_xscale("log")
    ax_t.set_xlim(min(times) / 3, max(times) * 12)
    for y, v in zip(ys, times):
        ax_t.annotate(fmt_ms(v), (v, y), xytext=(3, 0), textcoords="offset points",
                      va="center", fontsize=TICK_PT - 0.5)
    errs = [error_of(r) for r in ents]
    bounds = [bound_of(r) for r in ents]
    pos = [e for e in errs + bounds if e]
    floor = min(pos) / 300 if pos else 1e-16  # every bar long enough to hold its value
    ax_e.barh(ys, [max(e or 0.0, floor) for e in errs], color=colors, height=0.7)
    for y, e, c in zip(ys, errs, colors):  # inside the bar's end: clear of the bound ticks
        ax_e.annotate(fmt_error(e), (max(e or 0.0, floor), y), xytext=(-3, 0),
                      textcoords="offset points", ha="right", va="center",
                      fontsize=TICK_PT - 0.5, color="k" if c in LIGHT else "w")
    marked = [(y, b) for y, b in zip(ys, bounds) if b]
    ax_e.plot([b for _, b in marked], [y for y, _ in marked], linestyle="none", marker="|",
              markersize=14, markeredgewidth=2.2, color="k")
    ax_e.set_xscale("log")
    ax_e.set_xlim(floor / 2, max(pos + [floor]) * 10)
    _bands(ax_t, ax_e, ents, ys)
    ax_t.set_yticks(ys, [_text(label(r, shape)) for r in ents], fontsize=TICK_PT)
    ax_t.set_xlabel("time per call, median (log scale)", fontsize=LABEL_PT)
    ax_e.set_xlabel("max abs error vs float64 (log scale)", fontsize=LABEL_PT)
    for ax in (ax_t, ax_e):
        ax.tick_params(axis="x", labelsize=TICK_PT)
        ax.grid(True, axis="x", which="major", alpha=0.3)
        ax.set_ylim(-0.6, n - 0.4)
    ax_t.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: fmt_ms(v)))
    present = [p for p in PRECISIONS if any(r.provider == "warplab" and precision_of(r) == p
                                            for r in ents)]
    handles: list[Any] = [Patch(color=PRECISION_COLORS[p], label=f"warplab, {p}")
                          for p in present]
    if any(r.provider != "warplab" for r in ents):
        handles.append(Patch(color=COMPARATOR_COLOR, label="comparator"))
    if marked:
        handles.append(Line2D([], [], color="k", marker="|", linestyle="none", markersize=12,
                              markeredgewidth=2.2, label="stated error bound"))
    fig.suptitle(_text(wrap_title(title, 12.0)), fontsize=TITLE_PT)
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles),
               fontsize=LEGEND_PT, frameon=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return path


def _bands(ax_t: Any, ax_e: Any, ents: Sequence[Row], ys: Sequence[int]) -> None:
    """A light band behind every other precision group, and the group's name at its top."""
    groups = group_by(zip(ents, ys), lambda ry: precision_of(ry[0]))
    for i, (p, members) in enumerate(groups.items()):
        top, bottom = max(y for _, y in members), min(y for _, y in members)
        for ax in (ax_t, ax_e):
            if i % 2 == 0:
                ax.axhspan(bottom - 0.5, top + 0.5, color="0.95", zorder=0, linewidth=0)
        ax_t.annotate(p, (1.0, top + 0.45), xycoords=("axes fraction", "data"),
                      xytext=(-3, 0), textcoords="offset points", ha="right", va="top",
                      fontsize=TICK_PT - 0.5, color="0.35", style="italic")


def corr_figures(results: Results, name: Callable[..., Path],
                 skipped: list[SkippedFigure]) -> list[CorrFigure]:
    """The time-and-error figure of every (device, shape); ``name(*parts)`` gives paths; the
    shapes with fewer than two rows to compare are noted in ``skipped``."""
    out: list[CorrFigure] = []
    multi = len({r.device for r in _ok(results, "corrcoef")}) > 1
    for device, shape, rows in _groups(results):
        cfg = (("m", shape[0]), ("n", shape[1])) + ((("device", device),) if multi else ())
        title = (f"corrcoef: time and max abs error per precision — {dims(*shape)}"
                 + (f" — {device}" if multi else ""))
        ents = entries(rows)
        if len(ents) < 2:
            skipped.append(SkippedFigure(
                "corrcoef", "time_error", cfg, title,
                f"one bar ({ents[0].variant} at {precision_of(ents[0])} alone): the table "
                "gives its time and error"))
            continue
        path = name("corrcoef", "time_error", f"{shape[0]}x{shape[1]}",
                    *([device] if multi else []))
        got = plot_time_and_error(rows, shape, path, title=title)
        if got is not None:
            out.append(("corrcoef", "time_error", cfg, title, got,
                        tuple(label(r, shape) for r in ents)))
    return out


# --- summary --------------------------------------------------------------------------------

def _rate(r: Row) -> float:
    return tflops(r) or 0.0


def headline_picks(rows: Sequence[Row]) -> list[Pick]:
    """Per precision measured: at the largest shape where warplab and a comparator both ran
    (else the largest), the fastest warplab variant of that precision (by effective FLOP/s, so a
    record at a smaller M compares fairly) against the fastest comparator of any precision;
    the spread is that ratio over every shape."""
    rows = [r for r in rows if r.ok and _rate(r) > 0]
    by_shape = group_by(table_shapes(rows), lambda sr: sr[0])
    shapes = {s: [r for _, r in srs] for s, srs in by_shape.items()}
    both = [s for s, rs in shapes.items()
            if {r.provider == "warplab" for r in rs} == {True, False}]
    if not shapes:
        return []
    top = max(both or list(shapes), key=lambda s: (s[0], s[1]))
    picks = []
    for p in PRECISIONS + tuple(sorted({precision_of(r) for r in rows} - set(PRECISIONS))):
        mine = [r for r in shapes[top] if r.provider == "warplab" and precision_of(r) == p]
        if not mine:
            continue
        best = max(mine, key=_rate)
        rivals = [r for r in shapes[top] if r.provider != "warplab"]
        rival = max(rivals, key=_rate) if rivals else None
        ratios = []
        for s in both:
            a = [r for r in shapes[s] if r.provider == "warplab" and precision_of(r) == p]
            b = [r for r in shapes[s] if r.provider != "warplab"]
            if a:
                ratios.append(max(map(_rate, a)) / max(map(_rate, b)))
        spread = (min(ratios), max(ratios), len(ratios)) if ratios else None
        picks.append(Pick((("m", top[0]), ("n", top[1]), ("precision", p)), top[0], best,
                          rival, spread, f"precision {p}, {dims(*top)}"))
    return picks


def who(r: Row) -> str:
    """A corrcoef record for the summary: variant, precision, time and error."""
    return f"{r.variant} {precision_of(r)}, {fmt_ms(r.median or 0.0)}, err {fmt_error(error_of(r))}"


__all__ = ["CORR_KINDS", "all_corr_tables", "corr_figures", "corr_tables", "entries",
           "headline_picks", "pairs_tables", "plot_time_and_error", "table_shapes", "who"]

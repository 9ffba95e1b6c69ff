"""Figures and tables of the series campaign (``lab/campaigns/series/bench.py``).

Its records are shapes (``params.m`` series of ``params.n`` values), so the generic per-config
figures and tables, whose x axis is ``size``, skip these families (``groups.SERIES_FAMILIES``):

- ``random_walk``: the generation table (report §3): kernel time, GB/s written, % of the copy
  ceiling, speedup vs ``k1_thread_per_series`` on the same shape and device.
- ``reduce_axis``: per shape the K2 table of ``mean(axis=1)`` (report §4): step and cumulative
  speedups in the report's order from ``k2_basic`` (``groups.CANONICAL_ORDER``), GB/s read, % of
  the measured *read* ceiling (``meta.ceilings.read_gbps``); its step chart; the public call
  timed back to back (``params.mode == "calls"``); and the bandwidth-vs-shape figure: GB/s per
  variant vs the row length N at a fixed total size, the measured read ceiling as the roof.
- ``series_accuracy``: the accuracy table (report §4.7): per (M, N, eps) and case the share of
  series whose sum lies within eps of the float64 sum (record key ``accuracy``, 0..1) and the
  kernel time.
- ``series_baseline``: the sequential baseline (report §1.2.1), host-timed steps; pair steps
  extrapolated from a sample of pairs (``params.extrapolated``, ``params.sample_pairs``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from warplab.lab.report.figures import Styles, _finish, _log_axes, _new_axes, _text, plot_step_speedup
from warplab.lab.report.groups import (
    CANONICAL_ORDER, fmt_size, group_by, latest, ordered_series, ordered_variants, step_speedups,
    styles_for,
)
from warplab.lab.report.load import Results, Row, num
from warplab.lab.report.roofline import device_ceilings
from warplab.lab.report.tables import Table, fmt_rel_error
from warplab.lab.report.units import clock_of, fmt_bandwidth

K1 = "k1_thread_per_series"
K2_BASELINE = "k2_basic"
STEP_ORDER = ("generation", "mean", "norm", "numerator", "coefficient")
CASE_ORDER = ("float32 K2", "float64 K2", "default", "default dtype=float64", "numpy float32")
# (family, kind, config, title, path, series): gallery turns these into FigureRefs
SeriesFigure = tuple[str, str, tuple[tuple[str, Any], ...], str, Path, tuple[str, ...]]


def dim(n: int) -> str:
    """A dimension as text: ``2^k`` for powers of two from 2^16 on, else the number."""
    return fmt_size(n) if n >= 1 << 16 and n & (n - 1) == 0 else str(n)


def shape_of(r: Row) -> tuple[int, int]:
    """``(m, n)`` of a series record (0 where missing)."""
    return int(num(r.params.get("m")) or 0), int(num(r.params.get("n")) or 0)


def shape_label(m: int, n: int) -> str:
    """``"8192 x 8192"``, ``"2^20 x 32"``, ``"16 x 2^24"``."""
    return f"{dim(m)} x {dim(n)}"


def _ok(results: Results, family: str, mode: str | None = "kernel") -> list[Row]:
    return [r for r in results.rows if r.family == family and r.ok
            and (mode is None or r.params.get("mode", "kernel") == mode)]


def _suffix(rows: Sequence[Row], device: str) -> str:
    return f" — {device}" if len({r.device for r in rows}) > 1 else ""


def read_ceiling(results: Results, device: str) -> float | None:
    """The measured read bandwidth (GB/s) of ``device``, or None."""
    return num(device_ceilings(results.sources, device).get("read_gbps"))


def _pct_read(r: Row, read: float | None) -> float | None:
    pct = num(r.extra.get("pct_of_read_bw"))
    if pct is None and r.gbps and read:
        pct = 100.0 * r.gbps / read
    return pct


# --- tables ---------------------------------------------------------------------------------

def _clock_held(rows: list) -> str:
    """How the kernel times were taken (GPU kernels are held behind a blocking kernel)."""
    clock = clock_of(rows)
    return clock + (", held behind a blocking kernel" if clock == "CUDA events" else "")


def generation_tables(results: Results) -> list[Table]:
    """One table per device and dtype: every random_walk variant at every shape."""
    ok = _ok(results, "random_walk")
    tables = []
    for (device, dtype), rows in sorted(group_by(ok, lambda r: (r.device, r.params.get(
            "dtype"))).items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        order = ordered_variants("random_walk", rows)
        t = Table(f"random_walk: generation — {dtype}{_suffix(ok, device)}",
                  ["shape", "variant", "time (ms)", "GB/s written", "% of copy BW",
                   f"x {K1}", "rel. error", "checked rows"], [], "generation", "random_walk",
                  {2: ".4g", 3: ".1f", 4: ".1f", 5: ".2f"},
                  note=f"kernel median ({_clock_held(rows)}); GB/s = M N itemsize bytes "
                       "written / median; speedup vs K1 "
                       f"({K1}, block 1024) on the same shape; rel. error against the NumPy "
                       "reference on the checked rows.")
        for shape, srows in sorted(group_by(rows, shape_of).items(),
                                   key=lambda kv: (kv[0][0] * kv[0][1], kv[0][1])):
            at = latest(srows, lambda r: r.variant)
            base = at[K1].median if K1 in at else None
            for v in (v for v in order if v in at):
                r = at[v]
                t.rows.append([shape_label(*shape), v, r.median, r.gbps, r.pct_of_copy_bw,
                               base / r.median if base and r.median else None,
                               fmt_rel_error(r.rel_error), r.params.get("checked_rows")])
                t.row_keys.append(shape_label(*shape))
        tables.append(t)
    return tables


def mean_tables(results: Results) -> list[Table]:
    """The K2 table of every (device, dtype, op, shape): steps in the report's order."""
    ok = _ok(results, "reduce_axis")
    tables = []
    groups = group_by(ok, lambda r: (r.device, str(r.params.get("dtype")),
                                     str(r.params.get("op")), shape_of(r)))
    for (device, dtype, op, shape) in sorted(groups, key=lambda k: (k[0], k[1], k[2],
                                                                    k[3][0] * k[3][1], k[3][1])):
        rows = groups[(device, dtype, op, shape)]
        read = read_ceiling(results, device)
        size, steps = step_speedups("reduce_axis", rows, K2_BASELINE)
        if size is None:  # no k2_basic row (e.g. the cpu backend): times only
            at = latest(rows, lambda r: r.variant)
            items = [(at[v], None, None) for v in ordered_variants("reduce_axis", rows)]
        else:
            items = [(s.row, s.step, s.cumulative) for s in steps]
        t = Table(f"reduce_axis: {op}(axis=1) — {dtype} {shape_label(*shape)}"
                  f"{_suffix(ok, device)}",
                  ["variant", "time (ms)", "step speedup", "cumulative speedup", "GB/s read",
                   "% of read BW", "% of read BW, same bytes", "rel. error", "held"], [],
                  "series_mean", "reduce_axis",
                  {1: ".4g", 2: ".2f", 3: ".2f", 4: ".1f", 5: ".1f", 6: ".1f"},
                  note=f"kernel median; step: previous kernel in the report's order "
                       f"({' -> '.join(CANONICAL_ORDER['reduce_axis'])}) / this one; "
                       f"cumulative: {K2_BASELINE} / this one; comparators get the cumulative "
                       "only; GB/s = M N itemsize bytes read / median; % of the measured read "
                       "ceiling (1 GiB), and of the same read kernel over this input's bytes "
                       "(inputs from 16 MiB; a shorter read pays the same ramp-up and tail; "
                       "above 100: faster than that read kernel, which loads without the L2 "
                       "prefetch hint); "
                       "rel. error: max over series of |mean - float64 mean| / |float64 "
                       "mean|.")
        for r, step, cum in items:
            t.rows.append([r.variant, r.median, step, cum, r.gbps, _pct_read(r, read),
                           num(r.extra.get("pct_of_read_same_bytes")),
                           fmt_rel_error(r.rel_error), r.params.get("held")])
            t.row_keys.append(shape_label(*shape))
        tables.append(t)
    return tables


def call_tables(results: Results) -> list[Table]:
    """The public call on device input, back to back (``params.mode == "calls"``)."""
    ok = _ok(results, "reduce_axis", "calls")
    if not ok:
        return []
    t = Table("reduce_axis: the public call on device input, back to back",
              ["device", "shape", "dtype", "op", "call", "provider", "per call (us)", "GB/s read",
               "% of read BW", "calls per timing", "rel. error"], [], "series_calls",
              "reduce_axis", {6: ".1f", 7: ".1f", 8: ".1f"},
              note="CUDA events around a batch of back-to-back calls (dispatch, launches and "
                   "allocation included), divided by the batch; median over batches.")
    for r in sorted(ok, key=lambda r: (r.device, shape_of(r)[0] * shape_of(r)[1],
                                       shape_of(r)[1], r.provider != "warplab", r.variant)):
        p = r.params
        t.rows.append([r.device, shape_label(*shape_of(r)), p.get("dtype"), p.get("op"),
                       r.variant, r.provider, 1e3 * r.median if r.median else None, r.gbps,
                       _pct_read(r, read_ceiling(results, r.device)), p.get("calls"),
                       fmt_rel_error(r.rel_error)])
        t.row_keys.append(shape_label(*shape_of(r)))
    return [t]


def _case_key(case: str) -> tuple[int, str]:
    return (CASE_ORDER.index(case) if case in CASE_ORDER else len(CASE_ORDER), case)


def accuracy_tables(results: Results) -> list[Table]:
    """Per device: for every (M, N, eps) the share of series within eps, per case."""
    ok = [r for r in _ok(results, "series_accuracy") if num(r.extra.get("accuracy")) is not None]
    tables = []
    for device, rows in sorted(group_by(ok, lambda r: r.device).items()):
        cases = sorted({str(r.params.get("case")) for r in rows}, key=_case_key)
        bounded = any(num(r.extra.get("rounding_bound")) is not None for r in rows)
        cols = ["M", "N", "eps"]
        for c in cases:
            cols += [f"{c}: accuracy %", f"{c}: ms"]
        if bounded:
            cols.append("float32 result bound %")
        t = Table(f"series_accuracy: share of series sums within eps{_suffix(ok, device)}",
                  cols, [], "accuracy", "series_accuracy",
                  {i: (".2f" if i % 2 or (bounded and i == len(cols) - 1) else ".4g")
                   for i in range(3, len(cols))},
                  note="accuracy: share of the M series whose sum lies within eps (absolute) of "
                       "the float64 sum of the same values; ms: kernel median of the sums. Data: "
                       "random walks from 100 (eps is the tolerance, not the walk's step). "
                       + "; ".join(f"{c}: {_case_note(rows, c)}" for c in cases)
                       + ("; float32 result bound: the share the float64 sum rounded to float32 "
                          "reaches (no float32 result does better)" if bounded else "") + ".")
        keyed = group_by(rows, lambda r: (shape_of(r), num(r.params.get("tol"))))
        for (shape, tol), krows in keyed.items():
            at = latest(krows, lambda r: str(r.params.get("case")))
            cells: list[Any] = [shape[0], shape[1], f"{tol:.0e}" if tol else tol]
            for c in cases:
                r = at.get(c)
                acc = num(r.extra.get("accuracy")) if r else None
                cells += [None if acc is None else 100.0 * acc, r.median if r else None]
            if bounded:
                bound = next((b for r in krows if (b := num(r.extra.get("rounding_bound")))
                              is not None), None)
                cells.append(None if bound is None else 100.0 * bound)
            t.rows.append(cells)
            t.row_keys.append(shape_label(*shape))
        tables.append(t)
    return tables


def _case_note(rows: Sequence[Row], case: str) -> str:
    r = next(r for r in rows if str(r.params.get("case")) == case)
    return (f"{r.variant} on {r.params.get('dtype')} data, accumulating in "
            f"{r.params.get('acc', '?')}, {r.params.get('result', '?')} result")


def baseline_tables(results: Results) -> list[Table]:
    """The sequential baseline per device and shape: seconds per step, and their total."""
    ok = _ok(results, "series_baseline")
    tables = []
    for (device, shape), rows in sorted(group_by(ok, lambda r: (r.device, shape_of(r))).items()):
        at = latest(rows, lambda r: str(r.params.get("step")))
        steps = [s for s in STEP_ORDER if s in at] + sorted(set(at) - set(STEP_ORDER))
        t = Table(f"series_baseline: sequential steps (NumPy) — {shape_label(*shape)}"
                  f"{_suffix(ok, device)}",
                  ["step", "time (s)", "extrapolated", "timed pairs", "pairs"], [], "baseline",
                  "series_baseline", {1: ".5f"},
                  note="host clock, median of the runs; pair steps (one dot product or one "
                       "coefficient per pair i < j) are timed on a random sample of pairs and "
                       "scaled to all M (M - 1) / 2 pairs.")
        total = 0.0
        for s in steps:
            r, p = at[s], at[s].params
            total += (r.median or 0.0) / 1e3
            t.rows.append([s, (r.median or 0.0) / 1e3, bool(p.get("extrapolated")),
                           p.get("sample_pairs"), p.get("pairs")])
        t.rows.append(["total", total, any(bool(at[s].params.get("extrapolated"))
                                           for s in steps), None, None])
        t.row_keys += [shape_label(*shape)] * (len(steps) + 1)
        tables.append(t)
    return tables


def series_tables(results: Results) -> list[Table]:
    """Every series table, in page order."""
    return (generation_tables(results) + mean_tables(results) + call_tables(results)
            + accuracy_tables(results) + baseline_tables(results))


# --- figures --------------------------------------------------------------------------------

def plot_bandwidth_vs_shape(rows: Sequence[Row], path: Path, *, title: str, styles: Styles,
                            order: Sequence[str], read_gbps: Mapping[str, float],
                            xlabel: str = "row length N (elements)") -> Path | None:
    """GB/s vs the row length N, one line per series, the measured read ceiling of each device
    in ``rows`` as a horizontal roof. None when no ok row has a positive ``gbps``."""
    pts: dict[str, list[tuple[int, float]]] = {}
    for s in order:
        by_n = {shape_of(r)[1]: r.gbps for r in rows if r.ok and r.series == s and r.gbps
                and r.gbps > 0 and shape_of(r)[1] > 0}
        if by_n:
            pts[s] = sorted(by_n.items())
    if not pts:
        return None
    fig, ax = _new_axes()
    xs: list[int] = []
    for s, p in pts.items():
        ax.plot([q[0] for q in p], [q[1] for q in p], label=_text(s), markersize=3,
                linewidth=1.3, **dict(styles.get(s, {})))
        xs += [q[0] for q in p]
    devices = sorted({r.device for r in rows if r.ok})
    roofs = [(d, read_gbps[d]) for d in devices if read_gbps.get(d)]
    for d, c in roofs:
        label = (f"measured read bandwidth ({fmt_bandwidth(c)})"
                 + (f" — {_text(d)}" if len(roofs) > 1 else ""))
        ax.axhline(c, color="k", linestyle="-", linewidth=1.2, label=label)
    _log_axes(ax, xs)
    return _finish(fig, ax, path, title, xlabel, "bandwidth read (GB/s)")


def series_figures(results: Results, name: Callable[..., Path]) -> list[SeriesFigure]:
    """The bandwidth-vs-shape figures and the K2 step charts; ``name(*parts)`` gives paths."""
    ok = _ok(results, "reduce_axis")
    out: list[SeriesFigure] = []
    if not ok:
        return out
    styles = styles_for("reduce_axis", ok)
    reads = {d: v for d in {r.device for r in ok} if (v := read_ceiling(results, d))}
    by_kind = group_by(ok, lambda r: (str(r.params.get("dtype")), str(r.params.get("op"))))
    for (dtype, op), rows in sorted(by_kind.items()):
        made = False
        totals = group_by(rows, lambda r: shape_of(r)[0] * shape_of(r)[1])
        for total in sorted(totals):
            trows = totals[total]
            if len({shape_of(r)[1] for r in trows}) < 2:
                continue
            cfg = (("dtype", dtype), ("op", op), ("total", total))
            title = (f"reduce_axis: {op}(axis=1) bandwidth vs row length — {dtype}, "
                     f"M x N = {fmt_size(total)}")
            order = _order(trows)
            path = plot_bandwidth_vs_shape(trows, name("reduce_axis", "shape", dtype, op,
                                                       f"total-{total}"),
                                           title=title, styles=styles, order=order,
                                           read_gbps=reads,
                                           xlabel=f"row length N (M = {fmt_size(total)} / N)")
            if path is not None:
                made = True
                out.append(("reduce_axis", "shape", cfg, title, path, tuple(order)))
        if not made and len({shape_of(r)[1] for r in rows}) > 1:
            cfg = (("dtype", dtype), ("op", op))
            title = (f"reduce_axis: {op}(axis=1) bandwidth vs row length — {dtype}, "
                     "every shape (total sizes differ)")
            order = _order(rows)
            path = plot_bandwidth_vs_shape(rows, name("reduce_axis", "shape", dtype, op, "all"),
                                           title=title, styles=styles, order=order,
                                           read_gbps=reads)
            if path is not None:
                out.append(("reduce_axis", "shape", cfg, title, path, tuple(order)))
    out += _step_figures(ok, name)
    return out


def _order(rows: Sequence[Row]) -> list[str]:
    return ordered_series("reduce_axis", rows)


def _step_figures(ok: Sequence[Row], name: Callable[..., Path]) -> list[SeriesFigure]:
    out: list[SeriesFigure] = []
    groups = group_by(ok, lambda r: (r.device, str(r.params.get("dtype")),
                                     str(r.params.get("op")), shape_of(r)))
    multi = len({r.device for r in ok}) > 1
    for key in sorted(groups, key=lambda k: (k[0], k[1], k[2], k[3][0] * k[3][1], k[3][1])):
        device, dtype, op, (m, n) = key
        rows = groups[key]
        if not any(r.variant == K2_BASELINE for r in rows):
            continue
        cfg = (("dtype", dtype), ("op", op), ("m", m), ("n", n))
        title = (f"reduce_axis: K2 step speedups, {op}(axis=1) — {dtype} {shape_label(m, n)}"
                 + (f" — {device}" if multi else ""))
        path = name("reduce_axis", "step", dtype, op, f"{m}x{n}", *([device] if multi else []))
        got = plot_step_speedup(rows, path, family="reduce_axis", title=title,
                                baseline=K2_BASELINE)
        if got is not None:
            out.append(("reduce_axis", "step", cfg, title, got, tuple(_order(rows))))
    return out


__all__ = ["accuracy_tables", "baseline_tables", "call_tables", "dim",
           "generation_tables", "mean_tables", "plot_bandwidth_vs_shape", "series_figures",
           "series_tables", "shape_label"]

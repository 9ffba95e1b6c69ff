"""Figures and tables of the latency campaign (``lab/campaigns/latency/bench.py``, docs/latency.md).

Its records are small public calls, one per case (``params.case``: ``sum_1k``, ``matmul_64``, …;
``floor`` for the bare launch), mode and implementation (``provider``: warplab, cupy, torch),
timed on the host clock: ``params.mode`` ``call_latency`` (the call and its result usable on the
host) or ``host_per_call`` (calls back to back, no wait for the device). The samples are in
``phases.total``; there is no kernel phase, no size axis, no bytes and no rate. So the generic
per-size figures and tables, the summary's rate table and the roofline skip this family
(``groups.LATENCY_FAMILIES``) and this module draws, per device:

- per case a figure with two panels, call latency and host time per call: warplab's, CuPy's and
  PyTorch's medians in µs as bars, the floor of the same run (an empty CuPy launch, and the
  launch with a 4-byte D2H into pinned memory; the same empty kernel on warplab's own launch
  path, and that with a 0-d result object) as reference lines;
- per mode the table ``warplab latency`` prints: warplab / cupy / torch medians (µs) and
  warplab ÷ torch, the median of the per-round ratios (the rounds interleave the
  implementations, so host drift cancels in each ratio; the ratio of the medians where the
  rounds do not pair up), and whether the case meets the latency target;
- the targets table: which cases meet the latency targets, call latency and host time per
  call each <= PyTorch's (CuPy's where PyTorch has no op).

Every number is a median of host-clock samples; a record that failed verification is never
drawn or tabulated here (the failures table lists it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from matplotlib.figure import Figure

from warplab.lab.harness.stats import paired_or_pooled
from warplab.lab.report.groups import LATENCY_FAMILIES
from warplab.lab.report.load import Results, Row, num
from warplab.lab.report.plotkit import DPI, LABEL_PT, TICK_PT, _text, finish_panels
from warplab.lab.report.skips import SkippedFigure
from warplab.lab.report.tables import Table
from warplab.lab.report.units import sig3

MODES = ("call_latency", "host_per_call")
MODE_TITLES = {"call_latency": "call latency", "host_per_call": "host time per call"}
MODE_WHAT = {"call_latency": "the call and its result usable on the host",
             "host_per_call": "calls back to back, no wait for the device"}
FLOOR_CASE = "floor"
FLOORS = (("floor", "floor: empty launch", "--"),
          ("floor_d2h", "floor: launch + 4-byte D2H to pinned", ":"),
          ("floor_launch", "floor: warplab's launch", "-."),
          ("floor_result", "floor: warplab's launch + 0-d result", "--"))
#: warplab's own floors in a blue of its bars; CuPy's in near-black
FLOOR_COLORS = {"floor_launch": "#174a7e", "floor_result": "#174a7e"}
PROVIDERS = ("warplab", "cupy", "torch")
PROVIDER_COLORS = {"warplab": "#1f77b4", "cupy": "#ff7f0e", "torch": "#d62728"}
LATENCY_KINDS = ("latency",)
Cells = dict[tuple[str, str], Row]  # (mode, provider; the floor case: variant) -> newest row
# (family, kind, config, title, path, series): gallery turns these into FigureRefs
LatencyFigure = tuple[str, str, tuple[tuple[str, Any], ...], str, Path, tuple[str, ...]]


def us(r: Row | None) -> float | None:
    """A record's median in µs (None without one)."""
    v = r.stat("total") if r is not None else None
    return None if v is None else 1e3 * v


def latency_rows(results: Results) -> list[Row]:
    """Verified latency records with a total median."""
    return [r for r in results.rows if r.family in LATENCY_FAMILIES and r.ok
            and r.stat("total") is not None]


def _key(r: Row) -> str:
    return r.variant if r.params.get("case") == FLOOR_CASE else r.provider


def cases(rows: Sequence[Row]) -> dict[str, dict[str, Cells]]:
    """Device -> case -> cells, cases in the order they were run; where runs repeat a case the
    record read last wins."""
    out: dict[str, dict[str, Cells]] = {}
    for r in rows:
        case = str(r.params.get("case") or r.variant)
        cell = out.setdefault(r.device, {}).setdefault(case, {})
        cell[(str(r.params.get("mode")), _key(r))] = r
    return out


def ratio(a: Row | None, b: Row | None) -> float | None:
    """``a / b`` as ``warplab latency`` prints it: the median of the per-round ratios (call
    latency: ``params.calls`` samples per round; host time per call: one burst per round), the
    ratio of the medians where the samples do not pair up or were not kept."""
    if a is None or b is None:
        return None
    per = int(num(a.params.get("calls")) or 1) if a.params.get("mode") == MODES[0] else 1
    sa, sb = a.samples.get("total", []), b.samples.get("total", [])
    if sa and sb:
        return paired_or_pooled(sa, sb, per)
    ma, mb = a.stat("total"), b.stat("total")
    return ma / mb if ma is not None and mb else None


def rival(cells: Cells, mode: str) -> Row | None:
    """The comparator of the call-latency target: PyTorch's record, else CuPy's."""
    return cells.get((mode, "torch")) or cells.get((mode, "cupy"))


def target_met(cells: Cells, mode: str) -> bool | None:
    """The latency target for one case and mode (call latency, host time per call): warplab's
    <= PyTorch's (CuPy's where PyTorch has no verified record), by the paired ratio. None
    without warplab's record or a comparator's."""
    w = cells.get((mode, "warplab"))
    if w is None:
        return None
    q = ratio(w, rival(cells, mode))
    return None if q is None else q <= 1.0


def _suffix(devices: Sequence[str], device: str) -> str:
    return f" — {device}" if len(devices) > 1 else ""


def floor_text(cells: Cells | None, mode: str) -> str:
    """``"floor (same run): empty launch 12.3 µs, with a 4-byte D2H to pinned 18.2 µs"``, or
    "" when the floor was not measured (the cpu backend)."""
    if not cells:
        return ""
    a, b, c, d = (us(cells.get((mode, v))) for v, _, _ in FLOORS)
    if a is None:
        return ""
    return (f"floor (same run): empty launch {sig3(a)} µs"
            + (f", with a 4-byte D2H to pinned {sig3(b)} µs" if b is not None else "")
            + (" (+ sync)" if mode == MODES[0] else " (no sync)")
            + (f"; on warplab's launch path {sig3(c)} µs" if c is not None else "")
            + (f", with a 0-d result {sig3(d)} µs" if c is not None and d is not None else "")
            + (" (+ sync, int())" if c is not None and mode == MODES[0] else ""))


def mode_tables(results: Results) -> list[Table]:
    """Per device and mode: one row per case, the medians (µs) of warplab and of the comparators
    measured, warplab ÷ torch (where torch ran) and the target."""
    tables: list[Table] = []
    by_device = cases(latency_rows(results))
    for device, by_case in by_device.items():
        real = {c: cells for c, cells in by_case.items() if c != FLOOR_CASE}
        for mode in MODES:
            provs = [p for p in PROVIDERS
                     if p == "warplab" or any((mode, p) in cells for cells in real.values())]
            torch = "torch" in provs
            target = "<= torch (cupy where torch has no op)"
            floor = floor_text(by_case.get(FLOOR_CASE), mode)
            n = len(provs)
            t = Table(f"latency: {MODE_TITLES[mode]}, µs (medians)"
                      + _suffix(list(by_device), device),
                      ["case", "input", *provs, *(["warplab ÷ torch"] if torch else []),
                       f"target: {target}"], [], "latency", "latency",
                      {**{2 + i: ".1f" for i in range(n)}, 2 + n: ".2f"},
                      note=f"{MODE_TITLES[mode].capitalize()}: {MODE_WHAT[mode]}; medians of "
                           "host-clock samples."
                           + (" warplab ÷ torch: the median of the per-round ratios (the "
                              "implementations take turns, so host drift cancels), as warplab "
                              "latency prints it." if torch else "")
                           + (f" {floor[:1].upper()}{floor[1:]}." if floor else ""))
            for case, cells in real.items():
                row = [cells.get((mode, p)) for p in provs]
                if not any(row):
                    continue
                what = next(r for r in row if r is not None).params.get("what") or ""
                torch_ratio = [ratio(row[0], row[-1])] if torch else []
                t.rows.append([case, str(what), *(us(r) for r in row), *torch_ratio,
                               target_met(cells, mode)])
                t.row_keys.append(case)
            if t.rows:
                tables.append(t)
    return tables


def targets(results: Results) -> list[tuple[str, str, list[str], int]]:
    """``(device, target in words, cases that meet it, cases judged)`` per device and mode."""
    out = []
    for device, by_case in cases(latency_rows(results)).items():
        for mode in MODES:
            judged = {c: target_met(cells, mode) for c, cells in by_case.items()
                      if c != FLOOR_CASE}
            judged = {c: v for c, v in judged.items() if v is not None}
            if not judged:
                continue
            words = f"{MODE_TITLES[mode]} <= torch (cupy where torch has no op)"
            out.append((device, words, [c for c, v in judged.items() if v], len(judged)))
    return out


def target_lines(results: Results) -> list[str]:
    """The targets in words, one line per device and mode: ``"call latency <= torch …: met by
    byte_hist_4k, series_stats_64 (2 of 11 cases)"``."""
    ts = targets(results)
    multi = len({t[0] for t in ts}) > 1
    return [(f"{device}: " if multi else "") + f"{words}: "
            + (f"met by {', '.join(met)}" if met else "met by none")
            + f" ({len(met)} of {n} cases)" for device, words, met, n in ts]


def targets_table(results: Results) -> list[Table]:
    """The latency targets: which cases meet them (medians; call latency by the paired ratio)."""
    ts = targets(results)
    if not ts:
        return []
    multi = len({t[0] for t in ts}) > 1
    t = Table("latency: targets", (["device"] if multi else [])
              + ["target", "met by", "cases"], [], "latency", "latency",
              note="Medians of host-clock samples. Call latency is compared by the paired ratio "
                   "(the warplab ÷ torch column); host time per call includes the launch.")
    for device, words, met, n in ts:
        t.rows.append(([device] if multi else []) + [words, ", ".join(met) or "none",
                                                     f"{len(met)} of {n}"])
        t.row_keys.append(words)
    return [t]


def latency_tables(results: Results) -> list[Table]:
    """Every latency table, in page order."""
    return targets_table(results) + mode_tables(results)


# --- figures --------------------------------------------------------------------------------

def tick_label(cells: Cells, mode: str, provider: str) -> str:
    """``"warplab\nbyte_histogram"``, ``"cupy\nbincount"``: the provider over the call."""
    r = cells.get((mode, provider)) or next(
        (cells[(m, provider)] for m in MODES if (m, provider) in cells), None)
    if r is None:
        return provider
    call = r.variant.split(".", 1)[1] if r.variant.startswith(provider + ".") else r.variant
    return _text(f"{provider}\n{call}")


def _panel(ax: Any, cells: Cells, floor: Cells | None, mode: str, xs: Sequence[str],
           top: float) -> None:
    """One mode's bars (µs) with their values, and the floor lines."""
    for i, p in enumerate(xs):
        v = us(cells.get((mode, p)))
        if v is None:
            ax.text(i, top * 0.02, "not measured", ha="center", va="bottom", rotation=90,
                    fontsize=TICK_PT - 1, color="0.4")
            continue
        ax.bar(i, v, width=0.62, color=PROVIDER_COLORS.get(p, "0.5"))
        ax.text(i, v + top * 0.01, sig3(v), ha="center", va="bottom", fontsize=TICK_PT)
    for variant, label, style in FLOORS:
        f = us((floor or {}).get((mode, variant)))
        if f is not None:
            ax.axhline(f, color=FLOOR_COLORS.get(variant, "0.15"), linestyle=style,
                       linewidth=1.2, label=label)
    ax.set_xticks(range(len(xs)), [tick_label(cells, mode, p) for p in xs], fontsize=TICK_PT)
    ax.set_xlim(-0.6, len(xs) - 0.4)
    ax.set_ylim(0, top * 1.14)
    ax.set_title(MODE_TITLES[mode], fontsize=LABEL_PT)
    ax.tick_params(labelsize=TICK_PT)
    ax.grid(True, axis="y", alpha=0.3)


def plot_case(cells: Cells, floor: Cells | None, path: Path, *, title: str) -> Path | None:
    """Two panels (call latency, host time per call), bars per provider present, the floor as
    lines; None when nothing was measured."""
    xs = [p for p in PROVIDERS if any((m, p) in cells for m in MODES)]
    values = [v for m in MODES for p in xs if (v := us(cells.get((m, p)))) is not None]
    values += [v for m in MODES for f, _, _ in FLOORS
               if (v := us((floor or {}).get((m, f)))) is not None]
    if not xs or not values:
        return None
    width = 7.2
    fig = Figure(figsize=(width, 3.5), dpi=DPI, layout="constrained")
    axes = fig.subplots(1, 2, sharey=False)
    for ax, mode in zip(axes, MODES):
        here = [v for p in xs if (v := us(cells.get((mode, p)))) is not None]
        here += [v for f, _, _ in FLOORS if (v := us((floor or {}).get((mode, f)))) is not None]
        _panel(ax, cells, floor, mode, xs, max(here, default=max(values)))
    axes[0].set_ylabel("µs per call, median", fontsize=LABEL_PT)
    return finish_panels(fig, axes, path, title)


def latency_figures(results: Results, name: Callable[..., Path],
                    skipped: list[SkippedFigure]) -> list[LatencyFigure]:
    """A figure per device and case (in run order); a case with a single bar and no floor (the
    cpu backend: warplab alone) is noted in ``skipped`` instead (the tables give its numbers)."""
    out: list[LatencyFigure] = []
    by_device = cases(latency_rows(results))
    for device, by_case in by_device.items():
        floor = by_case.get(FLOOR_CASE)
        multi = len(by_device) > 1
        for case, cells in by_case.items():
            if case == FLOOR_CASE:
                continue
            what = next(iter(cells.values())).params.get("what")
            cfg = (("case", case),) + ((("device", device),) if multi else ())
            title = (f"latency: {case}" + (f" — {what}" if what else "")
                     + _suffix(list(by_device), device))
            providers = tuple(p for p in PROVIDERS if any((m, p) in cells for m in MODES))
            if len(providers) < 2 and not floor:
                skipped.append(SkippedFigure("latency", "latency", cfg, title,
                                             "one bar per panel (warplab alone, no floor): "
                                             "the tables give the numbers"))
                continue
            path = name("latency", case, *([device] if multi else []))
            got = plot_case(cells, floor, path, title=title)
            if got is not None:
                out.append(("latency", "latency", cfg, title, got, providers))
    return out


__all__ = ["LATENCY_KINDS", "MODES", "cases", "latency_figures", "latency_tables",
           "mode_tables", "plot_case", "ratio", "target_lines", "target_met", "targets",
           "targets_table", "us"]

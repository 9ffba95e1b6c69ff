"""The self-contained HTML page: inline CSS, figures as relative ``<img>`` links.

Page order: the summary (per family and device: warplab's best against the best comparator, %
of the measured roof, one headline figure each), devices and runs (each device once), failures,
the roofline, then one section per family (its main tables, its figures grouped by kind, the
figures not drawn and why, and the long tables folded). Every string that comes from a results
file is passed through :func:`html.escape` before it reaches the page.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Sequence

from warplab.lab.report.corr import CORR_KINDS
from warplab.lab.report.dask import DASK_KINDS
from warplab.lab.report.numpy import NUMPY_KINDS
from warplab.lab.report.devices import esc, render_devices
from warplab.lab.report.gallery import KIND_ORDER, FigureRef
from warplab.lab.report.groups import config_label, slug
from warplab.lab.report.latency import LATENCY_KINDS
from warplab.lab.report.load import Results
from warplab.lab.report.memcpy import MEMCPY_KINDS
from warplab.lab.report.roofline import NOTE as ROOFLINE_NOTE
from warplab.lab.report.skips import SkippedFigure
from warplab.lab.report.stream import STREAM_KINDS
from warplab.lab.report.summary import (
    NOT_SPEED, Headline, family_notes, headline_figure, headline_figures, headlines, size_text,
    summary_table,
)
from warplab.lab.report.tables import Table, render_table
from warplab.lab.report.units import fmt_ratio, fmt_timestamp

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:1.2em auto;max-width:1240px;
color:#1d1d1f;padding:0 1.2em;line-height:1.4}
h1{font-size:1.7em;margin:.2em 0}h2{border-bottom:2px solid #d8dde3;padding-bottom:.15em;
margin-top:1.8em}h3{margin:1.1em 0 .4em;font-size:1.08em}
p.scope{color:#444;margin:.2em 0 .5em}nav{font-size:.9em;margin-bottom:.8em;display:flex;flex-wrap:wrap;gap:.2em .9em}
nav a{color:#1f5fa8;text-decoration:none;white-space:nowrap}
table{border-collapse:collapse;margin:.5em 0 .2em;font-size:.84em;display:block;max-width:100%;overflow-x:auto}
th,td{border:1px solid #dde1e6;padding:.22em .5em;text-align:left;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums}th{background:#f3f5f7}
caption{text-align:left;font-weight:600;padding:.3em 0}
p.note,.note{font-size:.8em;color:#5f6368;margin:.15em 0 .9em}
table.summary{font-size:.92em;width:100%}table.summary th{background:#e9eef5}
table.summary td{padding:.35em .6em}table.summary .main{font-weight:600}
table.summary .sub{font-size:.82em;color:#5f6368;font-weight:400}
table.summary td.ratio{font-size:1.15em;font-weight:700;vertical-align:middle}
table.summary td.where .main{font-weight:400}table.summary td.num .main{white-space:nowrap}
.figs{display:grid;grid-template-columns:repeat(auto-fill,minmax(520px,1fr));gap:1em}
figure{margin:0}figure.wide{grid-column:1/-1}
figure img{width:100%;border:1px solid #e6e8eb;border-radius:3px}
figcaption{font-size:.8em;color:#555}
section#failures table{background:#fff7f7}
.device{border:1px solid #e3e6ea;border-radius:6px;padding:.2em 1em .6em;margin:.8em 0}
.device h3{margin:.5em 0 .2em}p.facts{margin:.1em 0 .4em;font-size:.9em}
table.ceilings td.how,table.ceilings td.span{color:#666;font-size:.92em}
p.versions,div.versions{font-size:.8em;color:#444;margin:.3em 0}
details{margin:.5em 0}summary{cursor:pointer}summary h3{display:inline}
.headline-figs{margin-bottom:.8em}.headline-figs h3{margin-bottom:0}
table.runs{font-size:.78em}.skipped{font-size:.82em;color:#5f6368}
.skipped ul{margin:.2em 0 .8em}.count{color:#888}
.wrap{overflow-x:auto}
"""

SERIES_KINDS = ("generation", "series_mean", "series_calls", "accuracy", "baseline")
KIND_TITLES = {
    "step": "Step speedups at the largest size",
    "throughput": "Throughput vs size",
    "bandwidth": "Bandwidth vs size",
    "shape": "Bandwidth vs row length at a fixed total size",
    "time_error": "Time and error per precision",
    "latency": "Call latency and host time per call, per case",
    "stream": "GB/s end to end vs size",
    "speedup": "Speedup vs baseline",
    "ratio": "letters / ascii128 time ratio",
    "time": "Kernel time vs size",
    "phases": "Phases at the largest size",
}


def _png_width(path: Path) -> int:
    try:
        with path.open("rb") as f:
            head = f.read(24)
        return struct.unpack(">I", head[16:20])[0] if head[:8] == b"\x89PNG\r\n\x1a\n" else 0
    except OSError:
        return 0


def _figure(ref: FigureRef, out_dir: Path, caption: str | None = None) -> str:
    try:
        src = ref.path.relative_to(out_dir).as_posix()
    except ValueError:
        src = ref.path.name
    wide = ' class="wide"' if _png_width(ref.path) > 900 else ""
    return (f'<figure{wide}><a href="{esc(src)}"><img src="{esc(src)}" alt="{esc(ref.title)}" '
            f'loading="lazy"></a><figcaption>{esc(caption or ref.title)}</figcaption></figure>')


def _two(main: str, sub: str, cls: str = "num") -> str:
    return (f'<td class="{cls}"><span class="main">{esc(main)}</span>'
            + (f'<br><span class="sub">{esc(sub)}</span>' if sub else "") + "</td>")


def render_summary(heads: Sequence[Headline]) -> str:
    """The summary table (:func:`warplab.lab.report.summary.summary_table`'s numbers), two lines
    per cell: the number, and what it is."""
    t = summary_table(heads)
    multi = "device" in t.columns
    cols = ["family"] + (["device"] if multi else []) + [
        "compared at", "best warplab", "best comparator", "warplab / comparator", "% of roof",
        "across configs"]
    out = [f'<table class="summary" data-family=""><caption>{esc(t.title)}</caption><thead><tr>'
           + "".join(f"<th>{esc(c)}</th>" for c in cols) + "</tr></thead><tbody>"]
    for h, row in zip(heads, t.rows):
        cell = dict(zip(t.columns, row))
        where = size_text(h)
        cfg, _, at = where.rpartition(", ") if h.config else ("", "", where)
        spread = ((f"{fmt_ratio(h.spread[0])} – {fmt_ratio(h.spread[1])}",
                   f"{h.spread[2]} configurations") if h.spread and h.spread[2] > 1
                  else ("—", ""))
        out.append(f'<tr data-config="{esc(h.family)}"><td><b>{esc(h.family)}</b></td>'
                   + (f"<td>{esc(h.device)}</td>" if multi else "")
                   + _two(at, cfg, "where")
                   + _two(cell["warplab rate"], cell["best warplab"])
                   + _two(cell["comparator rate"], cell["best comparator"])
                   + f'<td class="num ratio">{esc(cell["warplab / comparator"])}</td>'
                   + _two(cell["% of roof"], "of " + cell["roof (measured)"]
                          if h.roof else "roof not measured")
                   + _two(*spread) + "</tr>")
    out.append("</tbody></table>")
    if t.note:
        out.append(f'<p class="note">{esc(t.note)}</p>')
    return "\n".join(out)


def _summary_section(results: Results, heads: Sequence[Headline],
                     figures: Sequence[FigureRef], out_dir: Path) -> str:
    parts = ['<section id="summary"><h2>Summary</h2>']
    if heads:
        parts.append(f'<div class="wrap">{render_summary(heads)}</div>')
    else:
        parts.append('<p class="note">No family with a speed to summarise.</p>')
    other = [f for f in results.families() if f in NOT_SPEED]
    if other:
        parts.append(f'<p class="note">{esc(", ".join(other))}: accuracy and host baselines, not '
                     "speeds; see their sections.</p>")
    parts += [f'<p class="note family-note">{esc(line)}</p>' for line in family_notes(results)]
    figs, missing = [], []
    for h in heads:
        ref = headline_figure(h, figures)
        if ref is None:
            missing.append(h.family)
        elif ref not in figs:
            figs.append(ref)
    if figs:
        parts.append('<div class="figs headline">')
        parts += [_figure(f, out_dir) for f in figs]
        parts.append("</div>")
    if missing:
        parts.append(f'<p class="note">No headline figure for {esc(", ".join(missing))}: nothing '
                     "that can be drawn as a curve (see the family's tables and notes).</p>")
    parts.append("</section>")
    return "\n".join(parts)


def _skipped_note(skipped: Sequence[SkippedFigure]) -> str:
    if not skipped:
        return ""
    groups: dict[tuple[str, str], list[SkippedFigure]] = {}
    for s in skipped:
        groups.setdefault((s.kind, s.reason), []).append(s)
    items = []
    for (kind, reason), ss in groups.items():
        what = KIND_TITLES.get(kind, kind)
        configs = [config_label(s.config) for s in ss]
        where = ("; ".join(configs) if len(configs) <= 3
                 else f"{len(configs)} configurations")
        items.append(f"<li><b>{esc(what)}</b> ({esc(where)}): {esc(reason)}.</li>")
    return (f'<div class="skipped"><p>Figures not drawn ({len(skipped)}):</p><ul>'
            + "".join(items) + "</ul></div>")


def _figure_groups(figures: Sequence[FigureRef], heads: Sequence[Headline],
                   out_dir: Path) -> str:
    """A family's figures. With one configuration: all of them in one grid. With more: the
    headline configuration's figures first, then every kind as a folded group."""
    if not figures:
        return ""
    groups = [(k, [f for f in figures if f.kind == k]) for k in KIND_ORDER]
    groups = [(k, refs) for k, refs in groups if refs]
    configs = {f.config for f in figures}
    top: list[FigureRef] = []
    for h in heads:
        top += [f for f in headline_figures(h, figures) if f not in top]
    parts = []
    if len(configs) <= 1:  # one configuration: its figures side by side, in kind order
        parts.append('<h3>Figures</h3><div class="figs">')
        parts += [_figure(f, out_dir) for _, refs in groups for f in refs]
        parts.append("</div>")
        return "\n".join(parts)
    if top:
        where = "; ".join(dict.fromkeys(size_text(h) for h in heads))
        parts.append(f'<div class="headline-figs"><h3>Headline configuration</h3>'
                     f'<p class="note">{esc(where)}</p><div class="figs">')
        parts += [_figure(f, out_dir) for f in top]
        parts.append("</div></div>")
    for kind, refs in groups:
        is_open = "" if top else " open"
        n = f" ({len(refs)} figures)" if len(refs) > 1 else ""
        parts.append(f"<details{is_open} class=\"figgroup\" data-kind=\"{esc(kind)}\">"
                     f"<summary><h3>{esc(KIND_TITLES.get(kind, kind))}</h3>{esc(n)}</summary>"
                     '<div class="figs">')
        parts += [_figure(f, out_dir) for f in refs]
        parts.append("</div></details>")
    return "\n".join(parts)


def _family_section(family: str, figures: Sequence[FigureRef], tables: Sequence[Table],
                    skipped: Sequence[SkippedFigure], heads: Sequence[Headline],
                    out_dir: Path) -> str:
    fid = slug(family)
    parts = [f'<section id="family-{esc(fid)}" class="family"><h2>{esc(family)}</h2>']
    main = [t for t in tables
            if t.kind in ("speedup", "ratio", *SERIES_KINDS, *CORR_KINDS, *MEMCPY_KINDS,
                          *LATENCY_KINDS, *STREAM_KINDS, *DASK_KINDS,
                          *NUMPY_KINDS)]
    lecture = [t for t in tables if t.kind == "lecture"]
    if main or lecture:
        parts.append(f'<section id="tables-{esc(fid)}" class="tables">')
        parts += [f'<div class="wrap">{render_table(t)}</div>' for t in main]
        if len(lecture) > 2:
            parts.append(f"<details><summary>lecture tables ({len(lecture)} configurations)"
                         "</summary>")
        parts += [f'<div class="wrap">{render_table(t)}</div>' for t in lecture]
        if len(lecture) > 2:
            parts.append("</details>")
        parts.append("</section>")
    parts.append(_figure_groups(figures, heads, out_dir))
    parts.append(_skipped_note(skipped))
    for kind, label in (("glance", "results at a glance"),
                        ("medians", "kernel medians for every size")):
        ts = [t for t in tables if t.kind == kind]
        if ts:
            rows = sum(len(t.rows) for t in ts)
            parts.append(f"<details><summary>{label} ({rows} rows)</summary>")
            parts += [f'<div class="wrap">{render_table(t)}</div>' for t in ts]
            parts.append("</details>")
    parts.append("</section>")
    return "\n".join(p for p in parts if p)


def _roofline_section(figures: Sequence[FigureRef], tables: Sequence[Table],
                      out_dir: Path) -> str:
    """Roofline figures (one per device) and the achieved-vs-roof table; "" when none."""
    refs = [f for f in figures if f.kind == "roofline"]
    roof_tables = [t for t in tables if t.kind == "roofline"]
    if not refs and not roof_tables:
        return ""
    parts = ['<section id="roofline"><h2>Roofline</h2>',
             f'<p class="note">{esc(ROOFLINE_NOTE)}</p><div class="figs">']
    parts += [_figure(f, out_dir) for f in refs]
    parts.append("</div>")
    for t in roof_tables:
        parts.append(f"<details><summary>{esc(t.title)} ({len(t.rows)} points)</summary>"
                     f'<div class="wrap">{render_table(t)}</div></details>')
    parts.append("</section>")
    return "\n".join(parts)


def _scope(results: Results) -> str:
    ok, failed = len(results.ok_rows), len(results.failed_rows)
    n, devices = len(results.sources), sorted({s.device_name for s in results.sources})
    times = [fmt_timestamp(s.meta.get("timestamp")) for s in results.sources]
    when = times[0] if len(set(times)) == 1 else f"{times[0]} to {times[-1]}"
    return (f'<p class="scope">{ok:,} verified records, {failed:,} failed,'
            + f" from {n} results file{'s' if n > 1 else ''} · "
            f"{len(devices)} device{'s' if len(devices) > 1 else ''}: {esc(', '.join(devices))}"
            f" · families: {esc(', '.join(results.families()))} · {esc(when)}</p>")


def render_page(results: Results, figures: Sequence[FigureRef], tables: Sequence[Table],
                out_dir: Path, title: str = "warplab report",
                skipped: Sequence[SkippedFigure] = (),
                heads: Sequence[Headline] | None = None) -> str:
    """Render the whole report page.

    Args:
        results: Loaded results (for device meta, failures, skipped files).
        figures: Figures written into ``out_dir``.
        tables: Tables from :mod:`warplab.lab.report.tables`.
        out_dir: Directory the page is written to (image links are relative to it).
        title: Page title.
        skipped: Figures not drawn, with the reason (listed under their family).
        heads: The summary's headlines (default: computed from ``results``).

    Returns:
        The HTML document.
    """
    heads = headlines(results) if heads is None else heads
    fail = [t for t in tables if t.kind == "failures"]
    has_roof = any(f.kind == "roofline" for f in figures) or any(
        t.kind == "roofline" for t in tables)
    nav = [("summary", "Summary"), ("devices", "Devices and runs")]
    if fail:
        nav.append(("failures", f"Failures ({len(results.failed_rows)})"))
    if has_roof:
        nav.append(("roofline", "Roofline"))
    nav += [(f"family-{slug(f)}", f) for f in results.families()]
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>",
             f"<h1>{esc(title)}</h1>", _scope(results),
             "<nav>" + " ".join(f'<a href="#{esc(a)}">{esc(t)}</a>' for a, t in nav) + "</nav>",
             _summary_section(results, heads, figures, out_dir), render_devices(results)]
    if fail:
        parts.append('<section id="failures"><h2>Failures</h2>')
        parts += [f'<div class="wrap">{render_table(t)}</div>' for t in fail]
        parts.append("</section>")
    parts.append(_roofline_section(figures, tables, out_dir))
    for family in results.families():
        parts.append(_family_section(family, [f for f in figures if f.family == family],
                                     [t for t in tables if t.family == family],
                                     [s for s in skipped if s.family == family],
                                     [h for h in heads if h.family == family], out_dir))
    parts.append("</body></html>")
    return "\n".join(p for p in parts if p)

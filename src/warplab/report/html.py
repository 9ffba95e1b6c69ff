"""The self-contained HTML page: inline CSS, figures as relative ``<img>`` links.

Every string that comes from a results file is passed through
:func:`html.escape` before it reaches the page.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any, Sequence

from .gallery import FigureRef
from .groups import slug
from .load import Results, Source
from .roofline import NOTE as ROOFLINE_NOTE
from .tables import Table, render_table

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:1.5em auto;max-width:1200px;
color:#222;padding:0 1em}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0 .2em;font-size:.85em}
th,td{border:1px solid #ddd;padding:.25em .55em;text-align:left;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums}th{background:#f3f3f3}
caption{text-align:left;font-weight:600;padding:.3em 0}
p.note{font-size:.8em;color:#666;margin:.1em 0 1em}
.figs{display:flex;flex-wrap:wrap;gap:1em}
figure{margin:0;flex:1 1 520px;max-width:100%}figure img{width:100%;border:1px solid #eee}
figcaption{font-size:.8em;color:#555}
section#failures table{background:#fff5f5}
.meta{display:flex;flex-wrap:wrap;gap:1.5em}.meta table{font-size:.8em}
details{margin:.5em 0}
"""

# the series campaign's tables (report/series.py), shown with the other main tables
SERIES_KINDS = ("generation", "series_mean", "series_calls", "accuracy", "baseline")

_KIND_TITLES = {
    "time": "Kernel time vs size",
    "speedup": "Speedup vs baseline",
    "step": "Step speedups at the largest size",
    "ratio": "letters / ascii128 time ratio",
    "bandwidth": "Bandwidth vs size",
    "shape": "Bandwidth vs row length at a fixed total size",
    "phases": "Phases at the largest size",
}


def esc(value: Any) -> str:
    """Escape any value for HTML text or attribute context."""
    return html.escape("—" if value is None else str(value), quote=True)


def _fmt_bytes(n: Any) -> str:
    if isinstance(n, bool) or not isinstance(n, (int, float)):
        return "—" if n is None else str(n)
    return f"{n / 2**30:.1f} GiB ({int(n):,} B)"


def _kv_table(title: str, items: Sequence[tuple[str, Any]]) -> str:
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in items)
    return f"<table><caption>{esc(title)}</caption><tbody>{rows}</tbody></table>"


def _as_dict(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def render_source(source: Source) -> str:
    """Device, versions, run info, ceilings and notes of one results file."""
    meta, dev = source.meta, source.device
    first = ["name", "backend", "cc", "sms", "memory_bytes"]
    dev_items: list[tuple[str, Any]] = [
        ("name", source.device_name), ("backend", dev.get("backend")), ("cc", dev.get("cc")),
        ("SMs", dev.get("sms")), ("memory", _fmt_bytes(dev.get("memory_bytes"))),
    ] + [(str(k), v) for k, v in dev.items() if k not in first]
    run_items = [(k, meta.get(k)) for k in ("commit", "hostname", "timestamp", "time_unit")]
    run_items.insert(0, ("file", source.path.name))
    versions = list(_as_dict(meta.get("versions")).items())
    ceilings = [(k, v if v is not None else "not measured") for k, v in source.ceilings.items()
                if not isinstance(v, dict)]  # timing statistics (``*_ms``) stay in the JSON
    parts = [f'<div class="source"><h3>{esc(source.device_name)}</h3><div class="meta">',
             _kv_table("device", dev_items), _kv_table("run", run_items)]
    if versions:
        parts.append(_kv_table("versions", versions))
    parts.append(_kv_table("ceilings (GB/s, GFLOP/s)",
                           ceilings or [("copy_gbps", "not measured")]))
    parts.append("</div>")
    notes = meta.get("notes")
    if isinstance(notes, list) and notes:
        parts.append("<p><b>notes</b></p><ul>" + "".join(f"<li>{esc(n)}</li>" for n in notes)
                     + "</ul>")
    elif isinstance(notes, str) and notes:
        parts.append(f"<p><b>notes:</b> {esc(notes)}</p>")
    parts.append("</div>")
    return "\n".join(parts)


def _figure(ref: FigureRef, out_dir: Path) -> str:
    try:
        src = ref.path.relative_to(out_dir).as_posix()
    except ValueError:
        src = ref.path.name
    return (f'<figure><a href="{esc(src)}"><img src="{esc(src)}" alt="{esc(ref.title)}" '
            f'loading="lazy"></a><figcaption>{esc(ref.title)}</figcaption></figure>')


def _family_section(family: str, figures: Sequence[FigureRef], tables: Sequence[Table],
                    out_dir: Path) -> str:
    fid = slug(family)
    parts = [f'<section id="family-{esc(fid)}" class="family"><h2>{esc(family)}</h2>']
    main = [t for t in tables
            if t.kind in ("speedup", "ratio", "lecture", "glance", *SERIES_KINDS)]
    if main:
        parts.append(f'<section id="tables-{esc(fid)}" class="tables"><h3>Tables</h3>')
        parts += [render_table(t) for t in main]
        parts.append("</section>")
    for kind, title in _KIND_TITLES.items():
        refs = [f for f in figures if f.kind == kind]
        if refs:
            parts.append(f'<h3>{esc(title)}</h3><div class="figs">')
            parts += [_figure(f, out_dir) for f in refs]
            parts.append("</div>")
    medians = [t for t in tables if t.kind == "medians"]
    if medians:
        parts.append("<details><summary>kernel medians for every size</summary>")
        parts += [render_table(t) for t in medians]
        parts.append("</details>")
    parts.append("</section>")
    return "\n".join(parts)


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
    parts += [render_table(t) for t in roof_tables]
    parts.append("</section>")
    return "\n".join(parts)


def render_page(results: Results, figures: Sequence[FigureRef], tables: Sequence[Table],
                out_dir: Path, title: str = "warplab report") -> str:
    """Render the whole report page.

    Args:
        results: Loaded results (for device meta, failures, skipped files).
        figures: Figures written into ``out_dir``.
        tables: Tables from :mod:`warplab.report.tables`.
        out_dir: Directory the page is written to (image links are relative to it).
        title: Page title.

    Returns:
        The HTML document.
    """
    ok, failed = len(results.ok_rows), len(results.failed_rows)
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>",
             f"<h1>{esc(title)}</h1>",
             f"<p>{ok} verified records, {failed} failed, from "
             f"{len(results.sources)} file(s); families: "
             f"{esc(', '.join(results.families()))}.</p>",
             '<section id="devices"><h2>Devices and runs</h2>']
    parts += [render_source(s) for s in results.sources]
    if results.skipped:
        parts.append("<p><b>skipped files</b></p><ul>" + "".join(
            f"<li>{esc(p.name)}: {esc(why)}</li>" for p, why in results.skipped) + "</ul>")
    parts.append("</section>")
    fail = [t for t in tables if t.kind == "failures"]
    if fail:
        parts.append('<section id="failures"><h2>Failures</h2>')
        parts += [render_table(t) for t in fail]
        parts.append("</section>")
    parts.append(_roofline_section(figures, tables, out_dir))
    for family in results.families():
        parts.append(_family_section(family, [f for f in figures if f.family == family],
                                     [t for t in tables if t.family == family], out_dir))
    parts.append("</body></html>")
    return "\n".join(parts)


"""The "Devices and runs" section: each device once, its measured ceilings rounded with units,
and the runs (files, commits, timestamps) in one small table.

A device is a (name, backend) pair; its facts come from its newest run, its ceilings are the
newest measured value of each (the roof every figure and the summary use:
:func:`warplab.lab.report.roofline.device_ceilings`), with the range over its runs where they differ.
Every string from a results file is escaped (:func:`esc`).
"""

from __future__ import annotations

import html
from typing import Any, Sequence

from warplab.lab.report.groups import group_by
from warplab.lab.report.load import Results, Source, num
from warplab.lab.report.roofline import device_ceilings
from warplab.lab.report.units import fmt_bandwidth, fmt_flops, fmt_gib, fmt_timestamp, short_commit

# key, label, metric ("gbps" | "gflops"), key of the method text
MEASURED: tuple[tuple[str, str, str, str], ...] = (
    ("copy_gbps", "copy (read + write)", "gbps", "copy_method"),
    ("read_gbps", "read", "gbps", "read_method"),
    ("sgemm_gflops", "SGEMM (float32)", "gflops", "sgemm_method"),
    ("dgemm_gflops", "DGEMM (float64)", "gflops", "dgemm_method"),
    ("h2d_pinned_gbps", "host → device, pinned", "gbps", "h2d_pinned_method"),
    ("h2d_pageable_gbps", "host → device, pageable", "gbps", "h2d_pageable_method"),
    ("d2h_pinned_gbps", "device → host, pinned", "gbps", "d2h_pinned_method"),
    ("d2h_pageable_gbps", "device → host, pageable", "gbps", "d2h_pageable_method"),
)
DATASHEET: tuple[tuple[str, str, str], ...] = (
    ("datasheet_bw_gbps", "bandwidth", "gbps"), ("datasheet_fp32_gflops", "FP32", "gflops"),
    ("datasheet_fp64_gflops", "FP64", "gflops"),
    ("datasheet_fp64_tensor_gflops", "FP64 tensor", "gflops"),
)
RUNS_OPEN = 12  # more runs than this: the runs table starts folded


def esc(value: Any) -> str:
    """Escape any value for HTML text or attribute context."""
    return html.escape("—" if value is None else str(value), quote=True)


def _fmt(value: float, metric: str) -> str:
    return fmt_flops(value) if metric == "gflops" else fmt_bandwidth(value)


def device_groups(results: Results) -> list[tuple[str, str, list[Source]]]:
    """``(name, backend, sources)`` per device, in order of first appearance."""
    groups = group_by(results.sources, lambda s: (s.device_name,
                                                  str(s.device.get("backend") or "")))
    return [(name, backend, srcs) for (name, backend), srcs in groups.items()]


def facts_line(source: Source) -> str:
    """The device in one line: backend, compute capability, SMs, memory, clocks, versions."""
    d = source.device
    parts: list[str] = []
    if d.get("backend"):
        parts.append(str(d["backend"]))
    if d.get("cc"):
        parts.append(f"compute capability {d['cc']}")
    if d.get("sms"):
        parts.append(f"{d['sms']} SMs")
    if d.get("cores"):
        parts.append(f"{d['cores']} cores")
    if num(d.get("memory_bytes")):
        parts.append(f"{fmt_gib(d['memory_bytes'])} memory")
    if num(d.get("sm_clock_mhz")):
        parts.append(f"SM clock {num(d['sm_clock_mhz']):,.0f} MHz")
    if num(d.get("memory_clock_mhz")):
        parts.append(f"memory clock {num(d['memory_clock_mhz']):,.0f} MHz")
    if num(d.get("memory_bus_bits")):
        parts.append(f"{num(d['memory_bus_bits']):,.0f}-bit bus")
    if num(d.get("l2_bytes")):
        parts.append(f"L2 {num(d['l2_bytes']) / 2**20:,.0f} MiB")  # type: ignore[operator]
    if d.get("driver") or d.get("runtime"):
        parts.append(f"driver {d.get('driver', '—')}, runtime {d.get('runtime', '—')}")
    return " · ".join(esc(p) for p in parts)


def _ceiling_rows(sources: Sequence[Source], name: str) -> tuple[list[str], list[str]]:
    """HTML rows of the measured ceilings, and labels of the ones never measured."""
    newest = device_ceilings(sources, name)
    rows, missing = [], []
    for key, label, metric, how in MEASURED:
        v = num(newest.get(key))
        if v is None or v <= 0:
            if key in newest or any(key in s.ceilings for s in sources):
                why = newest.get(how)
                missing.append(label + (f" ({why})" if isinstance(why, str) and why else ""))
            continue
        vals = [x for s in sources if (x := num(s.ceilings.get(key))) and x > 0]
        span = ""
        if len(vals) > 1:
            lo, hi = _fmt(min(vals), metric), _fmt(max(vals), metric)
            lo_n, lo_u = lo.rsplit(" ", 1)
            hi_n, hi_u = hi.rsplit(" ", 1)
            span = (f"{len(vals)} runs: " + (f"{lo_n}–{hi_n} {hi_u}" if lo_u == hi_u
                                             else f"{lo} – {hi}")) if lo != hi else \
                f"{len(vals)} runs, all {hi}"
        method = newest.get(how)
        rows.append(f'<tr><th>{esc(label)}</th><td class="num">{esc(_fmt(v, metric))}</td>'
                    f'<td class="span">{esc(span)}</td>'
                    f'<td class="how">{esc(method if isinstance(method, str) else "")}</td></tr>')
    return rows, missing


def _datasheet(sources: Sequence[Source], name: str) -> str:
    newest = device_ceilings(sources, name)
    dev = sources[-1].device
    parts = []
    for key, label, metric in DATASHEET:
        v = num(newest.get(key)) or num(dev.get(key))
        if v and v > 0:
            parts.append(f"{label} {_fmt(v, metric)}")
    if not parts:
        return ""
    basis = newest.get("datasheet_basis")
    return (f'<p class="note">datasheet (not measured): {esc(" · ".join(parts))}'
            + (f" — {esc(basis)}" if isinstance(basis, str) else "") + "</p>")


def _versions(sources: Sequence[Source]) -> str:
    sets: dict[str, int] = {}
    for s in sources:
        v = s.meta.get("versions")
        if isinstance(v, dict) and v:
            text = " · ".join(f"{k} {x}" for k, x in v.items() if x is not None)
            sets[text] = sets.get(text, 0) + 1
    if not sets:
        return ""
    if len(sets) == 1:
        return f'<p class="versions">versions: {esc(next(iter(sets)))}</p>'
    items = "".join(f"<li>{esc(t)} ({n} run{'s' if n > 1 else ''})</li>" for t, n in sets.items())
    return f'<div class="versions">versions:<ul>{items}</ul></div>'


def _properties(source: Source) -> str:
    items = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>"
                    for k, v in source.device.items())
    return (f"<details><summary>every device property (newest run)</summary>"
            f'<table class="props"><tbody>{items}</tbody></table></details>') if items else ""


def render_device(name: str, backend: str, sources: Sequence[Source]) -> str:
    """One device: facts line, ceilings table, datasheet line, versions, properties."""
    rows, missing = _ceiling_rows(sources, name)
    parts = [f'<div class="device" data-device="{esc(name)}"><h3>{esc(name)}</h3>',
             f'<p class="facts">{facts_line(sources[-1])}</p>']
    if rows:
        parts.append('<table class="ceilings"><caption>measured ceilings (newest run; the roofs '
                     'of the figures and the summary)</caption><thead><tr><th>ceiling</th>'
                     '<th>value</th><th>across runs</th><th>how it was measured</th></tr>'
                     "</thead><tbody>" + "".join(rows) + "</tbody></table>")
    else:
        parts.append('<p class="note">ceilings: not measured in any run.</p>')
    if missing:
        parts.append(f'<p class="note">not measured: {esc("; ".join(missing))}</p>')
    parts += [_datasheet(sources, name), _versions(sources), _properties(sources[-1]), "</div>"]
    return "\n".join(p for p in parts if p)


def runs_table(results: Results) -> str:
    """Every results file: device, campaign, families, records, commit, timestamp."""
    multi = len({s.device_name for s in results.sources}) > 1
    hosts = {s.meta.get("hostname") for s in results.sources}
    cols = ["file"] + (["device"] if multi else []) + (["host"] if len(hosts) > 1 else []) + [
        "campaign", "families", "records", "failed", "commit", "time"]
    by_file = group_by(results.rows, lambda r: r.source)
    body = []
    for s in results.sources:
        rows = by_file.get(s.path.name, [])
        fams = ", ".join(sorted({r.family for r in rows}))
        failed = sum(1 for r in rows if not r.ok)
        cells = [s.path.name] + ([s.device_name] if multi else []) + (
            [s.meta.get("hostname")] if len(hosts) > 1 else []) + [
            s.meta.get("campaign") or "—", fams or "—", len(rows), failed or "",
            short_commit(s.meta.get("commit")), fmt_timestamp(s.meta.get("timestamp"))]
        body.append("<tr>" + "".join(
            (f'<td class="num">{esc(c)}</td>' if isinstance(c, int) else f"<td>{esc(c)}</td>")
            for c in cells) + "</tr>")
    table = ('<table class="runs"><thead><tr>' + "".join(f"<th>{esc(c)}</th>" for c in cols)
             + "</tr></thead><tbody>" + "".join(body) + "</tbody></table>")
    n = len(results.sources)
    commits = len({short_commit(s.meta.get("commit")) for s in results.sources})
    times = [fmt_timestamp(s.meta.get("timestamp")) for s in results.sources]
    head = (f"{n} run{'s' if n > 1 else ''} (results files), {commits} "
            f"commit{'s' if commits > 1 else ''}, " + (f"{times[0]} to {times[-1]}"
                                                      if times[0] != times[-1] else times[0]))
    return (f"<details{' open' if n <= RUNS_OPEN else ''} class=\"runs\"><summary>{esc(head)}"
            f"</summary>{table}</details>")


def _notes(results: Results) -> str:
    seen: dict[str, int] = {}
    for s in results.sources:
        notes = s.meta.get("notes")
        for n in notes if isinstance(notes, list) else [notes] if notes else []:
            seen[str(n)] = seen.get(str(n), 0) + 1
    if not seen:
        return ""
    items = "".join(f"<li>{esc(n)}" + (f' <span class="count">({c} runs)</span>' if c > 1
                                        else "") + "</li>" for n, c in seen.items())
    return (f"<details{' open' if len(seen) <= 6 else ''}><summary>notes from the runs "
            f"({len(seen)})</summary><ul class=\"notes\">{items}</ul></details>")


def render_devices(results: Results) -> str:
    """The whole section: each device once, then the runs, their notes, and skipped files."""
    parts = ['<section id="devices"><h2>Devices and runs</h2>']
    parts += [render_device(n, b, srcs) for n, b, srcs in device_groups(results)]
    parts += [runs_table(results), _notes(results)]
    if results.skipped:
        names = ", ".join(p.name for p, _ in results.skipped)
        reasons = sorted({why for _, why in results.skipped})
        parts.append(f'<p class="note skipped-files">Left out, not results files '
                     f"({len(results.skipped)}): {esc(names)} — {esc('; '.join(reasons))}.</p>")
    parts.append("</section>")
    return "\n".join(p for p in parts if p)

"""Report tables as plain rows, plus their HTML rendering.

Every speed table is built from ``ok`` rows only (verified, no error); failed
records appear solely in :func:`failures_table`. Cells are raw values (str,
int, float, bool or None); :func:`render_table` formats and escapes them.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any, Sequence

from warplab.lab.report.groups import (
    EXCLUDED_KEYS,
    BASELINE, OWN_REPORT_FAMILIES, RATIO_PAIR, STEP_FAMILIES, by_config, config_label,
    fmt_size, group_by, largest_size, latest, ordered_series, ordered_variants, sort_key_config,
    step_speedups, without,
)
from warplab.lab.report.load import Results, Row

Config = tuple[tuple[str, Any], ...]


@dataclass
class Table:
    """A table ready to render.

    Attributes:
        title: Heading shown above the table.
        columns: Column headers.
        rows: Cell values, one list per row.
        kind: CSS class (``speedup``, ``ratio``, ``lecture``, ``glance``, ``medians``,
            ``failures``; the series tables: ``generation``, ``series_mean``, ``series_calls``,
            ``accuracy``, ``baseline``).
        family: Family shown ("" for cross-family tables).
        formats: Per-column format spec for floats (default ``.2f``).
        row_keys: Per-row ``data-config`` attribute (config label), may be empty.
        note: Optional explanatory sentence under the title.
    """

    title: str
    columns: list[str]
    rows: list[list[Any]]
    kind: str
    family: str = ""
    formats: dict[int, str] = field(default_factory=dict)
    row_keys: list[str] = field(default_factory=list)
    note: str = ""


def _family_ok(results: Results, family: str) -> list[Row]:
    return [r for r in results.rows if r.family == family and r.ok]


def _multi_device(rows: Sequence[Row]) -> bool:
    return len({(r.device, r.backend) for r in rows}) > 1


def speedup_tables(results: Results) -> list[Table]:
    """Speedup vs the family baseline (histogram: ``global``), one table per bins.

    Rows are the remaining config (e.g. data kind), per device, at the largest
    size where the baseline has an ok row; columns are variants; cells are
    ``median(baseline) / median(variant)`` at that size on the same device.
    """
    tables: list[Table] = []
    for family in results.families():
        baseline = BASELINE.get(family)
        ok = _family_ok(results, family)
        if baseline is None or not any(r.variant == baseline for r in ok):
            continue
        multi = _multi_device(ok)
        per_bins = group_by(ok, lambda r: dict(r.config).get("bins"))
        for bins in sorted(per_bins, key=str):
            rows = per_bins[bins]
            variants = ordered_variants(family, rows)
            rest_keys = [k for k, _ in without(rows[0].config, "bins")]
            cols = rest_keys + (["device"] if multi else []) + ["size"] + variants
            table = Table(f"{family}: speedup vs {baseline}" +
                          (f" — bins={bins}" if bins is not None else ""), cols, [],
                          "speedup", family, {i: ".2f" for i in range(len(cols))},
                          note=f"median({baseline}) / median(variant), kernel phase, "
                               "at the largest size measured for the baseline.")
            for config, crows in by_config(rows):
                for device, drows in sorted(group_by(crows, lambda r: r.device).items()):
                    base = {r.size: r.median for r in drows if r.variant == baseline}
                    size = max((s for s in base if s is not None), default=None)
                    if size is None:
                        continue
                    at = latest((r for r in drows if r.size == size), lambda r: r.variant)
                    cells: list[Any] = [v for _, v in without(config, "bins")]
                    cells += ([device] if multi else []) + [fmt_size(size)]
                    cells += [base[size] / at[v].median if v in at and at[v].median else None
                              for v in variants]
                    table.rows.append(cells)
                    table.row_keys.append(config_label(config))
            if table.rows:
                tables.append(table)
    return tables


LECTURE_COLUMNS = ["variant", "time (ms)", "step speedup", "cumulative speedup", "GB/s",
                   "% of copy BW", "rel. error", "verified"]


def fmt_rel_error(x: float | None) -> str:
    """``rel_error`` as text: ``3.1e-08``, or ``-`` when the record has none."""
    return "-" if x is None else f"{x:.1e}"


def lecture_tables(results: Results) -> list[Table]:
    """The lecture table: one per config and device of each family in ``STEP_FAMILIES``.

    At the largest size measured for the family's baseline (reduce:
    ``neighbored_gmem``; no table without an ok baseline row), one row per
    variant in canonical (lecture) order, other warplab variants after them,
    comparators last. Step speedup is ``median(previous kernel of the chain
    with an ok row) / median(this one)``; cumulative is ``median(baseline) /
    median(this one)``; comparators get the cumulative only.
    """
    tables: list[Table] = []
    for family in results.families():
        baseline = BASELINE.get(family)
        if family not in STEP_FAMILIES or baseline is None:
            continue
        ok = _family_ok(results, family)
        multi = _multi_device(ok)
        for config, crows in by_config(ok):
            for device, drows in sorted(group_by(crows, lambda r: r.device).items()):
                size, steps = step_speedups(family, drows, baseline)
                if size is None:
                    continue
                title = (f"{family}: lecture table — {config_label(config)}"
                         + (f" — {device}" if multi else "") + f" (size {fmt_size(size)})")
                table = Table(title, list(LECTURE_COLUMNS), [], "lecture", family,
                              {1: ".4g", 2: ".2f", 3: ".2f", 4: ".1f", 5: ".1f"},
                              note=f"kernel median at size {size:,}; step speedup: previous "
                                   f"kernel in the lecture's order / this one; cumulative: "
                                   f"{baseline} / this one; rel. error: |result - float64 "
                                   "reference| / |reference|.")
                for st in steps:
                    r = st.row
                    pct = r.pct_of_copy_bw
                    if pct is None and r.gbps and r.copy_gbps:
                        pct = 100.0 * r.gbps / r.copy_gbps
                    table.rows.append([r.variant, r.median, st.step, st.cumulative, r.gbps, pct,
                                       fmt_rel_error(r.rel_error), r.verified])
                    table.row_keys.append(config_label(config))
                tables.append(table)
    return tables


def ratio_tables(results: Results) -> list[Table]:
    """letters / ascii128 kernel-time ratio per variant, one table per family.

    Rows are configs without ``bins`` (per device) at the largest size where
    both mappings were measured; no table when either mapping is missing.
    """
    num_b, den_b = RATIO_PAIR
    tables: list[Table] = []
    for family in results.families():
        ok = [r for r in _family_ok(results, family)
              if dict(r.config).get("bins") in RATIO_PAIR]
        multi = _multi_device(ok)
        groups = group_by(ok, lambda r: (without(r.config, "bins"), r.device))
        cells_by_row: list[tuple[str, list[Any], dict[str, float]]] = []
        for rest, device in sorted(groups, key=lambda k: (sort_key_config(k[0]), k[1])):
            rows = groups[(rest, device)]
            num = latest((r for r in rows if dict(r.config)["bins"] == num_b),
                         lambda r: (r.variant, r.size))
            den = latest((r for r in rows if dict(r.config)["bins"] == den_b),
                         lambda r: (r.variant, r.size))
            common: dict[tuple[str, int | None], float] = {}
            for k, r in num.items():
                n, d = r.median, den[k].median if k in den else None
                if n and d:
                    common[k] = n / d
            size = max((s for _, s in common if s is not None), default=None)
            if size is None:
                continue
            ratios = {v: q for (v, s), q in common.items() if s == size}
            head = [v for _, v in rest] + ([device] if multi else []) + [fmt_size(size)]
            cells_by_row.append((config_label(rest), head, ratios))
        if not cells_by_row:
            continue
        present = {v for _, _, ratios in cells_by_row for v in ratios}
        variants = [v for v in ordered_variants(family, ok) if v in present]
        rest_keys = [k for k, _ in without(ok[0].config, "bins")]
        cols = rest_keys + (["device"] if multi else []) + ["size"] + variants
        table = Table(f"{family}: {num_b} time / {den_b} time", cols, [], "ratio", family,
                      {i: ".2f" for i in range(len(cols))},
                      note="ratio of kernel medians at equal size, data and variant.")
        for key, head, ratios in cells_by_row:
            table.rows.append(head + [ratios.get(v) for v in variants])
            table.row_keys.append(key)
        tables.append(table)
    return tables


_GLANCE_COLS = ["size", "variant", "provider", "median ms", "Q10 ms", "Q90 ms", "noise",
                "GB/s", "% of copy BW", "verified"]


def glance_tables(results: Results) -> list[Table]:
    """Results at a glance: per family, each config at its largest size, by median."""
    tables: list[Table] = []
    for family in results.families():
        ok = _family_ok(results, family)
        if not ok or family in OWN_REPORT_FAMILIES:  # no size axis: series.py, corr.py, memcpy.py
            continue
        multi = _multi_device(ok)
        keys = [k for k, _ in ok[0].config] + (["device"] if multi else [])
        cols = keys + _GLANCE_COLS
        n = len(keys)
        fmts = {n + 3: ".4g", n + 4: ".4g", n + 5: ".4g", n + 6: ".3f", n + 7: ".1f",
                n + 8: ".1f"}
        table = Table(f"{family}: results at a glance", cols, [], "glance", family, fmts,
                      note="largest size of each configuration (per device); kernel phase; "
                           "sorted by median.")
        for config, crows in by_config(ok):
            for device, drows in sorted(group_by(crows, lambda r: r.device).items()):
                size = largest_size(drows)
                at = latest((r for r in drows if r.size == size), lambda r: r.variant)
                for r in sorted(at.values(), key=lambda r: r.median or float("inf")):
                    table.rows.append([v for _, v in config] + ([device] if multi else []) + [
                        fmt_size(size), r.variant, r.provider, r.median,
                        r.stat("kernel", "q10"), r.stat("kernel", "q90"),
                        r.stat("kernel", "noise"), r.gbps, r.pct_of_copy_bw, r.verified])
                    table.row_keys.append(config_label(config))
        tables.append(table)
    return tables


def median_tables(results: Results) -> list[Table]:
    """Kernel median (ms) for every size, one table per family and config."""
    tables: list[Table] = []
    for family in results.families():
        if family in OWN_REPORT_FAMILIES:  # no size axis: series.py, corr.py, memcpy.py
            continue
        for config, crows in by_config(_family_ok(results, family)):
            series = ordered_series(family, crows)
            idx = latest(crows, lambda r: (r.series, r.size))
            sizes = sorted({r.size for r in crows if r.size is not None})
            cols = ["size"] + series
            table = Table(f"{family}: kernel median (ms) — {config_label(config)}", cols, [],
                          "medians", family, {i: ".4g" for i in range(len(cols))})
            for size in sizes:
                table.rows.append([fmt_size(size)] + [
                    idx[(s, size)].median if (s, size) in idx else None for s in series])
                table.row_keys.append(config_label(config))
            tables.append(table)
    return tables


def failures_table(results: Results) -> Table | None:
    """All unverified or erroring records, or None when there are none (the device and
    backend columns only when the results hold more than one device)."""
    failed = results.failed_rows
    if not failed:
        return None
    multi = len({(s.device_name, s.device.get("backend")) for s in results.sources}) > 1
    cols = ["family", "variant", "provider"] + (["backend", "device"] if multi else []) + [
        "params", "size", "verified", "error", "file"]
    table = Table(f"Failures ({len(failed)})", cols, [], "failures",
                  note="unverified or erroring records; never plotted or tabulated as speeds.")
    for r in failed:
        params = ", ".join(f"{k}={v}" for k, v in r.params.items()
                           if k not in EXCLUDED_KEYS)
        table.rows.append([r.family, r.variant, r.provider] + (
            [r.backend, r.device] if multi else []) + [
            params, fmt_size(r.size), r.verified, r.error or "", r.source])
        table.row_keys.append(config_label(r.config))
    return table


def format_cell(value: Any, fmt: str = ".2f") -> str:
    """Format one cell value as text (not yet HTML-escaped)."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return format(value, fmt)
    return str(value)


def render_table(table: Table) -> str:
    """Render a table as an HTML fragment; every text is escaped."""
    e = html.escape
    out = [f'<table class="{e(table.kind)}" data-family="{e(table.family)}">',
           f"<caption>{e(table.title)}</caption>", "<thead><tr>"]
    out += [f"<th>{e(str(c))}</th>" for c in table.columns]
    out.append("</tr></thead><tbody>")
    for i, row in enumerate(table.rows):
        key = table.row_keys[i] if i < len(table.row_keys) else ""
        out.append(f'<tr data-config="{e(key)}">')
        for j, v in enumerate(row):
            cls = ' class="num"' if isinstance(v, (int, float)) and not isinstance(v, bool) \
                else ""
            out.append(f"<td{cls}>{e(format_cell(v, table.formats.get(j, '.2f')))}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    if table.note:
        out.append(f'<p class="note">{e(table.note)}</p>')
    return "\n".join(out)

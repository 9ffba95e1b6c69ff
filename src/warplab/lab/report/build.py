"""``build_report``: results JSON in, PNG figures and ``index.html`` out."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from warplab.lab.report.corr import all_corr_tables
from warplab.lab.report.gallery import FigureRef, make_figures
from warplab.lab.report.html import render_page
from warplab.lab.report.latency import latency_tables
from warplab.lab.report.load import Results, load_results
from warplab.lab.report.memcpy import memcpy_tables
from warplab.lab.report.roofline import roofline_table
from warplab.lab.report.series import series_tables
from warplab.lab.report.skips import SkippedFigure
from warplab.lab.report.dask import dask_tables
from warplab.lab.report.numpy import numpy_tables
from warplab.lab.report.stream import end_to_end_tables
from warplab.lab.report.tables import (
    Table, failures_table, glance_tables, lecture_tables, median_tables, ratio_tables,
    speedup_tables,
)


def build_tables(results: Results) -> list[Table]:
    """Every table of the report, in page order (failures first)."""
    tables: list[Table] = []
    fail = failures_table(results)
    if fail is not None:
        tables.append(fail)
    tables += speedup_tables(results)
    tables += lecture_tables(results)
    tables += series_tables(results)
    tables += all_corr_tables(results)
    tables += memcpy_tables(results)
    tables += latency_tables(results)
    tables += end_to_end_tables(results)
    tables += dask_tables(results)
    tables += numpy_tables(results)
    tables += ratio_tables(results)
    tables += glance_tables(results)
    tables += median_tables(results)
    roof = roofline_table(results.rows, results.sources)
    if roof is not None:
        tables.append(roof)
    return tables


def _default_out_dir(src: str | Path | Iterable[str | Path]) -> Path:
    if isinstance(src, (str, Path)):
        p = Path(src)
        return (p if p.is_dir() else p.parent) / "report"
    first = next(iter(src), None)
    return (Path(first).parent if first is not None else Path.cwd()) / "report"


def build_report(src: str | Path | list[Path], out_dir: Path | None = None) -> Path:
    """Write the report for one or more results files.

    Args:
        src: A directory (every ``*.json`` directly in it; JSON files that are not
            results files, e.g. a saved ``warplab device`` answer, are left out and listed
            on the page), a file, or a list of files.
        out_dir: Where to write PNGs and ``index.html``; defaults to
            ``<dir>/report/`` where ``<dir>`` is ``src`` (a directory) or the
            directory of the (first) file.

    Returns:
        Path of the written ``index.html``.

    Raises:
        FileNotFoundError: A given path does not exist.
        ValueError: A results file is unreadable, corrupt or of another schema (the
            message names it), or no results JSON was found.
    """
    if not isinstance(src, (str, Path)):
        src = [Path(p) for p in src]
    results = load_results(src)
    out = Path(out_dir) if out_dir is not None else _default_out_dir(src)
    out.mkdir(parents=True, exist_ok=True)
    skipped: list[SkippedFigure] = []
    figures: list[FigureRef] = make_figures(results, out, skipped)
    page = render_page(results, figures, build_tables(results), out, skipped=skipped)
    index = out / "index.html"
    index.write_text(page, encoding="utf-8")
    return index

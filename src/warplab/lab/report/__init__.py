"""warplab.lab.report: results JSON (schema 1) to matplotlib figures and one HTML page.

Example:
    >>> from warplab.lab.report import build_report
    >>> build_report("results/")          # doctest: +SKIP
    PosixPath('results/report/index.html')
"""

from __future__ import annotations

from warplab.lab.report.build import build_report, build_tables
from warplab.lab.report.gallery import FigureRef, make_figures
from warplab.lab.report.load import Results, Row, Source, load_results
from warplab.lab.report.skips import SkippedFigure
from warplab.lab.report.summary import Headline, headlines
from warplab.lab.report.tables import Table, render_table

__all__ = [
    "FigureRef", "Headline", "Results", "Row", "SkippedFigure", "Source", "Table",
    "build_report", "build_tables", "headlines", "load_results", "make_figures", "render_table",
]

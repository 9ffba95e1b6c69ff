"""warplab.report: results JSON (schema 1) to matplotlib figures and one HTML page.

Example:
    >>> from warplab.report import build_report
    >>> build_report("results/")          # doctest: +SKIP
    PosixPath('results/report/index.html')
"""

from __future__ import annotations

from .build import build_report, build_tables
from .gallery import FigureRef, make_figures
from .load import Results, Row, Source, load_results
from .skips import SkippedFigure
from .summary import Headline, headlines
from .tables import Table, render_table

__all__ = [
    "FigureRef", "Headline", "Results", "Row", "SkippedFigure", "Source", "Table",
    "build_report", "build_tables", "headlines", "load_results", "make_figures", "render_table",
]

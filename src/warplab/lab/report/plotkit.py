"""The look every report figure shares: size, fonts, titles that fit, legends, log axes.

Figures are :class:`matplotlib.figure.Figure` objects saved with the Agg renderer; pyplot (and
its global backend state) is never used. Every figure is drawn at :data:`FIGSIZE` (the width of
one column of the page's two-column grid at about 0.85 scale), with the legend under the axes,
so that figures side by side read at the same type size.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Any, Sequence

from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

FIGSIZE: tuple[float, float] = (7.2, 4.3)
DPI = 100
TITLE_PT, LABEL_PT, TICK_PT, LEGEND_PT = 10.5, 9.5, 8.5, 8.0
PLAIN_UP_TO = 16384  # x axes up to this size get plain-integer labels (1,024), beyond: 2ᵏ
MAX_X_LABELS = 16  # powers of two labelled on a log2 axis; every power gets a tick
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _text(s: str) -> str:
    """Make a data string safe for matplotlib text (no mathtext, no hidden label)."""
    s = s.replace("$", r"\$")
    return " " + s if s.startswith("_") else s


def _new_axes(figsize: tuple[float, float] = FIGSIZE) -> tuple[Figure, Any]:
    fig = Figure(figsize=figsize, dpi=DPI, layout="constrained")
    ax = fig.add_subplot()
    ax.tick_params(labelsize=TICK_PT)
    return fig, ax


def wrap_title(title: str, width_in: float, pt: float = TITLE_PT) -> str:
    """Break a title into lines that fit ``width_in`` inches at ``pt`` points (at most 3)."""
    chars = max(20, int(width_in * 0.86 * 72 / (pt * 0.6)))  # the axes' share of the width
    lines = textwrap.wrap(title, chars, break_on_hyphens=False) or [title]
    if len(lines) > 3:
        lines = lines[:2] + [textwrap.shorten(" ".join(lines[2:]), chars, placeholder=" …")]
    return "\n".join(lines)


def _legend_columns(labels: Sequence[str], width_in: float) -> int:
    longest = max((len(s) for s in labels), default=1)
    col_px = longest * LEGEND_PT * 0.62 + 40
    return max(1, min(len(labels), int(width_in * DPI * 0.95 // col_px)))


def _finish(fig: Figure, ax: Any, path: Path, title: str, xlabel: str, ylabel: str,
            legend: bool = True) -> Path:
    """Title (wrapped to the figure's width), axis labels, grid, legend under the axes; save."""
    width = fig.get_figwidth()
    ax.set_title(_text(wrap_title(title, width)), fontsize=TITLE_PT)
    ax.set_xlabel(xlabel, fontsize=LABEL_PT)
    ax.set_ylabel(ylabel, fontsize=LABEL_PT)
    ax.grid(True, which="major", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if legend and handles:
        fig.legend(handles, labels, loc="outside lower center", fontsize=LEGEND_PT,
                   ncol=_legend_columns(labels, width), frameon=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return path


def finish_panels(fig: Figure, axes: Sequence[Any], path: Path, title: str) -> Path:
    """A figure of several panels: the title over them (wrapped to the figure's width), one
    legend under them with every panel's entries once (first seen first); save."""
    width = fig.get_figwidth()
    seen: dict[str, Any] = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    fig.suptitle(_text(wrap_title(title, width)), fontsize=TITLE_PT)
    if seen:
        fig.legend(list(seen.values()), list(seen), loc="outside lower center",
                   fontsize=LEGEND_PT, ncol=_legend_columns(list(seen), width), frameon=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return path


def pow2_label(x: float, _pos: Any = None) -> str:
    """``2ᵏ`` in plain text (no mathtext: fast to render)."""
    k = round(math.log2(x)) if x > 0 else 0
    return "2" + str(k).translate(_SUPERSCRIPT)


def _int_label(x: float, _pos: Any = None) -> str:
    return f"{x:,.0f}"


def _minor_label(ax: Any, v: float) -> str:
    """Label minor log ticks where the y axis has few decades: 2, 3 and 5 below 1.5 decades,
    2 and 5 below 2.5, none beyond."""
    lo, hi = ax.get_ylim()
    if v <= 0 or lo <= 0:
        return ""
    decades = math.log10(hi / lo)
    mant = round(v / 10 ** math.floor(math.log10(v) + 1e-9))
    keep = (2, 3, 5) if decades < 1.5 else (2, 5) if decades < 2.5 else ()
    return f"{v:,g}" if mant in keep else ""


def pow2_ticks(lo: float, hi: float) -> tuple[list[float], list[float]]:
    """``(labelled, unlabelled)`` tick positions: every power of two in ``[lo, hi]``, at most
    :data:`MAX_X_LABELS` of them labelled (the exponents divisible by k: 2¹⁰, 2²⁰, 2³⁰ stay
    labelled whenever k divides 10)."""
    a, b = math.floor(math.log2(lo) + 1e-9), math.ceil(math.log2(hi) - 1e-9)
    ks = list(range(a, b + 1))
    step = max(1, math.ceil(len(ks) / MAX_X_LABELS))
    step = next(k for k in (1, 2, 5, 10, step) if k >= step)
    labelled = [k for k in ks if k % step == 0] or [b]
    return [2.0**k for k in labelled], [2.0**k for k in ks if k not in labelled]


def _log_axes(ax: Any, sizes: Sequence[float], logy: bool = True,
              plain: bool | None = None) -> None:
    """Log2 x axis with a tick at every power of two in range (``2ᵏ`` labels, or plain
    integers with ``plain``, by default when every size is at most 16384); optional log10 y
    axis with plain labels."""
    ax.set_xscale("log", base=2)
    lo, hi = (min(sizes), max(sizes)) if sizes else (1.0, 2.0)
    plain = hi <= PLAIN_UP_TO if plain is None else plain
    hi = max(hi, lo * 2)
    major, minor = pow2_ticks(lo, hi)
    ax.xaxis.set_major_locator(FixedLocator(major))
    ax.xaxis.set_major_formatter(FuncFormatter(_int_label if plain else pow2_label))
    ax.xaxis.set_minor_locator(FixedLocator(minor) if minor else NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(lo / 2**0.35, hi * 2**0.35)
    if logy:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:,g}"))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _p: _minor_label(ax, v)))
        ax.tick_params(axis="y", which="minor", labelsize=TICK_PT - 1)

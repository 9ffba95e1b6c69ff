"""The figure of ``warplab compare --figure PATH``: B/A per compared record, grouped by family.

A pure function of :func:`warplab.lab.harness.compare.compare`'s output. Drawn on a
:class:`matplotlib.figure.Figure` and saved with Agg (pyplot is never used). One point per pair
with a ratio (SAME / FASTER / SLOWER), coloured by verdict, with the pair's noise bound as an
error bar (ratio +- bound: SAME exactly where the bar crosses 1); a log ratio axis with its 1.0
line; families side by side, separated and named. FAILED, UNTIMED and unmatched records have no ratio
and are counted in the title instead.
"""
from __future__ import annotations

import math
from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from warplab.lab.harness.compare import FAILED, FASTER, SAME, SLOWER, UNTIMED

COLORS = {FASTER: "#2ca02c", SLOWER: "#d62728", SAME: "#7f7f7f"}
_TICKS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.67, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0,
          5.0, 10.0, 20.0, 50.0, 100.0)


def _text(s: str) -> str:
    """Make a data string safe for matplotlib text (no mathtext, no hidden label)."""
    s = s.replace("$", r"\$")
    return " " + s if s.startswith("_") else s


def _limits(values: list[float]) -> tuple[float, float]:
    """Ratio limits symmetric around 1 on a log axis, at least 0.8 .. 1.25."""
    span = max([abs(math.log(v)) for v in values] + [math.log(1.25)]) * 1.15
    return math.exp(-span), math.exp(span)


def ratio_figure(comparison: dict, path: str | Path) -> Path:
    """Draw B/A of every compared pair and save it as a PNG.

    Args:
        comparison: The output of :func:`warplab.lab.harness.compare.compare`.
        path: Where to write the PNG (its folder is created).

    Returns:
        The written path. A comparison without ratios still gets a figure, saying so.
    """
    pairs = [p for p in comparison["pairs"] if p.get("ratio") and p["ratio"] > 0]
    families: dict[str, list[dict]] = {}
    for p in pairs:
        families.setdefault(p["family"], []).append(p)
    width = min(20.0, max(6.5, 3.0 + 0.12 * len(pairs) + 0.6 * len(families)))
    fig = Figure(figsize=(width, 4.6), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    x, ticks, names = 0.0, [], []
    lows, highs = [], []
    for family, ps in families.items():
        start = x
        for p in ps:
            r, b = p["ratio"], p.get("bound") or 0.0
            lo, hi = max(r - b, r / 100), r + b
            lows.append(lo)
            highs.append(hi)
            ax.errorbar([x], [r], yerr=[[r - lo], [hi - r]], fmt="o", ms=5,
                        color=COLORS.get(p["verdict"], "black"), elinewidth=1, capsize=2)
            x += 1
        ticks.append((start + x - 1) / 2)
        names.append(_text(family))
        ax.axvline(x, color="0.85", lw=0.8)
        x += 1
    lo, hi = _limits(lows + highs) if pairs else (0.8, 1.25)
    ax.set_yscale("log")
    ax.set_ylim(lo, hi)
    ax.yaxis.set_major_locator(FixedLocator([t for t in _TICKS if lo <= t <= hi]))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.axhline(1.0, color="black", lw=1)
    ax.set_xlim(-1, max(x - 1, 1))
    ax.set_xticks(ticks, names, rotation=30 if len(names) > 4 else 0, ha="right"
                  if len(names) > 4 else "center")
    ax.set_ylabel("B / A median (below 1: B faster)")
    ax.grid(True, axis="y", alpha=0.3)
    n = comparison["counts"]
    dev_a, dev_b = comparison["a"]["device"], comparison["b"]["device"]
    where = str(dev_a) if dev_a == dev_b else f"{dev_a} vs {dev_b}"
    title = (f"B / A per record ({where}): {n[FASTER]} faster, {n[SLOWER]} slower, "
             f"{n[SAME]} same; not compared: {n[FAILED]} failed, {n[UNTIMED]} untimed, "
             f"{n['only_a']} only in A, {n['only_b']} only in B")
    ax.set_title(_text(title), fontsize=9, wrap=True)
    if not pairs:
        ax.text(0.5, 0.5, "no pair to compare", transform=ax.transAxes, ha="center")
    handles = [Line2D([], [], marker="o", ls="", color=COLORS[v], label=v.lower())
               for v in (FASTER, SAME, SLOWER)]
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0),
              borderaxespad=0)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png")
    return out

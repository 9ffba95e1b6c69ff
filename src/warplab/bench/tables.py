"""Text tables of results (rich): the report's appendix-C timing table and a summary."""
from __future__ import annotations

from typing import Iterable

from rich.console import Console
from rich.table import Table

_Q = ("min", "q10", "median", "q90", "max")


def _fmt(x: float | None, nd: int = 3) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def timing_table(records: Iterable[dict], title: str) -> Table:
    """Per variant: min / Q10 / median / Q90 / max of H2D, kernel, D2H and total (ms)."""
    t = Table(title=title, show_lines=False)
    t.add_column("variant")
    for phase in ("h2d", "kernel", "d2h", "total"):
        for q in _Q:
            t.add_column(f"{phase} {q}" if q == "min" else q, justify="right")
    t.add_column("GB/s", justify="right")
    t.add_column("ok")
    for r in records:
        row = [r["variant"]]
        for phase in ("h2d", "kernel", "d2h", "total"):
            st = r["phases"].get(phase)
            row += [_fmt(st[q]) if st else "-" for q in _Q]
        row += [_fmt(r["gbps"], 1), "yes" if r["verified"] else f"NO: {r['error']}"]
        t.add_row(*row)
    return t


def summary_table(records: list[dict], title: str, baseline: str = "global") -> Table:
    """Kernel median, GB/s, % of copy bandwidth, speedup vs ``baseline``, per record."""
    t = Table(title=title)
    for col in ("data", "bins", "size", "variant", "kernel ms", "GB/s", "% copy bw",
                f"x {baseline}", "verified"):
        t.add_column(col, justify="left" if col in ("data", "bins", "variant") else "right")
    base = {}
    for r in records:
        p = r["params"]
        if r["variant"] == baseline and r["verified"]:
            base[(p["data"], p["bins"], p["size"])] = r["phases"]["kernel"]["median"]
    for r in records:
        p, k = r["params"], r["phases"].get("kernel")
        med = k["median"] if k and r["verified"] else None
        b = base.get((p["data"], p["bins"], p["size"]))
        t.add_row(p["data"], p["bins"], str(p["size"]), r["variant"], _fmt(med, 4),
                  _fmt(r["gbps"], 1), _fmt(r["pct_of_copy_bw"], 1),
                  _fmt(b / med if b and med else None, 2),
                  "yes" if r["verified"] else f"NO: {r['error']}")
    return t


def print_table(table: Table, console: Console | None = None) -> None:
    (console or Console(width=240)).print(table)

"""Text tables of results (rich): the report's appendix-C timing table and a summary."""
from __future__ import annotations

from typing import Iterable

from rich.console import Console
from rich.table import Table

from warplab.lab.harness.stats import paired_ratio

_Q = ("min", "q10", "median", "q90", "max")


def _fmt(x: float | None, nd: int = 3) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def timing_table(records: Iterable[dict], title: str) -> Table:
    """Per variant: min / Q10 / median / Q90 / max of H2D, kernel, D2H and total (ms)."""
    t = Table(title=title, show_lines=False)
    t.add_column("variant")
    for phase in ("h2d", "kernel", "d2h", "total"):
        for q in _Q:
            t.add_column(f"{phase} {q}", justify="right")
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


EMPTY_CELLS = frozenset({"", "-", "—"})


def fit(table: Table) -> Table:
    """``table`` without the columns that carry no information (every cell empty or a dash:
    e.g. the held and comparator columns of a CPU run), numbers never wrapped: rich then fits
    the rest to the console's width by wrapping the text columns. Returns the same table."""
    for col in list(table.columns):
        cells = [c for c in col.cells if isinstance(c, str)]
        if len(cells) == len(list(col.cells)) and cells and all(c.strip() in EMPTY_CELLS
                                                                 for c in cells):
            table.columns.remove(col)
        elif col.justify == "right":
            col.no_wrap = True
    for i, col in enumerate(table.columns):  # rich pads and measures a column by its _index
        col._index = i
        # rich may squeeze a text column to nothing without an ellipsis: keep its longest word
        words = [w for c in (str(col.header), *map(str, col.cells)) for w in c.split()]
        col.min_width = max(col.min_width or 0, min(16, max(map(len, words), default=0)))
    return table


def _min_width(table: Table) -> int:
    """Characters the table needs at least: per column its widest unbreakable cell (a whole
    cell where it does not wrap, else its longest word), the header's longest word and its
    ``min_width``, plus padding and borders (rich's default box)."""
    need = 1
    for col in table.columns:
        cells = [str(c) for c in col.cells]
        units = cells if col.no_wrap else [w for c in cells for w in c.split()]
        units += str(col.header).split()
        need += max([len(u) for u in units] + [col.min_width or 0]) + 2 + 1
    return need


def _fits(table: Table, console: Console) -> bool:
    """``table`` drawn at the console's width cuts nothing: its columns' minimum widths fit,
    no cell is cut (rich marks that with an ellipsis) and every word of every header and cell
    is in the drawing (rich may also crop the last columns without a mark)."""
    if _min_width(table) > console.width:
        return False
    with console.capture() as cap:
        console.print(table)
    text = cap.get()
    if "…" in text:
        return False
    drawn = set(text.replace("│", " ").replace("┃", " ").split())
    words = {w for col in table.columns for c in (col.header, *col.cells)
             for w in str(c).split()}
    return words <= drawn


def _transposed(table: Table) -> Table:
    """One column per row of ``table``, one row per column (its header first)."""
    cols = table.columns
    t = Table(title=table.title, caption=table.caption, show_header=False)
    t.add_column(justify="left", style="bold")
    for _ in range(table.row_count):
        t.add_column(justify="right", no_wrap=True)
    for col in cols:
        t.add_row(str(col.header), *col.cells)
    return t


def print_table(table: Table, console: Console | None = None) -> None:
    """Print ``table`` (:func:`fit`) on ``console`` (default: one as wide as the terminal, or
    ``COLUMNS``, or 80 columns when the output is not a terminal), never cutting a number:
    a table too wide for the console is printed transposed (one column per record), and if
    that is too wide too, as one small field/value table per record."""
    console = console or Console()
    table = fit(table)
    if _fits(table, console):
        console.print(table)
        return
    t = _transposed(table)
    if _fits(t, console):
        console.print(t)
        return
    rows = [list(col.cells) for col in table.columns]
    for i in range(table.row_count):
        one = Table(title=table.title if i == 0 else None, show_header=False)
        one.add_column(justify="left", style="bold")
        one.add_column(justify="right")
        for col, cells in zip(table.columns, rows):
            one.add_row(str(col.header), cells[i])
        console.print(one)
    if table.caption:
        console.print(table.caption)


def lecture_table(records: list[dict], title: str) -> Table:
    """The reduction lecture's table: time, step speedup (vs the row above), cumulative speedup
    (vs the first row), plus GB/s, % of the copy ceiling and the relative error."""
    t = Table(title=title)
    for col in ("variant", "time (ms)", "step speedup", "cumulative speedup", "GB/s",
                "% copy bw", "rel. error", "held", "verified"):
        t.add_column(col, justify="left" if col == "variant" else "right")
    first = prev = None
    for r in records:
        k = r["phases"].get("kernel")
        med = k["median"] if k and r["verified"] else None
        step = prev / med if prev and med else None
        cum = first / med if first and med else None
        rel = r.get("rel_error")
        t.add_row(r["variant"], _fmt(med, 4), _fmt(step, 2), _fmt(cum, 2), _fmt(r["gbps"], 1),
                  _fmt(r["pct_of_copy_bw"], 1), "-" if rel is None else f"{rel:.1e}",
                  "-" if r["params"].get("held") is None else str(r["params"]["held"]).lower(),
                  "yes" if r["verified"] else f"NO: {r['error']}")
        if med:
            first = first or med
            prev = med if r["provider"] == "warplab" else prev
    return t


def call_table(records: list[dict], title: str) -> Table:
    """Host-measured call latency (``params.mode == "call"``) per dtype, size and provider.

    On each comparator's row, "warplab x": how many times faster warplab's call is, as the
    median of per-round ratios of the interleaved rounds (``round_medians``; "-" for records
    without them)."""
    def key(r: dict) -> tuple:
        return r["params"]["dtype"], r["params"]["op"], r["params"]["size"]

    ours = {key(r): r for r in records if r.get("provider") == "warplab"}
    t = Table(title=title)
    for col in ("dtype", "op", "size", "call", "median us", "q10 us", "q90 us", "warplab x",
                "verified"):
        t.add_column(col, justify="left" if col in ("dtype", "op", "call") else "right")
    for r in sorted(records, key=lambda r: (*key(r), r["variant"])):
        p, k = r["params"], r["phases"]["kernel"]
        mine = ours.get(key(r))
        speedup = None
        if mine is not None and mine is not r:
            speedup = paired_ratio(r.get("round_medians") or [], mine.get("round_medians") or [])
        t.add_row(p["dtype"], p["op"], str(p["size"]), r["variant"], _fmt(1e3 * k["median"], 1),
                  _fmt(1e3 * k["q10"], 1), _fmt(1e3 * k["q90"], 1), _fmt(speedup, 2),
                  "yes" if r["verified"] else f"NO: {r['error']}")
    return t


def matmul_table(records: list[dict], title: str) -> Table:
    """Matmul rows of one config: kernel median, GFLOP/s, % of cuBLAS in the same run, % of the
    compute ceiling (``compute_ceiling`` names its ``meta.ceilings`` key), and the lecture's
    flop-to-word analysis (intensity from the variant's cost model, the bound it implies,
    achieved as % of it)."""
    t = Table(title=title)
    for col in ("variant", "time (ms)", "GFLOP/s", "% cuBLAS", "% ceiling", "flop/byte",
                "bound GFLOP/s", "bound by", "% of bound", "rel. error", "verified"):
        t.add_column(col, justify="left" if col in ("variant", "bound by") else "right")
    for r in records:
        k = r["phases"].get("kernel")
        rel = r.get("rel_error")
        t.add_row(r["variant"], _fmt(k["median"] if k and r["verified"] else None, 3),
                  _fmt(r["gflops"], 0), _fmt(r.get("pct_of_cublas"), 1),
                  _fmt(r.get("pct_of_ceiling"), 1), _fmt(r.get("intensity"), 2),
                  _fmt(r.get("bound_gflops"), 0), r.get("bound_by") or "-",
                  _fmt(r.get("pct_of_bound"), 1), "-" if rel is None else f"{rel:.1e}",
                  "yes" if r["verified"] else f"NO: {r['error']}")
    return t

"""What every CLI subcommand shares: size parsing, the timing options, settings, the console,
a progress bar, variant-name lists and the closing lines of a campaign. Imported by
``cli.py``, ``commands.py`` and the families' ``command.py``; imports none of them."""
from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import re
from pathlib import Path
from typing import Any, Callable, Iterator

from rich.console import Console
from rich.table import Column
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from warplab.lab.harness.measure import Settings
from warplab.core import registry
from warplab.core.errors import InvalidValueError

console = Console()  # the terminal's width (or COLUMNS; 80 when not a terminal)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    """``1048576``, ``2^20``, ``64K``, ``1M``, ``1GiB``, ``4G`` -> bytes."""
    s = text.strip().lower().replace("ib", "").replace("b", "")
    m = re.fullmatch(r"2\^(\d+)", s)
    if m:
        return 1 << int(m.group(1))
    m = re.fullmatch(r"(\d+)([kmgt]?)", s)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 1048576, 2^20, 64K, 1G)")
    return int(m.group(1)) * _UNITS[m.group(2)]


def existing_folder(text: str) -> str:
    """An argparse type: ``text`` if it names an existing folder."""
    if not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"no such folder: {text!r}")
    return text


def csv(text: str) -> list[str]:
    """``"a, b,,c"`` -> ``["a", "b", "c"]``."""
    return [x.strip() for x in text.split(",") if x.strip()]


def timing_args(p: argparse.ArgumentParser, runs: int | None, warmup: int | None) -> None:
    """The timing options every measuring subcommand takes."""
    p.add_argument("--runs", type=int, default=runs, help="timed runs")
    p.add_argument("--warmup", type=int, default=warmup, help="untimed warm-up runs")
    p.add_argument("--pinned", action="store_true", help="pinned (page-locked) host memory")
    p.add_argument("--max-seconds", type=float, default=2.0,
                   help="time budget per measurement: fewer runs (>= 3) for slow ones")
    p.add_argument("--flush-l2", action="store_true", help="flush L2 before every run")


def settings(args: argparse.Namespace, campaign: Any | None) -> Settings:
    """Timing settings from the options, a campaign's runs/warm-up filling what is not given."""
    runs = args.runs if args.runs is not None else (campaign.runs if campaign else 20)
    warmup = args.warmup if args.warmup is not None else (campaign.warmup if campaign else 3)
    if runs < 1 or warmup < 0:
        raise InvalidValueError("--runs must be >= 1 and --warmup >= 0")
    return Settings(runs=runs, warmup=warmup, pinned=args.pinned,
                    max_seconds=args.max_seconds, flush_l2=args.flush_l2)


def variant_names(family: str, text: str | None, backend: str) -> list[str] | None:
    """``--variant`` of a family: None (the default variant), ``all`` or comma-separated names."""
    if text is None:
        return [registry.variants(family, backend)[0].name]
    if text.strip() == "all":
        return [v.name for v in registry.variants(family, backend)]
    return csv(text)


@contextlib.contextmanager
def progress(title: str) -> Iterator[Callable[[int, int, dict], None]]:
    """A rich progress bar; yields ``progress(done, total, record)`` (total 0 = unknown)."""
    # description, a bar, done/total, elapsed and remaining time always whole; the record being
    # measured gets what is left of the line (dropped below 8 columns)
    keep = len(title) + 1 + (6 + 1) * 4 + 4 + 10
    spare = console.width - keep
    whole = functools.partial(Column, no_wrap=True)
    cols: list[Any] = [TextColumn("[bold]{task.description}", table_column=whole()),
                       BarColumn(bar_width=max(3, min(20, spare - 30 + 10))),
                       MofNCompleteColumn(table_column=whole()),
                       TimeElapsedColumn(table_column=whole()),
                       TextColumn("eta", table_column=whole()),
                       TimeRemainingColumn(table_column=whole())]
    if spare >= 8:
        cols.append(TextColumn("{task.fields[last]}", table_column=whole(
            overflow="ellipsis", max_width=spare)))
    # shown from the first record on: a command that stops on bad input prints no bar
    prog = Progress(*cols, console=console, transient=False)
    task: list[Any] = []

    def update(done: int, total: int, rec: dict) -> None:
        if not task:
            prog.start()
            task.append(prog.add_task(title, total=None, last=""))
        p = rec["params"]
        what = " ".join(str(p[k]) for k in ("data", "bins", "dtype", "op", "shape", "size")
                        if k in p)
        prog.update(task[0], completed=done, total=max(total, done) or None,
                    last=f"{what} {rec['variant']}")

    try:
        yield update
    finally:
        if task:
            prog.stop()


def print_notes(doc: dict) -> None:
    """Print a results document's notes, one line each."""
    for note in doc["meta"]["notes"]:
        console.print(f"note: {note}")


def finish_run(doc: dict) -> int:
    """Print a campaign's notes; the exit status of the command that ran it: 0 when every
    warplab record was verified, else 1."""
    print_notes(doc)
    return 0 if all_verified(doc) else 1


def finish_bench(doc: dict, path: Path) -> bool:
    """Print a campaign's notes and where its JSON went; True when every warplab record was
    verified."""
    print_notes(doc)
    console.print(f"results: {path}")
    return all_verified(doc)


def all_verified(doc: dict) -> bool:
    """True when every warplab record of a results document matched its reference."""
    return all(r["verified"] for r in doc["results"] if r["provider"] == "warplab")


def json_path(args: argparse.Namespace) -> Path | None:
    """``--json PATH`` as a path (None when not given)."""
    return Path(args.json_path) if args.json_path else None


def dump_json(obj: Any) -> str:
    """Indented JSON (anything not serialisable as its ``str``)."""
    return json.dumps(obj, indent=1, default=str)

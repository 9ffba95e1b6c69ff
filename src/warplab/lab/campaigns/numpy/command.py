"""``warplab numpy`` (the quick campaign, printed) and the numpy part of ``warplab bench``."""
from __future__ import annotations

import argparse
from pathlib import Path

from warplab.lab.campaigns.numpy.bench import run_numpy, table_lines
from warplab.lab.console import csv, finish_bench, finish_run, json_path, progress


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``warplab numpy``."""
    p = sub.add_parser("numpy", help="warplab's calls on host input against NumPy's "
                       "equivalent (the cpu backend), ratio per case")
    p.add_argument("--case", default=None, help="comma-separated case name prefixes "
                   "(default: all)")
    p.add_argument("--json", dest="json_path", help="write the results JSON here")


def print_table(records: list[dict]) -> None:
    print("\n".join(table_lines(records)))


def run(args: argparse.Namespace) -> int:
    """``warplab numpy``: the quick campaign, printed."""
    with progress("numpy (cpu)") as update:
        doc = run_numpy(campaign="quick", json_path=json_path(args),
                        names=csv(args.case) if args.case else None, progress=update)
    print_table(doc["results"])
    return finish_run(doc)


def bench(args: argparse.Namespace, backend: str, campaign: str, out: Path) -> bool:
    """The numpy campaign of ``warplab bench`` (always the cpu backend: it measures the
    NumPy backend against NumPy); ``--variant`` names case prefixes (ignored under
    ``bench all``); the other options do not apply."""
    path = out / "numpy.json"
    names = None if args.family == "all" else args.variant
    with progress(f"numpy {campaign} (cpu)") as update:
        doc = run_numpy(campaign=campaign, json_path=path, names=names, progress=update)
    print_table(doc["results"])
    return finish_bench(doc, path)

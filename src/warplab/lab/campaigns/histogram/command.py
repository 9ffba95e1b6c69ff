"""``warplab histogram`` (byte histograms of files, printed at once; ``--time`` for the timing
lab) and the histogram part of ``warplab bench``."""
from __future__ import annotations

import argparse
import contextlib
import time
from pathlib import Path
from typing import Iterator

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from warplab.lab.harness import results
from warplab.lab.harness.tables import print_table, summary_table, timing_table
from warplab.lab.console import (console, finish_bench, json_path, parse_size, progress, settings,
                        timing_args, variant_names)
from warplab.cli import bins_rows, count_files
from warplab.core.device import resolve_backend
from warplab.core.registry import record_variants
from warplab.core.streaming import observe
from warplab.families.histogram.api import byte_histogram
from warplab.lab.campaigns.histogram.bench import CAMPAIGNS, run_histogram
from warplab.families.histogram.spec import resolve
from warplab.core.errors import InvalidValueError

err_console = Console(stderr=True)


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``warplab histogram``."""
    h = sub.add_parser("histogram", help="byte histogram of files (--time: with timings)",
                       description="Count the bytes of each FILE (warplab.byte_histogram) and "
                       "print the most frequent bins. --time measures instead: the variants "
                       "(and --compare the comparators) on one FILE or generated data, with a "
                       "timing table; --generate, --compare, --json and the timing options "
                       "imply --time.")
    h.add_argument("files", nargs="*", metavar="FILE", help="input files (streamed: read by "
                   "threads into pinned buffers, copies overlapped with the kernel)")
    h.add_argument("--bins", default="bytes", choices=["bytes", "ascii128", "letters"],
                   help="bytes: 256 bins (default); ascii128: codes 1..128; letters: A/a..Z/z "
                   "and other")
    h.add_argument("--time", action="store_true", help="time the variants (the timing lab) "
                   "instead of only counting")
    h.add_argument("--generate", choices=["uniform", "const", "text", "random"],
                   help="time on generated data (implies --time)")
    h.add_argument("--size", type=parse_size, help="bytes to generate (e.g. 1G, 2^30)")
    h.add_argument("--variant", default=None, help="a variant name; with --time also "
                   "comma-separated names or 'all' (default: the default variant)")
    h.add_argument("--compare", action="store_true", help="also time the comparators "
                   "(implies --time)")
    timing_args(h, runs=None, warmup=None)
    h.add_argument("--top", type=int, default=16, help="bins to print (0 = all)")
    h.add_argument("--json", dest="json_path", help="write the results JSON here (implies "
                   "--time)")


def _timed(args: argparse.Namespace) -> bool:
    """True when the options ask for the timing lab."""
    many = args.variant is not None and (args.variant.strip() == "all" or "," in args.variant)
    return bool(args.time or args.generate or args.compare or args.json_path or many
                or args.runs is not None or args.warmup is not None or args.pinned
                or args.flush_l2)


def run(args: argparse.Namespace) -> int:
    """``warplab histogram``: count and print at once, or (``--time``) measure."""
    if _timed(args):
        return _run_timed(args)
    if args.size is not None:
        raise InvalidValueError("--size goes with --generate KIND (which times the variants)")
    if not args.files:
        raise InvalidValueError("give FILE... to count (or --generate KIND --size N to time)")
    return count_files(args.files, args.bins, args.top, args.variant, args.device)


@contextlib.contextmanager
def _bytes_progress(name: str) -> Iterator[None]:
    """A progress bar of the bytes streamed, with the rate so far (GB/s); on stderr when it
    is a terminal, gone when done."""
    if not err_console.is_terminal:
        yield
        return
    t0 = time.perf_counter()
    cols = (TextColumn("[bold]{task.description}"), BarColumn(), DownloadColumn(),
            TextColumn("{task.fields[rate]}"), TimeRemainingColumn())
    with Progress(*cols, console=err_console, transient=True) as prog:
        task = prog.add_task(name, total=None, rate="")

        def update(done: int, total: int) -> None:
            dt = time.perf_counter() - t0
            prog.update(task, completed=done, total=total,
                        rate=f"{done / dt / 1e9:.1f} GB/s" if dt > 0 else "")

        with observe(update):
            yield


def _run_timed(args: argparse.Namespace) -> int:
    """``warplab histogram --time``: measure, print the bins and the timing table."""
    if len(args.files) > 1:
        raise InvalidValueError("--time measures one FILE (or --generate KIND --size N)")
    file = args.files[0] if args.files else None
    if (file is None) == (args.generate is None):
        raise InvalidValueError("give either FILE or --generate KIND (with --size)")
    if args.generate and args.size is None:
        raise InvalidValueError("--generate needs --size")
    backend = resolve_backend(args.device)
    mapping = resolve(args.bins)
    names = variant_names("histogram", args.variant, backend)
    seen: list[np.ndarray] = []
    with progress("measuring") as update:
        doc = run_histogram(
            campaign="quick", backend=backend, json_path=json_path(args),
            sizes=[args.size] if args.size is not None else None,
            kinds=[args.generate] if args.generate else None, bins=[args.bins],
            variant_names=names, with_comparators=args.compare,
            settings=settings(args, None), file=file,
            on_input=lambda inp: seen.append(mapping.apply_to_counts(inp.counts256)),
            progress=update)
    recs = doc["results"]
    if json_path(args) is not None:  # the counts too: what the command printed, every bin
        doc["meta"]["counts"] = {"bins": args.bins,
                                 "counts": [int(c) for c in np.asarray(seen[0])]}
        results.write(json_path(args), doc["meta"], recs)
    _print_bins(seen[0], args.bins, args.top)
    p = recs[0]["params"]
    print_table(timing_table(recs, f"{p['data']}, {p['size']} bytes, {args.bins} "
                             f"({mapping.nbins} bins), {backend}, times in ms"), console)
    return 0 if all(r["verified"] for r in recs) else 1


def _print_bins(counts: np.ndarray, bins: str, top: int) -> None:
    total = int(np.asarray(counts.get() if hasattr(counts, "get") else counts).sum())
    rows = bins_rows(counts, bins, top)
    t = Table(title=f"histogram ({bins}), {total} bytes" + (f", top {len(rows)}" if top else ""))
    for col in ("bin", "label", "count", "%"):
        t.add_column(col, justify="right")
    for row in rows:
        t.add_row(*row)
    console.print(t)


def bench(args: argparse.Namespace, backend: str, campaign: str, out: Path) -> bool:
    """The histogram campaign of ``warplab bench``; True when every record verified."""
    path = out / "histogram.json"
    with progress(f"histogram {campaign} ({backend})") as update:
        doc = run_histogram(
            campaign=campaign, backend=backend, json_path=path, sizes=args.sizes,
            kinds=args.data, bins=args.bins, variant_names=args.variant,
            with_comparators=not args.no_compare, settings=settings(args, CAMPAIGNS[campaign]),
            progress=update)
    largest = max(r["params"]["size"] for r in doc["results"]) if doc["results"] else 0
    rows = [r for r in doc["results"] if r["params"]["size"] == largest]
    print_table(summary_table(rows, f"histogram at {largest} bytes ({backend})"), console)
    return finish_bench(doc, path)

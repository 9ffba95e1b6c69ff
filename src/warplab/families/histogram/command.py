"""``warplab histogram`` (the byte-histogram lab) and the histogram part of ``warplab bench``."""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from rich.table import Table

from ...bench.tables import print_table, summary_table, timing_table
from ...console import (console, finish_bench, json_path, parse_size, progress, settings,
                        timing_args, variant_names)
from ...core.device import resolve_backend
from .bench import CAMPAIGNS, run_histogram
from .spec import resolve


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``warplab histogram``."""
    h = sub.add_parser("histogram", help="histogram of a file or generated data, with timings")
    h.add_argument("file", nargs="?", help="input file (read via mmap)")
    h.add_argument("--generate", choices=["uniform", "const", "text", "random"])
    h.add_argument("--size", type=parse_size, help="bytes to generate (e.g. 1G, 2^30)")
    h.add_argument("--bins", default="ascii128", choices=["bytes", "ascii128", "letters"])
    h.add_argument("--variant", default=None, help="comma-separated names or 'all' (default: "
                   "the default variant)")
    h.add_argument("--compare", action="store_true", help="also time the comparators")
    timing_args(h, runs=20, warmup=3)
    h.add_argument("--top", type=int, default=16, help="bins to print (0 = all)")
    h.add_argument("--json", dest="json_path", help="write the results JSON here")


def _label(i: int, bins: str) -> str:
    if bins == "letters":
        return "other" if i == 0 else f"{chr(64 + i)}/{chr(96 + i)}"
    code = i + 1 if bins == "ascii128" else i
    ch = chr(code) if 32 < code < 127 else {32: "' '", 10: "\\n", 9: "\\t"}.get(code, "")
    return f"{code:3d} {ch}"


def run(args: argparse.Namespace) -> int:
    """``warplab histogram``: measure, print the bins and the timing table."""
    if (args.file is None) == (args.generate is None):
        raise ValueError("give either FILE or --generate KIND (with --size)")
    if args.generate and args.size is None:
        raise ValueError("--generate needs --size")
    backend = resolve_backend(args.device)
    mapping = resolve(args.bins)
    names = variant_names("histogram", args.variant, backend)
    seen: list[np.ndarray] = []
    with console.status("measuring"):
        doc = run_histogram(
            campaign="quick", backend=backend, json_path=json_path(args),
            sizes=[args.size] if args.size is not None else None,
            kinds=[args.generate] if args.generate else None, bins=[args.bins],
            variant_names=names, with_comparators=args.compare,
            settings=settings(args, None), file=args.file,
            on_input=lambda inp: seen.append(mapping.apply_to_counts(inp.counts256)))
    recs = doc["results"]
    _print_bins(seen[0], args.bins, args.top)
    p = recs[0]["params"]
    print_table(timing_table(recs, f"{p['data']}, {p['size']} bytes, {args.bins} "
                             f"({mapping.nbins} bins), {backend}, times in ms"), console)
    return 0 if all(r["verified"] for r in recs) else 1


def _print_bins(counts: np.ndarray, bins: str, top: int) -> None:
    total = int(counts.sum())
    order = np.argsort(-counts, kind="stable")
    order = order[counts[order] > 0]
    if top:
        order = order[:top]
    t = Table(title=f"histogram ({bins}), {total} bytes" +
              (f", top {len(order)}" if top else ""))
    for col in ("bin", "label", "count", "%"):
        t.add_column(col, justify="right")
    for i in order:
        t.add_row(str(int(i)), _label(int(i), bins), str(int(counts[i])),
                  f"{100 * counts[i] / total:.3f}" if total else "-")
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

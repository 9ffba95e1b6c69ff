"""``warplab reduce`` (the reduction lecture's table for one input) and the reduce part of
``warplab bench``."""
from __future__ import annotations

import argparse
from pathlib import Path

from warplab.lab.harness.tables import call_table, lecture_table, print_table
from warplab.lab.console import (all_verified, console, csv, finish_bench, json_path, parse_size,
                        progress, settings, timing_args)
from warplab.core.device import resolve_backend
from warplab.lab.campaigns.reduce.bench import REDUCE_CAMPAIGNS, lecture_rows, run_reduce
from warplab.core.errors import InvalidValueError

DTYPES = ("int32", "int64", "float32", "float64")
OPS = ("sum", "min", "max", "mean")


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``warplab reduce``."""
    rd = sub.add_parser("reduce", help="the reduction lecture's table for one input")
    rd.add_argument("--size", type=parse_size, default=1 << 24, help="elements (default 2^24)")
    rd.add_argument("--dtype", default="int32", choices=DTYPES)
    rd.add_argument("--op", default="sum", choices=OPS)
    rd.add_argument("--data", default="random", choices=["random", "equal"])
    rd.add_argument("--variant", default="all", help="comma-separated names or 'all'")
    rd.add_argument("--compare", action="store_true", help="also time the comparators")
    timing_args(rd, runs=20, warmup=3)
    rd.add_argument("--json", dest="json_path", help="write the results JSON here")


def run(args: argparse.Namespace) -> int:
    """``warplab reduce``: time the variants on one input and print the lecture's table."""
    backend = resolve_backend(args.device)
    names = None if args.variant.strip() == "all" else csv(args.variant)
    with progress("measuring") as update:
        doc = run_reduce(
            campaign="quick", backend=backend, json_path=json_path(args),
            configs=[(args.size, args.dtype)], ops=[args.op], variant_names=names,
            with_comparators=args.compare, settings=settings(args, None), kind=args.data,
            progress=update)
    print_lecture_tables(doc["results"], backend)
    return 0 if all_verified(doc) else 1


def print_lecture_tables(records: list[dict], backend: str) -> None:
    """The lecture's table at the largest size of every (dtype, op), then call latencies."""
    kernel = [r for r in records if r["params"].get("mode") != "call"]
    groups: dict[tuple, list[dict]] = {}
    for r in kernel:
        p = r["params"]
        groups.setdefault((p["dtype"], p["op"], p["size"]), []).append(r)
    largest: dict[tuple, int] = {}
    for dt, op, n in groups:
        largest[(dt, op)] = max(largest.get((dt, op), 0), n)
    for (dt, op, n), rows in groups.items():
        if n == largest[(dt, op)]:
            print_table(lecture_table(lecture_rows(rows), f"{op} of {n} {dt} ({backend}), "
                                      "kernel-phase medians"), console)
    calls = [r for r in records if r["params"].get("mode") == "call"]
    if calls:
        print_table(call_table(calls, "call latency: host call to result ready (us)"), console)


def bench(args: argparse.Namespace, backend: str, campaign: str, out: Path) -> bool:
    """The reduce campaign of ``warplab bench``; True when every record verified."""
    c = REDUCE_CAMPAIGNS[campaign]
    bad = [d for d in args.dtypes or [] if d not in DTYPES]
    if bad:
        raise InvalidValueError(f"bench reduce: --dtypes {','.join(bad)} not supported "
                         f"(choose from {','.join(DTYPES)})")
    bad = [o for o in args.ops or [] if o not in OPS]
    if bad:
        raise InvalidValueError(f"bench reduce: --ops {','.join(bad)} not supported "
                         f"(choose from {','.join(OPS)})")
    configs = None
    if args.sizes or args.dtypes:
        dtypes = args.dtypes or sorted({dt for _, dt in c.configs})
        sizes = args.sizes or sorted({n for n, _ in c.configs})
        configs = [(n, dt) for dt in dtypes for n in sizes]
    path = out / "reduce.json"
    with progress(f"reduce {campaign} ({backend})") as update:
        doc = run_reduce(
            campaign=campaign, backend=backend, json_path=path, configs=configs, ops=args.ops,
            variant_names=args.variant, with_comparators=not args.no_compare,
            settings=settings(args, c), progress=update)
    print_lecture_tables(doc["results"], backend)
    return finish_bench(doc, path)

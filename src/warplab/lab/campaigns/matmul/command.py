"""``warplab matmul`` (GFLOP/s, % of cuBLAS, the flop-to-word analysis) and the matmul part of
``warplab bench``."""
from __future__ import annotations

import argparse
from pathlib import Path

from warplab.lab.harness.tables import matmul_table, print_table
from warplab.lab.console import (console, csv, finish_bench, finish_run, json_path, parse_size,
                        progress, settings, timing_args)
from warplab.core.device import resolve_backend
from warplab.lab.campaigns.matmul.bench import MATMUL_CAMPAIGNS, run_matmul
from warplab.core.errors import InvalidValueError


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``warplab matmul``."""
    mm = sub.add_parser("matmul", help="C = A B: GFLOP/s, %% of cuBLAS, flop-to-word analysis")
    mm.add_argument("--size", type=parse_size, default=1024, help="M = N = K (default 1024)")
    for dim in ("m", "n", "k"):
        mm.add_argument(f"--{dim}", type=parse_size, help=f"{dim.upper()} (default: --size)")
    mm.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    mm.add_argument("--variant", default="all", help="comma-separated names or 'all'")
    mm.add_argument("--compare", action="store_true", help="also time the comparator: cuBLAS "
                    "(cupy.matmul), on the cpu backend np.matmul")
    timing_args(mm, runs=20, warmup=3)
    mm.add_argument("--json", dest="json_path", help="write the results JSON here")


def print_matmul_tables(records: list[dict], backend: str) -> None:
    """One table per (dtype, m x n x k), in the order measured."""
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault((r["params"]["dtype"], *r["dims"]), []).append(r)
    for (dt, m, n, k), rows in groups.items():
        ceiling = next((r["compute_ceiling"] for r in rows if r.get("compute_ceiling")), None)
        print_table(matmul_table(rows, f"matmul {m}x{k} @ {k}x{n} {dt} ({backend}), kernel "
                                 f"medians; compute ceiling: {ceiling or 'none'}"), console)


def run(args: argparse.Namespace) -> int:
    """``warplab matmul``: time the variants on one shape and print the table."""
    backend = resolve_backend(args.device)
    names = None if args.variant.strip() == "all" else csv(args.variant)
    m, n, k = (args.size if d is None else d for d in (args.m, args.n, args.k))
    with progress("measuring") as update:
        doc = run_matmul(campaign="quick", backend=backend, json_path=json_path(args),
                         configs=[(m, n, k, args.dtype)], variant_names=names,
                         with_comparators=args.compare, settings=settings(args, None),
                         progress=update)
    print_matmul_tables(doc["results"], backend)
    return finish_run(doc)


def bench(args: argparse.Namespace, backend: str, campaign: str, out: Path) -> bool:
    """The matmul campaign of ``warplab bench``; True when every record verified."""
    c = MATMUL_CAMPAIGNS[campaign]
    configs = None
    if args.sizes or args.dtypes:
        dtypes = args.dtypes or sorted({cfg[3] for cfg in c.configs})
        bad = [d for d in dtypes if d not in ("float32", "float64")]
        if bad:
            raise InvalidValueError(f"bench matmul: --dtypes {','.join(bad)} not supported "
                             "(choose from float32,float64)")
        sizes = args.sizes or sorted({cfg[0] for cfg in c.configs})
        configs = [(n, n, n, dt) for dt in dtypes for n in sizes]
    path = out / "matmul.json"
    with progress(f"matmul {campaign} ({backend})") as update:
        doc = run_matmul(campaign=campaign, backend=backend, json_path=path, configs=configs,
                         variant_names=args.variant, with_comparators=not args.no_compare,
                         settings=settings(args, c), progress=update)
    print_matmul_tables(doc["results"], backend)
    return finish_bench(doc, path)

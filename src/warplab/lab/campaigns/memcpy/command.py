"""``warplab memcpy`` (one cell of the grid of CUB's DeviceBatchMemcpy benchmark: every
variant and, with ``--compare``, CUB) and the memcpy part of ``warplab bench`` (that grid)."""
from __future__ import annotations

import argparse
from pathlib import Path

from rich.table import Table

from warplab.lab.harness.tables import print_table
from warplab.lab.console import (
    all_verified,
    console,
    csv,
    finish_bench,
    json_path,
    parse_size,
    progress,
    settings,
    timing_args,
)
from warplab.core.device import resolve_backend
from warplab.lab.campaigns.memcpy.bench import LAYOUTS, MEMCPY_CAMPAIGNS, Case, cases, plan_of, run_memcpy
from warplab.core.errors import InvalidValueError


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``warplab memcpy``."""
    m = sub.add_parser("memcpy", help="batched copies: one cell of CUB's "
                       "DeviceBatchMemcpy benchmark grid")
    m.add_argument("--min", type=parse_size, default=1, help="smallest buffer, bytes (1)")
    m.add_argument("--max", type=parse_size, default=64, help="largest buffer, bytes (64)")
    m.add_argument("--in", dest="src_layout", default="consecutive", choices=LAYOUTS,
                   help="source offsets (consecutive)")
    m.add_argument("--out", dest="dst_layout", default="consecutive", choices=LAYOUTS,
                   help="destination offsets (consecutive)")
    m.add_argument("--align", type=int, default=1, help="offsets and sizes multiples of (1)")
    m.add_argument("--total", type=parse_size, default=None,
                   help="data bytes (default 512M on cuda, 1M on cpu)")
    m.add_argument("--variant", default="all", help="comma-separated names or 'all'")
    m.add_argument("--compare", action="store_true", help="also time CUB and the runtime")
    timing_args(m, runs=20, warmup=3)
    m.add_argument("--json", dest="json_path", help="write the results JSON here")


def run(args: argparse.Namespace) -> int:
    """``warplab memcpy``: time the variants on one cell and print its table."""
    backend = resolve_backend(args.device)
    total = args.total if args.total is not None else (512 << 20 if backend == "cuda"
                                                        else 1 << 20)
    if total < 1:
        raise InvalidValueError(f"--total must be at least 1 byte, got {total}")
    case = Case(args.min, args.max, args.src_layout, args.dst_layout, args.align, total)
    names = None if args.variant.strip() == "all" else csv(args.variant)
    if backend == "cpu" and names is None:
        names = ["numpy"]
    with progress("memcpy") as update:
        doc = run_memcpy(campaign="quick", backend=backend, json_path=json_path(args),
                         grid=[case], variant_names=names, with_comparators=args.compare,
                         settings=settings(args, None), call_arrays=(), progress=update)
    print_tables(doc["results"], backend)
    return 0 if all_verified(doc) else 1


def _f(x: float | None, nd: int = 1) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def print_tables(records: list[dict], backend: str) -> None:
    """One table per grid cell (kernel-phase medians; GB/s of all bytes and of data bytes,
    % of the measured copy bandwidth, speed relative to CUB), then the call latencies."""
    cells: dict[str, list[dict]] = {}
    for r in records:
        if r["params"].get("mode") != "call":
            cells.setdefault(r["params"]["case"], []).append(r)
    for label, rows in cells.items():
        cub = next((r for r in rows if r["provider"] == "cub" and r["verified"]), None)
        t = Table(title=f"{label} ({backend}): {rows[0]['params']['count']} buffers")
        for col in ("variant", "us", "GB/s", "data GB/s", "% copy", "x CUB", "ok"):
            t.add_column(col, justify="left" if col in ("variant", "ok") else "right")
        for r in rows:
            k = r["phases"].get("kernel")
            med = k["median"] if k and r["verified"] else None
            ratio = (cub["phases"]["kernel"]["median"] / med if cub and med else None)
            name = r["variant"] + (" (ceiling)" if r["params"].get("mode") == "ceiling" else "")
            t.add_row(name, _f(1e3 * med if med else None), _f(r["gbps"]),
                      _f(r.get("data_gbps")), _f(r["pct_of_copy_bw"]), _f(ratio, 2),
                      "yes" if r["verified"] else f"NO: {r['error']}")
        print_table(t, console)
    calls = [r for r in records if r["params"].get("mode") == "call"]
    if calls:
        t = Table(title="call: host time until the copies are done (us)")
        for col in ("arrays", "call", "median", "q10", "q90", "ok"):
            t.add_column(col, justify="left" if col in ("call", "ok") else "right")
        for r in calls:
            k = r["phases"]["kernel"]
            t.add_row(str(r["params"]["count"]), r["variant"], _f(1e3 * k["median"]),
                      _f(1e3 * k["q10"]), _f(1e3 * k["q90"]),
                      "yes" if r["verified"] else f"NO: {r['error']}")
        print_table(t, console)


def _grid(args: argparse.Namespace, campaign: str) -> list[Case] | None:
    """The campaign's cases at the ``--sizes`` totals (None: the campaign's own)."""
    c = MEMCPY_CAMPAIGNS[campaign]
    return [g for total in args.sizes for g in cases(c, total)] if args.sizes else None


def bench(args: argparse.Namespace, backend: str, campaign: str, out: Path) -> bool:
    """The memcpy campaign of ``warplab bench``; True when every record verified.
    ``--sizes`` replaces the data bytes per cell; ``--deadline`` stops a planned campaign
    from starting new cells after that many seconds."""
    c = MEMCPY_CAMPAIGNS[campaign]
    path = out / "memcpy.json"
    with progress(f"memcpy {campaign} ({backend})") as update:
        doc = run_memcpy(campaign=campaign, backend=backend, json_path=path,
                         grid=_grid(args, campaign), variant_names=args.variant,
                         with_comparators=not args.no_compare,
                         settings=settings(args, c) if args.runs or args.warmup else None,
                         progress=update, log=console.print,
                         deadline_s=getattr(args, "deadline", None))
    print_tables(doc["results"], backend)
    return finish_bench(doc, path)


def plan(args: argparse.Namespace, backend: str, campaign: str) -> None:
    """``warplab bench memcpy --full --dry-run``: the plan and its estimated seconds, on the
    CPU (nothing measured): per size range and alignment its data, buffers, the targets per
    layout and the seconds of its four cells. The copy ceiling is the stored one where the
    GPU is in use and was measured, else the H100's (``plan.COPY_GBPS_H100``)."""
    from warplab.lab.harness.ceilings import cached_ceilings
    from warplab.core.registry import variants
    from warplab.lab.campaigns.memcpy.ceiling import CEILING
    from warplab.lab.campaigns.memcpy.comparators import MEMCPY_PROVIDERS
    from warplab.lab.campaigns.memcpy.plan import COPY_GBPS_H100, STARTUP_S, estimate_s

    c = MEMCPY_CAMPAIGNS[campaign]
    if not c.planned:
        console.print(f"memcpy --{campaign}: not a planned campaign (every target on every "
                      "case, held timing): no estimate; --full is planned")
        return
    names = list(args.variant or [v.name for v in variants("memcpy_batched", "cuda")])
    if not args.no_compare:
        names += [p.name for p in MEMCPY_PROVIDERS] + [CEILING]
    stored = cached_ceilings("cuda") if backend == "cuda" else None
    copy = (stored or {}).get("copy_gbps") or COPY_GBPS_H100
    cells = plan_of(campaign, _grid(args, campaign), names, copy,
                    settings(args, c) if args.runs or args.warmup else None)
    t = Table(title=f"memcpy --{campaign}: the plan at a copy ceiling of {copy:.0f} GB/s "
                    f"({'stored' if stored else 'H100, measured'})")
    for col in ("sizes", "align", "data", "buffers", "targets", "est. s"):
        t.add_column(col, justify="left" if col == "sizes" else "right")
    rows: dict[tuple[int, int, int, int], list] = {}
    for p in cells:
        rows.setdefault(p.size_key, []).append(p)
    for (lo, hi, a, total), ps in rows.items():
        t.add_row(f"{lo}-{hi} B" if lo != hi else f"{hi} B", str(a), f"{total / 2**20:g} MiB",
                  f"{ps[0].count:,}", "/".join(str(len(p.targets)) for p in ps),
                  f"{sum(p.est_s for p in ps):.1f}")
    print_table(t, console)
    calls = c.call_arrays
    console.print(f"{len(cells)} cells, {sum(len(p.targets) for p in cells)} records: "
                  f"about {estimate_s(cells, startup=False, calls=False):.0f} s for the cells"
                  f", {estimate_s([], startup=False, calls=bool(calls)):.0f} s for the call "
                  f"records, {STARTUP_S:.0f} s of start-up (cold caches): "
                  f"{estimate_s(cells, calls=bool(calls)):.0f} s in all")

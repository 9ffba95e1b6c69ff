"""``warplab stream`` (the quick campaign, or the sizes and sources named) and the stream part
of ``warplab bench``: end-to-end GB/s of host data against the pinned H2D ceiling, and the
phases (read, H2D, kernel) with their overlap."""
from __future__ import annotations

import argparse
from pathlib import Path

from rich.table import Table

from warplab.lab.harness.tables import print_table
from warplab.lab.console import console, csv, existing_folder, finish_bench, finish_run, json_path, parse_size, progress
from warplab.core.device import resolve_backend
from warplab.lab.campaigns.stream.bench import OPS, SOURCES, run_stream


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``warplab stream``."""
    p = sub.add_parser("stream", help="host data to a result at bus speed: end-to-end GB/s "
                       "of arrays and files, and the phases' overlap")
    p.add_argument("--sizes", type=lambda t: [parse_size(x) for x in csv(t)],
                   help="bytes per case (default: the quick campaign's 64M,256M)")
    p.add_argument("--source", type=csv, default=None,
                   help=f"comma-separated sources (default: all: {', '.join(SOURCES)})")
    p.add_argument("--op", type=csv, default=None, help=f"ops ({', '.join(OPS)})")
    p.add_argument("--runs", type=int, default=None, help="timed runs per case")
    p.add_argument("--warmup", type=int, default=None, help="untimed runs first")
    p.add_argument("--tmp", type=existing_folder, default=None, help="folder for the campaign's files (default: "
                   "the system's temporary folder)")
    p.add_argument("--json", dest="json_path", help="write the results JSON here")


def run(args: argparse.Namespace) -> int:
    """``warplab stream``: the quick campaign (or the sizes/sources given), printed."""
    backend = resolve_backend(args.device)
    with progress(f"stream ({backend})") as update:
        doc = run_stream(campaign="quick", backend=backend, json_path=json_path(args),
                         sizes=args.sizes, sources=args.source, ops=args.op, runs=args.runs,
                         warmup=args.warmup, tmp_dir=args.tmp, progress=update)
    print_tables(doc)
    return finish_run(doc)


def _f(x: float | None, nd: int = 1) -> str:
    return "-" if x is None else f"{x:,.{nd}f}"


def _ms(r: dict, key: str) -> str:
    st = r["read"] if key == "read" else r["phases"].get(key)
    return _f(st["median"], 2) if st else "-"


def print_tables(doc: dict) -> None:
    """One table per op: a row per (size, source): end-to-end ms and GB/s, % of the pinned
    H2D ceiling, the phases' medians (ms) and the overlap."""
    recs = doc["results"]
    ceiling = doc["meta"]["ceilings"].get("h2d_pinned_gbps")
    backend = recs[0]["backend"] if recs else "-"
    for op in dict.fromkeys(r["params"]["op"] for r in recs):
        t = Table(title=f"stream: {op} of host data, end to end ({backend}; pinned H2D "
                        f"ceiling {_f(ceiling)} GB/s)")
        for col in ("size", "source", "host", "chunk", "e2e ms", "GB/s", "% H2D",
                    "read ms", "h2d ms", "kernel ms", "overlap"):
            t.add_column(col, justify="left" if col in ("source", "host") else "right")
        for r in (r for r in recs if r["params"]["op"] == op):
            p = r["params"]
            gb = _f(r["e2e_gbps"]) if r["verified"] else "err"
            t.add_row(f"{p['size'] >> 20} MiB", p["source"], str(p["host"]),
                      f"{p['chunk_bytes'] >> 20} MiB" if p["chunk_bytes"] >= 1 << 20
                      else str(p["chunk_bytes"]),
                      _ms(r, "total"), gb, _f(r["pct_of_h2d_pinned"]), _ms(r, "read"),
                      _ms(r, "h2d"), _ms(r, "kernel"), _f(r["overlap"], 2))
        print_table(t, console)
    console.print("medians; overlap = (read + h2d + kernel) / end to end (1: one after the "
                  "other); oneshot: streaming off (one pageable copy)")
    for r in recs:
        if r["error"]:
            console.print(f"error: {r['variant']} {r['params']['op']} {r['params']['size']}: "
                          f"{r['error']}", soft_wrap=True)


def bench(args: argparse.Namespace, backend: str, campaign: str, out: Path) -> bool:
    """The stream campaign of ``warplab bench``; True when every record verified.
    ``--variant`` names sources, ``--ops`` ops (under ``bench all``, names that are not the
    campaign's are left to the other families); ``--sizes``, ``--runs``, ``--warmup`` apply;
    the rest does not."""
    path = out / "stream.json"
    sources, ops = args.variant, args.ops
    if args.family == "all":
        sources = [s for s in sources or [] if s in SOURCES] or None
        ops = [o for o in ops or [] if o in OPS] or None
    with progress(f"stream {campaign} ({backend})") as update:
        doc = run_stream(campaign=campaign, backend=backend, json_path=path, sizes=args.sizes,
                         sources=sources, ops=ops, runs=args.runs, warmup=args.warmup,
                         progress=update)
    print_tables(doc)
    return finish_bench(doc, path)


"""``warplab latency`` (a quick look: the quick campaign, or the cases named) and the latency
part of ``warplab bench`` (``--quick``, ``--table``, ``--full``)."""
from __future__ import annotations

import argparse
from pathlib import Path

from rich.table import Table

from warplab.lab.harness.stats import paired_or_pooled
from warplab.lab.harness.tables import print_table
from warplab.lab.console import console, csv, finish_bench, finish_run, json_path, progress
from warplab.core.device import resolve_backend
from warplab.lab.campaigns.latency.bench import CUPY_FLOORS, FLOOR_CASE, MODES, OWN_FLOORS, run_latency
from warplab.lab.campaigns.latency.cases import CASE_NAMES, CASES

_TITLES = {"call_latency": "call latency, us", "host_per_call": "host time per call, us"}


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``warplab latency``."""
    p = sub.add_parser("latency", help="small calls: call latency and host time per call, "
                       "next to CuPy, PyTorch and the bare launch")
    p.add_argument("--case", default=None,
                   help=f"comma-separated cases or function names (default: all: "
                        f"{', '.join(CASE_NAMES)})")
    p.add_argument("--runs", type=int, default=None, help="timed calls per round (100)")
    p.add_argument("--warmup", type=int, default=None, help="untimed calls first (20)")
    p.add_argument("--no-compare", action="store_true", help="skip CuPy and PyTorch")
    p.add_argument("--json", dest="json_path", help="write the results JSON here")


def run(args: argparse.Namespace) -> int:
    """``warplab latency``: the quick campaign, printed."""
    backend = resolve_backend(args.device)
    with progress(f"latency ({backend})") as update:
        doc = run_latency(campaign="quick", backend=backend, json_path=json_path(args),
                          names=csv(args.case) if args.case else None,
                          with_comparators=not args.no_compare, calls=args.runs,
                          warmup=args.warmup, progress=update)
    print_tables(doc["results"], backend)
    return finish_run(doc)


def _us(r: dict | None) -> str:
    if r is None:
        return "-"
    if r["phases"]["total"] is None:
        return "err"
    v = f"{1e3 * r['phases']['total']['median']:.1f}"
    return v if r["verified"] else v + "!"


def _paired(a: dict | None, b: dict | None) -> float | None:
    """a / b: the median of the per-round ratios (the rounds were interleaved, so host drift
    cancels in each; call latency: ``calls`` samples per round, host time per call: one sample
    per burst, a burst per round); the ratio of the medians where the rounds do not pair up."""
    if not (a and b and a["phases"]["total"] and b["phases"]["total"]):
        return None
    per = a["params"].get("calls", 1) if a["params"]["mode"] == MODES[0] else 1
    return paired_or_pooled(a["phases"]["total"]["samples"], b["phases"]["total"]["samples"],
                            per)


def print_tables(records: list[dict], backend: str) -> None:
    """Per mode a table: one row per case, warplab's / CuPy's / PyTorch's median (us), the
    ratio warplab / PyTorch (paired per round); the floor in a line below. ``!``: a result that differs from
    the reference; ``err``: the call failed (the JSON holds the error)."""
    by: dict[tuple[str, str, str], dict] = {}
    for r in records:
        p = r["params"]
        key = r["variant"] if p["case"] == FLOOR_CASE else r["provider"]
        by[(p["mode"], p["case"], key)] = r
    libs = [lib for lib in ("cupy", "torch")
            if any(k[2] == lib and k[1] != FLOOR_CASE for k in by)]
    cases = list(dict.fromkeys(r["params"]["case"] for r in records
                               if r["params"]["case"] != FLOOR_CASE))
    for mode in MODES:
        t = Table(title=f"{_TITLES[mode]} ({backend})")
        t.add_column("case")
        for col in ("warplab", *libs, *(["w/torch"] if "torch" in libs else [])):
            t.add_column(col, justify="right")
        for case in cases:
            cells = [by.get((mode, case, lib)) for lib in ("warplab", *libs)]
            row = [case, *(_us(r) for r in cells)]
            if "torch" in libs:
                ratio = _paired(cells[0], cells[-1])
                row.append("-" if ratio is None else f"{ratio:.2f}")
            t.add_row(*row)
        print_table(t, console)
        floor = [by.get((mode, FLOOR_CASE, v)) for v in CUPY_FLOORS]
        if all(f and f["phases"]["total"] for f in floor):
            console.print(f"floor (empty launch): {_us(floor[0])} us, with a 4-byte D2H to "
                          f"pinned {_us(floor[1])} us"
                          + (" (+ sync)" if mode == MODES[0] else " (no sync)"))
        own = [by.get((mode, FLOOR_CASE, v)) for v in OWN_FLOORS]
        if all(f and f["phases"]["total"] for f in own):
            console.print(f"warplab's launch: {_us(own[0])} us, with a 0-d result "
                          f"{_us(own[1])} us"
                          + (" (+ sync, int())" if mode == MODES[0] else " (no sync)"))
    console.print("medians; call latency: the call and its result on the host; host time per "
                  "call: back-to-back calls, no wait for the device")
    if any(not r["verified"] for r in records):
        console.print("!: result differs from the reference; err: the call failed (see JSON)")


def bench(args: argparse.Namespace, backend: str, campaign: str, out: Path) -> bool:
    """The latency campaign of ``warplab bench``; True when every warplab record verified.
    ``--variant`` names cases or functions (under ``bench all``, names that are neither are
    left to the other families); ``--runs``/``--warmup`` replace the campaign's
    calls per round and warm-up calls; ``--sizes``, ``--data``, ``--bins``,
    ``--dtypes`` and ``--ops`` do not apply (ignored: the cases' inputs are fixed)."""
    path = out / "latency.json"
    names = args.variant
    if args.family == "all" and names:  # other families' variant names: not ours to refuse
        known = {*CASE_NAMES, *(c.function for c in CASES)}
        names = [n for n in names if n in known] or None
    with progress(f"latency {campaign} ({backend})") as update:
        doc = run_latency(campaign=campaign, backend=backend, json_path=path,
                          names=names, with_comparators=not args.no_compare,
                          calls=args.runs, warmup=args.warmup, progress=update)
    print_tables(doc["results"], backend)
    return finish_bench(doc, path)


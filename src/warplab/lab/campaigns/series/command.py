"""``warplab series`` (the Pearson report's generation and K2 tables for one shape) and the
series part of ``warplab bench`` (generation, K2, accuracy and the sequential baseline).

The tables are built for a narrow terminal (80 columns): one table per shape, short headers,
failures listed under their table.
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any, Sequence

from rich import box
from rich.table import Table

from warplab.lab.harness.tables import print_table
from warplab.lab.console import (
    console,
    csv,
    finish_bench,
    finish_run,
    json_path,
    parse_size,
    progress,
    settings,
    timing_args,
)
from warplab.core.device import resolve_backend
from warplab.lab.campaigns.series.bench import PARTS, campaign_for, run_series
from warplab.core.errors import InvalidValueError

K1 = "k1_thread_per_series"
K2_ORDER = ("k2_basic", "k2_shared", "k2_shared_unrolled", "k2_multiblock", "rows_adaptive")
WALK_ORDER = (K1, "k1_thread_per_series_b32")
CASE_SHORT = {"float32 K2": "f32 K2", "float64 K2": "f64 K2", "default": "default",
              "default dtype=float64": "dflt f64", "numpy float32": "np f32"}
CASE_NOTES = {"float32 K2": "k2_shared_unrolled summing float32 in float32",
              "float64 K2": "the same on the data as float64",
              "default": "warplab's sum(axis=1), float64 accumulation, float32 result",
              "default dtype=float64": "the same with dtype=float64",
              "numpy float32": "NumPy's np.sum, float32 pairwise"}


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``warplab series``."""
    s = sub.add_parser("series", help="the Pearson report: random-walk generation and the "
                       "per-series mean (K2) tables for one shape")
    s.add_argument("--m", default=None, help="number of series M (default 8192 on cuda, "
                   "2048 on cpu: seconds on either)")
    s.add_argument("--n", default=None, help="values per series N (default 8192 on cuda, "
                   "2048 on cpu)")
    s.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    s.add_argument("--op", default="mean", choices=["mean", "sum"],
                   help="the per-series reduction (default mean)")
    s.add_argument("--variant", default="all", help="comma-separated random_walk / reduce_axis "
                   "variant names, or 'all'")
    s.add_argument("--compare", action="store_true", help="also time the comparators")
    timing_args(s, runs=20, warmup=3)
    s.add_argument("--json", dest="json_path", help="write the results JSON here")


def _dim(name: str, text: str) -> int:
    """``--m`` / ``--n``: an int >= 1 (``8192``, ``2^20``, ``64K``); ValueError otherwise."""
    t = str(text).strip()
    if re.fullmatch(r"[+-]?\d+", t):
        v = int(t)
    else:
        try:
            v = parse_size(t)
        except argparse.ArgumentTypeError:
            raise InvalidValueError(f"--{name} must be an int >= 1, got {text!r}") from None
    if v < 1:
        raise InvalidValueError(f"--{name} must be an int >= 1, got {v}")
    return v


def run(args: argparse.Namespace) -> int:
    """``warplab series``: time the generators and the per-series reductions on one shape."""
    backend = resolve_backend(args.device)
    side = "8192" if backend == "cuda" else "2048"  # a default that finishes in seconds
    m, n = _dim("m", args.m or side), _dim("n", args.n or side)
    names = None if args.variant.strip() == "all" else csv(args.variant)
    with progress("measuring") as update:
        doc = run_series(campaign="quick", backend=backend, json_path=json_path(args),
                         shapes=[(m, n)], dtype=args.dtype, op=args.op,
                         parts=("generation", "mean"), variant_names=names,
                         with_comparators=args.compare, settings=settings(args, None),
                         progress=update)
    print_series_tables(doc["results"], backend)
    return finish_run(doc)


def bench(args: argparse.Namespace, backend: str, campaign: str, out: Path) -> bool:
    """The series campaign of ``warplab bench``; True when every warplab record verified."""
    c = campaign_for(campaign, backend)
    dtypes = [d for d in (args.dtypes or ["float32"]) if d in ("float32", "float64")]
    if not dtypes:
        raise InvalidValueError(f"series data are float32 or float64, not {','.join(args.dtypes)}")
    ops = [o for o in (args.ops or ["mean"]) if o in ("mean", "sum")] or ["mean"]
    path = out / "series.json"
    with progress(f"series {campaign} ({backend})") as update:
        doc = run_series(campaign=campaign, backend=backend, json_path=path, dtype=dtypes[0],
                         op=ops[0], parts=PARTS, variant_names=_known(args.variant),
                         with_comparators=not args.no_compare, settings=settings(args, c),
                         progress=update)
    if args.sizes:
        doc["meta"]["notes"].append("--sizes does not apply to series: shapes come from the "
                                    "campaign (warplab series --m M --n N for one shape)")
    print_series_tables(doc["results"], backend)
    return finish_bench(doc, path)


def _known(names: Sequence[str] | None) -> list[str] | None:
    """``warplab bench all --variant`` names that belong to the series families (None: all)."""
    if not names:
        return None
    from warplab.core import registry

    mine = {v.name for f in ("random_walk", "reduce_axis") for v in registry.variants(f)}
    picked = [x for x in names if x in mine]
    if not picked:
        raise InvalidValueError(f"no random_walk or reduce_axis variant among {', '.join(names)}")
    return picked


# --- tables -----------------------------------------------------------------------------------

def _fmt(x: Any, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def _table(title: str, cols: Sequence[str]) -> Table:
    t = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left")
    for i, c in enumerate(cols):
        t.add_column(c, justify="left" if i == 0 else "right", no_wrap=i == 0)
    return t


def _median(r: dict) -> float | None:
    k = r["phases"].get("kernel")
    return k["median"] if k and r["verified"] else None


def _failures(t: Table, recs: Sequence[dict]) -> Table:
    bad = [f"{r['variant']}: {r['error']}" for r in recs if not r["verified"]]
    if bad:
        t.caption = "NOT VERIFIED: " + "; ".join(bad)
        t.caption_justify = "left"
    return t


def _shapes(recs: Sequence[dict]) -> list[tuple[int, int, str]]:
    seen = {(r["params"]["m"], r["params"]["n"], r["params"]["dtype"]): None for r in recs}
    return list(seen)


def _order(recs: Sequence[dict], chain: Sequence[str]) -> list[dict]:
    pos = {v: i for i, v in enumerate(chain)}
    return sorted(recs, key=lambda r: (r["provider"] != "warplab", pos.get(r["variant"], len(pos)),
                                       r["variant"]))


def generation_table(recs: Sequence[dict], m: int, n: int, dtype: str, backend: str) -> Table:
    """Report §3: per variant the kernel median, GB/s written, % of copy, speedup vs K1."""
    t = _table(f"generation of {m} x {n} {dtype} walks ({backend}), kernel medians",
               ["variant", "ms", "GB/s", "% copy", "x K1", "rel err"])
    base = next((_median(r) for r in recs if r["variant"] == K1), None)
    for r in _order(recs, WALK_ORDER):
        med = _median(r)
        t.add_row(r["variant"], _fmt(med, ".4g"), _fmt(r["gbps"], ".1f"),
                  _fmt(r["pct_of_copy_bw"], ".1f"),
                  _fmt(base / med if base and med else None, ".2f"),
                  _fmt(r.get("rel_error"), ".1e"))
    return _failures(t, recs)


def mean_table(recs: Sequence[dict], m: int, n: int, dtype: str, backend: str) -> Table:
    """Report §4: the K2 steps in the report's order, step and cumulative speedups, GB/s read,
    % of the read ceiling (1 GiB, and "% same": the read kernel over the input's own bytes),
    relative error; comparators last (cumulative only)."""
    op = recs[0]["params"]["op"]
    t = _table(f"{op}(axis=1) of {m} x {n} {dtype} ({backend}), kernel medians",
               ["variant", "ms", "step", "cum", "GB/s", "% read", "% same", "rel err"])
    first = prev = None
    for r in _order(recs, K2_ORDER):
        med = _median(r)
        chain = r["provider"] == "warplab" and r["variant"] in K2_ORDER
        step = prev / med if chain and prev and med else None
        cum = first / med if first and med else None
        t.add_row(r["variant"], _fmt(med, ".4g"), _fmt(step, ".2f"), _fmt(cum, ".2f"),
                  _fmt(r["gbps"], ".1f"), _fmt(r.get("pct_of_read_bw"), ".1f"),
                  _fmt(r.get("pct_of_read_same_bytes"), ".1f"), _fmt(r.get("rel_error"), ".1e"))
        if med and r["variant"] == "k2_basic":
            first = med
        if med and chain:
            prev = med
    return _failures(t, recs)


def calls_table(recs: Sequence[dict], backend: str) -> Table:
    """The public call on device input, back to back: per-call time and GB/s."""
    t = _table(f"public calls on device input, back to back ({backend})",
               ["call", "shape", "us/call", "GB/s", "% read"])
    for r in recs:
        p = r["params"]
        med = _median(r)
        t.add_row(f"{r['variant']} ({r['provider']})", f"{p['m']}x{p['n']}",
                  _fmt(1e3 * med if med else None, ".1f"), _fmt(r["gbps"], ".1f"),
                  _fmt(r.get("pct_of_read_bw"), ".1f"))
    return _failures(t, recs)


def accuracy_table(recs: Sequence[dict], backend: str) -> list[Table]:
    """Report §4.7: per (M, N, eps) the share of series sums within eps, per case; then the
    kernel medians of the sums."""
    cases = list(dict.fromkeys(r["params"]["case"] for r in recs))
    rows: dict[tuple, dict[str, dict]] = {}
    for r in recs:
        p = r["params"]
        rows.setdefault((p["m"], p["n"], p["tol"]), {})[p["case"]] = r
    acc = _table(f"sums within eps of the float64 sum, % of series ({backend})",
                 ["M", "N", "eps", *(CASE_SHORT.get(c, c) for c in cases), "f32 bound"])
    ms = _table(f"kernel medians of those sums, ms ({backend})",
                ["M", "N", *(CASE_SHORT.get(c, c) for c in cases)])
    done = set()
    for (m, n, tol), by in rows.items():
        bound = next((r.get("rounding_bound") for r in by.values()
                      if r.get("rounding_bound") is not None), None)
        acc.add_row(str(m), str(n), f"{tol:.0e}", *(
            _fmt(100 * by[c]["accuracy"] if c in by and by[c].get("accuracy") is not None
                 else None, ".2f") for c in cases), _fmt(None if bound is None else 100 * bound,
                                                         ".2f"))
        if (m, n) not in done:
            done.add((m, n))
            ms.add_row(str(m), str(n), *(_fmt(_median(by[c]) if c in by else None, ".4g")
                                         for c in cases))
    acc.caption = "; ".join(f"{CASE_SHORT.get(c, c)}: {CASE_NOTES.get(c, c)}"
                            for c in cases) + "; f32 bound: the float64 sum rounded to float32"
    acc.caption_justify = "left"
    return [_failures(acc, recs), ms]


def baseline_table(recs: Sequence[dict]) -> Table:
    """Report §1.2.1: the sequential steps in seconds, extrapolated pair steps marked."""
    p0 = recs[0]["params"]
    t = _table(f"sequential baseline (NumPy, host), {p0['m']} x {p0['n']}",
               ["step", "seconds", "extrapolated from"])
    total = 0.0
    for r in recs:
        med = _median(r)
        total += med or 0.0
        p = r["params"]
        t.add_row(p["step"], _fmt(None if med is None else med / 1e3, ".5f"),
                  f"{p['sample_pairs']} of {p['pairs']} pairs" if p.get("extrapolated") else "-")
    t.add_row("total", f"{total / 1e3:.5f}", "")
    return _failures(t, recs)


def print_series_tables(records: Sequence[dict], backend: str) -> None:
    """Every series table the records support, in the report's order."""
    def fam(f: str, mode: str | None = "kernel") -> list[dict]:
        return [r for r in records if r["family"] == f and (
            mode is None or r["params"].get("mode", "kernel") == mode)]

    gen = fam("random_walk")
    for m, n, dt in _shapes(gen):
        rows = [r for r in gen if (r["params"]["m"], r["params"]["n"], r["params"]["dtype"])
                == (m, n, dt)]
        print_table(generation_table(rows, m, n, dt, backend), console)
    means = fam("reduce_axis")
    for m, n, dt in _shapes(means):
        rows = [r for r in means if (r["params"]["m"], r["params"]["n"], r["params"]["dtype"])
                == (m, n, dt)]
        print_table(mean_table(rows, m, n, dt, backend), console)
    calls = fam("reduce_axis", "calls")
    if calls:
        print_table(calls_table(calls, backend), console)
    acc = fam("series_accuracy")
    if acc:
        for t in accuracy_table(acc, backend):
            print_table(t, console)
    base = fam("series_baseline")
    if base:
        print_table(baseline_table(base), console)


__all__ = ["add_parser", "bench", "run", "print_series_tables"]

"""``warplab corr`` (the Pearson matrix of one shape: every variant x precision, with the
comparators on request) and the corr part of ``warplab bench``. Tables fit 80 columns."""
from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich import box
from rich.table import Table

from warplab.lab.harness.tables import print_table
from warplab.lab.console import (
    console,
    csv,
    finish_bench,
    finish_run,
    json_path,
    progress,
    settings,
    timing_args,
)
from warplab.core import registry
from warplab.core.device import resolve_backend
from warplab.lab.campaigns.series.command import _dim
from warplab.lab.campaigns.corr.bench import CORR_CAMPAIGNS, run_corr
from warplab.families.corr.spec import PRECISIONS, CorrProblem
from warplab.core.errors import InvalidValueError


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``warplab corr``."""
    c = sub.add_parser("corr", help="Pearson correlation matrix: time, TFLOP/s, %% of the "
                       "GEMM ceiling and max abs error per variant and precision")
    c.add_argument("--m", default=None, help="number of series M (default 8192 on cuda, "
                   "2048 on cpu: seconds on either)")
    c.add_argument("--n", default=None, help="values per series N (default 8192 on cuda, "
                   "2048 on cpu)")
    c.add_argument("--precision", default="all",
                   help=f"comma-separated {'/'.join(PRECISIONS)} or 'all' (default)")
    c.add_argument("--variant", default=None,
                   help="comma-separated names or 'all' (default: the default variant)")
    c.add_argument("--compare", action="store_true", help="also time cupy.corrcoef, "
                   "torch.corrcoef and cuBLAS DSYRK/SGEMM on pre-centred rows")
    c.add_argument("--pairs", action="store_true", help="also time corr_pairs (the quick "
                   "campaign's shape, threshold 0.9)")
    timing_args(c, runs=10, warmup=2)
    c.add_argument("--json", dest="json_path", help="write the results JSON here")


def _precisions(text: str) -> list[str]:
    return list(PRECISIONS) if text.strip() == "all" else csv(text)


def _variants(text: str | None, backend: str, m: int, n: int) -> list[str]:
    if text is None:
        p = CorrProblem(m, n, "float32", "float64", backend == "cuda")
        return [registry.choose("corrcoef", backend, p).name]
    if text.strip() == "all":
        return [v.name for v in registry.variants("corrcoef", backend)]
    return csv(text)


def run(args: argparse.Namespace) -> int:
    """``warplab corr``: time the variants on one shape and print the table."""
    backend = resolve_backend(args.device)
    side = "8192" if backend == "cuda" else "2048"  # a default that finishes in seconds
    m, n = _dim("m", args.m or side), _dim("n", args.n or side)
    with progress("measuring") as update:
        doc = run_corr(campaign="quick", backend=backend, json_path=json_path(args),
                       shapes=[(m, n)], variant_names=_variants(args.variant, backend, m, n),
                       precisions=_precisions(args.precision), with_comparators=args.compare,
                       with_pairs=args.pairs, settings=settings(args, None), progress=update)
    print_corr_tables(doc["results"], backend)
    return finish_run(doc)


def bench(args: argparse.Namespace, backend: str, campaign: str, out: Path) -> bool:
    """The corr campaign of ``warplab bench``; True when every warplab record verified."""
    c = CORR_CAMPAIGNS[campaign]
    shapes = [(s, s) for s in args.sizes] if args.sizes else None
    names = None
    if args.variant:
        mine = {v.name for v in registry.variants("corrcoef", backend)}
        names = [x for x in args.variant if x in mine]
        if not names:
            raise InvalidValueError(f"no corrcoef variant on {backend} among {', '.join(args.variant)}")
    path = out / "corr.json"
    with progress(f"corr {campaign} ({backend})") as update:
        doc = run_corr(campaign=campaign, backend=backend, json_path=path, shapes=shapes,
                       variant_names=names, with_comparators=not args.no_compare,
                       settings=settings(args, c), progress=update)
    print_corr_tables(doc["results"], backend)
    return finish_bench(doc, path)


def _fmt(x: Any, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def _table(title: str, cols: Sequence[str]) -> Table:
    t = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left")
    for i, col in enumerate(cols):
        t.add_column(col, justify="left" if i < 2 else "right", no_wrap=i == 0)
    return t


def _median(r: dict) -> float | None:
    k = r["phases"].get("kernel")
    return k["median"] if k and r["verified"] else None


def _failures(t: Table, recs: Sequence[dict]) -> Table:
    bad = [f"{r['variant']} {r['params']['precision']}: {r['error']}" for r in recs
           if not r["verified"]]
    if bad:
        t.caption = "NOT VERIFIED: " + "; ".join(bad)
        t.caption_justify = "left"
    return t


def corr_table(recs: Sequence[dict], m: int, n: int, backend: str) -> Table:
    """Per variant and precision: ms, TFLOP/s, % of the GEMM ceiling, max abs error, x cupy."""
    t = _table(f"corrcoef {m} x {n} float32 random walks ({backend}), public call",
               ["variant", "prec", "ms", "TFLOP/s", "% roof", "max err", "x cupy"])
    for r in recs:
        p = r["params"]
        t.add_row(r["variant"] + ("" if p["m"] == m else f" (M={p['m']})"), p["precision"],
                  _fmt(_median(r), ".4g"), _fmt(r["tflops"], ".2f"),
                  _fmt(r["pct_of_ceiling"], ".1f"), _fmt(r["max_abs_error"], ".1e"),
                  _fmt(r["x_cupy"], ".2f"))
    t.caption = "% roof: of the measured DGEMM (float64) or SGEMM (float32, tf32) rate"
    t.caption_justify = "left"
    return _failures(t, recs)


def pairs_table(recs: Sequence[dict], backend: str) -> Table:
    """corr_pairs: ms, pairs found, pairs checked in float64, max abs error."""
    t = _table(f"corr_pairs ({backend}), public call",
               ["variant", "M x N", "thr", "ms", "pairs", "checked", "max err"])
    for r in recs:
        p = r["params"]
        t.add_row(r["variant"], f"{p['m']}x{p['n']}", f"{p['threshold']:g}",
                  _fmt(_median(r), ".4g"), _fmt(r.get("pairs_found"), ",d"),
                  _fmt(r.get("checked_pairs"), ",d"), _fmt(r["max_abs_error"], ".1e"))
    return _failures(t, recs)


def print_corr_tables(records: Sequence[dict], backend: str) -> None:
    """One corrcoef table per shape (the largest M of its rows), then the corr_pairs table."""
    shapes: dict[int, list[dict]] = {}
    for r in records:
        if r["family"] == "corrcoef":
            shapes.setdefault(r["params"]["n"], []).append(r)
    for n, rows in shapes.items():
        print_table(corr_table(rows, max(r["params"]["m"] for r in rows), n, backend), console)
    pairs = [r for r in records if r["family"] == "corr_pairs"]
    if pairs:
        print_table(pairs_table(pairs, backend), console)

"""``warplab dask`` (the quick campaign, or the workloads named) and the dask part of
``warplab bench``: strong scaling of ``warplab.dask`` on 1 and 2 workers, Dask's overhead over
the direct call, the fixed cost of one ``compute()``. Dask is imported when a campaign runs."""
from __future__ import annotations

import argparse
from pathlib import Path

from rich.table import Table

from warplab.lab.harness.tables import print_table
from warplab.lab.console import console, csv, finish_bench, finish_run, json_path, progress
from warplab.core.device import resolve_backend


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``warplab dask``."""
    p = sub.add_parser("dask", help="warplab.dask on 1 and 2 workers: scaling, Dask's "
                       "overhead, the fixed cost of a compute()")
    p.add_argument("--campaign", choices=["quick", "table"], default="quick",
                   help="sizes (quick: small, any machine; table: the GPU sizes of "
                        "docs/dask.md)")
    p.add_argument("--workload", type=csv, default=None,
                   help="corr_pairs,corrcoef,histogram_files (default: all)")
    p.add_argument("--runs", type=int, default=None, help="timed runs per case")
    p.add_argument("--warmup", type=int, default=None, help="untimed runs first")
    p.add_argument("--tmp", default=None, help="folder for histogram_files' files")
    p.add_argument("--json", dest="json_path", help="write the results JSON here")


def _run(campaign: str, backend: str, path: Path | None, workloads: list[str] | None,
         runs: int | None, warmup: int | None, tmp: str | None) -> dict:
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError as exc:
        raise NotImplementedError("warplab dask needs Dask: pip install 'warplab[dask]'") \
            from exc
    from warplab.lab.campaigns.dask.bench import run_dask

    with progress(f"dask {campaign} ({backend})") as update:
        return run_dask(campaign=campaign, backend=backend, json_path=path,
                        workloads=workloads, runs=runs, warmup=warmup, tmp_dir=tmp,
                        progress=update)


def run(args: argparse.Namespace) -> int:
    """``warplab dask``: the campaign asked for, printed."""
    doc = _run(args.campaign, resolve_backend(args.device), json_path(args), args.workload,
               args.runs, args.warmup, args.tmp)
    print_tables(doc)
    return finish_run(doc)


def _f(x: float | None, nd: int = 2) -> str:
    return "-" if x is None else f"{x:,.{nd}f}"


def print_tables(doc: dict) -> None:
    """A row per (workload, mode, workers): median time, rate, speed-up, efficiency and
    overhead; then the fixed cost of a compute() per cluster."""
    recs = doc["results"]
    backend = recs[0]["backend"] if recs else "-"
    t = Table(title=f"dask: strong scaling ({backend})")
    for col in ("workload", "mode", "workers", "ms", "TFLOP/s", "GB/s", "speed-up",
                "efficiency", "overhead %"):
        t.add_column(col, justify="left" if col in ("workload", "mode") else "right")
    for r in recs:
        p = r["params"]
        tot = r["phases"]["total"]
        if r["variant"] == "fixed_cost":
            continue
        t.add_row(r["variant"], p["mode"], str(p["workers"]),
                  _f(tot["median"], 1) if tot and r["verified"] else "err", _f(r["tflops"]),
                  _f(r["e2e_gbps"], 1), _f(r["speedup"]), _f(r["efficiency"]),
                  _f(r["overhead_pct"], 1))
    print_table(t, console)
    for r in recs:
        if r["variant"] == "fixed_cost":
            console.print(f"fixed cost of one compute() of a tiny graph, "
                          f"{r['params']['workers']} worker(s): "
                          f"{r['phases']['total']['median']:.1f} ms (median)")
        elif r["error"]:
            console.print(f"error: {r['variant']} {r['params']['mode']} "
                          f"{r['params']['workers']}: {r['error']}", soft_wrap=True)


def bench(args: argparse.Namespace, backend: str, campaign: str, out: Path) -> bool:
    """The dask campaign of ``warplab bench``; ``--variant`` names workloads (under ``bench
    all``, names that are not the campaign's are left to the other families), ``--runs`` and
    ``--warmup`` apply. Without Dask installed, ``bench all`` skips it with a note."""
    from warplab.lab.campaigns.dask.bench import WORKLOADS

    workloads = args.variant
    if args.family == "all":
        workloads = [w for w in workloads or [] if w in WORKLOADS] or None
        try:
            import distributed  # noqa: F401
        except ImportError:
            console.print("note: dask campaign skipped: Dask is not installed "
                          "(pip install 'warplab[dask]')")
            return True
    path = out / "dask.json"
    doc = _run(campaign, backend, path, workloads, args.runs, args.warmup, None)
    print_tables(doc)
    return finish_bench(doc, path)

"""``warplab dask`` (the quick campaign, or the table campaign, or the workloads and modes
named) and the dask part of ``warplab bench``: strong scaling of ``warplab.dask`` from the
direct call to clusters of separate processes, Dask's overhead, the fixed cost of one
``compute()``, every rate against its ceiling. Dask is imported when a campaign runs."""
from __future__ import annotations

import argparse
from pathlib import Path

from rich.table import Table

from warplab.core.device import resolve_backend
from warplab.lab.console import console, csv, existing_folder, finish_bench, finish_run, json_path, progress
from warplab.lab.harness.tables import print_table

#: Short names of the modes in the table (the protocol, or ``cli`` for Dask's CLI).
_MODE = {"direct": "direct", "processes": "cli"}


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``warplab dask``."""
    p = sub.add_parser("dask", help="warplab.dask from one GPU to a cluster of processes: "
                       "scaling, Dask's overhead, rates against their ceilings")
    p.add_argument("--campaign", choices=["quick", "table"], default="quick",
                   help="sizes (quick: small, any machine; table: the GPU sizes of "
                        "docs/dask.md)")
    p.add_argument("--workload", type=csv, default=None,
                   help="corr_pairs_0.9,corr_pairs_0.99,corrcoef,corrcoef_large,"
                        "histogram_files,histogram_files_cold (default: all)")
    p.add_argument("--modes", type=csv, default=None,
                   help="direct,cluster,processes (default: all)")
    p.add_argument("--runs", type=int, default=None, help="timed runs per case")
    p.add_argument("--warmup", type=int, default=None, help="untimed runs first")
    p.add_argument("--threads", type=int, default=1,
                   help="threads per worker of the clusters (default 1)")
    p.add_argument("--tmp", type=existing_folder, default=None, help="folder for temporary files")
    p.add_argument("--files", default=None,
                   help="folder for the file workloads' files, kept for the next run")
    p.add_argument("--json", dest="json_path", help="write the results JSON here")


def _run(args: argparse.Namespace, campaign: str, backend: str, path: Path | None,
         workloads: list[str] | None) -> dict:
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError as exc:
        raise NotImplementedError("warplab dask needs Dask: pip install 'warplab[dask]'") \
            from exc
    from warplab.lab.campaigns.dask.bench import run_dask

    with progress(f"dask {campaign} ({backend})") as update:
        return run_dask(campaign=campaign, backend=backend, json_path=path,
                        workloads=workloads, runs=args.runs, warmup=args.warmup,
                        tmp_dir=getattr(args, "tmp", None),
                        files_dir=getattr(args, "files", None),
                        mode_kinds=getattr(args, "modes", None),
                        threads=getattr(args, "threads", 1), progress=update)


def run(args: argparse.Namespace) -> int:
    """``warplab dask``: the campaign asked for, printed."""
    doc = _run(args, args.campaign, resolve_backend(args.device), json_path(args),
               args.workload)
    print_tables(doc)
    return finish_run(doc)


def _f(x: float | None, nd: int = 2) -> str:
    return "-" if x is None else f"{x:,.{nd}f}"


def _rate(x: float | None) -> str:
    """A rate with three significant digits at least (small CPU rates included)."""
    if x is None:
        return "-"
    return f"{x:,.0f}" if x >= 100 else f"{x:.2f}" if x >= 1 else f"{x:.3g}"


def _bytes(n: int) -> str:
    return f"{n / 2**30:g} GiB" if n >= 2**30 else f"{n / 2**20:g} MiB"


def _mode(p: dict) -> str:
    return _MODE.get(p["mode"], p.get("protocol") or p["mode"])


def _size(r: dict) -> str:
    p = r["params"]
    if "files" in p:
        return f"{p['files']} x {_bytes(p['file_bytes'])}"
    what = f"{p['m']:,} x {p['n']:,} {p['precision']}"
    return what + (f", |r| >= {p['threshold']}" if "threshold" in p else "")


def workload_table(recs: list[dict]) -> Table:
    """One workload's rows: mode, workers, median ms, rate, % of its ceiling, speed-up over
    one worker, efficiency, overhead over direct, completion lag."""
    first = recs[0]
    unit = "GB/s" if first["params"].get("files") else "TFLOP/s"
    t = Table(title=f"{first['variant']}: {_size(first)} ({first['backend']})")
    for col in ("mode", "w", "ms", unit, "%ceil", "x1", "eff", "ovh%", "lag"):
        t.add_column(col, justify="left" if col == "mode" else "right")
    for r in recs:
        p, tot = r["params"], r["phases"]["total"]
        ok = tot is not None and r["verified"]
        rate = r["e2e_gbps"] if unit == "GB/s" else r["tflops"]
        t.add_row(_mode(p), str(p["workers"]), _f(tot["median"], 1) if ok else "err",
                  _rate(rate), _f(r.get("pct_of_ceiling"), 0),
                  _f(r.get("speedup")), _f(r.get("efficiency")), _f(r.get("overhead_pct"), 0),
                  _f(r.get("completion_lag_ms"), 1))
    return t


def print_tables(doc: dict) -> None:
    """A table per workload; then one line per cluster for the fixed cost of a compute(),
    the host's read bandwidth, cold-file evictions, late completions and errors."""
    recs = doc["results"]
    names = list(dict.fromkeys(r["variant"] for r in recs
                               if r["variant"] not in ("fixed_cost", "host_read")))
    for name in names:
        print_table(workload_table([r for r in recs if r["variant"] == name]), console)
    console.print("x1: speed-up over the one-worker cluster of the same protocol; eff: x1 / "
                  "workers; ovh%: one-worker cluster over direct; lag: ms of a device "
                  "synchronisation after wait(); %ceil: of the devices' ceiling")
    fixed = [f"{_mode(r['params'])} x{r['params']['workers']} "
             f"{r['phases']['total']['median']:.1f} ms"
             for r in recs if r["variant"] == "fixed_cost"]
    if fixed:
        console.print("fixed cost of one compute() of a tiny graph: " + ", ".join(fixed))
    reads = [r for r in recs if r["variant"] == "host_read"]
    if reads:
        console.print("host read: " + ", ".join(
            f"{r['params']['source'].replace('_', ' ')} {r['e2e_gbps']:,.1f} GB/s "
            f"({r['params']['threads']} threads)" for r in reads))
    for r in recs:
        p = r["params"]
        where = f"{r['variant']} {_mode(p)} x{p['workers']}"
        if p.get("cold") and p.get("resident_after_evict") is not None:
            share = max(p["resident_after_evict"])
            console.print(f"{where}: {100 * share:.0f}% of the files still cached after "
                          f"eviction" + ("" if p.get("evicted") else " (eviction failed)"))
        if r.get("completion_late"):
            console.print(f"late: {where}: a device sync after wait() took "
                          f"{r['completion_lag_ms']:.1f} ms")
        if r["error"]:
            console.print(f"error: {where}: {r['error'].splitlines()[0]}")


def bench(args: argparse.Namespace, backend: str, campaign: str, out: Path) -> bool:
    """The dask campaign of ``warplab bench``; ``--variant`` names workloads (under ``bench
    all``, names that are not the campaign's are left to the other families), ``--runs`` and
    ``--warmup`` apply. Without Dask installed, ``bench all`` skips it with a note."""
    from warplab.lab.campaigns.dask.workloads import WORKLOADS

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
    doc = _run(args, campaign, backend, path, workloads)
    print_tables(doc)
    return finish_bench(doc, path)

"""Implementations of the CLI subcommands (argument parsing lives in ``cli.py``)."""
from __future__ import annotations

import argparse
import contextlib
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from . import _registry
from ._device import cuda_status, resolve_backend
from ._mapping import resolve
from .bench import results, sweeps
from .bench.ceilings import comparison_rows, copy_bandwidth, measure_all
from .bench.measure import Settings
from .bench.tables import (call_table, lecture_table, matmul_table, print_table, summary_table,
                           timing_table)
from .cli import dump_json

console = Console(width=200)


def cmd_device(args: argparse.Namespace) -> int:
    backend = resolve_backend(args.device)
    info = sweeps.device_meta(backend)
    if backend == "cpu":
        info["note"] = f"no GPU in use: {cuda_status()[1]}"
    ceilings = measure_all(backend) if args.measure else copy_bandwidth(backend)
    info.update(ceilings)
    if not args.measure:
        info.pop("copy_ms", None)
    if args.json:
        print(dump_json(info))
        return 0
    t = Table(title=f"warplab device ({backend})", show_header=False)
    for k, v in info.items():
        if not (args.measure and k in ceilings):
            t.add_row(k, f"{v:.1f}" if isinstance(v, float) else str(v))
    console.print(t)
    if args.measure:
        console.print(_ceilings_table(ceilings, backend))
    return 0


def _ceilings_table(ceilings: dict, backend: str) -> Table:
    """Measured ceilings next to the datasheet numbers (``warplab device --measure``)."""
    t = Table(title=f"measured ceilings ({backend}), medians")
    for col in ("ceiling", "measured", "datasheet", "% of datasheet", "method"):
        t.add_column(col, justify="left" if col in ("ceiling", "method") else "right")
    for label, got, sheet, pct, method in comparison_rows(ceilings):
        t.add_row(label, "—" if got is None else f"{got:,.1f}",
                  "—" if sheet is None else f"{sheet:,.1f}",
                  "—" if pct is None else f"{pct:.1f}", method)
    for key in ("datasheet_basis", "dgemm_note"):
        if ceilings.get(key):
            t.caption = (t.caption + "; " if t.caption else "") + ceilings[key]
    return t


def _settings(args: argparse.Namespace, campaign: sweeps.Campaign | None) -> Settings:
    runs = args.runs if args.runs is not None else (campaign.runs if campaign else 20)
    warmup = args.warmup if args.warmup is not None else (campaign.warmup if campaign else 3)
    if runs < 1 or warmup < 0:
        raise ValueError("--runs must be >= 1 and --warmup >= 0")
    return Settings(runs=runs, warmup=warmup, pinned=args.pinned,
                    max_seconds=args.max_seconds, flush_l2=args.flush_l2)


def _variant_names(text: str | None, backend: str) -> list[str]:
    if text is None:
        return [_registry.variants("histogram", backend)[0].name]
    if text.strip() == "all":
        return [v.name for v in _registry.variants("histogram", backend)]
    return [x.strip() for x in text.split(",") if x.strip()]


def _label(i: int, bins: str) -> str:
    if bins == "letters":
        return "other" if i == 0 else f"{chr(64 + i)}/{chr(96 + i)}"
    code = i + 1 if bins == "ascii128" else i
    ch = chr(code) if 32 < code < 127 else {32: "' '", 10: "\\n", 9: "\\t"}.get(code, "")
    return f"{code:3d} {ch}"


def cmd_histogram(args: argparse.Namespace) -> int:
    if (args.file is None) == (args.generate is None):
        raise ValueError("give either FILE or --generate KIND (with --size)")
    if args.generate and args.size is None:
        raise ValueError("--generate needs --size")
    backend = resolve_backend(args.device)
    mapping = resolve(args.bins)
    names = _variant_names(args.variant, backend)
    seen: list[np.ndarray] = []
    with console.status("measuring"):
        doc = sweeps.run_histogram(
            campaign="quick", backend=backend,
            json_path=Path(args.json_path) if args.json_path else None,
            sizes=[args.size] if args.size is not None else None,
            kinds=[args.generate] if args.generate else None, bins=[args.bins],
            variant_names=names, with_comparators=args.compare,
            settings=_settings(args, None), file=args.file,
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


@contextlib.contextmanager
def _progress(title: str) -> Iterator[Callable[[int, int, dict], None]]:
    """A rich progress bar; yields ``progress(done, total, record)`` (total 0 = unknown)."""
    cols = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), TextColumn("{task.fields[last]}"))
    with Progress(*cols, console=console, transient=False) as prog:
        task = prog.add_task(title, total=None, last="")

        def progress(done: int, total: int, rec: dict) -> None:
            p = rec["params"]
            what = " ".join(str(p[k]) for k in ("data", "bins", "dtype", "op", "size") if k in p)
            prog.update(task, completed=done, total=total or None,
                        last=f"{what} {rec['variant']}")

        yield progress


def _bench_histogram(args: argparse.Namespace, backend: str, campaign: str, out: Path) -> bool:
    settings = _settings(args, sweeps.CAMPAIGNS[campaign])
    path = out / "histogram.json"
    with _progress(f"histogram {campaign} ({backend})") as progress:
        doc = sweeps.run_histogram(
            campaign=campaign, backend=backend, json_path=path, sizes=args.sizes,
            kinds=args.data, bins=args.bins, variant_names=args.variant,
            with_comparators=not args.no_compare, settings=settings, progress=progress)
    largest = max(r["params"]["size"] for r in doc["results"]) if doc["results"] else 0
    rows = [r for r in doc["results"] if r["params"]["size"] == largest]
    print_table(summary_table(rows, f"histogram at {largest} bytes ({backend})"), console)
    return _finish_bench(doc, path)


def _bench_reduce(args: argparse.Namespace, backend: str, campaign: str, out: Path) -> bool:
    c = sweeps.REDUCE_CAMPAIGNS[campaign]
    settings = _settings(args, c)
    configs = None
    if args.sizes or args.dtypes:
        dtypes = args.dtypes or sorted({dt for _, dt in c.configs})
        sizes = args.sizes or sorted({n for n, _ in c.configs})
        configs = [(n, dt) for dt in dtypes for n in sizes]
    path = out / "reduce.json"
    with _progress(f"reduce {campaign} ({backend})") as progress:
        doc = sweeps.run_reduce(
            campaign=campaign, backend=backend, json_path=path, configs=configs, ops=args.ops,
            variant_names=args.variant, with_comparators=not args.no_compare,
            settings=settings, progress=progress)
    _print_lecture_tables(doc["results"], backend)
    return _finish_bench(doc, path)


def _print_lecture_tables(records: list[dict], backend: str) -> None:
    from .bench.reduce_bench import lecture_rows

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


def _finish_bench(doc: dict, path: Path) -> bool:
    for note in doc["meta"]["notes"]:
        console.print(f"note: {note}")
    console.print(f"results: {path}")
    return not any(not r["verified"] and r["provider"] == "warplab" for r in doc["results"])


def cmd_bench(args: argparse.Namespace) -> int:
    backend = resolve_backend(args.device)
    campaign = args.campaign or "quick"
    out = sweeps.timestamped(args.out)
    ok = True
    if args.family in ("histogram", "all"):
        ok &= _bench_histogram(args, backend, campaign, out)
    if args.family in ("reduce", "all"):
        ok &= _bench_reduce(args, backend, campaign, out)
    if args.family in ("matmul", "all"):
        ok &= _bench_matmul(args, backend, campaign, out)
    return 0 if ok else 1


def _bench_matmul(args: argparse.Namespace, backend: str, campaign: str, out: Path) -> bool:
    from .bench.matmul_bench import MATMUL_CAMPAIGNS, run_matmul

    c = MATMUL_CAMPAIGNS[campaign]
    configs = None
    if args.sizes or args.dtypes:
        dtypes = [d for d in args.dtypes or sorted({cfg[3] for cfg in c.configs})
                  if d in ("float32", "float64")]
        if not dtypes:
            raise ValueError(f"matmul runs float32 and float64, not {','.join(args.dtypes)}")
        sizes = args.sizes or sorted({cfg[0] for cfg in c.configs})
        configs = [(n, n, n, dt) for dt in dtypes for n in sizes]
    path = out / "matmul.json"
    with _progress(f"matmul {campaign} ({backend})") as progress:
        doc = run_matmul(campaign=campaign, backend=backend, json_path=path, configs=configs,
                         variant_names=args.variant, with_comparators=not args.no_compare,
                         settings=_settings(args, c), progress=progress)
    _print_matmul_tables(doc["results"], backend)
    return _finish_bench(doc, path)


def _print_matmul_tables(records: list[dict], backend: str) -> None:
    """One table per (dtype, m x n x k), in the order measured."""
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault((r["params"]["dtype"], *r["dims"]), []).append(r)
    for (dt, m, n, k), rows in groups.items():
        ceiling = next((r["compute_ceiling"] for r in rows if r.get("compute_ceiling")), None)
        print_table(matmul_table(rows, f"matmul {m}x{k} @ {k}x{n} {dt} ({backend}), kernel "
                                 f"medians; compute ceiling: {ceiling or 'none'}"), console)


def cmd_matmul(args: argparse.Namespace) -> int:
    from .bench.matmul_bench import run_matmul

    backend = resolve_backend(args.device)
    names = None if args.variant.strip() == "all" else \
        [x.strip() for x in args.variant.split(",") if x.strip()]
    m, n, k = (args.size if d is None else d for d in (args.m, args.n, args.k))
    with console.status("measuring"):
        doc = run_matmul(campaign="quick", backend=backend,
                         json_path=Path(args.json_path) if args.json_path else None,
                         configs=[(m, n, k, args.dtype)], variant_names=names,
                         with_comparators=args.compare, settings=_settings(args, None))
    _print_matmul_tables(doc["results"], backend)
    for note in doc["meta"]["notes"]:
        console.print(f"note: {note}")
    return 0 if all(r["verified"] for r in doc["results"] if r["provider"] == "warplab") else 1


def cmd_reduce(args: argparse.Namespace) -> int:
    backend = resolve_backend(args.device)
    names = None if args.variant.strip() == "all" else \
        [x.strip() for x in args.variant.split(",") if x.strip()]
    with console.status("measuring"):
        doc = sweeps.run_reduce(
            campaign="quick", backend=backend,
            json_path=Path(args.json_path) if args.json_path else None,
            configs=[(args.size, args.dtype)], ops=[args.op], variant_names=names,
            with_comparators=args.compare, settings=_settings(args, None), kind=args.data)
    _print_lecture_tables(doc["results"], backend)
    return 0 if all(r["verified"] for r in doc["results"] if r["provider"] == "warplab") else 1


def cmd_report(args: argparse.Namespace) -> int:
    from .report import build_report

    src = Path(args.src)
    if not src.exists():
        raise FileNotFoundError(f"no such file or folder: {src}")
    html = build_report(src, Path(args.out) if args.out else None)
    console.print(f"report: {html}")
    return 0


__all__ = ["cmd_device", "cmd_histogram", "cmd_reduce", "cmd_matmul", "cmd_bench", "cmd_report",
           "results"]

"""The subcommands that are no family's: ``device``, ``bench`` (every family's campaign into
one timestamped folder) and ``report``. Each family's own subcommand lives in its folder
(``families/<family>/command.py``)."""
from __future__ import annotations

import argparse
from importlib import import_module
from pathlib import Path
from types import ModuleType

from rich.table import Table

from warplab.lab.harness.campaign import device_meta, timestamped
from warplab.lab.harness.tables import print_table
from warplab.lab.harness.ceiling_rates import copy_bandwidth
from warplab.lab.harness.ceilings import cached_ceilings, comparison_rows, measure_all
from warplab.lab.console import console, dump_json
from warplab.core.device import cuda_status, resolve_backend
from warplab.lab.campaigns import CAMPAIGNS


def family_command(family: str) -> ModuleType:
    """The ``command`` module of a family folder."""
    return import_module(f"warplab.lab.campaigns.{family}.command")


def cmd_device(args: argparse.Namespace) -> int:
    """Device facts and its ceilings: the stored ones (measured once per device), measured
    again with ``--measure``; without stored ones, only the copy bandwidth (a second)."""
    backend = resolve_backend(args.device)
    info = device_meta(backend)
    if backend == "cpu":
        info["note"] = f"no GPU in use: {cuda_status()[1]}"
    stored = measure_all(backend, refresh=True) if args.measure else cached_ceilings(backend)
    ceilings = stored if stored is not None else copy_bandwidth(backend)
    info.update(ceilings)
    if stored is None:
        info.pop("copy_ms", None)
        info["ceilings"] = "not measured on this device yet: warplab device --measure"
    if args.json:
        print(dump_json(info))
        return 0
    t = Table(title=f"warplab device ({backend})", show_header=False)
    for k, v in info.items():
        if stored is None or k not in ceilings:
            t.add_row(k, f"{v:.1f}" if isinstance(v, float) else str(v))
    print_table(t, console)
    if stored is not None:
        table = _ceilings_table(stored, backend)
        when = stored.get("measured_at", "?")
        table.caption = (f"measured {when}" + ("" if args.measure else
                         " (stored; warplab device --measure measures again)") +
                         (f"; {table.caption}" if table.caption else ""))
        print_table(table, console)
    return 0


def _ceilings_table(ceilings: dict, backend: str) -> Table:
    """Measured ceilings next to the datasheet numbers (``warplab device --measure``)."""
    t = Table(title=f"measured ceilings ({backend}), medians")
    for col in ("ceiling", "measured", "datasheet", "% of datasheet", "method"):
        t.add_column(col, justify="left" if col in ("ceiling", "method") else "right")
    for label, got, sheet, pct, method in comparison_rows(ceilings):
        if got is None and sheet is None:  # e.g. host-device transfers on the cpu backend
            continue
        t.add_row(label, "—" if got is None else f"{got:,.1f}",
                  "—" if sheet is None else f"{sheet:,.1f}",
                  "—" if pct is None else f"{pct:.1f}", method)
    for key in ("datasheet_basis", "dgemm_note"):
        if ceilings.get(key):
            t.caption = (t.caption + "; " if t.caption else "") + ceilings[key]
    return t


def cmd_bench(args: argparse.Namespace) -> int:
    """Run the chosen family's campaign (or every family's) into one timestamped folder."""
    backend = resolve_backend(args.device)
    campaign = args.campaign or "quick"
    if getattr(args, "dry_run", False):
        for family in CAMPAIGNS:
            if args.family in (family, "all"):
                mod = family_command(family)
                if hasattr(mod, "plan"):
                    mod.plan(args, backend, campaign)
                else:
                    console.print(f"{family}: no plan to show (--dry-run: memcpy only)")
        return 0
    root = Path(args.out)
    made = [p for p in (root, *root.parents) if not p.exists()]  # folders this call creates
    out = timestamped(root)
    ok = True
    try:
        for family in CAMPAIGNS:
            if args.family in (family, "all"):
                ok &= family_command(family).bench(args, backend, campaign, out)
    except BaseException:
        if not any(out.iterdir()):  # refused before anything was measured: leave nothing
            out.rmdir()
            for p in made:  # innermost first; only folders this call made, and only if empty
                if p.exists() and not any(p.iterdir()):
                    p.rmdir()
        raise
    return 0 if ok else 1


def cmd_report(args: argparse.Namespace) -> int:
    from warplab.lab.report import build_report

    src = Path(args.src)
    if not src.exists():
        raise FileNotFoundError(f"no such file or folder: {src}")
    html = build_report(src, Path(args.out) if args.out else None)
    console.print(f"report: {html}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """``warplab compare A B``: B's records against A's (``bench/compare.py``), 80 columns."""
    from warplab.lab.harness import compare

    result = compare.compare_files(args.a, args.b, threshold=args.threshold)
    for item in compare.renderables(result):
        console.print(item, width=80)
    if args.json_path:
        console.print(f"comparison: {compare.write_json(result, args.json_path)}", width=80,
                      markup=False)
    if args.figure:
        from warplab.lab.report.compare_figure import ratio_figure

        console.print(f"figure: {ratio_figure(result, args.figure)}", width=80, markup=False)
    return compare.exit_status(result, args.fail_on_slower)

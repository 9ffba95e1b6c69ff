"""The tables of a before/after run (``before_after.sh``): per latency case and mode the median
of the baseline tree, of this tree and of PyTorch (same run), and per speed table the median
of each record's kernel or total phase, base and new, with their ratio.

Usage: ``python benchmarks/before_after_table.py OUT_DIR`` (the folder ``before_after.sh``
wrote); prints Markdown.
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any


def _load(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text())["results"] if path.exists() else []


def _median(rec: dict[str, Any]) -> float | None:
    phases = rec.get("phases") or {}
    for name in ("kernel", "total"):
        if phases.get(name):
            return float(phases[name]["median"])
    return None


def latency_table(out: Path) -> list[str]:
    """Case x mode: medians (µs) over the rounds of base, new and torch; new/base, new/torch."""
    rows: dict[tuple[str, str], dict[str, list[float]]] = {}
    for tree in ("base", "new"):
        for path in sorted(out.glob(f"{tree}-latency-*.json")):
            for r in _load(path):
                if not r.get("verified") or _median(r) is None:
                    continue
                key = (r["params"]["case"], r["params"]["mode"])
                who = tree if r.get("provider") == "warplab" else r.get("provider", "?")
                if who not in (tree, "torch"):
                    continue
                if who == "torch" and tree == "base":
                    continue  # torch from the new tree's runs only (same process kind)
                rows.setdefault(key, {}).setdefault(who, []).append(_median(r) * 1e3)
    lines = ["| case | mode | base µs | new µs | torch µs | new/base | new/torch |",
             "|---|---|---|---|---|---|---|"]
    for (case, mode), v in sorted(rows.items()):
        b, n, t = (statistics.median(v[k]) if v.get(k) else None
                   for k in ("base", "new", "torch"))
        fmt = (lambda x: f"{x:.1f}" if x is not None else "-")
        ratio = (lambda a, c: f"{a / c:.2f}" if a and c else "-")
        lines.append(f"| {case} | {mode} | {fmt(b)} | {fmt(n)} | {fmt(t)} | {ratio(n, b)} | "
                     f"{ratio(n, t)} |")
    return lines


def speed_tables(out: Path) -> list[str]:
    """Per speed table and warplab record: base and new medians (ms), GB/s, new/base time."""
    lines = ["| table | record | base ms | new ms | new GB/s | new/base time |",
             "|---|---|---|---|---|---|"]
    for new_path in sorted(out.glob("new-*.json")):
        name = new_path.stem[len("new-"):]
        if name.startswith("latency"):
            continue
        base = {_ident(r): r for r in _load(out / f"base-{name}.json")}
        for r in _load(new_path):
            if r.get("provider", "warplab") != "warplab" or _median(r) is None:
                continue
            b = base.get(_ident(r))
            bm = _median(b) if b else None
            nm = _median(r)
            gbps = r.get("gbps")
            ok = "" if r.get("verified") else " (NOT VERIFIED)"
            lines.append(f"| {name} | {r['variant']} {r['params'].get('size', '')}{ok} | "
                         f"{bm:.3f} | {nm:.3f} | {gbps:.0f} | {nm / bm:.3f} |"
                         if bm and nm and gbps else
                         f"| {name} | {r['variant']}{ok} | {bm} | {nm} | {gbps} | - |")
    return lines


def _ident(r: dict[str, Any]) -> tuple[Any, ...]:
    params = {k: v for k, v in r.get("params", {}).items()
              if k not in ("runs", "warmup", "samples", "held", "seed")}
    return (r.get("family"), r.get("variant"), r.get("provider"),
            json.dumps(params, sort_keys=True, default=str))


def main(argv: list[str]) -> int:
    out = Path(argv[1] if len(argv) > 1 else "/tmp/warplab-out")
    print("\n".join(latency_table(out)))
    print()
    print("\n".join(speed_tables(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Small buffers of the batched copy (issue 13): can ``warp_classes`` (size classes decided per
warp by ballots: a lane per buffer up to 16 B, groups of lanes up to 256 B, a warp up to 8 KiB)
beat CUB's ``DeviceMemcpy::Batched`` by 1.2x where the default ``size_classes_tuned`` trails it?
GPU machine; not part of the package's API.

Cells: 1-8 B, 16 B, 64 B, 1-64 B, 256 B, 1 KiB; CONSECUTIVE/CONSECUTIVE and SHUFFLE/SHUFFLE;
alignment 1 and 16 (cells with no multiple of the alignment are left out); 256 MiB of data per
cell (``--total``). Targets: the default, ``warp_classes``, every shape of
``spec.WARP_CLASSES_SWEEP`` (through ``cuda.run_warp_classes``) and CUB, all on one prepared
batch per cell. Each record is the benchmark's own (``bench.measure_target``: held kernel phase,
median of 10, then a run into a poisoned destination checked on a sample of buffers, the byte
sum and the guard bytes around the region); here every destination byte is then also compared
with its source byte. GB/s counts all bytes as the benchmark does (2 x data + 24 bytes per
buffer). Prints one line per target and cell with x CUB; writes JSON to
``$OUT/explore_memcpy_small.json`` when ``$OUT`` is set.

Usage: PYTHONPATH=src python3 benchmarks/explore_memcpy_small.py [--total 256M] [--quick]
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import cupy
import numpy as np

import warplab
from warplab.bench.campaign import finish_campaign
from warplab.bench.ceilings import measure_all
from warplab.bench.measure import Settings
from warplab.console import parse_size
from warplab.families.memcpy import cuda as mc
from warplab.families.memcpy.bench import (
    GUARD,
    Case,
    DeviceCase,
    measure_target,
    targets,
)
from warplab.families.memcpy.spec import WARP_CLASSES_SWEEP

CELLS = ((1, 8), (16, 16), (64, 64), (1, 64), (256, 256), (1024, 1024))
LAYOUTS = (("consecutive", "consecutive"), ("shuffle", "shuffle"))
CUB = "cub::DeviceMemcpy::Batched"
VARIANTS = ["size_classes_tuned", "warp_classes"]
PIECE = 32 << 20  # bytes of destination compared per step of the full check


def full_check(dc: DeviceCase) -> str | None:
    """Every destination byte against its source byte (buffers are packed: the region has no
    gaps). None when all match, else a description."""
    sizes = cupy.asarray(dc.sizes)
    starts = cupy.cumsum(sizes) - sizes  # buffer starts in the packed byte stream
    s_off, d_off = cupy.asarray(dc.src_off), cupy.asarray(dc.dst_off)
    bad = 0
    for lo in range(0, dc.data, PIECE):
        j = cupy.arange(lo, min(lo + PIECE, dc.data), dtype=np.int64)
        owner = cupy.searchsorted(starts, j, side="right") - 1
        rel = j - starts[owner]
        got = dc.dst[GUARD + d_off[owner] + rel]
        want = dc.src[GUARD + s_off[owner] + rel]
        bad += int(cupy.count_nonzero(got != want))
    return f"{bad} destination bytes differ from their source" if bad else None


def shape_targets() -> list[Any]:
    """The sweep's shapes as targets of ``measure_target`` (a name and a launch function)."""
    out = []
    for c in WARP_CLASSES_SWEEP:
        name = (f"warp_classes[t{c.tlev_max},g{c.group},s{c.sub_max},b{c.min_blocks}]")
        out.append(SimpleNamespace(name=name, fn=lambda b, c=c: mc.run_warp_classes(b, c)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--total", default="256M", help="data bytes per cell (default 256M)")
    ap.add_argument("--quick", action="store_true", help="CC, align 1, no sweep shapes")
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    total = parse_size(args.total)
    t0 = time.perf_counter()
    variants, notes = targets(VARIANTS, True)
    cub = [t for t in variants if getattr(t, "name", "") == CUB]
    tgts = [t for t in variants if getattr(t, "name", "") in VARIANTS]
    tgts += ([] if args.quick else shape_targets()) + cub
    settings = Settings(runs=args.runs, warmup=2, max_seconds=1.0)
    ceilings = measure_all("cuda")
    copy = ceilings.get("copy_gbps") or ceilings.get("copy", {}).get("gbps")
    layouts = LAYOUTS[:1] if args.quick else LAYOUTS
    aligns = (1,) if args.quick else (1, 16)
    records: list[dict] = []
    print(f"{warplab.__file__}; copy ceiling {copy} GB/s; {total} data bytes per cell; "
          f"notes: {notes}", flush=True)
    with cupy.cuda.Stream(non_blocking=True):
        for lo, hi in CELLS:
            for a in aligns:
                if hi // a < max(-(-lo // a), 1):
                    continue
                for s_lay, d_lay in layouts:
                    case = Case(lo, hi, s_lay, d_lay, a, total)
                    dc = DeviceCase(case)
                    cell = []
                    for t in tgts:
                        rec = measure_target(dc, t, settings, ceilings)
                        if rec["verified"]:
                            err = full_check(dc)
                            if err:
                                rec["verified"], rec["error"] = False, err
                        rec["params"]["full_check"] = True
                        records.append(rec)
                        cell.append(rec)
                    ref = next((r["gbps"] for r in cell if r["variant"] == CUB), None)
                    print(f"{case.label} ({dc.batch.count} buffers)", flush=True)
                    for r in cell:
                        g = r["gbps"]
                        ratio = f"{g / ref:5.2f}x CUB" if g and ref else "   -"
                        ok = "ok" if r["verified"] else f"WRONG: {r['error']}"
                        gbps = f"{g:7.0f}" if g else "      -"
                        pct = r.get("pct_of_copy_bw")
                        pct_s = f"{pct:5.1f}%" if pct is not None else "    -"
                        print(f"  {r['variant']:<40} {gbps} GB/s {pct_s} {ratio}  {ok}",
                              flush=True)
                    del dc
                    cupy.get_default_memory_pool().free_all_blocks()
    out = os.environ.get("OUT")
    path = Path(out) / "explore_memcpy_small.json" if out else None
    finish_campaign("cuda", ceilings, notes, "explore_memcpy_small", records, path)
    print(f"done in {time.perf_counter() - t0:.0f} s" + (f"; JSON {path}" if path else ""),
          flush=True)


if __name__ == "__main__":
    main()

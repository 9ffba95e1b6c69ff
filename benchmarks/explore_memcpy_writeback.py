"""Tiny buffers of the batched copy to destinations in five orders (issue 13, write-back).

How much does the destination order cost tiny buffers at 1 GiB (256 MiB beside it)? GPU
machine; ``--dry-run`` builds the layouts with NumPy only.

Cells: consecutive sources, align 4, 16 B and 1-8 B (4 or 8 B), totals 256 MiB and 1 GiB;
destination orders ``consecutive``, ``win1M`` / ``win8M`` / ``win64M`` (each window of that
many bytes of the consecutive destination keeps its buffers, packed again in a random order:
:func:`window_offsets`) and ``shuffle`` (the grid's cell, seed 3); sizes, offsets and batches
drawn on the GPU by the planned grid's ``SizeSet`` / ``GridCell``. Targets: the public
``warplab.memcpy_batched`` (default variant: it groups by its own destination windows where
its judge says so, for 2^20..2^27 buffers only: 1 GiB of 1-8 B, 179M buffers, is
``warp_tiers_words`` alone); the same call with each of ``--variants`` (``warp_tiers_words``:
the copy without grouping, what the order costs the copy itself); CUB's
``DeviceMemcpy::Batched`` (the grid's comparator, the lab's nvcc-built helper, not cuda.cccl;
skipped with a note without nvcc); with ``--ceiling`` the scatter ceiling. A record is
``grid.measure_planned``'s (one call; 3 + ``--reps`` calls back to back behind a blocking
kernel, CUDA events on the call's stream; one call into a poisoned destination, the grid's
check) with every destination byte compared (``explore_memcpy_small.full_check``); then 3
calls each host-timed until the stream is synchronised (``synced``: the call truly completed).
GB/s of all bytes (2 x data + 24 a buffer); xCUB: over CUB; xC: over the target's consecutive.

Prediction (benchmarks/NOTES.md): a 16-byte write into a 32-byte sector that L2 no longer holds
costs the sector's read and write in DRAM (ECC: no masked writes): 104 DRAM bytes a buffer
against 56 where L2 merges the halves, so ``shuffle`` near 0.54 xC (1-8 B: 94 against 36, 0.38
xC); windows that fit the L2 (50-60 MiB) near 1.0 xC.

Budget (defaults): 60 records of 18 calls: 1,080 calls, ~3,000 kernel launches (the default
3-4 a call, the others 1-2); ~10 s of calls at a conservative 350 GB/s (H100's 1 GiB cells:
395-660 GB/s scattered, 1.3-16 ms a call); full checks ~40-70 s; layouts a few s; start-up
(ceilings, NVRTC, nvcc for CUB) 30-90 s: about 2-3 min. Memory: 1 GiB of 1-8 B peaks near 16
int64 arrays of 179M (23 GB) plus 2.3 GB of data (the dry run prints it per cell), inside the
H200's 141 GB. No new cell after ``--deadline`` s (480); the JSON keeps what ran.

Usage: PYTHONPATH=src python3 benchmarks/explore_memcpy_writeback.py --json $OUT/writeback.json
       PYTHONPATH=src python3 benchmarks/explore_memcpy_writeback.py --dry-run --totals 64M
"""
from __future__ import annotations

import argparse
import time
from types import SimpleNamespace
from typing import Any

import numpy as np

from warplab.lab.campaigns.memcpy import grid
from warplab.lab.campaigns.memcpy.cells import Case, pack, target_call
from warplab.lab.campaigns.memcpy.plan import WARMUP
from warplab.lab.console import parse_size
from warplab.lab.harness.campaign import check_variant_names

ALIGN, SYNCED, PIECE = 4, 3, 32 << 20
CUB, PUBLIC = "cub::DeviceMemcpy::Batched", "warplab.memcpy_batched"


def window_offsets(xp: Any, sizes: Any, window: int, seed: int) -> Any:
    """Destination offsets shuffled within windows of ``window`` bytes: buffer i belongs to
    window ``cons[i] // window`` (``cons``: its consecutive offset); each window's buffers are
    packed again (``cells.pack``) in a random order, windows in order, so each window covers
    the bytes it covers in the consecutive layout. ``xp``: NumPy or CuPy."""
    key = xp.cumsum(sizes) - sizes
    key //= window
    if int(key[-1]) >= 1 << 23:
        raise ValueError(f"window {window} too small for {int(key[-1]) + 1} windows")
    key <<= 40
    key |= xp.random.RandomState(seed).randint(0, 1 << 40, size=int(sizes.size), dtype=np.int64)
    return pack(xp, sizes, xp.argsort(key))


def window_of(order: str) -> int | None:
    """``win8M`` -> 8 MiB; None for the grid's layouts."""
    return parse_size(order[3:]) if order.startswith("win") else None


class OrderSizes(grid.SizeSet):
    """The grid's size set whose destination layouts also include ``winW`` (not cached)."""

    def offsets(self, layout: str, seed: int) -> Any:
        w = window_of(layout)
        if w is None:
            return super().offsets(layout, seed)
        return window_offsets(self.xp, self.sizes, w, seed + w.bit_length())


def mean_size(lo: int, hi: int) -> float:
    return (-(-lo // ALIGN) + hi // ALIGN) / 2 * ALIGN


def predicted(lo: int, hi: int) -> float:
    """Rate over consecutive when every destination sector is read and written in DRAM."""
    m = mean_size(lo, hi)
    return (24 + 2 * m) / (24 + m + 64)


def mib(n: int) -> str:
    return f"{n / 2**20:g} MiB"


def estimate_s(args: argparse.Namespace, n_targets: int) -> tuple[float, float]:
    """(seconds of calls, seconds of full checks), conservatively."""
    calls = checks = 0.0
    for total in args.totals:
        for lo, hi in args.sizes:
            moved = 2 * total + 24 * total / mean_size(lo, hi)
            for order in args.orders:
                rate = 1000e9 if order == "consecutive" else 350e9
                calls += n_targets * (5 + WARMUP + args.reps) * moved / rate
                checks += n_targets * -(-total // PIECE) * 0.04
    return calls, checks


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    split = lambda s: [x for x in s.split(",") if x]  # noqa: E731
    ap.add_argument("--totals", type=lambda s: [parse_size(x) for x in split(s)],
                    default="256M,1G", help="data totals (default 256M,1G)")
    ap.add_argument("--sizes", default="16,1-8", help="size ranges (default 16,1-8)", type=lambda
                    s: [tuple(int(v) for v in (x.split("-") * 2)[:2]) for x in split(s)])
    ap.add_argument("--orders", default="consecutive,win1M,win8M,win64M,shuffle",
                    type=lambda s: ["shuffle" if x == "shuffled" else x for x in split(s)],
                    help="consecutive, winW (W: a size), shuffle(d)")
    ap.add_argument("--variants", default="warp_tiers_words", type=split,
                    help="memcpy_batched variants called beside the default")
    ap.add_argument("--reps", type=int, default=10, help="timed calls a record (default 10)")
    ap.add_argument("--ceiling", action="store_true", help="also the scatter ceiling")
    ap.add_argument("--json", default=None, help="JSON path")
    ap.add_argument("--deadline", type=float, default=480, help="no new cell after (s)")
    ap.add_argument("--dry-run", action="store_true", help="layouts with NumPy, no GPU")
    args = ap.parse_args()
    check_variant_names("memcpy_batched", args.variants, "cuda")
    for o in args.orders:
        try:
            ok = o in ("consecutive", "shuffle") or window_of(o) is not None
        except argparse.ArgumentTypeError:
            ok = False
        if not ok:
            ap.error(f"unknown order {o!r}: consecutive, shuffle(d), winW (e.g. win8M)")
    return args


def dry_run(args: argparse.Namespace) -> None:
    """Every layout with NumPy: counts, bytes, and that each order tiles the consecutive
    bytes (a permutation of the buffers) and keeps every buffer inside its window."""
    for total in args.totals:
        for lo, hi in args.sizes:
            ss = OrderSizes(np, lo, hi, ALIGN, total)
            n, data, sizes = ss.count, ss.data, ss.sizes
            cons = ss.offsets("consecutive", 0)
            print(f"{mib(total)} {lo}-{hi} B a{ALIGN}: {n:,} buffers, data {data:,} B, moved "
                  f"{2 * data + 24 * n:,} B\n  a call (descriptors {24 * n:,} B), GPU peak"
                  f" {(128 * n + 2.1 * data) / 1e9 + 2:.0f} GB, shuffle predicted "
                  f"{predicted(lo, hi):.2f} xC", flush=True)
            for order in args.orders:
                t0 = time.perf_counter()
                off = ss.offsets(order, 3)
                at = np.argsort(off, kind="stable")
                tiles = off[at[0]] == 0 and int(off[at[-1]] + sizes[at[-1]]) == data
                tiles = tiles and np.array_equal(off[at[1:]], (off + sizes)[at[:-1]])
                w, inside = window_of(order), "-"
                if w:
                    win = cons // w
                    start = cons[np.searchsorted(win, win, side="left")]
                    end = np.append(cons, data)[np.searchsorted(win, win, side="right")]
                    inside = "yes" if np.all((off >= start) & (off + sizes <= end)) else "NO"
                    inside += f" ({-(-data // w)})"
                print(f"  {order:<11} permutation {'yes' if tiles else 'NO'}, windowed "
                      f"{inside}, moved {np.count_nonzero(off != cons) / n:4.0%} <= "
                      f"{int(np.abs(off - cons).max()) / 2**20:.1f} MiB "
                      f"({time.perf_counter() - t0:.0f} s)", flush=True)
    calls, checks = estimate_s(args, 2 + len(args.variants) + args.ceiling)
    print(f"GPU estimate: {calls:.0f} s of calls + {checks:.0f} s of full checks + 30-90 s "
          "start-up", flush=True)


def table(records: list[dict], names: list[str]) -> list[str]:
    """80 columns (default targets): per (total, size) a line, then per order each target's
    GB/s, xCUB (not CUB's) and xC; the synced GB/s of the public default call; ok."""
    by: dict[tuple, dict[str, dict]] = {}
    for r in records:
        p = r["params"]
        by.setdefault((p["size"], p["min"], p["max"]), {}).setdefault(
            p["order"], {})[r["variant"]] = r
    label = {PUBLIC: "default", CUB: "CUB"}
    out = ["GB/s of all bytes; xCUB: over CUB; xC: over the same target's consecutive;",
           "synced: GB/s of the default call host-timed to synchronisation"]
    for (total, lo, hi), orders in by.items():
        first = next(iter(next(iter(orders.values())).values()))
        out.append(f"{mib(total)} {lo}-{hi} B: {first['params']['count']:,} buffers, "
                   f"{first['bytes_moved'] / 1e9:.2f} GB a call, predicted shuffle "
                   f"{predicted(lo, hi):.2f} xC")
        out.append(f"{'order':<11} " + " |".join(
            f"{label.get(n, n.split('[')[-1].rstrip(']').split('_')[-1])[:7]:>7}"
            + ("" if n == CUB else "  xCUB") + "   xC" for n in names) + " | synced")
        cons = orders.get("consecutive", {})
        for order, recs in orders.items():
            cub = (recs.get(CUB) or {}).get("gbps")
            cells = []
            for n in names:
                g, c = (recs.get(n) or {}).get("gbps"), (cons.get(n) or {}).get("gbps")
                x = "" if n == CUB else (f"{g / cub:6.2f}" if g and cub else "     -")
                cells.append((f"{g:7.0f}" if g else "      -") + x
                             + (f"{g / c:5.2f}" if g and c else "    -"))
            synced = (recs.get(PUBLIC) or {}).get("params", {}).get("synced_gbps")
            ok = all(r["verified"] for r in recs.values())
            out.append(f"{order:<11} " + " |".join(cells) + " | "
                       + (f"{synced:6.0f}" if synced else "     -") + ("" if ok else " WRONG"))
    return out


def main() -> None:
    args = parse_args()
    if args.dry_run:
        dry_run(args)
        return
    import cupy
    from explore_memcpy_small import finish_script, full_check

    import warplab
    from warplab.lab.campaigns.memcpy.bench import ceiling_target, targets
    from warplab.lab.campaigns.memcpy.ceiling import ScatterCeiling
    from warplab.lab.harness.ceilings import measure_all
    from warplab.lab.harness.timing import back_to_back_samples

    t0 = time.perf_counter()
    provs, notes = targets(["warp_tiers_words"], True)  # the variant dropped, CUB kept
    tgts: list[Any] = [SimpleNamespace(name=PUBLIC, fn=lambda b: warplab.memcpy_batched(
        b.src, b.dst, b.sizes))]
    tgts += [SimpleNamespace(name=f"{PUBLIC}[{v}]", fn=lambda b, v=v: warplab.memcpy_batched(
        b.src, b.dst, b.sizes, variant=v)) for v in args.variants]
    tgts += [t for t in provs if t.name == CUB] + ([ceiling_target()] if args.ceiling else [])
    notes.append("orders: destination offsets of the consecutive layout shuffled within windows "
                 "(winW, benchmarks/explore_memcpy_writeback.py) or the grid's shuffle; CUB: the "
                 "lab's nvcc-built helper")
    ceilings = measure_all("cuda")
    calls, checks = estimate_s(args, len(tgts))
    print(f"{warplab.__file__}; copy ceiling {ceilings.get('copy_gbps')} GB/s; targets "
          f"{[t.name for t in tgts]}; estimate {calls:.0f} s of calls + {checks:.0f} s of "
          f"checks; notes {notes}", flush=True)
    records: list[dict] = []
    stream = cupy.cuda.Stream(non_blocking=True)
    try:
        with stream:
            arena = grid.Arena(cupy, max(args.totals))
            for total in args.totals:
                for lo, hi in args.sizes:
                    if time.perf_counter() - t0 > args.deadline:
                        notes.append(f"deadline: {mib(total)} {lo}-{hi} B not measured")
                        continue
                    ss = OrderSizes(cupy, lo, hi, ALIGN, total)
                    arena.fit(ss.data)
                    for order in args.orders:
                        t_cell = time.perf_counter()
                        cell = grid.GridCell(arena, ss, Case(lo, hi, "consecutive", order, ALIGN,
                                                        total))
                        for t in tgts:
                            l2_reset = grid.fresh_l2(cupy)
                            ceil = isinstance(t, ScatterCeiling)
                            rec = (grid.measure_ceiling if ceil else grid.measure_planned)(
                                cell, t, args.reps, WARMUP, ceilings, back_to_back_samples,
                                None if ceil else full_check)
                            p = rec["params"]
                            p.update(order=order, window=window_of(order), l2_reset=l2_reset,
                                     case=f"C_{order}_{lo}_{hi}_a{ALIGN}_{total >> 20}M")
                            if rec["verified"] and not ceil:
                                call, ms = target_call(t, cell.batch)[0], []
                                for _ in range(SYNCED):
                                    t1 = time.perf_counter()
                                    call()
                                    stream.synchronize()
                                    ms.append((time.perf_counter() - t1) * 1e3)
                                p["synced_ms"] = float(np.median(ms))
                                p["synced_gbps"] = rec["bytes_moved"] / p["synced_ms"] / 1e6
                            records.append(rec)
                        print(f"{mib(total)} {lo}-{hi} B {order}: {ss.count} buffers, "
                              f"{time.perf_counter() - t_cell:.1f} s", flush=True)
                        del cell
                    del ss
                    cupy.get_default_memory_pool().free_all_blocks()
    except Exception as exc:  # keep the records made so far
        notes.append(f"stopped: {type(exc).__name__}: {exc}")
        print(f"stopped: {type(exc).__name__}: {exc}", flush=True)
    print("\n".join(table(records, [t.name for t in tgts])), flush=True)
    finish_script("explore_memcpy_writeback", records, ceilings, notes, args.json, t0)


if __name__ == "__main__":
    main()

"""Destination windows for the tiny scattered cells of the batched copy (issue 13): is the
cost of a tiny buffer written to a scattered destination the DRAM's, not the copy's?

Premise (session 20): a 1-8 B buffer written to a shuffled destination dirties a 32-byte
sector that about seven other buffers also write, each at a random time; the destination
(64 MiB in these cells) is larger than the L2 (50 MiB), and the streams of descriptors and
sources keep evicting, so a sector is written back partly written and read again several
times. Session 17's scatter ceiling touches the same sectors in the same order, so it is
bound the same way: a bound on copies that take the buffers in index order, not on copies.
Taking the buffers in an order where the destinations fall into one L2-sized window at a time
turns the scattered writes into L2 hits, leaving the gathered reads (the S_C cells' cost:
1-8 B a1 at 831 GB/s against C_S's 467).

Prototype (this script's kernels, not the package's): a counting pass over the destination
addresses (``(dst >> SHIFT) & (BINS - 1)``: windows of 2^SHIFT bytes), then a scatter pass that
writes the three descriptor arrays grouped by window (stable per block tile, any order within
a window), then the default copy (``warp_tiers_words``, both of its launches) on the grouped
arrays. Targets: the default; the whole pipeline (zeroing, count, scatter, copy: what a call
would cost) at two window sizes; the default's copy alone on arrays grouped beforehand
(``copy only``: the premise by itself); CUB; the cell's scatter ceiling. Every record is the
planned grid's with every destination byte compared (``explore_memcpy_small.measure_cells``).

Since call 3 (default, without ``--prototype``): the package's ``warp_tiers_windows`` timed in
pieces (the copy through a header naming the batch's own arrays; the count and group kernels
then the plain copy; the count and group kernels alone, not a copy, so its check fails by
design; the copy through the header after grouping once before the timing), its other shapes
(``spec.WINDOWS_SWEEP``), ``warp_tiers_words`` and CUB, on the cells where the pieces differ.
The pieces copy as the default does (``windows.copy_via`` at the default shape's runs: one
pass a block in calls 3-9, two since call 10).

``--span-ab``: on the tiny scattered cells of 512 MiB (``SPAN_CELLS``), the default against
its shape without the wide band (``wide_log2 = span_max_log2``: no batch spanning more than
256 MiB grouped) and with every batch of up to 512 MiB grouped (``span_max_log2`` + 1: 64
windows of up to 8 MiB), with the plain copy and CUB.

``--narrow-ab``: on cells of 64 and 128 MiB with shuffled destinations (``NARROW_CELLS``), the
default against its shape without the narrow band (``narrow_log2 = span_min_log2``: spans of
32-64 MiB grouped whatever the sources and sizes), with the plain copy and CUB.

Usage: PYTHONPATH=src python3 benchmarks/explore_memcpy_windows.py [--prototype | --span-ab |
--narrow-ab] --out $OUT/w.json
"""
from __future__ import annotations

import sys
import time
from types import SimpleNamespace
from typing import Any

import cupy
import numpy as np
from explore_memcpy_small import (
    cells_args,
    finish_script,
    judge_scatter,
    measure_cells,
    records_by_case,
)

from warplab.lab.campaigns.memcpy.bench import Case, targets
from warplab.lab.campaigns.memcpy.ceiling_cuda import cuda_ceiling
from warplab.families.memcpy import cuda as mc
from warplab.families.memcpy import blev_queue, windows
from warplab.families.memcpy.cuda import DeviceBatch, run_warp_classes
from warplab.families.memcpy.spec import WARP_TIERS_WORDS, WINDOWS, WINDOWS_SWEEP

CUB = "cub::DeviceMemcpy::Batched"
DEFAULT = "warp_tiers_words"
WINDOWS_NAME = "warp_tiers_windows"
C, S = "consecutive", "shuffle"
CELLS = ([(1, 8, a, (s, d)) for a in (1, 4) for s in (C, S) for d in (C, S)]
         + [(16, 16, 1, (C, S)), (16, 16, 1, (S, S)), (1, 64, 1, (C, S)), (1, 64, 1, (S, S))])
BINS, PER, THREADS = 64, 8, 256

SOURCE = r"""
typedef unsigned long long u64;
typedef unsigned int u32;
#define BINS 64
#define PER 8
#define THREADS 256

// Windows per bin, summed over the batch: a block's shared histogram, then one global atomic
// per bin.
extern "C" __global__ void __launch_bounds__(THREADS)
win_count(const u64* __restrict__ dst, u64 n, u32 shift, u32 mask, u32* __restrict__ counts) {
    __shared__ u32 h[BINS];
    if (threadIdx.x < BINS) h[threadIdx.x] = 0;
    __syncthreads();
    for (u64 i = (u64)blockIdx.x * THREADS + threadIdx.x; i < n; i += (u64)gridDim.x * THREADS)
        atomicAdd(&h[(dst[i] >> shift) & mask], 1u);
    __syncthreads();
    if (threadIdx.x < BINS && h[threadIdx.x]) atomicAdd(&counts[threadIdx.x], h[threadIdx.x]);
}

// The descriptors grouped by bin: bin b's entries from start[b] (the exclusive scan of the
// counts, per block), each tile of THREADS x PER entries reserving its run in every bin by one
// global atomic per bin.
extern "C" __global__ void __launch_bounds__(THREADS)
win_scatter(const u64* __restrict__ src, const u64* __restrict__ dst,
            const u64* __restrict__ sizes, u64 n, u32 shift, u32 mask,
            const u32* __restrict__ counts, u32* __restrict__ cursor, u64* __restrict__ osrc,
            u64* __restrict__ odst, u64* __restrict__ osize) {
    __shared__ u32 start[BINS], h[BINS], base[BINS];
    const u32 t = threadIdx.x;
    if (t < 32) {
        const u32 a = counts[2 * t], b = counts[2 * t + 1], s = a + b;
        u32 incl = s;
        for (int o = 1; o < 32; o <<= 1) {
            const u32 x = __shfl_up_sync(0xffffffffu, incl, o);
            if (t >= (u32)o) incl += x;
        }
        start[2 * t] = incl - s;
        start[2 * t + 1] = incl - s + a;
    }
    for (u64 t0 = (u64)blockIdx.x * THREADS * PER; t0 < n; t0 += (u64)gridDim.x * THREADS * PER) {
        if (t < BINS) h[t] = 0;
        __syncthreads();
        u64 s[PER], d[PER], z[PER];
        u32 bk[PER], rk[PER];
#pragma unroll
        for (int k = 0; k < PER; ++k) {
            const u64 i = t0 + (u64)k * THREADS + t;
            if (i < n) {
                d[k] = dst[i];
                s[k] = src[i];
                z[k] = sizes[i];
                bk[k] = (u32)(d[k] >> shift) & mask;
                rk[k] = atomicAdd(&h[bk[k]], 1u);
            }
        }
        __syncthreads();
        if (t < BINS && h[t]) base[t] = start[t] + atomicAdd(&cursor[t], h[t]);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < PER; ++k) {
            const u64 i = t0 + (u64)k * THREADS + t;
            if (i < n) {
                const u64 o = base[bk[k]] + rk[k];
                osrc[o] = s[k];
                odst[o] = d[k];
                osize[o] = z[k];
            }
        }
        __syncthreads();
    }
}
"""

_MOD: dict[str, Any] = {}


def _kernels() -> tuple[Any, Any]:
    if not _MOD:
        m = cupy.RawModule(code=SOURCE, options=("-std=c++17",))
        _MOD["count"], _MOD["scatter"] = m.get_function("win_count"), m.get_function("win_scatter")
    return _MOD["count"], _MOD["scatter"]


def grouped(b: DeviceBatch, shift: int, bins: int) -> DeviceBatch:
    """The batch's descriptors grouped by destination window (new arrays, the prototype's
    three launches and a zeroing on the current stream)."""
    count, scatter = _kernels()
    n = b.count
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    tally = cupy.zeros(2 * BINS, dtype=np.uint32)
    out = [cupy.empty(n, dtype=np.uint64) for _ in range(3)]
    u64, u32 = np.uint64, np.uint32
    count((8 * sms,), (THREADS,), (b.dst, u64(n), u32(shift), u32(bins - 1), tally[:BINS]))
    grid = min(-(-n // (THREADS * PER)), 3 * sms)  # 80 registers: three blocks an SM
    scatter((grid,), (THREADS,), (b.src, b.dst, b.sizes, u64(n), u32(shift), u32(bins - 1),
                                  tally[:BINS], tally[BINS:], *out))
    return DeviceBatch(out[0], out[1], out[2], n, None)


def pipeline(shift: int, bins: int) -> SimpleNamespace:
    """Group, then the default's copy: what a call would cost."""
    return SimpleNamespace(
        name=f"windows 2^{shift} x {bins} (group + copy)",
        fn=lambda b: run_warp_classes(grouped(b, shift, bins), WARP_TIERS_WORDS))


def copy_only(shift: int, bins: int) -> SimpleNamespace:
    """The default's copy on arrays grouped once per batch, before the timing."""
    held: dict[str, Any] = {}

    def fn(b: DeviceBatch) -> None:
        if held.get("batch") is not b:  # the cell's batch object: held, so never reused
            held["batch"], held["grouped"] = b, grouped(b, shift, bins)
        run_warp_classes(held["grouped"], WARP_TIERS_WORDS)

    return SimpleNamespace(name=f"windows 2^{shift} x {bins} (copy only)", fn=fn)


def summary(by_case: dict[str, dict[str, dict]], names: list[str]) -> list[str]:
    lines = []
    for case, recs in by_case.items():
        cub = recs.get(CUB, {}).get("gbps") or 0.0
        lines.append(f"{case}  CUB {cub:6.0f}")
        for n in names:
            r = recs.get(n)
            if n == CUB or not r or not r.get("gbps"):
                continue
            x = f"{r['gbps'] / cub:5.2f}x CUB" if cub else ""
            mark = "" if r["verified"] else "  WRONG"
            lines.append(f"    {n:<40} {r['gbps']:7.0f} GB/s {x}{mark}")
    return lines


def _windows_state(b: DeviceBatch) -> tuple[Any, Any, int, int]:
    """(the default shape's launches, the stream's queue, header address, tally address)."""
    dev = cupy.cuda.runtime.getDevice()
    go = windows._launches(WARP_TIERS_WORDS, WINDOWS, dev, windows.OVERLAP)
    _, q = blev_queue.stream_queue(dev)
    return go, q, *q.windows_at()


def _via_copy(b: DeviceBatch, go: Any, q: Any, hdr: int) -> None:
    """The default's copy kernels reading their arrays from the header at ``hdr``."""
    windows.copy_via(go, mc.fastpath.current_stream()[0], q, b.count, hdr, WINDOWS.runs, True)


def _judge_and_group(b: DeviceBatch, go: Any, hdr: int, tally: int, at: int) -> None:
    dev = cupy.cuda.runtime.getDevice()
    stream, q = blev_queue.stream_queue(dev)
    windows.judge_and_group(go, stream, q, b, WINDOWS, hdr, tally, at)


def via_own_arrays() -> SimpleNamespace:
    """The copy through a header naming the batch's own arrays: the indirection's cost."""
    held: dict[str, Any] = {}

    def fn(b: DeviceBatch) -> None:
        go, q, _, _ = _windows_state(b)
        if held.get("batch") is not b:
            held["batch"] = b
            held["hdr"] = cupy.asarray(np.array([b.src.data.ptr, b.dst.data.ptr,
                                                 b.sizes.data.ptr, 0, 0], dtype=np.uint64))
        _via_copy(b, go, q, held["hdr"].data.ptr)

    return SimpleNamespace(name="piece: via header, own arrays", fn=fn)


def judge_then_plain() -> SimpleNamespace:
    """Count and group kernels, then the plain copy of the batch's own arrays (right only
    where they do not group): the two extra launches' cost."""
    def fn(b: DeviceBatch) -> None:
        go, q, hdr, tally = _windows_state(b)
        scratch = cupy.empty(3 * b.count, dtype=np.uint64)
        _judge_and_group(b, go, hdr, tally, scratch.data.ptr)
        run_warp_classes(b, WARP_TIERS_WORDS)

    return SimpleNamespace(name="piece: count + group, plain copy", fn=fn)


def grouping_only() -> SimpleNamespace:
    """Count and group kernels alone (not a copy: its check fails by design)."""
    def fn(b: DeviceBatch) -> None:
        go, q, hdr, tally = _windows_state(b)
        scratch = cupy.empty(3 * b.count, dtype=np.uint64)
        _judge_and_group(b, go, hdr, tally, scratch.data.ptr)

    return SimpleNamespace(name="piece: count + group only (no copy)", fn=fn)


def via_grouped() -> SimpleNamespace:
    """The copy through the header after one grouping before the timing (copy only)."""
    held: dict[str, Any] = {}

    def fn(b: DeviceBatch) -> None:
        go, q, hdr, tally = _windows_state(b)
        if held.get("batch") is not b:
            held["batch"], held["scratch"] = b, cupy.empty(3 * b.count, dtype=np.uint64)
            _judge_and_group(b, go, hdr, tally, held["scratch"].data.ptr)
            held["hdr"] = cupy.array(q.windows[:5])  # this batch's header, kept
        _via_copy(b, go, q, held["hdr"].data.ptr)

    return SimpleNamespace(name="piece: via header, grouped before", fn=fn)


PIECE_CELLS = [(1, 8, 1, (C, C)), (1, 8, 1, (S, C)), (1, 8, 1, (C, S)), (1, 8, 1, (S, S)),
               (1, 8, 4, (C, S)), (1, 8, 4, (S, S)), (16, 16, 1, (C, S)), (16, 16, 1, (S, S)),
               (1, 1024, 1, (C, C)), (1, 1024, 1, (S, C))]


SPAN_CELLS = [(lo, hi, a, (s, S)) for lo, hi, a in ((1, 8, 1), (1, 8, 4), (16, 16, 1), (1, 64, 1))
              for s in (C, S)]
SPAN_TOTAL = 512 << 20
NARROW_CELLS = [(lo, hi, a, (s, S), total) for total in (64 << 20, 128 << 20)
                for lo, hi, a, s in ((1, 8, 1, C), (1, 8, 4, C), (16, 16, 1, C), (1, 64, 1, C),
                                     (1, 8, 1, S))]


def main() -> None:
    args = cells_args(__doc__)
    t0 = time.perf_counter()
    variants, notes = targets([DEFAULT, WINDOWS_NAME], True)
    if SPAN_AB or NARROW_AB:
        shapes = ((WINDOWS._replace(narrow_log2=WINDOWS.span_min_log2),) if NARROW_AB else
                  (WINDOWS._replace(wide_log2=WINDOWS.span_max_log2),
                   WINDOWS._replace(span_max_log2=WINDOWS.wide_log2)))
        tgts = [t for t in variants if getattr(t, "name", "") in (DEFAULT, WINDOWS_NAME, CUB)]
        tgts[1:1] = [windows.shape_target(w) for w in shapes]
        grid = ([Case(lo, hi, s, d, a, total) for lo, hi, a, (s, d), total in NARROW_CELLS]
                if NARROW_AB else
                [Case(lo, hi, s, d, a, SPAN_TOTAL) for lo, hi, a, (s, d) in SPAN_CELLS])
        records, ceilings = measure_cells(grid, tgts, notes, args.runs, auto_total=False)
        print("\n".join(summary(records_by_case(records), [t.name for t in tgts])), flush=True)
        finish_script("explore_memcpy_windows", records, ceilings, notes, args.out, t0)
        return
    if PROTOTYPE:  # session 20's call 1: the prototype's grouping on CELLS
        tgts = [t for t in variants if getattr(t, "name", "") == DEFAULT]
        tgts += [pipeline(20, 64), pipeline(22, 16), copy_only(20, 64)]
        tgts += [t for t in variants if getattr(t, "name", "") == CUB] + [cuda_ceiling()]
        cells = CELLS
    else:  # calls 3 and 5: the pieces of the default's call, and the other shapes
        tgts = [t for t in variants if getattr(t, "name", "") in (DEFAULT, WINDOWS_NAME)]
        tgts += [via_own_arrays(), judge_then_plain(), grouping_only(), via_grouped()]
        tgts += [windows.shape_target(w) for w in WINDOWS_SWEEP]
        tgts += [t for t in variants if getattr(t, "name", "") == CUB]
        cells = PIECE_CELLS
    names = [t.name for t in tgts]
    grid = [Case(lo, hi, s, d, a, 1) for lo, hi, a, (s, d) in cells]
    print(f"{len(grid)} cells", flush=True)
    records, ceilings = measure_cells(grid, tgts, notes, args.runs)
    by_case = records_by_case(records)
    print("\n".join(summary(by_case, names)), flush=True)
    if PROTOTYPE:
        bad = [case for case, ok in judge_scatter(records).items() if ok is False]
        print(f"ceiling beaten by a copy in: {', '.join(bad) or 'none'}", flush=True)
    finish_script("explore_memcpy_windows", records, ceilings, notes, args.out, t0)


if __name__ == "__main__":
    PROTOTYPE, SPAN_AB = "--prototype" in sys.argv, "--span-ab" in sys.argv
    NARROW_AB = "--narrow-ab" in sys.argv
    sys.argv = [a for a in sys.argv if a not in ("--prototype", "--span-ab", "--narrow-ab")]
    main()

"""What dispatch and the cost model see of a batched copy, the size classes of the
``size_classes`` kernels, and the copy *plan* every public function reduces to.

A plan is five integer arrays of equal length, one entry per buffer: ``src_index`` and
``src_offset`` (which source array, and the byte offset in it), ``dst_index`` and
``dst_offset`` (the same for the destination) and ``size`` (bytes). ``copy_batched`` copies
array i to array i whole; ``concatenate`` and ``split`` copy one row block per (outer index,
array) pair. The cuda backend turns a plan into three uint64 arrays (source address,
destination address, size) sent to the GPU in one copy; the cpu backend runs it as slice copies.

Cost model (the byte counting of CUB's DeviceBatchMemcpy benchmark): every buffer's data is
read and written once and its source pointer, destination pointer and size (8 bytes each) are
read once: ``bytes_moved = 2 * data + 24 * count``. ``data_bytes = 2 * data`` counts the
copied bytes only.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, TypeAlias

import numpy as np

#: Host addresses or sizes of buffers, one per buffer: a list of Python ints or a uint64 array.
Addresses: TypeAlias = Sequence[int] | np.ndarray

#: Bytes of metadata read per buffer: source address, destination address, size (uint64 each).
META_BYTES = 24


class SizeClasses(NamedTuple):
    """The ``size_classes`` kernel's tile shape and size thresholds (bytes): TLEV up to
    ``tlev_max`` (run-length decoded, a byte per thread), WLEV up to ``wlev_max`` (a warp
    each), BLEV above (queued; a second kernel copies ``chunk``-byte pieces)."""

    tile_threads: int
    buffers_per_thread: int
    tlev_max: int
    wlev_max: int
    chunk: int

    def classify(self, sizes: np.ndarray) -> np.ndarray:
        """Size class per buffer: 0 TLEV, 1 WLEV, 2 BLEV (negative sizes count as 0 bytes)."""
        s = np.maximum(np.asarray(sizes, dtype=np.int64), 0)
        return np.where(s <= self.tlev_max, 0, np.where(s <= self.wlev_max, 1, 2))


#: CUB's DeviceBatchMemcpy thresholds (TLEV up to 32 bytes, WLEV up to 1 KiB, BLEV above) and
#: its tile of 128 threads x 4 buffers.
PR_CLASSES = SizeClasses(128, 4, 32, 1024, 8192)
#: ``size_classes_tuned``: one buffer per thread in tiles of 256 (eight warps per tile, twice
#: the warps in flight), warps take buffers up to 8 KiB (CUB queues 4 KiB buffers for a second
#: kernel: its weak spot), 32 KiB pieces for the large ones.
TUNED_CLASSES = SizeClasses(256, 1, 32, 8192, 32768)


class WarpClasses(NamedTuple):
    """The ``warp_classes`` kernel's thresholds (bytes): a lane per buffer up to ``tlev_max``
    (<= 16, the widest words both addresses allow), groups of ``group`` lanes per buffer up to
    ``sub_max``, groups of ``group2`` lanes up to ``sub2_max`` (a second tier; none while
    ``sub2_max`` <= ``sub_max``), a warp per buffer up to ``wlev_max``, BLEV above (queued;
    the second kernel of ``size_classes`` copies ``chunk``-byte pieces); ``min_blocks``
    blocks of 256 threads per SM (a register cap); ``stream``: which thread-level buffers go
    through the warp's byte stream instead of their own lane (0 none, 1 those with an address
    not 4-byte aligned, 2 all, 3 all but those one aligned move copies, 4 those neither
    4-byte words nor one aligned move copies; ``model.streamed``); ``zeroed``: which register
    arrays the kernel zeroes before their predicated loads (code generation only: 1 the
    stream's bytes, 2 the lane's words and bytes and the groups' chunks, 3 both, 0 none);
    ``loads``: the cache policy of the loads (``WARPLAB_MEMCPY_LOADS`` of the kernel's module,
    ``memcpy_copy.cuh``: 0 the read-only path; bits for evict-first loads of 1 every source
    byte, 2 the descriptors, 4 the thread-level copies' source bytes, 8 those of warps whose
    destinations are scattered; L2 hints of 16 source bytes evict-first, 32 the thread-level
    stores evict-last, 64 both in warps whose destinations are scattered, 128 64's loads
    alone); ``words``: aligned words where bytes or shifted chunks would be copied (bits; 0
    none): 1 the ``group``-lane groups copy buffers of at most 8 ``group`` bytes (not both
    addresses multiples of 16) as 4-byte words of the destination, each funnel-shifted from
    the two aligned source words holding its bytes, the bytes before the first and after the
    last whole word one a lane; 2 (``stream`` 4 only) in warps whose destinations are
    scattered, the thread-level buffers that would take two or more words of their own lane
    go through a stream of the warp's words; 4 (``stream`` 4 only) in warps whose
    destinations are not scattered, the thread-level buffers that the byte stream would take
    are copied by their own lane from the aligned 8-byte source words holding their bytes,
    stored byte by byte (the models: ``model.py``). Classes are decided per warp of 32
    buffers by ballots: no block-wide histogram or partition."""

    tlev_max: int
    group: int
    sub_max: int
    wlev_max: int
    chunk: int
    min_blocks: int  # the kernel's registers are capped so that this many blocks fit an SM
    stream: int = 0
    group2: int = 32
    sub2_max: int = 0
    zeroed: int = 0
    loads: int = 0
    words: int = 0

    @property
    def tier2_max(self) -> int:
        """The second group tier's largest size (``sub_max`` when it has none)."""
        return max(self.sub_max, self.sub2_max)

    def classify(self, sizes: np.ndarray) -> np.ndarray:
        """Class per buffer: 0 thread, 1 group, 2 second-tier group, 3 warp, 4 BLEV; -1 for
        empty buffers."""
        s = np.maximum(np.asarray(sizes, dtype=np.int64), 0)
        return np.select([s == 0, s <= self.tlev_max, s <= self.sub_max, s <= self.tier2_max,
                          s <= self.wlev_max], [-1, 0, 1, 2, 3], 4)


#: ``warp_classes``: a lane per buffer up to 16 bytes, eight lanes per buffer up to 256
#: bytes, the tuned design's warp and BLEV limits above, four blocks per SM (<= 64 registers).
WARP_CLASSES = WarpClasses(16, 8, 256, 8192, 32768, 4)
#: ``warp_classes_stream``: as ``WARP_CLASSES``, the misaligned thread-level buffers (those
#: ``thread_copy`` would copy byte by byte) through the warp's byte stream.
WARP_CLASSES_STREAM = WARP_CLASSES._replace(stream=1)
#: ``warp_tiers``: each size range with the handling measured best for it on the H100
#: (benchmarks/NOTES.md): thread-level buffers through the warp's byte stream except those one
#: aligned move copies (stream 3), groups of 8 lanes up to 256 bytes, a whole warp's group copy
#: (every load before its stores) up to 1 KiB, the warp loop up to 8 KiB, BLEV above.
WARP_TIERS = WARP_CLASSES._replace(stream=3, group2=32, sub2_max=1024)
#: ``warp_tiers_words``: ``WARP_TIERS`` with the thread-level buffers whose addresses are both
#: 4-byte aligned copied by their own lane in 4-, 8- or 16-byte words (as ``WARP_CLASSES``),
#: the other ones one aligned move copies by their lane, only the rest streamed (stream 4;
#: ``WARP_TIERS`` streams 4- and 8-byte buffers at align 4 byte by byte), and every register
#: array zeroed before its predicated loads (zeroed 3: without it ptxas spills the stream's
#: bytes and the lanes' words at the 64-register cap, a spill store behind each load, so a
#: round's loads are not all in flight; on the H100 1.08x the unzeroed kernel by geometric
#: mean over 35 cells, no cell slower, benchmarks/NOTES.md); its descriptors loaded
#: evict-first (load policy 2: they are most of the bytes read in the tiny-buffer cells, and
#: their L2 lines are better left to the destination's partially written sectors); and
#: 4-byte words in neighbouring lanes (words 3): the groups of 8 lanes copy buffers
#: of 17-64 bytes (not both addresses 16-byte aligned) as words of the destination,
#: funnel-shifted from aligned source words (one load and one store instruction per 32 bytes
#: and one for the at most 6 edge bytes, instead of up to three 8-byte loads per 16-byte chunk
#: and a byte per edge byte), and, in warps whose destinations are scattered, the
#: thread-level buffers of two or more 4-byte words (size and addresses multiples of 4) go
#: through a stream of the warp's words (one store per buffer's sector instead of one per
#: word), and in the other warps the misaligned thread-level buffers are copied by their
#: own lane from aligned 8-byte source words (words 7: on the H200 the byte stream's scan,
#: owner lookups and load a byte cost 1-8 B buffers at align 1 into consecutive destinations
#: 2.3-2.5x align 4's instructions per buffer; the lanes copy 512 MiB of them in 12% (shuffled
#: sources) to 24% (consecutive) less time, benchmarks/NOTES.md). (Its second group
#: tier in groups of 16 lanes, two buffers a warp at a time: 512 B buffers shuffled at 1 GiB
#: 85% -> 91% of the same-size copy on the H200, the 1-1024 B mixes shuffled at align 1 and 4
#: 3-5% slower; not taken, benchmarks/NOTES.md.)
WARP_TIERS_WORDS = WARP_TIERS._replace(stream=4, zeroed=3, loads=2, words=7)
#: The load policies the sweep compiles beside the default's 2 (evict-first loads of: 1 every
#: source byte, 2 the descriptors, 4 the thread-level source bytes, 8 those of warps whose
#: destinations are scattered; L2 hints of 16 source bytes evict-first, 32 thread-level stores
#: evict-last, 64 both for the thread-level copies of warps whose destinations are scattered;
#: 128 64's loads alone; sums combine them; 0 none).
LOAD_POLICIES = (0, 1, 3, 4, 6, 8, 10, 18, 34, 50, 66, 130)
#: Other shapes of the same kernel, compiled beside it for benchmarks/explore_memcpy_small.py
#: and explore_memcpy_cells.py: ``warp_tiers_words`` with its registers capped for 5, 6 and 8
#: blocks of 256 threads per SM (48, 40 and 32 registers: more warps in flight for the
#: tiny-buffer cells, at the risk of spills; on the H100 slower wherever the destination is
#: shuffled), then with the other load policies (each its own NVRTC module), then with no
#: words and each part of them (words 1, 2, 3: 3 without the lanes' shifted copies). (The
#: unzeroed shapes, the tiers at three blocks, the mid stream, the scatter-gated group words
#: and older shapes: benchmarks/NOTES.md.)
WARP_CLASSES_SWEEP = (*(WARP_TIERS_WORDS._replace(min_blocks=b) for b in (5, 6, 8)),
                      *(WARP_TIERS_WORDS._replace(loads=k) for k in LOAD_POLICIES),
                      *(WARP_TIERS_WORDS._replace(words=w) for w in (0, 1, 2, 3)))


class WindowsShape(NamedTuple):
    """Destination windows (``memcpy_windows.cuh``, ``warp_tiers_windows``): the windows over
    the sampled destination span (32 or 64), buffers per thread of the group kernel's tiles,
    its blocks per SM (the register cap), the count kernel's blocks per SM, the greatest
    sampled mean size grouped (bytes), log2 of the least sampled destination span grouped
    (below it the scattered writes stay in the H100's 50 MiB L2), how many consecutive
    passes of 32 buffers a warp each block of the copy makes (``Runs`` in
    ``memcpy_warp.cuh``: blocks still start in the batch's order, fewer of them), log2 of the
    widest sampled span grouped (wider, the 64 windows are wider than 4 MiB and grouping lost
    to the plain copy in every destination order on the H200: 1 GiB of 16 B buffers shuffled
    639 against 811 GB/s), log2 of the distance between neighbours' destinations (or
    sources) that counts them as far apart (half the sampled pairs must be: 16 B buffers
    shuffled within 1 MiB windows copied at 3,005 GB/s as they are, 1,271 grouped), and log2 of
    the widest span grouped where the sampled sources are far apart too or the sampled mean
    size is at most ``tiny_mean_max`` bytes (512 MiB on the H200, grouped over the copy as it
    is: shuffled sources 1.16-1.47x, consecutive sources of 1-8 B 1.04-1.10x, of 16 B
    0.91-0.93x; benchmarks/NOTES.md), and log2 of the span below which a batch is grouped
    only where the sampled sources are far apart or the sampled mean size is above
    ``tiny_mean_max`` (``span_min_log2``: no such band; 64 MiB on the H200, grouped over the
    copy as it is: consecutive sources of 1-8 B 0.95x, of 16 B 1.10x, shuffled 1.48x)."""

    bins: int = 64
    per: int = 4
    group_blocks: int = 4
    count_blocks: int = 2
    mean_max: int = 48
    span_min_log2: int = 25
    runs: int = 2
    span_max_log2: int = 28
    far_log2: int = 22
    wide_log2: int = 29
    tiny_mean_max: int = 8
    narrow_log2: int = 26


#: ``warp_tiers_windows``'s shape (H100, benchmarks/NOTES.md): 64 windows, tiles of 4 buffers a
#: thread at four blocks an SM (grouping 2-3% faster than 8 at two), the count kernel at two
#: blocks an SM (2.4 us cheaper where it does not group), copy blocks of two consecutive
#: passes (half the blocks to launch: 1-8 B cells not grouped 1.5-5% faster, grouped 1-8 B
#: cells within 1%, grouped 16 B cells 12% slower than one pass: a compromise measured on the
#: grid's cells); the mean size grouped at most 48 bytes (the fixed 64 B cells lost 30% when
#: grouped at up to 64).
WINDOWS = WindowsShape()
#: Other shapes compiled beside it for benchmarks/explore_memcpy_windows.py: tiles of 8 a
#: thread at two blocks an SM with the count kernel at eight, 32 windows (1-2% faster at
#: 1-8 B, 7% slower at 16 B), runs of 1 and 4 passes a block, and no narrow band (spans of
#: 32-64 MiB grouped whatever the sources and sizes). (A copy grid of one or two resident
#: waves striding through the batch, and block tickets, are measured and not taken:
#: benchmarks/NOTES.md.)
WINDOWS_SWEEP = (WINDOWS._replace(per=8, group_blocks=2, count_blocks=8),
                 WINDOWS._replace(bins=32), *(WINDOWS._replace(runs=r) for r in (1, 4)),
                 WINDOWS._replace(narrow_log2=WINDOWS.span_min_log2))
#: Batches of fewer buffers are copied without windows (the two extra launches cost about
#: 10 us even where they do not group: several percent of such a copy on the H100); more
#: buffers are not grouped either (24 bytes a buffer of temporary memory).
WINDOWS_MIN_COUNT, WINDOWS_MAX_COUNT = 1 << 20, 1 << 27
#: u64 words of a stream's window state: the header (5), then the tally (up to 64 windows and
#: two finished-block counters, 32-bit each).
WINDOWS_STATE_WORDS = 5 + (64 + 2) // 2

#: The BLEV counter packs queued buffers (top 32 bits) and chunks (low 32 bits) into one
#: 64-bit atomic: at most 2^32 - 1 buffers per call (ids are 32-bit) and 2^32 - 1 chunks
#: (32 TiB of 8 KiB pieces).
MAX_QUEUED = (1 << 32) - 1


class MemcpyProblem(NamedTuple):
    """One batched copy as dispatch sees it. ``data`` and ``largest`` are None when the sizes
    live on the device only (the pointer form): nothing is synchronised to learn them."""

    count: int  # type: ignore[assignment]  # a field named as tuple's method
    data: int | None
    largest: int | None
    on_device: bool


def bytes_moved(problem: MemcpyProblem) -> int:
    """All bytes, as CUB's DeviceBatchMemcpy benchmark counts them: data read + written, 24
    bytes of metadata per buffer."""
    return 2 * int(problem.data or 0) + META_BYTES * problem.count


def data_bytes(problem: MemcpyProblem) -> int:
    """Copied bytes only: data read + written."""
    return 2 * int(problem.data or 0)


class Plan(NamedTuple):
    """Buffers to copy as (array index, byte offset) pairs: see the module docstring."""

    src_index: np.ndarray
    src_offset: np.ndarray
    dst_index: np.ndarray
    dst_offset: np.ndarray
    size: np.ndarray

    @property
    def count(self) -> int:  # type: ignore[override]  # the buffers, not tuple.count
        return int(self.size.size)


def as_i64(x: object) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def pairwise_plan(sizes: np.ndarray) -> Plan:
    """Array i copied whole into array i."""
    idx = np.arange(len(sizes), dtype=np.int64)
    zero = np.zeros(len(sizes), dtype=np.int64)
    return Plan(idx, zero, idx, zero.copy(), as_i64(sizes))


def _rows(shapes: list[tuple[int, ...]], axis: int, itemsize: int) -> tuple[int, np.ndarray]:
    """(outer count, bytes per row block of each array) of C-contiguous arrays along ``axis``."""
    outer = int(np.prod(shapes[0][:axis], dtype=np.int64))
    inner = int(np.prod(shapes[0][axis + 1:], dtype=np.int64))
    widths = as_i64([s[axis] for s in shapes])
    return outer, widths * inner * itemsize


def concat_plan(shapes: list[tuple[int, ...]], axis: int, itemsize: int) -> Plan:
    """Arrays of ``shapes`` (C-contiguous, equal except along ``axis``) joined along ``axis``
    into one C-contiguous output (``dst_index`` 0): one buffer per (outer index, array) with
    bytes to copy, in the output's order."""
    outer, row = _rows(shapes, axis, itemsize)
    k = len(shapes)
    o = np.repeat(np.arange(outer, dtype=np.int64), k)
    i = np.tile(np.arange(k, dtype=np.int64), outer)
    start = np.concatenate([[0], np.cumsum(row)[:-1]]).astype(np.int64)
    keep = row[i] > 0
    o, i = o[keep], i[keep]
    return Plan(i, o * row[i], np.zeros_like(i), o * int(row.sum()) + start[i], row[i])


def split_plan(shape: tuple[int, ...], axis: int, widths: list[int], itemsize: int) -> Plan:
    """One C-contiguous array of ``shape`` cut along ``axis`` into pieces of ``widths``
    (summing to ``shape[axis]``), each piece its own C-contiguous array (``dst_index`` j)."""
    shapes = [(*shape[:axis], w, *shape[axis + 1:]) for w in widths]
    p = concat_plan(shapes, axis, itemsize)
    return Plan(p.dst_index, p.dst_offset, p.src_index, p.src_offset, p.size)


def overlap(src_lo: np.ndarray, src_hi: np.ndarray, dst_lo: np.ndarray,
            dst_hi: np.ndarray) -> bool:
    """True when a destination interval ``[lo, hi)`` meets a source or another destination
    (sources may overlap each other; empty intervals never overlap). Sorted sweep, O(n log n):
    an interval meets an earlier-starting one exactly when it starts before the largest end
    seen so far (of destinations, for a source; of everything, for a destination)."""
    lo = np.concatenate([as_i64(src_lo), as_i64(dst_lo)])
    hi = np.concatenate([as_i64(src_hi), as_i64(dst_hi)])
    is_dst = np.concatenate([np.zeros(len(src_lo), bool), np.ones(len(dst_lo), bool)])
    keep = hi > lo
    lo, hi, is_dst = lo[keep], hi[keep], is_dst[keep]
    if lo.size < 2:
        return False
    order = np.argsort(lo, kind="stable")
    lo, hi, is_dst = lo[order], hi[order], is_dst[order]
    floor = np.iinfo(np.int64).min
    end_all = np.maximum.accumulate(np.concatenate([[floor], hi[:-1]]))
    end_dst = np.maximum.accumulate(np.concatenate([[floor], np.where(is_dst, hi, floor)[:-1]]))
    return bool(np.any(lo < np.where(is_dst, end_all, end_dst)))


#: Up to this many buffers :func:`overlaps` sweeps in Python (a sort of a few dozen tuples is
#: cheaper than NumPy's per-call overhead); more go through :func:`overlap`.
SMALL_SWEEP = 64


def overlaps(src: Any, dst: Any, sizes: Any) -> bool:
    """:func:`overlap` of ``[src, src + size)`` and ``[dst, dst + size)`` per buffer, for
    address and size lists (Python ints) or integer arrays (read as int64, as before)."""
    if len(sizes) > SMALL_SWEEP:
        s, lo, hi = (np.asarray(v).astype(np.int64) for v in (sizes, src, dst))
        return overlap(lo, lo + s, hi, hi + s)
    return overlap_sweep(*(v if type(v) is list else np.asarray(v).astype(np.int64).tolist()
                           for v in (src, dst, sizes)))


def overlap_sweep(src: list[int], dst: list[int], sizes: list[int]) -> bool:
    """:func:`overlap`'s rule in Python (the same answer: ties in start address cannot change
    it, since two non-empty intervals that start together meet)."""
    items = sorted([(a, a + n, False) for a, n in zip(src, sizes) if n > 0]
                   + [(a, a + n, True) for a, n in zip(dst, sizes) if n > 0])
    end_all = end_dst = -(1 << 64)
    for lo, hi, is_dst in items:
        if lo < (end_all if is_dst else end_dst):
            return True
        if hi > end_all:
            end_all = hi
        if is_dst and hi > end_dst:
            end_dst = hi
    return False

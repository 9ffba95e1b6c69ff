"""Destination windows, the launch plan of ``warp_tiers_windows`` (the default; kernels in
``memcpy_windows.cuh``, the copy's in ``memcpy_warp.cuh`` and ``memcpy.cu``).

A batch of tiny buffers whose destinations are scattered over more than the L2 writes each
32-byte destination sector partly, seven or so times, at random moments: copied in index
order, the sector goes back to DRAM partly written and comes back each time (the 1-8 B cells
with a shuffled destination ran within 3-10% of a ceiling that touches the sectors in that
order, and CUB no better). Grouped by destination window first, the copy writes one window
at a time and the partial writes meet in L2: 1.6-3.0x ``warp_tiers_words`` in those cells
for the copy alone (H100, benchmarks/NOTES.md).

The call, for :data:`~.spec.WINDOWS_MIN_COUNT` to :data:`~.spec.WINDOWS_MAX_COUNT` buffers
(others: ``warp_tiers_words`` itself), nothing read back:

1. ``memcpy_windows_count``: every block judges the batch from the same 256 sampled pairs of
   neighbouring buffers (group when most lie more than 4 MiB apart in the destination, the
   mean sampled size is small and the sampled destinations span more than 32 MiB and at
   most 256 MiB, or 512 MiB where the sampled sources are scattered too or the mean is at
   most 8 bytes: windows wider than 4 MiB pay only there; under 64 MiB only where the
   sampled sources are scattered or the mean is above 8 bytes: the L2 holds most of such a
   span's sectors, ``spec.WindowsShape``) and block 0 writes the stream's header; when
   grouping, the destinations are counted per window.
2. ``memcpy_windows_group``: when the header says so, the three arrays are written grouped
   by window into 24 bytes a buffer of temporary memory (tiles staged in shared memory, each
   window's run written by neighbouring lanes).
3. the copy's two kernels (``warp_tiers_words``'s), reading their arrays from the header
   (the grouped ones or the batch's own), each block of the first making a run of
   :attr:`~.spec.WindowsShape.runs` consecutive passes.
"""
from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np

from warplab.core.launch import ARRAY, Prepared
from warplab.core.registry import register
from warplab.families.memcpy.blev_queue import stream_queue
from warplab.families.memcpy.cuda import (
    _LAUNCHES,
    BLEV_BLOCKS_PER_SM,
    BLEV_THREADS,
    WARP_THREADS,
    DeviceBatch,
    _kernel_on,
    _queue_fits,
    _via_exprs,
    run_warp_classes,
    sms,
    windows_exprs,
)
from warplab.families.memcpy.spec import (
    WARP_TIERS_WORDS,
    WINDOWS,
    WINDOWS_MAX_COUNT,
    WINDOWS_MIN_COUNT,
    WarpClasses,
    WindowsShape,
    bytes_moved,
)

THREADS = 256   # memcpy_windows.cuh WINDOWS_THREADS
#: Whether the path's four kernels are launched to overlap the one before each
#: (``Prepared(overlap=True)``: programmatic dependent launch on sm_90 and later; each awaits
#: the previous kernel's end before its first memory access), which hides the launch gaps of
#: a batch the judging does not group (benchmarks/NOTES.md).
OVERLAP = True


class _WindowLaunches(NamedTuple):
    """The launches of one shape on one device: the count and group kernels, the copy's two
    kernels reading their arrays from the header, and the grids that do not depend on the
    batch."""

    count: Prepared  # type: ignore[assignment]  # a field named as tuple's method
    group: Prepared
    first: Prepared
    blev: Prepared
    count_grid: int
    group_grid: int
    blev_grid: int


def _launches(c: WarpClasses, w: WindowsShape, dev: int, overlap: bool) -> _WindowLaunches:
    key = ("windows", c, w, dev, overlap)
    got = _LAUNCHES.get(key)
    if got is None:
        u64 = np.uint64(0)
        k = functools.partial(_kernel_on, device_id=dev, loads=c.loads)
        via, blev = _via_exprs(c)
        count, group = windows_exprs(w)
        grouping = (ARRAY, ARRAY, ARRAY, u64, u64, u64, u64)
        n_sms = sms(dev)
        got = _LAUNCHES.put(key, _WindowLaunches(
            Prepared(k(count), None, (THREADS,), grouping, overlap=overlap),
            Prepared(k(group), None, (THREADS,), grouping, overlap=overlap),
            Prepared(k(via), None, (WARP_THREADS,), (u64,) * 6, overlap=overlap),
            Prepared(k(blev), None, (BLEV_THREADS,), (u64,) * 4, overlap=overlap),
            w.count_blocks * n_sms, w.group_blocks * n_sms, BLEV_BLOCKS_PER_SM * n_sms))
    return got


def run_windows(b: DeviceBatch, c: WarpClasses = WARP_TIERS_WORDS,
                w: WindowsShape = WINDOWS, overlap: bool = OVERLAP) -> None:
    """``run_warp_classes`` (thresholds ``c``) behind destination windows of shape ``w`` (see
    the module docstring): four launches (three when the host knows no buffer needs the BLEV
    kernel), 24 bytes a buffer of temporary memory from CuPy's pool; ``overlap``: each
    launched to overlap the one before it (:data:`OVERLAP`)."""
    n = b.count
    if n < WINDOWS_MIN_COUNT or n > WINDOWS_MAX_COUNT:
        run_warp_classes(b, c)
        return
    import cupy

    dev = cupy.cuda.runtime.getDevice()
    go = _launches(c, w, dev, overlap)
    stream, q = stream_queue(dev)
    grouped = cupy.empty(3 * n, dtype=np.uint64)
    with q.lock:
        hdr, tally = q.windows_at()
        judge_and_group(go, stream, q, b, w, hdr, tally, grouped.data.ptr)
        copy_via(go, stream, q, n, hdr, w.runs, b.largest is None or b.largest > c.wlev_max)
    del grouped  # it outlived the launches (CuPy's pool reuses it in stream order)


def judge_and_group(go: _WindowLaunches, stream: int, q: Any, b: DeviceBatch, w: WindowsShape,
                    hdr: int, tally: int, at: int) -> None:
    """The count and group kernels (``grouped`` arrays at ``at``); call it holding ``q.lock``."""
    n = b.count
    try:
        go.count.on_stream(stream, min(-(-n // THREADS), go.count_grid), b.src, b.dst, b.sizes,
                           n, hdr, tally, at)
        go.group.on_stream(stream, min(-(-n // (THREADS * w.per)), go.group_grid), b.src, b.dst,
                           b.sizes, n, hdr, tally, at)
    except BaseException:
        q.windows.fill(0)  # a count without its group would leave the tally set
        raise


def copy_via(go: _WindowLaunches, stream: int, q: Any, n: int, hdr: int, passes: int,
             blev: bool) -> None:
    """The copy's kernels through the header at ``hdr``, blocks of ``passes`` consecutive
    passes in the batch's order; the BLEV kernel (and the queue) only where ``blev``; call it
    holding ``q.lock``."""
    grid = -(-n // (passes * WARP_THREADS))
    if not blev:
        go.first.on_stream(stream, grid, hdr, n, 0, 0, 0, passes)
        return
    keep, first, ids = q.slots_for(n)
    go.first.on_stream(stream, grid, hdr, n, q.counter_at, ids, first, passes)
    try:
        go.blev.on_stream(stream, go.blev_grid, hdr, q.counter_at, ids, first)
    except BaseException:
        q.counter.fill(0)  # the launch that would have zeroed it did not happen
        raise
    del keep  # the slots outlived both launches


def shape_target(w: WindowsShape) -> Any:
    """A target of the explore scripts: ``run_windows`` at shape ``w``."""
    from types import SimpleNamespace

    name = ",".join(f"{k}={v}" for k, v in w._asdict().items() if v != getattr(WINDOWS, k))
    return SimpleNamespace(name=f"windows[{name or 'default'}]",
                           fn=lambda b: run_windows(b, WARP_TIERS_WORDS, w))


@register("memcpy_batched", "warp_tiers_windows", backend="cuda", bytes_moved=bytes_moved,
          supports=_queue_fits, rank=0)
def warp_tiers_windows(b: DeviceBatch) -> None:
    """``warp_tiers_words`` behind destination windows (``run_windows``): a batch of tiny
    buffers whose destinations are scattered over more than the L2 is first grouped by the
    window of the destination span each buffer writes to (64 windows), so the copy writes one
    window at a time and the partly written destination sectors meet in L2 instead of going
    to DRAM several times (on the H100, copied in index order, every 1-8 B cell with a
    shuffled destination stays within 3-10% of a ceiling that touches the sectors in the
    same order: benchmarks/NOTES.md). The judgement is made on the device from a sample of
    256 pairs of neighbouring buffers, so nothing is read back; batches it does not group are
    copied by ``warp_tiers_words`` through the header, two extra launches later.

    The default: on the H100's full grid of CUB's DeviceBatchMemcpy benchmark, in the same
    run as CUB and the scatter ceiling, every cell at >= 1.2x CUB (``warp_tiers_words``: 133
    of 140 in the same run), geometric mean 1.672x CUB, slowest cell 1.222x (S_C 1-8 B a1,
    nothing grouped), S_S 1-8 B 1.69x CUB (``warp_tiers_words``: 1.06-1.10x); the cells of
    buffers >= 1 KiB at 88.0-90.0% of the copy ceiling
    (``benchmarks/results/memcpy-full-h100-c949b5d.json.gz``).

    Performance: grouping costs about 56 bytes of descriptor traffic a buffer (a count pass
    over the destinations, a read and a write of the three arrays; about 400 us for 14.9 M
    buffers on the H100) and 24 bytes a buffer of temporary memory; a batch not grouped pays
    about 8 us for the two launches and 1-2% for the header's read (H100, benchmarks/NOTES.md).
    """
    run_windows(b)


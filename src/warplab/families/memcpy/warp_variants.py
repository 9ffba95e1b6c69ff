"""The registered variants of the ``warp_classes`` design (the warp kernel in
``memcpy_warp.cuh``, its launches in ``cuda.py``: ``run_warp_classes``): the thresholds and
per-size handling of each, from ``spec.py``. The default, ``warp_tiers_windows``, runs the
last of them behind destination windows (``windows.py``)."""
from __future__ import annotations

from warplab.core.registry import register
from warplab.families.memcpy.cuda import DeviceBatch, _queue_fits, run_warp_classes
from warplab.families.memcpy.spec import (
    WARP_CLASSES,
    WARP_CLASSES_STREAM,
    WARP_TIERS,
    WARP_TIERS_WORDS,
    bytes_moved,
)


@register("memcpy_batched", "warp_classes", backend="cuda", bytes_moved=bytes_moved,
          supports=_queue_fits, rank=1)
def warp_classes(b: DeviceBatch) -> None:
    """Size classes decided per warp of 32 buffers by ballots (no block-wide histogram,
    prefix sum or byte-stream decode): a lane per buffer up to 16 bytes (16-, 8- or 4-byte
    words where both addresses allow, else bytes), groups of 8 lanes per buffer up to 256
    bytes (16-byte stores, shifted 8-byte loads for mutually misaligned buffers), a warp per
    buffer up to 8 KiB, the BLEV queue and second kernel of ``size_classes_tuned`` (``cuda.py``).

    On the H100 1.31x ``size_classes_tuned`` (geometric mean over the 140 cells of CUB's
    DeviceBatchMemcpy benchmark grid, faster in 120) and >= 85% of the copy ceiling from 1 KiB
    buffers up (benchmarks/NOTES.md).

    Performance: two launches (one when the host knows no buffer exceeds 8 KiB:
    ``copy_batched``); all bytes once plus 24 bytes per buffer (read coalesced, 8 bytes a
    lane), plus 12 bytes per BLEV buffer through the queue, one atomic per warp holding any
    BLEV buffer.
    """
    run_warp_classes(b, WARP_CLASSES)


@register("memcpy_batched", "warp_classes_stream", backend="cuda", bytes_moved=bytes_moved,
          supports=_queue_fits, rank=4)
def warp_classes_stream(b: DeviceBatch) -> None:
    """``warp_classes`` with the thread-level buffers that have an address not 4-byte aligned
    copied as one byte stream per warp (their bytes back to back, lane l taking bytes l,
    l + 32, ...) instead of byte by byte by their own lane: a store instruction then writes
    neighbouring bytes of a few buffers, one or two 32-byte sectors per buffer, where the
    own-lane copy writes a sector per byte when destinations are scattered (the grid's 1-8 B
    cells with shuffled destinations).

    Performance: as ``warp_classes``, plus per warp with such buffers a scan of their sizes and
    one shared-memory byte per streamed byte. H100 (29 small cells): 1.9x ``warp_classes`` on
    1-8 B with a shuffled side, slower on aligned and 1-1024 B cells (benchmarks/NOTES.md).
    """
    run_warp_classes(b, WARP_CLASSES_STREAM)


@register("memcpy_batched", "warp_tiers", backend="cuda", bytes_moved=bytes_moved,
          supports=_queue_fits, rank=5)
def warp_tiers(b: DeviceBatch) -> None:
    """``warp_classes`` with each size range copied the way the H100 measures best for it
    (benchmarks/NOTES.md): thread-level buffers as the warp's byte stream, except those one
    aligned move copies (1, 2, 4, 8 or 16 bytes with both addresses so aligned: their own
    lane); groups of 8 lanes up to 256 bytes; a whole warp's group copy (every load before
    its stores, at most two 16-byte chunks a lane) up to 1 KiB; the warp loop up to 8 KiB;
    BLEV above.

    Performance: as ``warp_classes``, plus a scan and a shared-memory byte per streamed byte
    for warps with streamed buffers. H100 full grid: 114 of 140 cells at 1.2x CUB, geometric
    mean 1.585x; up to 0.63x ``warp_classes`` at alignment 4, which ``warp_tiers_words``
    fixes (benchmarks/NOTES.md).
    """
    run_warp_classes(b, WARP_TIERS)


@register("memcpy_batched", "warp_tiers_words", backend="cuda", bytes_moved=bytes_moved,
          supports=_queue_fits, rank=2)
def warp_tiers_words(b: DeviceBatch) -> None:
    """``warp_tiers`` with the thread-level buffers whose addresses are both 4-byte aligned
    copied by their own lane in 4-, 8- or 16-byte words (as ``warp_classes``), the others by
    one aligned move where one copies them, only the rest as the warp's byte stream
    (``warp_tiers`` streams the 4- and 8-byte buffers of align-4 batches byte by byte:
    0.63-0.89x ``warp_classes`` on 1-8 B and 1-64 B align-4 cells).

    The default's copy: ``warp_tiers_windows`` runs this kernel behind destination windows.
    On the H100's full grid of CUB's DeviceBatchMemcpy benchmark, in the same run as CUB
    (benchmarks/NOTES.md), in its plain form (registers not zeroed, plain descriptor loads,
    no words): 1.2x CUB in 119 of 140 cells (``warp_classes`` 113), geometric mean 1.60x CUB,
    slowest cell 0.94x (``warp_classes``: 0.51x), >= 85% of the copy ceiling from 1 KiB
    buffers up.

    Its descriptors are loaded evict-first (load policy 2, its own NVRTC module): with that,
    134 of 140 cells of the full grid at the speed target.

    It copies in 4-byte words in neighbouring lanes (``words`` 3): the groups of 8 lanes take
    buffers of 17-64 bytes as words of the destination, funnel-shifted from aligned source
    words, and where a warp's destinations are scattered its tiny buffers of two or more
    4-byte words go through a stream of the warp's words: 136 of 140 cells at the target,
    slowest 1.06x CUB. Against the scatter ceiling of 13 ways to touch (2-5% higher in the
    tiny cells with a scattered destination than the first six): 136 of 140, four 1-8 B
    cells left.

    Performance: as ``warp_tiers``: two launches (one when the host knows no buffer exceeds
    8 KiB); all bytes once plus 24 bytes per buffer.
    """
    run_warp_classes(b, WARP_TIERS_WORDS)

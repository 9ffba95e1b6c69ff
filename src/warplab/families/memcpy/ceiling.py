"""The scatter ceiling of a batched-copy cell (issue 13): how fast can any kernel touch the
memory that a correct copy of this batch must touch?

``scatter_touch`` (``ceiling.cu``, launched by ``ceiling_cuda.py``) reads every buffer's
descriptor (source address, destination address, size: the arrays the variants read) and,
for a positive size, touches each 32-byte sector holding an end of the buffer once on each
side: it loads the source's first byte and stores it at the destination's first byte, and
does the same with the last byte only where the last byte lies in another sector than the
first on either side (:func:`last_touched`). A buffer of up to 33 bytes spans at most two
sectors a side, so these one or two bytes reach every sector a correct copy must read and
write, in the same order of buffers, plus the same descriptors, with one request per sector
(round 1 loaded and stored both end bytes even within one sector: twice the requests of a
copy for most 1-8 B buffers, and it ran below CUB and the default there). Its GB/s, counted
with the cell's own bytes (``spec.bytes_moved``: 2 x data + 24 per buffer, as the variants'
records), bounds a copy of that batch from above only as far as the sector count decides the
time: a copy that fills a sector completely may be cheaper per sector than a touch that
writes one byte of it. So it is used as a ceiling only where no verified copy of the cell
ran faster (the validity guard, ``report.memcpy_target.valid_scatter``). For larger buffers
it touches a subset of the sectors and its GB/s runs far above the copy ceiling: the target
rule then takes the lower of the two.

It is measured, not derived: several launch shapes (:data:`SHAPE_NAMES`: a thread per buffer,
``bBLOCKxPER_THREAD``, or a warp's pieces in lane order, ``wBLOCK``), each timed like a
variant, and the cell's ceiling is the fastest shape's median.

The destination is not a copy: only the first byte of each buffer and, where in another
sector, its last byte are written (:func:`touch_check` checks exactly that, after a run into
a poisoned destination).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .cells import GUARD, POISON, address, guards_intact, sample_bytes

#: The ceiling's record: variant, provider and ``params.mode`` (never a copy variant's).
CEILING, PROVIDER, MODE = "scatter_touch", "ceiling", "ceiling"
#: (threads per block, buffers per thread) of the thread-per-buffer shapes (``ceiling.cu``).
SHAPES = ((256, 1), (256, 2), (512, 1), (512, 2))
#: Threads per block of the warp-cooperative shapes (a warp's pieces in lane order).
WARP_SHAPES = (256, 512)
SECTOR = 32
#: What the record says it wrote (``params.touched``).
TOUCHED = ("the first byte of every buffer and its last byte where that lies in another "
           "32-byte sector on the source or the destination side, from its source; every "
           "other byte is not written (not a copy)")


def shape_name(block: int, per_thread: int) -> str:
    """``"b256x2"``: 256 threads per block, two buffers per thread."""
    return f"b{block}x{per_thread}"


def warp_shape_name(block: int) -> str:
    """``"w256"``: the warp-cooperative shape at 256 threads per block."""
    return f"w{block}"


#: Every shape's name, in the order they are timed.
SHAPE_NAMES = (tuple(shape_name(b, p) for b, p in SHAPES)
               + tuple(warp_shape_name(b) for b in WARP_SHAPES))


def last_touched(src: np.ndarray, dst: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Per buffer (source and destination addresses, sizes): whether the touch writes its
    last byte too: a size of at least two whose last byte lies in another 32-byte sector than
    its first on the source or the destination side (``touch_pieces`` in ``ceiling.cu``)."""
    s, d, n = (np.asarray(a, dtype=np.int64) for a in (src, dst, sizes))
    last = np.maximum(n - 1, 0)
    apart = ((s // SECTOR) != ((s + last) // SECTOR)) | ((d // SECTOR) != ((d + last) // SECTOR))
    return (n > 1) & apart


@dataclass(frozen=True)
class ScatterCeiling:
    """A ceiling target of the planned grid (``grid.run_planned`` measures it with
    ``grid.measure_ceiling``): its name and a launch per shape (name -> ``launch(batch)``
    on a ``cuda.DeviceBatch``, enqueued on the current stream)."""

    name: str
    shapes: dict[str, Callable[[Any], None]]


def touch_check(xp: Any, cell: Any) -> str | None:
    """The check of one run into a destination poisoned with :data:`POISON`: in every
    sampled buffer of ``cell`` (a ``grid.GridCell``) the first byte and, where
    :func:`last_touched`, the last byte equal the source's and every other byte is still
    poisoned; no guard byte was written. None when right, else what is wrong."""
    def host(a: Any) -> np.ndarray:
        return a.get() if hasattr(a, "get") else np.asarray(a)

    at = xp.asarray(cell.pick)
    lens = host(cell.sizes[at]).astype(np.int64)
    s_off, d_off = host(cell.src_off[at]), host(cell.dst_off[at])
    s_idx, d_idx = sample_bytes(lens, s_off, d_off)
    two = last_touched(s_off + GUARD + address(cell.src), d_off + GUARD + address(cell.dst),
                       lens)
    starts = np.cumsum(lens) - lens
    full = lens > 0
    ends = np.unique(np.concatenate([starts[full], (starts + lens - 1)[two]]))
    inner = np.ones(s_idx.size, dtype=bool)
    inner[ends] = False
    got = cell.dst[xp.asarray(d_idx[ends])]
    bad = int(xp.count_nonzero(got != cell.src[xp.asarray(s_idx[ends])]))
    if bad:
        return f"{bad} touched bytes of the sampled buffers differ from their source"
    written = int(xp.count_nonzero(cell.dst[xp.asarray(d_idx[inner])] != POISON))
    if written:
        return f"{written} untouched bytes of the sampled buffers were written"
    if not guards_intact(xp, cell.dst, cell.data):
        return "a guard byte outside the destination region was written"
    return None


__all__ = ["CEILING", "MODE", "PROVIDER", "SECTOR", "SHAPES", "SHAPE_NAMES", "ScatterCeiling",
           "TOUCHED", "WARP_SHAPES", "last_touched", "shape_name", "touch_check",
           "warp_shape_name"]

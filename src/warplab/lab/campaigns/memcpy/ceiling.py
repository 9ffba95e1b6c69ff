"""The scatter ceiling of a batched-copy cell (what the speed target is judged against): how
fast can any kernel touch the memory that a correct copy of this batch must touch?

``scatter_touch`` (``ceiling.cu``, launched by ``ceiling_cuda.py``) reads every buffer's
descriptor (source address, destination address, size: the arrays the variants read) and,
for a positive size, touches each 32-byte sector holding an end of the buffer once on each
side: it loads the source's first byte and stores it at the destination's first byte, and
does the same with the last byte only where the last byte lies in another sector than the
first on either side (:func:`last_touched`). A buffer of up to 33 bytes spans at most two
sectors a side, so these one or two bytes reach every sector a correct copy must read and
write, in the same order of buffers, plus the same descriptors, with one request per sector
(a touch that loads and stores both end bytes even within one sector makes twice the
requests of a copy for most 1-8 B buffers, and on the H100 runs below CUB and the default
there: benchmarks/NOTES.md). Its GB/s, counted with the cell's own bytes
(``spec.bytes_moved``: 2 x data + 24 per buffer, as the variants' records), bounds a copy of
that batch from above only as far as the sector count decides the time: a copy that fills a
sector completely may be cheaper per sector than a touch that writes one byte of it. So it
is used as a ceiling only where no verified copy of the cell ran faster (the validity guard,
``report.memcpy_target.valid_scatter``). For larger buffers it touches a subset of the
sectors and its GB/s runs far above the copy ceiling: the target rule then takes the lower
of the two.

It is measured, not derived: several ways to touch (:data:`TOUCHES`: a thread per buffer,
``bBLOCKxPER_THREAD``, or a warp's pieces in lane order, ``wBLOCK``; a resident grid or a
block per chunk; a load policy), each timed like a variant, and the cell's ceiling is the
fastest one's median. It bounds a copy only as well as the fastest touch found: on the H100
the later ways of :data:`TOUCHES` are 1-5% faster than the first six in the tiny cells with a
shuffled destination (benchmarks/NOTES.md).

The destination is not a copy: only the first byte of each buffer and, where in another
sector, its last byte are written (:func:`touch_check` checks exactly that, after a run into
a poisoned destination).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from warplab.lab.campaigns.memcpy.cells import GUARD, POISON, address, guards_intact, sample_bytes

#: The ceiling's record: variant, provider and ``params.mode`` (never a copy variant's).
CEILING, PROVIDER, MODE = "scatter_touch", "ceiling", "ceiling"
SECTOR = 32
#: What the record says it wrote (``params.touched``).
TOUCHED = ("the first byte of every buffer and its last byte where that lies in another "
           "32-byte sector on the source or the destination side, from its source; every "
           "other byte is not written (not a copy)")


class Touch(NamedTuple):
    """One way to touch a batch (``ceiling.cu``): ``block`` threads per block; a thread per
    ``per_thread`` buffers, or (``warp``) a warp's pieces in lane order, a buffer per thread;
    ``grid``: the grid strides with this fraction of the blocks that fit the SMs at once, or
    (0) a block per chunk, as the copies launch; ``loads``: the load policy
    (``memcpy_copy.cuh``), None for the default copy's."""

    block: int
    per_thread: int = 1
    warp: bool = False
    grid: float = 1.0
    loads: int | None = None

    @property
    def name(self) -> str:
        """``b256x2`` (256 threads, two buffers a thread) or ``w256`` (the warp kernel), then
        ``g`` for a block per chunk (``r0.5`` for half the resident grid) and ``,l8`` for a
        load policy of its own."""
        shape = f"w{self.block}" if self.warp else f"b{self.block}x{self.per_thread}"
        grid = "" if self.grid == 1 else "g" if self.grid == 0 else f"r{self.grid:g}"
        return shape + grid + ("" if self.loads is None else f",l{self.loads}")


#: The ceiling's ways to touch, each timed; the fastest is the record's. A ceiling is the
#: fastest touch found, whatever load policy the default copy uses. The first six: resident
#: grids, the default copy's policy 2. On the H100 (benchmarks/NOTES.md) a block per chunk, as
#: the copies launch, is 1-2% faster in the tiny cells with a shuffled destination (up to 10%
#: where both sides are consecutive), and the warp kernel so 1-3% faster again at policy 10
#: (evict-first descriptors, and touches evict-first where the warp's destinations are
#: scattered); 8 and 130 touch as the sweep's copies of those policies load.
TOUCHES = (Touch(256), Touch(256, 2), Touch(512), Touch(512, 2),
           Touch(256, warp=True), Touch(512, warp=True),
           Touch(256, grid=0), Touch(512, grid=0),
           Touch(256, warp=True, grid=0), Touch(512, warp=True, grid=0),
           Touch(256, warp=True, grid=0, loads=8), Touch(256, warp=True, grid=0, loads=10),
           Touch(256, warp=True, grid=0, loads=130))
#: Every way's name, in the order they are timed.
SHAPE_NAMES = tuple(t.name for t in TOUCHES)


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


__all__ = ["CEILING", "MODE", "PROVIDER", "SECTOR", "SHAPE_NAMES", "ScatterCeiling", "TOUCHED",
           "TOUCHES", "Touch", "last_touched", "touch_check"]

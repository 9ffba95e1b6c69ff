"""The scatter ceiling of a batched-copy cell (issue 13): how fast can any kernel touch the
memory that a correct copy of this batch must touch?

``scatter_touch`` (``ceiling.cu``, launched by ``ceiling_cuda.py``) reads every buffer's
descriptor (source address, destination address, size: the arrays the variants read) and,
for a positive size, loads the source's first and last byte and stores them at the
destination's first and last byte. A buffer of up to 33 bytes spans at most two 32-byte
sectors on each side, and these two bytes reach all of them: the sectors a correct copy must
read and write, in the same order of buffers, plus the same descriptors. So its GB/s, counted
with the cell's own bytes (``spec.bytes_moved``: 2 x data + 24 per buffer, as the variants'
records), is a ceiling for a copy of that batch. For larger buffers it touches a subset of
the sectors and its GB/s runs far above the copy ceiling: the target rule then takes the
lower of the two (``report.memcpy_target``).

It is measured, not derived: several launch shapes (:data:`SHAPES`), each timed like a
variant, and the cell's ceiling is the fastest shape's median. A kernel that visits the
buffers in another order (say, sorted by destination) might touch the same sectors faster;
this one does not try.

The destination is not a copy: only the two end bytes of each buffer are written
(:func:`touch_check` checks exactly that, after a run into a poisoned destination).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .cells import POISON, guards_intact, sample_bytes

#: The ceiling's record: variant, provider and ``params.mode`` (never a copy variant's).
CEILING, PROVIDER, MODE = "scatter_touch", "ceiling", "ceiling"
#: (threads per block, buffers per thread) of the compiled shapes (``ceiling.cu``).
SHAPES = ((256, 1), (256, 2), (256, 4), (512, 1), (512, 2), (512, 4))
#: What the record says it wrote (``params.touched``).
TOUCHED = ("the first and last byte of every buffer, from its source; the bytes between are "
           "not written (not a copy)")


def shape_name(block: int, per_thread: int) -> str:
    """``"b256x2"``: 256 threads per block, two buffers per thread."""
    return f"b{block}x{per_thread}"


@dataclass(frozen=True)
class ScatterCeiling:
    """A ceiling target of the planned grid (``grid.run_planned`` measures it with
    ``grid.measure_ceiling``): its name and a launch per shape (name -> ``launch(batch)``
    on a ``cuda.DeviceBatch``, enqueued on the current stream)."""

    name: str
    shapes: dict[str, Callable[[Any], None]]


def touch_check(xp: Any, cell: Any) -> str | None:
    """The check of one run into a destination poisoned with :data:`POISON`: in every
    sampled buffer of ``cell`` (a ``grid.GridCell``) the first and last byte equal the
    source's and the bytes between are still poisoned; no guard byte was written. None when
    right, else what is wrong."""
    def host(a: Any) -> np.ndarray:
        return a.get() if hasattr(a, "get") else np.asarray(a)

    at = xp.asarray(cell.pick)
    lens = host(cell.sizes[at]).astype(np.int64)
    s_idx, d_idx = sample_bytes(lens, host(cell.src_off[at]), host(cell.dst_off[at]))
    starts = np.cumsum(lens) - lens
    full = lens > 0
    ends = np.unique(np.concatenate([starts[full], (starts + lens - 1)[full]]))
    inner = np.ones(s_idx.size, dtype=bool)
    inner[ends] = False
    got = cell.dst[xp.asarray(d_idx[ends])]
    bad = int(xp.count_nonzero(got != cell.src[xp.asarray(s_idx[ends])]))
    if bad:
        return f"{bad} end bytes of the sampled buffers differ from their source"
    written = int(xp.count_nonzero(cell.dst[xp.asarray(d_idx[inner])] != POISON))
    if written:
        return f"{written} bytes between the ends of the sampled buffers were written"
    if not guards_intact(xp, cell.dst, cell.data):
        return "a guard byte outside the destination region was written"
    return None


__all__ = ["CEILING", "MODE", "PROVIDER", "SHAPES", "ScatterCeiling", "TOUCHED",
           "shape_name", "touch_check"]

"""Small device results carved from one allocation: :class:`Slab` and :func:`small`.

A short path's result array costs more host time to allocate than its kernel takes to run:
``cupy.empty(64, float32)`` was 4.6 us on the session-12 H100 host, of which the array object
itself (``cupy.ndarray(shape, dtype, memptr)``) is 1.8 us and CuPy's pool the rest
(``benchmarks/NOTES.md``, session 13). A slab is one allocation that many small results are
carved from: one pool call per slab instead of one per result.

A carve is never reused. Each array holds a memory pointer into its slab's allocation (as
any CuPy view holds its base's), so the allocation goes back to CuPy's pool when the last
array carved from it is gone; a result kept alive keeps its whole slab (at most
:data:`SMALL_SLAB` bytes) alive. Slabs are per device and stream (:func:`small`), because
CuPy's pool hands freed memory to later allocations of the stream it was allocated on, and
only that stream's order then protects a kernel still writing a result.
"""
from __future__ import annotations

import math
import sys
import threading
from typing import Any

from . import fastpath
from .scalar import scalar_type

#: Results of at most this many bytes are carved (:func:`small`) ...
SMALL = 1024
#: ... from slabs of this size, at offsets aligned as CuPy aligns its allocations.
SMALL_SLAB = 64 * 1024
SMALL_ALIGN = 256


class Slab:
    """Arrays carved from one device allocation of ``size`` bytes at ``align``-byte offsets
    (a new allocation when the current one is full). Thread-safe: a lock per slab."""

    __slots__ = ("size", "align", "_mem", "_next", "_lock")

    def __init__(self, size: int, align: int) -> None:
        self.size, self.align = size, align
        self._mem: Any = None
        self._next = size
        self._lock = threading.Lock()

    def take(self, cls: type, shape: Any, dtype: Any, nbytes: int) -> Any:
        """A new C-contiguous array of type ``cls`` (``cupy.ndarray`` or a subclass) with
        ``shape`` and ``dtype``, ``0 < nbytes <= size`` bytes long, on the current device."""
        step = -(-nbytes // self.align) * self.align
        lock = self._lock
        lock.acquire()  # acquire/release rather than a with-block (NOTES, session 13)
        try:
            off = self._next
            if off + step > self.size:
                self._mem, off = sys.modules["cupy"].cuda.alloc(self.size), 0
            self._next = off + step
            mem = self._mem
        finally:
            lock.release()
        return cls(shape, dtype, mem + off)


#: (device id, stream key) -> that stream's :class:`Slab` of small results
_SLABS = fastpath.PlanCache("results.slab")


def small(shape: Any, dtype: Any) -> Any:
    """``cupy.empty(shape, dtype)`` on the current device and stream when it is at most
    :data:`SMALL` bytes (a 0-d one a ``DeviceScalar``, ``core/scalar.py``), carved from that
    stream's slab; None for larger or empty arrays (the caller allocates them from the pool).

    Performance: one key of (device, stream), one dict lookup, the array object."""
    nbytes = (shape if type(shape) is int else math.prod(shape)) * dtype.itemsize
    if not 0 < nbytes <= SMALL:
        return None
    cupy = sys.modules["cupy"]
    _, skey = fastpath.current_stream()
    key = (cupy.cuda.runtime.getDevice(), skey)
    slab = _SLABS.get(key)
    if slab is None:
        slab = _SLABS.put(key, Slab(SMALL_SLAB, SMALL_ALIGN))
    return slab.take(scalar_type() if shape == () else cupy.ndarray, shape, dtype, nbytes)

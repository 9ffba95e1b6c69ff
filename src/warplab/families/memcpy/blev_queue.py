"""The BLEV queue of one (device, stream): the counter and slots through which a size-class
design's first kernel hands its large buffers to the BLEV kernel (``cuda.py``), and the
destination windows' state (``windows.py``), kept per stream in the ``memcpy.queue`` plan cache.
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from warplab.core import fastpath
from warplab.families.memcpy.spec import WINDOWS_STATE_WORDS

#: Batches of at most this many buffers keep their BLEV queue's slots in the stream's
#: workspace (:class:`_Queue`, grown on demand to at most 12 bytes per buffer: 768 KiB);
#: larger ones take slots from CuPy's pool per call.
KEEP_SLOTS = 1 << 16


class _Queue:
    """The BLEV queue of one (device, stream): the counter (queued buffers and their chunks,
    then the BLEV kernel's finished blocks), zeroed here once and again by the last block of
    every BLEV launch, so no call clears it; and slots (first chunks, then 32-bit ids) kept
    for up to ``capacity`` buffers. ``lock`` keeps a call's two launches next to each other on
    the stream: host threads sharing a stream would otherwise interleave them, and one BLEV
    launch would take another call's queue."""

    __slots__ = ("capacity", "counter", "counter_at", "lock", "slots", "windows")

    def __init__(self) -> None:
        import cupy

        self.counter = cupy.zeros(2, dtype=np.uint64)
        self.counter_at = self.counter.data.ptr
        self.capacity = 0
        self.slots: Any = None
        self.lock = threading.Lock()
        #: destination windows (``memcpy_windows.cuh``, ``windows.py``): the header (5 words)
        #: then the tally (32-bit counters, zero between calls), made on the first such call
        self.windows: Any = None

    def windows_at(self) -> tuple[int, int]:
        """(the header's and the tally's addresses); call it holding ``lock``."""
        import cupy

        if self.windows is None:
            self.windows = cupy.zeros(WINDOWS_STATE_WORDS, dtype=np.uint64)
        at = self.windows.data.ptr
        return at, at + 8 * 5

    def slots_for(self, count: int) -> tuple[Any, int, int]:
        """(the array to keep until the launches are queued, the first chunks' address, the
        ids' address) for ``count`` buffers; call it holding ``lock``."""
        import cupy

        if count <= self.capacity:
            slots, cap = self.slots, self.capacity
        else:
            cap = min(KEEP_SLOTS, max(count, 2 * self.capacity)) if count <= KEEP_SLOTS else count
            slots = cupy.empty(cap + -(-cap // 2), dtype=np.uint64)
            if count <= KEEP_SLOTS:
                self.slots, self.capacity = slots, cap
        base = slots.data.ptr
        return slots, base, base + 8 * cap


_QUEUES = fastpath.PlanCache("memcpy.queue")


def stream_queue(dev: int) -> tuple[int, _Queue]:
    """(the current stream's handle, its :class:`_Queue` on device ``dev``)."""
    stream, skey = fastpath.current_stream()
    q = _QUEUES.get((dev, skey))
    if q is None:
        q = _QUEUES.put((dev, skey), _Queue())
    return stream, q

"""The plan caches of the one planned path every public call takes (key -> plan -> run), and
of the launch records and kernels those plans use: how they are keyed, cleared and bypassed;
and the small-result read.

A public call normalises its input, forms a key (shape, dtype, layout, device, stream and the
options as given: a call with ``variant=`` or ``device=`` is another key, not another path),
looks the key's plan up and runs it. On a miss the plan is built: every check and decision
that depends on the key alone (backend, variant, launch shape, workspace, prepared launch;
checks of values run on every call); a build that raises stores nothing, so errors and their
messages are those of every call. Inputs a key cannot describe (``byte_histogram``'s files and
sequences, options of types a key does not hold) are planned per call, nothing stored.

:class:`PlanCache` is one such ``key -> plan`` map, bounded and thread-safe; its ``get`` is the
map's own ``dict.get`` (one C call on a warm path). The caches (:func:`stats` lists them with
their sizes; docs/latency.md lists their keys):

* the families' plans: ``reduce.plan`` (every reduction and ``series_stats`` call),
  ``histogram.bytes`` (``byte_histogram``), ``histogram.plans`` (``histogram``),
  ``bincount.plans`` (``bincount``), ``memcpy.plan`` (``copy_batched``, ``memcpy_batched``,
  ``concatenate``, ``split``), ``corr.plan`` (``corrcoef``), ``matmul.plan`` (``matmul``);
* what the plans launch with: ``reduce.persistent_vec`` (kernel, persistent grid, per-stream
  scratch, result slab per reduction spec, device, stream), ``histogram.launch`` (kernel, the
  mapping's device table, persistent grid), ``memcpy.launches`` (a size-class design's two
  prepared launches), ``memcpy.queue`` (a stream's BLEV queue), ``gram.smem`` (Gram kernels
  whose shared-memory opt-in is set);
* ``kernels`` (``loader.get_kernel``): the launchable kernel per (source file, template
  expression, ``-D`` options, the module's expressions, device id), a dict lookup instead of
  CuPy's ``RawModule.get_function``; ``defines``: the ``-D`` options per constants dict;
* ``pinned`` (:func:`read_small`): a page-locked host buffer per device;
* ``scalar.reader`` (``core/scalar.py``): the C read and copy of ``DeviceScalar`` and
  ``DeviceArray`` results, looked up once; ``scalar.slabs``: the slab of small results per
  device and stream; ``memcpy.table``: ``copy_batched``'s table launch as its C reader makes it, per
  device.

Keys never hold data values. Every plan a device decides has the device id in its key, so
after ``cupy.cuda.Device(1).use()`` a call builds its own; plans of per-stream scratch have the
stream in their key (:func:`stream_key`; :func:`current_stream` gives the handle with it). The
one environment override dispatch reads, ``WARPLAB_DEVICE``, decides the backend of host input
only: it is in the keys of the host-input plans that read it, and no plan of device input
depends on it.

:func:`read_small` copies small results (a 0-d result, a few partials, validity words) to the
host through the device's pinned buffer: one asynchronous copy per array and one
synchronisation, instead of a pageable copy and a synchronisation per array.

Thread safety: a lookup is one ``dict.get`` (atomic in CPython); a miss builds the plan
outside any lock and publishes it with ``setdefault`` under :data:`LOCK`, so two threads that
miss together use the one plan published first. Plans hold no per-call state except the
result slabs and the pinned buffers, which take their own locks.

Tests and experiments::

    warplab.core.fastpath.clear()           # forget every plan; the next calls rebuild them
    with warplab.core.fastpath.bypassed():  # plans built per call, none stored or used
        ...

``WARPLAB_FASTPATH=0`` in the environment (read once, at import) bypasses them for the
process. Compiled modules stay cached either way (``loader``'s NVRTC cache is not a plan).
"""
from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

#: Plans are published under this lock (lookups take none).
LOCK = threading.Lock()

_CACHES: list[PlanCache] = []
_STATE = {"enabled": os.environ.get("WARPLAB_FASTPATH", "1").strip() not in ("0", "off", "no")}


class PlanCache:
    """A bounded, thread-safe ``key -> plan`` map, emptied by :func:`clear`.

    Args:
        name: what the plans are of (the key of :func:`stats`).
        maxsize: entries kept; when full the map is emptied and refills (plans are cheap to
            rebuild and a program's working set is small).
    """

    def __init__(self, name: str, maxsize: int = 1024) -> None:
        self.name = name
        self.maxsize = maxsize
        self._plans: dict[Hashable, Any] = {}
        #: ``get(key)``: the plan of ``key``, None when never built (or while bypassed): the
        #: map's own ``get`` (one C call on a warm path), replaced while bypassed.
        self.get: Callable[[Hashable], Any] = self._plans.get
        with LOCK:
            _CACHES.append(self)
            if not _STATE["enabled"]:
                self.get = _none

    def put(self, key: Hashable, plan: Any) -> Any:
        """Publish ``plan`` unless another thread published one first; returns the plan to
        use (while bypassed: ``plan``, not stored)."""
        if not _STATE["enabled"]:
            return plan
        with LOCK:
            if len(self._plans) >= self.maxsize:
                self._plans.clear()
            return self._plans.setdefault(key, plan)

    def __len__(self) -> int:
        return len(self._plans)

    def clear(self) -> None:
        with LOCK:
            self._plans.clear()


def clear() -> None:
    """Forget every plan (results never change; the next call of each kind rebuilds)."""
    with LOCK:
        caches = list(_CACHES)
    for cache in caches:
        cache.clear()


def enabled() -> bool:
    """False inside :func:`bypassed` (and with ``WARPLAB_FASTPATH=0``)."""
    return _STATE["enabled"]


@contextmanager
def bypassed() -> Iterator[None]:
    """Run the block with every plan cache ignored: plans built per call, none stored.
    Process-wide: for tests and comparisons, not while other threads rely on the caches."""
    before = _STATE["enabled"]
    _set_enabled(False)
    try:
        yield
    finally:
        _set_enabled(before)


def _none(key: Hashable) -> None:
    return None


def _set_enabled(on: bool) -> None:
    with LOCK:
        _STATE["enabled"] = on
        for cache in _CACHES:
            cache.get = cache._plans.get if on else _none


def stats() -> dict[str, int]:
    """Entries per cache, by name."""
    return {c.name: len(c) for c in _CACHES}


class _Pinned:
    """A page-locked host buffer of one device, grown on demand, used under its own lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.host: np.ndarray | None = None

    def buffer(self, nbytes: int) -> np.ndarray:
        import cupy

        if self.host is None or self.host.nbytes < nbytes:
            size = max(256, 1 << (nbytes - 1).bit_length())
            self.host = np.frombuffer(cupy.cuda.alloc_pinned_memory(size), np.uint8, size)
        return self.host


_PINNED = PlanCache("pinned", maxsize=64)
_PER_THREAD_STREAM = 2  # cudaStreamPerThread: the same handle in every host thread


def stream_key() -> Hashable:
    """The current CUDA stream as a cache key for per-stream scratch (ticket counters,
    partials): its handle, plus the host thread where the handle is the per-thread default
    stream (``CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1``), which names a different stream in
    every thread."""
    return current_stream()[1]


def current_stream() -> tuple[int, Hashable]:
    """The current CUDA stream's handle and :func:`stream_key` (one lookup for both)."""
    ptr = sys.modules["cupy"].cuda.get_current_stream().ptr
    return ptr, ((ptr, threading.get_ident()) if ptr == _PER_THREAD_STREAM else ptr)



def read_small(*arrays: Any) -> list[np.ndarray]:
    """Host copies of small device arrays (a 0-d result, a few partials) through this
    device's pinned buffer: one asynchronous copy per array on the current stream, then one
    synchronisation of that stream. NumPy arrays of the arrays' shapes and dtypes (copies:
    the buffer is reused). Thread-safe: one lock per device's buffer."""
    import cupy

    dev = cupy.cuda.runtime.getDevice()
    pinned = _PINNED.get(dev)
    if pinned is None:
        pinned = _PINNED.put(dev, _Pinned())
    stream = cupy.cuda.get_current_stream()
    offsets, total = [], 0
    for a in arrays:
        offsets.append(total)
        total += -(-a.nbytes // 16) * 16
    with pinned.lock:
        host = pinned.buffer(total)
        for a, off in zip(arrays, offsets):
            if a.nbytes:
                src = a if a.flags.c_contiguous else cupy.ascontiguousarray(a)
                src.data.copy_to_host_async(host[off:].ctypes.data, a.nbytes, stream)
        stream.synchronize()
        return [host[off:off + a.nbytes].view(a.dtype).reshape(a.shape).copy()
                for a, off in zip(arrays, offsets)]

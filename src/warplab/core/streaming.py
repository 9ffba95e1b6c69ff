"""Streaming host data through a family's kernel: one implementation every family uses.

:func:`stream` cuts a source (a host NumPy array, a path, an open binary file, a list of
paths: ``core/sources.py``) into chunks (``core/staging.py`` plans their size), hands each
chunk to the family's ``chunk_fn(chunk, start)`` and returns ``combine(partials)`` of what
those calls returned, in chunk order. Any error (a read, a chunk function) propagates and
``combine`` is never called: no partial result is ever returned as complete. Every staging
buffer goes back to its pool on every path.

cuda backend: a ring of ``RING`` pinned host buffers and ``RING`` device buffers. Worker
threads fill host buffer ``i % RING`` with chunk ``i`` (``np.copyto`` of slices, or ``preadv``
from files; both release the GIL) up to ``RING`` chunks ahead; one non-blocking stream copies
each filled buffer to the device while ``chunk_fn`` enqueues the kernels of the previous
chunks on the caller's current stream. Events order the reuse: a fill waits for the copy out
of its buffer, a copy for the kernels that read its device buffer. Host arrays can instead be
copied from directly (``host="register"``: ``cudaHostRegister`` of the user's array for the
call; already pinned arrays always are).

cpu backend: the same chunks run ``chunk_fn`` in the worker threads (threads over chunks;
contiguous arrays as zero-copy slices, files read into plain pooled buffers), so the chunking
logic is exercised without a GPU and the NumPy backend gets the threads for free.

:func:`observe` shows progress (bytes done, total) to a callback; :func:`collect` gathers the
phases (read, H2D, kernel) per chunk for the stream campaign.
"""
from __future__ import annotations

import contextlib
import os
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, wait
from contextvars import ContextVar
from typing import Any

import numpy as np

from warplab.core.errors import InvalidValueError
from warplab.core.sources import ArraySource, FileSource, open_source, split
from warplab.core.staging import (
    chunk_bounds,
    executor,
    is_pinned,
    plan_chunk,
    staging_pool,
    stream_min_bytes,
    threads,
)

RING = 4
#: Smallest piece of a chunk one worker fills (smaller chunks take fewer workers).
PIECE = 1 << 20
H2D = 1  # cudaMemcpyHostToDevice
HOST_MODES = ("auto", "stage", "register")
_OBSERVER: ContextVar[Callable[[int, int], None] | None] = ContextVar("warplab_stream_observer",
                                                                     default=None)
_STATS: ContextVar[list[dict] | None] = ContextVar("warplab_stream_stats", default=None)


@contextlib.contextmanager
def observe(callback: Callable[[int, int], None]) -> Iterator[None]:
    """Inside the block every stream calls ``callback(bytes_done, bytes_total)`` after each
    chunk (from the calling thread)."""
    token = _OBSERVER.set(callback)
    try:
        yield
    finally:
        _OBSERVER.reset(token)


@contextlib.contextmanager
def collect() -> Iterator[list[dict]]:
    """Inside the block every stream appends a dict of its phases: ``bytes``, ``chunks``,
    ``chunk_bytes``, ``host`` (how host data reached the bus), ``threads``, ``wall_s`` (end to
    end), and the per-chunk sums ``read_s`` (filling the staging buffers, wall time per
    chunk), ``h2d_s`` and ``kernel_s`` (CUDA events; cuda backend only)."""
    rec: list[dict] = []
    token = _STATS.set(rec)
    try:
        yield rec
    finally:
        _STATS.reset(token)


def worth_streaming(nbytes: int) -> bool:
    """True when a host input of ``nbytes`` is large enough to stream on the cuda backend."""
    return nbytes >= stream_min_bytes()


def stream(data: Any, chunk_fn: Callable[[Any, int], Any], combine: Callable[[list], Any], *,
           backend: str, unit: int = 1, chunk_bytes: int | None = None, host: str = "auto",
           direct: bool = False) -> Any:
    """Run ``chunk_fn`` over the chunks of ``data`` and return ``combine(partials)``.

    Args:
        data: a host NumPy array (any layout: see ``sources.ArraySource``), a path, an open
            binary file object, a list of paths, or a source from ``core/sources.py``. Files
            are bytes (uint8).
        chunk_fn: ``chunk_fn(chunk, start)``: ``chunk`` is a 1-D array of the source's dtype
            (a CuPy array on cuda, valid until the kernels the call enqueues on the current
            stream have run; a NumPy array on cpu, valid during the call; never keep it),
            ``start`` its first element's index. Returns the chunk's partial result.
        combine: turns the list of partials (chunk order) into the result.
        backend: ``"cuda"`` or ``"cpu"``.
        unit: chunk boundaries fall on multiples of ``unit`` elements (e.g. a row).
        chunk_bytes: the chunk size (default: planned from the measured rates;
            ``WARPLAB_STREAM_CHUNK``).
        host: cuda, host arrays: ``"stage"`` (threads copy into pinned buffers), ``"register"``
            (page-lock the array in place for the call, copy from it directly) or ``"auto"``
            (``WARPLAB_STREAM_HOST`` if set, else stage: measured faster, see
            docs/streaming.md); arrays already pinned are copied from directly in every mode.
        direct: files: read through ``O_DIRECT`` too (see ``sources.FileSource``;
            ``WARPLAB_STREAM_DIRECT=1`` turns it on for every stream).

    Performance:
        cuda: host bytes cross the bus once, overlapped with the staging and the kernels;
        one host synchronisation at the end (the copy stream), none per chunk.
    """
    if host == "auto":
        host = os.environ.get("WARPLAB_STREAM_HOST", "").strip() or "auto"
    if host not in HOST_MODES:
        raise InvalidValueError(f"host must be one of {', '.join(HOST_MODES)}, not {host!r}")
    own = not isinstance(data, (ArraySource, FileSource))
    src = open_source(data, direct) if own else data
    try:
        unit = int(np.lcm(int(unit), src.unit))
        itemsize = src.dtype.itemsize
        chunk = plan_chunk(src.size * itemsize, unit * itemsize, backend,
                           override=chunk_bytes) // itemsize
        bounds = chunk_bounds(src.size, chunk)
        t0 = time.perf_counter()
        stats: dict[str, Any] = {"bytes": src.size * itemsize, "chunks": len(bounds),
                                 "chunk_bytes": chunk * itemsize, "threads": threads(),
                                 "read_s": 0.0, "h2d_s": 0.0, "kernel_s": 0.0}
        if backend == "cuda":
            partials = _run_cuda(src, bounds, unit, chunk_fn, host, stats)
        else:
            stats["host"] = "view" if src.view(0, 0) is not None else "stage"
            partials = _run_cpu(src, bounds, chunk_fn, stats)
        if isinstance(src, FileSource):
            src.finish()
        stats["wall_s"] = time.perf_counter() - t0
        rec = _STATS.get()
        if rec is not None:
            rec.append(stats)
    finally:
        if own:
            src.close()
    return combine(partials)


def _progress(done: int, total: int) -> None:
    cb = _OBSERVER.get()
    if cb is not None:
        cb(done, total)


def _drain(futures: Any) -> None:
    """After an error: cancel what has not started, wait for what has (so that no worker
    still writes a buffer about to go back to the pool)."""
    futures = list(futures)
    for f in futures:
        f.cancel()
    wait(futures)


def _run_cpu(src: Any, bounds: list[tuple[int, int]], chunk_fn: Callable[[Any, int], Any],
             stats: dict) -> list:
    """Threads over chunks: at most twice the worker count in flight."""
    pool = staging_pool("cpu")
    itemsize, total = src.dtype.itemsize, src.size * src.dtype.itemsize

    def task(a: int, b: int) -> tuple[Any, float]:
        view = src.view(a, b)
        if view is not None:
            return chunk_fn(view, a), 0.0
        buf = pool.acquire((b - a) * itemsize)
        try:
            dst = buf[:(b - a) * itemsize].view(src.dtype)
            t0 = time.perf_counter()
            src.fill(dst, a)
            read = time.perf_counter() - t0
            return chunk_fn(dst, a), read
        finally:
            pool.release(buf)

    partials: list = []
    pending: deque[tuple[Future, int]] = deque()
    todo = iter(bounds)
    done = 0

    def submit(a: int, b: int) -> None:
        pending.append((executor().submit(task, a, b), (b - a) * itemsize))

    try:
        for a, b in todo:
            submit(a, b)
            if len(pending) >= 2 * threads():
                break
        while pending:
            fut, nbytes = pending.popleft()
            part, read = fut.result()
            partials.append(part)
            stats["read_s"] += read
            done += nbytes
            _progress(done, total)
            nxt = next(todo, None)
            if nxt is not None:
                submit(*nxt)
    except BaseException:
        _drain(f for f, _ in pending)
        raise
    return partials


def _fill_part(src: Any, dst: np.ndarray, lo: int, free: Any) -> tuple[float, float]:
    """One worker's piece of a chunk: wait until the buffer's last copy is done, fill it."""
    if free is not None:
        free.synchronize()
    t0 = time.perf_counter()
    src.fill(dst, lo)
    return t0, time.perf_counter()


def _register(src: Any, host: str) -> tuple[bool, str]:
    """(copy straight from the user's array, how host data reaches the bus). ``register``
    page-locks a contiguous array for the call (read-only memory with the read-only flag);
    where that fails the chunks are staged."""
    if not isinstance(src, ArraySource) or not src.contiguous:
        return False, "stage"
    if is_pinned(src.address):
        return True, "pinned"
    if host != "register" or src.size == 0:
        return False, "stage"
    import cupy

    nbytes = src.size * src.dtype.itemsize
    for flags in (0, 8):  # cudaHostRegisterDefault, cudaHostRegisterReadOnly
        try:
            cupy.cuda.runtime.hostRegister(src.address, nbytes, flags)
            return True, "register"
        except cupy.cuda.runtime.CUDARuntimeError:
            continue
    return False, "stage"


def _run_cuda(src: Any, bounds: list[tuple[int, int]], unit: int,
              chunk_fn: Callable[[Any, int], Any], host: str, stats: dict) -> list:
    """The pinned ring (see the module docstring)."""
    import cupy

    if not bounds:
        stats["host"] = "none"
        return []
    itemsize, total = src.dtype.itemsize, src.size * src.dtype.itemsize
    timed = _STATS.get() is not None
    nbuf = min(RING, len(bounds))
    max_bytes = max(b - a for a, b in bounds) * itemsize
    pool = staging_pool("cuda")
    compute = cupy.cuda.get_current_stream()
    h_bufs: list[np.ndarray] = []
    fills: dict[int, list[Future]] = {}
    copied: list[Any] = [None] * nbuf
    consumed: list[Any] = [None] * nbuf
    marks: list[tuple] = []
    align = 4096 // itemsize if getattr(src, "direct", False) else 1

    def submit_fill(i: int) -> None:
        a, b = bounds[i]
        dst = h_bufs[i % nbuf][:(b - a) * itemsize].view(src.dtype)
        pieces = max(1, min(threads(), (b - a) * itemsize // PIECE))
        fills[i] = [executor().submit(_fill_part, src, dst[lo - a:hi - a], lo, copied[i % nbuf])
                    for lo, hi in split(a, b, pieces, unit, align)]

    def event() -> Any:
        return cupy.cuda.Event(disable_timing=not timed)

    partials: list = []
    direct, how, copy_stream = False, "stage", None
    try:
        direct, how = _register(src, host)
        stats["host"] = how
        copy_stream = cupy.cuda.Stream(non_blocking=True)
        d_bufs = [cupy.empty(max_bytes, np.uint8) for _ in range(nbuf)]
        # CuPy's pool hands out blocks safe in the order of the stream they are allocated on
        # (``compute``): the copy stream writes them only after what ``compute`` holds now.
        allocated = cupy.cuda.Event(disable_timing=True)
        allocated.record(compute)
        copy_stream.wait_event(allocated)
        if not direct:
            for _ in range(nbuf):
                h_bufs.append(pool.acquire(max_bytes))
            for i in range(nbuf):
                submit_fill(i)
        for i, (a, b) in enumerate(bounds):
            slot, nbytes = i % nbuf, (b - a) * itemsize
            read = (0.0, 0.0)
            if direct:
                h_ptr = src.address + a * itemsize
            else:
                futs = fills[i]
                wait(futs)  # every piece has stopped writing before an error surfaces
                spans = [f.result() for f in futs]
                del fills[i]
                read = (min(s[0] for s in spans), max(s[1] for s in spans))
                h_ptr = h_bufs[slot].ctypes.data
            if consumed[slot] is not None:
                copy_stream.wait_event(consumed[slot])
            c0 = event()
            c0.record(copy_stream)
            cupy.cuda.runtime.memcpyAsync(d_bufs[slot].data.ptr, h_ptr, nbytes, H2D,
                                          copy_stream.ptr)
            copied[slot] = event()
            copied[slot].record(copy_stream)
            compute.wait_event(copied[slot])
            k0 = event()
            k0.record(compute)
            partials.append(chunk_fn(d_bufs[slot][:nbytes].view(src.dtype), a))
            consumed[slot] = event()
            consumed[slot].record(compute)
            marks.append((read, c0, copied[slot], k0, consumed[slot]))
            if not direct and i + nbuf < len(bounds):
                submit_fill(i + nbuf)
            _progress(b * itemsize, total)
        if timed:
            compute.synchronize()
            stats["read_s"] = sum(m[0][1] - m[0][0] for m in marks)
            stats["h2d_s"] = sum(cupy.cuda.get_elapsed_time(m[1], m[2]) for m in marks) / 1e3
            stats["kernel_s"] = sum(cupy.cuda.get_elapsed_time(m[3], m[4]) for m in marks) / 1e3
    finally:
        try:
            _drain(f for fl in fills.values() for f in fl)
            if copy_stream is not None:
                copy_stream.synchronize()  # no copy still reads a buffer going back to the pool
        finally:
            for buf in h_bufs:
                pool.release(buf)
            if how == "register":
                cupy.cuda.runtime.hostUnregister(src.address)
    return partials

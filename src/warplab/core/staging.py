"""The host side of streaming: the staging-buffer pool, the worker threads, the measured rates
and the chunk plan.

* :class:`StagingPool`: page-aligned host buffers (pinned on the cuda backend, plain on the
  cpu backend) in power-of-two size classes, reused across calls; its accounting
  (``allocated_bytes``, ``in_use``) is what the tests watch on every error path.
* :func:`rates`: the two bandwidths a chunk size is planned from: nominal ones unless the
  caller passes measured ones; :func:`measure_rates` measures them on the pool's own buffers
  (one pinned H2D copy timed with events; the threaded staging copy into pinned memory,
  ``ntcopy.copy``) for campaigns and tuning scripts. No call of the library measures.
* :func:`plan_chunk`: the chunk size (see its docstring); ``WARPLAB_STREAM_CHUNK`` overrides.
"""
from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import numpy as np

from warplab.core import env, ntcopy
from warplab.core.errors import InvalidValueError

PAGE = 4096
MIN_CLASS = 1 << 16
MIN_CHUNK = 1 << 20
MAX_CHUNK = 256 << 20
#: Host time one chunk costs beyond its bytes (a thread-pool round trip, events, launches):
#: the model's one constant, checked by the stream campaign (small chunks vs large).
CHUNK_OVERHEAD_S = 100e-6
#: Bytes each worker thread copies per task at least, on the cuda backend: a pageable 1 GiB
#: copied into pinned memory by 16 threads ran at 17.6 / 44 / 50 GB/s with 1 / 4 / 16 MiB
#: tasks, and the pageable 4 GiB stream at 10.9 / 30.8 / 39.2 GB/s with 16 / 64 / 256 MiB
#: chunks (H100 machine, benchmarks/explore_staging.py, explore_stream_chunks.py).
MIN_PIECE = 16 << 20
#: Free staging buffers kept for the next call, per pool (bytes).
CACHE_BYTES = 1 << 30
#: Host inputs smaller than this take the one-shot path (``WARPLAB_STREAM_MIN`` overrides).
STREAM_MIN_BYTES = 8 << 20
_SUFFIX = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def env_bytes(name: str) -> int | None:
    """An environment variable as bytes (``4096``, ``64K``, ``1M``, ``2G``); None if unset."""
    text = os.environ.get(name, "").strip().lower().rstrip("b").rstrip("i")
    if not text:
        return None
    num, suffix = (text[:-1], text[-1]) if text[-1] in _SUFFIX else (text, "")
    try:
        value = int(num) * _SUFFIX[suffix]
    except ValueError:
        raise InvalidValueError(f"{name}={os.environ[name]!r} is not a size (e.g. 4096, 64K, 1M)") \
            from None
    if value < 0:
        raise InvalidValueError(f"{name} must not be negative")
    return value


def stream_min_bytes() -> int:
    """Host inputs of at least this many bytes are streamed on the cuda backend."""
    if env.raw("WARPLAB_STREAM_MIN") is None:  # warm calls' common case: one dict lookup
        return STREAM_MIN_BYTES
    v = env_bytes("WARPLAB_STREAM_MIN")
    return STREAM_MIN_BYTES if v is None else v


#: Streaming threads of a process at most (the default is a thread per core up to this).
MAX_THREADS = 32


def threads() -> int:
    """Worker threads: ``WARPLAB_STREAM_THREADS``, else the process's pool's once it is made
    (:func:`executor`, :func:`share_host`), else the CPU count, at most 32."""
    v = os.environ.get("WARPLAB_STREAM_THREADS")
    if v:
        return max(1, int(v))
    return _EXECUTOR_THREADS if _EXECUTOR is not None else max(1, min(MAX_THREADS,
                                                                       os.cpu_count() or 1))


_EXECUTOR: ThreadPoolExecutor | None = None
_EXECUTOR_THREADS = 0
_EXECUTOR_LOCK = threading.Lock()


def executor() -> ThreadPoolExecutor:
    """The process's streaming worker threads (made on first use, :func:`threads` of them)."""
    return _make(threads())


def share_host(processes: int) -> int:
    """Make this process's streaming pool for ``processes`` processes that stream on this
    host at once (the Dask workers of one machine): cores / processes threads, at least 1
    and at most 32, so that together they read with a thread per core. The page cache reads
    slower when oversubscribed: two workers of 32 threads each on 32 cores read no faster than
    one, with 16 each 1.07-1.30x faster (docs/dask.md). ``WARPLAB_STREAM_THREADS`` wins when
    set; a pool made before keeps its size (one per process). Returns the pool's threads."""
    _make(shared_threads(processes))
    return threads()


def shared_threads(processes: int) -> int:
    """The streaming threads :func:`share_host` makes for each of ``processes`` processes:
    ``WARPLAB_STREAM_THREADS`` when set, else :func:`host_threads`."""
    v = os.environ.get("WARPLAB_STREAM_THREADS")
    return max(1, int(v)) if v else host_threads(processes)


def host_threads(processes: int) -> int:
    """Streaming threads of each of ``processes`` processes that share this host's
    :func:`cores`: cores / processes, at least 1, at most 32."""
    return max(1, min(MAX_THREADS, cores() // max(1, int(processes))))


def cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)


def _make(n: int) -> ThreadPoolExecutor:
    global _EXECUTOR, _EXECUTOR_THREADS
    with _EXECUTOR_LOCK:
        if _EXECUTOR is None:
            _EXECUTOR = ThreadPoolExecutor(n, thread_name_prefix="warplab-stream")
            _EXECUTOR_THREADS = n
        return _EXECUTOR


def _size_class(nbytes: int) -> int:
    return max(MIN_CLASS, 1 << max(0, nbytes - 1).bit_length())


def _aligned_host(nbytes: int) -> np.ndarray:
    raw = np.empty(nbytes + PAGE, np.uint8)
    off = (-raw.ctypes.data) % PAGE
    return raw[off:off + nbytes]


def _pinned_host(nbytes: int) -> np.ndarray:
    import cupyx

    return cupyx.empty_pinned(nbytes, np.uint8)


class StagingPool:
    """Page-aligned uint8 host buffers by power-of-two size class, reused across calls.

    ``allocated_bytes``: bytes of every buffer the pool holds (free or lent); ``in_use``:
    buffers lent and not yet returned. At most :data:`CACHE_BYTES` of free buffers are kept.
    """

    def __init__(self, alloc: Callable[[int], np.ndarray]) -> None:
        self._alloc = alloc
        self._free: list[np.ndarray] = []
        self._lock = threading.Lock()
        self.allocated_bytes = 0
        self.in_use = 0

    def acquire(self, nbytes: int) -> np.ndarray:
        """A buffer of at least ``nbytes`` (its size class); give it back with :meth:`release`."""
        size = _size_class(nbytes)
        with self._lock:
            for i, b in enumerate(self._free):
                if b.size == size:
                    self.in_use += 1
                    return self._free.pop(i)
            self.allocated_bytes += size
            self.in_use += 1
        try:
            return self._alloc(size)
        except BaseException:
            with self._lock:
                self.allocated_bytes -= size
                self.in_use -= 1
            raise

    def release(self, buf: np.ndarray) -> None:
        """Take a buffer back; the oldest free ones are dropped beyond :data:`CACHE_BYTES`."""
        with self._lock:
            self.in_use -= 1
            self._free.append(buf)
            while sum(b.size for b in self._free) > CACHE_BYTES:
                self.allocated_bytes -= self._free.pop(0).size

    def clear(self) -> None:
        """Drop every free buffer."""
        with self._lock:
            self.allocated_bytes -= sum(b.size for b in self._free)
            self._free.clear()


_POOLS: dict[str, StagingPool] = {}


def staging_pool(backend: str) -> StagingPool:
    """The staging pool of ``backend`` (pinned buffers for cuda, plain ones for cpu)."""
    if backend not in _POOLS:
        _POOLS[backend] = StagingPool(_pinned_host if backend == "cuda" else _aligned_host)
    return _POOLS[backend]


class Rates(NamedTuple):
    """Measured bandwidths (GB/s) a chunk size is planned from, and how they were obtained."""

    h2d_gbps: float
    stage_gbps: float
    source: str


#: The planning rates when the caller gives none: a pinned PCIe copy and the threaded staging
#: copy, both conservative. The chunk plan depends on them only between its bounds (for inputs
#: above a few hundred MiB the per-thread floor decides), so the library measures nothing on a
#: user's first call; a campaign passes its measured ceilings as ``rate=``.
NOMINAL = {"cuda": Rates(25.0, 20.0, "nominal: PCIe pinned copy, threaded staging copy"),
           "cpu": Rates(10.0, 10.0, "nominal: threaded staging copy")}


def rates(backend: str) -> Rates:
    """The rates a chunk size is planned from when the caller passes none (:data:`NOMINAL`;
    the cpu backend has no bus: its rate is the staging copy's)."""
    return NOMINAL["cuda" if backend == "cuda" else "cpu"]


def measure_rates(backend: str, nbytes: int = 32 << 20) -> Rates:
    """Measure the rates on this machine (about 20 ms on a GPU machine): the threaded staging
    copy into the pool's buffers and, on cuda, one pinned H2D copy timed with events. For
    campaigns and tuning scripts; the library's calls never measure."""
    pool = staging_pool(backend)
    h_buf = pool.acquire(nbytes)
    try:
        h_src = np.ones(nbytes, np.uint8)
        parts = np.array_split(np.arange(nbytes // PAGE) * PAGE, threads())
        def stage() -> float:
            t0 = time.perf_counter()
            list(executor().map(lambda p: ntcopy.copy(h_buf[p[0]:p[-1] + PAGE],
                                                      h_src[p[0]:p[-1] + PAGE]),
                                [p for p in parts if p.size]))
            return time.perf_counter() - t0
        stage()
        stage_gbps = nbytes / min(stage() for _ in range(3)) / 1e9
        if backend != "cuda":
            return Rates(stage_gbps, stage_gbps,
                         f"measured: threaded staging copy, {ntcopy.status()} (cpu)")
        return Rates(_h2d_gbps(h_buf, nbytes), stage_gbps,
                     f"measured: {nbytes >> 20} MiB pinned cudaMemcpyAsync H2D, threaded "
                     f"staging copy into pinned memory ({ntcopy.status()})")
    finally:
        pool.release(h_buf)


def _h2d_gbps(h_buf: np.ndarray, nbytes: int) -> float:
    import cupy

    d_buf = cupy.empty(nbytes, np.uint8)
    stream = cupy.cuda.Stream(non_blocking=True)
    allocated = cupy.cuda.Event(disable_timing=True)  # d_buf is safe in the current stream's
    allocated.record()                                  # order: copy into it after that
    stream.wait_event(allocated)
    best = math.inf
    for _ in range(4):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record(stream)
        cupy.cuda.runtime.memcpyAsync(d_buf.data.ptr, h_buf.ctypes.data, nbytes, 1, stream.ptr)
        stop.record(stream)
        stop.synchronize()
        best = min(best, cupy.cuda.get_elapsed_time(start, stop) * 1e-3)
    return nbytes / best / 1e9


def plan_chunk(total_bytes: int, unit_bytes: int, backend: str, rate: Rates | None = None,
               override: int | None = None) -> int:
    """Bytes per chunk: a multiple of ``unit_bytes`` (at least one unit).

    cuda: the pipeline's time is about ``total / min(rates) + chunk * (1/stage + 1/h2d)`` (the
    first chunk's staging and the last one's copy are not overlapped) ``+ chunks *``
    :data:`CHUNK_OVERHEAD_S`; the chunk that minimises it is
    ``sqrt(total * overhead / (1/stage + 1/h2d))``, rounded down to a power of two and held
    within [1 MiB, 256 MiB], but no smaller than a :data:`MIN_PIECE` per worker thread (or a
    quarter of the data, whichever is less): the host copies run at their measured rate only
    in tasks that large. cpu (threads over chunks): four chunks per worker thread, within
    the same bounds. ``override`` (or ``WARPLAB_STREAM_CHUNK``) replaces the choice (tests
    force tiny chunks with it).
    """
    if unit_bytes < 1:
        raise InvalidValueError("unit_bytes must be >= 1")
    forced = override if override is not None else env_bytes("WARPLAB_STREAM_CHUNK")
    if forced is not None:
        chunk = max(1, forced)
    elif backend == "cuda":
        r = rate or rates(backend)
        per_byte = 1 / (r.stage_gbps * 1e9) + 1 / (r.h2d_gbps * 1e9)
        best = math.sqrt(max(1, total_bytes) * CHUNK_OVERHEAD_S / per_byte)
        floor = min(threads() * MIN_PIECE, max(1, total_bytes) // 4)
        chunk = 1 << int(math.log2(min(MAX_CHUNK, max(MIN_CHUNK, best, floor))))
    else:
        per = -(-max(1, total_bytes) // (4 * threads()))
        chunk = 1 << int(math.log2(min(MAX_CHUNK, max(MIN_CHUNK, per))))
    return max(unit_bytes, chunk // unit_bytes * unit_bytes)


def chunk_bounds(size: int, chunk: int) -> list[tuple[int, int]]:
    """``[(start, stop), ...]`` of ``size`` elements in chunks of ``chunk`` (the last shorter)."""
    if chunk < 1:
        raise InvalidValueError("chunk must be >= 1")
    return [(a, min(a + chunk, size)) for a in range(0, size, chunk)]


def is_pinned(address: Any) -> bool:
    """True when host ``address`` lies in page-locked memory CUDA knows (cudaHostAlloc'ed or
    registered): such memory is copied from directly, without staging."""
    if address is None:
        return False
    import cupy

    try:
        attrs = cupy.cuda.runtime.pointerGetAttributes(address)
    except Exception:
        return False
    kind = getattr(attrs, "type", getattr(attrs, "memoryType", 0))
    return int(kind) == 1  # cudaMemoryTypeHost

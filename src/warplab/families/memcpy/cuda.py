"""Launch plans of the CUDA batched-copy variants (kernels in ``memcpy.cu`` beside this file).

Every variant takes a :class:`DeviceBatch`: three device arrays of one entry per buffer
(source address, destination address, size in bytes; uint64 or int64) and, for the list
forms, the same three on the host (``host``). Every variant enqueues its work on the current
CuPy stream and returns without synchronising, except ``loop_memcpy_async`` on the pointer form
(it must read the addresses on the host: one synchronising D2H copy). A size-class design's
two launches hand the large buffers over through the stream's BLEV queue (``blev_queue.py``).
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from warplab.core import fastpath
from warplab.core.launch import ARRAY, Prepared
from warplab.core.loader import defines, get_kernel
from warplab.core.registry import register
from warplab.families.memcpy.blev_queue import stream_queue
from warplab.families.memcpy.spec import (
    MAX_QUEUED,
    PR_CLASSES,
    TUNED_CLASSES,
    WARP_CLASSES,
    WARP_CLASSES_STREAM,
    WARP_CLASSES_SWEEP,
    WARP_TIERS,
    WARP_TIERS_WORDS,
    WINDOWS,
    WINDOWS_SWEEP,
    MemcpyProblem,
    SizeClasses,
    WarpClasses,
    WindowsShape,
    bytes_moved,
)

SOURCE = Path(__file__).with_name("memcpy.cu")  # includes memcpy_copy.cuh, memcpy_warp.cuh
BLOCK = 256          # block_per_buffer: threads per buffer
WARP_BLOCK = 256     # warp_per_buffer: eight warps (buffers) per block
BLEV_THREADS = 256   # size_classes, second kernel
BLEV_BLOCKS_PER_SM = 8
WARP_THREADS = 256   # warp_classes, first kernel: eight warps of 32 buffers per block
MAX_GRID = 1 << 20   # grid-stride loops cover the rest
#: The kernels' compile-time constants (their only copy; passed as -D options).
DEFINES = {
    "WARPLAB_MEMCPY_UNROLL": 4,               # 16-byte loads in flight per thread
    "WARPLAB_MEMCPY_BLEV_THREADS": BLEV_THREADS,
    "WARPLAB_MEMCPY_WARP_THREADS": WARP_THREADS,
    "WARPLAB_MEMCPY_LOADS": 0,                # load policy of the base module (memcpy_copy.cuh)
    # whether the warp kernel lets its BLEV kernel place blocks once its own have started (1)
    # or once they have exited (0), with OVERLAP: on the H200 1 cost the 64 KiB cells at
    # 1 GiB 2.5% of their time (86.5% -> 84.4% of the same-size copy) and gained nothing on
    # the 1-4 KiB cells at 64 MiB or the 64 KiB cells at 256 MiB (benchmarks/NOTES.md)
    "WARPLAB_MEMCPY_WARP_TRIGGER": 0,
    # the warp loop's copy of a misaligned source: three shifted 8-byte loads a chunk (0), or
    # one aligned 16-byte load and a shuffle from the next lane, rounds of N words a lane (N).
    # On the H200 at 1 GiB, public calls: 2 copies the 1-4096 B mixes at align 1 7-9% and at
    # align 4 3-4% faster than 0, every other cell measured within 1%; 3 and 4 gain 11-14%
    # there but cost the tiny cells 4-8% (the kernel's code at 62-64 registers, 4 with
    # spills) (benchmarks/NOTES.md)
    "WARPLAB_MEMCPY_WARP_SHUFFLE": 2,
}


class DeviceBatch(NamedTuple):
    """One batch on the device: ``src``, ``dst``, ``sizes`` (CuPy, one entry per buffer),
    ``count``, ``host`` = the same three on the host (uint64 NumPy arrays, or lists of
    Python ints from ``copy_batched``) when the caller had them, and ``largest`` = the
    largest size when the host knows it (no size is then negative)."""

    src: Any
    dst: Any
    sizes: Any
    count: int  # type: ignore[assignment]  # a field named as tuple's method
    host: tuple[Any, Any, Any] | None
    largest: int | None = None


@functools.cache
def _tiles_expr(c: SizeClasses) -> str:
    return (f"memcpy_size_classes_tiles<{c.tile_threads}, {c.buffers_per_thread}, "
            f"{c.tlev_max}, {c.wlev_max}, {c.chunk}>")


@functools.cache
def _warp_expr(c: WarpClasses) -> str:
    return (f"memcpy_warp_classes<{c.tlev_max}, {c.group}, {c.sub_max}, {c.group2}, "
            f"{c.tier2_max}, {c.wlev_max}, {c.chunk}, {c.min_blocks}, {c.stream}, {c.zeroed}, "
            f"{c.words}>")


def _blev_expr(chunk: int) -> str:
    return f"memcpy_size_classes_blev<{chunk}>"


def _via_exprs(c: WarpClasses) -> tuple[str, str]:
    """The warp kernel and the BLEV kernel of ``c`` reading their arrays from a header
    (``memcpy_warp_classes_via``, ``memcpy_size_classes_blev_via``)."""
    return (_warp_expr(c).replace("memcpy_warp_classes<", "memcpy_warp_classes_via<", 1),
            f"memcpy_size_classes_blev_via<{c.chunk}>")


def windows_exprs(w: WindowsShape) -> tuple[str, str]:
    """The count and group kernels of destination windows of shape ``w``."""
    return (f"memcpy_windows_count<{w.bins}, {w.mean_max}, {w.span_min_log2}, "
            f"{w.span_max_log2}, {w.far_log2}, {w.wide_log2}, {w.tiny_mean_max}, "
            f"{w.narrow_log2}>",
            f"memcpy_windows_group<{w.bins}, {w.per}, {w.group_blocks}>")


#: The warp configurations of the registered variants: the library's modules hold these.
_WARP_CONFIGS = (WARP_CLASSES, WARP_CLASSES_STREAM, WARP_TIERS, WARP_TIERS_WORDS)


def _expressions(loads: int, sweep: bool = False) -> tuple[str, ...]:
    """The instantiations of the module compiled with load policy ``loads``.

    The library's modules (``sweep=False``) hold what the registered variants launch: the base
    module's (``DEFINES``) every variant's kernels but the warp configurations of other
    policies; another policy's module those configurations' first kernels and their BLEV
    kernel (the default, ``WARP_TIERS_WORDS``, has policy 2, and its module also the
    destination windows' kernels). The tuning shapes (``WARP_CLASSES_SWEEP``,
    ``WINDOWS_SWEEP``) compile into modules of their own (``sweep=True``), only when an
    explore script or a campaign launches one."""
    if sweep:
        configs = [c for c in WARP_CLASSES_SWEEP if c.loads == loads]
        windows = (tuple(dict.fromkeys(e for w in WINDOWS_SWEEP for e in windows_exprs(w)))
                   if loads == WARP_TIERS_WORDS.loads else ())
        return (*(_warp_expr(c) for c in configs),
                *sorted({_blev_expr(c.chunk) for c in configs}), *windows)
    configs = [c for c in _WARP_CONFIGS if c.loads == loads]
    windows = ((*_via_exprs(WARP_TIERS_WORDS), *windows_exprs(WINDOWS))
               if loads == WARP_TIERS_WORDS.loads else ())
    if loads == DEFINES["WARPLAB_MEMCPY_LOADS"]:
        return ("memcpy_block_per_buffer", "memcpy_warp_per_buffer",
                *(_tiles_expr(c) for c in (PR_CLASSES, TUNED_CLASSES)),
                *(_warp_expr(c) for c in configs),
                *sorted({_blev_expr(chunk) for chunk in (PR_CLASSES.chunk, TUNED_CLASSES.chunk,
                                                         *(c.chunk for c in configs))}),
                *windows)
    return (*(_warp_expr(c) for c in configs), *sorted({_blev_expr(c.chunk) for c in configs}),
            *windows)


def _kernel(expr: str) -> Any:
    import cupy

    return _kernel_on(expr, cupy.cuda.runtime.getDevice())


@functools.cache
def _kernel_on(expr: str, device_id: int, loads: int = DEFINES["WARPLAB_MEMCPY_LOADS"]) -> Any:
    """The compiled kernel per device and load policy (``WARPLAB_MEMCPY_LOADS``; the library's
    NVRTC module per policy holds :func:`_expressions`, the tuning shapes' their own)."""
    options = defines({**DEFINES, "WARPLAB_MEMCPY_LOADS": loads})
    exprs = _expressions(loads)
    if expr not in exprs:  # a tuning shape: the sweep's module (or a module of its own)
        exprs = _expressions(loads, sweep=True)
        if expr not in exprs:
            exprs = (expr,)
    return get_kernel(SOURCE, expr, all_expressions=exprs, options=options)


@functools.cache
def sms(device_id: int) -> int:
    """The SM count of GPU ``device_id`` (read once)."""
    import cupy

    return int(cupy.cuda.runtime.getDeviceProperties(device_id)["multiProcessorCount"])


def _args(b: DeviceBatch) -> tuple[Any, Any, Any, np.uint64]:
    return b.src, b.dst, b.sizes, np.uint64(b.count)


@register("memcpy_batched", "loop_memcpy_async", backend="cuda", bytes_moved=bytes_moved,
          rank=50)
def loop_memcpy_async(b: DeviceBatch) -> None:
    """One ``cudaMemcpyAsync`` per buffer on the current stream (what a user writes by hand).

    Performance: one driver call per non-empty buffer (several microseconds each): the
    baseline every one-launch variant is measured against. The pointer form first copies the
    three arrays to the host (one synchronisation).
    """
    import cupy

    if b.count == 0:
        return
    src, dst, sizes = b.host if b.host is not None else (
        b.src.get(), b.dst.get(), b.sizes.get())
    stream = cupy.cuda.get_current_stream().ptr
    copy = cupy.cuda.runtime.memcpyAsync
    d2d = cupy.cuda.runtime.memcpyDeviceToDevice
    for s, d, n in zip(np.asarray(src, np.uint64).tolist(), np.asarray(dst, np.uint64).tolist(),
                       np.asarray(sizes).astype(np.int64).tolist()):
        if n > 0:
            copy(d, s, n, d2d, stream)


@register("memcpy_batched", "block_per_buffer", backend="cuda", bytes_moved=bytes_moved,
          rank=30)
def block_per_buffer(b: DeviceBatch) -> None:
    """One block of 256 threads per buffer (grid-stride), 16-byte stores.

    Performance: one launch; all bytes once plus 24 bytes per buffer. A buffer smaller than
    4 KiB leaves most of its block idle, so tiny buffers run far below the copy ceiling.
    """
    if b.count:
        _kernel("memcpy_block_per_buffer")((min(b.count, MAX_GRID),), (BLOCK,), _args(b))


@register("memcpy_batched", "warp_per_buffer", backend="cuda", bytes_moved=bytes_moved,
          rank=20)
def warp_per_buffer(b: DeviceBatch) -> None:
    """One warp per buffer (grid-stride), 16-byte stores.

    Performance: one launch; all bytes once plus 24 bytes per buffer. Tiny buffers idle most
    lanes; one huge buffer runs on one warp (no load balance).
    """
    if b.count:
        per = WARP_BLOCK // 32
        grid = min(-(-b.count // per), MAX_GRID)
        _kernel("memcpy_warp_per_buffer")((grid,), (WARP_BLOCK,), _args(b))


class _Launches(NamedTuple):
    """A size-class design's two launches on one device: the first kernel (every buffer up
    to ``wlev_max`` bytes, the larger ones queued) and the BLEV kernel on its grid."""

    first: Prepared
    blev: Prepared
    blev_grid: int
    wlev_max: int


_LAUNCHES = fastpath.PlanCache("memcpy.launches")


#: Whether the warp kernel and its BLEV kernel are launched to overlap the stream's previous
#: kernel (``Prepared(overlap=True)``: programmatic dependent launch on sm_90 and later; both
#: kernels await the previous one's end before their first memory access, and let the next
#: launch place its blocks once theirs have started). On the H200: the >= 1 KiB cells at 64 MiB
#: 3 us (8%) faster, 256 MiB 1-2%; the 64 KiB cells at 1 GiB 3-4% slower (benchmarks/NOTES.md).
OVERLAP = True


def _launches(first_expr: str, block: int, wlev_max: int, chunk: int,
              loads: int = DEFINES["WARPLAB_MEMCPY_LOADS"], extra: tuple = (),
              overlap: bool = False) -> tuple[_Launches, int]:
    """The launches of a first kernel ``first_expr`` (``extra``: samples of its arguments
    after the queue's) with its BLEV kernel on the current device, and the device's id;
    ``overlap``: both launched with :class:`Prepared`'s ``overlap`` (the first kernel must
    call ``wait_prior_grids`` first, as the warp kernel and the BLEV kernel do)."""
    import cupy

    dev = cupy.cuda.runtime.getDevice()
    key = (first_expr, block, wlev_max, chunk, loads, overlap, dev)
    got = _LAUNCHES.get(key)
    if got is None:
        u64 = np.uint64(0)
        got = _LAUNCHES.put(key, _Launches(
            Prepared(_kernel_on(first_expr, dev, loads), None, (block,),
                     (ARRAY, ARRAY, ARRAY, u64, u64, u64, u64, *extra), overlap=overlap),
            Prepared(_kernel_on(_blev_expr(chunk), dev, loads), None, (BLEV_THREADS,),
                     (ARRAY, ARRAY, ARRAY, u64, u64, u64), overlap=overlap),
            BLEV_BLOCKS_PER_SM * sms(dev), wlev_max))
    return got, dev


def _classed(b: DeviceBatch, go: _Launches, grid: int, dev: int, *extra: Any) -> None:
    """The launches of a size-class kernel (``memcpy.cu``; ``extra``: the first kernel's
    arguments after the queue's): the first kernel copies every buffer of up to
    ``go.wlev_max`` bytes and queues the larger ones (BLEV) for the second kernel, through the
    stream's :class:`~.blev_queue._Queue`. When the host knows that no buffer is that large,
    the first kernel never touches the queue: one launch, null pointers."""
    if b.largest is not None and b.largest <= go.wlev_max:
        go.first.on_stream(fastpath.current_stream()[0], grid, b.src, b.dst, b.sizes, b.count,
                           0, 0, 0, *extra)
        return
    stream, q = stream_queue(dev)
    with q.lock:
        keep, first, ids = q.slots_for(b.count)
        go.first.on_stream(stream, grid, b.src, b.dst, b.sizes, b.count, q.counter_at, ids,
                           first, *extra)
        try:
            go.blev.on_stream(stream, go.blev_grid, b.src, b.dst, b.sizes, q.counter_at, ids,
                              first)
        except BaseException:
            q.counter.fill(0)  # the launch that would have zeroed it did not happen
            raise
    del keep  # the slots outlived both launches


def _size_classes(b: DeviceBatch, c: SizeClasses) -> None:
    """The size-class design: the tiles kernel, then the BLEV queue's kernel (``_classed``)."""
    if b.count == 0:
        return
    go, dev = _launches(_tiles_expr(c), c.tile_threads, c.wlev_max, c.chunk)
    _classed(b, go, -(-b.count // (c.tile_threads * c.buffers_per_thread)), dev)


#: The warp kernel's ``parts_log2`` argument per value (a NumPy scalar: CuPy's launch too).
_PARTS_LOG2 = tuple(np.uint32(k) for k in range(4))
#: Warps the warp kernel's grid is given per warp the GPU holds at once, at least, while the
#: batch's groups of 32 buffers are fewer (``parts_log2``).
PARTS_WAVES = 2


def parts_log2(count: int, resident_warps: int) -> int:
    """log2 of the warps per group of 32 buffers of the warp kernel (``memcpy_warp.cuh``,
    GridStride): the largest power of two P <= 8 with ``P * groups <= PARTS_WAVES *
    resident_warps`` (1 where the groups alone fill that many): a batch of a few thousand
    buffers of 1-8 KiB gets more warps copying at once than its groups."""
    r = PARTS_WAVES * resident_warps // -(-count // 32)
    return min(3, r.bit_length() - 1) if r > 1 else 0


def run_warp_classes(b: DeviceBatch, c: WarpClasses = WARP_CLASSES, overlap: bool = OVERLAP
                     ) -> None:
    """The launches of ``warp_classes`` with thresholds ``c`` (one of ``WARP_CLASSES``,
    ``WARP_CLASSES_STREAM``, ``WARP_TIERS``, ``WARP_TIERS_WORDS`` and ``WARP_CLASSES_SWEEP``:
    the modules compile those): the warp kernel, ``parts_log2`` warps per group, then the BLEV
    queue's kernel (``_classed``: one launch when the host knows no buffer exceeds
    ``c.wlev_max``); ``overlap``: both launched to overlap the stream's previous kernel
    (:data:`OVERLAP`)."""
    if b.count == 0:
        return
    go, dev = _launches(_warp_expr(c), WARP_THREADS, c.wlev_max, c.chunk, c.loads,
                        (_PARTS_LOG2[0],), overlap)
    lg = parts_log2(b.count, sms(dev) * c.min_blocks * (WARP_THREADS // 32))
    _classed(b, go, min(-(-(b.count << lg) // WARP_THREADS), MAX_GRID), dev, _PARTS_LOG2[lg])


def _queue_fits(p: MemcpyProblem) -> bool:
    return p.count <= MAX_QUEUED


@register("memcpy_batched", "size_classes", backend="cuda", bytes_moved=bytes_moved,
          supports=_queue_fits, rank=10, seed=True)
def size_classes(b: DeviceBatch) -> None:
    """CUB's DeviceBatchMemcpy design with its thresholds: tiles of 128 x 4 buffers partitioned
    by a 3-bin histogram and prefix sum into TLEV (<= 32 B, run-length decoded: a byte per
    thread), WLEV (<= 1 KiB, a warp each) and BLEV (queued; a second kernel copies 8 KiB
    pieces, blocks in proportion to size).

    Performance: two launches (one when the host knows no buffer exceeds 1 KiB:
    ``copy_batched``); all bytes once plus 24 bytes per buffer, plus 12 bytes per BLEV buffer
    through the queue. At most 2^32 - 1 buffers.
    """
    _size_classes(b, PR_CLASSES)


@register("memcpy_batched", "size_classes_tuned", backend="cuda", bytes_moved=bytes_moved,
          supports=_queue_fits, rank=3)
def size_classes_tuned(b: DeviceBatch) -> None:
    """The size-class design tuned where CUB sags: tiles of 256 x 1 buffers (twice the warps
    in flight), warps take buffers up to 8 KiB (no second kernel for 4 KiB buffers), 32 KiB
    BLEV pieces.

    Performance: as ``size_classes`` (one launch when the host knows no buffer exceeds
    8 KiB). On the H100's full grid of CUB's DeviceBatchMemcpy benchmark: 1.2x CUB in 64 of
    140 cells, >= 85% of the copy ceiling in 24 of the 36 cells whose buffers are all >= 1 KiB
    (the fixed 1 KiB cells at 83-84%; benchmarks/NOTES.md).
    """
    _size_classes(b, TUNED_CLASSES)

"""The Pearson report's per-series mean kernels K2 (section 4 of the report), as seed variants of
``reduce_axis``: one series per row of a "rows" layout, ops sum and mean, float32/float64, and
sums accumulated in the INPUT type as the report did (float32 K2 is what loses accuracy in the
report's float-vs-double table; ``rows_adaptive`` accumulates in float64).

The report's story on 8192 series x 8192 values: ``k2_basic`` (global memory, in place) <
``k2_shared`` ("Intense") < ``k2_shared_unrolled`` ("Intense Optimized"); ``k2_multiblock`` is
its appendix 4.6, discussed there and never built. Block sizes follow the report: 1024 threads
for series longer than 1024 values, else the next power of two of N / 2 (at least one warp).
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from warplab.core.loader import defines, get_kernel, occupancy_blocks_per_sm
from warplab.families.reduce import (
    axis_cuda as _ac,  # buffers through _ac._empty (the GPU tests poison it)
)
from warplab.families.reduce.axis_cuda import (
    DEFINES,
    K2_BLOCK,
    SOURCE,
    TICKETS,
    _pow2_ceil,
    register_cuda,
    sm_count,
)
from warplab.families.reduce.axis_input import C_TYPE, _ld
from warplab.families.reduce.axis_spec import AxisJob, AxisProblem

K2_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
K2_BLOCKS = (32, 64, 128, 256, 512, 1024)
#: Grid limit of the one-block-per-series kernels (blockIdx.x).
MAX_GRID = (1 << 31) - 1


def _supports(p: AxisProblem) -> bool:
    return (p.layout == "rows" and p.op in ("sum", "mean") and np.dtype(p.dtype) in K2_DTYPES
            and p.rows <= MAX_GRID)


@functools.cache
def _expressions(t: str, mean: str) -> tuple[str, ...]:
    out = [f"k2_prereduce<{t}>", f"k2_finish<{t}, {mean}>", f"k2_shared<{t}, {mean}>"]
    out += [f"k2_shared_unrolled<{t}, {mean}, {b}>" for b in K2_BLOCKS]
    out += [f"k2_multiblock<{t}, {mean}, {b}>" for b in K2_BLOCKS]
    return tuple(out)


@functools.cache
def _kernel(name: str, t: str, mean: str, block: int | None, device_id: int) -> Any:
    if name == "k2_prereduce":
        expr = f"{name}<{t}>"
    else:
        expr = f"{name}<{t}, {mean}" + (f", {block}>" if block else ">")
    return get_kernel(SOURCE, expr, all_expressions=_expressions(t, mean),
                      options=defines(DEFINES))


def _setup(x2d: Any, job: AxisJob) -> tuple[int, int, str, str, int, Any]:
    import cupy

    rows, n = x2d.shape
    t = C_TYPE[np.dtype(x2d.dtype)]
    mean = "true" if job.op == "mean" else "false"
    out = _ac._empty(rows, x2d.dtype)
    return rows, n, t, mean, cupy.cuda.runtime.getDevice(), out


def k2_block(n: int) -> int:
    """The report's block for series of ``n`` values: 1024 above 1024 values, else N / 2
    rounded up to a power of two, at least one warp (the unrolled tree needs a full warp)."""
    return min(K2_BLOCK, max(32, _pow2_ceil(-(-n // 2))))


@register_cuda("k2_basic", supports=_supports, rank=40, seed=True)
def k2_basic(x2d: Any, job: AxisJob) -> Any:
    """Pearson report K2: in-place pre-reduction in global memory, then interleaved pairs.

    One block per series (1024 threads, or N/2 for short series) on a scratch copy padded with
    zeros to P = 2^ceil(log2 N) values (never the user's input): while more values than threads
    are left, each thread adds pairs of values a stride apart (the stride doubling from the block
    size), leaving blockDim values; then the interleaved reduction over those, in global memory.
    The report launched that finish as a child kernel from thread 0 (dynamic parallelism), which
    NVRTC / cupy.RawModule cannot link: here it is a second kernel launched from the host on the
    same stream. Sums in the input type.

    Performance:
        Reads N and writes P values per series for the scratch copy (plus P - N zeros), then the
        pre-reduction reads ~P and writes ~P/2 values in place, the finish reads blockDim more:
        about 4x the traffic of one read. Three device operations (copy, two launches: grid
        rows x min(1024, P/2) threads and rows x blockDim/2), no host synchronisation; scratch
        memory rows x P elements.
    """
    rows, n, t, mean, dev, out = _setup(x2d, job)
    p = _pow2_ceil(n)
    bd = min(K2_BLOCK, max(1, p // 2))
    scratch = _ac._empty((rows, p), x2d.dtype)
    if p > n:
        scratch[:, n:] = 0
    scratch[:, :n] = x2d
    if p > bd:
        _kernel("k2_prereduce", t, mean, None, dev)((rows,), (bd,), (scratch, np.uint64(p)))
    left = min(p, bd)
    _kernel("k2_finish", t, mean, None, dev)((rows,), (max(1, left // 2),), (
        scratch, np.uint64(p), np.uint32(left), np.uint64(n), out))
    return out


@register_cuda("k2_shared", supports=_supports, rank=41, seed=True)
def k2_shared(x2d: Any, job: AxisJob) -> Any:
    """Pearson report "Intense" K2: per-thread strided sums, then a shared-memory tree.

    One block per series: each thread sums its values blockDim apart (coalesced), then the
    interleaved tree in shared memory with a barrier at every level (blockDim a run-time value:
    10 barriers for 1024 threads, and one load in flight per thread). No child kernel. Sums in
    the input type.

    Performance:
        Reads every value once, writes one result per series; one launch of rows blocks of
        min(1024, N/2) threads (the report's rule); no host synchronisation.
    """
    rows, n, t, mean, dev, out = _setup(x2d, job)
    _kernel("k2_shared", t, mean, None, dev)((rows,), (k2_block(n),), (
        x2d, np.uint64(n), np.uint64(_ld(x2d)), out))
    return out


@register_cuda("k2_shared_unrolled", supports=_supports, rank=42, seed=True)
def k2_shared_unrolled(x2d: Any, job: AxisJob) -> Any:
    """Pearson report "Intense Optimized" K2: as ``k2_shared`` with the tree unrolled.

    The block size is a template constant, so the tree folds at compile time: the levels above
    one warp are unrolled (4 barriers for 1024 threads) and the last warp reduces with shuffles.
    The constant stride also lets the compiler unroll the strided loop (sm_90 SASS: 4 loads in
    flight per thread, against 1 for ``k2_shared``'s run-time blockDim), which is most of its
    lead at 8192 x 8192. Deviation: the report's last warp used volatile shared memory without
    barriers, a race since Volta's independent thread scheduling; shuffles are the safe form.

    Performance:
        Reads every value once, writes one result per series; one launch of rows blocks of
        min(1024, N/2) threads; no host synchronisation.
    """
    rows, n, t, mean, dev, out = _setup(x2d, job)
    b = k2_block(n)
    _kernel("k2_shared_unrolled", t, mean, b, dev)((rows,), (b,), (
        x2d, np.uint64(n), np.uint64(_ld(x2d)), out))
    return out


@functools.cache
def _resident(t: str, mean: str, block: int, device_id: int) -> int:
    """Resident ``k2_multiblock`` blocks (SMs x occupancy), cached: the occupancy reads the
    device properties, a slow query, which a call must not repeat."""
    k = _kernel("k2_multiblock", t, mean, block, device_id)
    return sm_count(device_id) * occupancy_blocks_per_sm(k, block, 0)


def k2_splits(rows: int, n: int, block: int, resident_blocks: int) -> int:
    """Blocks per series of ``k2_multiblock`` (pure: CPU-tested): as many as fill the GPU
    (resident blocks // rows), at least one, at most one per ``block`` values, and within the
    grid limit."""
    b = max(1, min(resident_blocks // max(rows, 1), -(-n // block)))
    return max(1, min(b, MAX_GRID // max(rows, 1)))


@register_cuda("k2_multiblock", supports=_supports, rank=43, seed=True)
def k2_multiblock(x2d: Any, job: AxisJob) -> Any:
    """Pearson report appendix 4.6 (discussed, never built): B blocks per series.

    Each of the B blocks of a series sums N/B consecutive values (strided loads, the unrolled
    tree of ``k2_shared_unrolled``) and leaves a partial; the block that draws the series' last
    ticket (atomicInc on a per-series counter) adds the B partials and writes the result. B =
    resident blocks // series (:func:`k2_splits`), so few long series still fill every SM.
    Sums in the input type.

    Performance:
        Reads every value once, writes one result per series (and B partials); one launch of
        rows x B blocks of min(1024, N/2) threads; no host synchronisation.
    """
    rows, n, t, mean, dev, out = _setup(x2d, job)
    b = k2_block(n)
    k = _kernel("k2_multiblock", t, mean, b, dev)
    nb = k2_splits(rows, n, b, _resident(t, mean, b, dev))
    chunk = -(-n // nb)
    nb = -(-n // chunk)
    partials = _ac._empty(rows * nb if nb > 1 else 1, x2d.dtype)
    k((rows * nb,), (b,), (x2d, np.uint64(n), np.uint64(_ld(x2d)), np.uint32(nb),
                           np.uint64(chunk), partials, TICKETS.get(rows if nb > 1 else 1), out))
    return out

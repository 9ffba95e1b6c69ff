"""Launch plans of the CUDA random-walk variants (kernels in ``walk.cu`` beside this file).

Each variant fills a C-contiguous ``(m, n)`` CuPy array of float32 or float64 with the walk of
:class:`~warplab.families.series.walk.WalkParams`, launches on the current stream without
synchronising and returns the array. :func:`emulate_warp_scan` is ``warp_scan``'s order of
multiplications in NumPy (the tests use it to check the kernels bit for bit, and the tolerance
against the sequential reference on the CPU).
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from warplab.core.loader import defines, get_kernel, occupancy_blocks_per_sm
from warplab.core.registry import register
from warplab.families.series.walk import FAMILY, WalkParams, WalkProblem, walk_bytes_moved

K = 8                  # consecutive elements per lane in a warp_scan tile (two Philox blocks)
WARPS = 8              # warps per block of the warp_scan kernels (blocks of 256)
MIN_BLOCKS = 4         # blocks per SM the scan kernels' registers must allow (<= 64 registers)
TILE = 32 * K          # elements of a warp-wide tile
TASKS = 4096           # warp tasks warp_scan cuts long series into, whatever the GPU, so that
                       # its results (its order of multiplications) are the same on every GPU
SEED_BLOCK = 1024      # the report's K1 launch
SEED_BLOCK_FAST = 32   # the report's faster K1 launch
MAX_GRID = 2**31 - 1
SOURCE = Path(__file__).with_name("walk.cu")
#: The kernels' compile-time constants: this dict is their only copy (passed as -D options).
DEFINES = {"WARPLAB_WALK_K": K, "WARPLAB_WALK_WARPS": WARPS, "WARPLAB_WALK_MINB": MIN_BLOCKS}
C_TYPE = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
EXPRESSIONS = (*(f"{k}<{c}>" for k in ("walk_thread_per_series", "walk_scan_write")
                  for c in C_TYPE.values()), "walk_seg_totals", "walk_seg_scan")


@functools.cache
def _kernel(expr: str, device_id: int) -> Any:
    return get_kernel(SOURCE, expr, all_expressions=EXPRESSIONS, options=defines(DEFINES))


@functools.cache
def _resident_blocks(expr: str, device_id: int) -> int:
    """Blocks of WARPS warps of ``expr`` that fit on the whole device at once."""
    import cupy

    sms = cupy.cuda.runtime.getDeviceProperties(device_id)["multiProcessorCount"]
    return sms * occupancy_blocks_per_sm(_kernel(expr, device_id), WARPS * 32, 0)


def _launch(expr: str, device_id: int, tasks: int, args: tuple) -> None:
    """A warp-task kernel on min(tasks / WARPS, resident) blocks (a warp-stride loop)."""
    grid = max(1, min(-(-tasks // WARPS), _resident_blocks(expr, device_id)))
    _kernel(expr, device_id)((grid,), (WARPS * 32,), args)


@functools.cache
def _no_prefix(device_id: int) -> Any:
    import cupy

    return cupy.ones(1, dtype=np.float64)  # passed for the unread prefix of one-segment plans


def _walk_args(params: WalkParams) -> tuple:
    k0, k1 = params.key
    return (np.uint32(k0), np.uint32(k1), np.float64(params.eps_scaled),
            np.float64(params.start))


# ------------------------------------------------------------------------ the report's K1

def _thread_per_series(block: int) -> Callable[[Any, WalkParams], Any]:
    def run(out: Any, params: WalkParams) -> Any:
        import cupy

        m, n = out.shape
        k = _kernel(f"walk_thread_per_series<{C_TYPE[out.dtype]}>", cupy.cuda.Device().id)
        k((-(-m // block),), (block,), (out, np.uint64(m), np.uint64(n), *_walk_args(params)))
        return out

    return run


def _grid_fits(block: int) -> Callable[[WalkProblem], bool]:
    return lambda p: -(-p.m // block) <= MAX_GRID


_k1 = _thread_per_series(SEED_BLOCK)
_k1.__doc__ = """The report's K1: one thread per series writes it sequentially; blocks of 1024.

    Performance: writes m*n elements, each warp store touching 32 rows (uncoalesced; L2 merges
    the sectors); one launch of ceil(m / 1024) blocks, so m / 32 warps in all: 8192 series
    busy 8 SMs. Bit-identical to the NumPy reference.
    """
register(FAMILY, "k1_thread_per_series", backend="cuda", bytes_moved=walk_bytes_moved,
         supports=_grid_fits(SEED_BLOCK), rank=40, seed=True)(_k1)

_k1_b32 = _thread_per_series(SEED_BLOCK_FAST)
_k1_b32.__doc__ = """The report's K1 launched with blocks of 32 (its faster second version).

    Performance: as k1_thread_per_series, with ceil(m / 32) one-warp blocks spread over every
    SM instead of a few full ones. Bit-identical to the NumPy reference.
    """
register(FAMILY, "k1_thread_per_series_b32", backend="cuda", bytes_moved=walk_bytes_moved,
         supports=_grid_fits(SEED_BLOCK_FAST), rank=30, seed=True)(_k1_b32)


# ------------------------------------------------------------------------ warp_scan

class ScanPlan(NamedTuple):
    """How ``warp_scan`` cuts an ``(m, n)`` walk into warp tasks (a function of m and n only)."""

    log2w: int     # lanes per series: 2**log2w (32 for series longer than a tile)
    nseg: int      # segments per series; above 1, passes 1 and 2 compute their carry-ins
    seg_len: int   # elements per segment (a multiple of TILE when nseg > 1)
    ntasks: int    # warp tasks of the writing pass

    @property
    def width(self) -> int:
        return 1 << self.log2w

    @property
    def groups(self) -> int:
        """Series per warp task."""
        return 32 >> self.log2w


def _ceil_to(v: int, step: int) -> int:
    """``v`` rounded up to a multiple of ``step``."""
    return -(-v // step) * step


def scan_plan(m: int, n: int, tasks: int = TASKS) -> ScanPlan:
    """Series of at most one tile share a warp (``32 / w`` of them, ``w`` the next power of two
    of ``ceil(n / K)``); longer ones get whole warps, and when there are fewer than ``tasks`` of
    them each is cut into about ``tasks / m`` segments (whole tiles) so the GPU fills."""
    if n <= TILE:
        log2w = (-(-n // K) - 1).bit_length()
        return ScanPlan(log2w, 1, n, -(-m // (32 >> log2w)))
    nseg = 1 if m >= tasks else min(-(-tasks // m), -(-n // TILE))
    seg_len = _ceil_to(-(-n // nseg), TILE)
    nseg = -(-n // seg_len)
    return ScanPlan(5, nseg, seg_len, m * nseg)


@register(FAMILY, "warp_scan", backend="cuda", bytes_moved=walk_bytes_moved, rank=0)
def warp_scan(out: Any, params: WalkParams) -> Any:
    """Warp-cooperative product scan: a lane makes 8 consecutive values, a shuffle scan joins
    the lanes, a carry joins the tiles; stores staged in shared memory and coalesced.

    Performance: writes m*n elements in coalesced 128-byte rows of stores, at most SMs x 4
    blocks of 256 looping over warp tasks (:func:`scan_plan`). One launch; three when fewer
    than 4096 series longer than 256 values are cut into segments: pass 1 recomputes the random
    numbers of all but each series' last segment (no stores, m*nseg*8 bytes of totals), pass 2
    scans the totals, pass 3 writes. No host synchronisation. Differs from the sequential
    product by float64 rounding only (:func:`emulate_warp_scan` gives its exact bits).
    """
    import cupy

    m, n = out.shape
    plan = scan_plan(m, n)
    dev = cupy.cuda.Device().id
    walk = _walk_args(params)
    if plan.nseg > 1:
        prefix = cupy.empty(m * plan.nseg, dtype=np.float64)
        t1 = m * (plan.nseg - 1)
        _launch("walk_seg_totals", dev, t1, (prefix, np.uint64(n), *walk, np.uint64(plan.seg_len),
                                             np.uint64(plan.nseg), np.uint64(t1)))
        _launch("walk_seg_scan", dev, m, (prefix, np.uint64(m), np.uint64(plan.nseg)))
    else:
        prefix = _no_prefix(dev)
    _launch(f"walk_scan_write<{C_TYPE[out.dtype]}>", dev, plan.ntasks,
            (out, np.uint64(m), np.uint64(n), *walk, np.uint32(plan.log2w),
             np.uint64(plan.seg_len), np.uint64(plan.nseg), prefix, np.uint64(plan.ntasks)))
    return out


# ----------------------------------------------------------------------- the scan's order, in NumPy

def emulate_warp_scan(factors: np.ndarray, plan: ScanPlan) -> np.ndarray:
    """The float64 values ``warp_scan`` computes (before rounding to the output dtype) for whole
    series whose factors are the rows of ``factors`` (from ``walk.step_factors``; any subset of
    the series of an ``(m, n)`` walk, with ``plan = scan_plan(m, n)``), multiplying in the
    kernels' order: NumPy's float64 products round as the GPU's ``__dmul_rn`` does."""
    r, n = factors.shape
    ones = np.ones(r)
    if n <= TILE:  # one tile of w*K per series, carry 1.0
        x, _ = _tile_scan(_pad(factors, plan.width * K), plan.width, ones)
        return x[:, :n]
    nseg, seg_len = plan.nseg, plan.seg_len
    f = _pad(factors, nseg * seg_len).reshape(r * nseg, seg_len)  # rows: (series, segment)
    carry = np.ones(r * nseg)
    if nseg > 1:
        _, totals = _tile_scan(f, 32, carry)                    # pass 1 (last segment unused)
        u = np.ones((r, nseg))
        u[:, 1:] = totals.reshape(r, nseg)[:, :-1]
        prefix, _ = _tile_scan(_pad(u, TILE), 32, ones)          # pass 2
        carry = prefix[:, :nseg].reshape(r * nseg)
    x, _ = _tile_scan(f, 32, carry)                              # pass 3
    return x.reshape(r, nseg * seg_len)[:, :n]


def _pad(v: np.ndarray, multiple: int) -> np.ndarray:
    """``v`` with 1.0 appended to each row up to a multiple of ``multiple`` (the kernels' factor
    past the end of a series: exact, so it changes no product)."""
    cols = -(-v.shape[1] // multiple) * multiple
    if cols == v.shape[1]:
        return v
    out = np.ones((v.shape[0], cols))
    out[:, :v.shape[1]] = v
    return out


def _tile_scan(v: np.ndarray, w: int, carry: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``scan_tile`` of walk.cu over rows of tiles of ``w*K`` values, carried from ``carry``:
    (inclusive products, each row's final carry)."""
    rows, cols = v.shape
    tiles = cols // (w * K)
    p = np.cumprod(v.reshape(rows, tiles, w, K), axis=-1)    # lane running products
    incl = p[..., -1].copy()
    off = 1
    while off < w:                                           # __shfl_up_sync steps
        nxt = incl.copy()
        nxt[..., off:] = incl[..., :-off] * incl[..., off:]
        incl, off = nxt, 2 * off
    excl = np.ones_like(incl)
    excl[..., 1:] = incl[..., :-1]
    chain = np.cumprod(np.concatenate([carry[:, None], incl[..., -1]], axis=1), axis=1)
    x = (chain[:, :tiles, None] * excl)[..., None] * p
    return x.reshape(rows, cols), chain[:, tiles]


def scan_rtol(n: int, dtype: Any) -> float:
    """Relative tolerance of ``warp_scan`` against the sequential reference while the values
    stay normal floats (a walk that underflows towards 0, e.g. eps near 1 over many steps,
    leaves relative error meaningless). float32: one float32 rounding, 2**-23 (the float64
    values differ by far less, so their roundings differ by at most one ulp). float64: the two
    orders of multiplication round differently and the difference grows like a random walk of
    n roundings: 8 * sqrt(n) * 2**-53, five times the largest seen over the test shapes
    (1.6 * sqrt(n) * 2**-53; 3.4e-13 at n = 2**24, 2.8e-14 allowed at n = 1025)."""
    if np.dtype(dtype) == np.float32:
        return 2.0 ** -23
    return 8 * math.sqrt(n) * 2.0 ** -53

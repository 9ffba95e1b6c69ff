"""Launches of the ``int8_slices`` corrcoef variant (arithmetic and plan in ``slices.py``,
kernels in ``slices.cu``): the row statistics (one read-back, which also says whether every
series is valid), the choice of s, the split into int8 slices, and per block the level GEMMs
on cuBLAS (``cublasGemmEx``, int8 x int8 -> int32, through CuPy's binding) in row panels, each
followed by one combine launch.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from warplab.core.loader import defines, get_kernel
from warplab.families.corr.slices import (
    DIGITS,
    NOMINAL_SLICES,
    PANEL_ROWS,
    STATS,
    TARGETS,
    TOP,
    Choice,
    RowMaxima,
    SlicesPlan,
    apriori_maxima,
    choose_slices,
    panel_rows,
    panels,
    round_up,
    slices_error_bound,
)

SOURCE = Path(__file__).with_name("slices.cu")
DEFINES = {"SLICES_STATS_BLOCK": 256, "SLICES_SPLIT_BLOCK": 256, "SLICES_SPLIT_VEC": 8,
           "SLICES_COMBINE_TILE": 32, "SLICES_COMBINE_ROWS": 8, "SLICES_DIGITS": DIGITS,
           "SLICES_STATS": STATS}
_EXPRESSIONS = ("slices_row_stats", "slices_column_max", "slices_split", "slices_combine")
#: Precisions whose digit statistics run at once, with no a-priori read-back first: float32's
#: target (2^-19.5) lies 1.3 bits below the a-priori bound of its nominal 3 slices on random
#: walks (2^-18.2), so the a-priori choice is above nominal and the statistics would run anyway.
STATS_FIRST = frozenset({"float32"})
#: cuBLAS / CUDA enum values (cublas_api.h, library_types.h): the binding takes plain ints.
CUBLAS_OP_N, CUBLAS_OP_T = 0, 1
CUDA_R_8I, CUDA_R_32I = 3, 10
CUBLAS_COMPUTE_32I = 72
CUBLAS_GEMM_DEFAULT = -1
CUBLAS_POINTER_MODE_HOST = 0
_ONE, _ZERO = np.ones(1, np.int32), np.zeros(1, np.int32)  # alpha, beta (host pointer mode)
#: Rows of the stats grid at most (blocks loop over the rest); rows of the split grid (y).
MAX_ROW_BLOCKS, MAX_GRID_Y = 1 << 20, 65535


def _kernel(name: str) -> Any:
    return get_kernel(SOURCE, name, all_expressions=_EXPRESSIONS, options=defines(DEFINES))


def slices_available() -> tuple[bool, str]:
    """``(usable, why not)``: CuPy with cuBLAS and a GPU with int8 tensor cores (sm_75+)."""
    from warplab.core.device import cuda_available

    if not cuda_available():
        return False, "no usable CUDA GPU"
    import cupy

    if int(cupy.cuda.Device().compute_capability) < 75:
        return False, "int8 slices need int8 tensor cores (compute capability 7.5 or newer)"
    return True, ""


def _cublas() -> Any:
    try:
        from cupy_backends.cuda.libs import cublas
    except ImportError:  # older CuPy
        from cupy.cuda import cublas
    return cublas


def gemm_s8(m: int, n: int, k: int, a_ptr: int, lda: int, b_ptr: int, ldb: int, c_ptr: int,
            ldc: int) -> None:
    """cuBLAS "TN" int8 GEMM on the current stream: ``C = A^T B`` with A (k x m, lda) and B
    (k x n, ldb) column-major int8 and C (m x n, ldc) column-major int32, exact int32 sums
    (alpha 1, beta 0). For row-major X (n x k) and W (m x k): ``C^T = X W^T`` row-major with
    ``a = W``, ``b = X``. No synchronisation."""
    import cupy

    cublas = _cublas()
    handle = cupy.cuda.device.get_cublas_handle()
    cublas.setStream(handle, cupy.cuda.get_current_stream().ptr)
    mode = cublas.getPointerMode(handle)
    cublas.setPointerMode(handle, CUBLAS_POINTER_MODE_HOST)
    try:
        cublas.gemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, _ONE.ctypes.data, a_ptr,
                      CUDA_R_8I, lda, b_ptr, CUDA_R_8I, ldb, _ZERO.ctypes.data, c_ptr,
                      CUDA_R_32I, ldc, CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT)
    finally:
        cublas.setPointerMode(handle, mode)


def row_stats(z: Any, valid: Any, extent: Any = None) -> Any:
    """``slices.row_stats`` on the GPU: (M, STATS) float64, one block per row; with
    ``extent`` (``cuda.normalise_with_extent``'s) its max |z| and |z|_1 instead of a pass."""
    import cupy

    m, n = z.shape
    stats = cupy.empty((m, STATS), np.float64)
    _kernel("slices_row_stats")((min(m, MAX_ROW_BLOCKS),), (DEFINES["SLICES_STATS_BLOCK"],),
                                (z, valid, np.uint64(0) if extent is None else extent, stats,
                                 np.int64(m), np.int64(n)))
    return stats


def column_maxima(a: Any, valid: Any) -> Any:
    """(cols + 1,) float64 on the device: each column's maximum over the rows of ``a``
    (non-negative), then 1.0 when every ``valid`` else 0.0 (one launch, one block)."""
    import cupy

    m, cols = a.shape
    out = cupy.empty(cols + 1, np.float64)
    _kernel("slices_column_max")((1,), (DEFINES["SLICES_STATS_BLOCK"],),
                                 (a, valid, out, np.int64(m), np.int32(cols)))
    return out


def split(z: Any, c: Any, plan: SlicesPlan) -> tuple[Any, Any]:
    """The slices (F, R) of ``plan`` (int8, ``plan.rows x plan.ldq``; every byte written)."""
    import cupy

    f = cupy.empty((plan.rows, plan.ldq), np.int8)
    r = cupy.empty((plan.rows, plan.ldq), np.int8)
    vec, block = DEFINES["SLICES_SPLIT_VEC"], DEFINES["SLICES_SPLIT_BLOCK"]
    groups = plan.nc * plan.kc // vec
    _kernel("slices_split")((-(-groups // block), min(plan.rows, MAX_GRID_Y)), (block,),
                            (z, c, f, r, np.int64(plan.m), np.int64(plan.n),
                             np.int64(plan.rows), np.int32(plan.s), np.int64(plan.kc),
                             np.int64(plan.nc)))
    return f, r


def digit_maxima(z: Any, valid: Any, extent: Any) -> np.ndarray:
    """``slices.Choice.of``'s digits of some rows: the column maxima of their digit
    statistics and the validity flag (STATS + 1 values), read back."""
    return read_async(column_maxima(row_stats(z, valid, extent), valid))()


def read_async(a: Any) -> Callable[[], np.ndarray]:
    """Enqueue the copy of the small device array ``a`` into pinned host memory on the current
    stream; returns ``wait()``, which waits for that copy only (not for work launched after
    it) and gives the host array."""
    import cupy

    mem = cupy.cuda.alloc_pinned_memory(max(a.nbytes, 1))
    host = np.frombuffer(mem, a.dtype, a.size).reshape(a.shape)
    stream = cupy.cuda.get_current_stream()
    a.data.copy_to_host_async(mem.ptr, a.nbytes, stream)
    done = cupy.cuda.Event(block=False, disable_timing=True)
    done.record(stream)

    def wait() -> np.ndarray:
        done.synchronize()
        return host.copy()

    return wait


class Prepared:
    """One call's slices: statistics, s, scales, F and R. ``block`` as tiles.Engine asks.

    ``slices`` forces s (benchmarks, tests). ``extent``: the normalisation's per-row max |z|
    and |z|_1 ((M, 2) float64, ``cuda.normalise_with_extent``); with it s is first chosen from
    the a-priori bound (:func:`slices.apriori_maxima`), and the digit statistics run only when
    that choice is above ``NOMINAL_SLICES[precision]`` (they may lower it), or at once for the
    precisions of ``STATS_FIRST``. The split runs with the nominal s (or the forced one) while
    the maxima travel to the host, and again only when the choice differs.
    ``events``: set to a list to have each panel append ``(name, start, end)`` CUDA events
    around its GEMMs and its combine (benchmarks). ``choice``: s and the validity chosen over
    more rows than ``z`` (:class:`slices.Choice`, with ``extent``): no statistics, no
    read-back, the split at once.
    """

    def __init__(self, z: Any, valid: Any, precision: str, slices: int | None = None,
                 extent: Any = None, choice: Choice | None = None) -> None:
        import cupy

        self.xp, self.events = cupy, None
        m, n = z.shape
        if choice is not None:
            self.slices, self.all_valid, self.bound = choice.s, choice.all_valid, choice.bound
            self.plan, self.c = SlicesPlan.of(m, n, choice.s), extent[:, 0] / TOP
            self.f, self.r = split(z, self.c, self.plan)
            return
        light = extent is not None and slices is None and precision not in STATS_FIRST
        stats: Any = None if light else row_stats(z, valid, extent)
        wait = read_async(column_maxima(extent if light else stats, valid))
        c = extent[:, 0] / TOP if light else cupy.ascontiguousarray(stats[:, STATS - 2])
        guess = SlicesPlan.of(m, n, slices or NOMINAL_SLICES[precision])
        f, r = split(z, c, guess)  # the stats kernel's c either way (0 for an invalid row)
        host = wait()
        if light:
            self.maxima, self.all_valid = apriori_maxima(host[0] / TOP, host[1]), bool(host[2])
            self.slices = choose_slices(precision, n, self.maxima)
            if self.slices > NOMINAL_SLICES[precision]:  # the digit statistics may lower it
                host = digit_maxima(z, valid, extent)
                light = False
        if not light:
            self.maxima, self.all_valid = RowMaxima.of(host[:STATS]), bool(host[STATS])
            self.slices = slices or choose_slices(precision, n, self.maxima)
        self.bound = slices_error_bound(self.slices, n, self.maxima)
        if slices is None and self.bound > TARGETS[precision]:
            warnings.warn(f"corrcoef int8_slices: error bound {self.bound:.2g} at {DIGITS} "
                          f"slices, above the {precision} target {TARGETS[precision]:.2g}",
                          RuntimeWarning, stacklevel=3)
        self.plan, self.c = SlicesPlan.of(m, n, self.slices), c
        if self.plan != guess:
            del f, r
            f, r = split(z, c, self.plan)
        self.f, self.r = f, r

    def block(self, r0: int, r1: int, c0: int, c1: int, width: int | None = None,
              finish: bool = False) -> Any:
        """Raw coefficients of rows ``r0:r1`` against ``c0:c1`` (float64); a diagonal block
        whole, from its upper triangle (row panels against the columns at and right of them).
        ``finish``: clipped to [-1, 1] with 1 on the matrix diagonal, by the combine."""
        cupy, p = self.xp, self.plan
        sym = r0 == c0 and r1 == c1
        out = cupy.empty((r1 - r0, c1 - c0), np.float64)
        w = panel_rows(c1 - c0, p, PANEL_ROWS if width is None else width)
        for a, b, j0, j1 in panels(r0, r1, c0, c1, w):
            self._panel(out, a, b, j0, j1, r0, c0, sym, finish)
        return out

    def cross(self, other: Prepared) -> Any:
        """Finished coefficients (clipped; float64) of this call's rows against ``other``'s,
        two row chunks of one call split with one s: what :meth:`block` gives for
        those rows of the whole call, bit for bit (the same GEMMs and combine per element)."""
        cupy, ma, mb = self.xp, self.plan.m, other.plan.m
        out = cupy.empty((ma, mb), np.float64)
        c = cupy.concatenate([self.c, other.c])  # columns at ma + j: never on the diagonal
        w = panel_rows(mb, self.plan)
        for a in range(0, ma, w):
            self._panel(out, a, min(a + w, ma), 0, mb, 0, 0, False, True, other=other,
                        shift=ma, c=c)
        return out

    def _panel(self, out: Any, a: int, b: int, j0: int, j1: int, r0: int, c0: int,
               sym: bool, finish: bool, other: Prepared | None = None, shift: int = 0,
               c: Any = None) -> None:
        """Rows ``a:b`` (of F) against columns ``j0:j1`` (of ``other``'s R: this call's by
        default), written at ``(a - r0, j0 - c0)``; the combine reads the columns' scales at
        ``shift + j`` of ``c`` (this call's scales by default)."""
        cupy, p = self.xp, self.plan
        rows_p, cols_p = round_up(b - a), round_up(j1 - j0)
        prod = cupy.empty((p.planes, rows_p, cols_p), np.int32)
        fp, cp = self.f.data.ptr, prod.data.ptr
        rp = (self if other is None else other).r.data.ptr
        t0 = self._mark()
        for level in p.levels:
            for chunk in range(p.nc):
                fo, ro = p.offsets(level, chunk)
                plane = (level - 2) * p.nc + chunk
                gemm_s8(cols_p, rows_p, p.level_k(level), rp + j0 * p.ldq + ro, p.ldq,
                        fp + a * p.ldq + fo, p.ldq, cp + plane * rows_p * cols_p * 4, cols_p)
        t1 = self._mark()
        t, ty = DEFINES["SLICES_COMBINE_TILE"], DEFINES["SLICES_COMBINE_ROWS"]
        rows, cols = b - a, j1 - j0
        _kernel("slices_combine")(
            (-(-cols // t), -(-rows // t)), (t, ty),
            (prod, self.c if c is None else c, out, np.int64(rows_p * cols_p), np.int64(cols_p),
             np.int32(rows), np.int32(cols), np.int32(p.s), np.int32(p.nc), np.int64(a),
             np.int64(shift + j0),
             np.int64(out.shape[1]), np.int64(a - r0), np.int64(j0 - c0), np.int32(sym),
             np.int32(finish)))
        if self.events is not None:
            self.events += [("gemms", t0, t1), ("combine", t1, self._mark())]

    def _mark(self) -> Any:
        if self.events is None:
            return None
        e = self.xp.cuda.Event()
        e.record()
        return e

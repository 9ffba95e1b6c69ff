"""Launch plans of the corrcoef CUDA variants (kernels in ``corr.cu``, tensor-core Gram products
in ``gram.py``, int8 slices in ``slices_cuda.py``): ``tc_gram`` (the default on sm_80+),
``int8_slices``, ``tiled_smem`` and ``pairwise_direct``.

Every variant returns an engine (``tiles.Engine``) whose blocks the public call finishes (clip,
diagonal, NaN for constant series) and writes whole or tile by tile.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

from warplab.core.fastpath import read_small
from warplab.core.loader import defines, get_kernel
from warplab.core.registry import register
from warplab.families.corr.slices import MAX_N as SLICES_MAX_N
from warplab.families.corr.spec import (
    CorrProblem,
    corr_flops,
    direct_bytes,
    gram_bytes,
    slices_bytes,
)
from warplab.families.corr.tiles import mirror_upper
from warplab.families.reduce.axis import series_stats_rows

SOURCE = Path(__file__).with_name("corr.cu")
DEFINES = {"CORR_NORM_BLOCK": 256, "CORR_TILE": 16, "CORR_PAIR_BLOCK": 16}
#: Rows a block may span: grid y of the 2-D kernels holds at most 65535 tiles of 16.
MAX_BLOCK_ROWS = 65535 * 16
_C = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
_EXPRESSIONS = (*(f"corr_normalise_rows<{a}, {b}>" for a in ("float", "double")
                   for b in ("float", "double")),
                "corr_tiled_smem<float>", "corr_tiled_smem<double>", "corr_pairwise_direct",
                "corr_finish<float>", "corr_finish<double>")
MAX_GRID_Y = 65535


def _kernel(expression: str) -> Any:
    return get_kernel(SOURCE, expression, all_expressions=_EXPRESSIONS, options=defines(DEFINES))


@functools.lru_cache(maxsize=1)
def gram_ok() -> tuple[bool, str]:
    """``(usable, why not)`` for the tensor-core Gram products (``gram.py``, sm_80+)."""
    try:
        from warplab.families.corr.gram import gram_available
    except ImportError as exc:
        return False, f"the tensor-core Gram module is missing ({exc})"
    if not gram_available():
        return False, "tensor-core Gram products need a GPU of compute capability 8.0 or newer"
    return True, ""


@functools.lru_cache(maxsize=1)
def slices_ok() -> tuple[bool, str]:
    """``(usable, why not)`` for the int8 slices (cuBLAS int8 GEMMs, sm_75+)."""
    from warplab.families.corr.slices_cuda import slices_available

    return slices_available()


def work_dtype(precision: str) -> np.dtype:
    """dtype of the normalised rows: float64 for ``"float64"``, float32 otherwise."""
    return np.dtype(np.float64 if precision == "float64" else np.float32)


def normalise_rows(x: Any, out_dtype: np.dtype) -> tuple[Any, Any]:
    """``(z, valid)`` on the GPU: each row centred and divided by its centred norm (float64
    arithmetic, stored as ``out_dtype``); NaN rows and ``valid`` False for constant or
    non-finite series. One launch, one block per row, three passes over the row (the second and
    third mostly from cache). Needs N >= 1."""
    z, valid, _ = _normalise(x, out_dtype, False)
    return z, valid


def normalise_with_extent(x: Any) -> tuple[Any, Any, Any]:
    """``(z, valid, extent)``: :func:`normalise_rows` to float64, and per row ``max |z|`` and
    ``|z|_1`` ((M, 2) float64; 0 for an invalid row) from the same launch (the storing pass
    reduces them: no extra read)."""
    return _normalise(x, np.dtype(np.float64), True)


def _normalise(x: Any, out_dtype: np.dtype, extent: bool) -> tuple[Any, Any, Any]:
    import cupy

    if np.dtype(x.dtype) not in _C:
        x = x.astype(np.float64)
    x = cupy.ascontiguousarray(x)
    m, n = x.shape
    z = cupy.empty((m, n), out_dtype)
    valid = cupy.empty(m, dtype=bool)
    ext = cupy.empty((m, 2), np.float64) if extent else None
    k = _kernel(f"corr_normalise_rows<{_C[np.dtype(x.dtype)]}, {_C[np.dtype(out_dtype)]}>")
    k((min(m, 1 << 20),), (DEFINES["CORR_NORM_BLOCK"],),
      (x, z, valid, ext if extent else np.uint64(0), np.int64(m), np.int64(n)))
    return z, valid, ext


class _Engine:
    """The shared part: the array module, M, the validity of every series (on the device;
    ``all_valid`` reads it back when first asked) and the finishing of blocks."""

    def __init__(self, m: int, valid: Any) -> None:
        import cupy

        self.xp, self.m, self.valid = cupy, int(m), valid
        self._all_valid: bool | None = None

    @property
    def all_valid(self) -> bool:
        """Every series valid: the M flags read back once (one pinned copy and one
        synchronisation, at the first question)."""
        if self._all_valid is None:
            self._all_valid = bool(read_small(self.valid)[0].all())
        return self._all_valid

    def finish_block(self, b: Any, r0: int, c0: int) -> Any:
        """``tiles.finish`` on the device in one launch (``corr_finish``; float32 or float64
        blocks, the engines' only kinds): NaN for invalid series, 1 on the diagonal, the rest
        clipped to [-1, 1], in place (a contiguous copy first for strides the kernel cannot
        index). Needs no ``all_valid``: no synchronisation."""
        return _finish(b, self.valid, r0, c0)

    def cross(self, other: Any) -> Any:
        """The finished coefficients of this engine's series against ``other``'s (an engine
        of the same variant over other rows of the same call): the block the engine of both
        would compute off its diagonal (``chunks.py``, ``warplab.dask.corrcoef``)."""
        return self._finish_cross(self._cross(other), other)

    def _finish_cross(self, b: Any, other: Any) -> Any:
        """``finish_block`` of the block ``b`` of this engine's series against ``other``'s."""
        return _finish(b, self.xp.concatenate([self.valid, other.valid]), 0, self.m)

    def _cross(self, other: Any) -> Any:
        raise NotImplementedError


def _finish(b: Any, valid: Any, r0: int, c0: int) -> Any:
    """:meth:`_Engine.finish_block` with the validity of the series ``valid``."""
    import cupy

    rows, cols = b.shape
    item = b.itemsize
    if any(st % item for st in b.strides):
        b = cupy.ascontiguousarray(b)
    if rows and cols:
        grid = (min(-(-cols // DEFINES["CORR_NORM_BLOCK"]), 1 << 16), min(rows, MAX_GRID_Y))
        _kernel(f"corr_finish<{_C[np.dtype(b.dtype)]}>")(
            grid, (DEFINES["CORR_NORM_BLOCK"],),
            (b, valid, np.int64(rows), np.int64(cols), np.int64(b.strides[0] // item),
             np.int64(b.strides[1] // item), np.int64(r0), np.int64(c0)))
    return b


class TiledEngine(_Engine):
    """Normalised rows; blocks by ``corr_tiled_smem`` (float64 or float32 accumulation)."""

    def __init__(self, x: Any, precision: str) -> None:
        self.z, valid = normalise_rows(x, work_dtype(precision))
        super().__init__(x.shape[0], valid)

    def block(self, r0: int, r1: int, c0: int, c1: int) -> Any:
        sym = r0 == c0 and r1 == c1
        c = self._tiles(self.z[r0:r1], self.z[c0:c1], sym)
        return mirror_upper(c, self.xp) if sym else c

    def _cross(self, other: Any) -> Any:
        return self._tiles(self.z, other.z, False)

    def _tiles(self, zr: Any, zc: Any, sym: bool) -> Any:
        rows, cols = zr.shape[0], zc.shape[0]
        t = DEFINES["CORR_TILE"]
        c = (self.xp.zeros if sym else self.xp.empty)((rows, cols), self.z.dtype)
        k = _kernel(f"corr_tiled_smem<{_C[np.dtype(self.z.dtype)]}>")
        k((-(-cols // t), -(-rows // t)), (t, t),
          (zr, zc, c, np.int32(rows), np.int32(cols), np.int64(self.z.shape[1]),
           np.int32(sym)))
        return c


class DirectEngine(_Engine):
    """The raw rows in float64 with their means and norms (``series_stats``); blocks by
    ``corr_pairwise_direct``."""

    def __init__(self, x: Any, precision: str) -> None:
        import cupy

        self.x = cupy.ascontiguousarray(x, dtype=np.float64)
        self.mean, self.norm = series_stats_rows(self.x)
        # constant exactly when max == min (a rounded mean may leave a tiny non-zero norm)
        valid = cupy.isfinite(self.norm) & (self.x.max(axis=1) > self.x.min(axis=1))
        super().__init__(x.shape[0], valid)

    def block(self, r0: int, r1: int, c0: int, c1: int) -> Any:
        c = _direct(self.x, self.mean, self.norm, r0, r1, c0, c1)
        return c + c.T if r0 == c0 and r1 == c1 else c

    def _cross(self, other: Any) -> Any:
        cat = self.xp.concatenate
        return _direct(cat([self.x, other.x]), cat([self.mean, other.mean]),
                       cat([self.norm, other.norm]), 0, self.m, self.m, self.m + other.m)


def _direct(x: Any, mean: Any, norm: Any, r0: int, r1: int, c0: int, c1: int) -> Any:
    """``corr_pairwise_direct`` of rows ``r0:r1`` against ``c0:c1`` of ``x``."""
    import cupy

    rows, cols = r1 - r0, c1 - c0
    t = DEFINES["CORR_PAIR_BLOCK"]
    c = cupy.zeros((rows, cols), np.float64)
    _kernel("corr_pairwise_direct")(
        (-(-cols // t), -(-rows // t)), (t, t),
        (x, mean, norm, c, np.int64(x.shape[1]), np.int32(r0), np.int32(rows), np.int32(c0),
         np.int32(cols)))
    return c


class GramEngine(_Engine):
    """Normalised rows (float64 for precision ``"float64"``, float32 otherwise); blocks by the
    tensor-core ``gram`` (upper-triangle tiles only on diagonal blocks)."""

    def __init__(self, x: Any, precision: str) -> None:
        from warplab.families.corr.gram import gram

        self.gram, self.precision = gram, precision
        self.z, valid = normalise_rows(x, work_dtype(precision))
        super().__init__(x.shape[0], valid)

    def block(self, r0: int, r1: int, c0: int, c1: int) -> Any:
        if r0 == c0 and r1 == c1:
            return self.gram(self.z[r0:r1], precision=self.precision)
        return self.gram(self.z[r0:r1], self.z[c0:c1], precision=self.precision)

    def _cross(self, other: Any) -> Any:
        return self.gram(self.z, other.z, precision=self.precision)


class SlicesEngine(_Engine):
    """Normalised float64 rows split into int8 slices (``slices_cuda.Prepared``: s chosen
    from the rows' statistics); blocks by cuBLAS int8 GEMMs, upper-triangle panels only on
    diagonal blocks, mirrored by the combine, which also clips and sets the diagonal."""

    def __init__(self, x: Any, precision: str, choice: Any = None,
                 normalised: tuple[Any, Any, Any] | None = None) -> None:
        from warplab.families.corr.slices_cuda import Prepared

        z, valid, extent = normalise_with_extent(x) if normalised is None else normalised
        self.prep = Prepared(z, valid, precision, extent=extent, choice=choice)  # z not kept
        super().__init__(z.shape[0], valid)
        self._all_valid, self.slices = self.prep.all_valid, self.prep.slices

    def block(self, r0: int, r1: int, c0: int, c1: int) -> Any:
        return self.prep.block(r0, r1, c0, c1, finish=True)

    def cross(self, other: Any) -> Any:
        """:meth:`_Engine.cross` of two engines made with one s (``choice``): clipped by the
        combine, the finishing kernel only for invalid series."""
        b = self.prep.cross(other.prep)
        return b if self._all_valid and other._all_valid else self._finish_cross(b, other)

    def finish_block(self, b: Any, r0: int, c0: int) -> Any:
        """Blocks come clipped with their diagonal from the combine: only invalid series (known
        since the statistics' read-back) need the finishing kernel, for their NaNs."""
        return b if self._all_valid else super().finish_block(b, r0, c0)


def _fits(p: CorrProblem) -> bool:
    return p.m <= MAX_BLOCK_ROWS


def _tc_supports(p: CorrProblem) -> bool:
    return _fits(p) and gram_ok()[0]


@register("corrcoef", "tc_gram", backend="cuda", bytes_moved=gram_bytes, flops=corr_flops,
          supports=_tc_supports, rank=5)
def tc_gram(x: Any, precision: str) -> GramEngine:
    """Centre and normalise rows (own kernel), then their Gram matrix on tensor cores.

    ``float64``: float64 rows, FP64 DMMA (error about 1e-15 sqrt(N)); ``float32``: float32
    rows, 3xTF32 split (error about 1e-7 from rounding the rows, bound 2e-6); ``tf32``: one
    TF32 pass (error about 1e-3). Upper-triangle tiles only, mirrored. sm_80+.
    Performance: ``corr_flops`` on tensor cores; one normalisation launch; one sync.
    """
    return GramEngine(x, precision)


def _slices_supports(p: CorrProblem) -> bool:
    return _fits(p) and p.n <= SLICES_MAX_N and slices_ok()[0]


#: int8_slices is the automatic choice from SLICES_PREFER_M series of SLICES_PREFER_N values
#: up. Measured on the H100 (benchmarks/NOTES.md): it wins at 1024 x 8192 (0.68 vs
#: 1.42 ms float64), 2048 x 8192 and 4096 x 4096, and loses to tc_gram on series of 1024
#: values (2048 x 1024: 0.75 vs 0.47 ms; 4096 x 1024: 1.12 vs 0.94), where its fixed costs (a
#: read-back, the split, a GEMM per level and panel) weigh more than the short products.
SLICES_PREFER_M, SLICES_PREFER_N = 1024, 4096


def _slices_prefer(p: CorrProblem) -> bool:
    return p.m >= SLICES_PREFER_M and p.n >= SLICES_PREFER_N


@register("corrcoef", "int8_slices", backend="cuda", bytes_moved=slices_bytes, flops=corr_flops,
          supports=_slices_supports, prefer=_slices_prefer, rank=0)
def int8_slices(x: Any, precision: str) -> SlicesEngine:
    """Float64 normalised rows split error-free into s int8 slices, their products on int8
    tensor cores (cuBLAS GemmEx, exact int32), recombined in float64 (the Ozaki scheme). The
    default from ``SLICES_PREFER_M`` series of ``SLICES_PREFER_N`` values up (sm_75+).

    s is the smallest whose rigorous bound (``slices.slices_error_bound``) meets the
    precision's target (``slices.TARGETS``): 2^-33 (``float64``), 2^-19.5 (``float32``), 2^-10
    (``tf32``); 5, 3 and 2 for random walks of 8192 values: s (s + 1) / 2 slice products in s
    GEMMs per row panel. The bound first comes from the normalisation's row maxima and 1-norms
    alone; the digit statistics (one more pass) run only when that needs more slices than
    ``slices.NOMINAL_SLICES``. Performance: ``corr_flops`` counted (the int8 work is about
    s (s + 1) / 2 times that); the rows normalised (float64, written once), split (read once),
    the combine clips and writes the diagonal; one synchronisation.
    """
    return SlicesEngine(x, precision)


@register("corrcoef", "tiled_smem", backend="cuda", bytes_moved=gram_bytes, flops=corr_flops,
          supports=_fits, rank=10, seed=True)
def tiled_smem(x: Any, precision: str) -> TiledEngine:
    """The GPU lecture's 16 x 16 shared-memory tiles on normalised rows, upper triangle only.

    ``float64``: float64 rows and accumulation (error about 1e-15 sqrt(N)); ``float32`` and
    ``tf32``: float32 rows and accumulation (error at most (N + 4) 6e-8).
    Performance: ``corr_flops`` on the FP64 / FP32 lanes; each row read once per 16 columns.
    """
    return TiledEngine(x, precision)


@register("corrcoef", "pairwise_direct", backend="cuda", bytes_moved=direct_bytes,
          flops=corr_flops, supports=_fits, rank=90, seed=True)
def pairwise_direct(x: Any, precision: str) -> DirectEngine:
    """The Pearson report's steps 3-5: one thread per pair i < j, float64 numerator from the
    precomputed means and norms (``series_stats``), then the coefficient.

    Computes in float64 whatever the precision (error about 1e-15 N). The slow baseline.
    Performance: ``corr_flops``; every thread reads its two whole rows (from cache).
    """
    return DirectEngine(x, precision)

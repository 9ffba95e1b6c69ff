"""Gram matrices ``a @ b.T`` on tensor cores, the core of the Pearson matrix: with rows centred
and scaled to unit norm, ``gram(x)`` is the correlation matrix.

Three precisions (``GRAM_PRECISIONS``), all on ``mma.sync`` (sm_80+; kernels in ``gram.cu``,
launch plans in ``gram_cuda.py``):

* ``"float64"``: FP64 tensor cores (DMMA m8n8k4) with float64 accumulators; float32 input is
  widened on the way into the tensor cores, so every product is exact.
* ``"float32"``: 3xTF32: each value is split into a TF32 head and a TF32 tail; per 8-deep k
  step the three products tail*head + head*tail + head*head are summed by the tensor cores in
  float32 and the partial is then added into a float64 sum, so the coarse tensor-core
  accumulation never spans more than 24 terms.
* ``"tf32"``: one TF32 pass with float32 accumulators (inputs keep 10 mantissa bits).

:func:`gram_error_bound` states each mode's bound; :func:`gram_reference` emulates each mode's
input rounding in NumPy (float64 sums) for the CPU tests.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from warplab.core.device import cuda_available, device_errors
from warplab.core.errors import DeviceUnavailableError, InvalidTypeError, InvalidValueError
from warplab.families.corr import gram_cuda

__all__ = ["GRAM_PRECISIONS", "gram", "gram_available", "gram_error_bound", "gram_reference",
           "tf32_round"]

GRAM_PRECISIONS = ("float64", "float32", "tf32")
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_MAX_DIM = 2**31 - 129  # rows and k rounded up to a tile stay within the kernel's int


def gram_available() -> bool:
    """True when CuPy is usable and the current device has compute capability 8.0 or newer
    (``mma.sync`` with TF32 and FP64 operands, ``cp.async``)."""
    if not cuda_available():
        return False
    return gram_cuda.device_limits()[1] >= 80


def _check_precision(precision: str) -> None:
    if precision not in GRAM_PRECISIONS:
        raise InvalidValueError(f"unknown precision {precision!r}; choose one of {GRAM_PRECISIONS}")


def _check_operand(name: str, x: Any, cupy: Any) -> None:
    if not isinstance(x, cupy.ndarray):
        raise InvalidTypeError(f"gram: {name} must be a CuPy array, not {type(x).__name__}")
    if x.ndim != 2:
        raise InvalidValueError(f"gram: {name} must be 2-D (series x samples), got shape {x.shape}")
    if x.dtype not in _FLOATS:
        raise InvalidValueError(f"gram: {name} must be float32 or float64, got {x.dtype}")
    if not x.flags.c_contiguous:
        raise InvalidValueError(f"gram: {name} must be C-contiguous")
    if max(x.shape) > _MAX_DIM:
        raise InvalidValueError(f"gram: {name} has a dimension over {_MAX_DIM}: {x.shape}")


@device_errors
def gram(a: Any, b: Any = None, *, precision: str = "float64", out: Any = None,
         config: str = "default") -> Any:
    """``a @ b.T`` (``b`` None: ``a @ a.T``) on tensor cores.

    Args:
        a: C-contiguous CuPy array (Ma, N), float32 or float64.
        b: C-contiguous CuPy array (Mb, N) of ``a``'s dtype, or None for the symmetric case:
            only the tiles on and above the diagonal are computed (half the flops) and each is
            written to both halves, so the result is exactly symmetric.
        precision: ``"float64"`` (result float64), ``"float32"`` or ``"tf32"`` (result
            float32; float64 input is rounded to float32 first).
        out: optional C-contiguous CuPy array (Ma, Mb) of the result dtype; written, returned.
        config: the kernel build (``gram_cuda.CONFIGS``: tile, warps, DMMA shape, ring depth);
            every configuration keeps the precision's arithmetic and error bound.

    Returns:
        The (Ma, Mb) CuPy array; zeros when N == 0.

    Raises:
        ValueError: unknown precision or config, a config this device cannot run; operands
            not 2-D, not float32/float64, of different dtypes or N, not C-contiguous; ``out``
            of the wrong shape, dtype or layout.
        TypeError: an operand or ``out`` is not a CuPy array.
        DeviceUnavailableError: no CuPy, or a device older than sm_80.

    Error bounds (:func:`gram_error_bound`, per element, in units of ``|a_i| |b_j|``, the row
    norms): float64 ``2 N 2^-53``; float32 ``2^-19`` (1.9e-6); tf32 ``2^-10 + (N/8 + 1)
    2^-22``. The float32 and tf32 bounds assume each mma.sync sums within 2^-22 of the
    magnitudes it adds (Hopper truncates inside the MMA).

    Performance:
        2 Ma Mb N flops (symmetric: (M (M+1) / 2) 2N, up to a tile's rounding); one launch of
        ``gram_cuda.TILE``-square tiles: A and B read once per tile row / column of C (each
        input read M / 128 times, mostly from L2), C written once (symmetric: both halves).
        mma.sync per multiply-add: 1 (float64: m8n8k4; tf32: m16n8k8) or 3 (float32), the
        float32 mode adding 4 float64 additions per m16n8k8 tile and 8-deep k step. No host
        synchronisation; float64 input for the TF32 modes costs one conversion pass.
    """
    _check_precision(precision)
    gram_cuda.config_of(config)
    if not gram_available():
        raise DeviceUnavailableError("gram needs CuPy and a GPU of compute capability 8.0 or "
                                     "newer (tensor-core mma.sync)")
    import cupy

    _check_operand("a", a, cupy)
    if b is not None:
        _check_operand("b", b, cupy)
        if b.dtype != a.dtype:
            raise InvalidValueError(f"gram: a and b must have the same dtype, got {a.dtype} and "
                             f"{b.dtype}")
        if b.shape[1] != a.shape[1]:
            raise InvalidValueError(f"gram: a and b need the same number of columns, got {a.shape} "
                             f"and {b.shape}")
    ma, n = a.shape
    mb = ma if b is None else b.shape[0]
    res_dtype = np.dtype(np.float64 if precision == "float64" else np.float32)
    if out is None:
        out = cupy.empty((ma, mb), dtype=res_dtype)
    else:
        if not isinstance(out, cupy.ndarray):
            raise InvalidTypeError(f"gram: out must be a CuPy array, not {type(out).__name__}")
        if out.shape != (ma, mb) or out.dtype != res_dtype or not out.flags.c_contiguous:
            raise InvalidValueError(f"gram: out must be a C-contiguous {res_dtype} array of shape "
                             f"{(ma, mb)}, got {out.dtype} {out.shape}"
                             f"{'' if out.flags.c_contiguous else ' (not C-contiguous)'}")
    if ma == 0 or mb == 0:
        return out
    if n == 0:
        out.fill(0)
        return out
    if precision != "float64" and a.dtype != np.float32:
        a = a.astype(np.float32)
        b = None if b is None else b.astype(np.float32)
    sym = b is None
    pointers = (a.data.ptr,) if sym else (a.data.ptr, b.data.ptr)
    smem_limit, cc = gram_cuda.device_limits()
    p = gram_cuda.plan(precision, a.dtype, ma, mb, n, sym=sym, pointers=pointers,
                       smem_limit=smem_limit, config=config, cc=cc)
    return gram_cuda.launch(p, a, a if sym else b, out)


def tf32_round(x: Any) -> np.ndarray:
    """Round float32 values to TF32 as ``cvt.rna.tf32.f32`` does: 10 explicit mantissa bits,
    to nearest with ties away from zero; infinities and NaNs unchanged. Returns float32."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    bits = x.view(np.uint32)
    finite = (bits & 0x7F800000) != 0x7F800000
    rounded = ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).astype(np.uint32)
    return np.where(finite, rounded, bits).astype(np.uint32).view(np.float32)


def _split3(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    hi = tf32_round(x)
    return hi, tf32_round(x - hi)


def gram_reference(a: Any, b: Any = None, precision: str = "float64") -> np.ndarray:
    """NumPy emulation of :func:`gram`'s input rounding, summed in float64.

    float64: the inputs as float64; tf32: both operands rounded to TF32; float32: the 3xTF32
    split, ``hi*hi + hi*lo + lo*hi`` (the dropped ``lo*lo`` is below 2^-22 of each product).
    The TF32 modes read float64 input as float32, as the kernels do. Accepts NumPy or CuPy
    input; returns NumPy, float64 for ``"float64"``, else float32. It does not model the
    tensor cores' own accumulation rounding: :func:`gram_error_bound` bounds that.
    """
    _check_precision(precision)
    h_a = np.asarray(a.get() if hasattr(a, "get") else a)
    h_b = h_a if b is None else np.asarray(b.get() if hasattr(b, "get") else b)
    if h_a.ndim != 2 or h_b.ndim != 2 or h_a.shape[1] != h_b.shape[1]:
        raise InvalidValueError(f"gram_reference: need 2-D operands with equal columns, got "
                         f"{h_a.shape} and {h_b.shape}")
    if precision == "float64":
        return h_a.astype(np.float64) @ h_b.astype(np.float64).T
    a32, b32 = h_a.astype(np.float32), h_b.astype(np.float32)
    if precision == "tf32":
        c = tf32_round(a32).astype(np.float64) @ tf32_round(b32).astype(np.float64).T
    else:
        (ah, al), (bh, bl) = _split3(a32), _split3(b32)
        ah, al, bh, bl = (v.astype(np.float64) for v in (ah, al, bh, bl))
        c = ah @ bl.T + al @ bh.T + ah @ bh.T
    return c.astype(np.float32)


def gram_error_bound(precision: str, n: int, norm_a: Any, norm_b: Any) -> np.ndarray:
    """Bound on ``|gram(a, b)[i, j] - (a @ b.T)[i, j]|`` (exact products, exact sums) for rows
    of length ``n`` with Euclidean norms ``norm_a[i]``, ``norm_b[j]``: ``rel * outer(norm_a,
    norm_b)`` (Cauchy-Schwarz bounds the sum of |products| by the norms).

    ``rel``: float64 ``2 n 2^-53`` (float64 fma chains, exact inputs); float32 ``2^-19``: the
    split drops ``lo*lo`` and rounds the tails (3 2^-22), three MMAs per 8-deep step add at
    most 3 2^-22, the float64 sums and the final rounding to float32 2^-24; tf32 ``2^-10 +
    (n/8 + 1) 2^-22``: both inputs rounded to 10 bits, then n/8 chained float32 MMAs. The TF32
    terms assume each mma.sync sums within 2^-22 of the magnitudes it adds.
    """
    _check_precision(precision)
    if precision == "float64":
        rel = 2.0 * max(n, 1) * 2.0**-53
    elif precision == "float32":
        rel = 2.0**-19
    else:
        rel = 2.0**-10 + (n / 8 + 1) * 2.0**-22
    return rel * np.multiply.outer(np.asarray(norm_a, np.float64),
                                   np.asarray(norm_b, np.float64))

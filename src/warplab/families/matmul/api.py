"""Matrix product ``matmul(a, b)`` of two 2-D float32 / float64 arrays.

Variants: ``warplab.variants("matmul")``: the GPU lecture's ``naive`` and ``tiled_smem16``
kernels, register-tiled kernels (the default ``regtile_64x128_8x8`` for float32,
``regtile_64x64_4x4`` for float64) in ``_matmul_cuda``, and NumPy (``cpu.matmul``). The problem
and the cost models (``flops``, ``bytes_moved`` per variant, the lecture's flop-to-word
analysis) are in ``_matmul_spec``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from warplab.core import registry as _registry
from warplab.core.device import device_errors
from warplab.core.arrays import as_input, to_device, to_host
from warplab.core.outputs import check_out, cupy as _cupy
from warplab.core.scalar import empty
from warplab.families.matmul import record
from warplab.families.matmul.spec import DTYPES, MatmulProblem

#: Device calls through launch records (``record.py``); False: every call plans (main's path).
RECORDS = True


def result_dtype(a_dtype: Any, b_dtype: Any) -> np.dtype:
    """NumPy's result dtype of ``a @ b`` for float32 / float64 operands; ``TypeError`` else."""
    for dt in (np.dtype(a_dtype), np.dtype(b_dtype)):
        if dt not in DTYPES:
            raise TypeError(f"matmul supports float32 and float64 arrays, got dtype {dt}")
    return np.result_type(a_dtype, b_dtype)




@device_errors
def matmul(a: Any, b: Any, *, out: Any = None, variant: str | None = None,
           device: str | None = None) -> Any:
    """The matrix product ``a @ b`` of an ``m x k`` and a ``k x n`` array, like ``np.matmul``.

    Args:
        a, b: 2-D float32 or float64 arrays of any layout: NumPy, CuPy, torch or anything with
            ``__cuda_array_interface__`` / DLPack. Mixed dtypes give float64, as NumPy.
        out: C-contiguous array of shape ``(m, n)`` and the result dtype to write into (NumPy
            for host operands, CuPy when an operand is on the GPU).
        variant: a registered variant (``warplab.variants("matmul")``); default: the fastest
            that supports the problem.
        device: ``"cuda"`` or ``"cpu"``; default automatic (``WARPLAB_DEVICE`` overrides).

    Returns:
        ``(m, n)`` array of the result dtype: NumPy when both operands are on the host, CuPy
        when either is on the GPU (``out`` when given). ``k == 0`` gives zeros, as NumPy.

    Raises:
        TypeError: a dtype other than float32 / float64.  ValueError: operands that are not
        2-D, inner dimensions that differ (the message names both shapes), a bad ``out``, an
        unknown variant or one that does not support the problem.

    Performance:
        ``2 m n k`` flops; bytes per the variant's cost model (``_matmul_spec``). One kernel
        launch. Host operands are copied to the GPU and the result back (synchronising);
        device operands: no host synchronisation. Non-contiguous operands, or operands of the
        other dtype, are copied first. Two C-contiguous CuPy operands of one dtype (no
        ``out``/``variant``/``device``): a cached launch record, one allocation and one launch.
    """
    if RECORDS and out is None and variant is None and device is None:
        c = record.matmul(a, b)  # two contiguous CuPy operands: a cached launch
        if c is not None:
            return c
    in_a, in_b = as_input(a), as_input(b)
    x, y = in_a.array, in_b.array
    if x.ndim != 2 or y.ndim != 2:
        raise ValueError(f"matmul needs two 2-D arrays, got shapes {tuple(x.shape)} and "
                         f"{tuple(y.shape)}")
    dtype = result_dtype(x.dtype, y.dtype)
    (m, k), n = x.shape, y.shape[1]
    if y.shape[0] != k:
        raise ValueError(f"matmul: shapes {tuple(x.shape)} and {tuple(y.shape)} are not "
                         f"aligned: {k} (columns of a) != {y.shape[0]} (rows of b)")
    on_device = in_a.on_device or in_b.on_device
    check_out(out, (m, n), dtype, on_device, device_why="an operand is on the GPU")
    backend = _registry.pick_backend("matmul", device, variant, on_device)
    v = _registry.choose("matmul", backend, MatmulProblem(m, n, k, dtype, on_device), variant)
    _registry.ran(v)
    if backend == "cpu":
        c = np.empty((m, n), dtype) if out is None or on_device else out
        mine = None if out is None or on_device else c
        _run(v, _operand(to_host(x), dtype, mine), _operand(to_host(y), dtype, mine), c)
        if not on_device:
            return c
        if out is None:
            return to_device(c)
        out.set(c)
        return out
    mine = out if out is not None and on_device else None
    c = mine if mine is not None else empty((m, n), dtype)
    _run(v, _operand(to_device(x), dtype, mine), _operand(to_device(y), dtype, mine), c)
    if on_device:
        return c
    return c.get(out=out) if out is not None else c.get()


def _operand(arr: Any, dtype: np.dtype, out: Any) -> Any:
    """``arr`` as a C-contiguous array of ``dtype`` that does not overlap the caller's ``out``
    (None: the result is a fresh allocation, which nothing overlaps; a contiguous operand of
    ``dtype`` then passes as it is, without the overlap test)."""
    if out is None and arr.dtype == dtype and arr.flags.c_contiguous:
        return arr
    xp = np if isinstance(arr, np.ndarray) else _cupy()
    arr = xp.ascontiguousarray(arr.astype(dtype, copy=False))
    return arr.copy() if out is not None and xp.may_share_memory(arr, out) else arr


def _run(v: _registry.Variant, a: Any, b: Any, c: Any) -> None:
    """``c = a @ b`` by variant ``v``; zeros without a launch when ``k == 0``."""
    if c.size == 0:
        return
    if a.shape[1] == 0:
        c.fill(0)
        return
    v.fn(a, b, c)


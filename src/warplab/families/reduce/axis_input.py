"""The host side of a CUDA axis variant (``axis_cuda``, ``axis_cuda_k2``): the native dtypes the
kernels take and the dtypes they return, the 2-D device view of an input and the conversion of
other dtypes, and :func:`run`, which calls a variant's kernel function on them.

A cuda variant is called as ``fn(x2d, job)``: ``x2d`` a 2-D device view of a native dtype (int32,
int64, float32, float64) whose rows are contiguous (``strides[1] == itemsize``) and evenly spaced,
``job`` an :class:`~warplab.families.reduce.axis_spec.AxisJob` whose ``out`` is the dtype the kernel
writes; it returns a 1-D CuPy array with one result per kept element (2 per kept element, means
then norms, for the internal op ``"stats"``). :func:`run` builds ``x2d`` from any input
(:func:`as_2d`) and converts other dtypes (:func:`to_native`).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from warplab.core.errors import InvalidValueError
from warplab.families.reduce.axis_spec import AxisJob, Plan2D

C_TYPE = {np.dtype(np.int32): "int", np.dtype(np.int64): "long long",
          np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
NATIVE = tuple(C_TYPE)
_I64, _F64 = np.dtype(np.int64), np.dtype(np.float64)
_SIGN = np.int64(-(1 << 63))


def kernel_dtypes(op: str, t: np.dtype) -> tuple[str, np.dtype]:
    """(C accumulator type, result dtype) of the kernels for ``op`` on native ``t``.

    Performance: host arithmetic only (as ``axis_cuda``'s plan helpers)."""
    fl = t.kind == "f"
    if op == "sum":
        return ("double", t) if fl else ("long long", _I64)
    if op == "mean":
        return "double", (t if fl else _F64)
    if op in ("min", "max"):
        return C_TYPE[t], t
    return "Mom", (t if fl else _F64)


def _ld(x2d: Any) -> int:
    """Elements between consecutive rows of a 2-D view with contiguous rows."""
    rows, cols = x2d.shape
    if cols > 1 and x2d.strides[1] != x2d.itemsize:
        raise InvalidValueError("the kernels need contiguous rows (strides[1] == itemsize)")
    return x2d.strides[0] // x2d.itemsize if rows > 1 else cols


def as_2d(x: Any, axes: tuple[int, ...], plan: Plan2D) -> Any:
    """The 2-D device array ``plan`` describes: a strided view of ``x`` (no copy) when
    ``plan.view``, else a contiguous copy with the reduced axes last.

    Performance: a view costs nothing; the copy is one extra pass (reads and writes the whole
    input, one CuPy launch)."""
    import cupy

    if plan.view:
        isz = x.itemsize
        return cupy.lib.stride_tricks.as_strided(x, (plan.rows, plan.cols), (plan.ld * isz, isz))
    kept = [d for d in range(x.ndim) if d not in axes]
    return cupy.ascontiguousarray(x.transpose(kept + list(axes))).reshape(plan.rows, plan.cols)


def to_native(x2d: Any, op: str, dtype: np.dtype) -> tuple[Any, Callable[[Any], Any]]:
    """(``x2d`` in a dtype the kernels take, what turns their result back into ``dtype``'s).

    int32/int64/float32/float64 pass through. One conversion pass (a C-contiguous copy) for
    bool/int8/int16/uint8/uint16 (to int32), uint32 (to int64), float16 (to float32; to float64
    for ``"stats"``, whose float16 results are float64) and uint64 mean/var/std (to float64).
    uint64 sums reinterpret the bits as int64 (two's complement sums wrap identically, no
    pass); uint64 min/max flip the sign bit (one pass) so that signed order is unsigned order,
    and flip it back in the result. Works for NumPy arrays too (the CPU tests check the
    mappings).

    Performance: none for native dtypes and uint64 sums; otherwise one elementwise pass that
    reads the input and writes a 4- or 8-byte copy (one CuPy launch), plus a cast of the
    results for min/max.
    """
    ident: Callable[[Any], Any] = lambda r: r  # noqa: E731
    if dtype in NATIVE:
        return x2d, ident
    if dtype == np.uint64:
        if op == "sum":
            return x2d.view(_I64), lambda r: r.view(np.uint64)
        if op in ("min", "max"):
            return (x2d.view(_I64) ^ _SIGN), lambda r: (r ^ _SIGN).view(np.uint64)
        return x2d.astype(_F64, order="C"), ident
    t: np.dtype
    if dtype == np.uint32:
        t = _I64
    elif dtype == np.float16:  # "stats" returns float64 (series_stats_rows): a float64 kernel
        t = _F64 if op == "stats" else np.dtype(np.float32)
    else:
        t = np.dtype(np.int32)
    back = (lambda r: r.astype(dtype)) if op in ("min", "max") else ident
    return x2d.astype(t, order="C"), back


def run(kernel_fn: Callable[[Any, AxisJob], Any], x: Any, plan: Plan2D, job: AxisJob) -> Any:
    """Run a variant's kernel function on device array ``x`` (non-empty): the 2-D view or copy,
    dtype conversion, the kernel, the result in ``job.out`` with one element per kept element.

    Performance: the variant's launches plus the extra passes of :func:`as_2d` (non-view
    layouts) and :func:`to_native` (non-native dtypes); a final cast only where the kernel's
    result dtype differs from NumPy's (float16 results, narrow ``dtype=``)."""
    x2 = as_2d(x, job.axes, plan)
    xn, back = to_native(x2, job.op, job.dtype)
    t = np.dtype(xn.dtype)
    r = back(kernel_fn(xn, job._replace(dtype=t, out=kernel_dtypes(job.op, t)[1])))
    return r.astype(job.out, copy=False)

"""The short path of axis reductions and ``series_stats`` on device input: the launch record.

A call such as ``warplab.mean(x, axis=1)`` on a CuPy array decides the same things every time
for the same (op, dtype, shape, strides, base alignment, axis, keepdims, ddof, device): the
axes and their checks, the result's dtype and shape, the 2-D view (``axis.plan_2d``), the
variant, the kernel and its launch geometry (``axis_cuda.rows_launch`` / ``cols_launch``).
The first call builds a :class:`Record` of those decisions in the ``reduce.axis`` plan cache
(``core/fastpath.py``); later calls with the same key look it up and only allocate the result
(``axis_cuda._empty``, in its final shape: the kernels write one contiguous run; a 0-d one
becomes a ``DeviceScalar``, ``core/scalar.py``, as the full path's) and launch.

What the record takes: a CuPy array (exactly ``cupy.ndarray``) of a dtype the kernels read
natively (int32, int64, float32, float64) with a layout that is a 2-D view (no copy), at least
one element, ``axis`` None, an int or a tuple of ints, ``keepdims`` a bool, ``ddof`` an int or
a float, and no ``dtype=``/``variant=``/``device=``/``out=``. Everything else, and every call
the full path would reject, is marked in the cache as "full path" (or not cached when its
checks raise) and takes :func:`~warplab.families.reduce.axis.reduce_axis`, which raises what
it always raised. The key holds the types that decide validity (``ddof=True`` never matches
``ddof=1``; ``axis=1.0`` is not an int), never data values.
"""
from __future__ import annotations

import math
import sys
from typing import Any, NamedTuple

import numpy as np

from warplab.core import fastpath, registry as _registry
from warplab.core.scalar import RESULT_TYPES, as_scalar, halves
from warplab.families.reduce import axis_cuda
from warplab.families.reduce.axis import (FAMILY, F64, OPS, AxisProblem, Plan2D, check_ddof, normalize_axes, plan_2d,
                   result_dtype)

_RECORDS = fastpath.PlanCache("reduce.axis")


class Record(NamedTuple):
    """A cached call: the ``variant`` it reports, the kernel ``launch``, the result's ``shape``
    and ``dtype`` (``series_stats``: ``shape`` is (2 M,) and ``split`` M)."""

    variant: Any
    launch: axis_cuda.Launch
    shape: tuple
    dtype: np.dtype
    split: int


def _plain_axis(axis: Any) -> bool:
    t = type(axis)
    return axis is None or t is int or (t is tuple and all(type(i) is int for i in axis))


def reduce(a: Any, op: str, axis: Any, keepdims: Any, ddof: Any) -> Any:
    """``reduce_axis(a, op, axis, keepdims=keepdims, ddof=ddof)`` through the launch record, or
    None when this call takes the full path (module docstring).

    Performance: on a hit a key of the array's metadata, one dict lookup, one allocation, one
    launch (split and columns plans: their partials too); no synchronisation. A hit makes no
    closure and enters no helper frame for a launch without partials (issue 15: host time)."""
    cupy = sys.modules.get("cupy")
    if cupy is None or (type(a) is not cupy.ndarray and type(a) not in RESULT_TYPES) \
            or op not in OPS or not _plain_axis(axis) \
            or (keepdims is not True and keepdims is not False) \
            or (type(ddof) is not int and type(ddof) is not float):
        return None
    key = (op, a.dtype, a.shape, a.strides, a.data.ptr % 16 == 0, axis, keepdims, ddof,
           cupy.cuda.runtime.getDevice())
    rec = _RECORDS.get(key)
    if rec is None:
        rec = _RECORDS.record(key, lambda: _build(a, op, axis, keepdims, ddof))
    if not rec:  # None: the full path (raises there); False: cached as the full path's
        return None
    _registry.ran(rec.variant)
    out = axis_cuda._empty(rec.shape, rec.dtype)
    go = rec.launch
    if go.partials is None:
        go.go(a, *go.mid, out, *go.tail)
    else:
        axis_cuda.fire(go, a, out)
    return out if rec.shape else as_scalar(out)


def series_stats(x: Any) -> tuple[Any, Any] | None:
    """``series_stats_rows(x)`` of a 2-D CuPy array through the launch record, or None (the
    full path). Performance: as :func:`reduce` (one allocation of 2 M results, one launch)."""
    cupy = sys.modules.get("cupy")
    if cupy is None or (type(x) is not cupy.ndarray and type(x) not in RESULT_TYPES):
        return None
    key = ("stats", x.dtype, x.shape, x.strides, x.data.ptr % 16 == 0,
           cupy.cuda.runtime.getDevice())
    rec = _RECORDS.record(key, lambda: _build_stats(x))
    if rec is None:
        return None
    _registry.ran(rec.variant)
    out = axis_cuda._empty(rec.shape, rec.dtype)
    axis_cuda.fire(rec.launch, x, out)
    return halves(out, rec.split)


def _launch(plan: Plan2D, aligned: bool, op: str, t: np.dtype, ddof: float) -> Any:
    """The kernel launch the cuda variant of ``plan``'s layout makes (``axis_cuda``)."""
    ld = plan.ld if plan.rows > 1 else plan.cols
    if plan.layout == "rows":
        return axis_cuda.rows_launch(plan.rows, plan.cols, ld, aligned, op, t, ddof, plan.rows)
    return axis_cuda.cols_launch(plan.rows, plan.cols, ld, aligned, op, t, ddof, plan.cols)


def _native(a: Any) -> np.dtype | None:
    t = np.dtype(a.dtype)
    return t if t in axis_cuda.NATIVE and a.size else None


def _build(a: Any, op: str, axis: Any, keepdims: bool, ddof: Any) -> Record | bool | None:
    """The record of a call, False for a call the full path runs (other dtypes, layouts that
    need a copy, another default variant), None when the full path raises (nothing cached)."""
    t = _native(a)
    try:
        fd = check_ddof(op, ddof)
        axes = normalize_axes(axis, a.ndim)
    except (TypeError, ValueError, IndexError):
        return None
    n = math.prod(a.shape[d] for d in axes)
    if op in ("var", "std") and fd >= n:
        return None
    if t is None:
        return False
    out = result_dtype(op, t)
    plan = plan_2d(tuple(a.shape), tuple(a.strides), a.itemsize, axes)
    if axis_cuda.kernel_dtypes(op, t)[1] != out or not plan.view:
        return False
    v = _registry.choose(FAMILY, "cuda", AxisProblem(plan.rows, plan.cols, plan.layout, op, t,
                                                     True))
    if v.name not in ("rows_adaptive", "columns"):
        return False
    shape = tuple(1 if d in axes else s for d, s in enumerate(a.shape)) if keepdims else \
        tuple(s for d, s in enumerate(a.shape) if d not in axes)
    return Record(v, _launch(plan, a.data.ptr % 16 == 0, op, t, fd), shape, out, 0)


def _build_stats(x: Any) -> Record | bool:
    t = _native(x)
    if t is None or x.ndim != 2:
        return False
    plan = plan_2d(tuple(x.shape), tuple(x.strides), x.itemsize, (1,))
    out = np.dtype(np.float32) if t == np.float32 else F64
    if not plan.view or axis_cuda.kernel_dtypes("stats", t)[1] != out:
        return False
    v = _registry.get(FAMILY, "rows_adaptive" if plan.layout == "rows" else "columns")
    m = x.shape[0]
    return Record(v, _launch(plan, x.data.ptr % 16 == 0, "stats", t, 0.0), (2 * m,), out, m)

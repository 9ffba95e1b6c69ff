"""What NumPy's reductions along axes mean, shared by every part of the ``reduce_axis``
family: result dtypes, dtype and ``ddof`` checks, axis normalisation, the 2-D view the cuda
variants see (:func:`plan_2d`), the cost model, empty inputs and the result's delivery.

Semantics are NumPy's: result dtype and shape, ``keepdims``, axis normalisation and its errors,
empty slices (sum 0; mean/var/std NaN with NumPy's RuntimeWarning; min/max ``ValueError``), NaN
propagating through min/max. Deliberate differences, all documented where they apply:

* float16/float32 sums, means and variances accumulate in float64 (NumPy: pairwise in the input
  type, float32 for float16), so warplab is the more accurate of the two;
* ``var``/``std`` with ``ddof >= N`` (N the reduced length, N > 0) raise ``ValueError`` where
  NumPy returns inf/nan with a "Degrees of freedom <= 0 for slice" warning;
* ``var``/``std`` take only a floating ``dtype=`` (NumPy also accepts integers and truncates).

Shapes: the cuda variants see the input as a 2-D view (:func:`plan_2d`): layout ``"rows"``
(reduce each row of a rows x cols view) or ``"cols"`` (reduce each column); an input that is
neither is copied first, transposed so the reduced axes come last.
"""
from __future__ import annotations

import itertools
import math
import numbers
import operator
from typing import Any, NamedTuple

import numpy as np

from warplab.core.arrays import to_device, to_host
from warplab.core.errors import InvalidTypeError, InvalidValueError

try:
    from numpy.exceptions import AxisError
except ImportError:  # NumPy < 1.25
    AxisError = np.AxisError  # type: ignore[attr-defined,misc]

FAMILY = "reduce_axis"
OPS = ("sum", "mean", "min", "max", "var", "std")
F64 = np.dtype(np.float64)


class AxisProblem(NamedTuple):
    """What dispatch and the cost model see: the 2-D view (``rows`` x ``cols``), which of its
    axes is reduced (``layout`` ``"rows"``: each row; ``"cols"``: each column), the op, the
    element dtype (after ``dtype=``) and whether the input lives on the device."""

    rows: int
    cols: int
    layout: str
    op: str
    dtype: np.dtype
    on_device: bool

    @property
    def outputs(self) -> int:
        """Number of results (kept elements)."""
        return self.rows if self.layout == "rows" else self.cols


class AxisJob(NamedTuple):
    """What a variant needs besides the data: ``op`` (a kernel may also get ``"stats"``), the
    element ``dtype`` it reads, the result dtype ``out`` it returns, ``ddof``, the reduced
    ``axes`` of the original array (the NumPy variant) and the 2-D ``layout`` (cuda)."""

    op: str
    dtype: np.dtype
    out: np.dtype
    ddof: float
    axes: tuple[int, ...]
    layout: str


class Plan2D(NamedTuple):
    """How an array is seen as 2-D: ``layout``, the view's ``rows`` x ``cols``, ``ld`` (elements
    between consecutive rows of the view) and ``view`` (False: copy it first, see
    :func:`plan_2d`)."""

    layout: str
    rows: int
    cols: int
    ld: int
    view: bool


def result_dtype(op: str, dtype: Any, dtype_arg: Any = None) -> np.dtype:
    """NumPy's result dtype of ``np.<op>(x, dtype=dtype_arg)`` for elements of ``dtype``
    (sums of bool/small ints: the default int, of small uints: the default uint; means and
    variances of integers: float64; float16 stays float16). Performance: host only."""
    dt = np.dtype(dtype)
    if dtype_arg is not None and op not in ("min", "max"):
        return np.dtype(dtype_arg)
    if op in ("min", "max"):
        return dt
    if op == "sum":
        if dt.kind in "bi":
            return np.dtype(np.int_) if dt.itemsize <= np.dtype(np.int_).itemsize else dt
        if dt.kind == "u":
            return np.dtype(np.uint) if dt.itemsize <= np.dtype(np.uint).itemsize else dt
        return dt
    return F64 if dt.kind in "biu" else dt


def check_dtype(dtype: Any, what: str = "input") -> np.dtype:
    """``dtype`` if NumPy can sum it (bool, ints, uints, float16/32/64), else ``TypeError``
    (complex: "complex input is not supported"). Performance: host only."""
    dt = np.dtype(dtype)
    if dt.kind == "c":
        raise InvalidTypeError(f"complex {what} is not supported (dtype {dt})")
    if dt.kind not in "biuf" or dt.itemsize > 8:
        raise InvalidTypeError(f"unsupported {what} dtype {dt}: reductions take bool, int8..int64, "
                        "uint8..uint64, float16, float32 and float64")
    return dt


def normalize_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """NumPy's axis normalisation: None (every axis), an int or a tuple of ints, negative
    counted from the end. Returns the sorted reduced axes.

    Raises:
        AxisError: an axis out of range (a ``ValueError`` and ``IndexError``, as NumPy).
        ValueError: a duplicate axis ("duplicate value in 'axis'").
        TypeError: a non-integer axis.

    Performance: host only.
    """
    if axis is None:
        return tuple(range(ndim))
    items = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    out = []
    for a in items:
        i = operator.index(a)
        if not -ndim <= i < ndim:
            raise AxisError(i, ndim)
        out.append(i % ndim)
    if len(set(out)) != len(out):
        raise InvalidValueError("duplicate value in 'axis'")
    return tuple(sorted(out))


def _run_stride(dims: list[tuple[int, int]]) -> int | None:
    """The element stride (bytes) of dims (size, stride), all sizes > 1, if they collapse into
    one evenly strided run in C order with positive strides; None otherwise."""
    if not dims:
        return 0
    for (_, s0), (n1, s1) in itertools.pairwise(dims):
        if s1 <= 0 or s0 != s1 * n1:
            return None
    return dims[-1][1] if dims[-1][1] > 0 else None


def plan_2d(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int,
            axes: tuple[int, ...]) -> Plan2D:
    """How the cuda variants see an array reduced over ``axes`` (sorted) as 2-D.

    ``"rows"`` when the reduced axes collapse into one contiguous run (stride one element) and
    the kept axes into one evenly strided run (the trailing axes of a C-contiguous array, the
    leading ones of a Fortran-ordered one, ``x[::2, :]`` reduced over axis 1...): view
    (kept, reduced) with ``ld`` the kept stride. ``"cols"`` when the kept axes are the
    contiguous run and the reduced ones evenly strided (the leading axes of a C-contiguous
    array, axis 0): view (reduced, kept). Anything else (reduced axes not adjacent, other
    strides, negative or zero strides) gets ``view=False``: the caller copies the array with the
    reduced axes last (one extra read and write of the input) and uses ``"rows"``.

    Performance: host arithmetic on the shape and strides only.
    """
    kept = [d for d in range(len(shape)) if d not in axes]
    m = math.prod(shape[d] for d in kept)
    n = math.prod(shape[d] for d in axes)
    red = _run_stride([(shape[d], strides[d]) for d in axes if shape[d] != 1])
    kep = _run_stride([(shape[d], strides[d]) for d in kept if shape[d] != 1])
    if red in (0, itemsize) and kep is not None and kep % itemsize == 0 and (
            m == 1 or kep >= n * itemsize):
        return Plan2D("rows", m, n, kep // itemsize if m > 1 else n, True)
    if m > 1 and kep == itemsize and red is not None and red % itemsize == 0 and (
            n == 1 or red >= m * itemsize):
        return Plan2D("cols", n, m, red // itemsize if n > 1 else m, True)
    return Plan2D("rows", m, n, n, False)


def axis_bytes_moved(problem: AxisProblem) -> int:
    """The family's cost model (every variant's yardstick): each input element read once, each
    result written once: ``rows * cols * itemsize + outputs * result_itemsize``. Variants that
    copy or convert first (non-view layouts, converted dtypes, ``k2_basic``'s padded scratch)
    move more; GB/s is measured against this. Performance: host arithmetic only."""
    out = result_dtype(problem.op, problem.dtype)
    return (problem.rows * problem.cols * np.dtype(problem.dtype).itemsize
            + problem.outputs * out.itemsize)


def check_ddof(op: str, ddof: Any) -> float:
    """``ddof`` as a float; ``TypeError`` for a non-number or ``ddof`` of an op other than
    var/std."""
    if isinstance(ddof, bool) or not isinstance(ddof, numbers.Real):
        raise InvalidTypeError(f"ddof must be a real number, got {ddof!r}")
    if op not in ("var", "std") and ddof != 0:
        raise InvalidTypeError(f"ddof= applies to var and std only, not {op}")
    return float(ddof)


def deliver(r: Any, shape: tuple[int, ...], out: np.dtype, on_device: bool) -> Any:
    """Shape the result and hand it back on the caller's side (a NumPy scalar for a 0-d host
    result, as NumPy)."""
    if on_device:
        if isinstance(r, (np.ndarray, np.generic)):
            r = to_device(np.asarray(r, dtype=out))
        return r.reshape(shape)
    r = np.asarray(to_host(r), dtype=out).reshape(shape)
    return out.type(r[()]) if r.ndim == 0 else r


def empty_result(job: AxisJob, shape: tuple[int, ...]) -> np.ndarray:
    """An empty input (no data to move): NumPy itself on zeros of the shape, so that results,
    warnings ("Mean of empty slice", "Degrees of freedom <= 0 for slice") and errors
    ("zero-size array to reduction operation minimum which has no identity") are NumPy's."""
    z = np.zeros(shape, dtype=job.dtype)
    ax = None if len(job.axes) == len(shape) else job.axes
    if job.op == "sum":
        r = np.sum(z, axis=ax, dtype=job.out)
    elif job.op == "mean":
        r = np.mean(z, axis=ax)
    elif job.op in ("min", "max"):
        r = (np.min if job.op == "min" else np.max)(z, axis=ax)
    else:
        r = (np.var if job.op == "var" else np.std)(z, axis=ax, ddof=job.ddof)
    return np.asarray(r).astype(job.out, copy=False)


def rows_acc(dt: np.dtype) -> np.dtype:
    """warplab's sum accumulator: float64 for floats, int64 for bool/ints, uint64 for uints."""
    return F64 if dt.kind == "f" else np.dtype(np.uint64 if dt.kind == "u" else np.int64)

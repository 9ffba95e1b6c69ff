"""Reductions: ``sum``, ``min``, ``max``, ``mean``, ``var``, ``std`` and ``reduce(a, op)``,
over the whole array and along axes.

Variants: ``warplab.variants("reduce")`` (whole array: the reduction lecture's eight kernels,
the GPU lecture's single-pass global synchronisation, the default ``persistent_vec`` and
NumPy) and ``warplab.variants("reduce_axis")`` (along axes). Every call runs through the
family's planned path (``plan.py``): key, plan (decided once per key), run.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from warplab.core.errors import InvalidTypeError, InvalidValueError
from warplab.families.reduce.plan import call


def reduce(a: Any, op: str, *, axis: Any = None, dtype: Any = None, out: Any = None,
           keepdims: bool = False, ddof: Any = 0, variant: str | None = None,
           device: str | None = None) -> Any:
    """``np.<op>(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims)`` for ``op`` in
    ``"sum"``, ``"min"``, ``"max"``, ``"mean"``, ``"var"``, ``"std"`` (``ddof=`` for the last
    two).

    Two registry families run it. The whole-array reduction (``"reduce"``) takes
    ``axis=None`` without ``keepdims`` for sum/min/max/mean of int32, int64, float32 and
    float64; everything else, and any variant of the ``"reduce_axis"`` family (the Pearson
    report's ``k2_*`` kernels among them), goes to the reductions along axes
    (``axis.reduce_axis``'s semantics: NumPy's for every numeric dtype and axis).

    Args:
        a: numeric data of any shape and layout: NumPy, CuPy, torch or anything with
            ``__cuda_array_interface__`` / DLPack.
        op: the reduction.
        axis: None (every element), an int or a tuple of ints, as NumPy.
        dtype: NumPy's ``dtype=``: the input is cast to it first (one extra pass).
        out: an array of the result's shape on the caller's side (NumPy for host input, CuPy
            for device input); the result is cast into it with NumPy's ``same_kind`` rule and
            ``out`` is returned.
        keepdims: keep the reduced axes with length one.
        ddof: var/std divide by ``N - ddof`` (``ddof >= N`` raises ``ValueError``).
        variant: a registered variant (``warplab.variants("reduce")`` or
            ``warplab.variants("reduce_axis")``); default: the fastest.
        device: ``"cuda"`` or ``"cpu"``; default automatic (``WARPLAB_DEVICE`` overrides).

    Returns:
        NumPy's result dtype and shape: a NumPy scalar (or array) for host input, a CuPy array
        for device input. Float sums, means and variances accumulate in float64 (int32 sums
        give int64, float32 stays float32, integer means float64). A 0-d result on the GPU is
        a ``DeviceScalar`` (``core/scalar.py``): a ``cupy.ndarray`` whose ``float()``,
        ``int()``, ``bool()`` and ``item()`` read it at the cost of one copy; an array result
        the kernels write is a ``DeviceArray``, whose ``get()`` does the same for up to 64 KiB.

    Raises:
        TypeError: an unsupported dtype (complex, object).  ValueError: unknown op or
        variant; min/max of an empty array (as NumPy); a bad axis; ``ddof >= N``.
        DeviceOutOfMemoryError: the GPU ran out of memory.

    Performance:
        Reads every element once (the default variant: one launch, no host synchronisation
        for device input). Non-contiguous input is copied first. Host input: one H2D copy and
        one synchronising read of the result. A warm call on device input is the plan's key,
        one lookup and the launch (``plan.py``): call latency is what small inputs pay.
    """
    r = call(a, op, axis, dtype, keepdims, ddof, variant, device)
    return r if out is None else _into(out, r)


def _into(out: Any, r: Any) -> Any:
    """Copy the result ``r`` into the caller's ``out`` (NumPy's rules: same shape, same side,
    ``same_kind`` casting); returns ``out``."""
    on_device = hasattr(r, "__cuda_array_interface__")
    if on_device != hasattr(out, "__cuda_array_interface__") or not hasattr(out, "shape"):
        side = "a CuPy array (the input is on the GPU)" if on_device else "a NumPy array"
        raise InvalidTypeError(f"out must be {side}, got {type(out).__name__}")
    shape = tuple(getattr(r, "shape", ()))
    if tuple(out.shape) != shape:
        raise InvalidValueError(f"out has shape {tuple(out.shape)}, the result has shape {shape}")
    if not np.can_cast(np.dtype(r.dtype), out.dtype, casting="same_kind"):
        raise InvalidTypeError(f"cannot cast the result from {np.dtype(r.dtype)} to out's dtype "
                        f"{out.dtype} with casting rule 'same_kind'")
    out[...] = r
    return out


def sum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,  # noqa: A001
        keepdims: bool = False, *, variant: str | None = None, device: str | None = None) -> Any:
    """Sum (``np.sum``): NumPy's result dtype; float sums accumulate in float64."""
    r = call(a, "sum", axis, dtype, keepdims, 0, variant, device)
    return r if out is None else _into(out, r)


def min(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False,  # noqa: A001
        *, variant: str | None = None, device: str | None = None) -> Any:
    """Smallest element (``np.min``); NaN if any is NaN; ``ValueError`` when empty."""
    r = call(a, "min", axis, None, keepdims, 0, variant, device)
    return r if out is None else _into(out, r)


def max(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False,  # noqa: A001
        *, variant: str | None = None, device: str | None = None) -> Any:
    """Largest element (``np.max``); NaN if any is NaN; ``ValueError`` when empty."""
    r = call(a, "max", axis, None, keepdims, 0, variant, device)
    return r if out is None else _into(out, r)


def mean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
         *, variant: str | None = None, device: str | None = None) -> Any:
    """Arithmetic mean (``np.mean``), accumulated in float64; NaN with a RuntimeWarning for an
    empty slice. ``mean(x, axis=1)`` of an M x N array is the per-series mean."""
    r = call(a, "mean", axis, dtype, keepdims, 0, variant, device)
    return r if out is None else _into(out, r)


def var(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0,
        keepdims: bool = False, *, variant: str | None = None, device: str | None = None) -> Any:
    """Variance (``np.var``): the mean squared deviation, divided by ``N - ddof``; float64
    accumulation of shifted sums in one pass on the GPU (see ``axis_cuda``)."""
    r = call(a, "var", axis, dtype, keepdims, ddof, variant, device)
    return r if out is None else _into(out, r)


def std(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0,
        keepdims: bool = False, *, variant: str | None = None, device: str | None = None) -> Any:
    """Standard deviation (``np.std``): the square root of :func:`var`."""
    r = call(a, "std", axis, dtype, keepdims, ddof, variant, device)
    return r if out is None else _into(out, r)

"""Reductions: ``sum``, ``min``, ``max``, ``mean`` and ``reduce(a, op)`` over the whole array.

Variants: ``warplab.variants("reduce")``: the reduction lecture's eight kernels, the GPU
lecture's single-pass global synchronisation, the default ``persistent_vec`` (cuda, in
``_reduce_cuda``) and NumPy (``cpu.reduce``).
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ...core import registry as _registry
from ...core.device import device_errors
from ...core.arrays import as_input, flat_contiguous, is_flat, to_device, to_host
from .spec import ReduceProblem, spec



@device_errors
def reduce(a: Any, op: str, *, axis: Any = None, dtype: Any = None, variant: str | None = None,
           device: str | None = None) -> Any:
    """Reduce all elements of ``a`` with ``op`` (``"sum"``, ``"min"``, ``"max"``, ``"mean"``).

    Args:
        a: int32, int64, float32 or float64 data of any shape and layout: NumPy, CuPy, torch or
            anything with ``__cuda_array_interface__`` / DLPack.
        op: the reduction.
        axis: only ``None`` (every element) is supported so far.
        dtype: NumPy's ``dtype=``: the input is cast to it first (one extra pass).
        variant: a registered variant (``warplab.variants("reduce")``); default: the fastest.
        device: ``"cuda"`` or ``"cpu"``; default automatic (``WARPLAB_DEVICE`` overrides).

    Returns:
        A NumPy scalar for host input, a 0-d CuPy array for device input, of NumPy's result
        dtype (int32 sums give int64, float32 stays float32, integer means float64).

    Raises:
        TypeError: an unsupported dtype.  ValueError: unknown op or variant; min/max of an
        empty array (as NumPy).  NotImplementedError: ``axis`` other than ``None``.

    Performance:
        Reads every element once (the default variant: one launch, no host synchronisation
        for device input). Non-contiguous input is copied first. Host input: one H2D copy and
        one synchronising read of the result. A flat CuPy array without keywords skips
        dispatch (``_device_default``): call latency is what small inputs pay.
    """
    if axis is not None:
        raise NotImplementedError(f"axis={axis!r} is not supported yet: warplab reductions "
                                  "reduce every element (axis=None)")
    if dtype is None and variant is None and device is None:
        r = _device_default(a, op)
        if r is not None:
            return r
    inp = as_input(a)
    x = flat_contiguous(inp.array)
    if dtype is not None:  # as NumPy: elements converted to dtype, the result of that dtype
        x = x.astype(np.dtype(dtype), copy=False)
    s = spec(op, x.dtype)
    n = x.size
    backend = _registry.pick_backend("reduce", device, variant, inp.on_device)
    v = _registry.choose("reduce", backend, ReduceProblem(n, op, s.dtype, inp.on_device), variant)
    _registry.ran(v)
    if n == 0:
        r = _empty(s, inp.on_device)
    elif backend == "cpu":
        r = v.fn(to_host(x), s)
        r = to_device(np.asarray(r, dtype=s.out)) if inp.on_device else r
    else:
        r = v.fn(x if inp.on_device else to_device(x), s)
        r = r if inp.on_device else s.out.type(r.get()[()])
    if dtype is not None and op in ("sum", "mean") and r.dtype != x.dtype:
        # integer sums wrap the same whether accumulated in int64 or in the narrower dtype
        r = r.astype(x.dtype) if inp.on_device else x.dtype.type(r)
    return r


def _device_default(a: Any, op: str) -> Any:
    """The default call's short path: a non-empty, flat CuPy array and no keywords run on the
    cuda backend's preferred variant when that one supports every problem (what dispatch
    would choose), without building a problem or probing the input. None where it does not
    apply; the full path then decides (and raises what it raises)."""
    cupy = sys.modules.get("cupy")
    if cupy is None or type(a) is not cupy.ndarray or not a.size or not is_flat(a):
        return None
    v = _registry.preferred_for_all("reduce", "cuda")
    if v is None:
        return None
    _registry.ran(v)
    return v.fn(a, spec(op, a.dtype))


def _empty(s: Any, on_device: bool) -> Any:
    if s.op in ("min", "max"):
        name = "minimum" if s.op == "min" else "maximum"
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    r = s.out.type(0) if s.op == "sum" else s.out.type(np.nan)
    if s.op == "mean":
        import warnings

        warnings.warn("Mean of empty slice.", RuntimeWarning, stacklevel=3)
    return to_device(np.asarray(r)) if on_device else r


def sum(a: Any, axis: Any = None, dtype: Any = None, *, variant: str | None = None,  # noqa: A001
        device: str | None = None) -> Any:
    """Sum of all elements (NumPy's result dtype; float sums accumulate in float64)."""
    return reduce(a, "sum", axis=axis, dtype=dtype, variant=variant, device=device)


def min(a: Any, axis: Any = None, *, variant: str | None = None,  # noqa: A001
        device: str | None = None) -> Any:
    """Smallest element; NaN if any element is NaN; ``ValueError`` for an empty array."""
    return reduce(a, "min", axis=axis, variant=variant, device=device)


def max(a: Any, axis: Any = None, *, variant: str | None = None,  # noqa: A001
        device: str | None = None) -> Any:
    """Largest element; NaN if any element is NaN; ``ValueError`` for an empty array."""
    return reduce(a, "max", axis=axis, variant=variant, device=device)


def mean(a: Any, axis: Any = None, dtype: Any = None, *, variant: str | None = None,
         device: str | None = None) -> Any:
    """Arithmetic mean (accumulated in float64; NaN with a RuntimeWarning when empty)."""
    return reduce(a, "mean", axis=axis, dtype=dtype, variant=variant, device=device)

"""Reductions: ``sum``, ``min``, ``max``, ``mean`` and ``reduce(a, op)`` over the whole array.

Variants: ``warplab.variants("reduce")``: the reduction lecture's eight kernels, the GPU
lecture's single-pass global synchronisation, the default ``persistent_vec`` (cuda, in
``_reduce_cuda``) and NumPy (``cpu.reduce``).
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np

from warplab.core import fastpath, registry as _registry
from warplab.core.device import device_errors
from warplab.core.scalar import RESULT_TYPES, as_scalar
from warplab.core.arrays import as_input, flat_contiguous, to_device, to_host
from warplab.families.reduce import axis_fast, streamed
from warplab.families.reduce.spec import DTYPES, OPS, ReduceProblem, spec



@device_errors
def reduce(a: Any, op: str, *, axis: Any = None, dtype: Any = None, out: Any = None,
           keepdims: bool = False, ddof: Any = 0, variant: str | None = None,
           device: str | None = None) -> Any:
    """``np.<op>(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims)`` for ``op`` in
    ``"sum"``, ``"min"``, ``"max"``, ``"mean"``, ``"var"``, ``"std"`` (``ddof=`` for the last
    two); see :func:`_reduce` for the arguments. ``out``: an array of the result's shape on the
    caller's side (NumPy for host input, CuPy for device input); the result is cast into it
    with NumPy's ``same_kind`` rule and ``out`` is returned. A 0-d result on the GPU is a
    ``DeviceScalar`` (``core/scalar.py``): a ``cupy.ndarray`` whose ``float()``, ``int()``,
    ``bool()`` and ``item()`` read it at the cost of one copy; an array result the kernels
    write is a ``DeviceArray``, whose ``get()`` does the same for up to 64 KiB."""
    r = _reduce(a, op, axis=axis, dtype=dtype, keepdims=keepdims, ddof=ddof, variant=variant,
                device=device)
    return as_scalar(r) if out is None else _into(out, r)


def _into(out: Any, r: Any) -> Any:
    """Copy the result ``r`` into the caller's ``out`` (NumPy's rules: same shape, same side,
    ``same_kind`` casting); returns ``out``."""
    on_device = hasattr(r, "__cuda_array_interface__")
    if on_device != hasattr(out, "__cuda_array_interface__") or not hasattr(out, "shape"):
        side = "a CuPy array (the input is on the GPU)" if on_device else "a NumPy array"
        raise TypeError(f"out must be {side}, got {type(out).__name__}")
    shape = tuple(getattr(r, "shape", ()))
    if tuple(out.shape) != shape:
        raise ValueError(f"out has shape {tuple(out.shape)}, the result has shape {shape}")
    if not np.can_cast(np.dtype(r.dtype), out.dtype, casting="same_kind"):
        raise TypeError(f"cannot cast the result from {np.dtype(r.dtype)} to out's dtype "
                        f"{out.dtype} with casting rule 'same_kind'")
    out[...] = r
    return out


def _reduce(a: Any, op: str, *, axis: Any = None, dtype: Any = None, keepdims: bool = False,
            ddof: Any = 0, variant: str | None = None, device: str | None = None) -> Any:
    """The reduction behind :func:`reduce` (everything but ``out``).

    Two families run it. The whole-array reduction (this module; registry family
    ``"reduce"``) takes ``axis=None`` without ``keepdims`` for sum/min/max/mean of int32, int64,
    float32 and float64; everything else, and any variant of the ``"reduce_axis"`` family (the
    Pearson report's ``k2_*`` kernels among them), goes to
    :func:`warplab.families.reduce.axis.reduce_axis`, which has NumPy's semantics for every
    numeric dtype and axis.

    Args:
        a: numeric data of any shape and layout: NumPy, CuPy, torch or anything with
            ``__cuda_array_interface__`` / DLPack.
        op: the reduction.
        axis: None (every element), an int or a tuple of ints, as NumPy.
        dtype: NumPy's ``dtype=``: the input is cast to it first (one extra pass).
        keepdims: keep the reduced axes with length one.
        ddof: var/std divide by ``N - ddof`` (``ddof >= N`` raises ``ValueError``).
        variant: a registered variant (``warplab.variants("reduce")`` or
            ``warplab.variants("reduce_axis")``); default: the fastest.
        device: ``"cuda"`` or ``"cpu"``; default automatic (``WARPLAB_DEVICE`` overrides).

    Returns:
        NumPy's result dtype and shape: a NumPy scalar (or array) for host input, a CuPy array
        (0-d for a scalar) for device input. Float sums, means and variances accumulate in
        float64 (int32 sums give int64, float32 stays float32, integer means float64).

    Raises:
        TypeError: an unsupported dtype (complex, object).  ValueError: unknown op or
        variant; min/max of an empty array (as NumPy); a bad axis; ``ddof >= N``.

    Performance:
        Reads every element once (the default variant: one launch, no host synchronisation
        for device input). Non-contiguous input is copied first. Host input: one H2D copy and
        one synchronising read of the result. A C-contiguous CuPy array without keywords
        skips dispatch (``_device_default``): call latency is what small inputs pay.
    """
    if dtype is None and variant is None and device is None and axis is None \
            and not keepdims and ddof == 0 and op in OPS:
        r = _device_default(a, op)
        if r is not None:
            return r
    if variant is not None and not _registry.has("reduce", variant) \
            and not _registry.has("reduce_axis", variant):
        names = _registry.variants("reduce") + _registry.variants("reduce_axis")
        raise ValueError(f"unknown reduce variant {variant!r}; valid: "
                         f"{', '.join(v.name for v in names)}")
    if axis is not None or keepdims or ddof != 0 or op not in OPS or \
            (variant is not None and not _registry.has("reduce", variant)):
        if dtype is None and variant is None and device is None:
            r = axis_fast.reduce(a, op, axis, keepdims, ddof)
            if r is not None:
                return r
        return streamed.axis(a, op, axis, dtype=dtype, keepdims=keepdims, ddof=ddof,
                             variant=variant, device=device)
    inp = as_input(a)
    if np.dtype(dtype if dtype is not None else inp.array.dtype) not in DTYPES:
        return streamed.axis(inp.array, op, None, dtype=dtype, variant=variant, device=device)
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
        r = v.fn(x, s) if inp.on_device else streamed.whole(v.fn, x, s)
        r = r if inp.on_device else s.out.type(fastpath.read_small(r)[0][()])
    if dtype is not None and op in ("sum", "mean") and r.dtype != x.dtype:
        # integer sums wrap the same whether accumulated in int64 or in the narrower dtype
        r = r.astype(x.dtype) if inp.on_device else x.dtype.type(r)
    return r


#: (op, dtype, device id, stream key, registry generation) -> (variant, runner) of the
#: whole-array short path: the runner reduces a C-contiguous array (for the default
#: ``persistent_vec`` its plan on that device and stream); both None where the default does
#: not take every problem or the dtype is not one the kernels read. The generation changes
#: when a variant registers, so a new default is never missed.
_SHORT = fastpath.PlanCache("reduce.short")


def _device_default(a: Any, op: str) -> Any:
    """The default call's short path: a non-empty, C-contiguous CuPy array (of any shape: it
    is reduced as the flat array the full path would make of it) and no keywords run on the
    cuda backend's preferred variant when that one supports every problem (what dispatch
    would choose), without building a problem or probing the input. None where it does not
    apply; the full path then decides (and raises what it raises).

    Performance (issue 15): on a hit, one key of (op, dtype, device, stream, registry
    generation) and one dict lookup, then the runner: a result taken from a slab and one
    launch."""
    cupy = sys.modules.get("cupy")
    if cupy is None or (type(a) is not cupy.ndarray and type(a) not in RESULT_TYPES) \
            or not a._c_contiguous or not a.size:
        return None
    stream, skey = fastpath.current_stream()
    key = (op, a.dtype, cupy.cuda.runtime.getDevice(), skey, _registry.generation)
    hit = _SHORT.get(key)
    if hit is None:
        hit = _SHORT.put(key, _short_plan(op, a.dtype))
    if hit[1] is None:
        return None
    _registry.ran(hit[0])
    return hit[1](a)


def _short_plan(op: str, dtype: np.dtype) -> tuple:
    """The ``_SHORT`` entry of ``op`` on ``dtype`` on the current device and stream."""
    v = _registry.preferred_for_all("reduce", "cuda") if dtype in DTYPES else None
    if v is None:
        return None, None
    s = spec(op, dtype)
    short = getattr(v.fn, "short_plan", None)
    return v, (short(s) if short is not None else lambda x: v.fn(x, s))


def _short(a: Any, op: str, axis: Any, keepdims: Any, ddof: Any) -> Any:
    """A public call with no ``dtype``/``out``/``variant``/``device`` straight into the short
    paths :func:`reduce` would take (``_device_default`` or ``axis_fast.reduce``), without its
    frames; None where they do not apply (or ran out of device memory: :func:`reduce` then
    raises its ``DeviceOutOfMemoryError``), and the caller goes through :func:`reduce`."""
    try:
        if axis is None and keepdims is False and ddof == 0 and op in OPS:
            return _device_default(a, op)
        if axis is not None or keepdims or ddof != 0 or op not in OPS:
            return axis_fast.reduce(a, op, axis, keepdims, ddof)
    except MemoryError:
        pass
    return None


def _empty(s: Any, on_device: bool) -> Any:
    if s.op in ("min", "max"):
        name = "minimum" if s.op == "min" else "maximum"
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    r = s.out.type(0) if s.op == "sum" else s.out.type(np.nan)
    if s.op == "mean":
        import warnings

        warnings.warn("Mean of empty slice.", RuntimeWarning, stacklevel=3)
    return to_device(np.asarray(r)) if on_device else r


def sum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,  # noqa: A001
        keepdims: bool = False, *, variant: str | None = None, device: str | None = None) -> Any:
    """Sum (``np.sum``): NumPy's result dtype; float sums accumulate in float64."""
    if dtype is None and out is None and variant is None and device is None:
        r = _short(a, "sum", axis, keepdims, 0)
        if r is not None:
            return r
    return reduce(a, "sum", axis=axis, dtype=dtype, out=out, keepdims=keepdims,
                  variant=variant, device=device)


def min(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False,  # noqa: A001
        *, variant: str | None = None, device: str | None = None) -> Any:
    """Smallest element (``np.min``); NaN if any is NaN; ``ValueError`` when empty."""
    if out is None and variant is None and device is None:
        r = _short(a, "min", axis, keepdims, 0)
        if r is not None:
            return r
    return reduce(a, "min", axis=axis, out=out, keepdims=keepdims, variant=variant,
                  device=device)


def max(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False,  # noqa: A001
        *, variant: str | None = None, device: str | None = None) -> Any:
    """Largest element (``np.max``); NaN if any is NaN; ``ValueError`` when empty."""
    if out is None and variant is None and device is None:
        r = _short(a, "max", axis, keepdims, 0)
        if r is not None:
            return r
    return reduce(a, "max", axis=axis, out=out, keepdims=keepdims, variant=variant,
                  device=device)


def mean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
         *, variant: str | None = None, device: str | None = None) -> Any:
    """Arithmetic mean (``np.mean``), accumulated in float64; NaN with a RuntimeWarning for an
    empty slice. ``mean(x, axis=1)`` of an M x N array is the per-series mean."""
    if dtype is None and out is None and variant is None and device is None:
        r = _short(a, "mean", axis, keepdims, 0)
        if r is not None:
            return r
    return reduce(a, "mean", axis=axis, dtype=dtype, out=out, keepdims=keepdims,
                  variant=variant, device=device)


def var(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0,
        keepdims: bool = False, *, variant: str | None = None, device: str | None = None) -> Any:
    """Variance (``np.var``): the mean squared deviation, divided by ``N - ddof``; float64
    accumulation of shifted sums in one pass on the GPU (see ``axis_cuda``)."""
    return reduce(a, "var", axis=axis, dtype=dtype, out=out, keepdims=keepdims, ddof=ddof,
                  variant=variant, device=device)


def std(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0,
        keepdims: bool = False, *, variant: str | None = None, device: str | None = None) -> Any:
    """Standard deviation (``np.std``): the square root of :func:`var`."""
    return reduce(a, "std", axis=axis, dtype=dtype, out=out, keepdims=keepdims, ddof=ddof,
                  variant=variant, device=device)

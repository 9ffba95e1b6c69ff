"""The reduction family's one planned path: a call's key, its plan, and the run.

Every reduction (``warplab.sum/min/max/mean/var/std/reduce``, ``reduce_axis``,
``series_stats``) goes through :func:`call`. It forms a key from what decides the call's
work, looks the plan up in the ``reduce.plan`` cache (``core/fastpath.py``) and runs it. On a
miss :func:`build` (whole-array plans here, along-axis and per-series plans in
``plan_axis.py``) validates the call, chooses backend and variant through the registry
(``registry.pick_backend`` / ``registry.choose``, the only place the family decides them),
plans the launch and publishes the plan. A call that raises raises from :func:`build`, and
nothing is stored for it.

The key: the family (``"reduce"`` for the public calls, ``"axis"`` for ``reduce_axis``,
``"stats"`` for ``series_stats``), the op, the input's dtype, shape and strides, the options
as given (``axis``, ``keepdims``, ``ddof``, ``dtype``, ``variant``, ``device``: a different
spelling of the same option is another plan, never a wrong one), where the input lives
(device input: 16-byte alignment of its base, device id and stream; host input: the
``WARPLAB_DEVICE`` override, read per call) and the registry's generation (a variant
registered later takes the next call). Options of other types than the plain ones (an
``np.int64`` axis, a list of axes, ``keepdims=1``, ``ddof=True``...) form no key: such a call
is planned per call and nothing is stored (``ddof=True`` must not hit ``ddof=1``'s plan).
``out=`` is not part of the plan: the public functions copy the result into it.

A plan is ``(variant, run)`` (under the one-axis key ``(variant, run, takes_stream)``: whether
``run`` is a planned launch, ``run(array, stream)``, that takes the stream handle the key
read): the variant noted for ``warplab.record_variants()`` (None where a call inside the run
notes its own) and ``run(array)``, which does what depends on the data:
dtype conversions, copies of layouts the kernels cannot read, the host round trip, streaming
of large host input (its size threshold read per call), warnings of empty slices.

Performance (a warm call on device input): the key (a dozen fields, one device and one stream
query; for the whole of a C-contiguous array without options five: op, dtype, device, stream,
the registry's generation, as the flat reduction reads any shape; for one int axis of a
C-contiguous array without other options nine: op, axis, dtype, shape, strides, the base's
16-byte alignment, device, stream, generation), one dict lookup, then the
run: a whole-array reduction takes a 0-d result from a slab and makes one prepared launch
(``cuda._VecPlan``); an axis reduction or ``series_stats`` on a 2-D view takes its result
from the slab of small results of the device and stream (up to 2 KiB; else one
allocation) and makes one prepared launch (``plan_axis.Record``).
"""
from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from warplab.core import fastpath, overrides, registry as _registry
from warplab.core.arrays import as_input, flat_contiguous, to_device, to_host
from warplab.core.device import device_oom
from warplab.core.errors import InvalidValueError
from warplab.core.scalar import RESULT_TYPES, as_scalar
from warplab.families.reduce import plan_axis, streamed
from warplab.families.reduce.axis_spec import FAMILY as AXIS
from warplab.families.reduce.spec import DTYPES, OPS, ReduceProblem, ReduceSpec, spec

#: family, op, dtype, shape, strides, options, where, registry generation -> (variant, run)
PLANS = fastpath.PlanCache("reduce.plan")

Plan = tuple  # (Variant | None, Callable[[Any], Any])


def call(a: Any, op: Any, axis: Any = None, dtype: Any = None, keepdims: Any = False,
         ddof: Any = 0, variant: str | None = None, device: str | None = None,
         family: str = "reduce") -> Any:
    """Run the reduction ``op`` of ``a`` through its plan (module docstring): the result as
    the public functions return it (before ``out=``).

    Args:
        a: the input: NumPy, CuPy, or anything ``core.arrays.as_input`` takes.
        op: ``"sum"``, ``"min"``, ``"max"``, ``"mean"``, ``"var"``, ``"std"`` (``"stats"``
            for the family ``"stats"``).
        axis, dtype, keepdims, ddof, variant, device: the public functions' options.
        family: ``"reduce"`` (the public calls: whole-array variants where they apply),
            ``"axis"`` (the ``reduce_axis`` variants only) or ``"stats"``.

    Raises:
        What :func:`build` raises; ``DeviceOutOfMemoryError`` for the GPU's out-of-memory errors
        (``device.device_oom``).
    """
    try:
        cupy = sys.modules.get("cupy")
        t = type(a)
        if cupy is not None and (t is cupy.ndarray or t in RESULT_TYPES):
            if axis is None and dtype is None and variant is None and device is None \
                    and keepdims is False and ddof == 0 and family == "reduce" \
                    and a._c_contiguous and a.size:
                # the whole array of a C-contiguous device input: its plan depends on the
                # op, dtype, device and stream only (the flat reduction reads any shape)
                key: Any = (op, a.dtype, cupy.cuda.runtime.getDevice(),
                            fastpath.current_stream()[1], _registry.generation)
                plan = PLANS.get(key)
                if plan is None:  # False: the default does not take every size, full key
                    built = _registry.preferred_for_all("reduce", "cuda") and \
                        build(a, True, family, op, None, None, False, 0, None, None)
                    plan = PLANS.put(key, built or False)
                if plan is not False:
                    v, run = plan
                    _registry.ran(v)
                    return run(a)
            elif type(axis) is int and dtype is None and variant is None and device is None \
                    and keepdims is False and type(ddof) is int and ddof == 0 \
                    and family == "reduce" and type(op) is str and a._c_contiguous:
                # one axis of a C-contiguous device input, no other option; a planned launch
                # (plan_axis.Record) takes the stream handle read here
                stream, skey = fastpath.current_stream()
                key = (op, axis, a.dtype, a.shape, a.strides, a.data.ptr % 16 == 0,
                       cupy.cuda.runtime.getDevice(), skey, _registry.generation)
                plan = PLANS.get(key)
                if plan is None:
                    v, run = build(a, True, family, op, axis, None, False, 0, None, None)
                    plan = PLANS.put(key, (v, run, type(run) is plan_axis.Record))
                v, run, streamed_in = plan
                if v is not None:
                    _registry.ran(v)
                return run(a, stream) if streamed_in else run(a)
            on_device = True
            where: Any = (a.data.ptr % 16 == 0, cupy.cuda.runtime.getDevice(),
                          fastpath.current_stream()[1])
        elif t is np.ndarray:
            on_device, where = False, ("host", os.environ.get("WARPLAB_DEVICE"))
        else:
            k = overrides.kind(a)
            if k is not None:  # masked, a subclass, __array_function__: NumPy's semantics
                return _numpy_semantics(a, k, op, axis, dtype, keepdims, ddof, variant,
                                        device, family)
            inp = as_input(a)
            if type(inp.array) is not t:
                return call(inp.array, op, axis, dtype, keepdims, ddof, variant, device,
                            family)
            a, on_device, where = inp.array, inp.on_device, None
        ta = type(axis)
        if where is None or not (  # options a key holds as given (module docstring)
                (axis is None or ta is int or (ta is tuple and all(type(i) is int for i in axis)))
                and (keepdims is False or keepdims is True)
                and (type(ddof) is int or type(ddof) is float) and type(op) is str
                and (dtype is None or isinstance(dtype, (str, type, np.dtype)))
                and (variant is None or type(variant) is str)
                and (device is None or type(device) is str)):
            plan = build(a, on_device, family, op, axis, dtype, keepdims, ddof, variant, device)
        else:
            key = (family, op, a.dtype, a.shape, a.strides, axis, keepdims, ddof, dtype,
                   variant, device, where, _registry.generation)
            plan = PLANS.get(key)
            if plan is None:
                plan = PLANS.put(key, build(a, on_device, family, op, axis, dtype, keepdims,
                                            ddof, variant, device))
        v, run = plan
        if v is not None:
            _registry.ran(v)
        return run(a)
    except (MemoryError, RuntimeError) as exc:
        err = device_oom(exc, "series_stats" if family == "stats" else "reduce")
        if err is None:
            raise
        raise err from err.origin


def _numpy_semantics(a: Any, k: str, op: Any, axis: Any, dtype: Any, keepdims: Any, ddof: Any,
                     variant: str | None, device: str | None, family: str) -> Any:
    """NumPy's ``np.<op>`` of input NumPy dispatches elsewhere (``core/overrides.py``): a
    masked array's mask and a subclass's or ``__array_function__``'s methods apply as in
    NumPy. ``series_stats`` (no NumPy name) refuses it."""
    if family == "stats":
        raise overrides.refuse("series_stats", a)
    if op not in (*OPS, "var", "std"):
        raise InvalidValueError(f"unknown reduce op {op!r}; valid: sum, min, max, mean, var, std")
    kwargs: dict[str, Any] = {"axis": axis}
    if dtype is not None:
        kwargs["dtype"] = dtype
    if keepdims:
        kwargs["keepdims"] = keepdims
    if op in ("var", "std"):
        kwargs["ddof"] = ddof
    return overrides.defer(op, k, getattr(np, op), (a,), kwargs,
                           {"variant": variant, "device": device})


def build(a: Any, on_device: bool, family: str, op: Any, axis: Any, dtype: Any, keepdims: Any,
          ddof: Any, variant: str | None, device: str | None) -> Plan:
    """The plan of a call (module docstring): the whole-array family (registry family
    ``"reduce"``) takes ``axis=None`` without ``keepdims`` or ``ddof`` for sum/min/max/mean
    of int32, int64, float32 and float64 (after ``dtype=``) unless a ``reduce_axis`` variant
    is named; everything else is ``plan_axis``'s. Raises what the call raises (nothing is
    cached then)."""
    if family == "stats":
        return plan_axis.build_stats(a, on_device, device, call)
    if family == "reduce":
        if variant is not None and not _registry.has("reduce", variant) \
                and not _registry.has(AXIS, variant):
            names = _registry.variants("reduce") + _registry.variants(AXIS)
            raise InvalidValueError(f"unknown reduce variant {variant!r}; valid: "
                             f"{', '.join(v.name for v in names)}")
        if not (axis is not None or keepdims or ddof != 0 or op not in OPS
                or (variant is not None and not _registry.has("reduce", variant))):
            work = np.dtype(dtype if dtype is not None else a.dtype)
            if work in DTYPES:
                return _whole(a, on_device, op, dtype, work, variant, device)
    return plan_axis.build(a, on_device, op, axis, dtype, keepdims, ddof, variant, device, call)


def _whole(a: Any, on_device: bool, op: str, dtype: Any, work: np.dtype, variant: str | None,
           device: str | None) -> Plan:
    """A whole-array reduction's plan: the variant's prepared runner for C-contiguous device
    input without ``dtype=`` (the default ``persistent_vec``: its ``plan``), else the steps
    around the variant (flatten, convert, the host round trip or streaming, the cast back)."""
    s = spec(op, work)
    backend = _registry.pick_backend("reduce", device, variant, on_device)
    v = _registry.choose("reduce", backend, ReduceProblem(a.size, op, s.dtype, on_device),
                         variant)
    cast = work if dtype is not None and op in ("sum", "mean") and s.out != work else None
    if a.size == 0:
        if op in ("min", "max"):
            name = "minimum" if op == "min" else "maximum"
            raise InvalidValueError(f"zero-size array to reduction operation {name} which has no "
                             "identity")
        return v, lambda x: _empty(s, on_device, cast)
    prepared = getattr(v.fn, "plan", None)
    if on_device and backend == "cuda" and prepared is not None and dtype is None \
            and a.flags.c_contiguous:
        return v, prepared(s)
    return v, _steps(v.fn, s, dtype, work, cast, backend, on_device)


def _steps(fn: Callable[[Any, ReduceSpec], Any], s: ReduceSpec, dtype: Any, work: np.dtype,
           cast: np.dtype | None, backend: str, on_device: bool) -> Callable[[Any], Any]:
    """The run of a whole-array plan around variant ``fn``: the flat contiguous input (a copy
    only where it is not), ``dtype=``'s conversion, then on the cpu backend NumPy (and the
    result back to the device for device input), on cuda the variant (host input: streamed
    or copied whole, the 0-d result read through the pinned buffer); the sum or mean cast
    back to ``dtype=`` as NumPy does."""

    def run(x: Any) -> Any:
        x = flat_contiguous(x)
        if dtype is not None:  # as NumPy: elements converted to dtype, the result of that dtype
            x = x.astype(work, copy=False)
        if backend == "cpu":
            r = fn(to_host(x), s)
            r = to_device(np.asarray(r, dtype=s.out)) if on_device else r
        elif on_device:
            r = fn(x, s)
        else:
            r = s.out.type(fastpath.read_small(streamed.whole(fn, x, s))[0][()])
        if cast is not None:  # integer sums wrap the same in int64 as in the narrower dtype
            r = r.astype(cast) if on_device else cast.type(r)
        return as_scalar(r)

    return run


def _empty(s: ReduceSpec, on_device: bool, cast: np.dtype | None) -> Any:
    """The sum (0) or mean (NaN, with NumPy's warning) of an empty array."""
    r = s.out.type(0) if s.op == "sum" else s.out.type(np.nan)
    if s.op == "mean":
        warnings.warn("Mean of empty slice.", RuntimeWarning, stacklevel=4)
    if cast is not None:
        r = cast.type(r)
    return as_scalar(to_device(np.asarray(r))) if on_device else r

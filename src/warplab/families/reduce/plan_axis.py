"""Plans of reductions along axes (registry family ``"reduce_axis"``) and of
``series_stats``: the decisions of ``plan.build`` for everything the whole-array family does
not take.

:func:`build` validates a call with NumPy's rules (``axis_spec``), then decides by where the
input lives and the backend:

* device input, a dtype the kernels read (int32, int64, float32, float64), a layout that is a
  2-D view and the layout's default (``rows_adaptive`` / ``columns``): a :class:`Record`, the
  kernel launch planned once (``axis_cuda.record_launch``); a run allocates the result in its
  final shape and launches;
* other device calls: the variant's own steps (``axis_input.run``: the transposed copy of a
  layout that is no view, conversion of other dtypes), or with ``dtype=`` the conversion
  first and then the converted array's own plan;
* host input on the cuda backend: large C-contiguous arrays reduced over their trailing axes
  are streamed (``streamed.py``: each chunk through its device plan), others copied to the
  device and reduced by the device copy's plan; the result comes back to the host;
* the cpu backend: NumPy (``cpu.numpy_axis``).

Delegating to another plan goes through the ``again`` argument (``plan.call``), so this module
needs no import of the module that imports it.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from warplab.core import registry as _registry
from warplab.core.arrays import to_device, to_host
from warplab.core.errors import InvalidTypeError, InvalidValueError
from warplab.core.scalar import (
    SMALL_BYTES,
    as_scalar,
    halves,
    result_type,
    small_results,
)
from warplab.core.streaming import worth_streaming
from warplab.families.reduce import axis_cuda, axis_input, streamed
from warplab.families.reduce.axis_spec import (
    F64,
    FAMILY,
    OPS,
    AxisJob,
    AxisProblem,
    check_ddof,
    check_dtype,
    deliver,
    empty_result,
    normalize_axes,
    plan_2d,
    result_dtype,
)

Plan = tuple  # (Variant | None, Callable[[Any], Any])


#: A plan keeps its split kernels' partials (and its tickets) up to this many bytes. The
#: planners' partials stay within it (the columns' peak at 1 MiB, 8192 x 8192 float32 along
#: axis 0 takes 512 KiB, few long rows a few KiB); a larger one would come from CuPy's pool
#: every call. The plan cache (1,024 plans, emptied when full) bounds what plans hold.
KEEP_PARTIALS = 1 << 20


class Record:
    """The run of a planned kernel launch: allocate the result (``shape``, ``dtype``; one of
    at most ``scalar.SMALL_BYTES`` from the slab of small results of the device and stream,
    the others from CuPy's pool) and launch ``launch`` (``axis_cuda.Launch``) on the input;
    ``split`` > 0 for ``series_stats`` (the result's means and norms at ``split``).

    A launch that takes partials and tickets (split rows, columns) takes the record's own,
    made on its first run (up to :data:`KEEP_PARTIALS`): a plan belongs to one device and
    stream (``plan.call``'s key), whose launches run in order (a launch with programmatic
    serialization waits for the previous kernel before its first access), and every launch
    writes its partials before reading them and leaves its tickets at 0."""

    __slots__ = ("cls", "dtype", "launch", "nbytes", "scratch", "shape", "slab", "split")

    def __init__(self, launch: axis_cuda.Launch, shape: tuple, dtype: np.dtype,
                 split: int = 0) -> None:
        self.launch, self.shape, self.dtype, self.split = launch, shape, dtype, split
        self.nbytes = math.prod(shape) * dtype.itemsize
        self.slab = small_results() if 0 < self.nbytes <= SMALL_BYTES else None
        self.cls = result_type(shape)
        self.scratch: tuple[Any, Any] | None = None

    def __call__(self, x: Any, stream: int | None = None) -> Any:
        """The result of ``x``; ``stream``: the current stream's handle where the caller has
        read it (``plan.call``), else read by the launch."""
        slab = self.slab
        out = axis_cuda._empty(self.shape, self.dtype) if slab is None else \
            self.cls(self.shape, self.dtype, slab.carve(self.nbytes))
        go = self.launch
        args = axis_cuda.launch_args(go, x, out, self._scratch)
        if stream is None:
            go.go(*args)
        else:
            go.go.on_stream(stream, go.go.grid, *args)
        return halves(out, self.split) if self.split else out

    def _scratch(self, launch: axis_cuda.Launch) -> tuple[Any, Any]:
        """Partials and tickets for ``launch`` (kept where the partials are small)."""
        if self.scratch is not None:
            return self.scratch
        pair = axis_cuda.scratch(launch)
        if pair[0].nbytes <= KEEP_PARTIALS:
            self.scratch = pair
        return pair


def build(a: Any, on_device: bool, op: Any, axis: Any, dtype: Any, keepdims: Any, ddof: Any,
          variant: str | None, device: str | None, again: Callable[..., Any]) -> Plan:
    """The plan of ``reduce_axis(a, op, axis, dtype=, keepdims=, ddof=, variant=, device=)``
    (module docstring); ``again(x, op, axis, dtype, keepdims, ddof, variant, device, family)``
    runs another array's plan.

    Raises:
        ValueError: unknown op; ``ddof >= N``; a duplicate axis; AxisError (a ValueError /
            IndexError) for an axis out of range; an unknown or unsupporting variant.
        TypeError: complex, object or string input; ``dtype=`` for min/max; a non-floating
            ``dtype=`` for var/std; ``ddof`` for ops other than var/std.
    """
    if op not in OPS:
        raise InvalidValueError(f"unknown reduction op {op!r}; valid: {', '.join(OPS)}")
    if dtype is not None and op in ("min", "max"):
        raise InvalidTypeError(f"{op} takes no dtype= (as np.{op})")
    fd = check_ddof(op, ddof)
    check_dtype(a.dtype)
    work = check_dtype(dtype, "dtype=") if dtype is not None else np.dtype(a.dtype)
    if op in ("var", "std") and work.kind != "f" and dtype is not None:
        raise InvalidTypeError(f"{op} takes a floating dtype= only, got {work}")
    axes = normalize_axes(axis, a.ndim)
    n = math.prod(a.shape[d] for d in axes)
    if op in ("var", "std") and n > 0 and fd >= n:
        raise InvalidValueError(f"ddof={fd:g} must be smaller than the number of elements reduced "
                         f"N={n} (NumPy returns inf/nan with a 'Degrees of freedom <= 0' warning)")
    out = result_dtype(op, work, dtype)
    if op == "mean" and out.kind != "f":  # NumPy: the sum in that dtype (wrapping), / N, cast
        return None, _integer_mean(op, axis, out, keepdims, variant, device, n, again)
    shape = tuple(1 if d in axes else s for d, s in enumerate(a.shape)) if keepdims else \
        tuple(s for d, s in enumerate(a.shape) if d not in axes)
    backend = _registry.pick_backend(FAMILY, device, variant, on_device)
    converted = work != a.dtype
    if a.size and backend == "cuda" and not on_device:
        return None, _to_device(a, op, axis, axes, dtype, work, keepdims, ddof, fd, variant,
                                device, shape, out, again)
    if a.size and backend == "cuda" and converted:
        return None, lambda x: again(x.astype(work), op, axis, dtype, keepdims, ddof, variant,
                                     device, "axis")
    strides = _c_strides(a.shape, work.itemsize) if converted else a.strides
    plan = plan_2d(tuple(a.shape), tuple(strides), work.itemsize, axes)
    v = _registry.choose(FAMILY, backend, AxisProblem(plan.rows, plan.cols, plan.layout, op,
                                                      work, on_device), variant)
    job = AxisJob(op, work, out, fd, axes, plan.layout)
    if a.size == 0:
        return v, lambda x: as_scalar(deliver(empty_result(job, tuple(x.shape)), shape, out,
                                              on_device))
    if backend == "cpu":
        def cpu(x: Any) -> Any:
            x = x.astype(work) if converted else x
            return as_scalar(deliver(v.fn(to_host(x), job), shape, out, on_device))

        return v, cpu
    launch = getattr(v.fn, "launch", None)
    t = np.dtype(a.dtype)
    if launch is not None and plan.view and t in axis_input.NATIVE \
            and axis_input.kernel_dtypes(op, t)[1] == out:
        return v, Record(launch(plan, a.data.ptr % 16 == 0, op, t, fd), shape, out)
    return v, lambda x: as_scalar(deliver(v.fn(x, plan, job), shape, out, True))


def _c_strides(shape: tuple, itemsize: int) -> tuple[int, ...]:
    """The strides of a C-contiguous array (what a conversion of a host array gives)."""
    out, step = [], itemsize
    for s in reversed(shape):
        out.append(step)
        step *= max(s, 1)
    return tuple(reversed(out))


def _integer_mean(op: str, axis: Any, out: np.dtype, keepdims: Any, variant: str | None,
                  device: str | None, n: int, again: Callable[..., Any]) -> Callable[[Any], Any]:
    """NumPy's mean with an integer ``dtype=``: the sum in that dtype (wrapping), / N, cast."""

    def run(x: Any) -> Any:
        total = again(x, "sum", axis, out, keepdims, 0, variant, device, "axis")
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = (total / n).astype(out)
        return out.type(mean) if isinstance(total, np.generic) else as_scalar(mean)

    return run


def _to_device(a: Any, op: str, axis: Any, axes: tuple[int, ...], dtype: Any, work: np.dtype,
               keepdims: Any, ddof: Any, fd: float, variant: str | None, device: str | None,
               shape: tuple, out: np.dtype, again: Callable[..., Any]) -> Callable[[Any], Any]:
    """Host input on the cuda backend: streamed where it can be (the size read per call),
    else converted on the host (``dtype=``), copied and reduced by the device copy's plan;
    the result back on the host (a NumPy scalar for a 0-d result, as NumPy)."""
    streams = variant is None and streamed.streams(a, axes, op, dtype, fd)

    def run(x: np.ndarray) -> Any:
        if streams and worth_streaming(x.nbytes):
            if axes[0] == 0:
                return streamed.scalar(
                    x, op, fd, bool(keepdims),
                    lambda d, o: again(d, o, None, None, False, 0, None, "cuda", "axis"),
                    lambda d2: again(d2, "stats", None, None, False, 0, None, "cuda", "stats"))
            return streamed.rows(x, axes, bool(keepdims), lambda d, ax: again(
                d, op, ax, dtype, keepdims, ddof, None, "cuda", "axis"))
        d = to_device(x.astype(work) if work != x.dtype else x)
        return deliver(again(d, op, axis, dtype, keepdims, ddof, variant, device, "axis"),
                       shape, out, False)

    return run


def build_stats(a: Any, on_device: bool, device: str | None, again: Callable[..., Any]) -> Plan:
    """The plan of ``series_stats(a, device=)``: per row of a 2-D array its mean and centred
    norm, in one pass of the ``moments`` kernels of ``rows_adaptive`` (``columns`` for a
    Fortran-ordered array) on cuda, NumPy (two passes in float64) on the cpu backend or for
    an empty array; a large C-contiguous host array streamed in chunks of whole series.

    Raises:
        ValueError: ``a`` is not 2-D.  TypeError: complex, object or string data.
    """
    if a.ndim != 2:
        raise InvalidValueError(
            f"series_stats takes a 2-D (series, values) array, got {a.ndim}-D")
    check_dtype(a.dtype)
    out = np.dtype(np.float32) if a.dtype == np.float32 else F64
    backend = _registry.pick_backend(FAMILY, device, None, on_device)
    if backend == "cpu" or a.size == 0:
        return _registry.get(FAMILY, "numpy"), lambda x: _numpy_stats(x, out, on_device)
    if not on_device:
        streams = type(a) is np.ndarray and a.flags.c_contiguous

        def run(x: np.ndarray) -> tuple[Any, Any]:
            if streams and worth_streaming(x.nbytes):
                return streamed.stats(x, lambda d2: again(d2, "stats", None, None, False, 0,
                                                          None, "cuda", "stats"))
            mean, norm = again(to_device(x), "stats", None, None, False, 0, None, device,
                               "stats")
            return to_host(mean), to_host(norm)

        return None, run
    plan = plan_2d(tuple(a.shape), tuple(a.strides), a.itemsize, (1,))
    v = _registry.get(FAMILY, "rows_adaptive" if plan.layout == "rows" else "columns")
    t, m = np.dtype(a.dtype), a.shape[0]
    if plan.view and t in axis_input.NATIVE and axis_input.kernel_dtypes("stats", t)[1] == out:
        launch = cast(Any, v.fn).launch  # the registered callable's attribute (axis_cuda)
        return v, Record(launch(plan, a.data.ptr % 16 == 0, "stats", t, 0.0), (2 * m,), out, m)
    job = AxisJob("stats", t, out, 0.0, (1,), plan.layout)
    return v, lambda x: halves(v.fn(x, plan, job), m)


def _numpy_stats(x: Any, out: np.dtype, on_device: bool) -> tuple[Any, Any]:
    """``series_stats`` by NumPy in float64: the mean, then the root of the summed squared
    deviations (a row of no values: mean NaN with NumPy's warning, norm 0)."""
    xs = to_host(x)
    mean = xs.mean(axis=1, dtype=F64)
    dev = xs - mean[:, None]
    norm = np.sqrt(np.einsum("ij,ij->i", dev, dev))
    res = (mean.astype(out), norm.astype(out))
    return tuple(to_device(r) for r in res) if on_device else res

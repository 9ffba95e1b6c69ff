"""Large host arrays streamed through the reduction kernels (``core/streaming.py``): one call
into the core with a chunk kernel and a combine for

* whole-array ``sum/min/max/mean`` (:func:`whole`, from ``api._reduce``): a partial per chunk
  in the accumulator's precision (int64 for integers; float64 for floats, float32 chunks
  widened on the device first), combined on the host (integer sums wrap as the one-shot sum
  does; min/max exact, NaN propagating; float sums to rounding in another order);
* reductions over the trailing axes of a C-contiguous array (:func:`axis`: ``axis=-1``,
  ``axis=(1, 2)`` of 3-D...): chunks of whole rows, each reduced by ``reduce_axis`` on the
  device (the same kernel as one-shot), the rows' results concatenated: identical results;
* reductions over every axis that the whole-array family does not take (``var``/``std``,
  ``keepdims``, other dtypes; no ``dtype=``): per chunk the sum or extreme, or the mean and
  centred norm in float64, combined on the host (Chan's pairwise rule for the variance);
* ``series_stats`` (:func:`series_stats`): chunks of whole rows (series).

Everything else (device input, other layouts and axes, named variants, the cpu backend, small
inputs) takes the one-shot path, which also raises the errors.
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Callable

import numpy as np

from warplab.core import registry as _registry
from warplab.core.streaming import stream, worth_streaming
from warplab.families.reduce import axis_fast
from warplab.families.reduce.axis import FAMILY, OPS, check_dtype, normalize_axes, reduce_axis, result_dtype, \
    series_stats_rows
from warplab.families.reduce.spec import ReduceSpec, spec


def _wide(d: Any, mean: bool = False) -> Any:
    """A float chunk as float64 on the device (one pass, beside the bus time); for a mean an
    integer chunk too (NumPy and the one-shot mean accumulate integers in float64: an int64
    partial sum would wrap); others as is."""
    if d.dtype == np.float64 or (d.dtype.kind != "f" and not mean):
        return d
    return d.astype(np.float64)


def whole(fn: Callable[[Any, ReduceSpec], Any], h_x: np.ndarray, s: ReduceSpec) -> Any:
    """``fn(x_on_device, s)`` (a whole-array variant) for flat contiguous host ``h_x``: the
    0-d CuPy result of ``s.out``; streamed when large, else one copy."""
    import cupy

    if not worth_streaming(h_x.nbytes):
        return fn(cupy.asarray(h_x), s)
    op = "sum" if s.op == "mean" else s.op

    def chunk(d: Any, start: int) -> Any:
        d = d if op in ("min", "max") else _wide(d, s.op == "mean")
        return fn(d, spec(op, d.dtype))

    def combine(parts: list) -> Any:
        return cupy.asarray(_fold(op, cupy.stack(parts).get(), h_x.size, s.op == "mean"
                                  ).astype(s.out))

    return stream(h_x, chunk, combine, backend="cuda")


def _fold(op: str, vals: np.ndarray, n: int, mean: bool) -> np.ndarray:
    """Per-chunk partials (one row each) into the whole array's value."""
    if op == "min":
        return np.asarray(vals.min())
    if op == "max":
        return np.asarray(vals.max())
    total = np.add.reduce(vals.reshape(-1), dtype=vals.dtype)
    return np.asarray(total / n if mean else total)


def _plain_ddof(ddof: Any) -> bool:
    return isinstance(ddof, numbers.Real) and not isinstance(ddof, bool)


def _streams(a: Any, op: str, axis: Any, dtype: Any, ddof: Any, variant: str | None,
             device: str | None) -> tuple[int, ...] | None:
    """The reduced axes when this call streams, else None (see the module docstring)."""
    if variant is not None or type(a) is not np.ndarray or op not in OPS \
            or not a.flags.c_contiguous or not a.size or not worth_streaming(a.nbytes) \
            or not _plain_ddof(ddof):
        return None
    if _registry.pick_backend(FAMILY, device, None, False) != "cuda":
        return None
    try:
        check_dtype(a.dtype)
        axes = normalize_axes(axis, a.ndim)
    except (TypeError, ValueError, IndexError):
        return None
    if not axes or axes != tuple(range(axes[0], a.ndim)):
        return None
    if axes[0] == 0:
        n = a.size
        if dtype is not None or (op in ("var", "std") and ddof >= n):
            return None
    return axes


def axis(a: Any, op: str, axis: Any = None, *, dtype: Any = None, keepdims: bool = False,
         ddof: Any = 0, variant: str | None = None, device: str | None = None) -> Any:
    """``reduce_axis(a, op, axis, ...)``, streamed where it can be (module docstring)."""
    axes = _streams(a, op, axis, dtype, ddof, variant, device)
    if axes is None:
        return reduce_axis(a, op, axis, dtype=dtype, keepdims=keepdims, ddof=ddof,
                           variant=variant, device=device)
    k = axes[0]
    if k == 0:
        r = _scalar(a, op, float(ddof))
        return r.reshape((1,) * a.ndim) if keepdims else r
    tail = a.shape[k:]
    row = math.prod(tail)
    chunk_axes = tuple(range(1, 1 + len(tail)))
    shape = a.shape[:k] + ((1,) * len(tail) if keepdims else ())

    def chunk(d: Any, start: int) -> Any:
        return reduce_axis(d.reshape((-1,) + tail), op, chunk_axes, dtype=dtype,
                           keepdims=keepdims, ddof=ddof, device="cuda")

    def combine(parts: list) -> np.ndarray:
        import cupy

        return cupy.concatenate(parts).get().reshape(shape)

    return stream(a, chunk, combine, backend="cuda", unit=row)


def _scalar(h_x: np.ndarray, op: str, ddof: float) -> Any:
    """Every axis reduced, no ``dtype=``: per chunk a partial on the device, combined on the
    host; a NumPy scalar of NumPy's result dtype."""
    import cupy

    out = result_dtype(op, h_x.dtype)
    part_op = {"mean": "sum"}.get(op, op)

    def chunk(d: Any, start: int) -> tuple[int, Any]:
        if part_op in ("min", "max"):
            return d.size, reduce_axis(d, part_op, None, device="cuda")
        if part_op == "sum":
            return d.size, reduce_axis(_wide(d, op == "mean"), "sum", None, device="cuda")
        mean, norm = series_stats_rows(_wide(d).reshape(1, -1), device="cuda")
        return d.size, cupy.concatenate([mean, norm])

    def combine(parts: list) -> Any:
        vals = cupy.stack([p[1] for p in parts]).get()
        if part_op in ("var", "std"):
            r = np.asarray(_chan(vals, [p[0] for p in parts], op, ddof))
        else:
            r = _fold(part_op, vals, h_x.size, op == "mean")
        return out.type(r.astype(out)[()])

    return stream(h_x, chunk, combine, backend="cuda")


def _chan(vals: np.ndarray, counts: list[int], op: str, ddof: float) -> float:
    """Variance (or std) from per-chunk (mean, centred norm) rows and their counts: Chan et
    al.'s pairwise combination, in float64."""
    n = np.asarray(counts, dtype=np.float64)
    means, norms = vals[:, 0].astype(np.float64), vals[:, 1].astype(np.float64)
    mean = float(np.dot(n, means) / n.sum())
    m2 = float(np.sum(norms ** 2) + np.dot(n, (means - mean) ** 2))
    var = m2 / (n.sum() - ddof)
    return math.sqrt(var) if op == "std" else var


def series_stats(x: Any, *, device: str | None = None) -> tuple[Any, Any]:
    """``series_stats_rows(x)``; a large C-contiguous 2-D host array on the cuda backend is
    streamed in chunks of whole series (identical results); device input of a native dtype and
    layout through its launch record (``axis_fast``)."""
    if device is None:
        r = axis_fast.series_stats(x)
        if r is not None:
            return r
    if type(x) is not np.ndarray or x.ndim != 2 or not x.flags.c_contiguous or not x.size \
            or not worth_streaming(x.nbytes) \
            or _registry.pick_backend(FAMILY, device, None, False) != "cuda":
        return series_stats_rows(x, device=device)
    check_dtype(x.dtype)
    n = x.shape[1]

    def chunk(d: Any, start: int) -> tuple[Any, Any]:
        return series_stats_rows(d.reshape(-1, n), device="cuda")

    def combine(parts: list) -> tuple[np.ndarray, np.ndarray]:
        import cupy

        return (cupy.concatenate([p[0] for p in parts]).get(),
                cupy.concatenate([p[1] for p in parts]).get())

    return stream(x, chunk, combine, backend="cuda", unit=n)

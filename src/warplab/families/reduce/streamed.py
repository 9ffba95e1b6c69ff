"""Large host arrays streamed through the reduction kernels (``core/streaming.py``): one call
into the core with a chunk kernel and a combine for

* whole-array ``sum/min/max/mean`` (:func:`whole`): a partial per chunk in the accumulator's
  precision (int64 for integers; float64 for floats, float32 chunks widened on the device
  first), combined on the host (integer sums wrap as the one-shot sum does; min/max exact, NaN
  propagating; float sums to rounding in another order);
* reductions over the trailing axes of a C-contiguous array (:func:`rows`: ``axis=-1``,
  ``axis=(1, 2)`` of 3-D...): chunks of whole rows, each reduced on the device by the planned
  call the plan passes in (the same kernel as one-shot), the rows' results concatenated:
  identical results;
* reductions over every axis that the whole-array family does not take (:func:`scalar`:
  ``var``/``std``, ``keepdims``, other dtypes; no ``dtype=``): per chunk the sum or extreme,
  or the mean and centred norm in float64, combined on the host (Chan's pairwise rule for the
  variance);
* ``series_stats`` (:func:`stats`): chunks of whole rows (series).

Which calls stream is the plan's decision (``plan.py``, ``plan_axis.py``: :func:`streams` for
the layout, :func:`worth_streaming` for the size, per call); this module only streams.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from warplab.core.streaming import stream, worth_streaming
from warplab.families.reduce.axis_spec import result_dtype
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


def streams(a: Any, axes: tuple[int, ...], op: str, dtype: Any, ddof: float) -> bool:
    """Whether a reduction of host array ``a`` over ``axes`` (sorted, validated) on the cuda
    backend streams once ``a`` is large enough (:func:`worth_streaming`, checked per call):
    a C-contiguous non-empty NumPy array reduced over its trailing axes; over every axis only
    without ``dtype=`` (the partials are combined in the accumulator's precision) and, for
    var/std, with ``ddof`` below the element count (else the one-shot path raises)."""
    if type(a) is not np.ndarray or not a.flags.c_contiguous or not a.size or not axes \
            or axes != tuple(range(axes[0], a.ndim)):
        return False
    return axes[0] != 0 or (dtype is None and not (op in ("var", "std") and ddof >= a.size))


def rows(a: np.ndarray, axes: tuple[int, ...], keepdims: bool,
         reduce_chunk: Callable[[Any, tuple[int, ...]], Any]) -> np.ndarray:
    """Reduce C-contiguous host ``a`` over its trailing ``axes`` (not every axis) in chunks of
    whole rows: ``reduce_chunk(d, chunk_axes)`` reduces a device chunk shaped (rows, *tail)
    over ``chunk_axes`` (the one-shot kernels: identical results); the rows' results are
    concatenated on the host."""
    k = axes[0]
    tail = a.shape[k:]
    chunk_axes = tuple(range(1, 1 + len(tail)))
    shape = a.shape[:k] + ((1,) * len(tail) if keepdims else ())

    def chunk(d: Any, start: int) -> Any:
        return reduce_chunk(d.reshape((-1, *tail)), chunk_axes)

    def combine(parts: list) -> np.ndarray:
        import cupy

        return cupy.concatenate(parts).get().reshape(shape)

    return stream(a, chunk, combine, backend="cuda", unit=math.prod(tail))


def scalar(h_x: np.ndarray, op: str, ddof: float, keepdims: bool,
           reduce_chunk: Callable[[Any, str], Any],
           stats_chunk: Callable[[Any], tuple[Any, Any]]) -> Any:
    """Every axis of C-contiguous host ``h_x`` reduced, no ``dtype=``: per chunk a partial on
    the device (``reduce_chunk(d, op)`` of a flat device chunk: its sum or extreme;
    ``stats_chunk(d2)`` of a (1, n) one: its mean and centred norm, for var/std), combined on
    the host. A NumPy scalar of NumPy's result dtype (an array of ones in every axis with
    ``keepdims``)."""
    import cupy

    out = result_dtype(op, h_x.dtype)
    part_op = {"mean": "sum"}.get(op, op)

    def chunk(d: Any, start: int) -> tuple[int, Any]:
        if part_op in ("min", "max"):
            return d.size, reduce_chunk(d, part_op)
        if part_op == "sum":
            return d.size, reduce_chunk(_wide(d, op == "mean"), "sum")
        mean, norm = stats_chunk(_wide(d).reshape(1, -1))
        return d.size, cupy.concatenate([mean, norm])

    def combine(parts: list) -> Any:
        vals = cupy.stack([p[1] for p in parts]).get()
        if part_op in ("var", "std"):
            r = np.asarray(_chan(vals, [p[0] for p in parts], op, ddof))
        else:
            r = _fold(part_op, vals, h_x.size, op == "mean")
        return out.type(r.astype(out)[()])

    r = stream(h_x, chunk, combine, backend="cuda")
    return r.reshape((1,) * h_x.ndim) if keepdims else r


def _chan(vals: np.ndarray, counts: list[int], op: str, ddof: float) -> float:
    """Variance (or std) from per-chunk (mean, centred norm) rows and their counts: Chan et
    al.'s pairwise combination, in float64."""
    n = np.asarray(counts, dtype=np.float64)
    means, norms = vals[:, 0].astype(np.float64), vals[:, 1].astype(np.float64)
    mean = float(np.dot(n, means) / n.sum())
    m2 = float(np.sum(norms ** 2) + np.dot(n, (means - mean) ** 2))
    var = m2 / (n.sum() - ddof)
    return math.sqrt(var) if op == "std" else var


def stats(x: np.ndarray, stats_chunk: Callable[[Any], tuple[Any, Any]]
          ) -> tuple[np.ndarray, np.ndarray]:
    """``series_stats`` of a large C-contiguous 2-D host array in chunks of whole series:
    ``stats_chunk(d2)`` of each device chunk (the one-shot kernel: identical results)."""
    n = x.shape[1]

    def chunk(d: Any, start: int) -> tuple[Any, Any]:
        return stats_chunk(d.reshape(-1, n))

    def combine(parts: list) -> tuple[np.ndarray, np.ndarray]:
        import cupy

        return (cupy.concatenate([p[0] for p in parts]).get(),
                cupy.concatenate([p[1] for p in parts]).get())

    return stream(x, chunk, combine, backend="cuda", unit=n)

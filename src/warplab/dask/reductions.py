"""``sum``, ``mean``, ``min``, ``max``, ``var``, ``std`` and ``series_stats`` of dask arrays:
``da.reduction`` with warplab's function on every chunk and an exact combine of the partials.

Partials (one per chunk, the reduced axes kept with length one):

* ``sum``: the chunk's sum in the accumulator: int64 (uint64) for integers and booleans,
  float64 for floats (``warplab.sum(chunk, axis, dtype=float64)``: float32 chunks are widened
  first); the tree adds them in that dtype; the result is cast to NumPy's dtype at the end.
* ``min``/``max``: the chunk's extreme (``warplab.min``/``max``); an empty chunk gives the
  identity (inf, or the integer dtype's limit); NaN wins, as in NumPy.
* ``mean``/``var``/``std``/``series_stats``: ``(n, mean, m2)`` in float64 (count, mean and
  sum of squared deviations), from ``warplab.mean``/``warplab.var`` of the chunk (for 2-D
  chunks reduced along axis 1, ``warplab.series_stats``: one pass). ``k`` partials combine by
  Chan, Golub and LeVeque's rule: ``n = sum n_i``, ``mean = sum n_i mean_i / n``,
  ``m2 = sum m2_i + sum n_i (mean_i - mean)^2`` (their pairwise update, ``k`` at a time);
  ``var = m2 / (n - ddof)``. Every step is in float64, so the result equals the
  single-machine call to rounding, whatever the chunking.

Every task function (chunk, combine, aggregate) is :func:`~warplab.dask.chunking.completed`:
on CuPy chunks it returns once its kernels have finished, so a task Dask reports done has
its result on the device (docs/dask.md, "Completion").
"""
from __future__ import annotations

import math
import warnings
from functools import partial
from typing import Any

import dask.array as da
import numpy as np
from dask.array.utils import meta_from_array

import warplab
from warplab.core.errors import InvalidTypeError, InvalidValueError
from warplab.dask.chunking import (
    as_dask,
    check_chunk,
    completed,
    concat_nested,
    fan_in,
    kind,
    xp_of,
)

try:  # NumPy 2
    from numpy.lib.array_utils import normalize_axis_tuple
except ImportError:  # pragma: no cover - NumPy 1.x
    from numpy.core.numeric import normalize_axis_tuple  # type: ignore[no-redef]

__all__ = ["max", "mean", "min", "series_stats", "std", "sum", "var"]


def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    return tuple(sorted(normalize_axis_tuple(axis, ndim)))


def _kept(shape: tuple, axes: tuple[int, ...]) -> tuple:
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def _check_dtype(x: da.Array) -> None:
    dt = np.dtype(x.dtype)
    if dt.kind not in "biuf":
        raise InvalidTypeError(f"warplab.dask reductions take booleans, integers or floats, got "
                               f"dtype {dt}")


def _acc(dt: np.dtype) -> np.dtype:
    """The accumulator of exact partial sums for elements of ``dt``."""
    if dt.kind == "f":
        return np.dtype(np.float64)
    return np.dtype(np.uint64 if dt.kind == "u" else np.int64)


def _reduced_size(x: da.Array, axes: tuple[int, ...]) -> float:
    return math.prod(x.shape[a] for a in axes) if axes else 1


def _tree(x: da.Array, chunk: Any, combine: Any, agg: Any, axes: tuple[int, ...],
          keepdims: bool, dtype: np.dtype, every: int | None, concatenate: bool) -> da.Array:
    ndim = x.ndim if keepdims else x.ndim - len(axes)
    return da.reduction(x, chunk, agg, combine=combine, axis=axes, keepdims=keepdims,
                        dtype=dtype, split_every=fan_in(x.npartitions, every),
                        concatenate=concatenate, meta=meta_from_array(x._meta, ndim, dtype))


# ---------------------------------------------------------------------------------------------
# sum, min, max
# ---------------------------------------------------------------------------------------------

@completed
def _sum_chunk(b: Any, axis: tuple, keepdims: bool, k: str, cast: Any,
               computing_meta: bool = False) -> Any:
    if computing_meta:
        return b
    check_chunk(b, k)
    b = b if cast is None else b.astype(cast, copy=False)
    acc = _acc(b.dtype)
    if b.size == 0:
        return xp_of(k).zeros(_kept(b.shape, axis), acc)
    widen = acc if b.dtype.kind == "f" and b.dtype != acc else None
    return warplab.sum(b, axis=axis, dtype=widen, keepdims=True).astype(acc, copy=False)


@completed
def _sum_agg(p: Any, axis: tuple, keepdims: bool, k: str, out: np.dtype | None = None) -> Any:
    s = xp_of(k).sum(p, axis=axis, dtype=p.dtype, keepdims=keepdims)
    return s if out is None else s.astype(out, copy=False)


def sum(a: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False, *,  # noqa: A001
        split_every: int | None = None) -> da.Array:
    """``np.sum`` of a dask array (NumPy or CuPy chunks), lazily.

    Each chunk is summed by ``warplab.sum`` into int64/uint64 (integers, booleans) or float64
    (floats: float32 chunks are widened first); the tree of partials adds in that dtype and
    the result is cast to NumPy's dtype (``dtype=`` as NumPy: elements converted first).
    ``split_every``: the tree's fan-in (default: the chunks per worker, docs/dask.md).
    """
    x = as_dask(a)
    _check_dtype(x)
    axes = _axes(axis, x.ndim)
    out = np.sum(np.zeros(1, x.dtype), dtype=dtype).dtype
    k = kind(x)
    cast = None if dtype is None else np.dtype(dtype)
    return _tree(x, partial(_sum_chunk, k=k, cast=cast), partial(_sum_agg, k=k),
                 partial(_sum_agg, k=k, out=out), axes, keepdims, out, split_every, True)


def _identity(dt: np.dtype, op: str) -> Any:
    if dt.kind == "f":
        return np.inf if op == "min" else -np.inf
    if dt.kind == "b":
        return op == "min"
    info = np.iinfo(dt)
    return info.max if op == "min" else info.min


@completed
def _extreme_chunk(b: Any, axis: tuple, keepdims: bool, k: str, op: str,
                   computing_meta: bool = False) -> Any:
    if computing_meta:
        return b
    check_chunk(b, k)
    xp = xp_of(k)
    shape = _kept(b.shape, axis)
    if math.prod(b.shape[i] for i in axis) == 0:
        return xp.full(shape, _identity(b.dtype, op), b.dtype)
    if b.size == 0:
        return xp.empty(shape, b.dtype)
    return getattr(warplab, op)(b, axis=axis, keepdims=True)


@completed
def _extreme_agg(p: Any, axis: tuple, keepdims: bool, k: str, op: str) -> Any:
    return getattr(xp_of(k), op)(p, axis=axis, keepdims=keepdims)


def _extreme(a: Any, op: str, axis: Any, keepdims: bool, every: int | None) -> da.Array:
    x = as_dask(a)
    _check_dtype(x)
    axes = _axes(axis, x.ndim)
    if _reduced_size(x, axes) == 0:
        name = "minimum" if op == "min" else "maximum"
        raise InvalidValueError(f"zero-size array to reduction operation {name} which has no "
                                f"identity")
    k = kind(x)
    agg = partial(_extreme_agg, k=k, op=op)
    return _tree(x, partial(_extreme_chunk, k=k, op=op), agg, agg, axes, keepdims,
                 np.dtype(x.dtype), every, True)


def min(a: Any, axis: Any = None, keepdims: bool = False, *,  # noqa: A001
        split_every: int | None = None) -> da.Array:
    """``np.min`` of a dask array: ``warplab.min`` per chunk, the minimum of the partials
    (NaN if any is NaN). ``ValueError`` at once when the reduced axes are empty (as NumPy);
    empty chunks are skipped. Where chunk sizes are unknown (NaN) and all turn out empty the
    result is the identity (inf or the integer limit), not NumPy's error."""
    return _extreme(a, "min", axis, keepdims, split_every)


def max(a: Any, axis: Any = None, keepdims: bool = False, *,  # noqa: A001
        split_every: int | None = None) -> da.Array:
    """``np.max`` of a dask array (see :func:`min`)."""
    return _extreme(a, "max", axis, keepdims, split_every)


# ---------------------------------------------------------------------------------------------
# moments: mean, var, std, series_stats
# ---------------------------------------------------------------------------------------------

@completed
def _moments_chunk(b: Any, axis: tuple, keepdims: bool, k: str, cast: Any,
                   computing_meta: bool = False) -> Any:
    if computing_meta:
        return b
    check_chunk(b, k)
    xp = xp_of(k)
    b = (b if cast is None else b.astype(cast, copy=False)).astype(np.float64, copy=False)
    shape = _kept(b.shape, axis)
    count = math.prod(b.shape[i] for i in axis)
    n = xp.full(shape, count, np.int64)
    if b.size == 0:
        return {"n": n, "mean": xp.zeros(shape), "m2": xp.zeros(shape)}
    if b.ndim == 2 and axis == (1,):  # per series: one pass
        mu, norm = warplab.series_stats(b)
        return {"n": n, "mean": mu[:, None], "m2": (norm * norm)[:, None]}
    mu = warplab.mean(b, axis=axis, keepdims=True)
    return {"n": n, "mean": mu, "m2": warplab.var(b, axis=axis, keepdims=True) * count}


def _chan(parts: Any, axis: tuple, k: str, keepdims: bool = True) -> dict:
    """Chan's combination of ``(n, mean, m2)`` partials along ``axis`` (float64)."""
    xp = xp_of(k)
    n, mu, m2 = (concat_nested(_field(parts, f), axis, xp) for f in ("n", "mean", "m2"))
    nt = n.sum(axis=axis, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = (n * mu).sum(axis=axis, keepdims=True) / xp.where(nt > 0, nt, 1)
        dev = xp.where(n > 0, mu - mean, 0.0)
        m2t = m2.sum(axis=axis, keepdims=True) + (n * dev * dev).sum(axis=axis, keepdims=True)
    out = {"n": nt, "mean": mean, "m2": m2t}
    if not keepdims:
        out = {f: v.squeeze(axis=axis) for f, v in out.items()}
    return out


def _field(parts: Any, f: str) -> Any:
    if isinstance(parts, list):
        return [_field(p, f) for p in parts]
    return parts[f]


@completed
def _moments_combine(parts: Any, axis: tuple, keepdims: bool, k: str) -> dict:
    return _chan(parts, axis, k)


@completed
def _moments_agg(parts: Any, axis: tuple, keepdims: bool, k: str, stat: str, ddof: Any,
                 out: np.dtype) -> Any:
    m = _chan(parts, axis, k, keepdims)
    xp = xp_of(k)
    if stat == "mean":
        r = xp.where(m["n"] > 0, m["mean"], np.nan)
        if not bool((m["n"] > 0).all()):
            warnings.warn("Mean of empty slice.", RuntimeWarning, stacklevel=2)
    elif stat == "stats":  # series_stats: mean and centred norm side by side
        return xp.concatenate([m["mean"], xp.sqrt(m["m2"])], axis=-1)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            r = m["m2"] / (m["n"] - ddof)
        r = xp.sqrt(r) if stat == "std" else r
    r = r.astype(out, copy=False)
    return r[()] if isinstance(r, np.ndarray) and r.ndim == 0 else r  # NumPy's scalar


def _moments(a: Any, stat: str, axis: Any, dtype: Any, keepdims: bool, ddof: Any,
             every: int | None) -> da.Array:
    x = as_dask(a)
    _check_dtype(x)
    axes = _axes(axis, x.ndim)
    probe = np.zeros(2, x.dtype)
    out = (np.mean(probe, dtype=dtype) if stat == "mean" else
           np.var(probe, dtype=dtype)).dtype
    size = _reduced_size(x, axes)
    if stat != "mean" and not math.isnan(size) and ddof >= size:
        raise InvalidValueError(f"ddof ({ddof}) must be smaller than the number of elements "
                                f"reduced ({size})")
    k = kind(x)
    cast = None if dtype is None else np.dtype(dtype)
    return _tree(x, partial(_moments_chunk, k=k, cast=cast), partial(_moments_combine, k=k),
                 partial(_moments_agg, k=k, stat=stat, ddof=ddof, out=out), axes, keepdims,
                 out, every, False)


def mean(a: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False, *,
         split_every: int | None = None) -> da.Array:
    """``np.mean`` of a dask array: per chunk ``(n, mean, m2)`` in float64, combined by Chan's
    rule (module docstring); NumPy's result dtype (float64 for integers)."""
    return _moments(a, "mean", axis, dtype, keepdims, 0, split_every)


def var(a: Any, axis: Any = None, dtype: Any = None, ddof: Any = 0, keepdims: bool = False,
        *, split_every: int | None = None) -> da.Array:
    """``np.var``: ``m2 / (n - ddof)`` from Chan's combination of per-chunk ``(n, mean, m2)``
    in float64. ``ValueError`` for ``ddof >= n`` (as ``warplab.var``)."""
    return _moments(a, "var", axis, dtype, keepdims, ddof, split_every)


def std(a: Any, axis: Any = None, dtype: Any = None, ddof: Any = 0, keepdims: bool = False,
        *, split_every: int | None = None) -> da.Array:
    """``np.std``: the square root of :func:`var`."""
    return _moments(a, "std", axis, dtype, keepdims, ddof, split_every)


def series_stats(x: Any, *, split_every: int | None = None) -> tuple[da.Array, da.Array]:
    """Per series (row) of an ``(M, N)`` dask array: the mean and the centred norm
    ``sqrt(sum((x - mean)**2))``, as ``warplab.series_stats``.

    Any chunking works: a chunk holding part of the rows gives its ``(n, mean, m2)`` per row
    (``warplab.series_stats`` on the float64 chunk) and the parts combine by Chan's rule, so
    nothing is rechunked. Returns two lazy arrays of shape ``(M,)`` (float32 for float32
    input, else float64) sharing one graph: compute them together,
    ``dask.compute(*series_stats(x))``, to read the data once.
    """
    x = as_dask(x)
    if x.ndim != 2:
        raise InvalidValueError(f"series_stats needs a 2-D array (series x values), got "
                                f"{x.ndim} dimensions")
    _check_dtype(x)
    out = np.dtype(np.float32 if x.dtype == np.float32 else np.float64)
    k = kind(x)
    f64 = np.dtype(np.float64)
    packed = _tree(x, partial(_moments_chunk, k=k, cast=None), partial(_moments_combine, k=k),
                   partial(_moments_agg, k=k, stat="stats", ddof=0, out=f64), (1,),
                   True, f64, split_every, False)
    meta = meta_from_array(x._meta, 1, out)
    mean_, norm = (da.map_blocks(_column, packed, col=c, to=out, dtype=out, drop_axis=1,
                                 meta=meta) for c in (0, 1))
    return mean_, norm


@completed
def _column(b: Any, col: int, to: np.dtype) -> Any:
    """Column ``col`` of a block of packed ``(mean, norm)`` rows, as ``to`` (the cast is a
    kernel on CuPy blocks: done in this task, which waits for it)."""
    return b[:, col].astype(to)

"""Histograms of dask arrays: ``byte_histogram``, NumPy's ``histogram`` and ``bincount``.

Every chunk is counted by warplab's function (the byte kernels, or the numeric histogram
kernels, on the GPU for CuPy chunks) into a partial of the full length; the partials add in
Dask's tree (int64 counts, float64 sums of float weights), so the result equals the
single-machine call exactly for counts. Every task function is
:func:`~warplab.dask.chunking.completed` (it returns once its GPU work has finished), the
tree that adds the partials included.
"""
from __future__ import annotations

import math
from functools import partial
from typing import Any

import dask
import dask.array as da
import numpy as np
from dask.array.utils import meta_from_array
from dask.delayed import Delayed

import warplab
from warplab.core.errors import InvalidTypeError, InvalidValueError
from warplab.dask.chunking import (
    array_from_tree,
    as_dask,
    check_chunk,
    completed,
    fan_in,
    is_cupy,
    kind,
    tree,
    xp_of,
)
from warplab.dask.reductions import max as _max, min as _min

__all__ = ["bincount", "byte_histogram", "histogram"]


def _aligned(w: da.Array, x: da.Array, message: str) -> da.Array:
    """Weights ``w`` chunked as ``x``. Known shapes must match (``ValueError(message)``), and
    ``w`` is rechunked to ``x``'s chunks. With unknown chunk sizes (NaN: e.g. ``x[x >= 0]``)
    nothing can be compared or rechunked before computing: the chunk counts must match, and
    each pair of chunks is checked by the chunk function (NumPy's error) when it runs."""
    if any(math.isnan(v) for v in (*w.shape, *x.shape)):
        if w.numblocks != x.numblocks:
            raise InvalidValueError(f"{message} (unknown chunk sizes: the weights need as many "
                                    f"chunks as the data, {x.numblocks} against {w.numblocks})")
        return w
    if w.shape != x.shape:
        raise InvalidValueError(message)
    return w if w.chunks == x.chunks else w.rechunk(x.chunks)

def _per_block(x: da.Array, fn: Any, nbins: int, dtype: Any, *others: Any) -> da.Array:
    """``fn(block, *other_blocks)`` -> ``(nbins,)`` partial for every block of ``x``, laid out
    as an array of shape ``x.numblocks + (nbins,)`` (one partial per block). ``others``:
    dask arrays of ``x``'s chunks, or anything else (a delayed range) passed whole."""
    d = x.ndim
    chunks = (*((1,) * n for n in x.numblocks), (nbins,))
    return da.map_blocks(_lift, x, *others, fn=fn, d=d, new_axis=[d], chunks=chunks,
                         dtype=dtype, meta=meta_from_array(x._meta, d + 1, dtype))


@completed
def _lift(b: Any, *others: Any, fn: Any, d: int) -> Any:
    return fn(b, *others).reshape((1,) * d + (-1,))


@completed
def _keep(b: Any, axis: tuple, keepdims: bool) -> Any:
    """A block's partial as it is (the tree's chunk step)."""
    return b


@completed
def _add(p: Any, axis: tuple, keepdims: bool, to: Any = None) -> Any:
    """Partials added along ``axis`` in their dtype, then cast to ``to`` (the last step)."""
    xp = xp_of("cupy") if is_cupy(p) else np
    s = xp.sum(p, axis=axis, dtype=p.dtype, keepdims=keepdims)
    return s if to is None else s.astype(to, copy=False)


def _tree_sum(parts: da.Array, every: int | None, to: Any = None) -> da.Array:
    """The partials of ``parts`` (one per block, laid out by :func:`_per_block`) added in a
    tree of completed tasks (Dask's own ``sum`` would not wait for the GPU), as ``to``."""
    axes = tuple(range(parts.ndim - 1))
    out = np.dtype(to or parts.dtype)
    return da.reduction(parts, _keep, partial(_add, to=out), combine=_add, axis=axes,
                        dtype=out, split_every=fan_in(math.prod(parts.numblocks), every),
                        concatenate=True, meta=meta_from_array(parts._meta, 1, out))


def _flat(a: Any) -> da.Array:
    x = as_dask(a)
    return x.reshape(1) if x.ndim == 0 else x


def _byte_chunk(b: Any, k: str, bins: Any) -> Any:
    check_chunk(b, k)
    return warplab.byte_histogram(b.reshape(-1), bins)


def byte_histogram(data: Any, bins: Any = "bytes", *, split_every: int | None = None
                   ) -> da.Array:
    """``warplab.byte_histogram`` of a uint8/int8 dask array of any shape and chunking: the
    byte kernels on every chunk, int64 partials added in Dask's tree. ``bins``: as the
    single-machine function (``"bytes"``, ``"ascii128"``, ``"letters"``, a 256-entry table).
    Returns a lazy ``(nbins,)`` int64 array of the chunks' kind."""
    x = _flat(data)
    if np.dtype(x.dtype) not in (np.dtype(np.uint8), np.dtype(np.int8)):
        raise InvalidTypeError(f"byte_histogram needs uint8 or int8 data, got dtype {x.dtype}")
    nbins = int(warplab.byte_histogram(np.zeros(0, np.uint8), bins, device="cpu").shape[0])
    parts = _per_block(x, partial(_byte_chunk, k=kind(x), bins=bins), nbins, np.int64)
    return _tree_sum(parts, split_every)


# ---------------------------------------------------------------------------------------------
# NumPy's histogram
# ---------------------------------------------------------------------------------------------

def _numeric_chunk(b: Any, *rest: Any, k: str, bins: Any, acc: Any) -> Any:
    check_chunk(b, k)
    *w, rng = rest
    weights = None if not w else w[0].reshape(-1).astype(acc, copy=False)
    counts, _ = warplab.histogram(b.reshape(-1), bins, range=rng, weights=weights)
    return counts if acc is None else counts.astype(acc, copy=False)


def _auto_range(mn: Any, mx: Any) -> tuple[Any, Any]:
    """The data's (min, max) as host scalars of the data's dtype; NumPy's error if either is
    not finite."""
    lo, hi = (np.asarray(v.get() if hasattr(v, "get") else v)[()] for v in (mn, mx))
    if lo > hi:  # every chunk was empty (sizes unknown until computed): NumPy's (0, 1)
        return lo.dtype.type(0), lo.dtype.type(1)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise InvalidValueError(f"autodetected range of [{lo}, {hi}] is not finite")
    return lo, hi


@completed
def _edges(rng: Any, bins: Any, dtype: np.dtype, k: str) -> Any:
    return warplab.histogram(xp_of(k).zeros(0, dtype), bins, range=rng)[1]


@completed
def _density(hist: Any, edges: Any) -> Any:
    xp = xp_of("cupy") if is_cupy(hist) else np
    db = xp.asarray(xp.diff(edges), dtype=np.float64)
    return hist / db / hist.sum()


def histogram(a: Any, bins: Any = 10, range: Any = None, density: Any = None,  # noqa: A002
              weights: Any = None, *, split_every: int | None = None
              ) -> tuple[da.Array, da.Array]:
    """NumPy's ``histogram(a, bins=10, range=None, density=None, weights=None)`` of a dask
    array, lazily: ``(hist, bin_edges)``, two dask arrays of the chunks' kind with the values
    and dtypes of ``warplab.histogram`` on the whole array.

    ``bins`` is a count or an edges array; an estimator name (``"auto"``, ``"fd"``...) needs
    statistics of the whole data and raises ``ValueError`` (compute the edges once with
    ``numpy.histogram_bin_edges`` on a sample, or pass a count and a range). With a count and
    ``range=None`` the range is found first by a lazy min/max reduction over the data (a
    second pass; NumPy's ``ValueError`` for NaN or inf, raised when computed); each chunk is
    then counted with that range, which gives NumPy's counts bit for bit. ``weights``: a dask
    array of ``a``'s shape (rechunked to ``a``'s chunks where they differ); float weights are
    summed in float64 and cast to their dtype at the end.
    """
    x = _flat(a)
    if isinstance(bins, str):
        raise InvalidValueError(f"bins={bins!r}: estimator bins need the whole data; pass a bin "
                                f"count (with or without range) or an edges array")
    if np.dtype(x.dtype).kind not in "biuf":
        raise InvalidTypeError(f"histogram takes booleans, integers or floats, got dtype {x.dtype}")
    k = kind(x)
    others: list[da.Array] = []
    acc = wd = None
    if weights is not None:
        w = _flat(weights)
        wd = np.dtype(w.dtype)
        acc = np.float64 if wd.kind in "fc" else np.int64
        others = [_aligned(w, x, "weights should have the same shape as a.")]
    edges_given = np.ndim(bins) == 1
    if edges_given:
        bins = np.asarray(bins.get() if hasattr(bins, "get") else bins)
        nbins = bins.size - 1
    else:
        nbins = int(bins)
        if nbins < 1:
            raise InvalidValueError("`bins` must be positive, when an integer")
    rng: Any = range
    if range is None and not edges_given and x.size != 0:  # NaN (unknown sizes) too
        rng = dask.delayed(_auto_range)(_min(x), _max(x))
    probe = rng if not isinstance(rng, Delayed) else \
        (x.dtype.type(0), x.dtype.type(1))
    edge_dt = warplab.histogram(np.zeros(0, x.dtype), bins, range=probe,
                                device="cpu")[1].dtype
    hist_dt = np.dtype(np.int64) if wd is None else wd
    fn = partial(_numeric_chunk, k=k, bins=bins, acc=acc)
    parts = _per_block(x, fn, nbins, acc or np.int64, *others, rng)
    hist = _tree_sum(parts, split_every, hist_dt)
    edges = da.from_delayed(dask.delayed(_edges)(rng, bins, np.dtype(x.dtype), k),
                            shape=(nbins + 1,), dtype=edge_dt,
                            meta=meta_from_array(x._meta, 1, edge_dt))
    if density:
        hist = da.map_blocks(_density, hist, edges, dtype=np.float64)
    return hist, edges


# ---------------------------------------------------------------------------------------------
# bincount
# ---------------------------------------------------------------------------------------------

@completed
def _bincount_chunk(b: Any, *w: Any, k: str, minlength: int) -> Any:
    check_chunk(b, k)
    weights = None if not w else w[0].astype(np.float64, copy=False)
    return warplab.bincount(b, weights, minlength)


@completed
def _add_padded(*parts: Any) -> Any:
    """Counts of different lengths added (the shorter ones padded with zeros)."""
    first = parts[0]
    xp = xp_of("cupy") if is_cupy(first) else np
    out = xp.zeros(max(p.shape[0] for p in parts), first.dtype)
    for p in parts:
        out[:p.shape[0]] += p
    return out


def bincount(x: Any, weights: Any = None, minlength: int = 0, *,
             split_every: int | None = None) -> da.Array:
    """NumPy's ``bincount(x, weights=None, minlength=0)`` of a 1-D dask array of
    non-negative integers: ``warplab.bincount`` on every chunk (length ``max(minlength,
    chunk max + 1)``), partials padded and added in a tree (int64 counts; float64 sums with
    weights). The length depends on the data, so the result has an unknown (NaN) length
    until computed; a negative value raises NumPy's ``ValueError`` when computed."""
    a = as_dask(x)
    if a.ndim != 1:
        raise InvalidValueError(f"bincount needs a 1-D array, got {a.ndim} dimensions")
    if np.dtype(a.dtype).kind not in "biu":
        raise InvalidTypeError(f"bincount needs non-negative integers, got dtype {a.dtype}")
    if minlength is None:
        raise InvalidTypeError("use 0 instead of None for minlength")
    if int(minlength) < 0:
        raise InvalidValueError("'minlength' must not be negative")
    k = kind(a)
    others: list[da.Array] = []
    dtype: np.dtype[Any] = np.dtype(np.int64)
    if weights is not None:
        w = as_dask(weights)
        others = [_aligned(w, a, "The weights and list don't have the same length.")]
        dtype = np.dtype(np.float64)
    meta = meta_from_array(a._meta, 1, dtype)
    parts = da.map_blocks(_bincount_chunk, a, *others, k=k, minlength=int(minlength),
                          chunks=((math.nan,) * a.numblocks[0],), dtype=dtype, meta=meta)
    name = "wl-bincount-" + dask.base.tokenize(parts)
    dsk, root = tree(name, list(parts.__dask_keys__()), _add_padded,
                     fan_in(parts.numblocks[0], split_every))
    return array_from_tree(name, dsk, root, [parts], meta)

"""``corrcoef`` and ``corr_pairs`` of dask arrays, by blocks of series.

The row chunks of the data are the blocks. Every block of rows is centred and scaled to unit
norm once (float64; float32 for ``precision="float32"``/``"tf32"`` on CuPy chunks), then each
pair of blocks ``(I, J)`` with ``I <= J`` is one task: the Gram product ``z_I @ z_J.T``
(warplab's tensor-core ``gram`` on CuPy chunks of sm_80+ GPUs, the diagonal blocks on their
upper triangle only; NumPy's BLAS on NumPy chunks), clipped to [-1, 1] with the diagonal 1.
``corrcoef`` places the transpose of block ``(I, J)`` at ``(J, I)`` (a view, no second
product); ``corr_pairs`` reduces each block at once (to the pairs above the threshold, or to
each row's and column's k strongest) and gathers them per block of rows, so no task holds
more than one block of coefficients.
"""
from __future__ import annotations

import math
import operator
from functools import partial
from typing import Any

import dask
import dask.array as da
import numpy as np
from dask.array.utils import meta_from_array

import warplab
from warplab.core.errors import InvalidTypeError, InvalidValueError
from warplab.dask.chunking import as_dask, check_chunk, graph, kind, require_known, xp_of
from warplab.families.corr.pairs import CorrPairs, check_selection

__all__ = ["corr_pairs", "corrcoef"]

PRECISIONS = ("float64", "float32", "tf32")


def _series(x: Any, y: Any, rowvar: bool) -> da.Array:
    """NumPy's ``cov`` preparation on dask arrays: 2-D, one series per row, ``y`` stacked
    under ``x``; the values of a series in one chunk (axis 1 rechunked whole where it is
    split)."""
    arrays = [as_dask(a) for a in (x, y) if a is not None]
    for a in arrays:
        if a.ndim > 2:
            raise InvalidValueError(f"corrcoef takes 1-D or 2-D data, got {a.ndim} dimensions")
        if np.dtype(a.dtype).kind not in "biuf":
            raise InvalidTypeError(f"corrcoef takes real numbers, got dtype {a.dtype}")
    arrays = [a[None, :] if a.ndim == 1 else a for a in arrays]
    if not rowvar:
        arrays = [a if a.shape[0] == 1 else a.T for a in arrays]
    xs = da.concatenate(arrays, axis=0) if len(arrays) > 1 else arrays[0]
    require_known(xs, "corrcoef")
    if xs.numblocks[1] > 1:
        xs = xs.rechunk({1: -1})
    return xs


def _precision(precision: str | None) -> str:
    p = precision or "float64"
    if p not in PRECISIONS:
        raise InvalidValueError(f"unknown precision {p!r}; valid: {', '.join(PRECISIONS)}")
    return p


def _normalise(b: Any, k: str, precision: str) -> Any:
    """Rows centred (values minus the row's first value, then the mean: exact for float32)
    and divided by their centred norm, in float64; rows of zero or non-finite norm are NaN."""
    check_chunk(b, k)
    xp = xp_of(k)
    x64 = b.astype(np.float64, copy=False)
    d = x64 - x64[:, :1]
    c = d - d.mean(axis=1, keepdims=True)
    norm = xp.sqrt((c * c).sum(axis=1))
    valid = xp.isfinite(norm) & (norm > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = c / xp.where(valid, norm, np.nan)[:, None]
    if k == "cupy" and precision != "float64":
        z = z.astype(np.float32)
    return xp.ascontiguousarray(z)


def _product(zi: Any, zj: Any, diag: bool, k: str, precision: str) -> Any:
    """The finished coefficients of two blocks of normalised rows (float64 or float32)."""
    xp = xp_of(k)
    if k == "cupy":
        from warplab.families.corr.gram import gram, gram_available

        if gram_available():
            b = gram(zi, precision=precision) if diag else gram(zi, zj, precision=precision)
        else:
            b = zi @ zj.T
    else:
        b = zi @ zj.T
    xp.clip(b, -1, 1, out=b)
    if diag:
        d = xp.arange(b.shape[0])
        b[d, d] = xp.where(xp.isnan(b[d, d]), np.nan, 1.0)
    return b


def _block(zi: Any, zj: Any, diag: bool, k: str, precision: str, dtype: np.dtype) -> Any:
    return _product(zi, zj, diag, k, precision).astype(dtype, copy=False)


def _transpose(b: Any) -> Any:
    return b.T


def _whole(xs: Any, dtype: np.dtype) -> Any:
    """NumPy's edge cases (one series, fewer than two values) on the whole array."""
    return warplab.corrcoef(xs, dtype=dtype)


def _graph(xs: da.Array, precision: str, name: str) -> tuple[da.Array, int, str]:
    """The normalised rows (one chunk per block of series), the number of blocks, the kind."""
    k = kind(xs)
    zdt = np.float32 if k == "cupy" and precision != "float64" else np.float64
    z = da.map_blocks(_normalise, xs, k=k, precision=precision, dtype=zdt,
                      meta=meta_from_array(xs._meta, 2, zdt), name=f"{name}-z")
    return z, xs.numblocks[0], k


def corrcoef(x: Any, y: Any = None, rowvar: bool = True, *, dtype: Any = None,
             precision: str | None = None) -> da.Array:
    """``numpy.corrcoef`` of dask arrays, lazily: an ``(M, M)`` dask array whose blocks are
    the row chunks of the data (series per row; ``rowvar=False``: per column; ``y`` stacked
    under ``x``). A series whose values span several chunks is rechunked whole along axis 1
    first. Only blocks ``(I, J)`` with ``I <= J`` are computed; ``(J, I)`` is the transpose
    (a view). ``dtype``: the result's (float64 by default); ``precision``: as
    ``warplab.corrcoef`` on CuPy chunks (NumPy chunks compute in float64). Persist it to
    keep the blocks on the workers: ``r = corrcoef(x).persist()``.

    Constant or non-finite series give NaN rows and columns as the single-machine function,
    but without its ``RuntimeWarning`` (it would be raised on a worker). Unknown chunk sizes:
    ``ValueError`` (call ``x.compute_chunk_sizes()``)."""
    precision = _precision(precision)
    xs = _series(x, y, rowvar)
    res = np.dtype(np.float64 if dtype is None else dtype)
    if res.kind != "f":
        raise InvalidTypeError(f"corrcoef: dtype must be a float dtype, got {res}")
    m, n = (int(s) for s in xs.shape)
    if m <= 1 or n < 2:
        shape = () if m == 1 else (m, m)
        d = dask.delayed(_whole)(xs, res)
        return da.from_delayed(d, shape=shape, dtype=res,
                               meta=meta_from_array(xs._meta, len(shape), res))
    name = "wl-corrcoef-" + dask.base.tokenize(xs, precision, res)
    z, nb, k = _graph(xs, precision, name)
    dsk: dict = {}
    for i in range(nb):
        for j in range(nb):
            if i <= j:
                dsk[(name, i, j)] = (partial(_block, diag=i == j, k=k, precision=precision,
                                             dtype=res), (z.name, i, 0), (z.name, j, 0))
            else:
                dsk[(name, i, j)] = (_transpose, (name, j, i))
    return da.Array(graph(name, dsk, [z]), name, chunks=(xs.chunks[0], xs.chunks[0]),
                    meta=meta_from_array(xs._meta, 2, res))


# ---------------------------------------------------------------------------------------------
# corr_pairs
# ---------------------------------------------------------------------------------------------

def _above(zi: Any, zj: Any, r0: int, c0: int, diag: bool, k: str, precision: str,
           thr: float) -> tuple:
    """Pairs ``i < j`` of one block with ``|r| >= thr``: global (i, j, r)."""
    xp = xp_of(k)
    b = _product(zi, zj, diag, k, precision)
    hit = xp.abs(b) >= thr
    if diag:
        hit = xp.triu(hit, 1)
    ii, jj = xp.nonzero(hit)
    return ii.astype(np.int64) + r0, jj.astype(np.int64) + c0, b[ii, jj].astype(np.float64)


def _best(b: Any, c0: int, kk: int, xp: Any) -> tuple:
    """Per row of ``b`` (columns from ``c0``) its ``kk`` largest ``|r|``: (key, col, r)."""
    key = xp.abs(b).astype(np.float64)
    key[xp.isnan(key)] = -np.inf
    kk = min(kk, b.shape[1])
    pick = xp.argsort(-key, axis=1)[:, :kk]
    return (xp.take_along_axis(key, pick, axis=1), pick.astype(np.int64) + c0,
            xp.take_along_axis(b, pick, axis=1).astype(np.float64))


def _top(zi: Any, zj: Any, r0: int, c0: int, diag: bool, k: str, precision: str, kk: int
         ) -> tuple:
    """One block's candidates: for its rows, and (above the diagonal) for its columns."""
    xp = xp_of(k)
    b = _product(zi, zj, diag, k, precision)
    if diag:
        d = xp.arange(b.shape[0])
        b[d, d] = np.nan  # no self pairs
        return _best(b, c0, kk, xp), None
    return _best(b, c0, kk, xp), _best(xp.ascontiguousarray(b.T), r0, kk, xp)


def _gather_above(m: int, k: str, *parts: tuple) -> tuple:
    xp = xp_of(k)
    i, j, r = (xp.concatenate([p[f] for p in parts]) for f in range(3))
    order = xp.argsort(i * m + j)
    return i[order], j[order], r[order]


def _gather_top(r0: int, kk: int, k: str, *cands: tuple) -> tuple:
    """Merge a block of rows' candidates into each row's ``kk`` best, strongest first, then
    the single-machine layout: grouped by row, rows with fewer partners shorter."""
    xp = xp_of(k)
    key, idx, val = (xp.concatenate([c[f] for c in cands], axis=1) for f in range(3))
    pick = xp.argsort(-key, axis=1)[:, :kk]
    key, idx, val = (xp.take_along_axis(a, pick, axis=1) for a in (key, idx, val))
    keep = key > -np.inf
    rows = xp.broadcast_to(xp.arange(r0, r0 + key.shape[0], dtype=np.int64)[:, None],
                           key.shape)
    return rows[keep], idx[keep], val[keep]


def corr_pairs(x: Any, *, threshold: float | None = None, top_k: int | None = None,
               rowvar: bool = True, precision: str | None = None) -> CorrPairs:
    """``warplab.corr_pairs`` of a dask array, lazily, never holding the M x M matrix:
    ``CorrPairs(i, j, r)``, three 1-D dask arrays of unknown length (one chunk per block of
    rows; compute them together: ``dask.compute(*pairs)``), equal to the single-machine
    result: with ``threshold`` every pair ``i < j`` with ``|r| >= threshold`` sorted by
    ``(i, j)``; with ``top_k`` each series' ``k`` strongest partners, grouped by ``i``,
    strongest first.

    Blocks are the row chunks (axis 1 rechunked whole where split); each block pair
    ``(I, J)``, ``I <= J``, is one task that computes its coefficients and reduces them at
    once (threshold: its hits; top_k: the k best of each of its rows and columns); one task
    per block of rows gathers and orders them."""
    thr, top = check_selection(threshold, top_k)
    precision = _precision(precision)
    xs = _series(x, None, rowvar)
    m, n = (int(s) for s in xs.shape)
    name = "wl-corrpairs-" + dask.base.tokenize(xs, thr, top, precision)
    meta_i = meta_from_array(xs._meta, 1, np.int64)
    meta_r = meta_from_array(xs._meta, 1, np.float64)
    if m < 2 or n < 2:
        return CorrPairs(*(da.from_array(meta, chunks=(0,), asarray=False) for meta in
                           (meta_i, meta_i, meta_r)))
    z, nb, k = _graph(xs, precision, name)
    starts = [0, *np.cumsum(xs.chunks[0]).tolist()]
    kk = min(top or 1, m - 1)
    dsk: dict = {}
    for i in range(nb):
        for j in range(i, nb):
            fn = partial(_above, thr=thr) if thr is not None else partial(_top, kk=kk)
            dsk[(f"{name}-b", i, j)] = (partial(fn, r0=starts[i], c0=starts[j], diag=i == j,
                                                k=k, precision=precision),
                                        (z.name, i, 0), (z.name, j, 0))
    for i in range(nb):
        if thr is not None:
            parts = [(f"{name}-b", i, j) for j in range(i, nb)]
            dsk[(f"{name}-rows", i)] = (partial(_gather_above, m, k), *parts)
        else:
            cands = [(operator.getitem, (f"{name}-b", i, j), 0) for j in range(i, nb)] + \
                [(operator.getitem, (f"{name}-b", j, i), 1) for j in range(i)]
            dsk[(f"{name}-rows", i)] = (partial(_gather_top, starts[i], kk, k), *cands)
        for f, part in enumerate("ijr"):
            dsk[(f"{name}-{part}", i)] = (operator.getitem, (f"{name}-rows", i), f)
    chunks = ((math.nan,) * nb,)
    return CorrPairs(*(da.Array(graph(f"{name}-{part}", dsk, [z]), f"{name}-{part}",
                                chunks=chunks, meta=meta)
                       for part, meta in zip("ijr", (meta_i, meta_i, meta_r))))

"""``corr_pairs``: the strongest correlations of M series without the M x M matrix.

The coefficients are computed tile by tile (the same engines and finishing as ``corrcoef``;
tiles above the diagonal only) and each tile is reduced at once: to the pairs above a threshold,
or merged into a running top-k per series. Peak memory is the normalised rows (M N values) plus a
few tiles, so M = 200,000 series of N = 256 (a 160 GB float32 matrix) runs on one GPU.
"""
from __future__ import annotations

import numbers
from typing import Any, NamedTuple, cast

import numpy as np

from warplab.core import registry as _registry
from warplab.core.arrays import as_input, to_device, to_host
from warplab.core.device import device_errors
from warplab.core.errors import InvalidTypeError, InvalidValueError
from warplab.families.corr import tiles
from warplab.families.corr.api import stack_series
from warplab.families.corr.spec import CorrProblem, check_precision, work_itemsize
from warplab.families.corr.tiles import finish, upper_tiles, warn_invalid

#: Largest device tile side (bounds the latency and temporaries of one tile).
MAX_DEVICE_TILE = 16384


class CorrPairs(NamedTuple):
    """Pairs of series and their coefficient: ``i``, ``j`` (int64) and ``r`` (float64)."""

    i: Any
    j: Any
    r: Any


def check_selection(threshold: Any, top_k: Any) -> tuple[float | None, int | None]:
    """(threshold, top_k) of a ``corr_pairs`` call, checked: exactly one of them, a threshold
    in [0, 1], a top_k int > 0 (``warplab.dask.corr_pairs`` checks the same way)."""
    if (threshold is None) == (top_k is None):
        raise InvalidValueError("corr_pairs needs exactly one of threshold= and top_k=")
    if threshold is not None:
        if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real):
            raise InvalidTypeError(f"threshold must be a number in [0, 1], got {threshold!r}")
        if not 0.0 <= float(threshold) <= 1.0:
            raise InvalidValueError(f"threshold must be in [0, 1], got {threshold}")
        return float(threshold), None
    if isinstance(top_k, bool) or not isinstance(top_k, numbers.Integral):
        raise InvalidTypeError(f"top_k must be an int > 0, got {top_k!r}")
    if top_k <= 0:
        raise InvalidValueError(f"top_k must be > 0, got {top_k}")
    return None, int(top_k)


@device_errors
def corr_pairs(x: Any, *, threshold: float | None = None, top_k: int | None = None,
               rowvar: bool = True, precision: str | None = None, variant: str | None = None,
               device: str | None = None) -> CorrPairs:
    """The pairs of series whose Pearson coefficient is strong, never holding the M x M matrix.

    Args:
        x: 2-D real data, one series per row (``rowvar=False``: per column); NumPy, CuPy,
            torch, anything with ``__cuda_array_interface__`` / DLPack.
        threshold: every pair ``i < j`` with ``|r| >= threshold`` (in [0, 1]), sorted by
            ``(i, j)``.
        top_k: per series ``i``, its ``k`` partners ``j != i`` of largest ``|r|`` (fewer where
            fewer have a coefficient), grouped by ``i``, strongest first. Exactly one of
            ``threshold`` and ``top_k``.
        precision, variant, device: as :func:`corrcoef` (``"float64"`` by default; the
            ``float32`` and ``tf32`` precisions can move pairs within their error of the
            threshold across it).

    Returns:
        ``CorrPairs(i, j, r)``: int64, int64 and float64 arrays, NumPy for host input, CuPy
        for device input. Constant or non-finite series (NaN coefficients) pair with nothing.

    Raises:
        ValueError: not exactly one of threshold / top_k, threshold outside [0, 1],
        top_k <= 0, more than 2-D data, unknown precision or variant.  TypeError: a
        non-numeric threshold or top_k, complex data.

    Performance:
        ``M (M + 1) / 2 * N`` multiply-adds in tiles of the upper triangle (side chosen from
        free memory, at most 16384); per tile one reduction (threshold: a compare and a
        compaction, one sync; top_k: a partial sort of k + tile columns per row).
    """
    thr, k = check_selection(threshold, top_k)
    precision = check_precision(precision)
    inp = as_input(x)
    xs = stack_series(inp.array, None, rowvar, inp.on_device)
    m, n = (int(s) for s in xs.shape)
    backend = _registry.pick_backend("corrcoef", device, variant, inp.on_device)
    xp = np if backend == "cpu" else __import__("cupy")
    if m < 2 or n < 2:
        empty = CorrPairs(xp.zeros(0, np.int64), xp.zeros(0, np.int64), xp.zeros(0, np.float64))
        return _deliver(empty, inp.on_device)
    v = _registry.choose("corrcoef", backend, CorrProblem(m, n, np.dtype(xs.dtype), precision,
                                                          inp.on_device), variant)
    _registry.ran(v)
    eng = v.fn(to_host(xs) if backend == "cpu" else to_device(xs), precision)
    warn_invalid(eng.all_valid)
    side = (tiles.cpu_tile(m) if backend == "cpu" else
            tiles.device_tile(m, n, work_itemsize(precision), tiles.free_device_bytes(),
                              MAX_DEVICE_TILE))
    res = (_above(eng, thr, side) if thr is not None
           else _top_k(eng, min(cast(int, k), m - 1), side))  # one of them is given
    return _deliver(res, inp.on_device)


def _deliver(res: CorrPairs, on_device: bool) -> CorrPairs:
    move = to_device if on_device else to_host
    return CorrPairs(*(move(a) for a in res))


def _above(eng: Any, thr: float, side: int) -> CorrPairs:
    """Pairs ``i < j`` with ``|r| >= thr``, tile by tile, sorted by ``(i, j)``."""
    xp = eng.xp
    found: list[tuple[Any, Any, Any]] = []
    for r0, r1, c0, c1 in upper_tiles(eng.m, side):
        b = finish(eng.block(r0, r1, c0, c1), r0, c0, eng)
        hit = xp.abs(b) >= thr  # NaN compares False
        if r0 == c0:
            hit = xp.triu(hit, 1)
        ii, jj = xp.nonzero(hit)
        if ii.size:
            found.append((ii + r0, jj + c0, b[ii, jj].astype(np.float64)))
    if not found:
        return CorrPairs(xp.zeros(0, np.int64), xp.zeros(0, np.int64), xp.zeros(0, np.float64))
    i, j, r = (xp.concatenate(parts).astype(dt) for parts, dt in
               zip(zip(*found), (np.int64, np.int64, np.float64)))
    order = xp.argsort(i * eng.m + j)
    return CorrPairs(i[order], j[order], r[order])


class _TopK:
    """Per series the k best partners so far: |r| (``-inf`` when none), partner, r."""

    def __init__(self, xp: Any, m: int, k: int) -> None:
        self.xp, self.k = xp, k
        self.key = xp.full((m, k), -np.inf)
        self.idx = xp.full((m, k), -1, dtype=np.int64)
        self.r = xp.full((m, k), np.nan)

    def merge(self, r0: int, c0: int, b: Any) -> None:
        """Offer the coefficients ``b`` of rows ``r0..`` with columns ``c0..`` (no self pairs
        inside ``b``: their key must already be ``-inf``)."""
        xp, rows, cols = self.xp, b.shape[0], b.shape[1]
        key = xp.abs(b).astype(np.float64)
        key[xp.isnan(key)] = -np.inf
        keys = xp.concatenate([self.key[r0:r0 + rows], key], axis=1)
        idx = xp.concatenate([self.idx[r0:r0 + rows],
                              xp.broadcast_to(xp.arange(c0, c0 + cols, dtype=np.int64),
                                              (rows, cols))], axis=1)
        vals = xp.concatenate([self.r[r0:r0 + rows], b.astype(np.float64)], axis=1)
        pick = xp.argsort(-keys, axis=1)[:, :self.k]
        self.key[r0:r0 + rows] = xp.take_along_axis(keys, pick, axis=1)
        self.idx[r0:r0 + rows] = xp.take_along_axis(idx, pick, axis=1)
        self.r[r0:r0 + rows] = xp.take_along_axis(vals, pick, axis=1)

    def result(self) -> CorrPairs:
        xp = self.xp
        m = self.key.shape[0]
        order = xp.argsort(-self.key, axis=1)
        key = xp.take_along_axis(self.key, order, axis=1)
        keep = key > -np.inf
        i = xp.broadcast_to(xp.arange(m, dtype=np.int64)[:, None], key.shape)[keep]
        return CorrPairs(i, xp.take_along_axis(self.idx, order, axis=1)[keep],
                         xp.take_along_axis(self.r, order, axis=1)[keep])


def _top_k(eng: Any, k: int, side: int) -> CorrPairs:
    """The ``k`` strongest partners of every series, tile by tile (each tile above the
    diagonal offered to its rows and, transposed, to its columns)."""
    best = _TopK(eng.xp, eng.m, k)
    for r0, r1, c0, c1 in upper_tiles(eng.m, side):
        b = finish(eng.block(r0, r1, c0, c1), r0, c0, eng)
        if r0 == c0:
            d = eng.xp.arange(r1 - r0)
            b[d, d] = np.nan  # no self pairs
            best.merge(r0, c0, b)
        else:
            best.merge(r0, c0, b)
            best.merge(c0, r0, eng.xp.ascontiguousarray(b.T))
    return best.result()

"""``corr_pairs``: the strongest correlations of M series without the M x M matrix.

The coefficients are computed block by block (the same engines and finishing as ``corrcoef``;
the upper triangle only) and each block is reduced at once. Threshold: row strips
(``strips.py``), each ordered by ``(i, j)`` without a sort, so that the pairs leave for their
sink (``sinks.py``: the GPU, host memory or a ``.npy`` file; ``out=``) strip by strip, sorted.
top_k: square tiles merged into a running top-k per series. Peak memory is the normalised rows
(M N values) plus one strip or a few tiles (and the pairs where they are kept), so M = 200,000
series of N = 256 (a 160 GB float32 matrix) runs on one GPU.
"""
from __future__ import annotations

import numbers
import os
from typing import Any, NamedTuple, cast

import numpy as np

from warplab.core import overrides, registry as _registry
from warplab.core.arrays import as_input, to_device, to_host
from warplab.core.device import device_errors, host_memory_available
from warplab.core.errors import InvalidTypeError, InvalidValueError
from warplab.families.corr import sinks, tiles
from warplab.families.corr.api import stack_series
from warplab.families.corr.sinks import triangle_share
from warplab.families.corr.spec import CorrProblem, check_precision, work_itemsize
from warplab.families.corr.strips import stream_above, strip_bytes_for, strips_above
from warplab.families.corr.tiles import finish, upper_tiles, warn_invalid

__all__ = ["CorrPairs", "check_selection", "corr_pairs", "stream_above", "strip_bytes_for"]

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
               device: str | None = None, out: str | os.PathLike[str] | None = None
               ) -> CorrPairs:
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
        out: where the pairs go. None: NumPy for host input (moved to host memory strip by
            strip as they are found), CuPy for device input (kept on the GPU). ``"host"``:
            NumPy, moved to host memory as found, also for device input. A path (``str`` or
            ``os.PathLike``): written to that ``.npy`` file as found, records of
            ``[("i", "<i8"), ("j", "<i8"), ("r", "<f8")]`` (``numpy.load(path,
            mmap_mode="r")`` gives them); the result is read-only ``numpy.memmap`` views of
            the file's fields. With ``top_k`` the same (the result moved or written at the
            end).

    Returns:
        ``CorrPairs(i, j, r)``: int64, int64 and float64 arrays (see ``out``). Constant or
        non-finite series (NaN coefficients) pair with nothing.

    Raises:
        ValueError: not exactly one of threshold / top_k, threshold outside [0, 1],
        top_k <= 0, more than 2-D data, unknown precision or variant.  TypeError: a
        non-numeric threshold or top_k, complex data, an ``out`` that is not None, "host" or
        a path.  DeviceOutOfMemoryError: pairs kept on the GPU would not fit there (the
        message gives the pairs found, the expected total and what to pass instead), or the
        GPU ran out of memory.  HostOutOfMemoryError: pairs bound for host memory would not
        fit the memory available (the same details).  OSError: the file cannot be written.

    Performance:
        ``M (M + 1) / 2 * N`` multiply-adds. Threshold: the upper triangle in row strips
        (``strips.stream_above``; height from a byte budget, ``strips.strip_bytes_for``), each
        reduced at once and ordered without a sort; one synchronisation per block of a strip
        (the compaction), one D2H copy per strip where the pairs leave the GPU. top_k: square
        tiles (side from free memory, at most 16384), per tile a partial sort of k + tile
        columns per row.
    """
    thr, k = check_selection(threshold, top_k)
    precision = check_precision(precision)
    path = check_out(out)
    if type(x) is not np.ndarray and overrides.kind(x) is not None:
        raise overrides.refuse("corr_pairs", x)
    inp = as_input(x)
    xs = stack_series(inp.array, None, rowvar, inp.on_device)
    m, n = (int(s) for s in xs.shape)
    backend = _registry.pick_backend("corrcoef", device, variant, inp.on_device)
    xp = np if backend == "cpu" else __import__("cupy")
    if m < 2 or n < 2:
        empty = CorrPairs(xp.zeros(0, np.int64), xp.zeros(0, np.int64), xp.zeros(0, np.float64))
        return _deliver(empty, inp.on_device) if out is None else _written(path, empty)
    v = _registry.choose("corrcoef", backend, CorrProblem(m, n, np.dtype(xs.dtype), precision,
                                                          inp.on_device), variant)
    _registry.ran(v)
    eng = v.fn(to_host(xs) if backend == "cpu" else to_device(xs), precision)
    warn_invalid(eng.all_valid)
    if thr is None:
        side = (tiles.cpu_tile(m) if backend == "cpu" else
                tiles.device_tile(m, n, work_itemsize(precision), tiles.free_device_bytes(),
                                  MAX_DEVICE_TILE))
        res = _top_k(eng, min(cast(int, k), m - 1), side)  # one of them is given
        return _deliver(res, inp.on_device) if out is None else _written(path, res)
    budget = strip_bytes_for(eng)
    sink = _sink(out, path, inp.on_device, xp, m, budget)
    try:
        for _a, b, i, j, r in strips_above(eng, thr, 0, m, budget):
            sink.add(i, j, r, triangle_share(m, b))
        res = CorrPairs(*sink.result())
    except BaseException:
        sink.abort()
        raise
    return _deliver(res, inp.on_device) if out is None else res


def check_out(out: Any) -> str | None:
    """``out=`` of ``corr_pairs`` checked: the file path it names (a str); None for None and
    ``"host"``. ``TypeError`` for anything else, ``ValueError`` for an empty path."""
    if out is None or (isinstance(out, str) and out == "host"):
        return None
    path = os.fspath(out) if isinstance(out, (str, os.PathLike)) else None
    if not isinstance(path, str):
        raise InvalidTypeError(f"corr_pairs out= must be None, 'host' or a file path (str or "
                               f"os.PathLike), got {out!r}")
    if not path:
        raise InvalidValueError("corr_pairs out= must not be an empty path")
    return path


def _sink(out: Any, path: str | None, on_device: bool, xp: Any, m: int, budget: int
          ) -> sinks.DeviceSink | sinks.HostSink | sinks.FileSink:
    """Where the pairs go: a file (``out`` a path), the GPU (``out=None``, device input, cuda
    backend) or host memory (``out="host"``, host input, or the cpu backend)."""
    if path is not None:
        return sinks.FileSink(path)
    if out is None and on_device and xp is not np:
        return sinks.DeviceSink(xp, m, tiles.free_device_bytes(), budget)
    return sinks.HostSink(m, host_memory_available(), budget)


def _written(path: str | None, res: CorrPairs) -> CorrPairs:
    """A finished result (top_k, or no pair possible) where ``out=`` asks: host memory
    (``path`` None: ``out="host"``) or the file."""
    if path is None:
        return CorrPairs(*(to_host(a) for a in res))
    sink = sinks.FileSink(path)
    try:
        sink.add(res.i, res.j, res.r, 1.0)
        return CorrPairs(*sink.result())
    except BaseException:
        sink.abort()
        raise


def _deliver(res: CorrPairs, on_device: bool) -> CorrPairs:
    move = to_device if on_device else to_host
    return CorrPairs(*(move(a) for a in res))


class TopK:
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
    best = TopK(eng.xp, eng.m, k)
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

"""The cuda engines' host code (launch arguments, grids, slices, mirroring, validity, tiles) run
on the CPU: CuPy is replaced by NumPy and each kernel of corr.cu by a NumPy model of what it
computes per thread (checking the grid and block it is launched with), ``gram`` by the Gram
module's NumPy emulation. Results must match numpy.corrcoef within the stated bounds."""
from __future__ import annotations

import ctypes
import sys
import types
import warnings

import numpy as np
import pytest

import warplab
from warplab.families.corr import cuda, gram, pairs, small_cuda, tiles
from warplab.families.corr.spec import PRECISIONS, error_bound
from warplab.families.corr.tiles import fill_tiled, full_matrix

T, NB, PB = (cuda.DEFINES[k] for k in ("CORR_TILE", "CORR_NORM_BLOCK", "CORR_PAIR_BLOCK"))


def _normalise(grid, block, args) -> None:
    x, z, valid, extent, m, n = args
    assert block == (NB,) and 1 <= grid[0] <= m and x.shape == z.shape == (m, n)
    assert (isinstance(extent, np.ndarray) and extent.shape == (m, 2)) or int(extent) == 0
    for row in range(int(m)):
        d = x[row].astype(np.float64) - np.float64(x[row, 0])
        c = d - d.sum() / n
        norm = np.sqrt((c * c).sum())
        ok = bool(np.isfinite(norm) and norm > 0)
        z[row] = (c * (1.0 / norm if ok else np.nan)).astype(z.dtype)
        valid[row] = ok
        if isinstance(extent, np.ndarray):
            a = np.abs(z[row].astype(np.float64))
            extent[row] = (a.max(), a.sum()) if ok else (0.0, 0.0)


def _tiled(grid, block, args) -> None:
    a, b, c, rows, cols, n, sym = args
    assert block == (T, T) and grid == (-(-int(cols) // T), -(-int(rows) // T))
    assert a.shape == (rows, n) and b.shape == (cols, n) and c.shape == (rows, cols)
    acc = a.astype(c.dtype) @ b.astype(c.dtype).T
    for by in range(grid[1]):
        for bx in range(grid[0]):
            if sym and by > bx:
                continue
            c[by * T:(by + 1) * T, bx * T:(bx + 1) * T] = acc[by * T:(by + 1) * T,
                                                              bx * T:(bx + 1) * T]


def _direct(grid, block, args) -> None:
    x, mean, norm, out, n, r0, rows, c0, cols = args
    assert block == (PB, PB) and grid == (-(-int(cols) // PB), -(-int(rows) // PB))
    assert x.shape[1] == n and out.shape == (rows, cols)
    for bi in range(int(rows)):
        for bj in range(int(cols)):
            i, j = r0 + bi, c0 + bj
            if i < j:
                s = ((x[i] - mean[i]) * (x[j] - mean[j])).sum()
                with np.errstate(invalid="ignore", divide="ignore"):
                    out[bi, bj] = s / (norm[i] * norm[j])


def _finish(grid, block, args) -> None:
    b, valid, rows, cols, srow, scol, r0, c0 = args
    assert block == (NB,) and grid[1] == min(int(rows), cuda.MAX_GRID_Y) and grid[0] >= 1
    flat = np.lib.stride_tricks.as_strided(b, (int(rows), int(cols)),
                                           (int(srow) * b.itemsize, int(scol) * b.itemsize))
    gi = int(r0) + np.arange(int(rows))[:, None]
    gj = int(c0) + np.arange(int(cols))[None, :]
    ok = valid[gi] & valid[gj]
    flat[...] = np.where(ok, np.where(gi == gj, 1, np.clip(flat, -1, 1)), np.nan)


def _small(grid, block, args) -> None:
    """corr_small: one block; the finished float64 matrix and the validity word (an int32 at
    the address it is given, when not 0)."""
    x, r, word, m, n, srow, scol = args
    assert grid == (1,) and block == (small_cuda.DEFINES["CORR_SMALL_BLOCK"],)
    assert small_cuda.fits(int(m), int(n)) and x.shape == (m, n) and r.shape == (m, m)
    assert (int(srow), int(scol)) == tuple(st // x.itemsize for st in x.strides)
    with np.errstate(all="ignore"):
        d = x.astype(np.float64) - x[:, :1].astype(np.float64)
        c = d - (d.sum(axis=1) / int(n))[:, None]
        norm = np.sqrt((c * c).sum(axis=1))
        ok = np.isfinite(norm) & (norm > 0)
        z = c * np.where(ok, 1.0 / np.where(ok, norm, 1.0), 0.0)[:, None]
        g = np.clip(z @ z.T, -1, 1)
    np.fill_diagonal(g, 1.0)
    g[~ok, :] = np.nan
    g[:, ~ok] = np.nan
    r[...] = g
    if int(word):
        ctypes.c_int32.from_address(int(word)).value = int(ok.all())


MODELS = {"corr_normalise_rows": _normalise, "corr_tiled_smem": _tiled,
          "corr_pairwise_direct": _direct, "corr_finish": _finish, "corr_small": _small}


@pytest.fixture(autouse=True)
def numpy_device(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("cupy")
    fake.__getattr__ = lambda name: getattr(np, name)  # type: ignore[method-assign]
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(cuda, "_kernel", lambda expr: MODELS[expr.split("<")[0]])
    monkeypatch.setattr(small_cuda, "_kernel", lambda expr: MODELS[expr.split("<")[0]])
    monkeypatch.setattr(cuda, "read_small", lambda *arrays: [np.asarray(a) for a in arrays])
    monkeypatch.setattr(gram, "gram", lambda a, b=None, *, precision="float64":
                        gram.gram_reference(a, b, precision))
    # the per-series statistics of the "device" rows on the NumPy backend (the fake CuPy's
    # arrays are NumPy's, which the reductions' plans would take for device arrays)
    monkeypatch.setattr(cuda, "series_stats_rows", _series_stats)


def _series_stats(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``series_stats_rows`` in NumPy: per row the mean and the centred norm (float64)."""
    x = np.asarray(x, np.float64)
    mean = x.mean(axis=1)
    return mean, np.sqrt(((x - mean[:, None]) ** 2).sum(axis=1))


def _data(m: int, n: int, const: bool) -> np.ndarray:
    x = np.cumsum(np.random.default_rng(m + n).standard_normal((m, n)), axis=1)
    x = x.astype(np.float32)
    if const:
        x[1::4] = np.float32(0.1)
    return x


def _check(got: np.ndarray, x: np.ndarray, bound: float) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = np.corrcoef(x.astype(np.float64))
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    assert np.abs(got[ok] - want[ok]).max() <= bound


ENGINES = {"tc_gram": cuda.GramEngine, "tiled_smem": cuda.TiledEngine,
           "pairwise_direct": cuda.DirectEngine}


@pytest.mark.parametrize("const", [False, True])
@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("name", list(ENGINES))
def test_engine_whole_and_tiled(name: str, precision: str, const: bool) -> None:
    x = _data(37, 45, const)
    eng = ENGINES[name](x, precision)
    assert eng.all_valid is not const
    bound = error_bound(name, precision, 45)
    _check(np.asarray(full_matrix(eng), np.float64), x, bound)
    out = np.full((37, 37), np.nan)
    fill_tiled(eng, out, 10)
    _check(out, x, bound)


def test_device_tile_sizes() -> None:
    assert tiles.device_tile(200_000, 256, 8, 80 << 30, 16384) == 16384
    assert tiles.device_tile(1000, 10, 8, 1 << 20) == 256  # at least 256
    assert tiles.device_tile(100, 10, 8, 1 << 20) == 100  # never more than M


@pytest.mark.parametrize("name", list(ENGINES))
def test_pairs_on_engines(name: str) -> None:
    x = _data(30, 40, True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want_above = warplab.corr_pairs(x, threshold=0.6, device="cpu")
        want_top = warplab.corr_pairs(x, top_k=3, device="cpu")
    eng = ENGINES[name](x, "float64")
    strips = list(pairs.stream_above(eng, 0.6, 0, 30, 2 * 48 * 7 * 30))  # 7 rows, then more
    assert len(strips) > 1
    got = [np.concatenate(f) for f in zip(*strips)]
    for g, w in zip(got, want_above):
        np.testing.assert_allclose(g, w, atol=1e-9)
    top = pairs._top_k(eng, 3, 7)
    np.testing.assert_array_equal(top.i, want_top.i)
    np.testing.assert_allclose(np.abs(top.r), np.abs(want_top.r), atol=1e-9)

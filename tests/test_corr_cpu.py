"""corrcoef on the NumPy backend: NumPy's semantics (stacking, rowvar, 1-D, constant series,
NaN, dtypes), bad input, out= and memory maps tiled, nan_policy="pairwise", and the index
math of the tiles and of the tiled_smem kernel (a NumPy model)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import last_ran
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import warplab
from warplab.families.corr import tiles
from warplab.families.corr.cpu import normalise_rows
from warplab.families.corr.cuda import DEFINES
from warplab.families.corr.nan import pairwise_complete
from warplab.families.corr.tiles import mirror_upper, upper_tiles

RNG = np.random.default_rng(12)


@pytest.fixture
def small_tiles(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tiles, "TILE_CAP", 3)


@pytest.mark.parametrize("shape", [(2, 2), (3, 5), (17, 33), (40, 7)])
def test_matches_numpy(shape: tuple[int, int]) -> None:
    x = RNG.standard_normal(shape)
    got = warplab.corrcoef(x)
    assert last_ran() == "numpy"
    assert got.dtype == np.float64 and got.shape == (shape[0], shape[0])
    np.testing.assert_allclose(got, np.corrcoef(x), atol=1e-13)
    assert np.array_equal(np.diag(got), np.ones(shape[0]))
    assert np.array_equal(got, got.T)


def test_random_walks_highly_correlated() -> None:
    x = warplab.random_walk(20, 300, seed=3)
    np.testing.assert_allclose(warplab.corrcoef(x), np.corrcoef(x), atol=1e-12)


def test_y_rowvar_and_1d() -> None:
    x, y = RNG.standard_normal((3, 9)), RNG.standard_normal((2, 9))
    np.testing.assert_allclose(warplab.corrcoef(x, y), np.corrcoef(x, y), atol=1e-13)
    np.testing.assert_allclose(warplab.corrcoef(x.T, y.T, rowvar=False),
                               np.corrcoef(x.T, y.T, rowvar=False), atol=1e-13)
    a, b = x[0], y[0]
    one = warplab.corrcoef(a)
    assert type(one) is type(np.corrcoef(a)) and np.ndim(one) == 0 and one == 1.0
    np.testing.assert_allclose(warplab.corrcoef(a, b), np.corrcoef(a, b), atol=1e-13)
    # a single row with rowvar=False stays one series (NumPy's rule)
    assert warplab.corrcoef(x[:1], rowvar=False).shape == ()


def test_constant_series_nan_with_warning() -> None:
    x = RNG.standard_normal((4, 10))
    x[2] = 3.0
    with pytest.warns(RuntimeWarning):
        want = np.corrcoef(x)
    with pytest.warns(RuntimeWarning, match="invalid value"):
        got = warplab.corrcoef(x)
    assert np.isnan(got[2]).all() and np.isnan(got[:, 2]).all()
    np.testing.assert_allclose(got, want, atol=1e-13)  # NaN where NumPy has NaN


def test_nan_propagates() -> None:
    x = RNG.standard_normal((4, 10))
    x[1, 4] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got, want = warplab.corrcoef(x), np.corrcoef(x)
    np.testing.assert_allclose(got, want, atol=1e-13)
    assert np.isnan(got[1]).all()


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.bool_, np.float16,
                                   np.float32])
def test_input_dtypes_as_numpy(dtype: type) -> None:
    x = RNG.integers(0, 2 if dtype is np.bool_ else 100, (5, 12)).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = np.corrcoef(x)
        got = warplab.corrcoef(x)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_dtype_argument() -> None:
    x = RNG.standard_normal((5, 12))
    got = warplab.corrcoef(x, dtype=np.float32)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.corrcoef(x, dtype=np.float32), atol=1e-6)


def test_precisions_run_float64_on_cpu() -> None:
    x = RNG.standard_normal((6, 50)).astype(np.float32)
    ref = warplab.corrcoef(x)
    for p in ("float32", "tf32"):
        assert np.array_equal(warplab.corrcoef(x, precision=p), ref)


def test_edge_shapes_follow_numpy() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for shape in [(3, 1), (1, 5), (0, 4)]:
            x = RNG.standard_normal(shape)
            got, want = warplab.corrcoef(x), np.corrcoef(x)
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, equal_nan=True)


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(2, 7), st.integers(2, 9)),
              elements=st.integers(-1000, 1000).map(float)), st.booleans())
def test_property_vs_numpy(x: np.ndarray, rowvar: bool) -> None:
    data = x if rowvar else x.T
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = np.corrcoef(data, rowvar=rowvar)
        got = warplab.corrcoef(data, rowvar=rowvar)
    np.testing.assert_allclose(got, want, atol=1e-9)
    assert not (np.abs(got) > 1.0).any()


@pytest.mark.parametrize("kwargs, err, match", [
    ({"x": np.zeros((2, 2, 2))}, ValueError, "more than 2 dimensions"),
    ({"x": np.zeros((2, 5)), "y": np.zeros((2, 4))}, ValueError, "same number of observations"),
    ({"x": np.zeros((2, 5)), "precision": "float16"}, ValueError, "unknown precision"),
    ({"x": np.zeros((2, 5)), "variant": "nope"}, ValueError, "unknown corrcoef variant"),
    ({"x": np.zeros((2, 5)), "nan_policy": "omit"}, ValueError, "unknown nan_policy"),
    ({"x": np.zeros((2, 5)), "out": np.zeros((3, 3))}, ValueError, "out must have shape"),
    ({"x": np.zeros((2, 5)), "out": np.zeros((2, 2), np.float32)}, ValueError, "dtype float64"),
    ({"x": np.zeros((2, 5), complex)}, TypeError, "real numeric"),
    ({"x": np.zeros((2, 5)), "dtype": np.int32}, TypeError, "dtype must be"),
])
def test_bad_input(kwargs: dict, err: type, match: str) -> None:
    x = kwargs.pop("x")
    with pytest.raises(err, match=match):
        warplab.corrcoef(x, **kwargs)


def test_out_and_memmap_tile_by_tile(small_tiles: None, tmp_path) -> None:
    x = RNG.standard_normal((11, 20))
    x[4] = 2.0
    with pytest.warns(RuntimeWarning):
        want = np.corrcoef(x)
    out = np.full((11, 11), -7.0)
    with pytest.warns(RuntimeWarning):
        assert warplab.corrcoef(x, out=out) is out
    np.testing.assert_allclose(out, want, atol=1e-13)
    mm = np.lib.format.open_memmap(tmp_path / "c.npy", "w+", np.float32, (11, 11))
    with pytest.warns(RuntimeWarning):
        warplab.corrcoef(x, out=mm, dtype=np.float32)
    mm.flush()
    np.testing.assert_allclose(np.load(tmp_path / "c.npy"), want, atol=1e-6)
    with pytest.warns(RuntimeWarning):  # no out: a host result, tiled just the same
        np.testing.assert_allclose(warplab.corrcoef(x), want, atol=1e-13)


def _pairwise_brute(x: np.ndarray) -> np.ndarray:
    m = x.shape[0]
    r = np.full((m, m), np.nan)
    for i in range(m):
        for j in range(m):
            ok = np.isfinite(x[i]) & np.isfinite(x[j])
            a, b = x[i, ok], x[j, ok]
            if ok.sum() >= 2 and a.std() > 0 and b.std() > 0:
                r[i, j] = np.corrcoef(a, b)[0, 1] if i != j else 1.0
    return r


def test_nan_policy_pairwise() -> None:
    x = RNG.standard_normal((6, 15))
    x[RNG.random(x.shape) < 0.2] = np.nan
    x[5, 2:] = np.nan  # two observations left
    got = warplab.corrcoef(x, nan_policy="pairwise")
    np.testing.assert_allclose(got, _pairwise_brute(x), atol=1e-12)
    clean = RNG.standard_normal((4, 9))
    np.testing.assert_allclose(pairwise_complete(clean), np.corrcoef(clean), atol=1e-12)


def test_normalise_rows_exact_constant() -> None:
    x = np.array([[0.1] * 7, [1.0, 2, 3, 4, 5, 6, 7]], np.float32)
    z, valid = normalise_rows(x)
    assert list(valid) == [False, True] and np.isnan(z[0]).all()
    np.testing.assert_allclose(np.linalg.norm(z[1]), 1.0)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 40), st.integers(1, 12))
def test_tiles_and_transposes_cover_matrix_once(m: int, t: int) -> None:
    seen = np.zeros((m, m), int)
    for r0, r1, c0, c1 in upper_tiles(m, t):
        assert r0 <= c0 and (r0 == c0 and r1 == c1 or r1 <= c0)
        seen[r0:r1, c0:c1] += 1
        if r0 != c0:
            seen[c0:c1, r0:r1] += 1  # written as the transpose
    assert np.array_equal(seen, np.ones((m, m), int))


def _tiled_smem_model(a: np.ndarray, b: np.ndarray, symmetric: bool) -> np.ndarray:
    """corr_tiled_smem's index math in NumPy: per block (by, bx) and thread (ty, tx), the
    zero-padded tile loads and the symmetric skip; unwritten elements stay NaN."""
    t = DEFINES["CORR_TILE"]
    rows, cols, n = a.shape[0], b.shape[0], a.shape[1]
    c = np.full((rows, cols), np.nan)
    for by in range(-(-rows // t)):
        for bx in range(-(-cols // t)):
            if symmetric and by > bx:
                continue
            acc = np.zeros((t, t))
            for k0 in range(0, n, t):
                ks = k0 + np.arange(t)
                ra, rb = by * t + np.arange(t), bx * t + np.arange(t)
                as_ = np.where((ra[:, None] < rows) & (ks < n), a[np.minimum(ra, rows - 1)][
                    :, np.minimum(ks, n - 1)], 0)
                bs = np.where((rb[:, None] < cols) & (ks < n), b[np.minimum(rb, cols - 1)][
                    :, np.minimum(ks, n - 1)], 0)
                acc += as_ @ bs.T  # acc[ty, tx] += as[ty][kk] * bs[tx][kk]
            i, j = by * t + np.arange(t), bx * t + np.arange(t)
            keep_i, keep_j = i < rows, j < cols
            c[np.ix_(i[keep_i], j[keep_j])] = acc[np.ix_(keep_i, keep_j)]
    return c


@pytest.mark.parametrize("rows, cols, n", [(1, 1, 1), (17, 17, 33), (33, 5, 16), (20, 40, 7)])
def test_tiled_smem_index_model(rows: int, cols: int, n: int) -> None:
    a, b = RNG.standard_normal((rows, n)), RNG.standard_normal((cols, n))
    np.testing.assert_allclose(_tiled_smem_model(a, b, False), a @ b.T, atol=1e-12)
    if rows == cols:
        c = np.nan_to_num(_tiled_smem_model(a, a, True), nan=0.0)
        np.testing.assert_allclose(mirror_upper(c, np), a @ a.T, atol=1e-12)

"""corr_pairs on the NumPy backend against a brute-force reference from numpy.corrcoef, with
tiles forced small so every tile path (diagonal, above, transposed top-k) runs."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import warplab
from warplab.families.corr import tiles

RNG = np.random.default_rng(5)


def _data(m: int, n: int, seed: int = 0) -> np.ndarray:
    """Clustered series: a few shared factors plus noise, so strong pairs exist."""
    rng = np.random.default_rng(seed)
    factors = rng.standard_normal((3, n))
    return factors[rng.integers(0, 3, m)] * rng.uniform(0.5, 2, (m, 1)) + \
        rng.uniform(0.1, 1.5, (m, 1)) * rng.standard_normal((m, n))


def _brute_above(x: np.ndarray, thr: float) -> set[tuple[int, int]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = np.corrcoef(x)
    i, j = np.nonzero(np.triu(np.abs(r) >= thr, 1))
    return set(zip(i.tolist(), j.tolist()))


@pytest.fixture(params=[None, 4], ids=["whole", "tiles4"])
def tile_cap(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tiles, "TILE_CAP", request.param)


@pytest.mark.usefixtures("tile_cap")
@pytest.mark.parametrize("thr", [0.0, 0.3, 0.8, 1.0])
def test_threshold_vs_brute_force(thr: float) -> None:
    x = _data(23, 40)
    got = warplab.corr_pairs(x, threshold=thr)
    pairs = list(zip(got.i.tolist(), got.j.tolist()))
    assert pairs == sorted(pairs) and all(i < j for i, j in pairs)
    ref = np.corrcoef(x)
    np.testing.assert_allclose(got.r, ref[got.i, got.j], atol=1e-12)
    # pairs within rounding of the threshold may go either way
    sure = _brute_above(x, thr + 1e-9) if thr < 1 else set()
    assert sure <= set(pairs) <= _brute_above(x, thr - 1e-9)
    assert got.i.dtype == np.int64 and got.r.dtype == np.float64


@pytest.mark.usefixtures("tile_cap")
@pytest.mark.parametrize("k", [1, 3, 30])
def test_top_k_vs_brute_force(k: int) -> None:
    x = _data(17, 25, seed=1)
    x[6] = 4.0  # a constant series pairs with nothing
    with pytest.warns(RuntimeWarning):
        got = warplab.corr_pairs(x, top_k=k)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = np.corrcoef(x)
    for i in range(17):
        sel = got.i == i
        if i == 6:
            assert not sel.any()
            continue
        key = np.abs(r[i]).copy()
        key[i] = -np.inf
        key[np.isnan(key)] = -np.inf
        want_n = min(k, int(np.isfinite(key).sum()))
        assert sel.sum() == want_n
        js, rs = got.j[sel], got.r[sel]
        assert 6 not in js and i not in js
        np.testing.assert_allclose(rs, r[i, js], atol=1e-12)
        assert np.all(np.diff(np.abs(rs)) <= 1e-15)  # strongest first
        np.testing.assert_allclose(np.abs(rs), np.sort(key)[::-1][:want_n], atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 12), st.integers(2, 8), st.floats(0, 1), st.integers(1, 5))
def test_property_threshold(m: int, n: int, thr: float, cap: int) -> None:
    x = RNG.integers(-5, 6, (m, n)).astype(float)
    old = tiles.TILE_CAP
    tiles.TILE_CAP = cap
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = warplab.corr_pairs(x, threshold=thr)
    finally:
        tiles.TILE_CAP = old
    pairs = set(zip(got.i.tolist(), got.j.tolist()))
    assert _brute_above(x, thr + 1e-9) <= pairs <= _brute_above(x, thr - 1e-9)


def test_rowvar_and_small_inputs() -> None:
    x = _data(6, 30)
    a = warplab.corr_pairs(x, threshold=0.5)
    b = warplab.corr_pairs(x.T, threshold=0.5, rowvar=False)
    assert np.array_equal(a.i, b.i) and np.array_equal(a.j, b.j)
    for y in (x[:1], x[:, :1]):
        e = warplab.corr_pairs(y, top_k=2)
        assert e.i.size == e.j.size == e.r.size == 0


@pytest.mark.parametrize("kwargs, err, match", [
    ({}, ValueError, "exactly one"),
    ({"threshold": 0.5, "top_k": 2}, ValueError, "exactly one"),
    ({"threshold": 1.5}, ValueError, r"in \[0, 1\]"),
    ({"threshold": -0.1}, ValueError, r"in \[0, 1\]"),
    ({"threshold": "0.5"}, TypeError, "number"),
    ({"top_k": 0}, ValueError, "> 0"),
    ({"top_k": 2.5}, TypeError, "int"),
    ({"top_k": True}, TypeError, "int"),
    ({"top_k": 2, "precision": "half"}, ValueError, "unknown precision"),
])
def test_bad_input(kwargs: dict, err: type, match: str) -> None:
    with pytest.raises(err, match=match):
        warplab.corr_pairs(np.zeros((3, 4)), **kwargs)


def test_three_d_rejected() -> None:
    with pytest.raises(ValueError, match="more than 2"):
        warplab.corr_pairs(np.zeros((2, 3, 4)), threshold=0.5)


def test_bench_check_pairs_catches_missing_and_extra() -> None:
    from warplab.lab.campaigns.corr.bench import CLUSTER_SIZE, check_pairs, clustered
    from warplab.families.corr.pairs import CorrPairs

    x = clustered(3 * CLUSTER_SIZE, 32, "cpu")
    res = warplab.corr_pairs(x, threshold=0.9)
    err, tiles_, checked = check_pairs(x, res, 0.9, 1e-9)
    assert err < 1e-12 and tiles_ > 0 and checked > 0
    with pytest.raises(ValueError, match="missing"):
        check_pairs(x, CorrPairs(res.i[1:], res.j[1:], res.r[1:]), 0.9, 1e-9)
    low = warplab.corr_pairs(x, threshold=0.5)
    with pytest.raises(ValueError, match="below the threshold"):
        check_pairs(x, low, 0.9, 1e-9)

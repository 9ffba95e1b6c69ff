"""Masked arrays, ndarray subclasses and ``__array_function__`` objects get NumPy's semantics
from every public function with a NumPy name (NumPy's own function runs), or a clear
``InvalidTypeError`` naming the public function where NumPy has no semantics for them (or the
function has no NumPy name); errors name public functions (``core/overrides.py``)."""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import warplab
from conftest import clear_ran, last_ran
from warplab.core import overrides

pytestmark = pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")

REDUCTIONS = ("sum", "mean", "min", "max", "var", "std")


def _data(kind: str, shape: tuple[int, ...], seed: int) -> np.ma.MaskedArray:
    """Random and adversarial masked data: values far out under the mask, NaN under the
    mask, every element masked, nothing masked, all one value."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    mask = rng.random(shape) < 0.4
    if kind == "outliers":
        x = np.where(mask, 1e300, x)
    elif kind == "nan":
        x = np.where(mask, np.nan, x)
    elif kind == "all_masked":
        mask = np.ones(shape, bool)
    elif kind == "none_masked":
        mask = np.zeros(shape, bool)
    elif kind == "one_value":
        x = np.full(shape, 7.0)
    return np.ma.masked_array(x, mask)


def _same(got: Any, want: Any) -> None:
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, np.ma.MaskedArray):
        np.testing.assert_array_equal(np.ma.getmaskarray(got), np.ma.getmaskarray(want))
        np.testing.assert_allclose(got.compressed(), want.compressed(), rtol=1e-12)
    elif want is np.ma.masked:
        assert got is np.ma.masked
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12)


def _both(fn: Any, ref: Any) -> tuple[Any, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(), ref()


# ------------------------------------------------------------------- the issue's example


def test_issue_example() -> None:
    m = np.ma.masked_array([1., 2., 3., 100.], [0, 1, 0, 1])
    assert warplab.sum(m) == np.sum(m) == 4.0
    assert warplab.mean(m) == np.mean(m) == 2.0
    assert warplab.max(m) == 3.0
    assert warplab.reduce(m, "sum") == 4.0


# --------------------------------------------------------------- masked: NumPy's results


@pytest.mark.parametrize("kind", ["random", "outliers", "nan", "all_masked", "none_masked",
                                  "one_value"])
@pytest.mark.parametrize("op", REDUCTIONS)
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
def test_masked_reductions_match_numpy(kind: str, op: str, axis: Any) -> None:
    m = _data(kind, (5, 7), seed=hash((kind, op)) % 1000)
    for kw in ({}, {"keepdims": True}):
        got, want = _both(lambda: getattr(warplab, op)(m, axis=axis, **kw),
                          lambda: getattr(np, op)(m, axis=axis, **kw))
        _same(got, want)
        got = _both(lambda: warplab.reduce(m, op, axis=axis, **kw), lambda: None)[0]
        _same(got, want)


def test_masked_options_match_numpy() -> None:
    m = _data("outliers", (4, 6), seed=3)
    _same(warplab.sum(m, dtype=np.float32), np.sum(m, dtype=np.float32))
    _same(warplab.mean(m, axis=1, dtype=np.float32), np.mean(m, axis=1, dtype=np.float32))
    _same(warplab.var(m, ddof=1), np.var(m, ddof=1))
    _same(warplab.std(m, axis=0, ddof=1), np.std(m, axis=0, ddof=1))
    out = np.zeros(6)
    assert warplab.sum(m, axis=0, out=out) is out
    np.testing.assert_allclose(out, np.sum(m, axis=0).filled(0))


@settings(max_examples=60, deadline=None, database=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(max_dims=2, max_side=9),
                  elements=st.floats(-1e6, 1e6)),
       st.data())
def test_masked_property(x: np.ndarray, data: st.DataObject) -> None:
    mask = data.draw(hnp.arrays(bool, x.shape))
    m = np.ma.masked_array(x, mask)
    for op in REDUCTIONS:
        try:
            want = _both(lambda: getattr(np, op)(m), lambda: None)[0]
        except ValueError:
            with pytest.raises(ValueError):
                getattr(warplab, op)(m)
            continue
        _same(_both(lambda: getattr(warplab, op)(m), lambda: None)[0], want)


def test_masked_split_matches_numpy() -> None:
    m = _data("outliers", (6, 4), seed=5)
    for got, want in zip(warplab.split(m, 3), np.split(m, 3)):
        _same(got, want)
    for got, want in zip(warplab.split(m, [1, 3], axis=1), np.split(m, [1, 3], axis=1)):
        _same(got, want)


# ---------------------------------------------------- masked: no NumPy semantics, refused


def _refuses(name: str, fn: Any, *args: Any, **kw: Any) -> str:
    with pytest.raises(warplab.InvalidTypeError) as info:
        fn(*args, **kw)
    assert isinstance(info.value, TypeError)
    msg = str(info.value)
    assert msg.startswith(f"{name}()"), msg
    return msg


def test_masked_refused_where_numpy_ignores_the_mask() -> None:
    m = _data("random", (3, 8), seed=2)
    mi = np.ma.masked_array(np.arange(8), [0, 1] * 4)
    assert "compressed()" in _refuses("histogram", warplab.histogram, m)
    _refuses("histogram", warplab.histogram, np.ones(24), weights=m.reshape(-1))
    _refuses("bincount", warplab.bincount, mi)
    _refuses("bincount", warplab.bincount, np.arange(8), weights=mi)
    assert "numpy.ma.corrcoef" in _refuses("corrcoef", warplab.corrcoef, m)
    _refuses("corrcoef", warplab.corrcoef, m.data, m)
    assert "numpy.ma.concatenate" in _refuses("concatenate", warplab.concatenate, [m, m])
    _refuses("concatenate", warplab.concatenate, [m.data, m])
    many = [np.ones(8)] * 20
    _refuses("concatenate", warplab.concatenate, [*many, np.matrix(np.ones(8)), m[0]])
    _refuses("copy_batched", warplab.copy_batched, [*many, m[0]], [np.ones(8)] * 21)
    assert "numpy.ma.dot" in _refuses("matmul", warplab.matmul, m, m.T)
    _refuses("matmul", warplab.matmul, m.data, m.T)


def test_masked_refused_without_a_numpy_name() -> None:
    m = _data("random", (3, 8), seed=2)
    mb = np.ma.masked_array(np.arange(8, dtype=np.uint8), [0, 1] * 4)
    _refuses("byte_histogram", warplab.byte_histogram, mb)
    _refuses("series_stats", warplab.series_stats, m)
    _refuses("corr_pairs", warplab.corr_pairs, m, threshold=0.5)
    _refuses("copy_batched", warplab.copy_batched, [mb], [np.zeros(8, np.uint8)])
    _refuses("copy_batched", warplab.copy_batched, [mb.data], [np.ma.zeros(8, np.uint8)])


def test_warplab_options_with_numpy_semantics_refused() -> None:
    m = _data("random", (3, 8), seed=2)
    msg = _refuses("sum", warplab.sum, m, variant="numpy")
    assert "variant=" in msg and "np.asarray" in msg
    _refuses("mean", warplab.reduce, m, "mean", device="cpu")
    _refuses("split", warplab.split, m, 2, axis=1, copy=True)
    _refuses("matmul", warplab.matmul, np.matrix(m.data), m.data.T, variant="numpy")


# ------------------------------------------------------------------ subclasses, protocols


class Tagged(np.ndarray):
    """A subclass whose own ``sum`` NumPy's ``np.sum`` calls."""

    def sum(self, *args: Any, **kwargs: Any) -> Any:  # noqa: A003
        return ("Tagged.sum", np.asarray(self).sum(*args, **kwargs))


def test_subclass_gets_numpy_semantics() -> None:
    x = np.arange(12.0).reshape(3, 4)
    t = x.view(Tagged)
    assert warplab.sum(t) == np.sum(t) == ("Tagged.sum", 66.0)
    mx = np.matrix(x)
    for op in REDUCTIONS:
        got, want = getattr(warplab, op)(mx, axis=0), getattr(np, op)(mx, axis=0)
        assert type(got) is np.matrix and got.shape == want.shape == (1, 4)
        np.testing.assert_allclose(got, want)
    assert type(warplab.matmul(mx, mx.T)) is np.matrix
    pieces = warplab.split(mx, 2, axis=1)
    assert all(type(p) is np.matrix for p in pieces)
    assert type(warplab.concatenate([mx, mx])) is np.matrix
    h, e = warplab.histogram(mx, 4)
    wh, we = np.histogram(mx, 4)
    np.testing.assert_array_equal(h, wh)
    np.testing.assert_array_equal(e, we)
    _refuses("series_stats", warplab.series_stats, mx)
    _refuses("byte_histogram", warplab.byte_histogram, np.matrix(np.ones((2, 2), np.uint8)))


class Deferring:
    """An ``__array_function__`` object: NumPy's functions hand every call to it."""

    def __init__(self, a: np.ndarray) -> None:
        self.a = a

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return ("Deferring", func.__name__)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self.a


def test_array_function_object_gets_numpy_semantics() -> None:
    d = Deferring(np.arange(6.0).reshape(2, 3))
    for op in REDUCTIONS:
        assert getattr(warplab, op)(d) == getattr(np, op)(d) == ("Deferring", op)
    assert warplab.histogram(d) == np.histogram(d)
    assert warplab.bincount(d) == ("Deferring", "bincount")
    assert warplab.corrcoef(d) == ("Deferring", "corrcoef")
    e = Deferring(np.arange(6.0).reshape(3, 2))  # matmul is a ufunc: NumPy reads __array__
    np.testing.assert_array_equal(warplab.matmul(d, e), np.matmul(d, e))
    assert warplab.concatenate([d, d]) == ("Deferring", "concatenate")
    assert warplab.split(d, 2) == ("Deferring", "split")
    msg = _refuses("series_stats", warplab.series_stats, d)
    assert "Deferring" in msg and "np.asarray" in msg
    _refuses("corr_pairs", warplab.corr_pairs, d, threshold=0.5)
    _refuses("byte_histogram", warplab.byte_histogram, d)
    _refuses("corrcoef", warplab.corrcoef, d, precision="fast")


def test_dask_array_gets_dask_semantics() -> None:
    da = pytest.importorskip("dask.array")
    x = da.arange(10.0, chunks=5)
    r = warplab.sum(x)
    assert type(r) is type(np.sum(x))
    assert float(r.compute()) == 45.0


# -------------------------------------------------------------- plain input stays warplab's


def test_plain_input_is_not_deferred(tmp_path: Any) -> None:
    assert overrides.kind(np.ones(3)) is None
    assert overrides.kind([1, 2]) is None and overrides.kind(b"ab") is None
    mm = np.memmap(tmp_path / "x.bin", dtype=np.float64, mode="w+", shape=(16,))
    mm[:] = 1.0
    assert overrides.kind(mm) is None
    assert overrides.first_kind([np.ones(2)] * 20 + [None]) is None
    assert overrides.first_kind([np.matrix([1]), np.ma.ones(2)]) == "masked"
    clear_ran()
    assert warplab.sum(mm) == 16.0
    assert last_ran() is not None  # a warplab variant ran, not NumPy's function
    clear_ran()
    warplab.histogram(np.arange(10), 3)
    assert last_ran() is not None


# ------------------------------------------------------------------ errors name the public


def test_errors_name_the_public_function() -> None:
    with pytest.raises(warplab.InvalidValueError) as info:
        warplab.series_stats(np.ones(5))
    assert str(info.value).startswith("series_stats takes a 2-D")
    assert "series_stats_rows" not in str(info.value)

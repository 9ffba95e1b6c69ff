"""warplab.bincount against np.bincount, plus property tests of bincount and histogram."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import warplab

DTYPES = ("uint8", "bool", "int16", "int32", "int64", "uint32")
_rng = np.random.default_rng(12345)


def values(dtype: str, n: int, hi: int) -> np.ndarray:
    if dtype == "bool":
        return _rng.integers(0, 2, size=n).astype(bool)
    return _rng.integers(0, hi, size=n).astype(dtype)


def check(got, want: np.ndarray) -> None:
    assert isinstance(got, np.ndarray)
    assert got.dtype == np.int64
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("minlength", [0, 5, 300])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,hi", [(1, 3), (1000, 7), (5000, 256), (70_000, 1000)])
def test_matches_numpy(dtype: str, n: int, hi: int, minlength: int) -> None:
    if dtype == "uint8":
        hi = min(hi, 256)
    x = values(dtype, n, hi)
    check(warplab.bincount(x, None, minlength), np.bincount(x, None, minlength))
    check(warplab.bincount(x, minlength=minlength), np.bincount(x, minlength=minlength))


@pytest.mark.parametrize("minlength", [0, 5, 300])
@pytest.mark.parametrize("dtype", DTYPES)
def test_empty(dtype: str, minlength: int) -> None:
    x = np.zeros(0, dtype=dtype)
    check(warplab.bincount(x, minlength=minlength), np.bincount(x, minlength=minlength))


@pytest.mark.parametrize("dtype", ["uint8", "int32"])
def test_length_is_max_plus_one(dtype: str) -> None:
    x = np.array([0, 0, 200], dtype=dtype)
    got = warplab.bincount(x)
    assert got.shape == (201,)
    assert got[0] == 2 and got[200] == 1 and got[1:200].sum() == 0
    # minlength smaller than max + 1 does not truncate
    assert warplab.bincount(x, minlength=5).shape == (201,)
    # all zeros: length 1
    check(warplab.bincount(np.zeros(9, dtype=dtype)), np.array([9]))


def test_uint8_high_values_and_minlength_above_256() -> None:
    x = np.array([255, 255, 0], dtype=np.uint8)
    check(warplab.bincount(x), np.bincount(x))
    got = warplab.bincount(x, minlength=1000)
    check(got, np.bincount(x, minlength=1000))


def test_bool() -> None:
    x = np.array([True, False, True, True])
    check(warplab.bincount(x), np.array([1, 3]))
    check(warplab.bincount(np.array([False, False])), np.array([2]))


def test_non_contiguous() -> None:
    x = values("uint8", 3000, 256)[::3]
    check(warplab.bincount(x), np.bincount(x))
    y = values("int32", 3000, 50)[1::4]
    check(warplab.bincount(y, minlength=60), np.bincount(y, minlength=60))


def test_python_list() -> None:
    check(warplab.bincount([1, 2, 2, 5]), np.bincount([1, 2, 2, 5]))


def test_empty_python_list_like_numpy() -> None:
    check(warplab.bincount([]), np.bincount([]))


def test_input_not_modified() -> None:
    x = values("int32", 1000, 40)
    y = x.copy()
    warplab.bincount(x, minlength=3)
    np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
def test_negative_values(dtype: str) -> None:
    x = np.array([3, 0, -1, 2], dtype=dtype)
    with pytest.raises(ValueError, match="negative"):
        warplab.bincount(x)
    with pytest.raises(ValueError):
        np.bincount(x)  # the same contract as NumPy


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64"])
def test_float_is_type_error(dtype: str) -> None:
    with pytest.raises(TypeError, match=dtype):
        warplab.bincount(np.array([1, 2], dtype=dtype))


def _numpy_takes_uint64() -> bool:
    try:
        np.bincount(np.array([1], dtype=np.uint64))
    except TypeError:
        return False
    return True


_NP_UINT64 = _numpy_takes_uint64()


def test_uint64_like_numpy() -> None:
    x = np.array([1, 2, 2], dtype=np.uint64)
    if _NP_UINT64:
        check(warplab.bincount(x), np.bincount(x))
    else:
        with pytest.raises(TypeError, match="uint64"):
            warplab.bincount(x)


@pytest.mark.parametrize("shape", [(2, 3), (1, 1), (0, 4), ()])
@pytest.mark.parametrize("dtype", ["uint8", "int32", "bool"])
def test_not_1d(shape: tuple, dtype: str) -> None:
    with pytest.raises(ValueError, match="1-D"):
        warplab.bincount(np.zeros(shape, dtype=dtype))


@pytest.mark.parametrize("dtype", ["uint8", "int32"])
def test_negative_minlength(dtype: str) -> None:
    with pytest.raises(ValueError, match="minlength"):
        warplab.bincount(np.array([1], dtype=dtype), minlength=-1)


def test_variant_for_non_uint8_is_value_error() -> None:
    with pytest.raises(ValueError, match="variant"):
        warplab.bincount(np.array([1], dtype=np.int32), variant="numpy_chunked")
    check(warplab.bincount(np.array([1, 1], dtype=np.uint8), variant="numpy_chunked"),
          np.array([0, 2]))


# ---------------------------------------------------------------------------- properties

PROP = settings(max_examples=50, deadline=None, database=None)


@PROP
@given(x=hnp.arrays(np.uint8, st.integers(0, 3000)), minlength=st.integers(0, 400))
def test_prop_uint8(x: np.ndarray, minlength: int) -> None:
    check(warplab.bincount(x, minlength=minlength), np.bincount(x, minlength=minlength))


@PROP
@given(x=hnp.arrays(np.int32, st.integers(0, 2000), elements=st.integers(0, 5000)),
       minlength=st.integers(0, 400))
def test_prop_int32(x: np.ndarray, minlength: int) -> None:
    check(warplab.bincount(x, minlength=minlength), np.bincount(x, minlength=minlength))


def _ref_lut(bins) -> tuple[np.ndarray, int]:
    c = np.arange(256)
    if isinstance(bins, str):
        if bins == "bytes":
            return c, 256
        if bins == "ascii128":
            return (c - 1) % 128, 128
        up = c & ~0x20
        letters = ((c >= 65) & (c <= 90)) | ((c >= 97) & (c <= 122))
        return np.where(letters, up - 64, 0), 27
    lut = np.asarray(bins, dtype=np.int64)
    return lut, int(lut.max()) + 1


@PROP
@given(x=hnp.arrays(np.uint8, hnp.array_shapes(min_dims=1, max_dims=3, min_side=0,
                                                max_side=40)),
       bins=st.one_of(st.sampled_from(["bytes", "ascii128", "letters"]),
                      hnp.arrays(np.int64, 256, elements=st.integers(0, 255))),
       stride=st.integers(1, 3))
def test_prop_histogram_every_mapping(x: np.ndarray, bins, stride: int) -> None:
    x = x[..., ::stride]
    lut, nbins = _ref_lut(bins)
    want = np.bincount(lut[x.reshape(-1)], minlength=nbins)
    check(warplab.byte_histogram(x, bins), want)
    check(warplab.byte_histogram(x.tobytes(), bins), want)


# ------------------------------------------------------------------------------ weights


@pytest.mark.parametrize("dtype", ["uint8", "bool", "int32", "int64"])
def test_weights_positional_like_numpy(dtype: str) -> None:
    x = values(dtype, 500, 40)
    w = np.linspace(-1, 1, x.size)
    got = warplab.bincount(x, w, 50)
    want = np.bincount(x, w, 50)
    assert isinstance(got, np.ndarray) and got.dtype == want.dtype == np.float64
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(warplab.bincount(x, weights=w), np.bincount(x, weights=w))


def test_weights_length_mismatch() -> None:
    with pytest.raises(ValueError, match="same length"):
        warplab.bincount(np.array([0, 1, 2]), [1.0, 2.0])


@PROP
@given(x=hnp.arrays(np.int64, st.integers(0, 1000), elements=st.integers(0, 5000)),
       minlength=st.integers(0, 6000))
def test_prop_weighted(x: np.ndarray, minlength: int) -> None:
    w = np.cos(np.arange(x.size))
    got, want = warplab.bincount(x, w, minlength), np.bincount(x, w, minlength)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_warm_host_plans_keep_warplabs_checks_and_records() -> None:
    """A plan of NumPy arrays runs NumPy's own bincount; a later call of the same key with a
    negative value still gets warplab's message, weighted calls are recorded, bool data
    with weights takes the general run (NumPy's results every time)."""
    def same(got: np.ndarray, want: np.ndarray) -> None:
        assert type(got) is np.ndarray and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)

    x, w = np.array([3, 0, 1, 2]), np.array([0.5, 1.0, 2.0, 4.0])
    check(warplab.bincount(x), np.bincount(x))
    with pytest.raises(ValueError, match="bincount needs non-negative values, found -1"):
        warplab.bincount(np.array([3, 0, -1, 2]))
    with warplab.record_variants() as ran:
        same(warplab.bincount(x, w), np.bincount(x, w))
        same(warplab.bincount(x, w, minlength=7), np.bincount(x, w, minlength=7))
    assert [(r.family, r.backend) for r in ran] == [("bincount", "cpu")] * 2
    b = np.array([True, False, True, True])
    same(warplab.bincount(b, w), np.bincount(b, w))

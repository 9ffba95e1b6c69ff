"""CPU tests of ``reduce_axis`` (the NumPy backend; CI, no GPU) and of the pure host logic of the
cuda variants (layout plans, launch plans, dtype mappings), which needs no GPU either.

Tolerances: results are compared with NumPy's result dtype, shape and type exactly, integer
results exactly, and float results against NumPy in float64 on the same elements with a relative
tolerance of the result dtype's rounding (float16 2e-3, float32 1e-6, float64 1e-12): warplab
accumulates float16/float32 in float64 and rounds once.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from warplab.core.errors import DeviceUnavailableError
from warplab.core.device import cuda_available
from warplab.families.reduce import axis_cuda, axis_cuda_k2, axis_input, axis_plan
from warplab.families.reduce.axis import (OPS, AxisError, AxisProblem, axis_bytes_moved,
                                          normalize_axes, plan_2d, reduce_axis, result_dtype,
                                          series_stats_rows)

DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64")
RTOL = {"float16": 2e-3, "float32": 1e-6, "float64": 1e-12}
AXES_3D = (None, 0, 1, -1, (0, 1), (0, 2))


def data(dtype: str, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        lo = 0 if dt.kind == "u" else max(np.iinfo(dt).min, -100)
        return rng.integers(lo, min(np.iinfo(dt).max, 100), size=shape, endpoint=True).astype(dt)
    scale = 4.0 if dt == np.float16 else 100.0
    return (rng.standard_normal(shape) * scale + 1.5).astype(dt)


def np_call(x: np.ndarray, op: str, **kw) -> object:
    """NumPy's own result (dtype, shape, type, warnings and errors are the reference)."""
    return getattr(np, op)(x, **kw)


def check(got: object, x: np.ndarray, op: str, **kw) -> None:
    """``got`` has NumPy's type, dtype and shape, and NumPy's values (see the module doc)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np_call(x, op, **kw)
    assert type(got) is type(want), (type(got), type(want))
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert np.shape(got) == np.shape(want)
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
        return
    work = np.dtype(kw.get("dtype") or x.dtype)
    kw64 = {k: v for k, v in kw.items() if k != "dtype"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = np.asarray(np_call(x.astype(work).astype(np.float64), op, **kw64))
    rtol = RTOL[want.dtype.name]
    finite = np.abs(x.astype(np.float64))[np.isfinite(x)]
    scale = float(np.max(finite)) if finite.size else 0.0
    atol = rtol * (scale * scale if op == "var" else scale)
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), ref, rtol=rtol, atol=atol)


def kwargs(op: str, axis: object, keepdims: bool = False, ddof: float = 0) -> dict:
    kw: dict = {"axis": axis, "keepdims": keepdims}
    if op in ("var", "std"):
        kw["ddof"] = ddof
    return kw


# --- every op x axis x dtype x keepdims -----------------------------------------------------

@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES_3D, ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_matches_numpy(op: str, dtype: str, axis: object, keepdims: bool) -> None:
    x = data(dtype, (3, 4, 5))
    check(reduce_axis(x, op, axis, keepdims=keepdims, device="cpu"), x, op,
          **kwargs(op, axis, keepdims))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_2d_axes(op: str, dtype: str) -> None:
    x = data(dtype, (6, 7), seed=1)
    for axis in (None, 0, 1, -1, -2, (0, 1), (1, 0), ()):
        check(reduce_axis(x, op, axis, device="cpu"), x, op, **kwargs(op, axis))


@pytest.mark.parametrize("op", OPS)
def test_zero_d_input(op: str) -> None:
    for x in (np.array(3.5, np.float32), np.array(-7, np.int8), np.array(True)):
        for axis, keepdims in ((None, False), (None, True), ((), False)):
            check(reduce_axis(x, op, axis, keepdims=keepdims, device="cpu"), x, op,
                  **kwargs(op, axis, keepdims))
    got = reduce_axis(np.float64(2.0), op, device="cpu")
    assert isinstance(got, np.float64)


def test_scalar_results_are_numpy_scalars() -> None:
    x = data("float32", (4, 5))
    assert type(reduce_axis(x, "sum", device="cpu")) is np.float32
    assert type(reduce_axis(x, "mean", (0, 1), device="cpu")) is np.float32
    assert type(reduce_axis(x.astype(np.int16), "sum", device="cpu")) is np.int64
    assert type(reduce_axis(x.astype(np.uint8), "sum", device="cpu")) is np.uint64
    assert isinstance(reduce_axis(x, "sum", keepdims=True, device="cpu"), np.ndarray)
    assert reduce_axis(x, "sum", keepdims=True, device="cpu").shape == (1, 1)


def test_result_dtypes_are_numpys() -> None:
    for name in DTYPES:
        x = np.ones((2, 2), name)
        for op in OPS:
            assert result_dtype(op, x.dtype) == np_call(x, op).dtype, (op, name)


# --- dtype= ---------------------------------------------------------------------------------

@pytest.mark.parametrize("src,dst", [("int8", "int8"), ("int16", "float32"), ("int32", "float64"),
                                     ("float64", "float32"), ("float32", "float64"),
                                     ("uint8", "int16"), ("bool", "int32"), ("float32", "float16"),
                                     ("int64", "bool")])
@pytest.mark.parametrize("op", ["sum", "mean"])
def test_dtype_argument(op: str, src: str, dst: str) -> None:
    x = data(src, (5, 9), seed=3)
    if src == "int8":
        x = np.full((5, 9), 100, np.int8)  # int8 sums wrap, as NumPy's
    if op == "mean" and dst == "bool":
        return
    for axis in (None, 0, 1):
        check(reduce_axis(x, op, axis, dtype=dst, device="cpu"), x, op, axis=axis, dtype=dst)


def test_mean_integer_dtype_truncates_like_numpy() -> None:
    x = np.arange(10).reshape(2, 5)
    check(reduce_axis(x, "mean", 1, dtype=np.int64, device="cpu"), x, "mean", axis=1,
          dtype=np.int64)


@pytest.mark.parametrize("op", ["var", "std"])
def test_var_float_dtype(op: str) -> None:
    x = data("int32", (4, 6))
    check(reduce_axis(x, op, 1, dtype="float32", ddof=1, device="cpu"), x, op, axis=1,
          dtype="float32", ddof=1)
    with pytest.raises(TypeError, match="floating dtype"):
        reduce_axis(x, op, 1, dtype="int64", device="cpu")


@pytest.mark.parametrize("op", ["min", "max"])
def test_min_max_take_no_dtype(op: str) -> None:
    with pytest.raises(TypeError, match="dtype"):
        reduce_axis(np.ones(3), op, dtype=np.float32, device="cpu")


# --- empty slices, NaN, inf -----------------------------------------------------------------

def meaningful(caught: list) -> set[str]:
    """The warnings that say what happened (not NumPy's internal "invalid value ... divide")."""
    return {str(m.message) for m in caught if "invalid value" not in str(m.message)}


@pytest.mark.parametrize("shape", [(0,), (0, 3), (3, 0), (0, 0), (2, 0, 4)], ids=str)
@pytest.mark.parametrize("op", OPS)
def test_empty(op: str, shape: tuple[int, ...]) -> None:
    x = np.zeros(shape, np.float32)
    for axis in (None, 0, -1, tuple(range(len(shape)))):
        kw = kwargs(op, axis)
        try:
            with warnings.catch_warnings(record=True) as w_np:
                warnings.simplefilter("always")
                want = np_call(x, op, **kw)
        except ValueError as exc:
            with pytest.raises(ValueError, match="zero-size array to reduction operation"):
                reduce_axis(x, op, axis, device="cpu")
            assert "zero-size array" in str(exc)
            continue
        with warnings.catch_warnings(record=True) as w_us:
            warnings.simplefilter("always")
            got = reduce_axis(x, op, axis, device="cpu")
        assert bool(w_us) == bool(w_np)  # NumPy's "Mean of empty slice" and "Degrees of ..."
        assert meaningful(w_us) == meaningful(w_np)
        assert type(got) is type(want) and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_empty_sum_is_zero_and_min_raises_numpys_message() -> None:
    x = np.zeros((4, 0), np.int32)
    np.testing.assert_array_equal(reduce_axis(x, "sum", 1, device="cpu"), np.zeros(4, np.int64))
    with pytest.raises(ValueError, match="zero-size array to reduction operation minimum "
                                         "which has no identity"):
        reduce_axis(x, "min", 1, device="cpu")
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"), np.errstate(invalid="ignore"):
        r = reduce_axis(x, "mean", 1, device="cpu")
    assert np.isnan(r).all() and r.dtype == np.float64


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("op", OPS)
def test_nan_and_inf(op: str, dtype: str) -> None:
    x = data(dtype, (4, 6), seed=5)
    x[1, 2] = np.nan
    x[2, 3] = np.inf
    x[3, 0] = -np.inf
    for axis in (None, 0, 1):
        with warnings.catch_warnings():  # inf - inf: NumPy's own "invalid value" warning
            warnings.simplefilter("ignore", RuntimeWarning)
            got = reduce_axis(x, op, axis, device="cpu")
        check(got, x, op, **kwargs(op, axis))


# --- ddof -----------------------------------------------------------------------------------

@pytest.mark.parametrize("ddof", [0, 1, 2, 0.5, -1])
@pytest.mark.parametrize("op", ["var", "std"])
def test_ddof(op: str, ddof: float) -> None:
    x = data("float64", (5, 4), seed=7)
    for axis in (None, 0, 1):
        check(reduce_axis(x, op, axis, ddof=ddof, device="cpu"), x, op, **kwargs(op, axis, False,
                                                                                  ddof))


@pytest.mark.parametrize("op", ["var", "std"])
def test_ddof_at_least_n_raises(op: str) -> None:
    x = np.ones((5, 4))
    reduce_axis(x, op, 1, ddof=3, device="cpu")  # N - 1: fine
    for ddof in (4, 5, 4.0):
        with pytest.raises(ValueError, match=r"ddof=.*N=4"):
            reduce_axis(x, op, 1, ddof=ddof, device="cpu")
    with pytest.raises(ValueError, match=r"N=20"):
        reduce_axis(x, op, None, ddof=20, device="cpu")
    with pytest.warns(RuntimeWarning):  # N == 0: NumPy's nan and warning
        r = reduce_axis(np.ones((3, 0)), op, 1, ddof=1, device="cpu")
    assert np.isnan(r).all()


def test_ddof_only_for_var_std() -> None:
    with pytest.raises(TypeError, match="ddof"):
        reduce_axis(np.ones(3), "sum", ddof=1, device="cpu")
    with pytest.raises(TypeError, match="ddof"):
        reduce_axis(np.ones(3), "var", ddof="1", device="cpu")


# --- errors ---------------------------------------------------------------------------------

def test_axis_errors() -> None:
    x = np.ones((2, 3))
    for bad in (2, -3, (0, 2)):
        with pytest.raises(AxisError) as info:
            reduce_axis(x, "sum", bad, device="cpu")
        assert isinstance(info.value, ValueError) and isinstance(info.value, IndexError)
        assert "out of bounds for array of dimension 2" in str(info.value)
    for dup in ((0, 0), (1, -1)):
        with pytest.raises(ValueError, match="duplicate value in 'axis'"):
            reduce_axis(x, "sum", dup, device="cpu")
    with pytest.raises(TypeError):
        reduce_axis(x, "sum", 1.0, device="cpu")
    with pytest.raises(AxisError):
        reduce_axis(np.float64(1), "sum", 0, device="cpu")


def test_dtype_errors() -> None:
    with pytest.raises(TypeError, match="complex input is not supported"):
        reduce_axis(np.ones(3, np.complex64), "sum", device="cpu")
    for bad in (np.array(["a", "b"]), np.array([1, None], dtype=object),
                np.array(["2020-01-01"], dtype="datetime64[D]")):
        with pytest.raises(TypeError, match="unsupported input dtype"):
            reduce_axis(bad, "sum", device="cpu")
    with pytest.raises(TypeError, match="complex"):
        reduce_axis(np.ones(3), "sum", dtype=np.complex128, device="cpu")


def test_unknown_op() -> None:
    with pytest.raises(ValueError, match="unknown reduction op"):
        reduce_axis(np.ones(3), "prod", device="cpu")


def test_normalize_axes() -> None:
    assert normalize_axes(None, 3) == (0, 1, 2)
    assert normalize_axes(-1, 3) == (2,)
    assert normalize_axes((2, 0), 3) == (0, 2)
    assert normalize_axes((), 3) == ()
    assert normalize_axes(np.int64(1), 2) == (1,)


# --- layouts --------------------------------------------------------------------------------

def views(x: np.ndarray) -> dict[str, np.ndarray]:
    return {"c": x, "strided": x[:, ::2], "T": x.T, "neg_rows": x[::-1], "neg_cols": x[:, ::-1],
            "fortran": np.asfortranarray(x), "offset": x[1:, 3:], "rows_step": x[::3],
            "broadcast": np.broadcast_to(x[:1], x.shape)}


@pytest.mark.parametrize("dtype", ["int32", "uint64", "float32", "float64"])
@pytest.mark.parametrize("op", OPS)
def test_views(op: str, dtype: str) -> None:
    for name, v in views(data(dtype, (9, 12), seed=11)).items():
        for axis in (None, 0, 1):
            check(reduce_axis(v, op, axis, device="cpu"), v, op, **kwargs(op, axis))


@pytest.mark.parametrize("op", OPS)
def test_3d_transposed_views(op: str) -> None:
    x = data("float32", (4, 5, 6), seed=12)
    for v in (x.transpose(2, 0, 1), x[:, ::-1, ::2], np.asfortranarray(x)):
        for axis in AXES_3D:
            check(reduce_axis(v, op, axis, device="cpu"), v, op, **kwargs(op, axis))


# --- hypothesis -----------------------------------------------------------------------------

def _elements(dt: np.dtype) -> st.SearchStrategy:
    if dt.kind == "f":
        bound = 8.0 if dt == np.float16 else 1e4
        return hnp.from_dtype(dt, min_value=-bound, max_value=bound, allow_nan=False,
                              allow_infinity=False, allow_subnormal=False)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        wide = dt.itemsize == 8  # int64/uint64: the whole range (sums wrap like NumPy's)
        return hnp.from_dtype(dt, min_value=info.min if wide else max(info.min, -1000),
                              max_value=info.max if wide else min(info.max, 1000))
    return hnp.from_dtype(dt)


@st.composite
def problems(draw: st.DrawFn) -> tuple:
    dt = np.dtype(draw(st.sampled_from(DTYPES)))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5))
    x = draw(hnp.arrays(dt, shape, elements=_elements(dt)))
    if x.ndim:
        x = x.transpose(draw(st.permutations(range(x.ndim))))
        x = x[tuple(slice(None, None, draw(st.sampled_from([1, 2, -1]))) for _ in range(x.ndim))]
    op = draw(st.sampled_from(OPS))
    if dt.kind in "iu" and dt.itemsize == 8 and op not in ("sum", "min", "max"):
        x = x // 4  # keep float64 conversions of huge integers away from the rounding edge
    axis = draw(st.one_of(st.none(),
                          st.integers(-x.ndim, x.ndim - 1) if x.ndim else st.none(),
                          st.lists(st.integers(0, max(x.ndim - 1, 0)), unique=True,
                                   max_size=x.ndim).map(tuple)))
    return x, op, axis, draw(st.booleans())


@settings(max_examples=400, deadline=None)
@given(problems())
def test_hypothesis_matches_numpy(problem: tuple) -> None:
    x, op, axis, keepdims = problem
    n = math.prod(x.shape[d] for d in normalize_axes(axis, x.ndim))
    kw = kwargs(op, axis, keepdims)
    if op in ("min", "max") and n == 0:
        with pytest.raises(ValueError, match="zero-size array"):
            reduce_axis(x, op, axis, keepdims=keepdims, device="cpu")
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = reduce_axis(x, op, axis, keepdims=keepdims, device="cpu")
    check(got, x, op, **kw)


@settings(max_examples=300, deadline=None)
@given(hnp.arrays(np.int32, hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5),
                  elements=st.integers(-1000, 1000)), st.data())
def test_hypothesis_plan_2d_views_reduce_right(x: np.ndarray, d: st.DataObject) -> None:
    """Where :func:`plan_2d` finds a 2-D view, that view (as the kernels read it) reduced along
    its layout's axis gives NumPy's result in C order of the kept axes."""
    x = x.transpose(d.draw(st.permutations(range(x.ndim))))
    x = x[tuple(slice(None, None, d.draw(st.sampled_from([1, 2, -1]))) for _ in range(x.ndim))]
    axes = tuple(sorted(d.draw(st.lists(st.integers(0, x.ndim - 1), unique=True, min_size=1))))
    plan = plan_2d(x.shape, x.strides, x.itemsize, axes)
    want = np.sum(x, axis=axes).reshape(-1)
    if not plan.view:
        kept = [a for a in range(x.ndim) if a not in axes]
        v = np.ascontiguousarray(x.transpose(kept + list(axes))).reshape(plan.rows, plan.cols)
        np.testing.assert_array_equal(v.sum(axis=1), want)
        return
    v = np.lib.stride_tricks.as_strided(x, (plan.rows, plan.cols),
                                        (plan.ld * x.itemsize, x.itemsize))
    np.testing.assert_array_equal(v.sum(axis=1 if plan.layout == "rows" else 0), want)


# --- plans of the cuda variants (pure host logic) -------------------------------------------

def test_plan_2d_layouts() -> None:
    x = np.zeros((8, 6, 4), np.float32)
    p = plan_2d(x.shape, x.strides, 4, (2,))
    assert p == (("rows", 48, 4, 4, True))
    assert plan_2d(x.shape, x.strides, 4, (1, 2))[:4] == ("rows", 8, 24, 24)
    assert plan_2d(x.shape, x.strides, 4, (0,))[:4] == ("cols", 8, 24, 24)
    assert plan_2d(x.shape, x.strides, 4, (0, 1))[:4] == ("cols", 48, 4, 4)
    assert not plan_2d(x.shape, x.strides, 4, (1,)).view       # a middle axis: copy
    assert not plan_2d(x.shape, x.strides, 4, (0, 2)).view     # not adjacent: copy
    f = np.asfortranarray(x[:, :, 0])
    assert plan_2d(f.shape, f.strides, 4, (0,))[:4] == ("rows", 6, 8, 8)
    y = np.zeros((10, 12))[::2]
    assert plan_2d(y.shape, y.strides, 8, (1,))[:4] == ("rows", 5, 12, 24)
    z = np.zeros((10, 12))[:, ::2]
    assert not plan_2d(z.shape, z.strides, 8, (1,)).view
    n = np.zeros((10, 12))[::-1]
    assert not plan_2d(n.shape, n.strides, 8, (1,)).view
    b = np.broadcast_to(np.zeros(12), (10, 12))
    assert not plan_2d(b.shape, b.strides, 8, (0,)).view


H100 = dict(sms=132)


def test_plan_rows_targets() -> None:
    short = axis_cuda.plan_rows(1 << 20, 32, 4, **H100)  # rows not back to back
    assert (short.kernel, short.group, short.vec) == ("group", 2, True)
    assert short.grid == (1 << 20) // 16 // 8  # one warp step per warp: 16 rows, 8 warps a block
    medium = axis_cuda.plan_rows(65536, 1000, 4, **H100)
    assert (medium.kernel, medium.group, medium.vec) == ("group", 32, True)
    assert medium.grid == 65536 // 8  # a warp per row
    square = axis_cuda.plan_rows(8192, 8192, 4, **H100, contiguous=True, aligned=True)
    assert (square.kernel, square.splits, square.grid) == ("split", 1, 8192)  # a block per row
    assert axis_cuda.plan_rows(32768, 4097, 4, **H100)[:1] == ("split",)  # 16 KiB rows
    assert axis_cuda.plan_rows(65536, 1000, 8, **H100)[:1] == ("split",)  # 8 KB rows
    assert axis_cuda.plan_rows(65536, 1023, 4, **H100)[:1] == ("group",)  # under 4 KiB
    wide = axis_cuda.plan_rows(256, 1 << 20, 4, **H100)
    assert (wide.splits, wide.chunk, wide.grid) == (2, 1 << 19, 512)
    long = axis_cuda.plan_rows(16, 1 << 24, 4, **H100)
    assert (long.kernel, long.splits, long.chunk, long.grid) == ("split", 32, 1 << 19, 512)
    few = axis_cuda.plan_rows(100, 3000, 4, **H100)  # too few rows for a warp each
    assert (few.kernel, few.splits, few.chunk) == ("split", 3, 1024)


def test_plan_rows_packed_and_staged() -> None:
    short = axis_cuda.plan_rows(1 << 20, 32, 4, **H100, contiguous=True, aligned=True)
    assert (short.kernel, short.group, short.vec) == ("packed", 8, True)
    assert short.grid == (1 << 20) // 16 // 8  # one step of 16 rows per warp, 8 warps a block
    back = dict(contiguous=True, aligned=True)
    assert axis_cuda.plan_rows(1000, 32, 8, **H100, **back)[:2] == ("packed", 16)
    assert axis_cuda.plan_rows(5, 4, 4, **H100, **back)[:3] == ("packed", 1, True)
    assert axis_cuda.plan_rows(5, 4, 4, **H100, **back).grid == 1
    # other back-to-back rows, at least two a 16 KiB tile: staged, G lanes per row, in tiles
    # of 32 KiB (8 words a thread) for rows under 512 bytes
    odd = axis_cuda.plan_rows(1 << 21, 33, 4, **H100, **back)
    assert (odd.kernel, odd.group, odd.chunk, odd.grid, odd.words) == (
        "staged", 1, 248, -(-(1 << 21) // 248), 8)
    odd64 = axis_cuda.plan_rows(1 << 21, 33, 8, **H100, **back)
    assert (odd64.group, odd64.chunk, odd64.words) == (2, 124, 8)
    kib = axis_cuda.plan_rows(1 << 17, 256, 4, **H100, contiguous=True)  # 1 KiB rows, base
    assert (kib.kernel, kib.group, kib.words) == ("staged", 16, 4)      # off the 16-byte grid
    assert axis_cuda.plan_rows(1 << 17, 255, 4, **H100, **back)[:2] == ("staged", 16)
    assert axis_cuda.plan_rows(10, 3, 4, **H100, **back)[:2] == ("staged", 1)
    assert axis_cuda.plan_rows(1 << 20, 32, 4, **H100, contiguous=True)[:1] == ("staged",)
    for rows, cols, isz in ((1 << 20, 128, 4), (1000, 24, 4), (1000, 33, 4), (10, 3, 4)):
        assert axis_cuda.plan_rows(rows, cols, isz, **H100, **back).kernel != "packed"
    assert axis_cuda.plan_rows(1 << 16, 513, 4, **H100, **back)[:2] == ("staged", 32)
    assert axis_cuda.plan_rows(65536, 1000, 4, **H100, **back)[::5] == ("staged", 4)
    assert axis_cuda.plan_rows(65536, 1000, 8, **H100, **back)[::5] == ("staged", 2)
    assert axis_cuda.plan_rows(65536, 2046, 4, **H100, **back)[::5] == ("staged", 2)
    assert axis_cuda.plan_rows(65536, 2047, 4, **H100, **back).kernel == "split"  # 1 a tile
    # longer rows, or rows not back to back: the group or split kernel
    assert axis_cuda.plan_rows(65536, 2048, 4, **H100, **back)[:2] == ("split", 32)
    assert axis_cuda.plan_rows(32768, 4097, 4, **H100, **back).kernel == "split"
    assert axis_cuda.plan_rows(1 << 16, 513, 4, **H100).kernel == "group"
    # aligned back-to-back rows of 1-2 KiB on the 16-byte grid: the group kernel
    for rows, cols, isz, g in ((1 << 17, 256, 4, 16), (1 << 17, 256, 8, 32), (4096, 512, 4, 32),
                               (3, 256, 4, 16), (10000, 384, 4, 32)):
        plan = axis_cuda.plan_rows(rows, cols, isz, **H100, **back)
        assert (plan.kernel, plan.group, plan.vec) == ("group", g, True), (rows, cols, isz)
    assert axis_cuda.plan_rows(1000, 512, 4, **H100, **back).kernel == "staged"  # few rows
    assert axis_cuda.plan_rows(1 << 17, 252, 4, **H100, **back).kernel == "staged"  # 1008 B
    assert axis_cuda.plan_rows(1 << 17, 516, 4, **H100, **back).kernel == "staged"  # 2064 B
    assert axis_cuda.plan_rows(1 << 20, 33, 4, **H100).kernel == "group"


@pytest.mark.parametrize("rows,cols", [(1, 1), (1, 5), (7, 1), (3, 31), (7, 1023), (1000, 1025),
                                       (1 << 20, 32), (16, (1 << 24) + 3), (1, 1 << 26),
                                       (3000, 3000), (100, 100000), (1 << 21, 33)])
@pytest.mark.parametrize("itemsize", [4, 8])
@pytest.mark.parametrize("contiguous", [False, True])
def test_plan_rows_shapes(rows: int, cols: int, itemsize: int, contiguous: bool) -> None:
    p = axis_cuda.plan_rows(rows, cols, itemsize, **H100, contiguous=contiguous,
                            aligned=contiguous)
    assert p.group in axis_cuda.GROUPS and 1 <= p.grid < 2 ** 31
    if p.kernel == "split":
        assert p.vec == (cols * itemsize >= 64)
        assert p.grid == rows * p.splits and p.chunk * (p.splits - 1) < cols <= p.chunk * p.splits
        assert p.chunk % (16 // itemsize) == 0 or p.splits == 1
        assert p.grid <= 132 * 16 or p.splits == 1
    elif p.kernel == "staged":  # whole rows in a tile of 16 or 32 KiB wherever it starts
        worst = 16 - itemsize + p.chunk * cols * itemsize  # the first element at word offset 12
        assert p.words == (8 if cols * itemsize < 512 else 4)
        assert contiguous and -(-worst // 16) <= 256 * p.words
        assert p.words == 4 or p.group in axis_cuda.STAGE_WIDE_GROUPS  # instantiated
        assert p.grid == -(-rows // p.chunk) and p.group * min(p.chunk, 256) <= 256
    elif p.kernel == "group":
        assert p.vec == (cols * itemsize >= 64)
        assert p.grid * 256 // 32 * (32 // p.group) >= rows  # a row for every group of lanes


def test_plan_cols() -> None:
    wide = axis_cuda.plan_cols(8192, 8192, 4, True, 132)  # narrowed to 32 column threads
    assert wide.vec and wide.cg == 32 and (wide.gx, wide.splits) == (64, 8)
    square64 = axis_cuda.plan_cols(8192, 8192, 8, True, 132)
    assert square64.cg == 32 and (square64.gx, square64.splits) == (128, 4)
    assert wide.chunk >= axis_cuda.COLS_MIN_ROWS
    for acc in (4, 8, 16):  # the last block's partials within the bound, or 16 column threads
        p = axis_cuda.plan_cols(8192, 8192, 4, True, 132, acc)
        assert p.splits * p.cg * 4 * acc <= axis_plan.COLS_FINISH_BYTES or p.cg == 16
        assert p.gx * p.splits <= 4 * 132 and p.gx * p.cg * 4 >= 8192
    one = axis_cuda.plan_cols(128, 1 << 20, 4, True, 132)  # no splits: the widest blocks
    assert one.cg == 256 and one.splits == 1
    few = axis_cuda.plan_cols(1 << 24, 16, 4, True, 132)
    assert few.cg == 4 and few.gx == 1 and few.splits == 132 * 4  # four blocks per SM
    odd = axis_cuda.plan_cols(100, 1025, 4, False, 132)
    assert not odd.vec and odd.splits == 1 and odd.gx * odd.cg >= 1025
    for nred, ncols in ((1, 2), (5, 3), (300, 7), (1 << 20, 2)):
        p = axis_cuda.plan_cols(nred, ncols, 8, True, 132)
        assert p.chunk * (p.splits - 1) < nred <= p.chunk * p.splits and p.splits <= 65535


@pytest.mark.parametrize("nred,ncols,itemsize,cg,gx", [
    (512, 1 << 18, 4, 128, 512),   # 256 column blocks of 256 fill under half: halved once
    (512, 1 << 18, 8, 256, 512),   # 512 fill half of four blocks per SM: kept
    (2048, 1 << 16, 4, 32, 512),   # halved down to COLS_NARROW_CG
    (64, 200, 4, 32, 2),           # no further than COLS_NARROW_CG
    (64, 64, 4, 16, 1),            # fewer column groups than COLS_NARROW_CG: never halved
])
def test_plan_cols_narrows_column_blocks_before_splitting(nred: int, ncols: int, itemsize: int,
                                                          cg: int, gx: int) -> None:
    """Column threads per block are halved, down to COLS_NARROW_CG, while the column blocks
    fill less than half of COLS_BLOCKS_PER_SM blocks per SM; the expression names the kernel
    the plan asks for."""
    p = axis_cuda.plan_cols(nred, ncols, itemsize, True, 132)
    assert (p.cg, p.gx) == (cg, gx)
    exprs = axis_cuda._expressions("float, double, float, OpMean")
    e = axis_cuda.cols_expr("float, double, float, OpMean", p.vec, p.short_walk)
    assert e in exprs and e.endswith(f"{str(p.vec).lower()}, {str(p.short_walk).lower()}>")
    for vec, short in ((True, False), (True, True), (False, False), (False, True)):
        assert axis_cuda.cols_expr("float, double, float, OpMean", vec, short) in exprs


@pytest.mark.parametrize("nred,ncols,itemsize,aligned,cg", [
    (16, 1 << 20, 4, True, 128),     # 2 row lanes of 8 rows
    (32, 1 << 20, 8, True, 64),      # 4 of 8: a column of COLS_LANE_COLUMN_BYTES
    (63, 1 << 20, 4, True, 64),      # 4 of 15-16: the most lanes with 8 rows or more each
    (64, 1 << 20, 4, True, 32),      # 8 of 8
    (33, 1 << 20, 8, True, 256),     # 264-byte columns: one row lane
    (128, 1 << 20, 4, True, 256),    # 512-byte columns
    (15, 1 << 20, 4, True, 256),     # fewer than 2 * COLS_UNROLL rows
    (64, 1 << 20, 2, True, 32),      # float16: 128-byte columns
    (32, 1 << 20, 4, False, 256),    # scalar loads (base off the 16-byte grid): one row lane
    (256, 64, 1, True, 4),           # rows split over 2 blocks: as without the rule
])
def test_plan_cols_row_lanes_of_one_step(nred: int, ncols: int, itemsize: int, aligned: bool,
                                         cg: int) -> None:
    """Unsplit columns of at most COLS_LANE_COLUMN_BYTES with 16-byte loads take row lanes of
    COLS_UNROLL to 2 * COLS_UNROLL - 1 rows; every other plan keeps its column threads."""
    p = axis_cuda.plan_cols(nred, ncols, itemsize, aligned, 132)
    assert p.cg == cg and p.gx * p.cg * (16 // itemsize if p.vec else 1) >= ncols
    lanes = axis_plan.COLS_BLOCK // p.cg
    if p.splits == 1 and lanes > 1:
        assert axis_plan.COLS_UNROLL <= nred // lanes < 2 * axis_plan.COLS_UNROLL


@pytest.mark.parametrize("nred,ncols,itemsize,aligned,short", [
    (16, 1 << 20, 4, True, True),     # 2 row lanes of one unrolled step
    (32, 1 << 20, 4, True, True),     # 4 row lanes of one step
    (33, 1 << 20, 8, True, False),    # one row lane, 5 steps
    (64, 1 << 20, 8, True, False),    # one row lane, 8 steps
    (32, 1 << 20, 4, False, False),   # no 16-byte loads: one form only
    (8192, 8192, 4, True, False),     # 32 column threads x 8 splits: 1024 rows / 8 lanes
    (1 << 20, 32, 4, True, False),    # 528 splits of 1986 rows / 32 lanes: 8 steps
])
def test_plan_cols_short_walk(nred: int, ncols: int, itemsize: int, aligned: bool,
                              short: bool) -> None:
    """The short-walk form where each thread walks at most COLS_SHORT_STEPS unrolled steps of
    its row range, with 16-byte loads."""
    p = axis_cuda.plan_cols(nred, ncols, itemsize, aligned, 132)
    steps = -(-p.chunk // (axis_plan.COLS_UNROLL * (axis_plan.COLS_BLOCK // p.cg)))
    assert p.short_walk is short
    assert p.short_walk == (p.vec and steps <= axis_plan.COLS_SHORT_STEPS)


def test_k2_plans() -> None:
    assert axis_cuda_k2.k2_block(8192) == 1024
    assert axis_cuda_k2.k2_block(1000) == 512
    assert axis_cuda_k2.k2_block(1) == 32
    assert axis_cuda_k2.k2_splits(8192, 8192, 1024, 264) == 1
    assert axis_cuda_k2.k2_splits(16, 1 << 24, 1024, 264) == 16
    assert axis_cuda_k2.k2_splits(1, 100, 64, 264) == 2


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_to_native_mappings(op: str, dtype: str) -> None:
    """The device dtype mappings, run with NumPy: reduce the mapped data the way the kernels do
    (int64 / float64 accumulators, native min/max), map back, compare with NumPy."""
    x = data(dtype, (4, 9), seed=2)
    if dtype == "uint64":
        x[0, :3] = [2 ** 64 - 1, 2 ** 63, 2 ** 63 - 1]  # across the sign bit
        if op in ("mean", "var", "std"):
            x //= 2 ** 11  # exactly representable in float64 (NumPy converts too)
    xn, back = axis_input.to_native(x, op, x.dtype)
    assert np.dtype(xn.dtype) in axis_input.NATIVE
    if op == "sum":
        r = np.add.reduce(xn, axis=1, dtype=np.float64 if xn.dtype.kind == "f" else np.int64)
    elif op == "mean":
        r = np.add.reduce(xn, axis=1, dtype=np.float64) / x.shape[1]
    elif op in ("min", "max"):
        r = getattr(np, op)(xn, axis=1)
    else:
        r = getattr(np, op)(xn.astype(np.float64), axis=1)
    out = result_dtype(op, x.dtype)
    got = back(r).astype(out)
    want = np_call(x, op, axis=1)
    assert got.dtype == want.dtype
    if out.kind in "biu":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=RTOL[out.name])


def test_shifted_moments_formula() -> None:
    """The kernels' var: shift by the slice's first element, S1, S2 in float64,
    (S2 - S1^2/n) / (n - ddof); accurate where the naive sum of squares is not."""
    rng = np.random.default_rng(4)
    for x in (rng.standard_normal(10000) + 1e6, np.tile([1e6, -1e6 + 1], 500),
              np.full(1000, 7.25), rng.standard_normal(3) * 1e-3):
        d = x - x[0]
        s1, s2, n = d.sum(), (d * d).sum(), x.size
        var = max(s2 - s1 * s1 / n, 0.0) / (n - 1)
        np.testing.assert_allclose(var, np.var(x, ddof=1), rtol=1e-9, atol=1e-300)


# --- registry, cost model, what ran -----------------------------------------------------------

def test_variants_and_supports() -> None:
    import warplab
    from warplab.core import registry

    names = warplab.variants("reduce_axis")
    assert set(names) >= {"numpy", "rows_adaptive", "columns", "k2_basic", "k2_shared",
                          "k2_shared_unrolled", "k2_multiblock"}
    assert warplab.variants("reduce_axis", "cpu") == ["numpy"]
    f32 = np.dtype(np.float32)
    rows = AxisProblem(8192, 8192, "rows", "mean", f32, True)
    cols = rows._replace(layout="cols")
    assert registry.choose("reduce_axis", "cuda", rows).name == "rows_adaptive"
    assert registry.choose("reduce_axis", "cuda", cols).name == "columns"
    for k2 in ("k2_basic", "k2_shared", "k2_shared_unrolled", "k2_multiblock"):
        v = registry.get("reduce_axis", k2)
        assert v.seed and v.supports(rows) and v.supports(rows._replace(op="sum"))
        assert not v.supports(cols) and not v.supports(rows._replace(op="var"))
        assert not v.supports(rows._replace(dtype=np.dtype(np.int32)))
        assert v.supports(rows._replace(dtype=np.dtype(np.float64)))


def test_cost_model() -> None:
    f32 = np.dtype(np.float32)
    assert axis_bytes_moved(AxisProblem(8192, 8192, "rows", "mean", f32, True)) == \
        8192 * 8192 * 4 + 8192 * 4
    assert axis_bytes_moved(AxisProblem(1 << 20, 32, "rows", "sum", np.dtype(np.int16), True)) \
        == (1 << 20) * 32 * 2 + (1 << 20) * 8
    assert axis_bytes_moved(AxisProblem(100, 7, "cols", "var", np.dtype(np.int32), True)) == \
        700 * 4 + 7 * 8


def test_records_numpy_variant() -> None:
    from conftest import clear_ran, last_ran

    clear_ran()
    reduce_axis(np.ones((3, 4)), "mean", 1, device="cpu")
    assert last_ran() == "numpy"


@pytest.mark.skipif(cuda_available(), reason="checks the error without a GPU")
def test_cuda_variant_without_gpu() -> None:
    with pytest.raises(DeviceUnavailableError):
        reduce_axis(np.ones((3, 4)), "sum", 1, variant="rows_adaptive")
    with pytest.raises(ValueError, match="runs on the cuda backend"):
        reduce_axis(np.ones((3, 4)), "sum", 1, variant="k2_shared", device="cpu")


# --- series_stats_rows ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8", "float16"])
def test_series_stats_rows(dtype: str) -> None:
    x = data(dtype, (6, 50), seed=9)
    for v in (x, np.asfortranarray(x), x[:, ::2]):
        mean, norm = series_stats_rows(v, device="cpu")
        want = np.float32 if dtype == "float32" else np.float64
        assert mean.dtype == want and norm.dtype == want and mean.shape == (6,)
        v64 = v.astype(np.float64)
        m = v64.mean(axis=1)
        rtol = 1e-6 if dtype == "float32" else 1e-12
        np.testing.assert_allclose(mean, m, rtol=rtol)
        np.testing.assert_allclose(norm, np.sqrt(((v64 - m[:, None]) ** 2).sum(axis=1)),
                                   rtol=rtol)
    with pytest.raises(ValueError, match="2-D"):
        series_stats_rows(np.ones(3), device="cpu")

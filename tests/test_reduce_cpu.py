"""warplab.sum / min / max / mean / reduce on the NumPy backend against NumPy, plus errors,
inputs, the variant registry and property tests."""
from __future__ import annotations

import functools

import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import warplab
from warplab.core import registry as _registry
from warplab.families.reduce.spec import ReduceProblem
from conftest import clear_ran, last_ran

OPS = ("sum", "min", "max", "mean")
DTYPES = ("int32", "int64", "float32", "float64")
SIZES = (1, 2, 31, 512, 513, 4097, 100_003)
KINDS = ("random", "equal", "huge_small")
FUNCS = {"sum": warplab.sum, "min": warplab.min, "max": warplab.max, "mean": warplab.mean}
NP_FUNCS = {"sum": np.sum, "min": np.min, "max": np.max, "mean": np.mean}
EPS64 = 2.0 ** -52

LECTURE = ("neighbored_gmem", "neighbored_smem", "neighbored_smem_nodiv", "interleaved_smem",
           "unroll2", "unroll_warp8", "complete_unroll8", "complete_unroll8_template")
SEEDS = set(LECTURE) | {"single_pass_fence"}
EXPECTED = SEEDS | {"persistent_vec", "numpy"}



@functools.lru_cache(maxsize=None)
def _data(dtype: str, n: int, kind: str) -> np.ndarray:
    rng = np.random.default_rng(zlib.crc32(f"{dtype}/{n}/{kind}".encode()))  # same every run
    dt = np.dtype(dtype)
    if kind == "equal":
        v = {"int32": 2**31 - 7, "int64": -123_456_789_012, "float32": 0.1, "float64": 0.1}[dtype]
        x = np.full(n, v, dtype=dt)
    elif kind == "huge_small":
        if dt.kind == "f":
            big, small = 1e30, 1e-3
        elif dt == np.int32:  # an int32 accumulator overflows, int64 must not
            big, small = 2**31 - 1, 2**31 - 3
        else:  # int64: wraps around like NumPy
            big, small = 2**63 - 1, 2**62 + 5
        x = np.where(np.arange(n) % 2 == 0, big, small).astype(dt)
    else:
        if dt.kind == "f":
            x = (rng.standard_normal(n) * 1000.0).astype(dt)
        else:
            info = np.iinfo(dt)
            x = rng.integers(info.min, info.max, size=n, dtype=dt, endpoint=True)
    x.setflags(write=False)
    return x


def _expected_dtype(op: str, dtype) -> np.dtype:
    return NP_FUNCS[op](np.zeros(1, dtype=dtype)).dtype


def _float_bound(x: np.ndarray, got_dtype: np.dtype, ref64: float, divisor: int = 1) -> float:
    """4 ulps of the result type at |ref| plus n * eps64 * sum(|x|) (divided for a mean)."""
    x64 = x.astype(np.float64).reshape(-1)
    n = x64.size
    ulp = np.spacing(np.dtype(got_dtype).type(abs(ref64)))
    return float(4 * ulp) + n * EPS64 * float(np.sum(np.abs(x64))) / divisor


def check(op: str, got, x: np.ndarray) -> None:
    """``got`` is warplab's ``op`` of ``x``: NumPy's result dtype and NumPy's value."""
    want_dt = _expected_dtype(op, x.dtype)
    assert isinstance(got, np.generic), type(got)
    assert got.dtype == want_dt, (op, x.dtype, got.dtype, want_dt)
    n = x.size
    if op in ("min", "max"):
        assert got == NP_FUNCS[op](x)
        return
    if x.dtype.kind == "i":
        if op == "sum":
            assert got == np.sum(x)  # exact, int64 wrap-around included
        else:
            ref = np.mean(x)
            assert abs(got - ref) <= 1e-12 * abs(ref) + _float_bound(x, got.dtype, ref, n)
        return
    ref64 = float(np.sum(x.astype(np.float64)))
    if op == "mean":
        ref64 /= n
        tol = _float_bound(x, got.dtype, ref64, n)
        if x.dtype == np.float64:
            ref = np.mean(x)
            tol = min(tol, 1e-12 * abs(ref)) if ref != 0 else tol
            assert abs(got - ref) <= tol, (got, ref)
        else:
            assert abs(float(got) - ref64) <= tol, (got, ref64)
        return
    assert abs(float(got) - ref64) <= _float_bound(x, got.dtype, ref64), (got, ref64)


# ---------------------------------------------------------------------------- vs NumPy

@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_matches_numpy(op: str, dtype: str, n: int, kind: str) -> None:
    x = _data(dtype, n, kind)
    check(op, FUNCS[op](x), x)
    check(op, warplab.reduce(x, op), x)
    assert last_ran() == "numpy"


@pytest.mark.parametrize("n", [2, 513, 100_003])
def test_int32_huge_needs_int64_accumulator(n: int) -> None:
    x = _data("int32", n, "huge_small")
    want = sum(int(v) for v in x)  # Python ints: exact
    with np.errstate(over="ignore"):
        assert int(np.add.reduce(x, dtype=np.int32)) != want  # an int32 accumulator overflows
    got = warplab.sum(x)
    assert got.dtype == np.int64 and int(got) == want
    assert warplab.mean(x) == pytest.approx(want / n, rel=1e-12)


def test_int64_wraps_like_numpy() -> None:
    x = np.array([2**63 - 1, 1], dtype=np.int64)
    assert warplab.sum(x) == np.int64(-(2**63)) == np.sum(x)
    y = np.array([2**63 - 1] * 3 + [-5], dtype=np.int64)
    assert warplab.sum(y) == np.sum(y)
    assert int(warplab.sum(y)) == (sum(int(v) for v in y) + 2**63) % 2**64 - 2**63


@pytest.mark.parametrize("op", ["sum", "mean"])
@pytest.mark.parametrize("x", [np.full(2**25, 1.0, dtype=np.float32),
                               np.r_[np.float32(2**24), np.ones(1000, dtype=np.float32)]],
                         ids=["ones_2^25", "2^24+1000ones"])
def test_float32_sum_does_not_drift(x: np.ndarray, op: str) -> None:
    exact = float(np.sum(x.astype(np.float64)))  # exact: integers far below 2**53
    assert exact in (2.0**25, 2.0**24 + 1000)
    naive = float(np.cumsum(x, dtype=np.float32)[-1])
    assert naive == 2.0**24  # a float32 running sum stalls at 2**24
    got = FUNCS[op](x)
    assert got.dtype == np.float32
    want = exact if op == "sum" else exact / x.size
    assert float(got) == np.float32(want)
    if op == "sum":
        assert abs(float(got) - exact) < abs(naive - exact)


# ---------------------------------------------------------------------------- NaN / inf

@pytest.mark.parametrize("where", ["first", "middle", "last"])
@pytest.mark.parametrize("n", [1, 2, 513, 4097])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", OPS)
def test_nan_propagates(op: str, dtype: str, n: int, where: str) -> None:
    x = _data(dtype, n, "random").copy()
    x[{"first": 0, "middle": n // 2, "last": n - 1}[where]] = np.nan
    got = FUNCS[op](x)
    assert np.isnan(NP_FUNCS[op](x))
    assert np.isnan(got), got
    assert got.dtype == _expected_dtype(op, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("vals", [[np.inf, 1.0], [1.0, -np.inf], [np.inf, -np.inf],
                                  [-np.inf, 2.0, np.inf, 3.0], [np.inf, np.inf, 5.0],
                                  [-np.inf], [np.inf, np.nan, -np.inf]])
def test_inf_like_numpy(vals: list, op: str, dtype: str) -> None:
    x = np.array(vals, dtype=dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        want = NP_FUNCS[op](x)
        got = FUNCS[op](x)
    assert got.dtype == want.dtype
    np.testing.assert_equal(got, want)  # nan == nan, inf == inf


def test_float32_overflow() -> None:
    x = np.array([3.0e38, 3.0e38, -1.0], dtype=np.float32)
    with np.errstate(over="ignore"):
        assert warplab.sum(x) == np.inf == np.sum(x)  # the float32 result overflows
        # the mean accumulates in float64 (documented), so it does not overflow like NumPy's
        m = warplab.mean(x)
    assert m.dtype == np.float32 and m == np.float32((6.0e38 - 1.0) / 3)


def test_inf_examples() -> None:
    assert warplab.min(np.array([np.inf, 1.0])) == 1.0
    assert warplab.max(np.array([-np.inf, 1.0])) == 1.0
    with np.errstate(invalid="ignore"):
        assert np.isnan(warplab.sum(np.array([np.inf, -np.inf])))
    assert warplab.sum(np.array([np.inf, 1.0])) == np.inf


# ---------------------------------------------------------------------------- empty

@pytest.mark.parametrize("shape", [(0,), (0, 4), (3, 0)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_empty(dtype: str, shape: tuple) -> None:
    x = np.zeros(shape, dtype=dtype)
    s = warplab.sum(x)
    assert isinstance(s, np.generic) and s.dtype == np.sum(x).dtype and s == 0
    for f in (warplab.min, warplab.max):
        with pytest.raises(ValueError, match="zero-size"):
            f(x)
    with pytest.raises(ValueError):
        warplab.reduce(x, "max")
    with pytest.warns(RuntimeWarning):
        m = warplab.mean(x)
    with pytest.warns(RuntimeWarning), np.errstate(invalid="ignore"):
        want = np.mean(x)
    assert np.isnan(m) and m.dtype == want.dtype


def test_empty_list() -> None:
    s = warplab.sum([])
    assert s == 0 and s.dtype == np.sum([]).dtype
    with pytest.raises(ValueError):
        warplab.min([])


# ---------------------------------------------------------------------------- inputs

def _layouts() -> list:
    base = _data("float64", 100_003, "random")
    i32 = _data("int32", 4097, "random")
    return [
        pytest.param(base[:100_002].reshape(2, 3, -1), id="3d"),
        pytest.param(base[::3], id="stride3"),
        pytest.param(i32[1::7], id="int32_stride7"),
        pytest.param(base[:1000 * 100].reshape(1000, 100).T, id="transposed"),
        pytest.param(np.asfortranarray(i32[:4096].reshape(64, 64)), id="fortran"),
        pytest.param(base[:600].reshape(20, 30)[::2, ::-3], id="2d_strided_reversed"),
        pytest.param(np.array(7.5, dtype=np.float32), id="0d"),
    ]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("x", _layouts())
def test_layouts(x: np.ndarray, op: str) -> None:
    before = x.copy()
    check(op, FUNCS[op](x), np.ascontiguousarray(x).reshape(-1))
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("lst", [[1, 2, 3, -10], [[1, 2], [3, 4]], [1.5, 2.25, -0.125],
                                 [1, 2.5], [2**40, 2**40]])
def test_python_lists(lst: list, op: str) -> None:
    got = FUNCS[op](lst)
    want = NP_FUNCS[op](lst)
    assert got.dtype == want.dtype
    assert got == want


class _DLPackOnly:
    """Exposes nothing but the DLPack protocol (like a foreign CPU tensor)."""

    def __init__(self, a: np.ndarray) -> None:
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_dlpack_cpu_object(dtype: str, op: str) -> None:
    x = _data(dtype, 4097, "random")
    got = FUNCS[op](_DLPackOnly(x))
    assert isinstance(got, np.generic)
    check(op, got, x)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_cpu_tensor(dtype: str, op: str) -> None:
    torch = pytest.importorskip("torch")
    x = _data(dtype, 4097, "random")
    t = torch.from_numpy(x.copy())
    check(op, FUNCS[op](t), x)
    check(op, FUNCS[op](t[::3]), x[::3])  # non-contiguous tensor
    check(op, FUNCS[op](t.reshape(17, 241).T), x)


# ---------------------------------------------------------------------------- dtype=

def test_sum_dtype_float64() -> None:
    a = _data("int32", 100_003, "random")
    got = warplab.sum(a, dtype=np.float64)
    want = np.sum(a, dtype=np.float64)
    assert got.dtype == np.float64
    assert abs(got - want) <= 1e-12 * abs(want)
    assert warplab.sum(a, dtype="float64") == got


@pytest.mark.parametrize("func,src,dt", [("sum", "int32", "int64"), ("sum", "int64", "float32"),
                                         ("sum", "float64", "float32"),
                                         ("mean", "int32", "float32"),
                                         ("mean", "float32", "float64")])
def test_dtype_argument_like_numpy(func: str, src: str, dt: str) -> None:
    a = _data(src, 4097, "random")
    got = FUNCS[func](a, dtype=dt)
    want = NP_FUNCS[func](a, dtype=dt)
    assert got.dtype == want.dtype
    # NumPy accumulates in ``dt`` itself (float32: pairwise, ~log2(n) ulps of sum|x|), warplab in
    # float64: they may differ by NumPy's own rounding error, bounded through sum(|x|).
    scale = np.abs(a.astype(dt).astype(np.float64)).sum() / (a.size if func == "mean" else 1)
    assert abs(float(got) - float(want)) <= (2e-6 if "32" in dt else 1e-12) * scale


@pytest.mark.parametrize("func,dt", [("sum", np.int32), ("mean", np.int64)])
def test_integer_dtype_argument_result_dtype(func: str, dt) -> None:
    a = np.full(4, 2**31 - 1, dtype=np.int32)
    a[0] = 3
    with np.errstate(over="ignore"):
        want = NP_FUNCS[func](a, dtype=dt)
    got = FUNCS[func](a, dtype=dt)
    assert got.dtype == want.dtype
    assert got == want


# ---------------------------------------------------------------------------- errors

@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ["int8", "uint8", "float16", "bool", "uint32", "int16",
                                   "uint64"])
def test_other_dtypes_follow_numpy(dtype: str, op: str) -> None:
    """Dtypes the whole-array kernels do not take go to the axis family, with NumPy's result."""
    x = np.arange(1, 6).astype(dtype)
    for got in (warplab.reduce(x, op), FUNCS[op](x)):
        want = NP_FUNCS[op](x)
        assert got.dtype == want.dtype and np.allclose(got, want, rtol=1e-3)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_raises(dtype: str, op: str) -> None:
    with pytest.raises(TypeError, match="complex"):
        warplab.reduce(np.ones(5, dtype=dtype), op)


def test_dtype_argument_as_numpy() -> None:
    x = np.ones(3, dtype=np.float32)
    got = warplab.sum(x, dtype=np.float16)
    assert got.dtype == np.float16 and got == 3
    assert warplab.sum([True, False, True]) == 2


@pytest.mark.parametrize("op", ["prod", "Sum", "", "argmax"])
def test_unknown_op(op: str) -> None:
    with pytest.raises(ValueError) as ei:
        warplab.reduce(np.ones(3), op)
    msg = str(ei.value)
    assert repr(op) in msg
    for valid in OPS:
        assert valid in msg


@pytest.mark.parametrize("axis", [0, 1, -1, (0,), (0, 1)])
@pytest.mark.parametrize("op", OPS)
def test_axis_as_numpy(op: str, axis) -> None:
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    np.testing.assert_allclose(FUNCS[op](x, axis=axis), NP_FUNCS[op](x, axis=axis))
    np.testing.assert_allclose(warplab.reduce(x, op, axis=axis), NP_FUNCS[op](x, axis=axis))
    assert FUNCS[op](x, axis=None) == NP_FUNCS[op](x)


@pytest.mark.parametrize("op", OPS)
def test_unknown_variant(op: str) -> None:
    with pytest.raises(ValueError) as ei:
        warplab.reduce(np.ones(10, dtype=np.float32), op, variant="nosuch_variant")
    msg = str(ei.value)
    assert "nosuch_variant" in msg and "persistent_vec" in msg and "numpy" in msg
    for name in LECTURE:
        assert name in msg


@pytest.mark.parametrize("op", OPS)
def test_numpy_variant_explicit(op: str) -> None:
    x = _data("float32", 513, "random")
    clear_ran()
    check(op, warplab.reduce(x, op, variant="numpy"), x)
    assert last_ran() == "numpy"
    check(op, FUNCS[op](x, variant="numpy", device="cpu"), x)
    check(op, FUNCS[op](x, device="cpu"), x)


@pytest.mark.skipif(warplab.cuda_available(), reason="a GPU is present")
@pytest.mark.parametrize("name", sorted(EXPECTED - {"numpy"}))
def test_cuda_variant_without_gpu(name: str) -> None:
    with pytest.raises(warplab.DeviceUnavailableError, match=name):
        warplab.sum(np.ones(10, dtype=np.float32), variant=name)
    with pytest.raises(warplab.DeviceUnavailableError):
        warplab.reduce(np.ones(10, dtype=np.int32), "max", variant=name)


@pytest.mark.skipif(warplab.cuda_available(), reason="a GPU is present")
@pytest.mark.parametrize("device", ["cuda", "gpu", "CUDA"])
@pytest.mark.parametrize("op", OPS)
def test_device_cuda_without_gpu(op: str, device: str) -> None:
    with pytest.raises(warplab.DeviceUnavailableError):
        FUNCS[op](np.ones(10, dtype=np.float64), device=device)


def test_unknown_device() -> None:
    with pytest.raises(ValueError, match="tpu"):
        warplab.sum(np.ones(3), device="tpu")


@pytest.mark.skipif(warplab.cuda_available(), reason="a GPU is present")
@pytest.mark.parametrize("kwargs,exc", [({"variant": "nosuch_variant"}, ValueError),
                                        ({"device": "cuda"}, warplab.DeviceUnavailableError)])
def test_empty_input_still_validates_variant_and_device(kwargs: dict, exc) -> None:
    with pytest.raises(exc):
        warplab.sum(np.zeros(0, dtype=np.float32), **kwargs)


# ---------------------------------------------------------------------------- registry

def test_reduce_variants_registered() -> None:
    names = warplab.variants("reduce")
    assert len(names) == len(set(names))
    assert set(names) == EXPECTED
    assert warplab.variants("reduce", "cpu") == ["numpy"]
    assert set(warplab.variants("reduce", "cuda")) == EXPECTED - {"numpy"}
    assert warplab.variants("reduce", "cuda")[0] == "persistent_vec"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_seed_flags(name: str) -> None:
    v = _registry.get("reduce", name)
    assert v.seed is (name in SEEDS)
    assert v.name == name and v.family == "reduce"
    assert v.backend == ("cpu" if name == "numpy" else "cuda")
    assert v.summary  # first docstring line


def test_lecture_order_in_preference() -> None:
    cuda = warplab.variants("reduce", "cuda")
    assert [n for n in cuda if n in LECTURE] == list(LECTURE)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bytes_moved(name: str) -> None:
    bm = _registry.get("reduce", name).bytes_moved
    assert bm(ReduceProblem(size=1000, op="sum", dtype=np.float32, on_device=False)) == 4008
    assert bm(ReduceProblem(size=1000, op="max", dtype=np.float64, on_device=True)) == 8008
    assert bm(ReduceProblem(size=7, op="mean", dtype=np.int32, on_device=False)) == 36


# ---------------------------------------------------------------------------- properties

PROP = settings(max_examples=60, deadline=None, database=None)
_shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=24)


def _ints(dtype) -> st.SearchStrategy:
    info = np.iinfo(dtype)
    return hnp.arrays(dtype, _shapes, elements=st.integers(int(info.min), int(info.max)))


_floats = hnp.arrays(np.float64, _shapes,
                     elements=st.floats(-1e300, 1e300, allow_nan=False, allow_infinity=False))


@PROP
@pytest.mark.parametrize("op", OPS)
@given(x=st.one_of(_ints(np.int32), _ints(np.int64)), stride=st.integers(1, 3))
def test_prop_integers(op: str, x: np.ndarray, stride: int) -> None:
    x = x[..., ::stride]
    got = FUNCS[op](x)
    want = NP_FUNCS[op](x)
    assert got.dtype == want.dtype
    if op == "mean":
        assert abs(got - want) <= 1e-12 * abs(want) + _float_bound(x, got.dtype, want, x.size)
    else:
        assert got == want  # exact (wraps like NumPy)
    assert warplab.reduce(x, op) == got


@PROP
@pytest.mark.parametrize("op", OPS)
@given(x=_floats, stride=st.integers(1, 3))
def test_prop_float64(op: str, x: np.ndarray, stride: int) -> None:
    x = x[..., ::stride]
    got = FUNCS[op](x)
    want = NP_FUNCS[op](x)
    assert got.dtype == np.float64
    if op in ("min", "max"):
        assert got == want
    else:
        div = x.size if op == "mean" else 1
        tol = 1e-9 * abs(want) + x.size * EPS64 * float(np.sum(np.abs(x))) / div
        assert abs(got - want) <= tol, (got, want)


@PROP
@given(x=hnp.arrays(np.float32, st.integers(1, 3000),
                    elements=st.floats(-1e6, 1e6, allow_nan=False, width=32)))
def test_prop_float32_sum_bound(x: np.ndarray) -> None:
    got = warplab.sum(x)
    assert got.dtype == np.float32
    ref64 = float(np.sum(x.astype(np.float64)))
    assert abs(float(got) - ref64) <= _float_bound(x, np.float32, ref64)


@PROP
@pytest.mark.parametrize("op", OPS)
@given(x=hnp.arrays(st.sampled_from([np.float32, np.float64]), st.integers(1, 500),
                    elements=st.floats(-1e6, 1e6, allow_nan=False, width=32)),
       data=st.data())
def test_prop_nan_anywhere(op: str, x: np.ndarray, data) -> None:
    x[data.draw(st.integers(0, x.size - 1))] = np.nan
    got = FUNCS[op](x)
    assert np.isnan(got) and np.isnan(NP_FUNCS[op](x))
    assert got.dtype == _expected_dtype(op, x.dtype)


# ------------------------------------------------------- the default variant's launch shape

def test_persistent_vec_launch_shape() -> None:
    from warplab.families.reduce.cuda import VEC_ACC, VEC_BS, vec_grid

    full = 264  # 132 SMs x 2 blocks
    for itemsize in (4, 8):
        per_block = 16 // itemsize * VEC_BS
        limit = (64 << 10) // itemsize  # one round of VEC_ACC 16-byte loads per thread
        assert VEC_ACC * per_block == limit
        assert vec_grid(1, per_block, full) == 1
        assert vec_grid(limit, per_block, full) == 1
        assert vec_grid(limit + 1, per_block, full) == VEC_ACC + 1
        assert vec_grid(100 * limit, per_block, full) == full


# ---------------------------------------------------------------------------- out=

@pytest.mark.parametrize("name", ["sum", "min", "max", "mean", "var", "std"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_out_as_numpy(name: str, axis) -> None:
    x = np.arange(12, dtype=np.float64).reshape(3, 4) - 5
    want = getattr(np, name)(x, axis=axis)
    out = np.full(np.shape(want), np.nan)
    got = getattr(warplab, name)(x, axis=axis, out=out)
    assert got is out
    np.testing.assert_allclose(out, want)


def test_out_casting_and_shape_errors() -> None:
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    with pytest.raises(TypeError, match="same_kind"):
        warplab.sum(x, axis=0, out=np.zeros(3, dtype=np.int64))
    with pytest.raises(ValueError, match="shape"):
        warplab.sum(x, axis=0, out=np.zeros(2))
    with pytest.raises(TypeError, match="NumPy array"):
        warplab.sum(x, out=[0.0])
    got = warplab.sum(np.arange(4, dtype=np.int32), out=np.zeros((), np.float64))
    assert got.shape == () and got == 6  # int -> float: same_kind allows it, as NumPy

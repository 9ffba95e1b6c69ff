"""GPU tests of the reduction family (``pytest -m gpu`` on the GPU machine)."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import warplab
from conftest import clear_ran, last_ran

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)
cupy = pytest.importorskip("cupy")

VARIANTS = warplab.variants("reduce", "cuda")
OPS = ("sum", "min", "max", "mean")
DTYPES = ("int32", "int64", "float32", "float64")
SIZES = (1, 31, 32, 33, 511, 512, 513, 4095, (1 << 20) + 3)
KINDS = ("random", "equal", "alternating")


@functools.lru_cache(maxsize=64)
def host_data(kind: str, dtype: str, n: int) -> np.ndarray:
    rng = np.random.default_rng(n)
    dt = np.dtype(dtype)
    if kind == "equal":
        return np.full(n, 7 if dt.kind == "i" else 0.1, dtype=dt)
    if kind == "alternating":  # huge and small magnitudes, signs mixed
        if dt.kind == "i":
            big = np.iinfo(dt).max - 3
            x = np.where(np.arange(n) % 2 == 0, big, -3 - np.arange(n) % 5)
        else:
            x = np.where(np.arange(n) % 2 == 0, 1e30 if dt == np.float64 else 1e20,
                         1e-3 * (1 + np.arange(n) % 7))
        return x.astype(dt)
    if dt.kind == "i":
        return rng.integers(-(1 << 20), 1 << 20, size=n).astype(dt)
    return (rng.random(n) * 2 - 1).astype(dt)


def reference_of(x: np.ndarray, op: str):
    """NumPy's result, summed in float64 (int64 for integer sums, which wrap like NumPy's)."""
    if op in ("min", "max"):
        return getattr(np, op)(x)
    if x.dtype.kind == "i" and op == "sum":
        return np.add.reduce(x, dtype=np.int64)
    total = np.add.reduce(x, dtype=np.float64)
    return total if op == "sum" else total / x.size


@functools.lru_cache(maxsize=256)
def reference(kind: str, dtype: str, n: int, op: str):
    return reference_of(host_data(kind, dtype, n), op)


def check(got, x: np.ndarray, op: str, ref) -> None:
    want_dtype = getattr(np, op)(x[:1]).dtype
    assert got.dtype == want_dtype, (got.dtype, want_dtype)
    g = got.item() if hasattr(got, "item") else got
    if x.dtype.kind == "i" and op != "mean":
        assert g == int(ref)
        return
    bound_terms = np.abs(x.astype(np.float64)).sum()
    tol = 4 * float(np.spacing(np.abs(np.float32(ref) if got.dtype == np.float32
                                      else np.float64(ref)))) + x.size * 2.0 ** -52 * bound_terms
    if op == "mean":
        tol = tol / x.size + 4 * float(np.spacing(np.float32(abs(ref))))
    if op in ("min", "max"):
        tol = 0.0
    assert abs(float(g) - float(ref)) <= tol, (g, ref, tol)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_variant_matches_numpy(variant, op, dtype, n, kind):
    x = host_data(kind, dtype, n)
    got = warplab.reduce(cupy.asarray(x), op, variant=variant)
    assert last_ran() == variant
    assert isinstance(got, cupy.ndarray) and got.shape == ()
    check(got.get()[()], x, op, reference(kind, dtype, n, op))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("variant", VARIANTS)
def test_large_2_28_plus_1(variant, dtype):
    n = (1 << 28) + 1
    x = host_data("random", dtype, n)
    d = cupy.asarray(x)
    for op in OPS:
        check(warplab.reduce(d, op, variant=variant).get()[()], x, op,
              reference("random", dtype, n, op))


@pytest.mark.parametrize("offset", [0, 1, 3])
@pytest.mark.parametrize("dtype", DTYPES)
def test_persistent_vec_launch_shapes(dtype, offset):
    """The default around its one-block limit (64 KiB) and its first multi-block sizes, from
    aligned and unaligned starts, with the extreme at the first and at the last element (the
    sweep runs tail first)."""
    limit = (64 << 10) // np.dtype(dtype).itemsize
    for n in (limit - 1, limit, limit + 1, 2 * limit + 5, 8 * limit + 3):
        base = host_data("random", dtype, n + offset)
        x = base[offset:]
        d_x = cupy.asarray(base)[offset:]
        for op in OPS:
            got = warplab.reduce(d_x, op, variant="persistent_vec")
            assert last_ran() == "persistent_vec"
            check(got.get()[()], x, op, reference_of(x, op))
        for pos in (0, n - 1):
            y = x.copy()
            y[pos] = 1 << 21 if y.dtype.kind == "i" else 2.0
            assert warplab.max(cupy.asarray(y), variant="persistent_vec").get() == y[pos]
            y[pos] = -y[pos]
            assert warplab.min(cupy.asarray(y), variant="persistent_vec").get() == y[pos]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("op", OPS)
def test_nan_propagates(variant, op):
    x = host_data("random", "float32", 5000).copy()
    x[1234] = np.nan
    assert np.isnan(warplab.reduce(cupy.asarray(x), op, variant=variant).get())


@pytest.mark.parametrize("variant", VARIANTS)
def test_unaligned_and_strided_views(variant):
    x = host_data("random", "float32", 10_000)
    d = cupy.asarray(x)
    for sl in (slice(1, None), slice(3, 9_999), slice(None, None, 3), slice(7, 7 + 5)):
        check(warplab.sum(d[sl], variant=variant).get()[()], x[sl], "sum",
              np.add.reduce(x[sl], dtype=np.float64))


def test_float32_sum_accurate_where_naive_drifts():
    x = np.ones((1 << 25) + 5, dtype=np.float32)
    naive = np.cumsum(x[: (1 << 24) + 5], dtype=np.float32)[-1]  # a float32 running sum
    assert naive == 1 << 24                                       # stalls at 2^24
    # the exact sum, rounded once to float32 (2^25 + 5 is not a float32: 2^25 + 4 is nearest)
    assert warplab.sum(cupy.asarray(x)).get()[()] == np.float32(x.size)


def test_host_input_gives_numpy_scalars_and_repeated_calls_work():
    x = host_data("random", "int32", 100_000)
    for _ in range(3):  # the ticket counter must reset after every single-pass launch
        for v in ("persistent_vec", "single_pass_fence"):
            r = warplab.sum(x, variant=v)
            assert isinstance(r, np.int64) and r == np.add.reduce(x, dtype=np.int64)


def test_torch_input():
    torch = pytest.importorskip("torch")
    x = host_data("random", "float64", 4097)
    got = warplab.mean(torch.as_tensor(x).cuda())
    assert isinstance(got, cupy.ndarray)
    assert abs(float(got) - x.mean()) < 1e-12


def test_empty_on_device():
    assert warplab.sum(cupy.zeros(0, np.float32)).dtype == np.float32
    with pytest.raises(ValueError):
        warplab.max(cupy.zeros(0, np.int32))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_default_call_is_the_preferred_variant(op, dtype):
    x = host_data("random", dtype, 7 * 14_287)
    d = cupy.asarray(x)
    named = warplab.reduce(d, op, variant="persistent_vec").get()[()]
    for arg in (d, d.reshape(7, -1)[:, 1:], d[::2]):  # the short path, then the full one
        clear_ran()
        got = warplab.reduce(arg, op)
        assert last_ran() == "persistent_vec"
        assert isinstance(got, cupy.ndarray) and got.shape == ()
        if arg is d:
            assert got.get()[()] == named
        xs = cupy.asnumpy(arg).reshape(-1)
        check(got.get()[()], xs, op, reference_of(xs, op))


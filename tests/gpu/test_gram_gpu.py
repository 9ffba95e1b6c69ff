"""GPU tests of the tensor-core Gram kernels (``warplab.families.corr.gram``): every precision x
input dtype x shape x (a @ a.T, a @ b.T) x data (raw normal rows, centred unit-norm random
walks: the correlation case) against float64 NumPy, into NaN-poisoned outputs, within each
mode's stated bound (``gram_error_bound``: a function of N and the row norms); the symmetric
result must be exactly symmetric; bad input raises. Every named kernel configuration
(``gram_cuda.CONFIGS``) the device can run passes the same checks."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import warplab
from warplab.families.corr import gram_cuda
from warplab.families.corr.gram import (
    GRAM_PRECISIONS,
    gram,
    gram_available,
    gram_error_bound,
    gram_reference,
)

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)
if not gram_available():
    pytest.skip("gram needs compute capability 8.0+ (mma.sync)", allow_module_level=True)
cupy = pytest.importorskip("cupy")

# (M, N): M series of N samples
SHAPES = ((1, 1), (1, 2), (2, 1), (3, 3), (17, 33), (129, 1000), (1000, 129), (4097, 64),
          (300, 8192))
DATA = ("normal", "walk")
DTYPES = ("float32", "float64")
CONFIGS = tuple(c for c in gram_cuda.CONFIGS if c != "default")


def _needs(config: str) -> None:
    """Skip a configuration this device cannot run (the m16n8kK DMMA needs sm_90)."""
    if gram_cuda.device_limits()[1] < gram_cuda.CONFIGS[config].min_cc:
        pytest.skip(f"config {config} needs compute capability "
                    f"{gram_cuda.CONFIGS[config].min_cc}")


@functools.lru_cache(maxsize=8)
def _host(m: int, n: int, data: str, dtype: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed * 7919 + m * 31 + n)
    x = rng.standard_normal((m, n))
    if data == "walk":  # centred and unit-normalised random walks: highly correlated rows
        x = np.cumsum(x, axis=1)
        x -= x.mean(axis=1, keepdims=True)
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        x = x / np.where(norms > 0, norms, 1.0)
    return x.astype(dtype)


def _b_rows(m: int) -> int:
    return max(1, m // 2 + 3)


@functools.lru_cache(maxsize=4)
def _exact(m: int, n: int, data: str, dtype: str, sym: bool) -> tuple[np.ndarray, np.ndarray]:
    """float64 a @ b.T of the inputs as stored, and the bound's norm product (without rel)."""
    a = _host(m, n, data, dtype, 0).astype(np.float64)
    b = a if sym else _host(_b_rows(m), n, data, dtype, 1).astype(np.float64)
    return a @ b.T, (np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1))


@pytest.mark.parametrize("m,n", SHAPES)
@pytest.mark.parametrize("data", DATA)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sym", [True, False], ids=["a_aT", "a_bT"])
@pytest.mark.parametrize("precision", GRAM_PRECISIONS)
def test_gram_within_bound(m, n, data, dtype, sym, precision) -> None:
    _check_within_bound(m, n, data, dtype, sym, precision, "default")


@pytest.mark.parametrize("m,n", SHAPES)
@pytest.mark.parametrize("data", DATA)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sym", [True, False], ids=["a_aT", "a_bT"])
@pytest.mark.parametrize("config", CONFIGS)
def test_float64_configs_within_bound(m, n, data, dtype, sym, config) -> None:
    _needs(config)
    _check_within_bound(m, n, data, dtype, sym, "float64", config)


@pytest.mark.parametrize("m,n", [(3, 3), (17, 33), (1000, 129), (4097, 64), (300, 8192)])
@pytest.mark.parametrize("sym", [True, False], ids=["a_aT", "a_bT"])
@pytest.mark.parametrize("precision", ["float32", "tf32"])
@pytest.mark.parametrize("config", CONFIGS)
def test_tf32_modes_of_configs_within_bound(m, n, sym, precision, config) -> None:
    """A configuration's warp grid and ring depth apply to the TF32 modes too."""
    _needs(config)
    _check_within_bound(m, n, "walk", "float32", sym, precision, config)


def _check_within_bound(m: int, n: int, data: str, dtype: str, sym: bool, precision: str,
                        config: str) -> None:
    a = cupy.asarray(_host(m, n, data, dtype, 0))
    b = None if sym else cupy.asarray(_host(_b_rows(m), n, data, dtype, 1))
    mb = m if sym else b.shape[0]
    res = np.float64 if precision == "float64" else np.float32
    out = cupy.full((m, mb), np.nan, dtype=res)
    got = gram(a, b, precision=precision, out=out, config=config)
    assert got is out
    h = cupy.asnumpy(got)
    assert not np.isnan(h).any(), "an element of C was not written"
    exact, (na, nb) = _exact(m, n, data, dtype, sym)
    err = np.abs(h.astype(np.float64) - exact)
    bound = gram_error_bound(precision, n, na, nb)
    worst = np.unravel_index(np.argmax(err - bound), err.shape)
    assert (err <= bound).all(), (f"{precision} ({config}): error {err[worst]:.3g} > bound "
                                  f"{bound[worst]:.3g} at {worst}")
    if sym:
        assert (h == h.T).all(), "a @ a.T must be exactly symmetric"


@pytest.mark.parametrize("precision", GRAM_PRECISIONS)
def test_correlation_targets_at_8192(precision) -> None:
    """The accuracy targets on unit-norm random walks of 8192 samples (float32 input):
    float64 1e-9, float32 2e-6; tf32 stays within its bound."""
    x = _host(300, 8192, "walk", "float32", 0)
    got = cupy.asnumpy(gram(cupy.asarray(x), precision=precision)).astype(np.float64)
    err = np.abs(got - x.astype(np.float64) @ x.astype(np.float64).T).max()
    target = {"float64": 1e-9, "float32": 2e-6, "tf32": 2e-3}[precision]
    assert err <= target


@pytest.mark.parametrize("config", CONFIGS)
def test_configs_meet_the_float64_target_at_8192(config) -> None:
    """float64 configurations on unit-norm random walks of 8192 samples, float32 and float64
    rows: error <= 1e-9 (float64's target), and no worse than the default by more than the
    bound allows."""
    _needs(config)
    for dtype in ("float32", "float64"):
        x = _host(300, 8192, "walk", dtype, 0)
        exact = x.astype(np.float64) @ x.astype(np.float64).T
        got = cupy.asnumpy(gram(cupy.asarray(x), config=config))
        assert np.abs(got - exact).max() <= 1e-9
        assert np.abs(got - exact).max() <= gram_error_bound("float64", 8192, [1.0], [1.0])[0, 0]


def test_configs_refused_on_older_devices() -> None:
    a = cupy.ones((4, 8))
    with pytest.raises(ValueError, match="unknown gram config"):
        gram(a, config="fastest")
    cc = gram_cuda.device_limits()[1]
    for name, cfg in gram_cuda.CONFIGS.items():
        if cc < cfg.min_cc:
            with pytest.raises(ValueError, match="compute capability"):
                gram(a, config=name)


@pytest.mark.parametrize("precision", GRAM_PRECISIONS)
def test_gram_tracks_the_rounding_model(precision) -> None:
    """The kernels are no further from each mode's NumPy emulation than the bound allows for
    the tensor cores' own summation (and exact in float64 mode)."""
    x = _host(129, 1000, "normal", "float32", 0)
    got = cupy.asnumpy(gram(cupy.asarray(x), precision=precision)).astype(np.float64)
    ref = gram_reference(x, precision=precision).astype(np.float64)
    nrm = np.linalg.norm(x.astype(np.float64), axis=1)
    assert (np.abs(got - ref) <= gram_error_bound(precision, 1000, nrm, nrm)).all()


def test_default_output_and_unaligned_rows() -> None:
    """out=None allocates; a base pointer off 16-byte alignment takes the per-element copies."""
    x = _host(70, 260, "normal", "float32", 0)
    buf = cupy.empty(x.size + 1, dtype=np.float32)
    a = buf[1:].reshape(x.shape)
    a[...] = cupy.asarray(x)
    assert a.flags.c_contiguous and a.data.ptr % 16 != 0
    for precision in GRAM_PRECISIONS:
        got = gram(a, precision=precision)
        assert got.dtype == (np.float64 if precision == "float64" else np.float32)
        exact = x.astype(np.float64) @ x.astype(np.float64).T
        nrm = np.linalg.norm(x.astype(np.float64), axis=1)
        err = np.abs(cupy.asnumpy(got).astype(np.float64) - exact)
        assert (err <= gram_error_bound(precision, 260, nrm, nrm)).all()


def test_empty_and_zero_length() -> None:
    a = cupy.ones((5, 0), np.float32)
    out = cupy.full((5, 5), np.nan)
    assert (gram(a, out=out) == 0).all()
    assert gram(cupy.ones((0, 4), np.float64)).shape == (0, 0)
    assert gram(cupy.ones((3, 4)), cupy.ones((0, 4))).shape == (3, 0)


def test_bad_input() -> None:
    a = cupy.ones((4, 8), np.float32)
    with pytest.raises(ValueError, match="unknown precision"):
        gram(a, precision="bf16")
    with pytest.raises(TypeError, match="CuPy array"):
        gram(np.ones((4, 8), np.float32))
    with pytest.raises(ValueError, match="2-D"):
        gram(cupy.ones(8, np.float32))
    with pytest.raises(ValueError, match="float32 or float64"):
        gram(cupy.ones((4, 8), np.int32))
    with pytest.raises(ValueError, match="same dtype"):
        gram(a, cupy.ones((4, 8), np.float64))
    with pytest.raises(ValueError, match="same number of columns"):
        gram(a, cupy.ones((4, 7), np.float32))
    with pytest.raises(ValueError, match="C-contiguous"):
        gram(cupy.ones((8, 4), np.float32).T)
    with pytest.raises(ValueError, match="shape"):
        gram(a, out=cupy.empty((4, 5)))
    with pytest.raises(ValueError, match="float32"):
        gram(a, precision="tf32", out=cupy.empty((4, 4), np.float64))
    with pytest.raises(ValueError, match="C-contiguous"):
        gram(a, out=cupy.empty((4, 4)).T)
    with pytest.raises(TypeError, match="out must be a CuPy"):
        gram(a, out=np.empty((4, 4)))

"""GPU tests of the int8_slices corrcoef variant (``families/corr/slices*.py``, ``slices.cu``):
cuBLAS's int8 GEMM as called (TN, int32 out) against NumPy integers; every precision x shape x
data (random walks, constant series, NaN series) against float64 NumPy within the variant's
bound (``spec.error_bound``: 1e-9 for float64, 2^-19.5 and 2^-10 targets for float32 and tf32);
each block bit for bit equal to the NumPy emulation (``slices.emulate``) on the same normalised
rows, also with k cut into chunks and narrow panels; the GPU's row statistics against NumPy's;
out= on the device and tile by tile into host memory; the choice of s on 8192 random walks."""
from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from conftest import ran_of

import warplab
from gpu.test_corr_gpu import _close, _numpy  # the same checks as the other variants'
from warplab.families.corr import cuda, slices, slices_cuda, tiles
from warplab.families.corr.slices import (
    STATS,
    RowMaxima,
    choose_slices,
    emulate,
    row_stats,
    slices_error_bound,
)
from warplab.families.corr.spec import PRECISIONS, error_bound

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)
if not cuda.slices_ok()[0]:
    pytest.skip(cuda.slices_ok()[1], allow_module_level=True)
cupy = pytest.importorskip("cupy")

MS, NS = (1, 2, 3, 31, 1000), (1, 2, 15, 17, 4097)
ISSUE = {"float64": 1e-9, "float32": 2e-6, "tf32": 1.2e-3}  # promised bounds (tf32: tc_gram's)


@functools.lru_cache(maxsize=64)
def _host(m: int, n: int, data: str) -> np.ndarray:
    if data == "walk":
        return warplab.random_walk(m, n, seed=m + n, device="cpu")
    x = np.random.default_rng(m * 7 + n).standard_normal((m, n)).astype(np.float32)
    if data == "const":
        x[::3] = np.float32(2.5)      # every third series constant
    elif data == "nan":
        x[1::4, n // 2] = np.nan       # NaN in every fourth series
    return x


def _corr(x, precision: str, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return warplab.corrcoef(x, variant="int8_slices", precision=precision, **kw)


def test_cublas_int8_gemm_tn() -> None:
    """gemm_s8 as the engine calls it: C^T = X W^T on row-major int8 with padded rows."""
    rng = np.random.default_rng(0)
    rows, cols, k, ld = 48, 32, 80, 112
    x = rng.integers(-128, 128, (rows, ld), dtype=np.int8)
    w = rng.integers(-128, 128, (cols, ld), dtype=np.int8)
    dx, dw = cupy.asarray(x), cupy.asarray(w)
    c = cupy.full((rows, cols + 16), -7, np.int32)
    slices_cuda.gemm_s8(cols, rows, k, dw.data.ptr + 16, ld, dx.data.ptr + 16, ld,
                        c.data.ptr, cols + 16)
    want = x[:, 16:16 + k].astype(np.int64) @ w[:, 16:16 + k].astype(np.int64).T
    got = cupy.asnumpy(c)
    np.testing.assert_array_equal(got[:, :cols], want)
    assert (got[:, cols:] == -7).all()  # ldc honoured: nothing written past the columns


@pytest.mark.parametrize("data", ("walk", "const"))
@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("m", MS)
@pytest.mark.parametrize("precision", PRECISIONS)
def test_vs_numpy(precision: str, m: int, n: int, data: str) -> None:
    h = _host(m, n, data)
    got = _corr(cupy.asarray(h), precision)
    assert isinstance(got, cupy.ndarray) and got.dtype == np.float64
    if m >= 2 and n >= 2:
        assert ran_of("corrcoef") == "int8_slices"
    bound = min(error_bound("int8_slices", precision, n), ISSUE[precision])
    _close(cupy.asnumpy(got), _numpy(h), bound)


def test_nan_series_like_numpy() -> None:
    h = _host(31, 17, "nan")
    for precision in PRECISIONS:
        _close(cupy.asnumpy(_corr(cupy.asarray(h), precision)), _numpy(h),
               error_bound("int8_slices", precision, 17))


def _prepared(h: np.ndarray, precision: str):
    z, valid = cuda.normalise_rows(cupy.asarray(h), np.float64)
    return slices_cuda.Prepared(z, valid, precision), cupy.asnumpy(z), cupy.asnumpy(valid)


@pytest.mark.parametrize("chunked", (False, True))
@pytest.mark.parametrize("shape", ((31, 17), (100, 257), (257, 1000)))
@pytest.mark.parametrize("precision", PRECISIONS)
def test_blocks_bitwise_equal_emulation(precision: str, shape: tuple[int, int], chunked: bool,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    if chunked:  # at most 2048 / s products per GEMM: kc of 256 .. 2048
        monkeypatch.setattr(slices, "INT32_MAX", 2**14 * 2048)
    m, n = shape
    prep, z, valid = _prepared(_host(m, n, "const"), precision)
    want, s = emulate(z, valid, slices=prep.slices)
    stats = row_stats(z, valid)
    np.testing.assert_allclose(prep.maxima.c, stats[:, STATS - 2].max(), rtol=0, atol=0)
    host = RowMaxima.of(stats.max(axis=0))
    np.testing.assert_allclose(prep.maxima.digit_norms, host.digit_norms, rtol=1e-12)
    np.testing.assert_allclose(prep.maxima.tail_norms, host.tail_norms, rtol=1e-12)
    assert prep.slices == choose_slices(precision, n, host) == s
    blocks = ((0, m, 0, m), (0, m // 2, m // 2, m), (3, m // 3, m // 2, m - 1),
              (m // 3, m, m // 3, m))
    for width in (16, 1024):
        for r0, r1, c0, c1 in blocks:
            got = cupy.asnumpy(prep.block(r0, r1, c0, c1, width=width))
            np.testing.assert_array_equal(got, want[r0:r1, c0:c1])


@pytest.mark.parametrize("shape", ((31, 17), (257, 1000)))
@pytest.mark.parametrize("precision", PRECISIONS)
def test_extent_path_and_finished_blocks(precision: str, shape: tuple[int, int]) -> None:
    """normalise_with_extent: the same z and valid as normalise_rows, per-row max |z| exact
    and |z|_1 to rounding; Prepared with it picks s by the a-priori rule (digit statistics
    only above the nominal s); finished blocks are the raw ones clipped, diagonal 1."""
    m, n = shape
    h = cupy.asarray(_host(m, n, "const"))
    z, valid, extent = cuda.normalise_with_extent(h)
    z0, valid0 = cuda.normalise_rows(h, np.float64)
    assert bool((valid == valid0).all()) and bool(cupy.array_equal(z, z0, equal_nan=True))
    zh, vh, eh = cupy.asnumpy(z), cupy.asnumpy(valid), cupy.asnumpy(extent)
    a = np.where(vh[:, None], np.abs(zh), 0.0)
    np.testing.assert_array_equal(eh[:, 0], a.max(axis=1))
    np.testing.assert_allclose(eh[:, 1], a.sum(axis=1), rtol=1e-13)
    prep = slices_cuda.Prepared(z, valid, precision, extent=extent)
    light = slices.apriori_maxima(eh[:, 0].max() / slices.TOP, eh[:, 1].max())
    s = choose_slices(precision, n, light)
    if s > slices.NOMINAL_SLICES[precision] or precision in slices_cuda.STATS_FIRST:
        s = choose_slices(precision, n, RowMaxima.of(row_stats(zh, vh).max(axis=0)))
    assert prep.slices == s and prep.bound <= slices.TARGETS[precision]
    want, _ = emulate(zh, vh, slices=s)
    for r0, r1, c0, c1 in ((0, m, 0, m), (0, m // 2, m // 2, m), (m // 3, m, 0, m // 2)):
        raw = cupy.asnumpy(prep.block(r0, r1, c0, c1))
        np.testing.assert_array_equal(raw, want[r0:r1, c0:c1])
        fin = cupy.asnumpy(prep.block(r0, r1, c0, c1, finish=True))
        i, j = np.indices(raw.shape)
        np.testing.assert_array_equal(fin, np.where(r0 + i == c0 + j, 1.0,
                                                    np.clip(raw, -1, 1)))


@pytest.mark.parametrize("m", (1, 5, 300, 2000))
def test_column_maxima(m: int) -> None:
    rng = np.random.default_rng(m)
    for cols in (2, STATS, 16):
        a = rng.random((m, cols)) * 10.0 ** rng.integers(-300, 300, (m, cols))
        v = np.ones(m, bool)
        got = cupy.asnumpy(slices_cuda.column_maxima(cupy.asarray(a), cupy.asarray(v)))
        np.testing.assert_array_equal(got, np.append(a.max(axis=0), 1.0))
        v[m // 2] = False
        got = cupy.asnumpy(slices_cuda.column_maxima(cupy.asarray(a), cupy.asarray(v)))
        assert got[cols] == 0.0


def test_default_dispatch_by_size() -> None:
    """int8_slices is the automatic choice from SLICES_PREFER_M series of SLICES_PREFER_N
    values, tc_gram below (where it runs: sm_80+)."""
    big = warplab.random_walk(cuda.SLICES_PREFER_M, cuda.SLICES_PREFER_N, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = warplab.corrcoef(big)
    assert ran_of("corrcoef") == "int8_slices"
    _close(cupy.asnumpy(r), _numpy(cupy.asnumpy(big)), 1e-9)
    warplab.corrcoef(big[:64])
    assert ran_of("corrcoef") == ("tc_gram" if cuda.gram_ok()[0] else "tiled_smem")


def test_out_poisoned_device_and_tiles(monkeypatch: pytest.MonkeyPatch) -> None:
    h = _host(1000, 129, "walk")
    out = cupy.full((1000, 1000), np.nan)
    assert _corr(cupy.asarray(h), "float64", out=out) is out
    _close(cupy.asnumpy(out), _numpy(h), 1e-9)
    monkeypatch.setattr(tiles, "TILE_CAP", 700)
    h = _host(2500, 64, "const")
    host_out = np.full((2500, 2500), np.nan, np.float32)
    _corr(cupy.asarray(h), "float32", out=host_out, dtype=np.float32)
    _close(host_out.astype(np.float64), _numpy(h), 2e-6)
    _close(cupy.asnumpy(_corr(cupy.asarray(h), "float64")), _numpy(h), 1e-9)


def test_8192_random_walks() -> None:
    """The benchmark's input: s = 5, 3, 2; errors within the promised bounds (cupy float64
    reference)."""
    x = warplab.random_walk(8192, 8192, seed=1)
    ref = cupy.corrcoef(x.astype(np.float64))
    for precision, s in (("float64", 5), ("float32", 3), ("tf32", 2)):
        eng = cuda.SlicesEngine(x, precision)
        assert eng.slices == s
        assert eng.prep.bound <= slices.TARGETS[precision]
        assert slices_error_bound(s, 8192, eng.prep.maxima) == eng.prep.bound
        r = _corr(x, precision)
        err = float(cupy.abs(r - ref).max())
        assert err <= min(slices.TARGETS[precision] + 1e-12, ISSUE[precision]), err
        del eng, r
        cupy.get_default_memory_pool().free_all_blocks()

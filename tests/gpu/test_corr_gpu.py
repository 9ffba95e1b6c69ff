"""GPU tests of corrcoef and corr_pairs: every cuda variant x precision x shape x data (random,
random walks: highly correlated, and rows that are constant) on device input against float64
NumPy within the stated bound (``spec.error_bound``), NaN exactly where NumPy has NaN; out=
(poisoned device arrays, host arrays filled tile by tile), the GPU-memory error, the
pairwise NaN policy, torch and host input; corr_pairs tiled against a brute force, and one run
at M = 200,000, N = 256."""
from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from conftest import ran_of

import warplab
from warplab.families.corr import tiles
from warplab.lab.campaigns.corr.bench import check_pairs, clustered
from warplab.families.corr.cuda import gram_ok
from warplab.families.corr.spec import PRECISIONS, error_bound

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)
cupy = pytest.importorskip("cupy")

SHAPES = ((1, 2), (2, 1), (3, 3), (17, 33), (129, 1000), (1000, 129), (4097, 64))
DATA = ("random", "walk", "const")
VARIANTS = ("tc_gram", "tiled_smem", "pairwise_direct")


def _need(variant: str) -> None:
    if variant == "tc_gram" and not gram_ok()[0]:
        pytest.skip(gram_ok()[1])


@functools.lru_cache(maxsize=32)
def _host(m: int, n: int, data: str) -> np.ndarray:
    rng = np.random.default_rng(m * 131 + n)
    if data == "walk":
        return warplab.random_walk(m, n, seed=m + n, device="cpu")
    x = rng.standard_normal((m, n)).astype(np.float32)
    if data == "const":
        x[::3] = np.float32(2.5)  # every third series constant
    return x


def _numpy(x: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.corrcoef(x.astype(np.float64))


def _close(got: np.ndarray, want: np.ndarray, bound: float) -> None:
    assert got.shape == want.shape
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    if ok.any():
        err = float(np.abs(got[ok] - want[ok]).max())
        assert err <= bound, f"max abs error {err:.3g} above the bound {bound:.3g}"
        assert not (np.abs(got[ok]) > 1).any()


@pytest.mark.parametrize("data", DATA)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_corrcoef_vs_numpy(variant: str, precision: str, shape: tuple[int, int],
                           data: str) -> None:
    _need(variant)
    m, n = shape
    h = _host(m, n, data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = warplab.corrcoef(cupy.asarray(h), variant=variant, precision=precision)
    assert isinstance(got, cupy.ndarray) and got.dtype == np.float64
    if m >= 2 and n >= 2:
        assert ran_of("corrcoef") == variant
        if data == "const":
            with pytest.warns(RuntimeWarning):
                warplab.corrcoef(cupy.asarray(h[:3]), variant=variant, precision=precision)
    _close(cupy.asnumpy(got), _numpy(h), error_bound(variant, precision, n))


@pytest.mark.parametrize("variant", VARIANTS)
def test_out_poisoned_device(variant: str) -> None:
    _need(variant)
    h = _host(129, 1000, "walk")
    out = cupy.full((129, 129), np.nan)
    assert warplab.corrcoef(cupy.asarray(h), variant=variant, out=out) is out
    _close(cupy.asnumpy(out), _numpy(h), 1e-9)


@pytest.mark.parametrize("variant", VARIANTS)
def test_host_out_tile_by_tile(variant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _need(variant)
    monkeypatch.setattr(tiles, "TILE_CAP", 700)
    h = _host(2500, 64, "random")
    out = np.full((2500, 2500), np.nan, np.float32)
    warplab.corrcoef(cupy.asarray(h), variant=variant, out=out, dtype=np.float32)
    _close(out.astype(np.float64), _numpy(h), 1e-6)
    got = warplab.corrcoef(cupy.asarray(h), variant=variant)  # device result, small tiles
    _close(cupy.asnumpy(got), _numpy(h), 1e-9)


def test_result_too_big_for_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tiles, "free_device_bytes", lambda: 1 << 20)
    h = _host(1000, 129, "random")
    with pytest.raises(ValueError, match="pass out="):
        warplab.corrcoef(cupy.asarray(h))
    out = np.empty((1000, 1000))
    warplab.corrcoef(cupy.asarray(h), out=out)  # host out: tiled instead
    _close(out, _numpy(h), 1e-9)


def test_host_and_torch_input() -> None:
    h = _host(17, 33, "random")
    got = warplab.corrcoef(h, device="cuda")
    assert isinstance(got, np.ndarray)
    _close(got, _numpy(h), 1e-9)
    torch = pytest.importorskip("torch")
    t = torch.as_tensor(h, device="cuda")
    _close(cupy.asnumpy(warplab.corrcoef(t)), _numpy(h), 1e-9)


def test_nan_policy_pairwise_matches_cpu() -> None:
    h = _host(40, 50, "random").astype(np.float64)
    h[np.random.default_rng(1).random(h.shape) < 0.1] = np.nan
    got = warplab.corrcoef(cupy.asarray(h), nan_policy="pairwise")
    want = warplab.corrcoef(h, nan_policy="pairwise", device="cpu")
    _close(cupy.asnumpy(got), want, 1e-12)


@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_corr_pairs_tiled_vs_brute(variant: str, precision: str,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    _need(variant)
    monkeypatch.setattr(tiles, "TILE_CAP", 512)
    x = clustered(3000, 64, "cuda")
    res = warplab.corr_pairs(x, threshold=0.8, variant=variant, precision=precision)
    assert ran_of("corrcoef") == variant and isinstance(res.i, cupy.ndarray)
    bound = error_bound(variant, precision, 64)
    ref = _numpy(cupy.asnumpy(x))
    a = np.abs(np.triu(ref, 1))
    keys = set((cupy.asnumpy(res.i) * 3000 + cupy.asnumpy(res.j)).tolist())
    sure = set((np.flatnonzero(a >= 0.8 + bound)).tolist())
    maybe = set((np.flatnonzero(a >= 0.8 - bound)).tolist())
    assert sure <= keys <= maybe
    np.testing.assert_allclose(cupy.asnumpy(res.r), ref[cupy.asnumpy(res.i),
                                                         cupy.asnumpy(res.j)], atol=bound)


def test_corr_pairs_top_k() -> None:
    h = _host(300, 40, "walk")
    got = warplab.corr_pairs(cupy.asarray(h), top_k=4)
    want = warplab.corr_pairs(h, top_k=4, device="cpu")
    np.testing.assert_array_equal(cupy.asnumpy(got.i), want.i)
    np.testing.assert_allclose(np.abs(cupy.asnumpy(got.r)), np.abs(want.r), atol=1e-9)


def test_corr_pairs_200k_series() -> None:
    """M = 200,000, N = 256: the M x M float32 matrix would need 160 GB."""
    x = clustered(200_000, 256, "cuda")
    res = warplab.corr_pairs(x, threshold=0.9)
    per_cluster = 200_000 // 1000  # clustered(): 1000 clusters of 200
    assert 0.9 * 1000 * per_cluster * (per_cluster - 1) / 2 < res.i.size
    err, _, checked = check_pairs(x, res, 0.9, error_bound(ran_of("corrcoef"), "float64", 256))
    assert checked > 0 and err <= 1e-9

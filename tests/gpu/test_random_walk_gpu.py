"""GPU tests of the random-walk family (``pytest -m gpu`` on the GPU machine).

The sequential variants (the report's K1, both launches) must equal the NumPy reference bit for
bit; ``warp_scan`` multiplies in another order: within ``walk_cuda.scan_rtol`` of the reference
(float32: 2**-23 relative, i.e. at most one float32 ulp; float64: 8*sqrt(n)*2**-53) and bit for
bit equal to ``walk_cuda.emulate_warp_scan``, its order of multiplications in NumPy (a failure
of that test alone, with the tolerance test passing, points at the emulation, not the kernel).
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

import warplab
from conftest import clear_ran, last_ran
from warplab.core import registry

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)
cupy = pytest.importorskip("cupy")

from warplab.families.series import walk  # noqa: E402
from warplab.families.series import walk_cuda as wc  # noqa: E402

VARIANTS = [v.name for v in registry.variants("random_walk", "cuda")]
SEQUENTIAL = {"k1_thread_per_series", "k1_thread_per_series_b32"}
# (999, 77): 16 lanes per series, 2 series per warp; (4099, 777): m >= TASKS long series (one
# segment of several tiles per series, carried without a prefix).
SHAPES = [(1, 1), (1, 100003), (100003, 1), (3, 31), (7, 1023), (1000, 1025), (1048576, 32),
          (16, 2**24 + 3), (999, 77), (4099, 777)]
BIG = [s for s in SHAPES if s[0] * s[1] > 1 << 22]
DTYPES = ("float32", "float64")
PARAMS = walk.WalkParams(seed=2024, start=100.0, eps=1e-3)


def shape_id(shape: tuple[int, int]) -> str:
    return f"{shape[0]}x{shape[1]}"


def sample_rows(m: int, n: int) -> list[tuple[int, int]]:
    """Row ranges compared with NumPy: every row of small walks, else blocks at both ends
    (about 2**20 values each, at least one row)."""
    if m * n <= 1 << 22:
        return [(0, m)]
    k = max(1, min(m // 2, (1 << 20) // n))
    return [(0, k), (m - k, m)]


@functools.lru_cache(maxsize=16)
def reference(n: int, j0: int, j1: int) -> np.ndarray:
    return walk.reference_rows(j0, j1, n, PARAMS)


@functools.lru_cache(maxsize=8)
def emulation(m: int, n: int, j0: int, j1: int) -> np.ndarray:
    return wc.emulate_warp_scan(walk.step_factors(j0, j1, 0, n, PARAMS), wc.scan_plan(m, n))


def run_variant(name: str, m: int, n: int, dtype: str) -> cupy.ndarray:
    """The variant on a NaN-poisoned output (an element it does not write stays NaN)."""
    out = cupy.full((m, n), np.nan, dtype=dtype)
    got = registry.get("random_walk", name).fn(out, PARAMS)
    assert got is out
    return out


def assert_close(got: np.ndarray, want64: np.ndarray, n: int, dtype: str, what: str) -> None:
    want = want64.astype(dtype).astype(np.float64)
    g = got.astype(np.float64)
    bad = ~(np.abs(g - want) <= wc.scan_rtol(n, dtype) * np.abs(want))  # NaN is bad too
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise AssertionError(f"{what}: {int(bad.sum())} values beyond rtol "
                             f"{wc.scan_rtol(n, dtype):.3g}, first at [{r}, {c}]: got "
                             f"{g[r, c]!r}, want {want[r, c]!r}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
@pytest.mark.parametrize("variant", VARIANTS)
def test_variant_matches_reference(variant: str, shape: tuple[int, int], dtype: str) -> None:
    m, n = shape
    out = run_variant(variant, m, n, dtype)
    assert not bool(cupy.isnan(out).any()), "unwritten (NaN) elements remain"
    for j0, j1 in sample_rows(m, n):
        got = cupy.asnumpy(out[j0:j1])
        assert (got[:, 0] == np.dtype(dtype).type(PARAMS.start)).all()
        if variant in SEQUENTIAL:
            np.testing.assert_array_equal(got, reference(n, j0, j1).astype(dtype),
                                          err_msg=f"rows {j0}..{j1}")
        else:
            assert_close(got, reference(n, j0, j1), n, dtype, f"rows {j0}..{j1}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
def test_warp_scan_equals_its_emulation(shape: tuple[int, int], dtype: str) -> None:
    m, n = shape
    out = run_variant("warp_scan", m, n, dtype)
    for j0, j1 in sample_rows(m, n)[:1]:
        np.testing.assert_array_equal(cupy.asnumpy(out[j0:j1]), emulation(m, n, j0, j1).astype(dtype),
                                      err_msg=f"plan {wc.scan_plan(m, n)}, rows {j0}..{j1}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", BIG, ids=shape_id)
def test_big_shapes_agree_on_every_row(shape: tuple[int, int], dtype: str) -> None:
    """Where only some rows are compared with NumPy: all rows of the variants against each
    other on the device (K1's two launches identical, warp_scan within tolerance)."""
    m, n = shape
    seq = run_variant("k1_thread_per_series_b32", m, n, dtype)
    assert bool(cupy.array_equal(run_variant("k1_thread_per_series", m, n, dtype), seq))
    scan = run_variant("warp_scan", m, n, dtype)
    ref = seq.astype(np.float64, copy=False)
    diff = cupy.abs(scan.astype(np.float64, copy=False) - ref)
    bad = ~(diff <= wc.scan_rtol(n, dtype) * cupy.abs(ref))  # NaN is bad too
    assert int(bad.sum()) == 0


def test_public_default_is_warp_scan() -> None:
    x = warplab.random_walk(5, 300)
    assert isinstance(x, cupy.ndarray) and x.dtype == np.float32 and x.shape == (5, 300)
    assert last_ran() == "warp_scan"
    want = walk.reference_rows(0, 5, 300, walk.WalkParams(0, 100.0, 1e-3))
    assert_close(cupy.asnumpy(x), want, 300, "float32", "default call")


@pytest.mark.parametrize("variant", VARIANTS)
def test_public_variant_runs_and_is_recorded(variant: str) -> None:
    clear_ran()
    x = warplab.random_walk(33, 517, seed=PARAMS.seed, dtype="float64", variant=variant)
    assert isinstance(x, cupy.ndarray) and last_ran() == variant
    host = warplab.random_walk(33, 517, seed=PARAMS.seed, dtype="float64", device="cpu")
    assert isinstance(host, np.ndarray) and last_ran() == "numpy"
    if variant in SEQUENTIAL:
        np.testing.assert_array_equal(cupy.asnumpy(x), host)
    else:
        assert_close(cupy.asnumpy(x), host, 517, "float64", variant)


def test_warp_scan_is_deterministic() -> None:
    a = warplab.random_walk(3, 300001, seed=9, dtype="float64")   # segmented: three passes
    b = warplab.random_walk(3, 300001, seed=9, dtype="float64")
    assert bool(cupy.array_equal(a, b))


def test_more_than_free_memory_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="GiB of GPU memory"):
        warplab.random_walk(2**18, 2**19)   # 512 GiB of float32


@pytest.mark.large
def test_series_index_above_2_to_32() -> None:
    """Series j >= 2**32 use the counter's high word (m = 2**32 + 3 series of 2 values: 32 GiB)."""
    m, n = 2**32 + 3, 2
    free = cupy.cuda.runtime.memGetInfo()[0] + cupy.get_default_memory_pool().free_bytes()
    if free < 1.2 * m * n * 4:
        pytest.skip("needs about 40 GiB of free GPU memory")
    for variant in ("warp_scan", "k1_thread_per_series_b32"):
        out = run_variant(variant, m, n, "float32")
        got = cupy.asnumpy(out[m - 6:])
        del out
        np.testing.assert_array_equal(got, reference(n, m - 6, m).astype(np.float32))


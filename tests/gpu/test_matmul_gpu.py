"""GPU tests of the matmul family (``pytest -m gpu`` on the GPU machine): every cuda variant x
shapes x dtypes against a float64 NumPy product, into a NaN-poisoned output."""
from __future__ import annotations

import functools
import zlib

import numpy as np
import pytest

import warplab
from warplab.core import registry as _registry
from warplab.families.matmul.spec import MatmulProblem
from conftest import last_ran

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)
cupy = pytest.importorskip("cupy")

VARIANTS = warplab.variants("matmul", "cuda")
SQUARE = (1, 15, 16, 17, 127, 1000, 1024, 4097)
# (m, n, k): all different and odd (scalar loads), and multiples of 4 in n and k (16-byte loads)
# with edges in m, n and k; tall, wide and deep
OTHER = ((1, 7, 3), (33, 1, 65), (129, 257, 95), (1001, 67, 515), (3, 1025, 131),
         (131, 260, 36), (500, 132, 1028), (4100, 8, 12), (8, 4100, 4), (5, 6, 3001))
SHAPES = tuple((n, n, n) for n in SQUARE) + OTHER
TOLERANCE = {"float32": 1e-5, "float64": 1e-12}


@functools.lru_cache(maxsize=None)
def operands(m: int, n: int, k: int, dtype: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A, B uniform in [-1, 1) and their float64 product."""
    rng = np.random.default_rng(zlib.crc32(f"{m}/{n}/{k}/{dtype}".encode()))
    a = (rng.random((m, k)) * 2 - 1).astype(dtype)
    b = (rng.random((k, n)) * 2 - 1).astype(dtype)
    return a, b, a.astype(np.float64) @ b.astype(np.float64)


def rel_error(got: np.ndarray, ref: np.ndarray) -> float:
    assert np.isfinite(got).all(), "unwritten (poisoned) or non-finite elements"
    return float(np.linalg.norm(got.astype(np.float64) - ref) / np.linalg.norm(ref))


def supports(variant: str, dtype: str) -> bool:
    """The variant's own ``supports`` (its registry entry), on a small device problem."""
    problem = MatmulProblem(64, 64, 64, np.dtype(dtype), True)
    return _registry.get("matmul", variant).supports(problem)


# only the (variant, dtype) pairs a variant supports: the refusal of the others is tested in
# test_defaults_and_dispatch, so nothing here is skipped
@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize("variant,dtype", [(v, dt) for dt in ("float32", "float64")
                                           for v in VARIANTS if supports(v, dt)])
def test_variant_matches_float64_numpy(variant, m, n, k, dtype):
    a, b, ref = operands(m, n, k, dtype)
    out = cupy.full((m, n), np.nan, dtype=dtype)  # poison: unwritten elements fail
    got = warplab.matmul(cupy.asarray(a), cupy.asarray(b), variant=variant, out=out)
    assert last_ran() == variant
    assert got is out
    assert rel_error(cupy.asnumpy(got), ref) < TOLERANCE[dtype]


@pytest.mark.parametrize("variant", VARIANTS)
def test_unaligned_and_strided_operands(variant):
    a, b, _ = operands(129, 260, 36, "float32")
    flat = cupy.empty(a.size + 1, np.float32)
    flat[1:] = cupy.asarray(a).ravel()
    d_a = flat[1:].reshape(a.shape)             # contiguous, 4 bytes off 16-byte alignment
    d_b = cupy.asarray(np.asfortranarray(b))    # column-major
    wide = cupy.asarray(np.repeat(a, 2, axis=1))[:, ::2]  # strided view of the same values
    for x, y in ((d_a, d_b), (wide, d_b), (d_a, cupy.asarray(b))):
        got = warplab.matmul(x, y, variant=variant)
        assert last_ran() == variant
        assert rel_error(cupy.asnumpy(got), a.astype(np.float64) @ b) < 1e-5


def test_unaligned_output():
    a, b, ref = operands(64, 64, 64, "float32")
    flat = cupy.full(64 * 64 + 1, np.nan, np.float32)
    out = flat[1:].reshape(64, 64)
    warplab.matmul(cupy.asarray(a), cupy.asarray(b), out=out)
    assert np.isnan(flat[0].get())  # nothing written before the output
    assert rel_error(cupy.asnumpy(out), ref) < 1e-5


def test_defaults_and_dispatch():
    a, b, ref = operands(300, 200, 100, "float32")
    got = warplab.matmul(a, b)  # host in, host out, through the GPU
    assert isinstance(got, np.ndarray) and got.dtype == np.float32
    assert last_ran() == "regtile_64x128_8x8"
    assert rel_error(got, ref) < 1e-5
    got = warplab.matmul(a.astype(np.float64), b.astype(np.float64))
    assert last_ran() == "regtile_64x64_4x4" and got.dtype == np.float64
    with pytest.raises(ValueError, match="does not support"):
        warplab.matmul(a.astype(np.float64), b, variant="regtile_64x128_8x8")


def test_mixed_host_and_device_operands():
    a, b, ref = operands(70, 50, 30, "float32")
    got = warplab.matmul(a, cupy.asarray(b))
    assert isinstance(got, cupy.ndarray)
    assert rel_error(cupy.asnumpy(got), ref) < 1e-5
    got = warplab.matmul(cupy.asarray(a), b.astype(np.float64))  # promotes like NumPy
    assert got.dtype == np.float64


def test_host_out_and_cpu_backend_for_device_operands():
    a, b, ref = operands(40, 30, 20, "float64")
    out = np.full((40, 30), np.nan)
    assert warplab.matmul(a, b, out=out) is out
    assert rel_error(out, ref) < 1e-12
    got = warplab.matmul(cupy.asarray(a), cupy.asarray(b), device="cpu")
    assert isinstance(got, cupy.ndarray) and last_ran() == "numpy"
    assert rel_error(cupy.asnumpy(got), ref) < 1e-12


def test_empty_and_k_zero_on_device():
    z = warplab.matmul(cupy.ones((3, 0), np.float32), cupy.ones((0, 4), np.float32))
    assert isinstance(z, cupy.ndarray) and z.shape == (3, 4) and not z.any()
    e = warplab.matmul(cupy.ones((0, 5), np.float32), cupy.ones((5, 4), np.float32))
    assert e.shape == (0, 4)


def test_torch_input():
    torch = pytest.importorskip("torch")
    a, b, ref = operands(33, 65, 17, "float32")
    got = warplab.matmul(torch.as_tensor(a).cuda(), torch.as_tensor(b).cuda().T.contiguous().T)
    assert isinstance(got, cupy.ndarray)
    assert rel_error(cupy.asnumpy(got), ref) < 1e-5


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n,shift", [(64, 64, 64, 0), (64, 64, 64, 1), (3, 5, 7, 0),
                                         (65, 130, 66, 0), (1, 1, 1, 0), (128, 256, 128, 2)])
def test_warm_plan_against_out_and_cold_plans(m: int, k: int, n: int, shift: int, dtype) -> None:
    """The warm plan's one launch (a prepared launch into a fresh result) equals the same
    variant run into ``out=`` (its own plan: the launch per call) and a plan built after
    ``fastpath.clear()``, bit for bit; the variant reported is the same."""
    from warplab.core import fastpath

    rng = np.random.default_rng(m + k + n)
    ha, hb = rng.random((m, k)).astype(dtype), rng.random((k, n)).astype(dtype)
    buf = cupy.zeros(m * k + shift, dtype)
    a = buf[shift:].reshape(m, k)
    a[...] = cupy.asarray(ha)
    b = cupy.asarray(hb)
    out = cupy.full((m, n), np.nan, dtype)
    with warplab.record_variants() as out_ran:
        want = warplab.matmul(a, b, out=out).get()
    for i in range(4):
        if i == 3:
            fastpath.clear()
        with warplab.record_variants() as ran:
            got = warplab.matmul(a, b).get()
        assert [r.variant for r in ran] == [r.variant for r in out_ran]
        np.testing.assert_array_equal(got, want)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, ha.astype(np.float64) @ hb.astype(np.float64), rtol=tol)


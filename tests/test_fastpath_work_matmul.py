"""``matmul``'s plans on device input without a GPU (``fake_cupy``; the matmul kernels replaced
by a NumPy model that checks its grid and 16-byte-load choice): a warm call of two contiguous
CuPy operands is one allocation and one launch; every key component (dtypes, shapes, strides,
alignment, device, ``out``, ``variant``, ``device``) gets its own plan; a named variant runs
through the same plan as the default; results and the variant reported equal NumPy's and the
named variant's; errors are raised, with the same message, on a cold and on a warm cache;
threads share the plans."""
from __future__ import annotations

import numpy as np
import pytest

import warplab
from conftest import run_in_threads
from fake_cupy import WORK, Dev, count_launch, dev, install
from warplab.core import device, fastpath, registry, scalar
from warplab.families.matmul import cuda


def _model(expr: str, module=cuda._EXPRESSIONS):
    vec = expr.rstrip(">").split(",")[-1].strip() == "true"

    def run(grid: tuple, block: tuple, args: tuple) -> None:
        count_launch()
        a, b, c = (np.asarray(v).view(np.ndarray) for v in args[:3])
        m, n, k = (int(v) for v in args[3:])
        assert (m, k) == a.shape and (k, n) == b.shape and c.shape == (m, n)
        aligned = all(x.__array_interface__["data"][0] % 16 == 0 for x in (a, b, c))
        assert "regtile" not in expr or vec == (k % 4 == 0 and n % 4 == 0 and aligned)
        c[...] = (a.astype(np.float64) @ b.astype(np.float64)).astype(c.dtype)

    return run


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch):
    g = install(monkeypatch)
    monkeypatch.setattr(cuda, "_kernel", _model)
    monkeypatch.setattr(registry, "cuda_available", lambda: True)
    monkeypatch.setattr(device, "cuda_available", lambda: True)
    fastpath.clear()
    yield g
    fastpath.clear()


def _ops(m: int = 64, k: int = 64, n: int = 64, dtype=np.float32) -> tuple[Dev, Dev]:
    rng = np.random.default_rng(m + k + n)
    return dev(rng.random((m, k)).astype(dtype)), dev(rng.random((k, n)).astype(dtype))


def _want(a, b) -> np.ndarray:
    return np.asarray(a).astype(np.float64) @ np.asarray(b).astype(np.float64)


def _plans() -> int:
    return fastpath.stats()["matmul.plan"]


def test_warm_matmul_is_one_allocation_and_one_launch(gpu) -> None:
    a, b = _ops()
    with warplab.record_variants() as ran:
        first = warplab.matmul(a, b)
    WORK.clear()
    with warplab.record_variants() as ran2:
        got = warplab.matmul(a, b)
    assert dict(WORK) == {"empty": 1, "launch": 1} and _plans() == 1
    assert [r.variant for r in ran] == [r.variant for r in ran2] == ["regtile_64x128_8x8"]
    for r in (first, got):
        assert type(r) is scalar.array_type() and r.dtype == np.float32 and r.shape == (64, 64)
        np.testing.assert_allclose(np.asarray(r), _want(a, b), rtol=1e-6)


@pytest.mark.parametrize("name", ["regtile_64x64_4x4", "regtile_64x128_8x8"])
def test_named_variant_is_one_plan_and_one_launch(gpu, name) -> None:
    a, b = _ops()
    default = np.asarray(warplab.matmul(a, b))
    warplab.matmul(a, b, variant=name)
    WORK.clear()
    with warplab.record_variants() as ran:
        got = warplab.matmul(a, b, variant=name)
    assert dict(WORK) == {"empty": 1, "launch": 1} and [r.variant for r in ran] == [name]
    np.testing.assert_allclose(np.asarray(got), default, rtol=1e-6)


@pytest.mark.parametrize("m,k,n,dtype", [(64, 64, 64, np.float64), (3, 5, 7, np.float32),
                                         (1, 1, 1, np.float64), (65, 130, 66, np.float32)])
@pytest.mark.parametrize("variant", [None, "naive", "tiled_smem16"])
def test_results_equal_numpy(gpu, m, k, n, dtype, variant) -> None:
    a, b = _ops(m, k, n, dtype)
    for _ in range(2):
        with warplab.record_variants() as ran:
            got = warplab.matmul(a, b, variant=variant)
        assert got.dtype == dtype and got.shape == (m, n)
        np.testing.assert_allclose(np.asarray(got), _want(a, b), rtol=1e-6)
        assert variant is None or [r.variant for r in ran] == [variant]


def test_every_key_component_gets_its_own_plan(gpu) -> None:
    a, b = _ops()
    warplab.matmul(a, b)
    assert _plans() == 1
    buf = dev(np.zeros(64 * 64 + 1, np.float32))
    shifted = buf[1:].reshape(64, 64)  # not 16-byte aligned: the model asserts scalar loads
    shifted[...] = np.asarray(a)
    others = [
        lambda: warplab.matmul(shifted, b),                                   # alignment
        lambda: warplab.matmul(dev(np.asarray(a, np.float64)),                # dtype
                               dev(np.asarray(b, np.float64))),
        lambda: warplab.matmul(a[:32], b),                                    # shape
        lambda: warplab.matmul(dev(np.asarray(a).T.copy()).T, b),             # strides
        lambda: warplab.matmul(a, b, variant="tiled_smem16"),                 # variant
        lambda: warplab.matmul(a, b, device="cuda"),                          # device=
        lambda: warplab.matmul(a, b, out=dev(np.zeros((64, 64), np.float32))),  # out=
        lambda: warplab.matmul(a, b, out=dev(np.zeros((64, 64), np.float32))),  # (same)
    ]
    for i, call in enumerate(others):
        got = call()
        assert _plans() == min(i + 2, len(others))
        want = _want(a, b)
        np.testing.assert_allclose(np.asarray(got), want[:32] if i == 2 else want, rtol=1e-6)
    gpu.device = 1  # another current device: its own plan
    a1, b1 = _ops()
    for x in (a1, b1):
        x.device_id = 1
    warplab.matmul(a1, b1)
    assert _plans() == len(others) + 1


def test_host_operands_share_the_plan_lookup(gpu, monkeypatch) -> None:
    a, b = (np.asarray(x).view(np.ndarray) for x in _ops(5, 6, 7))
    for env in ("cpu", "cuda"):
        monkeypatch.setenv("WARPLAB_DEVICE", env)
        with warplab.record_variants() as ran:
            got = warplab.matmul(a, b)
        assert type(got) is np.ndarray
        np.testing.assert_allclose(got, _want(a, b), rtol=1e-6)
        assert ran[0].backend == env
    assert _plans() == 2  # WARPLAB_DEVICE picks host operands' backend: part of the key


def test_mixed_dtypes_and_empty_products(gpu) -> None:
    a, b = _ops()
    mixed = dev(np.asarray(b).astype(np.float64))
    got = warplab.matmul(a, mixed)
    assert got.dtype == np.float64
    np.testing.assert_allclose(np.asarray(got), _want(a, mixed), rtol=1e-6)
    x, y = dev(np.ones((64, 0), np.float32)), dev(np.ones((0, 64), np.float32))
    for _ in range(2):
        WORK.clear()
        r = warplab.matmul(x, y)
        assert r.shape == (64, 64) and not np.asarray(r).any() and WORK["launch"] == 0


@pytest.mark.parametrize("call", [
    lambda a, b: warplab.matmul(a, b[:10]),
    lambda a, b: warplab.matmul(a, dev(np.zeros((64, 3), np.int32))),
    lambda a, b: warplab.matmul(dev(np.zeros((2, 2, 2), np.float32)), b),
    lambda a, b: warplab.matmul(a, b, variant="nosuch"),
    lambda a, b: warplab.matmul(a, b, out=dev(np.zeros((3, 3), np.float32))),
    lambda a, b: warplab.matmul(a, b, out=np.zeros((64, 64), np.float32)),
])
def test_errors_cold_and_warm(gpu, call) -> None:
    a, b = _ops()
    warplab.matmul(a, b)
    fastpath.clear()
    with pytest.raises((TypeError, ValueError)) as cold:
        call(a, b)
    with pytest.raises(type(cold.value)) as warm:  # nothing cached: raised again
        call(a, b)
    assert str(warm.value) == str(cold.value)


def test_threads_share_plans(gpu) -> None:
    shapes = [(64, 64, 64), (3, 5, 7), (65, 130, 66)]
    ops = [_ops(*s) for s in shapes]

    def worker(i: int) -> None:
        for _ in range(20):
            for a, b in ops:
                np.testing.assert_allclose(np.asarray(warplab.matmul(a, b)), _want(a, b),
                                           rtol=1e-6)

    run_in_threads(worker, 4)
    assert _plans() == len(shapes)

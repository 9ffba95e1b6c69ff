"""Work counters of ``matmul`` on device input (no GPU; ``fake_cupy``, the matmul kernels
replaced by a NumPy model that checks its grid and 16-byte-load choice): a warm 64^3 call is
one allocation and one launch through the launch record (no ``as_input``, no dispatch);
results, the variant reported and every error as the full path's; calls the record does not
take (``out=`` and a named ``variant`` by the api's test; mixed dtypes, k == 0) run the full
path."""
from __future__ import annotations

import numpy as np
import pytest

import warplab
from fake_cupy import WORK, Dev, count_launch, dev, install
from warplab.core import fastpath, registry, scalar
from warplab.families.matmul import api, cuda, record


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
    for module in (cuda, record):  # the full path's kernels and the record's
        monkeypatch.setattr(module, "_kernel", _model)
    monkeypatch.setattr(registry, "cuda_available", lambda: True)
    fastpath.clear()
    yield g
    fastpath.clear()


def _ops(m: int = 64, k: int = 64, n: int = 64, dtype=np.float32) -> tuple[Dev, Dev]:
    rng = np.random.default_rng(m + k + n)
    return dev(rng.random((m, k)).astype(dtype)), dev(rng.random((k, n)).astype(dtype))


def test_warm_matmul_is_one_allocation_and_one_launch(gpu, monkeypatch) -> None:
    a, b = _ops()
    with warplab.record_variants() as ran:
        first = warplab.matmul(a, b)
    asked = []
    monkeypatch.setattr(api, "as_input", lambda x: asked.append(x))
    monkeypatch.setattr(registry, "choose", lambda *x, **k: asked.append(x))
    WORK.clear()
    with warplab.record_variants() as ran2:
        got = warplab.matmul(a, b)
    assert dict(WORK) == {"empty": 1, "launch": 1} and not asked
    assert [r.variant for r in ran] == [r.variant for r in ran2] == ["regtile_64x128_8x8"]
    want = np.asarray(a).astype(np.float64) @ np.asarray(b).astype(np.float64)
    for r in (first, got):
        assert type(r) is scalar.array_type() and r.dtype == np.float32 and r.shape == (64, 64)
        np.testing.assert_allclose(np.asarray(r), want, rtol=1e-6)


@pytest.mark.parametrize("m,k,n,dtype", [(64, 64, 64, np.float64), (3, 5, 7, np.float32),
                                         (1, 1, 1, np.float64), (65, 130, 66, np.float32)])
def test_record_equals_full_path(gpu, m, k, n, dtype) -> None:
    a, b = _ops(m, k, n, dtype)
    for _ in range(2):
        with warplab.record_variants() as ran:
            got = np.asarray(warplab.matmul(a, b))
    with fastpath.bypassed(), warplab.record_variants() as full_ran:
        want = np.asarray(warplab.matmul(a, b))
    assert [r.variant for r in ran] == [r.variant for r in full_ran]
    np.testing.assert_array_equal(got, want)


def test_alignment_is_in_the_key(gpu) -> None:
    a, b = _ops()
    warplab.matmul(a, b)  # aligned: 16-byte loads
    buf = dev(np.zeros(64 * 64 + 1, np.float32))
    shifted = buf[1:].reshape(64, 64)
    shifted[...] = np.asarray(a)
    got = warplab.matmul(shifted, b)  # the model asserts the scalar-load kernel
    np.testing.assert_allclose(np.asarray(got), np.asarray(warplab.matmul(a, b)), rtol=0)


def test_other_calls_take_the_full_path(gpu, monkeypatch) -> None:
    a, b = _ops()
    warplab.matmul(a, b)
    calls = []
    real = record.matmul
    monkeypatch.setattr(record, "matmul", lambda x, y: calls.append(1) or real(x, y))
    warplab.matmul(a, b, variant="tiled_smem16")
    assert not calls
    mixed = dev(np.asarray(b).astype(np.float64))
    assert record.matmul(a, mixed) is None  # mixed dtypes: the full path casts
    for x, y in ((dev(np.zeros((64, 0), np.float32)), dev(np.zeros((0, 64), np.float32))),):
        WORK.clear()
        r = warplab.matmul(x, y)
        want = np.asarray(x).astype(np.float64) @ np.asarray(y).astype(np.float64)
        np.testing.assert_allclose(np.asarray(r), want, rtol=1e-6)
    assert not np.asarray(r).any()  # k == 0: zeros


@pytest.mark.parametrize("call", [
    lambda a, b: warplab.matmul(a, b[:10]),
    lambda a, b: warplab.matmul(a, dev(np.zeros((64, 3), np.int32))),
    lambda a, b: warplab.matmul(dev(np.zeros((2, 2, 2), np.float32)), b),
    lambda a, b: warplab.matmul(a, b, variant="nosuch"),
    lambda a, b: warplab.matmul(a, b, out=dev(np.zeros((3, 3), np.float32))),
])
def test_errors_through_warm_records(gpu, call) -> None:
    a, b = _ops()
    warplab.matmul(a, b)
    with pytest.raises((TypeError, ValueError)) as warm:
        call(a, b)
    fastpath.clear()
    with fastpath.bypassed(), pytest.raises(type(warm.value)) as cold:
        call(a, b)
    assert str(warm.value) == str(cold.value)

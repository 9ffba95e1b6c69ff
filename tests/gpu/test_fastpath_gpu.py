"""The small-call fast path on the GPU (``pytest -m gpu``): every latency case's result is the
same with warm caches, after ``fastpath.clear()`` and with the caches bypassed; plans are
built per device (with two or more GPUs: device 1 after device 0; with one, the per-stream
plans of a second stream are what is switched: a second device cannot be simulated on one);
two threads summing at once on one stream get their own results (the result slab's lock);
the short paths' error cases raise through warm caches; small results come back through the
pinned buffer with their dtype and shape."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import warplab
from warplab.core import fastpath
from warplab.families.latency.cases import CASES, check, host, poison, to_device

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)
cupy = pytest.importorskip("cupy")


def _answer(case, inputs: dict) -> object:
    """The case's call and its host answer (copies: the destination buffers)."""
    poison(inputs)
    res = case.call(inputs, {})
    if case.copies:
        cupy.cuda.get_current_stream().synchronize()
        return tuple(a.get() for a in inputs["dsts"])
    return host(res)


def _same(case, a: object, b: object) -> None:
    for x, y in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        assert x.shape == y.shape, case.name
        # float atomics (weighted bincount) may add in another order: the case's tolerance
        np.testing.assert_allclose(x, y, rtol=case.tol, atol=0, err_msg=case.name)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_warm_cleared_bypassed_identical(case) -> None:
    inputs = to_device(case.make(np.random.default_rng(7)))
    fastpath.clear()
    first = _answer(case, inputs)
    warm = [_answer(case, inputs) for _ in range(3)]
    fastpath.clear()
    cleared = _answer(case, inputs)
    with fastpath.bypassed():
        bypassed = _answer(case, inputs)
    for other in (*warm, cleared, bypassed):
        _same(case, first, other)
    ok, err = check(case, first, case.reference(case.make(np.random.default_rng(7))))
    assert ok, (case.name, err)


def test_plans_per_device_or_stream() -> None:
    x = cupy.arange(1024, dtype=cupy.float32)
    want = float(np.arange(1024, dtype=np.float64).sum())
    fastpath.clear()
    assert float(warplab.sum(x)) == want
    before = fastpath.stats()
    if cupy.cuda.runtime.getDeviceCount() > 1:
        with cupy.cuda.Device(1):
            y = cupy.arange(1024, dtype=cupy.float32)
            assert float(warplab.sum(y)) == want
            h = warplab.byte_histogram(cupy.arange(256, dtype=cupy.uint8))
            assert h.device.id == 1 and int(h.sum()) == 256
        after = fastpath.stats()
        assert after["kernels"] > before["kernels"]
    else:  # one GPU: a second stream gets its own reduction plan (scratch, results)
        s = cupy.cuda.Stream(non_blocking=True)
        with s:
            assert float(warplab.sum(x)) == want
            s.synchronize()
        after = fastpath.stats()
        assert after["kernels"] == before["kernels"]  # the kernel is per device, not stream
    assert after["reduce.persistent_vec"] == before["reduce.persistent_vec"] + 1
    assert float(warplab.sum(x)) == want


def test_two_threads_sum_at_once() -> None:
    xs = [cupy.full(1000, i + 1, dtype=cupy.float32) for i in range(2)]
    start = threading.Barrier(2)

    def sums(i: int) -> set[float]:
        start.wait()
        outs = [warplab.sum(xs[i]) for _ in range(300)]
        cupy.cuda.get_current_stream().synchronize()
        return {float(o) for o in outs}

    with ThreadPoolExecutor(2) as pool:  # result() re-raises a thread's exception here
        got = [f.result() for f in [pool.submit(sums, i) for i in range(2)]]
    assert got == [{1000.0}, {2000.0}]


def test_short_path_errors_through_warm_caches() -> None:
    x = cupy.arange(256, dtype=cupy.uint8)
    warplab.byte_histogram(x)
    warplab.sum(cupy.ones(8, cupy.float32))
    with pytest.raises(TypeError, match="uint8"):
        warplab.byte_histogram(cupy.ones(256, cupy.float32))
    with pytest.raises(ValueError, match="unknown bins"):
        warplab.byte_histogram(x, "nope")
    with pytest.raises(ValueError, match="no identity"):
        warplab.min(cupy.ones(0, cupy.float32))
    with pytest.raises(TypeError):
        warplab.sum(cupy.ones(8, cupy.complex64))


def test_read_small_keeps_dtype_and_shape() -> None:
    a = cupy.asarray(np.float32(2.5))
    b = cupy.arange(7, dtype=cupy.int64)
    c = cupy.arange(12, dtype=cupy.uint8).reshape(3, 4)[:, 1]  # not contiguous
    ha, hb, hc = fastpath.read_small(a, b, c)
    assert ha.shape == () and ha.dtype == np.float32 and ha == 2.5
    np.testing.assert_array_equal(hb, np.arange(7))
    np.testing.assert_array_equal(hc, np.arange(12, dtype=np.uint8).reshape(3, 4)[:, 1])
    assert type(warplab.sum(np.arange(5, dtype=np.float32))) is np.float32

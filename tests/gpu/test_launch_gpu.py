"""The C launch of the small-call paths (the extension ``warplab.core._launch``,
``core/launch.c``, built with the package) on the GPU (``pytest -m gpu``): where it is built it
is in use; every short path gives the same result launched from C and through CuPy (the
extension replaced by None, the plans rebuilt); launches follow the current stream and work
from threads; a refused launch raises with the driver's code."""
from __future__ import annotations

import importlib.util
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import warplab
from warplab.core import fastpath, launch

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)
cupy = pytest.importorskip("cupy")

EMPTY = r'extern "C" __global__ void put(float* out, unsigned long long n, float v, int k) ' \
        r'{ if (threadIdx.x == 0 && blockIdx.x == 0) out[0] = v * k + (float)n; }'


def test_in_use_where_built() -> None:
    if os.environ.get("WARPLAB_C_LAUNCH", "1").strip().lower() in ("0", "off", "no"):
        pytest.skip("WARPLAB_C_LAUNCH=0: the records launch through CuPy")
    if importlib.util.find_spec(launch.EXTENSION) is None:
        pytest.skip(f"the records launch through CuPy: {launch.status()}")
    assert launch.function() is not None, launch.status()
    assert launch.status().startswith("C launch: "), launch.status()


def _calls() -> dict:
    rng = np.random.default_rng(3)
    x = cupy.asarray(rng.standard_normal(1000).astype(np.float32))
    m = cupy.asarray(rng.standard_normal((64, 48)).astype(np.float32))
    b = cupy.asarray(rng.integers(0, 256, 4096, dtype=np.uint8))
    ints = cupy.asarray(rng.integers(0, 60, 1000).astype(np.int32))
    w = cupy.asarray(rng.integers(0, 9, 1000).astype(np.float64))
    srcs = [cupy.asarray(rng.integers(0, 256, n, dtype=np.uint8)) for n in (1, 7, 300, 1024)]
    dsts = [cupy.zeros_like(s) for s in srcs]
    warplab.copy_batched(srcs, dsts)
    return {
        "sum": warplab.sum(x), "mean": warplab.mean(x), "min": warplab.min(x),
        "max": warplab.max(x), "mean_rows": warplab.mean(m, axis=1),
        "var_cols": warplab.var(m, axis=0), "series_stats": warplab.series_stats(m),
        "byte_histogram": warplab.byte_histogram(b),
        "histogram": warplab.histogram(x, 64, (-2, 2))[0],
        "bincount": warplab.bincount(ints, weights=w), "matmul": warplab.matmul(m, cupy.ascontiguousarray(m.T)),
        "corrcoef": warplab.corrcoef(m[:8]), "copies": cupy.concatenate(dsts),
    }


def _host(r: dict) -> dict:
    out = {}
    for k, v in r.items():
        v = v[0] if isinstance(v, tuple) else v
        out[k] = cupy.asnumpy(cupy.asarray(v))
    return out


def test_same_results_from_c_and_through_cupy(monkeypatch: pytest.MonkeyPatch) -> None:
    fastpath.clear()
    with_c = _host(_calls())
    with_c_warm = _host(_calls())
    monkeypatch.setattr(launch, "_ext", None)
    fastpath.clear()
    through_cupy = _host(_calls())
    monkeypatch.undo()
    fastpath.clear()
    for k in with_c:
        assert np.array_equal(with_c[k], with_c_warm[k], equal_nan=True), k
        assert np.array_equal(with_c[k], through_cupy[k], equal_nan=True), k


def test_new_threads_without_a_context_launch() -> None:
    """A fresh host thread has no current CUDA context until a runtime call makes one: its
    first launch goes through CuPy (``Prepared._no_context``: the driver's code 201), the rest
    from C."""
    import threading

    x = cupy.arange(1000, dtype=np.float32)
    got = []
    fastpath.clear()

    def work() -> None:
        got.extend(float(warplab.sum(x)) for _ in range(3))

    for _ in range(4):
        t = threading.Thread(target=work)
        t.start()
        t.join()
    assert got == [float(np.arange(1000).sum())] * 12


def test_follows_the_current_stream_and_threads() -> None:
    x = cupy.arange(1 << 12, dtype=np.float32)
    want = float(x.get().astype(np.float64).sum())
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        y = cupy.empty_like(x)
        y[...] = x  # queued on s: the sum must come after it
        r = warplab.sum(y)
    s.synchronize()
    assert float(r) == want

    def work(i: int) -> float:
        with cupy.cuda.Stream(non_blocking=True) as st:
            v = x * (i + 1)
            out = float(warplab.sum(v))
            st.synchronize()
            return out

    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(work, range(32)))
    assert got == [want * (i + 1) for i in range(32)]


def test_prepared_packs_scalars_and_refused_launch_raises() -> None:
    k = cupy.RawKernel(EMPTY, "put")
    out = cupy.zeros(1, np.float32)
    p = launch.Prepared(k, (1,), (32,), (launch.ARRAY, 0, np.float32(0), np.int32(0)))
    p(out, 5, np.float32(1.5), np.int32(4))
    assert float(out[0]) == 1.5 * 4 + 5
    if launch.function() is not None:
        with pytest.raises(RuntimeError, match="cuLaunchKernel failed") as refused:
            p.at((0,), out, 5, np.float32(1.5), np.int32(4))
        assert refused.value.code == 1  # CUDA_ERROR_INVALID_VALUE: an empty grid

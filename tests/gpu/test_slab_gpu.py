"""Small results carved from slabs (``core/slab.py``) and the whole-array short path's cached
decision (``reduce/api.py``) on the GPU (``pytest -m gpu``): results kept across many slabs
stay right, each stream carves from its own slab, a C-contiguous array of any shape takes the
short path and gives the full path's result, and the slab memory's first bytes (poisoned
here) never show through."""
from __future__ import annotations

import numpy as np
import pytest

import warplab
from warplab.core import fastpath, scalar
from warplab.families.reduce import axis

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)
cupy = pytest.importorskip("cupy")


@pytest.fixture
def poisoned_slabs(monkeypatch: pytest.MonkeyPatch):
    """Every new slab starts as 0xFF bytes (NaN for floats), as stale device memory might."""
    real = cupy.cuda.alloc

    def alloc(size: int):
        mem = real(size)
        mem.memset_async(0xFF, size)
        return mem

    monkeypatch.setattr(cupy.cuda, "alloc", alloc)
    fastpath.clear()
    yield
    fastpath.clear()


def test_results_kept_across_slabs_stay_right(poisoned_slabs) -> None:
    rng = np.random.default_rng(1)
    xs = [cupy.asarray(rng.standard_normal((64, 64)).astype(np.float32)) for _ in range(4)]
    keep = [(i, warplab.mean(xs[i % 4], axis=1)) for i in range(600)]  # 256 B: 3 slabs
    stats = [warplab.series_stats(xs[i % 4]) for i in range(300)]        # 2 x 256 B
    want = [x.get().astype(np.float64).mean(axis=1) for x in xs]
    for i, r in keep:
        np.testing.assert_allclose(r.get(), want[i % 4], rtol=1e-5, atol=1e-6)
    assert len({r.data.ptr for _, r in keep}) == 600
    full = [axis.series_stats_rows(x) for x in xs]  # the full path
    for i, (m, n) in enumerate(stats):
        np.testing.assert_array_equal(m.get(), full[i % 4][0].get())
        np.testing.assert_array_equal(n.get(), full[i % 4][1].get())


def test_each_stream_its_own_slab(poisoned_slabs) -> None:
    x = cupy.arange(64 * 32, dtype=cupy.float64).reshape(64, 32)
    want = x.get().sum(axis=1)
    s1, s2 = cupy.cuda.Stream(non_blocking=True), cupy.cuda.Stream(non_blocking=True)
    with s1:
        a = [warplab.sum(x, axis=1) for _ in range(5)]
    with s2:
        b = [warplab.sum(x, axis=1) for _ in range(5)]
    s1.synchronize()
    s2.synchronize()
    for r in a + b:
        np.testing.assert_array_equal(r.get(), want)
    # 64 doubles = 512 bytes a carve: neighbours within each stream's slab, two slabs
    assert a[1].data.ptr - a[0].data.ptr == 512 and b[1].data.ptr - b[0].data.ptr == 512
    assert a[0].data.mem is not b[0].data.mem and a[0].data.mem is a[4].data.mem


def test_zero_d_axis_result_is_one_device_scalar(poisoned_slabs) -> None:
    x = cupy.arange(12, dtype=cupy.float32).reshape(3, 4)
    r = warplab.sum(x, axis=(0, 1))
    assert type(r) is scalar.scalar_type() and float(r) == 66.0


@pytest.mark.parametrize("shape", [(4096,), (64, 64), (2, 3, 5), (1, 1)])
@pytest.mark.parametrize("op", ["sum", "mean", "min", "max"])
def test_contiguous_arrays_of_any_shape_take_the_short_path(op: str, shape: tuple) -> None:
    rng = np.random.default_rng(2)
    h = rng.standard_normal(shape).astype(np.float32)
    x = cupy.asarray(h)
    fastpath.clear()
    with warplab.record_variants() as ran:
        got = getattr(warplab, op)(x)
    assert [r.variant for r in ran] == ["persistent_vec"]
    assert type(got) is scalar.scalar_type()
    assert fastpath.stats()["reduce.short"] == 1
    want = getattr(warplab, op)(x.reshape(-1), variant="persistent_vec")
    assert float(got) == float(want)
    assert float(getattr(warplab, op)(x)) == float(got)  # warm: the cached decision
    ref = getattr(h.astype(np.float64), op)()
    assert float(got) == pytest.approx(ref, rel=1e-5, abs=1e-5)


def test_non_contiguous_arrays_take_the_full_path() -> None:
    x = cupy.arange(64 * 64, dtype=cupy.float32).reshape(64, 64)
    fastpath.clear()
    for v in (x.T, x[:, ::2], x[::3]):
        assert float(warplab.sum(v)) == float(v.get().astype(np.float64).sum())
    assert fastpath.stats()["reduce.short"] == 0

"""The reductions' planned path (``families/reduce/plan.py``, plan cache ``reduce.plan``) on
the GPU (``pytest -m gpu``): a C-contiguous array of any shape runs the default variant's
prepared launch and gives the named variant's result (same kernel, same bits); other layouts
are copied by the run and give NumPy's result; a warm call reuses its plan, and an axis plan its
partials, on every stream."""
from __future__ import annotations

import numpy as np
import pytest

import warplab
from warplab.core import fastpath, scalar

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)
cupy = pytest.importorskip("cupy")


@pytest.mark.parametrize("shape", [(4096,), (64, 64), (2, 3, 5), (1, 1), ()])
@pytest.mark.parametrize("op", ["sum", "mean", "min", "max"])
def test_contiguous_arrays_of_any_shape_run_the_default(op: str, shape: tuple) -> None:
    rng = np.random.default_rng(2)
    h = rng.standard_normal(shape).astype(np.float32)
    x = cupy.asarray(h)
    fastpath.clear()
    with warplab.record_variants() as ran:
        got = getattr(warplab, op)(x)
    assert [r.variant for r in ran] == ["persistent_vec"]
    assert type(got) is scalar.scalar_type()
    assert fastpath.stats()["reduce.plan"] == 1
    want = getattr(warplab, op)(x.reshape(-1), variant="persistent_vec")
    assert float(got) == float(want)
    assert float(getattr(warplab, op)(x)) == float(got)  # warm: the same plan
    assert fastpath.stats()["reduce.plan"] == 2  # the call's and the named variant's
    ref = getattr(h.astype(np.float64), op)()
    assert float(got) == pytest.approx(ref, rel=1e-5, abs=1e-5)


def test_non_contiguous_arrays_are_copied_by_the_run() -> None:
    x = cupy.arange(64 * 64, dtype=cupy.float32).reshape(64, 64)
    fastpath.clear()
    for v in (x.T, x[:, ::2], x[::3]):
        for _ in range(2):
            with warplab.record_variants() as ran:
                got = warplab.sum(v)
            assert [r.variant for r in ran] == ["persistent_vec"]
            assert float(got) == float(v.get().astype(np.float64).sum())
    assert fastpath.stats()["reduce.plan"] == 3  # one plan per layout


@pytest.mark.parametrize("op,axis,shape,dtype", [
    ("mean", 1, (64, 64), np.float32), ("sum", 0, (7, 200), np.float64),
    ("std", 1, (100, 33), np.float32), ("max", -1, (512, 5), np.int32)])
def test_small_results_of_the_slab_stay_their_own(op, axis, shape, dtype) -> None:
    """Axis results of at most ``scalar.SMALL_BYTES`` come from the device's slab: 700 live
    results of one plan (several slabs), half made on a second stream from inputs written
    there just before, each in its own memory, 16-byte aligned, and still its input's
    reduction once every call has run; then released and made again."""
    rng = np.random.default_rng(5)
    hs = [(rng.standard_normal(shape) * 50).astype(dtype) for _ in range(8)]
    xs = [cupy.asarray(h) for h in hs]
    cupy.cuda.get_current_stream().synchronize()  # the inputs before the other stream reads
    other = cupy.cuda.Stream(non_blocking=True)
    for _ in range(2):
        outs = []
        for i in range(700):
            if i % 2:  # the input written on the other stream right before: stream order
                with other:
                    outs.append(getattr(warplab, op)(xs[i % 8] + 0, axis=axis))
            else:
                outs.append(getattr(warplab, op)(xs[i % 8], axis=axis))
        assert outs[0].nbytes <= scalar.SMALL_BYTES
        other.synchronize()
        cupy.cuda.get_current_stream().synchronize()
        spans = sorted((o.data.ptr, o.data.ptr + o.nbytes) for o in outs)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
        assert all(o.data.ptr % 16 == 0 for o in outs)
        for i, o in enumerate(outs):
            want = getattr(np, op)(hs[i % 8].astype(np.float64), axis=axis)
            np.testing.assert_allclose(o.get(), want, rtol=1e-5, atol=1e-6 * 50 * shape[0])
        del outs


#: (shape, axis): the columns kernel unsplit (16 rows) and split over many blocks, the split
#: rows kernel (few long rows), the moments through partials (var, std)
SCRATCH_CASES = [((16, 70_001), 0), ((4096, 300), 0), ((3000, 8), 0), ((4, 1 << 20), 1),
                 ((2, 300_001), 1)]


@pytest.mark.parametrize("shape,axis", SCRATCH_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_plans_partials_serve_every_call(shape: tuple, axis: int, dtype: type) -> None:
    """A warm plan reuses its partials: calls on data of very different magnitudes, back to
    back on one stream with every result kept, then the same shapes on a second stream
    interleaved with the first, each result NumPy's (a partial left from the call before
    would show as an error of ~1e6)."""
    rng = np.random.default_rng(shape[0])
    hosts = [(rng.standard_normal(shape) * scale + shift).astype(dtype)
             for scale, shift in ((1.0, 0.5), (1e6, -3e6), (1e-3, 7.0))]
    xs = [cupy.asarray(h) for h in hosts]
    # a copy from pageable memory may still be in flight when asarray returns: done before a
    # stream that does not wait for this one reads the inputs
    cupy.cuda.get_current_stream().synchronize()
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for op in ("sum", "mean", "var", "std"):
        f = getattr(warplab, op)
        other = cupy.cuda.Stream(non_blocking=True)
        got = []
        for i in (0, 1, 2, 0, 2, 1):
            got.append((i, f(xs[i], axis=axis)))
            with other:
                got.append((i, f(xs[i], axis=axis)))
        other.synchronize()
        cupy.cuda.get_current_stream().synchronize()
        for i, g in got:
            want = getattr(np, op)(hosts[i].astype(np.float64), axis=axis)
            np.testing.assert_allclose(g.get(), want, rtol=tol,
                                       atol=tol * float(np.abs(hosts[i]).max()),
                                       err_msg=f"{op} of input {i}")

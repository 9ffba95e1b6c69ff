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
from warplab.core import fastpath, scalar
from warplab.lab.campaigns.latency.cases import CASES, check, host, poison, to_device

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)
cupy = pytest.importorskip("cupy")


def _answer(case, inputs: dict) -> object:
    """The case's call and its host answer (copies: the destination buffers)."""
    poison(inputs)
    res = case.call(inputs)
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


# --- launch records (axis reductions, series_stats, histogram with a range) ------------------

_AXIS_CALLS = [("mean", (64, 64), "float32", {"axis": 1}),
               ("sum", (64, 64), "int32", {"axis": 0}),
               ("var", (16, 300), "float32", {"axis": 1, "ddof": 1}),
               ("std", (8, 16, 4), "float64", {"axis": (1, 2), "keepdims": True}),
               ("min", (33, 7), "int64", {"axis": -1}),
               ("max", (64, 64), "float32", {"axis": 0}),
               ("var", (5000,), "float32", {}),
               ("sum", (3, 40000), "float32", {"axis": 1})]


@pytest.mark.parametrize("name, shape, dtype, kw", _AXIS_CALLS,
                         ids=[f"{c[0]}-{c[2]}-{len(c[1])}d" for c in _AXIS_CALLS])
@pytest.mark.parametrize("layout", ["c", "strided", "fortran"])
def test_axis_plans_same_as_named_variant(name, shape, dtype, kw, layout) -> None:
    from warplab.families.reduce.axis import normalize_axes, plan_2d

    h = (np.random.default_rng(5).standard_normal(shape) * 50).astype(dtype)
    x = cupy.asarray(h)
    x = x[::2] if layout == "strided" and x.ndim > 1 else \
        cupy.asfortranarray(x) if layout == "fortran" else x
    plan = plan_2d(x.shape, x.strides, x.itemsize, normalize_axes(kw.get("axis"), x.ndim))
    variant = "rows_adaptive" if plan.layout == "rows" else "columns"
    fn = getattr(warplab, name)
    want = fn(x, variant=variant, **kw).get() if plan.view else None  # the named variant
    fastpath.clear()
    got = [fn(x, **kw) for _ in range(3)]
    fastpath.clear()
    with fastpath.bypassed():
        got.append(fn(x, **kw))
    for r in got:
        assert r.shape == got[0].shape and r.dtype == got[0].dtype
        np.testing.assert_array_equal(r.get(), got[0].get())
    if want is not None:
        np.testing.assert_array_equal(got[0].get(), want)
    ref = getattr(np, name)(np.asarray(x.get(), np.float64), **kw)
    np.testing.assert_allclose(got[0].get(), ref, rtol=1e-5, atol=1e-6 * np.abs(ref).max())


def test_series_stats_plans_warm_cleared_bypassed() -> None:
    for x in (cupy.random.standard_normal((64, 64), dtype=cupy.float32),
              cupy.asfortranarray(cupy.random.standard_normal((64, 100))),
              cupy.arange(64 * 33, dtype=cupy.int32).reshape(64, 33)):
        fastpath.clear()
        with fastpath.bypassed():
            full = [r.get() for r in warplab.series_stats(x)]
        for _ in range(3):
            for a, b in zip(warplab.series_stats(x), full):
                np.testing.assert_array_equal(a.get(), b)
        h = x.get().astype(np.float64)
        m = h.mean(axis=1)
        np.testing.assert_allclose(full[0], m, rtol=1e-6)
        np.testing.assert_allclose(full[1], np.sqrt(((h - m[:, None]) ** 2).sum(axis=1)),
                                   rtol=1e-5)


def test_histogram_record_same_as_full_path() -> None:
    x = cupy.random.random(1000, dtype=cupy.float32)
    for bins, rng in ((64, (0, 1)), (7, (0.25, 0.75)), (300, (-0.0, 1.0)), (64, [0, 1.5])):
        fastpath.clear()
        full = [a.get() for a in warplab.histogram(x, bins, rng, density=False)]
        for _ in range(3):
            h, e = warplab.histogram(x, bins, rng)
            np.testing.assert_array_equal(h.get(), full[0])
            np.testing.assert_array_equal(e.get(), full[1])
            assert np.signbit(e.get()[0]) == np.signbit(full[1][0])
        want = np.histogram(x.get(), bins, rng)
        np.testing.assert_array_equal(h.get(), want[0])
        np.testing.assert_array_equal(e.get(), want[1])
        e[...] = -1  # the caller's edges are its own
        np.testing.assert_array_equal(warplab.histogram(x, bins, rng)[1].get(), want[1])


def test_records_per_stream_and_device_safe() -> None:
    x = cupy.random.random((64, 64), dtype=cupy.float32)
    want = warplab.mean(x, axis=1).get()
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        got = warplab.mean(x, axis=1)
        h = warplab.histogram(x.ravel(), 64, (0, 1))[0]
        s.synchronize()
    np.testing.assert_array_equal(got.get(), want)
    assert int(h.sum()) == x.size
    if cupy.cuda.runtime.getDeviceCount() > 1:
        with cupy.cuda.Device(1):
            y = cupy.asarray(x.get())
            np.testing.assert_array_equal(warplab.mean(y, axis=1).get(), want)
            assert warplab.mean(y, axis=1).device.id == 1


def test_record_errors_through_warm_caches_on_device() -> None:
    x = cupy.ones((8, 8), cupy.float32)
    warplab.var(x, axis=1, ddof=1)
    warplab.series_stats(x)
    warplab.histogram(x.ravel(), 8, (0, 1))
    with pytest.raises(ValueError, match="ddof"):
        warplab.var(x, axis=1, ddof=8)
    with pytest.raises(TypeError, match="ddof"):
        warplab.var(x, axis=1, ddof=True)
    with pytest.raises(TypeError):
        warplab.sum(x, axis=1.0)
    with pytest.raises(ValueError, match="series_stats takes a 2-D"):
        warplab.series_stats(x.ravel())
    with pytest.raises(ValueError, match="max must be larger"):
        warplab.histogram(x.ravel(), 8, (1, 0))
    with pytest.raises(ValueError, match="positive"):
        warplab.histogram(x.ravel(), -1, (0, 1))


# --- latency3: zeroed outputs, the bincount record, batched copies, small corrcoef ---------------


def test_fastpath_zeros() -> None:
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        for shape, dtype in ((7,), np.int64), ((3, 5), np.float32), ((0,), np.uint8):
            z = scalar.zeros(shape, dtype)
            assert z.shape == shape and z.dtype == dtype and z.flags.c_contiguous
            assert type(z) is scalar.array_type()
            assert not z.any()
        s.synchronize()


def test_histogram_results_share_no_memory_between_calls() -> None:
    """The short path's counts and edges come from one allocation (written by the kernel's
    one-block form here): a caller's writes into them never reach another call."""
    x = cupy.asarray(np.random.default_rng(5).random(1024, dtype=np.float32))
    want = np.histogram(x.get(), 64, (0, 1))
    h1, e1 = warplab.histogram(x, 64, (0, 1))
    h1[...] = 7
    e1[...] = -1
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        h2, e2 = warplab.histogram(x, 64, (0, 1))
    s.synchronize()
    np.testing.assert_array_equal(h2.get(), want[0])
    np.testing.assert_array_equal(e2.get(), want[1])
    assert e2.dtype == want[1].dtype and h2.dtype == np.int64
    assert h2.data.ptr != h1.data.ptr and e2.data.ptr % 256 == 0


# (x dtype, weights dtype, largest value, minlength, the variant dispatch chooses: named, the
# call takes the full path)
_BINCOUNTS = [("int32", "float32", 64, 0, "private_sums_vec"),
              ("int64", "float64", 5000, 0, "global_atomics"),
              ("uint8", "int64", 255, 300, "private_sums_vec"),
              ("int16", "float16", 100, 7, "private_sums_vec"),
              ("uint32", "bool", 4000, 0, "private_sums_vec"),
              ("int8", "uint8", 127, 200, "private_sums_vec")]


@pytest.mark.parametrize("xdt, wdt, hi, minlength, named", _BINCOUNTS,
                         ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in _BINCOUNTS])
@pytest.mark.parametrize("offset", [0, 1])
def test_bincount_record_same_as_full_path(xdt, wdt, hi, minlength, named, offset) -> None:
    rng = np.random.default_rng(hi)
    hx = rng.integers(0, hi, 1025, endpoint=True).astype(xdt)
    hw = rng.integers(0, 4, hx.size).astype(wdt)
    x, w = cupy.asarray(hx)[offset:], cupy.asarray(hw)[offset:]  # offset 1: bincount_w
    want = np.bincount(hx[offset:], hw[offset:].astype(np.float64), minlength)
    fastpath.clear()
    with warplab.record_variants() as ran:
        got = [warplab.bincount(x, w, minlength) for _ in range(3)]
    assert {r.variant for r in ran} == {named}
    full = warplab.bincount(x, w, minlength, variant=named).get()
    fastpath.clear()
    with fastpath.bypassed():
        got.append(warplab.bincount(x, w, minlength))
    for r in got:
        assert r.dtype == np.float64 and r.shape == want.shape
        np.testing.assert_array_equal(r.get(), full)  # integer weights: exact in any order
    np.testing.assert_array_equal(full, want)
    assert fastpath.stats()["bincount.plans"] == 0  # bypassed: nothing stored


def test_bincount_record_errors_through_warm_caches() -> None:
    x = cupy.arange(16, dtype=cupy.int32)
    w = cupy.ones(16, cupy.float32)
    warplab.bincount(x, w)
    warplab.bincount(x, w)
    neg = x.copy()
    neg[3] = -5
    with pytest.raises(ValueError, match="non-negative values, found -5"):
        warplab.bincount(neg, w)
    with pytest.raises(ValueError, match="same length"):
        warplab.bincount(x, w[:15])
    with pytest.raises(TypeError, match="Cannot cast"):
        warplab.bincount(x, cupy.ones(16, cupy.complex64))
    np.testing.assert_array_equal(warplab.bincount(x, w).get(), np.ones(16))


_COPY_SIZES = [[1024] * 8, [0, 1, 31, 32, 33, 1024, 8191, 8192], [8192, 8193, 0, 40000],
               [70000, 5, 1 << 20]]


@pytest.mark.parametrize("sizes", _COPY_SIZES, ids=["8x1k", "small", "wlev-edge", "blev"])
@pytest.mark.parametrize("variant", [None, "size_classes_tuned", "size_classes",
                                     "loop_memcpy_async"])
def test_copy_batched_warm_calls_copy(sizes, variant) -> None:
    rng = np.random.default_rng(len(sizes))
    hs = [rng.integers(0, 256, n, dtype=np.uint8) for n in sizes]
    srcs = [cupy.asarray(h) for h in hs]
    for _ in range(6):  # more calls than the pinned ring has slots
        dsts = [cupy.full(n, 0xA5, dtype=cupy.uint8) for n in sizes]
        warplab.copy_batched(srcs, dsts, variant=variant)
        for d, h in zip(dsts, hs):
            np.testing.assert_array_equal(d.get(), h)
    buf = cupy.zeros(4096, cupy.uint8)
    with pytest.raises(ValueError, match="overlaps"):
        warplab.copy_batched([buf[:1024]], [buf[512:1536]], variant=variant)


@pytest.mark.parametrize("check", [False, True])
def test_memcpy_batched_pointer_form(check) -> None:
    sizes = [0, 33, 1024, 8192, 8193, 40000]
    srcs = [cupy.asarray(np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8))
            for n in sizes]
    dsts = [cupy.zeros(n, cupy.uint8) for n in sizes]
    sp = cupy.asarray([a.data.ptr for a in srcs], dtype=np.uint64)
    dp = cupy.asarray([a.data.ptr for a in dsts], dtype=np.uint64)
    warplab.memcpy_batched(sp, dp, cupy.asarray(sizes, dtype=np.int64), check=check)
    for d, s in zip(dsts, srcs):
        np.testing.assert_array_equal(d.get(), s.get())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["c", "fortran", "view"])
@pytest.mark.parametrize("at", [(0, 0), (3, 5), (5, 3)])
def test_corr_finish_kernel_bit_for_bit(dtype, layout, at) -> None:
    from types import SimpleNamespace

    from warplab.families.corr import tiles
    from warplab.families.corr.cuda import _Engine

    rng = np.random.default_rng(2)
    h = (rng.standard_normal((37, 300)) * 1.5).astype(dtype)
    h[2, 3], h[4, 4], h[6, 7] = np.nan, 7.0, -0.0
    hv = np.ones(400, bool)
    hv[[5, 14, 40]] = False
    valid = cupy.asarray(hv)
    b = cupy.asarray(h)
    if layout == "fortran":
        b = cupy.asfortranarray(b)
    elif layout == "view":
        b = cupy.asarray(np.pad(h, ((0, 0), (0, 3))))[:, :300]
    # the reference: tiles.finish's CuPy operations (an engine without finish_block)
    old = SimpleNamespace(xp=cupy, valid=valid, all_valid=False)
    want = tiles.finish(b.copy(), *at, old).get()
    got = _Engine(400, valid).finish_block(b, *at)
    assert got is b
    np.testing.assert_array_equal(got.get().view(f"u{np.dtype(dtype).itemsize}"),
                                  want.view(f"u{np.dtype(dtype).itemsize}"))  # NaN bits too


@pytest.mark.parametrize("variant", ["tc_gram", "tiled_smem", "pairwise_direct"])
@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_small_corrcoef_whole_path(variant, precision) -> None:
    import warnings

    from warplab.families.corr import tiles

    h = np.cumsum(np.random.default_rng(3).standard_normal((8, 64)), axis=1).astype(np.float32)
    h[2] = np.float32(0.5)  # a constant series
    x = cupy.asarray(h)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = np.corrcoef(h.astype(np.float64))
    with pytest.warns(RuntimeWarning, match="invalid value"):
        got = warplab.corrcoef(x, variant=variant, precision=precision).get()
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=0, atol=1e-5)
    saved = tiles.TINY_BYTES
    tiles.TINY_BYTES = 0  # the free-memory query decides instead: the same result
    try:
        with pytest.warns(RuntimeWarning):
            again = warplab.corrcoef(x, variant=variant, precision=precision).get()
    finally:
        tiles.TINY_BYTES = saved
    np.testing.assert_array_equal(again, got)

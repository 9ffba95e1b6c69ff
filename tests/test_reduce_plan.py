"""The reductions' planned path (``families/reduce/plan.py``) without a GPU: CuPy replaced by
the counting fake (``fake_cupy``) and each kernel by a NumPy model that reads the launch's
arguments as the kernel does. Results equal NumPy's and a named variant's; a warm call reuses
its plan (a whole-array reduction: one launch, no allocation between slab refills; an axis
reduction or ``series_stats``: one allocation and one launch); every key component (op,
dtype, shape, strides, alignment, axis, keepdims, ddof, dtype=, variant, device, stream)
builds its own plan; errors are raised again, with the same message, through warm plans;
threads share one plan; host input takes the same cache."""
from __future__ import annotations

import dataclasses
import sys

import numpy as np
import pytest
from conftest import run_in_threads
from fake_cupy import WORK, Dev, count_launch, dev, install

import warplab
from warplab.core import fastpath, registry, scalar
from warplab.families.reduce import axis, axis_cuda, cuda
from warplab.families.reduce.spec import C_OP

_OPS = {v: k for k, v in axis_cuda.KERNEL_OP.items()}
_WHOLE_OPS = {v: k for k, v in C_OP.items()}


def _rows_of(x: Dev, rows: int, cols: int, ld: int) -> np.ndarray:
    base = np.asarray(x).view(np.ndarray)
    return np.lib.stride_tricks.as_strided(base, (rows, cols), (ld * x.itemsize, x.itemsize))


def _reduce_rows(x2: np.ndarray, op: str, ddof: float) -> np.ndarray:
    """axis.cu's results per row of ``x2`` (float64 / int64 accumulation)."""
    f = x2.astype(np.float64) if x2.dtype.kind == "f" or op not in ("sum", "min", "max") \
        else x2.astype(np.int64)
    if op == "sum":
        return f.sum(axis=1)
    if op == "mean":
        return f.sum(axis=1) / x2.shape[1]
    if op in ("min", "max"):
        return (np.min if op == "min" else np.max)(x2, axis=1)
    mean = f.sum(axis=1) / x2.shape[1]
    ss = ((f - mean[:, None]) ** 2).sum(axis=1)
    if op == "stats":
        return np.concatenate([mean, np.sqrt(ss)])
    var = ss / (x2.shape[1] - ddof)
    return np.sqrt(var) if op == "std" else var


def _write(out: Dev, r: np.ndarray) -> None:
    flat = np.asarray(out).view(np.ndarray).reshape(-1)  # a view: out is contiguous
    flat[...] = np.asarray(r).astype(out.dtype)


def _axis_kernel(expr: str, targs: str, device: int) -> object:
    name = expr.split("<")[0]
    op = _OPS[targs.split(", ")[-1]]

    def launch(grid: tuple, block: tuple, args: tuple) -> None:
        count_launch()
        x, rest = args[0], args[1:]
        if name == "axis_rows_packed":
            (rows, cols, out, fd, _), ld = rest, int(rest[1])
        elif name == "axis_rows_group":
            rows, cols, ld, out, fd, _ = rest
        elif name == "axis_rows_staged":  # rows back to back: ld == cols
            (rows, cols, _, out, fd, _), ld = rest, int(rest[1])
        elif name == "axis_rows_split":
            rows, cols, ld, _, _, _, _, out, fd, _ = rest
        else:  # axis_cols: reduce each column of (nred, ncols)
            nred, ncols, ld, _, _, _, _, _, out, fd, _ = rest
            x2 = _rows_of(x, int(nred), int(ncols), int(ld)).T
            _write(out, _reduce_rows(x2, op, float(fd)))
            return
        _write(out, _reduce_rows(_rows_of(x, int(rows), int(cols), int(ld)), op, float(fd)))

    return launch


def _vec_kernel(kernel: str, targs: str) -> object:
    """``reduce_persistent_vec``: (data, n, partials, counter, out), the result in ``out``."""
    op = _WHOLE_OPS[targs.split(", ")[-1]]

    def launch(grid: tuple, block: tuple, args: tuple) -> None:
        count_launch()
        data, n, _, _, out = args
        h = np.asarray(data).view(np.ndarray).reshape(-1)[:n]
        if op in ("min", "max"):
            r = h.min() if op == "min" else h.max()
        else:
            r = h.sum(dtype=np.float64 if h.dtype.kind == "f" else np.int64)
            r = r / n if op == "mean" else r
        _write(out, r)

    return launch


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch):
    g = install(monkeypatch)
    monkeypatch.setattr(axis_cuda, "_kernel", _axis_kernel)
    monkeypatch.setattr(axis_cuda, "sm_count", lambda d: 4)
    monkeypatch.setattr(cuda, "_kernel", _vec_kernel)
    monkeypatch.setattr(cuda, "occupancy_blocks_per_sm", lambda *a: 2)
    monkeypatch.setattr(registry, "cuda_available", lambda: True)  # named variants
    fastpath.clear()
    yield g
    fastpath.clear()


def _data(shape: tuple, dtype: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 100).astype(dtype)


def _plans() -> int:
    return fastpath.stats()["reduce.plan"]


# --- whole-array reductions -------------------------------------------------------------------


@pytest.mark.parametrize("op", ["sum", "min", "max", "mean"])
@pytest.mark.parametrize("dtype", ["float32", "int32", "int64", "float64"])
def test_warm_whole_array_call_is_one_launch(gpu, op: str, dtype: str) -> None:
    h = _data((4, 300), dtype)
    x = dev(h)
    fn = getattr(warplab, op)
    first = fn(x)
    WORK.clear()
    with warplab.record_variants() as ran:
        got = fn(x)
    assert dict(WORK) == {"launch": 1}  # a slot of the result slab: no allocation
    assert [r.variant for r in ran] == ["persistent_vec"]
    assert type(got) is scalar.scalar_type() and got.shape == ()
    want = getattr(np, op)(h.astype(np.float64 if h.dtype.kind == "f" else np.int64))
    assert got.dtype == getattr(np, op)(h).dtype if op != "mean" else got.dtype == \
        (np.float32 if dtype == "float32" else np.float64)
    np.testing.assert_allclose(float(got), float(want), rtol=1e-6)
    assert float(first) == float(got)
    named = fn(x.reshape(-1), variant="persistent_vec")
    assert float(named) == float(got)
    assert _plans() == 2  # the default call's plan and the named one's


def test_whole_array_layouts_and_empty(gpu) -> None:
    h = _data((64, 64), "float32")
    x = dev(h)
    for v in (x.T, x[:, ::2], x[::3]):  # not C-contiguous: the run copies first
        np.testing.assert_allclose(float(warplab.sum(v)),
                                   float(np.asarray(v).astype(np.float64).sum()), rtol=1e-6)
    empty = dev(np.zeros(0, np.float32))
    assert float(warplab.sum(empty)) == 0.0
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        assert np.isnan(float(warplab.mean(empty)))
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):  # every call warns
        warplab.mean(empty)
    with pytest.raises(ValueError, match="minimum which has no identity"):
        warplab.min(empty)


def test_whole_array_follows_a_new_default(gpu, monkeypatch) -> None:
    """A variant registered after a plan was built takes the next call (the registry's
    generation is part of the key)."""
    x = dev(_data((64,), "float32"))
    warplab.sum(x)
    monkeypatch.setattr(registry, "_ORDERED", {})
    monkeypatch.setitem(registry._REGISTRY, "reduce", dict(registry._REGISTRY["reduce"]))
    registry.register("reduce", "test_newer", backend="cuda", bytes_moved=lambda p: 0,
                      rank=-1)(lambda x, s: "newer")
    with warplab.record_variants() as ran:
        assert warplab.sum(x) == "newer"
    assert [r.variant for r in ran] == ["test_newer"]


def test_whole_array_variant_without_prepared_run(gpu, monkeypatch) -> None:
    """A default variant without a ``plan`` attribute runs through its function, given the
    flat contiguous input and the spec."""
    calls: list = []
    v = registry.get("reduce", "persistent_vec")
    monkeypatch.setitem(registry._REGISTRY["reduce"], "persistent_vec", dataclasses.replace(
        v, fn=lambda x, s: calls.append((x.shape, s.op, s.dtype, s.out)) or "result"))
    monkeypatch.setattr(registry, "_ORDERED", {})
    x = dev(np.ones((3, 3), np.int32))
    assert warplab.sum(x) == "result" and warplab.reduce(x, "max") == "result"
    assert calls == [((9,), "sum", np.dtype(np.int32), np.dtype(np.int64)),
                     ((9,), "max", np.dtype(np.int32), np.dtype(np.int32))]


def test_whole_array_keys(gpu, monkeypatch) -> None:
    from warplab.core import device

    monkeypatch.setattr(device, "cuda_available", lambda: True)  # device="cuda"
    h = _data((16, 32), "float32")
    x = dev(h)
    calls = [(x, "sum", {}),
             (x, "max", {}),                                # op
             (dev(h.astype(np.float64)), "sum", {}),        # dtype
             (x[::2], "sum", {}),                           # strides
             (x, "sum", {"dtype": np.float64}),             # dtype=
             (x, "sum", {"variant": "single_pass_fence"}),  # variant
             (x, "sum", {"device": "cuda"})]                # device=
    for a, name, kw in calls:
        getattr(warplab, name)(a, **kw)
    assert _plans() == len(calls)
    getattr(warplab, "sum")(x)
    assert _plans() == len(calls)                          # the same key: its plan
    # the whole of a C-contiguous array is reduced flat: any shape shares the plan
    part = h[:8]
    assert float(warplab.sum(dev(part))) == pytest.approx(float(part.astype(np.float64).sum()))
    assert _plans() == len(calls)
    gpu.stream = 12                                        # stream
    warplab.sum(x)
    gpu.device = 1                                         # device
    warplab.sum(x)
    assert _plans() == len(calls) + 2
    fastpath.clear()
    assert _plans() == 0


def test_whole_array_out_of_memory(gpu, monkeypatch) -> None:
    class OutOfMemoryError(MemoryError):
        pass

    OutOfMemoryError.__module__ = "cupy.cuda.memory"

    def oom(kernel: str, targs: str) -> object:
        def launch(grid: tuple, block: tuple, args: tuple) -> None:
            raise OutOfMemoryError("out of memory allocating 4,096 bytes")
        return launch

    monkeypatch.setattr(cuda, "_kernel", oom)
    with pytest.raises(warplab.DeviceOutOfMemoryError, match="warplab.reduce"):
        warplab.mean(dev(np.ones(9, np.float32)))


# --- axis reductions and series_stats ---------------------------------------------------------


def _named(name: str, x: Dev, **kw: object) -> object:
    """The same call with the layout's default variant named: its own plan, the same result."""
    h = np.asarray(x)
    layout = axis.plan_2d(h.shape, h.strides, h.itemsize,
                          axis.normalize_axes(kw.get("axis"), h.ndim)).layout
    return getattr(warplab, name)(x, variant="rows_adaptive" if layout == "rows" else "columns",
                                  **kw)


def test_warm_axis_call_is_one_launch(gpu, monkeypatch) -> None:
    """A small result comes from the device's slab (no pool allocation on most calls)."""
    x = dev(_data((64, 64), "float32"))
    planned: list[object] = []
    real = axis_cuda.rows_launch
    monkeypatch.setattr(axis_cuda, "rows_launch", lambda *a: planned.append(a) or real(*a))
    first = warplab.mean(x, axis=1)
    assert len(planned) == 1
    WORK.clear()
    with warplab.record_variants() as ran:
        got = warplab.mean(x, axis=1)
    assert dict(WORK) == {"launch": 1} and len(planned) == 1
    assert [r.variant for r in ran] == ["rows_adaptive"]
    assert type(got) is scalar.array_type() and got.shape == (64,) and got.dtype == np.float32
    np.testing.assert_array_equal(got, first)
    np.testing.assert_array_equal(got, _named("mean", x, axis=1))
    np.testing.assert_allclose(got, np.asarray(x).mean(axis=1, dtype=np.float64), rtol=1e-6)


@pytest.mark.parametrize("shape,axis,op", [((64, 64), 1, "mean"), ((3, 512), 0, "sum"),
                                           ((4, 70), 1, "std"), ((512, 3), 1, "var")])
def test_small_results_from_the_slab_are_distinct_and_kept(gpu, shape, axis, op) -> None:
    """Results of at most ``scalar.SMALL_BYTES`` carved from the slab: hundreds of live
    results of one plan (over several slabs) at distinct, non-overlapping, 16-byte aligned
    addresses, each still its own input's reduction after the later calls; a result larger
    than the bound is the pool's."""
    xs = [dev(_data(shape, "float32", seed=i)) for i in range(300)]
    outs = [getattr(warplab, op)(x, axis=axis) for x in xs]
    spans = sorted((o.data.ptr, o.data.ptr + o.nbytes) for o in outs)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    assert all(o.data.ptr % 16 == 0 for o in outs)
    for x, o in zip(xs, outs):
        np.testing.assert_allclose(o, getattr(np, op)(np.asarray(x), axis=axis,
                                                      dtype=np.float64), rtol=2e-6)
    big = dev(_data((scalar.SMALL_BYTES // 4 + 1, 8), "float32"))
    warplab.sum(big, axis=1)
    WORK.clear()
    warplab.sum(big, axis=1)
    assert dict(WORK) == {"empty": 1, "launch": 1}


def test_small_results_are_carved_from_a_slab_of_their_own_stream(gpu, monkeypatch) -> None:
    """CuPy's pool reuses freed memory in the order of the stream it was allocated on, so a
    slab must hold only results written on that stream: calls alternating between two
    streams (and two devices) take their results from allocations made under the same
    stream and device."""
    cuda = sys.modules["cupy"].cuda
    made: list[tuple[int, int, int, int]] = []  # (start, end, device, stream)
    real = cuda.alloc

    def alloc(size: int) -> object:
        mem = real(size)
        made.append((mem.ptr, mem.ptr + size, gpu.device, gpu.stream))
        return mem

    monkeypatch.setattr(cuda, "alloc", alloc)
    x = dev(_data((64, 64), "float32"))
    for i in range(600):
        gpu.stream, gpu.device = (11, 12, 13)[i % 3], i % 2
        r = warplab.mean(x, axis=1)
        owner = [m for m in made if m[0] <= r.data.ptr < m[1]]
        assert [m[2:] for m in owner] == [(gpu.device, gpu.stream)], i


def test_results_chain_into_the_planned_launch(gpu) -> None:
    """warplab's own results (``DeviceArray``, ``DeviceScalar``) chained into another call
    take the planned launch as CuPy's arrays do: one launch when warm (and the result from
    the slab of small results, or one allocation)."""
    x = dev(_data((64, 64), "float32"))
    y = warplab.mean(x, axis=0, keepdims=True) + x  # a plain array (derived)
    r = scalar.empty((64, 64), np.float32)
    r[...] = y
    want = warplab.mean(r, axis=1)
    WORK.clear()
    got = warplab.mean(r, axis=1)
    assert dict(WORK) == {"launch": 1}
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, _named("mean", y, axis=1))
    first = warplab.series_stats(r)
    WORK.clear()
    m, n = warplab.series_stats(r)
    assert dict(WORK) == {"launch": 1}
    assert type(m) is type(n) is scalar.array_type()
    np.testing.assert_array_equal(m, first[0])
    np.testing.assert_array_equal(n, first[1])


def test_warm_series_stats_is_one_launch(gpu) -> None:
    """Its two small results share one piece of the slab of small results."""
    x = dev(_data((64, 64), "float32"))
    mean, norm = warplab.series_stats(x)
    WORK.clear()
    with warplab.record_variants() as ran:
        m2, n2 = warplab.series_stats(x)
    assert dict(WORK) == {"launch": 1}
    assert [r.variant for r in ran] == ["rows_adaptive"]
    for a, b in ((mean, m2), (norm, n2)):
        assert type(b) is scalar.array_type() and b.dtype == np.float32 and b.shape == (64,)
        np.testing.assert_array_equal(a, b)
    h = np.asarray(x).astype(np.float64)
    np.testing.assert_allclose(mean, h.mean(1), rtol=1e-6)
    np.testing.assert_allclose(norm, np.linalg.norm(h - h.mean(1)[:, None], axis=1), rtol=1e-6)
    f = dev(np.asfortranarray(_data((16, 40), "float64")))
    with warplab.record_variants() as ran:
        fm, fn = warplab.series_stats(f)
    assert [r.variant for r in ran] == ["columns"]
    np.testing.assert_allclose(fm, np.asarray(f).mean(1), rtol=1e-12)


CALLS = [  # (function, shape, dtype, keywords, layout)
    ("sum", (64, 64), "float32", {"axis": 1}, None),
    ("sum", (64, 64), "int32", {"axis": 0}, None),
    ("mean", (8, 16, 4), "float64", {"axis": (1, 2), "keepdims": True}, None),
    ("min", (33, 7), "int64", {"axis": -1}, None),
    ("max", (33, 7), "float32", {"axis": 0}, None),
    ("var", (16, 300), "float32", {"axis": 1, "ddof": 1}, None),
    ("std", (16, 300), "float64", {"axis": 1, "ddof": 2.5}, None),
    ("var", (5000,), "float32", {}, None),                 # every axis: one row, split
    ("mean", (64, 64), "float32", {"axis": 1}, "strided"),  # x[::2]: rows ld = 2 cols
    ("mean", (64, 64), "float32", {"axis": 0}, "fortran"),  # columns of a Fortran array
    ("sum", (3, 40000), "float32", {"axis": 1}, None),      # long rows: the split kernel
]


def _layout(h: np.ndarray, how: str | None) -> Dev:
    if how == "strided":
        return dev(h)[::2]
    if how == "fortran":
        return np.asfortranarray(h).view(Dev)
    return dev(h)


@pytest.mark.parametrize("name, shape, dtype, kw, how", CALLS)
def test_planned_launch_same_as_named_variant(gpu, name, shape, dtype, kw, how) -> None:
    x = _layout(_data(shape, dtype), how)
    want = _named(name, x, **kw)
    cold = getattr(warplab, name)(x, **kw)
    WORK.clear()
    warm = getattr(warplab, name)(x, **kw)
    assert WORK["launch"] == 1 and WORK["h2d"] == 0 and WORK["sync"] == 0
    assert WORK["empty"] <= 2  # split and columns plans: their partials
    for got in (cold, warm):
        assert isinstance(got, Dev) and got.shape == want.shape and got.dtype == want.dtype
        assert type(got) is (scalar.array_type() if got.ndim else scalar.scalar_type())
        np.testing.assert_array_equal(got, want)
    with fastpath.bypassed():
        np.testing.assert_array_equal(getattr(warplab, name)(x, **kw), want)
    ref = getattr(np, name)(np.asarray(x).astype(np.float64), **kw)
    np.testing.assert_allclose(warm, ref, rtol=1e-6, atol=1e-6 * np.abs(ref).max())


def test_calls_the_kernels_cannot_read_directly(gpu) -> None:
    """Other dtypes, layouts that need a copy, ``dtype=``, a non-plain axis: the variant's
    steps (conversion, copy) around the same kernels; the non-plain axis is planned per call
    (nothing stored)."""
    h = _data((4, 6, 8), "float32")
    for x, kw in ((dev(h.astype(np.int8)), {"axis": 1}),       # not a native dtype
                  (dev(h), {"axis": (0, 2)}),                   # not a 2-D view: a copy
                  (dev(h), {"axis": 1, "dtype": np.float64}),   # dtype=
                  (dev(h), {"axis": np.int64(1)})):             # not a plain int axis
        want = warplab.sum(x, variant="rows_adaptive", **kw)
        np.testing.assert_array_equal(warplab.sum(x, **kw), want)
        ref = np.sum(np.asarray(x).astype(np.float64), **{k: int(v) if k == "axis" and
                                                             not isinstance(v, tuple) else v
                                                             for k, v in kw.items()})
        np.testing.assert_allclose(np.asarray(want, np.float64), ref, rtol=1e-5, atol=1e-3)
    before = _plans()
    warplab.sum(dev(h), axis=np.int64(1))
    assert _plans() == before


def test_axis_keys(gpu) -> None:
    h = _data((16, 32), "float32")
    calls = [(dev(h), "sum", {"axis": 1}),
             (dev(h), "mean", {"axis": 1}),                    # op
             (dev(h.astype(np.float64)), "sum", {"axis": 1}),  # dtype
             (dev(h[:8]), "sum", {"axis": 1}),                 # shape
             (dev(h)[::2], "sum", {"axis": 1}),                # strides
             (dev(h), "sum", {"axis": -1}),                    # axis as given
             (dev(h), "sum", {"axis": 1, "keepdims": True}),   # keepdims
             (dev(h), "var", {"axis": 1}),
             (dev(h), "var", {"axis": 1, "ddof": 1})]          # ddof
    for x, name, kw in calls:
        getattr(warplab, name)(x, **kw)
    assert _plans() == len(calls)
    buf = dev(np.zeros(16 * 32 + 1, np.float32))
    warplab.sum(buf[1:].reshape(16, 32), axis=1)               # 4-byte offset: alignment
    assert _plans() == len(calls) + 1
    gpu.device = 1                                             # device
    warplab.sum(calls[0][0], axis=1)
    assert _plans() == len(calls) + 2


def _raised(fn, *a, **k) -> tuple[type, str]:
    with pytest.raises(Exception) as info:  # noqa: PT011  (compared below)
        fn(*a, **k)
    return type(info.value), str(info.value)


def test_errors_through_warm_plans(gpu) -> None:
    x = dev(_data((8, 8), "float32"))
    bad = [(warplab.var, (x,), {"axis": 1, "ddof": 8}),
           (warplab.var, (x,), {"axis": 1, "ddof": True}),
           (warplab.std, (x,), {"axis": 1, "ddof": "1"}),
           (warplab.reduce, (x, "sum"), {"axis": 1, "ddof": 1}),
           (warplab.reduce, (x, "nosuch"), {}),
           (warplab.sum, (x,), {"axis": 2}),
           (warplab.sum, (x,), {"axis": (1, 1)}),
           (warplab.sum, (x,), {"axis": 1.0}),
           (warplab.sum, (x,), {"variant": "nope"}),
           (warplab.sum, (x,), {"axis": 0, "variant": "k2_shared"}),
           (warplab.min, (x[:, :0],), {"axis": 1}),
           (warplab.min, (x[:0],), {}),
           (warplab.sum, (x.astype(np.complex64).view(Dev),), {"axis": 1}),
           (warplab.sum, (x.astype(np.complex64).view(Dev),), {}),
           (warplab.mean, (x,), {"axis": 1, "out": np.zeros(8)}),
           (warplab.series_stats, (x.reshape(-1),), {}),
           (warplab.series_stats, (x.astype(np.complex64).view(Dev),), {})]
    with fastpath.bypassed():
        cold = [_raised(f, *a, **k) for f, a, k in bad]
    for _ in range(2):  # warm: the good calls of the same shapes have plans
        warplab.var(x, axis=1, ddof=1)
        warplab.sum(x, axis=1)
        warplab.sum(x)
        warplab.series_stats(x)
    assert [_raised(f, *a, **k) for f, a, k in bad] == cold
    assert all(issubclass(t, (TypeError, ValueError)) for t, _ in cold), cold


def test_threads_share_one_plan(gpu) -> None:
    xs = [dev(_data((32, 32), "float32", seed)) for seed in range(2)]
    wants = [_named("mean", x, axis=1) for x in xs]
    sums = [float(np.asarray(x).astype(np.float64).sum()) for x in xs]
    fastpath.clear()

    def worker(i: int) -> None:
        for _ in range(100):
            np.testing.assert_array_equal(warplab.mean(xs[i], axis=1), wants[i])
            assert float(warplab.sum(xs[i])) == pytest.approx(sums[i], rel=1e-6)

    run_in_threads(worker, 2)
    assert _plans() == 2  # one plan per key, whichever thread built it


def test_poisoned_outputs_are_overwritten(gpu, monkeypatch) -> None:
    monkeypatch.setattr(axis_cuda, "_empty",
                        lambda shape, dtype: np.full(shape, 77, dtype).view(Dev))
    x = dev(_data((16, 64), "float32"))
    for _ in range(2):
        np.testing.assert_allclose(warplab.mean(x, axis=1), np.asarray(x).mean(axis=1),
                                   rtol=1e-5)


# --- host input: the same cache ---------------------------------------------------------------


def test_host_input_reuses_its_plan(monkeypatch) -> None:
    monkeypatch.setenv("WARPLAB_DEVICE", "cpu")
    fastpath.clear()
    h = _data((16, 32), "float32")
    for _ in range(3):
        assert warplab.sum(h) == np.float32(h.sum(dtype=np.float64))
        np.testing.assert_allclose(warplab.std(h, axis=0, ddof=1), h.std(axis=0, ddof=1),
                                   rtol=1e-5)
        m, n = warplab.series_stats(h)
        np.testing.assert_allclose(m, h.mean(axis=1), rtol=1e-6)
    assert _plans() == 3
    monkeypatch.setenv("WARPLAB_DEVICE", "nonsense")  # read per call: another key
    with pytest.raises(ValueError, match="WARPLAB_DEVICE"):
        warplab.sum(h)
    assert _plans() == 3
    fastpath.clear()


def test_exotic_inputs_and_options_are_planned_per_call() -> None:
    fastpath.clear()
    assert warplab.sum([1, 2, 3]) == 6                      # a list: normalised first
    assert warplab.sum(np.ones(2).view(_Sub)) == 2.0       # a subclass: no key
    assert warplab.sum(np.ones((2, 3)), axis=[0, 1]) == 6.0  # a list of axes: no key
    assert warplab.reduce(np.ones(4), "var", ddof=np.int64(1)) == 0.0
    assert _plans() == 1


class _Sub(np.ndarray):
    """A NumPy subclass (``np.memmap`` is one)."""

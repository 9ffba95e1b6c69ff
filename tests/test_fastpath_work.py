"""Work counters of the short paths (no GPU): with CuPy replaced by a counting fake
(``fake_cupy``) and each kernel by a NumPy model that reads the launch's arguments as the
kernel does, a warm call must do the least host work: for an axis reduction or
``series_stats`` one allocation and one launch (no planning, no copies, no synchronisation);
results identical to the full path (a named variant, which skips the records); every record
key (op, dtype, shape, strides, alignment, axis, keepdims, ddof, device) builds its own; the
full path's errors raised again, with the same message, through warm records. A warm
``byte_histogram`` zeroes its counts with ``scalar.zeros`` (no ``cupy.zeros`` call). The
other short paths' counters: ``test_fastpath_work_{bincount,copies,corr,histogram}.py``."""
from __future__ import annotations


import numpy as np
import pytest

import warplab
from fake_cupy import WORK, Dev, count_launch, dev, install, poison_allocations
from warplab.core import fastpath, registry, scalar
from warplab.families.reduce import axis, axis_cuda, axis_fast
from conftest import run_in_threads

_OPS = {v: k for k, v in axis_cuda.KERNEL_OP.items()}


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
        elif name == "axis_rows_split":
            rows, cols, ld, _, _, _, _, out, fd, _ = rest
        else:  # axis_cols: reduce each column of (nred, ncols)
            nred, ncols, ld, _, _, _, _, _, out, fd, _ = rest
            x2 = _rows_of(x, int(nred), int(ncols), int(ld)).T
            _write(out, _reduce_rows(x2, op, float(fd)))
            return
        _write(out, _reduce_rows(_rows_of(x, int(rows), int(cols), int(ld)), op, float(fd)))

    return launch


def _write(out: Dev, r: np.ndarray) -> None:
    flat = np.asarray(out).view(np.ndarray).reshape(-1)  # a view: out is contiguous
    flat[...] = r.astype(out.dtype)


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch):
    g = install(monkeypatch)
    monkeypatch.setattr(axis_cuda, "_kernel", _axis_kernel)
    monkeypatch.setattr(axis_cuda, "_occupancy", lambda *a: 8)
    monkeypatch.setattr(axis_cuda, "sm_count", lambda d: 4)
    monkeypatch.setattr(registry, "cuda_available", lambda: True)  # named variants
    fastpath.clear()
    yield g
    fastpath.clear()


def _data(shape: tuple, dtype: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 100).astype(dtype)


def _full(name: str, x: Dev, **kw: object) -> object:
    """The full path: a named variant never takes a record."""
    h = np.asarray(x)
    layout = axis.plan_2d(h.shape, h.strides, h.itemsize,
                          axis.normalize_axes(kw.get("axis"), h.ndim)).layout
    return getattr(warplab, name)(x, variant="rows_adaptive" if layout == "rows" else "columns",
                                  **kw)


def test_warm_axis_call_is_one_allocation_and_one_launch(gpu, monkeypatch) -> None:
    x = dev(_data((64, 64), "float32"))
    planned: list[object] = []
    real = axis_cuda.rows_launch
    monkeypatch.setattr(axis_cuda, "rows_launch", lambda *a: planned.append(a) or real(*a))
    first = warplab.mean(x, axis=1)
    assert len(planned) == 1
    WORK.clear()
    with warplab.record_variants() as ran:
        got = warplab.mean(x, axis=1)
    assert dict(WORK) == {"empty": 1, "launch": 1} and len(planned) == 1
    assert [r.variant for r in ran] == ["rows_adaptive"]
    assert type(got) is scalar.array_type() and got.shape == (64,) and got.dtype == np.float32
    np.testing.assert_array_equal(got, first)
    np.testing.assert_array_equal(got, _full("mean", x, axis=1))
    np.testing.assert_allclose(got, np.asarray(x).mean(axis=1, dtype=np.float64), rtol=1e-6)



def test_results_take_the_short_paths_too(gpu) -> None:
    """warplab's own results (``DeviceArray``, ``DeviceScalar``) chained into another call
    take the short path as CuPy's arrays do: one allocation and one launch when warm."""
    x = dev(_data((64, 64), "float32"))
    y = warplab.mean(x, axis=0, keepdims=True) + x  # a plain array (derived)
    r = scalar.empty((64, 64), np.float32)
    r[...] = y
    want = warplab.mean(r, axis=1)
    WORK.clear()
    got = warplab.mean(r, axis=1)
    assert dict(WORK) == {"empty": 1, "launch": 1}
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, _full("mean", y, axis=1))
    first = warplab.series_stats(r)
    WORK.clear()
    m, n = warplab.series_stats(r)
    assert dict(WORK) == {"empty": 1, "launch": 1}
    assert type(m) is type(n) is scalar.array_type()
    np.testing.assert_array_equal(m, first[0])
    np.testing.assert_array_equal(n, first[1])

def test_warm_series_stats_is_one_allocation_and_one_launch(gpu) -> None:
    x = dev(_data((64, 64), "float32"))
    mean, norm = warplab.series_stats(x)
    WORK.clear()
    m2, n2 = warplab.series_stats(x)
    assert dict(WORK) == {"empty": 1, "launch": 1}
    full = axis.series_stats_rows(x)  # the full path
    for a, b in ((mean, m2), (norm, n2), (mean, full[0]), (norm, full[1])):
        assert type(b) is scalar.array_type() and b.dtype == np.float32 and b.shape == (64,)
        np.testing.assert_array_equal(a, b)
    h = np.asarray(x).astype(np.float64)
    np.testing.assert_allclose(norm, np.linalg.norm(h - h.mean(1)[:, None], axis=1), rtol=1e-6)


CALLS = [  # (function, shape, dtype, keywords, layout slice)
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
def test_short_path_same_as_full_path(gpu, name, shape, dtype, kw, how) -> None:
    x = _layout(_data(shape, dtype), how)
    want = _full(name, x, **kw)
    cold = getattr(warplab, name)(x, **kw)
    assert fastpath.stats()["reduce.axis"] == 1
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


def test_what_the_short_path_leaves_to_the_full_path(gpu) -> None:
    h = _data((4, 6, 8), "float32")
    for x, kw in ((dev(h.astype(np.int8)), {"axis": 1}),       # not a native dtype
                  (dev(h), {"axis": (0, 2)}),                   # not a 2-D view: a copy
                  (dev(h), {"axis": 1, "dtype": np.float64}),   # dtype=
                  (dev(h), {"axis": np.int64(1)})):             # not a plain int axis
        want = warplab.sum(x, variant="rows_adaptive", **kw)
        np.testing.assert_array_equal(warplab.sum(x, **kw), want)
    assert fastpath.stats()["reduce.axis"] == 2  # two "full path" marks, no launch records
    assert all(rec is False for rec in axis_fast._RECORDS._plans.values())


def test_record_keys(gpu) -> None:
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
    assert fastpath.stats()["reduce.axis"] == len(calls)
    buf = dev(np.zeros(16 * 32 + 1, np.float32))
    getattr(warplab, "sum")(buf[1:].reshape(16, 32), axis=1)  # 4-byte offset: alignment
    assert fastpath.stats()["reduce.axis"] == len(calls) + 1
    gpu.device = 1                                             # device
    warplab.sum(calls[0][0], axis=1)
    keys = list(axis_fast._RECORDS._plans)
    assert len(keys) == len(calls) + 2 and keys[-1][-1] == 1
    fastpath.clear()
    assert fastpath.stats()["reduce.axis"] == 0


def _raised(fn, *a, **k) -> tuple[type, str]:
    with pytest.raises(Exception) as info:  # noqa: PT011  (compared below)
        fn(*a, **k)
    return type(info.value), str(info.value)


def test_errors_through_warm_records(gpu) -> None:
    x = dev(_data((8, 8), "float32"))
    bad = [(warplab.var, (x,), {"axis": 1, "ddof": 8}),
           (warplab.var, (x,), {"axis": 1, "ddof": True}),
           (warplab.std, (x,), {"axis": 1, "ddof": "1"}),
           (warplab.sum, (x,), {"axis": 1, "ddof": 1}),
           (warplab.sum, (x,), {"axis": 2}),
           (warplab.sum, (x,), {"axis": (1, 1)}),
           (warplab.sum, (x,), {"axis": 1.0}),
           (warplab.min, (x[:, :0],), {"axis": 1}),
           (warplab.sum, (x.astype(np.complex64).view(Dev),), {"axis": 1}),
           (warplab.mean, (x,), {"axis": 1, "out": np.zeros(8)}),
           (warplab.series_stats, (x.reshape(-1),), {}),
           (warplab.series_stats, (x.astype(np.complex64).view(Dev),), {})]
    with fastpath.bypassed():
        cold = [_raised(f, *a, **k) for f, a, k in bad]
    for _ in range(2):  # warm: the good calls of the same shapes have records
        warplab.var(x, axis=1, ddof=1)
        warplab.sum(x, axis=1)
        warplab.series_stats(x)
    assert [_raised(f, *a, **k) for f, a, k in bad] == cold
    assert all(issubclass(t, (TypeError, ValueError)) for t, _ in cold), cold


def test_threads_share_one_record(gpu) -> None:
    xs = [dev(_data((32, 32), "float32", seed)) for seed in range(2)]
    wants = [_full("mean", x, axis=1) for x in xs]
    fastpath.clear()

    def worker(i: int) -> None:
        for _ in range(100):
            np.testing.assert_array_equal(warplab.mean(xs[i], axis=1), wants[i])

    run_in_threads(worker, 2)
    assert fastpath.stats()["reduce.axis"] == 1  # same key: one record


def test_poisoned_outputs_are_overwritten(gpu, monkeypatch) -> None:
    monkeypatch.setattr(axis_cuda, "_empty",
                        lambda shape, dtype: np.full(shape, 77, dtype).view(Dev))
    x = dev(_data((16, 64), "float32"))
    for _ in range(2):
        np.testing.assert_allclose(warplab.mean(x, axis=1), np.asarray(x).mean(axis=1),
                                   rtol=1e-5)


# --- byte_histogram (the short path of cuda.device_default) -------------------------------


@pytest.fixture
def bytes_gpu(monkeypatch: pytest.MonkeyPatch):
    from types import SimpleNamespace

    from warplab.families.histogram import cuda

    g = install(monkeypatch)

    def launch(plan: object, grid: int, block: int, data: Dev, bins: Dev) -> None:
        count_launch()
        np.asarray(bins).view(np.ndarray)[...] += np.bincount(np.asarray(data), minlength=256)

    monkeypatch.setattr(cuda, "_plan", lambda *a: SimpleNamespace(full=4))
    monkeypatch.setattr(cuda, "_launch", launch)
    fastpath.clear()
    yield g
    fastpath.clear()


def test_warm_byte_histogram_zeroes_without_cupy_zeros(bytes_gpu, monkeypatch) -> None:
    x = dev(np.random.default_rng(6).integers(0, 256, 4096, dtype=np.uint8))
    warplab.byte_histogram(x)
    poison_allocations(monkeypatch)  # the memset must zero the counts
    WORK.clear()
    got = warplab.byte_histogram(x)
    assert dict(WORK) == {"empty": 1, "memset": 1, "launch": 1}  # latency2: + "zeros"
    np.testing.assert_array_equal(got, np.bincount(np.asarray(x), minlength=256))

"""GPU tests of ``reduce_axis`` and ``series_stats_rows`` (``pytest -m gpu`` on the GPU machine).

Every cuda variant on the shapes 1x1, 1xN, Mx1, 3x31, 7x1023, 1000x1025 (and, for a few variants
and dtypes, 1048576x32 and 16x(2^24+3)), float32/float64, data random, all-equal (7.25) and
alternating (+1e6, -1e6+1, ...), against NumPy in float64.

Tolerances, per result: |got - ref| <= u_acc * (N / 256 + 32) * sum|x| (sums; divided by N for
means) + 4 u_out |ref|, with u_acc the unit roundoff of the accumulator (float64 for rows_adaptive
and columns; the input type for the K2 seeds, which sum in float32 as the report did: the bound
grows with N, one term per sequential add of a thread's share and per tree level) and u_out that
of the result dtype. var/std: u64 * (N + 64) * max(x - x0)^2 (var; its square root for std) +
4 u_out. min/max: exact.
"""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import warplab
from conftest import clear_ran, last_ran

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)
cupy = pytest.importorskip("cupy")

from warplab.families.reduce import axis_cuda, axis_plan  # noqa: E402
from warplab.families.reduce.axis import OPS, plan_2d, reduce_axis, series_stats_rows  # noqa: E402

K2 = ("k2_basic", "k2_shared", "k2_shared_unrolled", "k2_multiblock")
def shape_id(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape))


SHAPES = ((1, 1), (1, 1000), (1000, 1), (3, 31), (7, 1023), (1000, 1025))
KINDS = ("random", "equal", "alternating")
U = {np.dtype(np.float16): 2.0 ** -11, np.dtype(np.float32): 2.0 ** -24,
     np.dtype(np.float64): 2.0 ** -53}


@functools.lru_cache(maxsize=64)
def host(kind: str, dtype: str, rows: int, cols: int) -> np.ndarray:
    """Series of ``cols`` values, one per row."""
    if kind == "equal":
        return np.full((rows, cols), 7.25, dtype=dtype)
    if kind == "alternating":
        row = np.where(np.arange(cols) % 2 == 0, 1e6, -1e6 + 1)
        # C order on purpose: astype of a broadcast view keeps its zero-stride axis fastest
        return np.ascontiguousarray(np.broadcast_to(row, (rows, cols)), dtype=dtype)
    rng = np.random.default_rng(rows * 7919 + cols)
    return (rng.standard_normal((rows, cols)) * 3 + 1).astype(dtype)


def compare(got: np.ndarray, x: np.ndarray, op: str, u_acc: float, ddof: float = 0) -> None:
    """``got`` (one result per row of ``x``) against NumPy in float64 (see the module doc)."""
    x64 = x.astype(np.float64)
    n = x.shape[1]
    out = np.dtype(got.dtype)
    if op in ("min", "max"):
        np.testing.assert_array_equal(got, getattr(np, op)(x, axis=1))
        return
    if op in ("sum", "mean"):
        ref = x64.sum(axis=1)
        bound = u_acc * (n / 256 + 32) * np.abs(x64).sum(axis=1)
        if op == "mean":
            ref, bound = ref / n, bound / n
    else:
        ref = x64.var(axis=1, ddof=ddof)
        d = x64 - x64[:, :1]
        bound = U[np.dtype(np.float64)] * (n + 64) * (d * d).max(axis=1, initial=0) * 16
        if op == "std":
            ref, bound = np.sqrt(ref), np.sqrt(bound)
    err = np.abs(got.astype(np.float64) - ref)
    ok = err <= bound + 4 * U[out] * np.abs(ref) + 1e-300
    assert ok.all(), (op, n, got[~ok][:4], ref[~ok][:4], bound[~ok][:4])


def run_variant(variant: str, x: np.ndarray, op: str, **kw: object) -> np.ndarray:
    """Run ``variant`` on device copies of ``x`` laid out for it, assert it ran, return the
    host result (one per row of ``x``)."""
    if variant == "columns":  # the same series as columns of a C-contiguous array: axis 0
        xd, axis = cupy.ascontiguousarray(cupy.asarray(x).T), 0
    else:
        xd, axis = cupy.asarray(x), 1
    clear_ran()
    got = reduce_axis(xd, op, axis, variant=variant, **kw)
    assert last_ran() == variant
    assert isinstance(got, cupy.ndarray) and got.shape == (x.shape[0],)
    return got.get()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
@pytest.mark.parametrize("variant", ("rows_adaptive",) + K2)
def test_rows_variants(variant: str, shape: tuple[int, int], dtype: str) -> None:
    ops = ("sum", "mean") if variant in K2 else OPS
    u_acc = U[np.dtype(dtype)] if variant in K2 else U[np.dtype(np.float64)]
    for kind in KINDS:
        x = host(kind, dtype, *shape)
        for op in ops:
            got = run_variant(variant, x, op)
            assert got.dtype == np.dtype(dtype)
            compare(got, x, op, u_acc)
        if variant == "rows_adaptive" and shape[1] > 1:
            for op in ("var", "std"):
                compare(run_variant(variant, x, op, ddof=1), x, op, u_acc, ddof=1)


#: (series, values): column blocks narrowed to 32 column threads, with splits (1000 x 1025,
#: 2048 x 1000) and without (4096 x 100, 4096 x 63); 4102 x 64: float64 16-byte loads, float32
#: scalar loads (its row stride off the 16-byte grid)
COLUMNS = [(3, 31), (7, 1023), (1000, 1025), (2, 5000), (5, 3), (4096, 100), (4102, 64),
           (4096, 63), (2048, 1000)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", COLUMNS, ids=shape_id)
def test_columns(shape: tuple[int, int], dtype: str) -> None:
    u64 = U[np.dtype(np.float64)]
    for kind in KINDS:
        x = host(kind, dtype, *shape)
        for op in OPS:
            compare(run_variant("columns", x, op), x, op, u64)


#: (rows, row lanes, short-walk form?) of (rows x 2^19) arrays along axis 0, one row range
#: (any GPU of up to 256 SMs), every dtype: one fenced unrolled step (8 rows, one lane), the
#: fenced form's remainder alone (5), two lanes of one fenced step each (16), two lanes of a
#: plain step and a remainder of 6-7 (29), the single-path form (65 rows: 9 steps, one lane)
WALKS = [(8, 1, True), (5, 1, True), (16, 2, True), (29, 2, True), (65, 1, False)]


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("rows,lanes,short", WALKS, ids=lambda v: str(v))
def test_columns_kernel_forms(rows: int, lanes: int, short: bool, dtype: str) -> None:
    """Both forms of the columns kernel (axis_plan.short_walk) and the row lanes of one step
    (axis_plan.COLS_LANE_COLUMN_BYTES) against NumPy, every op, the integer dtypes exact (sums
    wrapping in int64)."""
    cols = 1 << 19
    t = np.dtype(dtype)
    sms = axis_cuda.sm_count(cupy.cuda.runtime.getDevice())
    p = axis_cuda.plan_cols(rows, cols, t.itemsize, True, sms)
    assert (p.cg, p.splits, p.short_walk) == (256 // lanes, 1, short)
    if t.kind == "i":
        info = np.iinfo(dtype)
        x = np.random.default_rng(rows).integers(info.min, info.max, size=(cols, rows),
                                                 dtype=dtype, endpoint=True)
        for op in ("sum", "min", "max"):
            np.testing.assert_array_equal(run_variant("columns", x, op), getattr(np, op)(x, axis=1))
        return
    x = host("random", dtype, cols, rows)
    for op in OPS:
        compare(run_variant("columns", x, op), x, op, U[np.dtype(np.float64)])


def test_columns_fills_gpu_with_few_columns() -> None:
    """A tall array with few columns: row lanes and row splits (partials, last-block finish)."""
    x = host("random", "float32", 7, 300_001)
    for op in ("sum", "max", "var"):
        compare(run_variant("columns", x, op), x, op, U[np.dtype(np.float64)])


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint64"])
def test_integer_partials(dtype: str) -> None:
    """Integer sums (wrapping) and min/max over the whole range through partials and the
    last-block finish: rows split over S > 1 blocks, columns over S > 1 row ranges. Exact."""
    info = np.iinfo(dtype)
    x = np.random.default_rng(5).integers(info.min, info.max, size=(4, 70_001), dtype=dtype,
                                           endpoint=True)
    for variant in ("rows_adaptive", "columns"):
        for op in ("sum", "min", "max"):
            np.testing.assert_array_equal(run_variant(variant, x, op), getattr(np, op)(x, axis=1))


def test_moments_through_partials() -> None:
    """var/std with ddof=1 and series_stats_rows (rows and columns, S > 1 splits); float16
    series statistics are float64 results computed in float64."""
    x = host("random", "float64", 4, 70_001)
    for variant in ("rows_adaptive", "columns"):
        for op in ("var", "std"):
            compare(run_variant(variant, x, op, ddof=1), x, op, U[np.dtype(np.float64)], ddof=1)
    for xs in (x, x.astype(np.float16)):
        x64 = xs.astype(np.float64)
        m = x64.mean(axis=1)
        norm_ref = np.sqrt(((x64 - m[:, None]) ** 2).sum(axis=1))
        for xd in (cupy.asarray(xs), cupy.asfortranarray(cupy.asarray(xs))):
            mean, norm = series_stats_rows(xd)
            assert mean.dtype == np.float64 and norm.dtype == np.float64
            np.testing.assert_allclose(mean.get(), m, rtol=1e-12, atol=1e-12 * np.abs(x64).max())
            np.testing.assert_allclose(norm.get(), norm_ref, rtol=1e-10)


BIG = [("rows_adaptive", (1 << 20, 32), "float32", ("mean", "var", "max")),
       ("rows_adaptive", (1 << 20, 32), "float64", ("sum",)),
       ("rows_adaptive", (16, (1 << 24) + 3), "float32", ("mean", "std", "min")),
       ("k2_shared_unrolled", (1 << 20, 32), "float32", ("mean",)),
       ("k2_multiblock", (16, (1 << 24) + 3), "float32", ("sum",)),
       ("columns", (16, 1 << 22), "float32", ("mean", "var"))]


@pytest.mark.parametrize("variant,shape,dtype,ops", BIG, ids=lambda v: str(v))
def test_big_shapes(variant: str, shape: tuple[int, int], dtype: str, ops: tuple) -> None:
    xd = cupy.random.default_rng(1).random(shape, dtype=np.float32).astype(dtype) * 2 - 1
    x = xd.get()
    del xd
    u_acc = U[np.dtype(dtype)] if variant in K2 else U[np.dtype(np.float64)]
    for op in ops:
        compare(run_variant(variant, x, op), x, op, u_acc)


@pytest.mark.parametrize("variant", ("rows_adaptive",) + K2)
def test_strided_views(variant: str) -> None:
    """x[:, ::2] (copied: not a view the kernels take), x[::2] (rows ld apart), an offset
    view (row starts off 16-byte boundaries), the transpose of a Fortran array (rows)."""
    base = host("random", "float32", 64, 1030)
    xd = cupy.asarray(base)
    views = {"cols_step": (base[:, ::2], xd[:, ::2]), "rows_step": (base[::2], xd[::2]),
             "offset": (base[3:, 1:], xd[3:, 1:]),
             "fortran_T": (base, cupy.asfortranarray(xd.T).T)}
    for name, (v, vd) in views.items():
        assert plan_2d(vd.shape, vd.strides, vd.itemsize, (1,)).layout == "rows", name
        for op in ("sum", "mean"):
            clear_ran()
            got = reduce_axis(vd, op, 1, variant=variant).get()
            assert last_ran() == variant
            compare(got, v, op, U[np.dtype(np.float32)] if variant in K2 else
                    U[np.dtype(np.float64)])


def test_transposed_and_negative_strides_default_dispatch() -> None:
    x = host("random", "float64", 300, 257)
    xd = cupy.asarray(x)
    cases = [(xd.T, x.T, 0, "rows_adaptive"), (xd.T, x.T, 1, "columns"),
             (xd[::-1], x[::-1], 1, "rows_adaptive"), (xd[:, ::-1], x[:, ::-1], 0, "rows_adaptive"),
             (xd, x, 0, "columns"), (xd, x, 1, "rows_adaptive")]
    for vd, v, axis, want in cases:
        for op in OPS:
            clear_ran()
            got = reduce_axis(vd, op, axis)
            assert last_ran() == want, (axis, want, last_ran())
            rows = v if axis == 1 else v.T
            compare(got.get(), np.ascontiguousarray(rows), op, U[np.dtype(np.float64)])


@pytest.mark.parametrize("variant", ("rows_adaptive", "columns") + K2)
def test_outputs_poisoned(variant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Outputs, partials and scratch start as NaN: every result must be written (and k2_basic's
    padding zeroed) for the results to be right."""
    def poisoned(shape: object, dtype: object) -> object:
        a = cupy.empty(shape, dtype)
        a.view(np.uint8).fill(0xFF)  # NaN for floats
        return a

    monkeypatch.setattr(axis_cuda, "_empty", poisoned)
    for shape in ((1000, 1025), (16, 70_001), (5, 3), (2000, 40)):
        x = host("random", "float32", *shape)
        for op in (("sum", "mean") if variant in K2 else ("sum", "var", "max")):
            compare(run_variant(variant, x, op), x, op,
                    U[np.dtype(np.float32)] if variant in K2 else U[np.dtype(np.float64)])


DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64")


@pytest.mark.parametrize("dtype", DTYPES)
def test_entry_dtypes_axes(dtype: str) -> None:
    """Every dtype through the entry point on device data (the conversions to the kernels'
    dtypes), axes and keepdims of a 3-D array, against NumPy."""
    rng = np.random.default_rng(3)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        x = rng.random((5, 6, 33)) < 0.5
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        x = rng.integers(info.min, info.max, size=(5, 6, 33), dtype=dt, endpoint=True)
    else:
        x = (rng.standard_normal((5, 6, 33)) * 4).astype(dt)
    xd = cupy.asarray(x)
    ops = ("sum", "min", "max", "mean", "var") if dt.kind != "f" else OPS
    for op in ops:
        for axis in (None, 0, 2, -1, (0, 1), (0, 2), (1, 2)):
            for keepdims in (False, True):
                got = reduce_axis(xd, op, axis, keepdims=keepdims)
                want = getattr(np, op)(x, axis=axis, keepdims=keepdims)
                assert isinstance(got, cupy.ndarray) and got.dtype == want.dtype
                assert got.shape == np.shape(want)
                if want.dtype.kind in "biu":
                    np.testing.assert_array_equal(got.get(), want)
                else:
                    ref = getattr(np, op)(x.astype(np.float64), axis=axis, keepdims=keepdims)
                    np.testing.assert_allclose(got.get().astype(np.float64), ref,
                                               rtol=4 * U[want.dtype] + 1e-12,
                                               atol=1e-12 * float(np.max(np.abs(ref)) or 1))


def test_uint64_extremes() -> None:
    x = np.array([[2 ** 64 - 1, 0, 2 ** 63, 2 ** 63 - 1, 5],
                  [1, 2, 3, 2 ** 64 - 2, 2 ** 63 + 7]], dtype=np.uint64)
    xd = cupy.asarray(x)
    for op in ("sum", "min", "max"):
        for axis in (0, 1, None):
            got = reduce_axis(xd, op, axis)
            assert got.dtype == np.uint64
            np.testing.assert_array_equal(got.get(), getattr(np, op)(x, axis=axis))


def test_host_input_and_scalars() -> None:
    x = host("random", "float32", 40, 50)
    got = reduce_axis(x, "mean", 1, device="cuda")
    assert isinstance(got, np.ndarray) and got.dtype == np.float32
    compare(got, x, "mean", U[np.dtype(np.float64)])
    s = reduce_axis(x, "sum", device="cuda")
    assert type(s) is np.float32
    d = reduce_axis(cupy.asarray(x), "std", (0, 1))
    assert isinstance(d, cupy.ndarray) and d.shape == () and d.dtype == np.float32
    np.testing.assert_allclose(float(d), x.astype(np.float64).std(), rtol=1e-6)
    k = reduce_axis(cupy.asarray(x), "max", 0, keepdims=True)
    assert k.shape == (1, 50)


def test_empty_and_errors_on_device() -> None:
    xd = cupy.zeros((4, 0), np.float32)
    r = reduce_axis(xd, "sum", 1)
    assert isinstance(r, cupy.ndarray) and r.shape == (4,) and float(r.sum()) == 0
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        reduce_axis(xd, "mean", 1)
    with pytest.raises(ValueError, match="zero-size array"):
        reduce_axis(xd, "min", 1)
    with pytest.raises(ValueError, match="ddof"):
        reduce_axis(cupy.ones((3, 4)), "var", 1, ddof=4)
    with pytest.raises(ValueError, match="does not support"):
        reduce_axis(cupy.ones((3, 4), np.float32), "max", 1, variant="k2_shared")
    with pytest.raises(ValueError, match="does not support"):
        reduce_axis(cupy.ones((3, 4), np.float32), "sum", 0, variant="k2_shared")


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8"])
def test_series_stats_rows(dtype: str) -> None:
    for kind in KINDS:
        x = host(kind, "float64", 300, 1025)
        x = (x if np.dtype(dtype).kind == "f" else np.abs(x) % 200).astype(dtype)
        for layout, xd, want_variant in (("c", cupy.asarray(x), "rows_adaptive"),
                                          ("f", cupy.asfortranarray(cupy.asarray(x)), "columns")):
            clear_ran()
            mean, norm = series_stats_rows(xd)
            assert last_ran() == want_variant, layout
            out = np.float32 if dtype == "float32" else np.float64
            assert mean.dtype == out and norm.dtype == out and mean.shape == (300,)
            x64 = x.astype(np.float64)
            m = x64.mean(axis=1)
            n = np.sqrt(((x64 - m[:, None]) ** 2).sum(axis=1))
            rtol = 4 * U[np.dtype(out)]
            np.testing.assert_allclose(mean.get(), m, rtol=rtol, atol=1e-9 * np.abs(x64).max())
            np.testing.assert_allclose(norm.get(), n, rtol=rtol + 1e-9,
                                       atol=1e-6 * math.sqrt(x.shape[1]) * np.abs(x64).max())
    m, n = series_stats_rows(host("random", "float32", 10, 20))  # host in, host out
    assert isinstance(m, np.ndarray) and isinstance(n, np.ndarray)


@pytest.mark.large
def test_over_2_32_elements() -> None:
    """64-bit indices: one row of 2^32 + 5 float32 ones (split kernel), then 2^29 + 1 rows x 8
    columns (columns kernel); 17 GB each, one at a time."""
    n = (1 << 32) + 5
    x = cupy.ones((1, n), np.float32)
    assert float(reduce_axis(x, "sum", 1)[0]) == float(np.float32(n))
    assert float(reduce_axis(x, "mean", 1)[0]) == 1.0
    del x
    rows = (1 << 29) + 1
    x = cupy.ones((rows, 8), np.float32)
    clear_ran()
    s = reduce_axis(x, "sum", 0)
    assert last_ran() == "columns"
    np.testing.assert_array_equal(s.get(), np.full(8, np.float32(rows)))


def test_plans_seen_by_dispatch() -> None:
    x = cupy.ones((4, 5, 6), np.float32)
    p = plan_2d(x.shape, x.strides, x.itemsize, (2,))
    assert p.layout == "rows" and p.view
    p = plan_2d(x.shape, x.strides, x.itemsize, (0,))
    assert p.layout == "cols" and p.view


# Rows of 16 L bytes back to back run the packed kernel (L lanes per row): every L, row counts
# that leave a partial warp step (a step is 4 * 32 / L rows), and the same rows from a base
# that is not 16-byte aligned (the staged kernel then) must agree with NumPy.
PACKED = [(rows, lanes * 16 // isz, dt) for dt, isz in (("float32", 4), ("float64", 8))
          for lanes in axis_cuda.PACKED_LANES if lanes * 16 // isz >= 1
          for rows in (1, 5, 1000, 4099)]


def every_op_rows_adaptive(xd: object, x: np.ndarray) -> None:
    """Every op of ``rows_adaptive`` on the device view ``xd`` (the rows of ``x``), and var/std
    with ddof=1, against NumPy in float64."""
    for op in OPS:
        clear_ran()
        got = reduce_axis(xd, op, 1, variant="rows_adaptive")
        assert last_ran() == "rows_adaptive"
        compare(got.get(), x, op, U[np.dtype(np.float64)])
    if x.shape[1] > 1:
        for op in ("var", "std"):
            compare(reduce_axis(xd, op, 1, variant="rows_adaptive", ddof=1).get(), x, op,
                    U[np.dtype(np.float64)], ddof=1)


@pytest.mark.parametrize("rows,cols,dtype", PACKED, ids=lambda v: str(v))
def test_packed_rows(rows: int, cols: int, dtype: str) -> None:
    t = np.dtype(dtype)
    plan = axis_cuda.plan_rows(rows, cols, t.itemsize, 132, contiguous=True, aligned=True)
    assert (plan.kernel, plan.group) == ("packed", cols * t.itemsize // 16)
    for kind in KINDS:
        x = host(kind, dtype, rows, cols)
        flat = cupy.zeros(rows * cols + 1, t)
        for off in (0, 1):  # off 1: base not 16-byte aligned, the staged kernel
            flat[off:off + rows * cols] = cupy.asarray(x.ravel())
            xd = flat[off:off + rows * cols].reshape(rows, cols)
            every_op_rows_adaptive(xd, x)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_packed_rows_integers(dtype: str) -> None:
    x = np.random.default_rng(5).integers(-1000, 1000, (3001, 64 // np.dtype(dtype).itemsize),
                                          dtype=dtype)
    xd = cupy.asarray(x)
    np.testing.assert_array_equal(reduce_axis(xd, "sum", 1).get(), x.sum(axis=1))
    np.testing.assert_array_equal(reduce_axis(xd, "max", 1).get(), x.max(axis=1))
    np.testing.assert_allclose(reduce_axis(xd, "mean", 1).get(), x.mean(axis=1), rtol=1e-15)


# Other rows back to back, at least two a 16 KiB tile (up to ~8 KiB), run the staged kernel
# (tiles of whole rows through shared memory, 32 KiB for rows under 512 bytes; aligned rows of
# 1-2 KiB on the 16-byte grid excepted, below): row lengths off the 16-byte grid, one tile and
# several (rows around a tile's row count RT, tiles that end inside a 16-byte word), from bases
# at every element offset of a word (the first and last word of a tile then hold bytes outside
# it), every op, with and without ddof; series_stats through the same kernel.
STAGED = [(cols, dt) for dt, longer in (("float32", (511, 1000, 2046)),
                                         ("float64", (257, 700, 1023)))
          for cols in (1, 3, 5, 33, 100, 255, *longer)]


@pytest.mark.parametrize("cols,dtype", STAGED, ids=lambda v: str(v))
def test_staged_rows(cols: int, dtype: str) -> None:
    t = np.dtype(dtype)
    rt = axis_plan.staged_rows(cols, t.itemsize, axis_plan.stage_unroll(cols, t.itemsize))
    per = 16 // t.itemsize
    for rows in sorted({2, rt - 1, rt, rt + 1, 3 * rt + 7} - {0, 1}):
        plan = axis_cuda.plan_rows(rows, cols, t.itemsize, 132, contiguous=True)
        assert (plan.kernel, plan.chunk) == ("staged", rt)
        for kind in KINDS:
            x = host(kind, dtype, rows, cols)
            flat = cupy.zeros(rows * cols + per, t)
            for off in range(per):
                flat[:] = np.nan if t.kind == "f" else 0  # bytes outside the rows: never read
                flat[off:off + rows * cols] = cupy.asarray(x.ravel())
                xd = flat[off:off + rows * cols].reshape(rows, cols)
                every_op_rows_adaptive(xd, x)
            mean, norm = series_stats_rows(cupy.asarray(x))
            x64 = x.astype(np.float64)
            m = x64.mean(axis=1)
            np.testing.assert_allclose(mean.get(), m, rtol=4 * U[t], atol=1e-9 * np.abs(x64).max())
            np.testing.assert_allclose(
                norm.get(), np.sqrt(((x64 - m[:, None]) ** 2).sum(axis=1)), rtol=4 * U[t] + 1e-9,
                atol=1e-6 * math.sqrt(cols) * np.abs(x64).max())


# Aligned back-to-back rows of 1-2 KiB on the 16-byte grid run the group kernel
# (axis_plan.GROUP_ROW_BYTES): row counts around a block's step (G = 16: two rows a warp,
# 16 a block of 8 warps; G = 32 from the row count that fills the GPU), every op, against
# NumPy; the same rows one element off the 16-byte grid run the staged kernel.
BANDED = [(256, "float32"), (384, "float32"), (512, "float32"), (128, "float64"),
          (256, "float64")]


@pytest.mark.parametrize("cols,dtype", BANDED, ids=lambda v: str(v))
def test_banded_rows_group(cols: int, dtype: str) -> None:
    t = np.dtype(dtype)
    sms = axis_cuda.sm_count(cupy.cuda.runtime.getDevice())
    g = axis_plan.group_size(cols, t.itemsize)[1]
    few = (2, 3, 15, 16, 17) if g < 32 else ()
    for rows in (*few, 16 * sms + 3):
        plan = axis_cuda.plan_rows(rows, cols, t.itemsize, sms, contiguous=True, aligned=True)
        assert (plan.kernel, plan.group) == ("group", g)
        off_grid = axis_cuda.plan_rows(rows, cols, t.itemsize, sms, contiguous=True)
        assert off_grid.kernel == "staged"
        for kind in KINDS:
            x = host(kind, dtype, rows, cols)
            flat = cupy.zeros(rows * cols + 1, t)
            for off in (0, 1):
                flat[:] = np.nan  # bytes outside the rows: never read
                flat[off:off + rows * cols] = cupy.asarray(x.ravel())
                every_op_rows_adaptive(flat[off:off + rows * cols].reshape(rows, cols), x)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_banded_rows_integers(dtype: str) -> None:
    rows, cols = 5000, 256  # 1 and 2 KiB rows
    x = np.random.default_rng(8).integers(-1000, 1000, (rows, cols), dtype=dtype)
    plan = axis_cuda.plan_rows(rows, cols, x.itemsize, 132, contiguous=True, aligned=True)
    assert plan.kernel == "group"
    xd = cupy.asarray(x)
    np.testing.assert_array_equal(reduce_axis(xd, "sum", 1).get(), x.sum(axis=1))
    np.testing.assert_array_equal(reduce_axis(xd, "min", 1).get(), x.min(axis=1))
    np.testing.assert_allclose(reduce_axis(xd, "mean", 1).get(), x.mean(axis=1), rtol=1e-15)
    np.testing.assert_allclose(reduce_axis(xd, "std", 1).get(), x.std(axis=1), rtol=1e-12)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_staged_rows_integers(dtype: str) -> None:
    x = np.random.default_rng(6).integers(-1000, 1000, (3001, 33), dtype=dtype)
    flat = cupy.zeros(x.size + 1, dtype)
    for off in (0, 1):
        flat[off:off + x.size] = cupy.asarray(x.ravel())
        xd = flat[off:off + x.size].reshape(x.shape)
        np.testing.assert_array_equal(reduce_axis(xd, "sum", 1).get(), x.sum(axis=1))
        np.testing.assert_array_equal(reduce_axis(xd, "min", 1).get(), x.min(axis=1))
        np.testing.assert_allclose(reduce_axis(xd, "mean", 1).get(), x.mean(axis=1), rtol=1e-15)


# The columns kernel's last block per column block combines the S partials with every thread
# (row lane rl takes partials rl, rl + RL, ...): tall arrays of few columns split over many
# blocks, every op.
@pytest.mark.parametrize("shape", [(1 << 20, 32), (300_000, 3), (40_000, 257)], ids=shape_id)
def test_columns_many_splits(shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    xd = cupy.asarray(x)
    for op in OPS:
        clear_ran()
        got = reduce_axis(xd, op, 0)
        assert last_ran() == "columns"
        compare(got.get(), np.ascontiguousarray(x.T), op, U[np.dtype(np.float64)])


#: (rows, cols) reduced along both axes: counts that are not powers of two (3, 7, 33, 1,000 and
#: 4,097 values a result) through the rows kernels (packed, staged, split) and the columns
#: kernel (unsplit and split rows, 16-byte and scalar loads)
QUOTIENTS = [(3, 4096), (7, 1024), (33, 2048), (1000, 999), (4097, 64), (64, 100_003)]


@pytest.mark.parametrize("shape", QUOTIENTS, ids=shape_id)
@pytest.mark.parametrize("axis", [0, 1])
def test_float32_mean_is_the_rounded_double_quotient(shape: tuple[int, int], axis: int) -> None:
    """Every float32 mean is float32(double(sum) / double(n)) bit for bit, as NumPy's mean of
    the data in float64 rounded: data whose double sums are exact in any order (multiples of
    2^-12 under 2^20), and results of infinities, NaN, zeros and values near float32's largest
    (sums past float32, means back in range)."""
    rng = np.random.default_rng(shape[0] * 31 + shape[1] + axis)
    x = (rng.integers(-2 ** 32, 2 ** 32, size=shape) * 2.0 ** -12).astype(np.float32)
    lanes = np.moveaxis(x, axis, -1)  # lanes[j]: the values of result j (a view of x)
    specials = [np.inf, np.nan, 0.0, 3.0e38, (np.inf, -np.inf), (-np.inf, -3.0e38)]
    for j, v in enumerate(specials[:lanes.shape[0]]):
        if isinstance(v, tuple):
            lanes[j, 0], lanes[j, -1] = v
        else:
            lanes[j] = v
    n = x.shape[axis]
    with np.errstate(invalid="ignore"):  # inf - inf
        sums = x.astype(np.float64).sum(axis=axis)  # exact: every partial sum fits a double
        want = (sums / np.float64(n)).astype(np.float32)
    got = cupy.asnumpy(warplab.mean(cupy.asarray(x), axis=axis))
    assert got.dtype == np.float32
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got.view(np.uint32)[~nan], want.view(np.uint32)[~nan])

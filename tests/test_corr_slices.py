"""CPU tests of the int8_slices corrcoef variant (``families/corr/slices*.py``, ``slices.cu``).

No GPU here: the digits, tails and the bound are checked against exact (long double) products
for many kinds of rows; the choice of s on 8192 random walks of 8192 values; the int32 limits
of k chunking; the layout of the slices and the panels. Then the engine's host code runs with
CuPy replaced by NumPy, each kernel of slices.cu by a NumPy model of what it stores where, and
cuBLAS by a model that reads and writes through the very pointers, leading dimensions and
sizes the engine passes (inside one allocation, column-major, every partial sum within the
int32 limit): the blocks must equal the NumPy emulation bit for bit.
"""
from __future__ import annotations

import sys
import types
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_corr_emulated import MODELS as CORR_MODELS

import warplab
from warplab.families.corr import cuda, slices, slices_cuda
from warplab.families.corr.slices import (
    ALIGN,
    DIGITS,
    NOMINAL_SLICES,
    TARGETS,
    TOP,
    Choice,
    RowMaxima,
    SlicesPlan,
    apriori_maxima,
    block_ops,
    choose_slices,
    chunking,
    emulate,
    panel_rows,
    panels,
    row_stats,
    slices_error_bound,
    split_digits,
)
from warplab.families.corr.spec import PRECISIONS, error_bound
from warplab.families.corr.tiles import fill_tiled, full_matrix

KINDS = ("random", "walk", "const", "offset", "tiny", "huge", "spiky", "levels")


def _data(kind: str, m: int, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, n))
    if kind == "walk":
        x = np.cumsum(x, axis=1)
    elif kind == "const":       # constant rows (invalid) and rows of few distinct values
        x = rng.integers(0, 3, (m, n)).astype(np.float64)
        x[::3] = 0.1
    elif kind == "offset":
        x = 1e8 + x
    elif kind == "tiny":
        x = x * 1e-200
    elif kind == "huge":
        x = x * 1e150
    elif kind == "spiky":       # one value dominates: small values need the deep digits
        x = x * 1e-6
        x[:, n // 2] += 1.0
    elif kind == "levels":      # exactly representable: few slices suffice
        x = rng.integers(-1, 2, (m, n)).astype(np.float64)
    return x


def _normalise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The normalisation kernel's arithmetic (test_corr_emulated's model of corr.cu)."""
    m, n = x.shape
    z, valid = np.empty((m, n)), np.empty(m, bool)
    CORR_MODELS["corr_normalise_rows"]((1,), (cuda.DEFINES["CORR_NORM_BLOCK"],),
                                       (x, z, valid, 0, m, n))
    return z, valid


def _exact(z: np.ndarray, valid: np.ndarray) -> np.ndarray:
    zl = np.where(valid[:, None], z, 0).astype(np.longdouble)
    return (zl @ zl.T).astype(np.float64)


def _maxima(z: np.ndarray, valid: np.ndarray) -> RowMaxima:
    return RowMaxima.of(row_stats(z, valid).max(axis=0))


# --- the split --------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_digits_ranges_and_exact_reconstruction(kind: str) -> None:
    z, valid = _normalise(_data(kind, 20, 300, 1))
    c = slices.row_scale(z, valid)
    d = split_digits(z, c).astype(np.int64)
    assert np.abs(d[0]).max() <= 127 and d[1:].min() >= -128 and d[1:].max() <= 127
    y = np.zeros(z.shape, np.int64)
    for t in range(DIGITS):
        y = y * 256 + d[t]
    ok = c > 0
    want = np.rint(z[ok] / c[ok, None] * 2.0**56).astype(np.int64)
    np.testing.assert_array_equal(y[ok], want)
    assert not d[:, ~ok].any()
    # the row's largest value sits at the top of the range
    assert (np.abs(d[0][ok]).max(axis=1) >= 126).all()


def test_tails_are_the_value_of_the_later_digits() -> None:
    z, valid = _normalise(_data("walk", 5, 64, 2))
    d = split_digits(z, slices.row_scale(z, valid))
    t = slices.tails(d)
    for r in range(1, DIGITS):
        want = sum(d[u].astype(np.float64) * 256.0 ** -u for u in range(r, DIGITS))
        np.testing.assert_allclose(t[r - 1], want, rtol=0, atol=2.0**-54)
        assert np.abs(t[r - 1]).max() <= 128 / 255 * 256.0 ** (1 - r)
    assert not t[DIGITS - 1].any()


# --- the bound and the choice of s ------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(st.sampled_from(KINDS), st.integers(2, 40), st.integers(2, 400), st.integers(0, 10**6),
       st.integers(1, DIGITS))
def test_emulation_within_bound(kind: str, m: int, n: int, seed: int, s: int) -> None:
    z, valid = _normalise(_data(kind, m, n, seed))
    got, _ = emulate(z, valid, slices=s)
    err = np.abs(got - _exact(z, valid))[np.ix_(valid, valid)]
    bound = slices_error_bound(s, n, _maxima(z, valid))
    assert err.max(initial=0) <= bound + n * 2.0**-63  # the long double reference's rounding


@pytest.mark.parametrize("kind", KINDS)
def test_chosen_s_meets_each_target_against_numpy(kind: str) -> None:
    x = _data(kind, 30, 257, 3)
    z, valid = _normalise(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = np.corrcoef(x)
    for precision in PRECISIONS:
        got, s = emulate(z, valid, precision=precision)
        assert slices_error_bound(s, 257, _maxima(z, valid)) <= TARGETS[precision]
        ok = np.ix_(valid, valid)
        assert np.abs(got[ok] - want[ok]).max(initial=0) <= error_bound("int8_slices",
                                                                         precision, 257)


@pytest.mark.parametrize("kind", ("random", "walk", "spiky"))
def test_bound_falls_with_s(kind: str) -> None:
    z, valid = _normalise(_data(kind, 25, 500, 4))
    mx = _maxima(z, valid)
    b = [slices_error_bound(s, 500, mx) for s in range(1, DIGITS + 1)]
    assert all(b[i + 1] < b[i] for i in range(DIGITS - 2))
    assert b[-1] < 1e-13
    with pytest.raises(ValueError):
        slices_error_bound(0, 500, mx)


def test_exact_data_takes_one_slice() -> None:
    x = np.array([[1.0, -1.0, 1.0, -1.0], [2.0, -2.0, 2.0, -2.0], [1.0, 1.0, -1.0, -1.0]])
    z, valid = _normalise(x)
    for precision in PRECISIONS:
        got, s = emulate(z, valid, precision=precision)
        assert s == 1  # the digits are exact; only c_i c_j and the products round
        np.testing.assert_allclose(got, _exact(z, valid), rtol=0, atol=4 * slices.U)


@pytest.mark.slow  # 25 s of one core, most of it slices.row_stats (tails' int64 divisions)
def test_choice_on_8192_random_walks() -> None:
    """The benchmark's data: 8192 random walks of 8192 values (warplab's generator, seed 1)."""
    x = warplab.random_walk(8192, 8192, seed=1, device="cpu")
    z, valid = _normalise(x.astype(np.float64))
    mx = _maxima(z, valid)
    chosen = {p: choose_slices(p, 8192, mx) for p in PRECISIONS}
    assert chosen == {"float64": 5, "float32": 3, "tf32": 2}
    assert slices.NOMINAL_SLICES == chosen
    assert slices_error_bound(5, 8192, mx) < 2.0**-34  # a margin over 2^-33
    assert slices_error_bound(3, 8192, mx) <= 2e-6  # float32's promised bound, rigorously
    assert slices_error_bound(2, 8192, mx) > TARGETS["float32"]


def test_all_invalid_rows() -> None:
    z = np.full((3, 10), np.nan)
    valid = np.zeros(3, bool)
    got, s = emulate(z, valid)
    assert s == 1 and not got.any()


# --- int32 exactness: k chunks ----------------------------------------------------------------

@pytest.mark.parametrize("s", range(1, DIGITS + 1))
@pytest.mark.parametrize("n", (1, 15, 17, 4097, 8192, 26208, 26209, 131056, 131057, 10**6))
def test_chunking_keeps_int32_exact(s: int, n: int) -> None:
    kc, nc = chunking(n, s)
    assert kc % ALIGN == 0 and nc * kc >= n and (nc - 1) * kc < n
    assert s * kc * 2**14 <= 2**31 - 1        # the deepest level: s kc products of <= 2^14
    kmax = (2**31 - 1) // (s * 2**14) // ALIGN * ALIGN
    assert nc == -(-n // kmax)                # no more chunks than needed


def test_chunk_limits() -> None:
    assert chunking(8192, 5) == (8192, 1)
    assert chunking(26208, 5) == (26208, 1) and chunking(26209, 5)[1] == 2
    assert chunking(131056, 1) == (131056, 1)
    worst = np.full((1, 26208 * 5), -128, np.int64)   # level 6 at s = 5: 5 x 26208 products
    assert int((worst * worst).sum()) <= 2**31 - 1


# --- layout and panels ------------------------------------------------------------------------

@pytest.mark.parametrize("s", (1, 2, 5, 8))
def test_level_operands_pair_slices_summing_to_the_level(s: int) -> None:
    p = SlicesPlan.of(100, 70, s)
    f_slice = [t for ch in range(p.nc) for t in range(1, s + 1) for _ in range(p.kc)]
    r_slice = [t for ch in range(p.nc) for t in range(s, 0, -1) for _ in range(p.kc)]
    assert len(f_slice) == p.ldq and p.ldq % ALIGN == 0 and p.rows % ALIGN == 0
    assert p.rows >= -(-100 // 16) * 16 + 15
    pairs = []
    for level in p.levels:
        for ch in range(p.nc):
            fo, ro = p.offsets(level, ch)
            k = p.level_k(level)
            assert fo % ALIGN == ro % ALIGN == 0 and ro + k <= p.ldq
            got = [(f_slice[fo + i], r_slice[ro + i]) for i in range(0, k, p.kc)]
            assert all(t + u == level for t, u in got)
            pairs += got
    assert sorted(set(pairs)) == sorted((t, u) for t in range(1, s + 1)
                                        for u in range(1, s + 1) if t + u <= s + 1)
    assert len(pairs) == p.nc * s * (s + 1) // 2


@pytest.mark.parametrize("block", ((0, 50, 0, 50), (0, 37, 37, 100), (5, 21, 40, 41),
                                   (64, 128, 64, 128)))
@pytest.mark.parametrize("width", (16, 32, 48, 1024))
def test_panels_cover_the_block_once(block: tuple[int, int, int, int], width: int) -> None:
    r0, r1, c0, c1 = block
    sym = r0 == c0 and r1 == c1
    count = np.zeros((r1 - r0, c1 - c0), int)
    for a, b, j0, j1 in panels(r0, r1, c0, c1, width):
        assert b - a <= width and j1 == c1
        count[a - r0:b - r0, j0 - c0:j1 - c0] += 1
    if sym:
        upper = np.triu(np.ones_like(count))
        assert ((count >= upper) & (count <= 1)).all()  # the upper triangle, each once
    else:
        assert (count == 1).all()


def test_panel_rows_and_triangle_work() -> None:
    p = SlicesPlan.of(8192, 8192, 5)
    assert panel_rows(8192, p) == 2048
    assert panel_rows(8192, p, width=1024) == 1024
    assert panel_rows(8192, p, budget=100 << 20) == 640        # 5 planes x 8192 x 4 B a row
    assert panel_rows(8192, p, budget=1) == ALIGN
    full = p.int8_ops(8192, 8192)
    assert full == 2 * 8192**3 * 15
    assert block_ops(0, 8192, 0, 8192, p, 1024) == full * 36 // 64  # 8 panels of 1024
    assert block_ops(0, 8192, 0, 8192, p) == full * 10 // 16        # 4 panels of 2048


# --- the engine on the CPU: fake CuPy, kernel models, a cuBLAS model through pointers ------------

class _Dev(np.ndarray):
    @property
    def data(self):  # type: ignore[override]  # CuPy's MemoryPointer
        return types.SimpleNamespace(ptr=self.__array_interface__["data"][0])


class FakeGpu:
    """NumPy for CuPy; remembers every allocation so that pointers can be resolved."""

    def __init__(self) -> None:
        self.allocs: list[np.ndarray] = []
        self.gemms = 0

    def module(self) -> types.ModuleType:
        m = types.ModuleType("cupy")
        m.__getattr__ = lambda name: getattr(np, name)  # type: ignore[method-assign]

        def alloc(make):
            def f(shape, dtype=float):
                a = make(shape, dtype).view(_Dev)
                self.allocs.append(a)
                return a
            return f

        m.empty = alloc(lambda s, d: np.full(s, np.nan if np.dtype(d).kind == "f" else 99, d))
        m.zeros = alloc(np.zeros)
        m.ascontiguousarray = lambda a, dtype=None: np.ascontiguousarray(a, dtype).view(_Dev)
        return m

    def view(self, ptr: int, dtype, shape, strides) -> np.ndarray:
        span = sum((n - 1) * s for n, s in zip(shape, strides)) + np.dtype(dtype).itemsize
        for a in self.allocs:
            base = a.__array_interface__["data"][0]
            if base <= ptr and ptr + span <= base + a.nbytes:
                return np.ndarray(shape, dtype, buffer=a.reshape(-1).view(np.uint8),
                                  offset=ptr - base, strides=strides)
        raise AssertionError(f"GEMM operand at {ptr:#x} (+{span} bytes) not in one allocation")

    def gemm(self, m, n, k, a_ptr, lda, b_ptr, ldb, c_ptr, ldc) -> None:
        """cuBLAS TN: op(A) = A^T (m x k, A column-major k x m), B (k x n), C (m x n, ldc)."""
        assert all(v % ALIGN == 0 for v in (m, n, k, lda, ldb, ldc, a_ptr % 16, b_ptr % 16))
        assert lda >= k and ldb >= k and ldc >= m
        a = self.view(a_ptr, np.int8, (m, k), (lda, 1)).astype(np.int64)
        b = self.view(b_ptr, np.int8, (k, n), (1, ldb)).astype(np.int64)
        c = self.view(c_ptr, np.int32, (m, n), (4, 4 * ldc))
        assert (np.abs(a) @ np.abs(b)).max() <= slices.INT32_MAX  # no partial sum overflows
        c[...] = (a @ b).astype(np.int32)
        self.gemms += 1


def _stats_model(grid, block, args) -> None:
    z, valid, extent, stats, m, _ = args
    assert block == (slices_cuda.DEFINES["SLICES_STATS_BLOCK"],) and grid == (min(m, 1 << 20),)
    stats[...] = row_stats(z, valid)
    if isinstance(extent, np.ndarray):  # the kernel takes c and |z|_1 from the extent
        ok = stats[:, -2] > 0
        np.testing.assert_array_equal(extent[:, 0][ok] / slices.TOP, stats[ok, -2])
        stats[:, -1] = np.where(ok, extent[:, 1], 0.0)


def _column_max_model(grid, block, args) -> None:
    a, valid, out, m, cols = (v if isinstance(v, np.ndarray) else int(v) for v in args)
    assert grid == (1,) and block == (slices_cuda.DEFINES["SLICES_STATS_BLOCK"],)
    assert a.shape == (m, cols) and out.shape == (cols + 1,) and (a >= 0).all()
    out[:cols] = a.max(axis=0) if m else 0.0
    out[cols] = float(bool(np.all(valid)))


def _split_model(grid, block, args) -> None:
    z, c, f, r, m, n, rows, s, kc, nc = (a if isinstance(a, np.ndarray) else int(a) for a in args)
    sb = slices_cuda.DEFINES["SLICES_SPLIT_BLOCK"]
    assert block == (sb,) and grid == (-(-(nc * kc // 8) // sb), min(rows, 65535))
    assert f.shape == r.shape == (rows, nc * s * kc)
    pad = np.zeros((DIGITS, rows, nc * kc), np.int8)
    pad[:, :m, :n] = split_digits(z, c)
    for ch in range(nc):
        for t in range(s):
            part = pad[t, :, ch * kc:(ch + 1) * kc]
            f[:, (ch * s + t) * kc:(ch * s + t + 1) * kc] = part
            r[:, (ch * s + s - 1 - t) * kc:(ch * s + s - t) * kc] = part


def _combine_model(grid, block, args) -> None:
    prod, c, out, plane, ldp, rows, cols, s, nc, gr0, gc0, ldo, or0, oc0, mirror, fin = (
        a if isinstance(a, np.ndarray) else int(a) for a in args)
    t = slices_cuda.DEFINES["SLICES_COMBINE_TILE"]
    assert block == (t, slices_cuda.DEFINES["SLICES_COMBINE_ROWS"])
    assert grid == (-(-cols // t), -(-rows // t))
    flat = prod.reshape(-1)
    ii, jj = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    levels = [sum(flat[((lv - 2) * nc + ch) * plane + ii * ldp + jj].astype(np.int64)
                  for ch in range(nc)) for lv in range(2, s + 2)]
    val = slices.combine(levels, c[gr0:gr0 + rows], c[gc0:gc0 + cols])
    if fin:
        val = np.where(gr0 + ii == gc0 + jj, 1.0, np.clip(val, -1, 1))
    o = out.reshape(-1)
    here = (or0 + ii <= oc0 + jj) if mirror else np.ones_like(ii, bool)
    o[((or0 + ii) * ldo + oc0 + jj)[here]] = val[here]
    if mirror:
        there = or0 + ii < oc0 + jj
        o[((oc0 + jj) * ldo + or0 + ii)[there]] = val[there]


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> FakeGpu:
    g = FakeGpu()
    monkeypatch.setitem(sys.modules, "cupy", g.module())
    monkeypatch.setattr(cuda, "_kernel", lambda expr: CORR_MODELS[expr.split("<")[0]])
    models = {"slices_row_stats": _stats_model, "slices_split": _split_model,
              "slices_combine": _combine_model, "slices_column_max": _column_max_model}
    monkeypatch.setattr(slices_cuda, "_kernel", lambda name: models[name])
    monkeypatch.setattr(slices_cuda, "gemm_s8", g.gemm)
    monkeypatch.setattr(slices_cuda, "read_async", lambda a: lambda h=np.array(a): h.copy())
    return g


BLOCKS = ((0, 1, 0, 1), (0, 37, 0, 37), (0, 20, 20, 37), (3, 19, 25, 36), (16, 37, 16, 37))


def _engine_choice(z: np.ndarray, valid: np.ndarray, precision: str) -> int:
    """The engine's rule: s from the a-priori bound (row maxima and 1-norms of the valid rows)
    when that is at most the nominal s, else from the digit statistics."""
    with np.errstate(invalid="ignore"):
        a = np.where(valid[:, None], np.abs(z), 0.0)
    s = choose_slices(precision, z.shape[1],
                      slices.apriori_maxima(a.max(axis=1).max() / slices.TOP,
                                            a.sum(axis=1).max()))
    if s <= slices.NOMINAL_SLICES[precision] and precision not in slices_cuda.STATS_FIRST:
        return s
    return choose_slices(precision, z.shape[1], _maxima(z, valid))


def _finished(raw: np.ndarray, r0: int, c0: int) -> np.ndarray:
    """What the combine's finish makes of raw coefficients at (r0, c0): clipped, diagonal 1."""
    i, j = np.indices(raw.shape)
    return np.where(r0 + i == c0 + j, 1.0, np.clip(raw, -1, 1))


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("kind", KINDS)
def test_apriori_choice_meets_the_target_and_never_undercuts(precision: str, kind: str) -> None:
    """apriori_maxima's bound holds (it is looser than the digit statistics' bound for every s)
    and the engine's rule still meets the precision's target."""
    z, valid = _normalise(_data(kind, 30, 257, 3))
    if not valid.any():
        return
    a = np.where(valid[:, None], np.abs(z), 0.0)
    light = slices.apriori_maxima(a.max() / slices.TOP, a.sum(axis=1).max())
    full = _maxima(z, valid)
    for s in range(1, DIGITS + 1):
        assert slices_error_bound(s, 257, light) >= slices_error_bound(s, 257, full)
    s = _engine_choice(z, valid, precision)
    maxima = light if s == choose_slices(precision, 257, light) else full
    assert slices_error_bound(s, 257, maxima) <= slices.TARGETS[precision] or s == DIGITS


@pytest.mark.parametrize("chunked", (False, True))
@pytest.mark.parametrize("width", (16, 1024))
@pytest.mark.parametrize("precision", PRECISIONS)
def test_engine_blocks_equal_emulation(gpu: FakeGpu, precision: str, width: int, chunked: bool,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    if chunked:  # at most 128 / s products of 2^14 per GEMM: kc of 16 to 64 (s >= 2)
        monkeypatch.setattr(slices, "INT32_MAX", 2**14 * 128)
    monkeypatch.setattr(slices_cuda, "PANEL_ROWS", width)
    x = _data("const", 37, 70, 5).astype(np.float32)
    eng = cuda.SlicesEngine(x, precision)
    plan = eng.prep.plan
    assert eng.all_valid is False and (plan.nc > 1) == (chunked and plan.s > 1)
    z, valid = _normalise(x)
    want, s = emulate(z, valid, slices=eng.slices)
    assert s == eng.slices == _engine_choice(z, valid, precision)
    for r0, r1, c0, c1 in BLOCKS:
        got = eng.block(r0, r1, c0, c1)
        np.testing.assert_array_equal(got, _finished(want[r0:r1, c0:c1], r0, c0))
    runs = sum(len(panels(*b, panel_rows(b[3] - b[2], plan, width))) for b in BLOCKS)
    assert gpu.gemms == runs * s * plan.nc


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("precision", PRECISIONS)
def test_speculative_split(gpu: FakeGpu, precision: str, kind: str,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The split runs with the nominal s while the maxima are read back, and once more only
    when the choice differs; the blocks are the emulation's either way."""
    splits: list[int] = []
    real = slices_cuda.split
    monkeypatch.setattr(slices_cuda, "split", lambda z, c, plan: splits.append(plan.s) or
                        real(z, c, plan))
    x = _data(kind, 23, 90, 4).astype(np.float32)
    eng = cuda.SlicesEngine(x, precision)
    nominal = slices.NOMINAL_SLICES[precision]
    assert splits == ([nominal] if eng.slices == nominal else [nominal, eng.slices])
    z, valid = _normalise(x)
    want, _ = emulate(z, valid, slices=eng.slices)
    np.testing.assert_array_equal(eng.block(0, 23, 0, 23), _finished(want, 0, 0))


@pytest.mark.parametrize("kind", ("walk", "const", "spiky"))
@pytest.mark.parametrize("precision", PRECISIONS)
def test_engine_whole_and_tiled_vs_numpy(gpu: FakeGpu, precision: str, kind: str) -> None:
    x = _data(kind, 45, 129, 6).astype(np.float32)
    eng = cuda.SlicesEngine(x, precision)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = np.corrcoef(x.astype(np.float64))
    bound = error_bound("int8_slices", precision, 129)
    for got in (full_matrix(eng), fill_tiled(eng, np.full((45, 45), 7.0), 13)):
        assert np.array_equal(np.isnan(got), np.isnan(want))
        ok = ~np.isnan(want)
        assert np.abs(got[ok] - want[ok]).max() <= bound
        assert np.array_equal(got, got.T, equal_nan=True)


def test_variant_default_for_large_problems(monkeypatch: pytest.MonkeyPatch) -> None:
    """int8_slices comes first in rank order but is preferred only from SLICES_PREFER_M
    series of SLICES_PREFER_N values: smaller problems go to tc_gram (the smallest to
    fused_small), unless it is named."""
    from warplab.core import registry
    from warplab.families.corr.spec import CorrProblem

    monkeypatch.setattr(cuda, "slices_ok", lambda: (True, ""))
    monkeypatch.setattr(cuda, "gram_ok", lambda: (True, ""))
    v = registry.get("corrcoef", "int8_slices")
    assert v.backend == "cuda" and registry.variants("corrcoef", "cuda")[0] is v

    def choice(m: int, n: int, name: str | None = None) -> str:
        p = CorrProblem(m, n, np.dtype(np.float32), "float64", True)
        return registry.choose("corrcoef", "cuda", p, name).name

    m0, n0 = cuda.SLICES_PREFER_M, cuda.SLICES_PREFER_N
    assert choice(8192, 8192) == choice(m0, n0) == "int8_slices"
    assert choice(m0 - 1, n0) == choice(8192, n0 - 1) == choice(8, 600) == "tc_gram"
    assert choice(8, 64) == "fused_small"  # small problems: one launch (small_cuda.py)
    assert choice(8, 64, "int8_slices") == "int8_slices"


def test_naming_int8_slices_without_a_gpu_says_why() -> None:
    """The variant is cuda-only: on the cpu backend, or where CuPy is missing, one clear
    error names it and the backend it needs."""
    from warplab.core.errors import DeviceUnavailableError

    x = np.arange(12.0).reshape(3, 4)
    with pytest.raises(ValueError, match="int8_slices.*cuda backend"):
        warplab.corrcoef(x, variant="int8_slices", device="cpu")
    if not warplab.core.device.cuda_available():
        with pytest.raises(DeviceUnavailableError, match="int8_slices"):
            warplab.corrcoef(x, variant="int8_slices")


def _read_backs(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What the GPU reads back for the rows ``z`` (``slices_cuda.column_maxima`` of their
    extent, ``digit_maxima``), in NumPy."""
    stats = row_stats(z)
    valid = 1.0 if bool((stats[:, -2] > 0).all()) else 0.0
    ext = np.array([np.abs(z).max(initial=0.0), stats[:, -1].max(initial=0.0), valid])
    return ext, np.append(stats.max(axis=0), valid)


@pytest.mark.parametrize("precision", ["float64", "float32", "tf32"])
@pytest.mark.parametrize("light", [True, False])
def test_choice_over_parts_is_the_choice_over_their_rows(precision, light):
    """The choice made from each part's read-backs (maxima of maxima) equals the one made
    from all their rows at once, including data whose a-priori bound needs more than the
    nominal s; without the digit statistics it is None exactly when it needs them."""
    rng = np.random.default_rng(5)
    for n in (300, 5000):
        x = np.cumsum(rng.normal(size=(96, n)), axis=1)
        z = x - x.mean(axis=1, keepdims=True)
        z /= np.linalg.norm(z, axis=1, keepdims=True)
        e, d = _read_backs(z)
        whole = Choice.of(precision, n, [e], [d], light)
        cut = [_read_backs(z[a:b]) for a, b in ((0, 10), (10, 64), (64, 96))]
        assert Choice.of(precision, n, [c[0] for c in cut], [c[1] for c in cut], light) == whole
        if not light:
            assert whole.s == emulate(z, precision=precision)[1]
        quick = Choice.of(precision, n, [c[0] for c in cut], None, light)
        needs = not light or choose_slices(precision, n, apriori_maxima(e[0] / TOP, e[1])) > \
            NOMINAL_SLICES[precision]
        assert (quick is None) == needs
        assert quick is None or quick == whole

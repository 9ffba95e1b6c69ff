"""``warplab.histogram`` and weighted ``warplab.bincount`` have NumPy's semantics (NumPy backend),
and the host plans of the CUDA kernels reproduce NumPy's counts: ``binning.even_bins_reference``
/ ``edges_bins_reference`` (the kernels' arithmetic in NumPy), the byte lookup tables and folds,
against ``np.histogram`` (property tests over every dtype, bin count, range kind, NaN/inf).
"""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import warplab
from conftest import builtin_kind, last_ran
from warplab.families.histogram import binning, numeric, numeric_cuda, numeric_variants

DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16",
          "float32", "float64")
NBINS = (1, 2, 255, 256, 257, 4096)
PROP = settings(max_examples=200, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def outcome(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            return fn(), None, [x.category for x in w]
        except Exception as e:  # compared with NumPy's
            return None, (builtin_kind(e), str(e)), [x.category for x in w]


def same(got, want) -> None:
    (h, e), (wh, we) = got, want
    assert isinstance(h, np.ndarray) and isinstance(e, np.ndarray)
    assert h.dtype == wh.dtype and e.dtype == we.dtype
    np.testing.assert_array_equal(h, wh)
    np.testing.assert_array_equal(e, we)


def check_like_numpy(*args, **kw) -> None:
    got, gerr, gw = outcome(lambda: warplab.histogram(*args, **kw))
    want, werr, ww = outcome(lambda: np.histogram(*args, **kw))
    assert gerr == werr
    assert gw == ww
    if werr is None:
        same(got, want)


# ----------------------------------------------------------------------------- the API


def test_returns_numpy_pair_and_records_numpy() -> None:
    h, e = warplab.histogram(np.arange(10.0), 5)
    same((h, e), np.histogram(np.arange(10.0), 5))
    assert last_ran() == "numpy"


def test_signature_is_numpys() -> None:
    a = np.arange(12.0)
    w = np.linspace(0, 1, 12)
    same(warplab.histogram(a, 4, (0, 12), True, w), np.histogram(a, 4, (0, 12), True, w))
    same(warplab.histogram(a, bins=3, range=(1, 7), density=None, weights=w),
         np.histogram(a, bins=3, range=(1, 7), weights=w))
    same(warplab.histogram(a), np.histogram(a))


@pytest.mark.parametrize("dtype", DTYPES + ("bool",))
@pytest.mark.parametrize("nbins", NBINS)
def test_dtypes_and_bins(dtype: str, nbins: int) -> None:
    rng = np.random.default_rng(nbins)
    a = rng.integers(0, 200, 1000).astype(dtype)
    for r in (None, (0, 100), (-1.5, 300.25)):
        check_like_numpy(a, nbins, r)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_nan_inf_out_of_range(dtype: str) -> None:
    a = np.array([np.nan, np.inf, -np.inf, 0.0, 1.0, 1.0, 5.0, -3.0], dtype)
    check_like_numpy(a)                      # autodetected range of [nan, nan]: ValueError
    check_like_numpy(a[1:])                  # [-inf, inf]: ValueError
    check_like_numpy(a, 4, (0, 1))           # NaN/inf/outside dropped, 1.0 in the last bin
    check_like_numpy(a, [-np.inf, 0, np.inf])
    check_like_numpy(a, 3, (0, np.inf))      # supplied range not finite


def test_range_rules() -> None:
    a = np.array([1.0, 2.0, 3.0])
    check_like_numpy(a, 3, (3, 1))
    check_like_numpy(a, 3, (0, 1, 2))
    check_like_numpy(a, 3, (2, 2))
    check_like_numpy(np.array([], np.float32))
    check_like_numpy(np.array([], np.int64), 3, (5, 9))
    check_like_numpy(np.full(4, 7, np.int8))
    check_like_numpy(np.full(4, 2048, np.float16))  # Too many bins


def test_bins_rules() -> None:
    a = np.arange(5)
    for bins in (0, -2, 2.5, "nosuch", [3, 2], [[1, 2], [3, 4]], [1.0, np.nan, 3.0], [4],
                 np.array([0, 2, 2, 5]), "auto", "fd", np.int64(3)):
        check_like_numpy(a, bins)


def test_weights_and_density() -> None:
    a = np.arange(20) % 7
    for w in (np.ones(20, np.int32), np.linspace(0, 1, 20).astype(np.float32),
              np.arange(20) % 2 == 0, np.arange(20) * (1 + 1j), np.ones(19), np.ones((4, 5))):
        for density in (None, True):
            check_like_numpy(a, 4, weights=w, density=density)
            check_like_numpy(a, [0, 1, 5, 6], weights=w, density=density)
    check_like_numpy(a, "auto", weights=np.ones(20))  # estimator + weights: TypeError


def test_bool_warns_like_numpy() -> None:
    with pytest.warns(RuntimeWarning, match="Converting input from bool"):
        h, _ = warplab.histogram(np.array([True, False, True]), 2)
    assert h.tolist() == [1, 2]


def test_sequences_bytes_and_files(tmp_path: Path) -> None:
    same(warplab.histogram([1, 2, 2, 3], 3), np.histogram([1, 2, 2, 3], 3))
    raw = bytes(range(256)) * 3
    same(warplab.histogram(raw, 256, (0, 256)),
         np.histogram(np.frombuffer(raw, np.uint8), 256, (0, 256)))
    f = tmp_path / "d.bin"
    f.write_bytes(raw)
    same(warplab.histogram(f, 16), np.histogram(np.frombuffer(raw, np.uint8), 16))


def test_variant_names() -> None:
    a = np.arange(10.0)
    same(warplab.histogram(a, 3, variant="numpy"), np.histogram(a, 3))
    same(warplab.histogram(a, [0, 5, 9], variant="numpy"), np.histogram(a, [0, 5, 9]))
    with pytest.raises(ValueError, match="nosuch"):
        warplab.histogram(a, 3, variant="nosuch")
    with pytest.raises(ValueError, match="even_private"):
        warplab.histogram(a, 3, variant="even_private", device="cpu")


def test_registry_families() -> None:
    assert warplab.variants("histogram_even", "cpu") == ["numpy"]
    assert warplab.variants("histogram_even", "cuda") == [
        "bytes", "even_fast", "even_private", "even_global", "numpy_host"]
    assert warplab.variants("histogram_edges", "cuda") == [
        "bytes", "edges_private", "edges_global", "numpy_host"]
    assert warplab.variants("bincount") == ["numpy", "private_sums_vec", "private_sums",
                                            "global_atomics", "global_atomics_vec"]
    assert {"byte_histogram", "histogram", "bincount"} <= set(warplab.__all__)


def test_cost_model() -> None:
    p = numeric.NumericProblem("histogram_even", 1000, np.dtype(np.float32), 256,
                               np.dtype(np.float64), True, 2)
    assert p.bytes_moved == 2 * 4000 + 8000 + 8 * 256
    assert numeric_variants.byte_path_bytes_moved(
        numeric.NumericProblem("histogram_even", 1000, np.dtype(np.uint8), 10, None, True)
    ) == 1000 + 80


# ------------------------------------------------------------------- str data, byte_histogram


@pytest.mark.parametrize("fn", [warplab.byte_histogram, warplab.histogram, warplab.bincount])
def test_str_is_a_path_with_a_clear_message(fn) -> None:
    with pytest.raises(FileNotFoundError) as ei:
        fn("hello world")
    msg = str(ei.value)
    assert "'hello world'" in msg and "a str is taken as a file path" in msg
    assert "s.encode()" in msg and "\n" not in msg


def test_bytes_like_are_data() -> None:
    for x in (b"hello world", bytearray(b"hello world"), memoryview(b"hello world")):
        got = warplab.byte_histogram(x)
        assert got[ord("l")] == 3 and got.sum() == 11
    assert warplab.byte_histogram("hello world".encode())[ord("o")] == 2


# --------------------------------------------------------------------------- weighted bincount


@pytest.mark.parametrize("wdtype", ["bool", "int8", "uint64", "float16", "float32", "float64"])
def test_bincount_weights_like_numpy(wdtype: str) -> None:
    x = np.array([0, 1, 1, 3, 7])
    w = np.array([1, 2, 3, 4, 5]).astype(wdtype)
    for minlength in (0, 3, 10):
        got = warplab.bincount(x, w, minlength)
        want = np.bincount(x, w, minlength)
        assert got.dtype == want.dtype == np.float64
        np.testing.assert_array_equal(got, want)
    assert last_ran() == "numpy"


def test_bincount_weights_errors_like_numpy() -> None:
    x = np.array([0, 2, 1])
    for args, kw in (((x, np.ones(2)), {}), ((x, np.ones(3, complex)), {}),
                     ((x, np.ones(3)), {"minlength": -1}), ((x,), {"minlength": None}),
                     ((np.array([], np.int64), np.ones(4)), {}), ((x, [1, 2, 3]), {}),
                     ((x, np.ones(3)), {"minlength": 1.5})):
        got, gerr, _ = outcome(lambda: warplab.bincount(*args, **kw))
        want, werr, _ = outcome(lambda: np.bincount(*args, **kw))
        assert (gerr is None) == (werr is None), (args, kw, gerr, werr)
        if werr is None:
            assert got.dtype == want.dtype and np.array_equal(got, want)
        else:
            assert gerr[0] is werr[0]


def test_bincount_variant_family_with_weights() -> None:
    x = np.array([0, 1, 1])
    np.testing.assert_array_equal(warplab.bincount(x, [1.0, 2.0, 3.0], variant="numpy"),
                                  [1.0, 5.0])
    with pytest.raises(ValueError, match="private_sums"):
        warplab.bincount(x, [1.0, 2.0, 3.0], variant="private_sums", device="cpu")


@PROP
@given(x=hnp.arrays(np.int32, st.integers(0, 500), elements=st.integers(0, 3000)),
       wd=st.sampled_from(["float64", "float32", "int16", "bool"]),
       minlength=st.integers(0, 4000))
def test_prop_bincount_weights(x: np.ndarray, wd: str, minlength: int) -> None:
    w = (np.arange(x.size) % 5).astype(wd)
    got, want = warplab.bincount(x, w, minlength), np.bincount(x, w, minlength)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------------ the kernels' host plans


@st.composite
def even_problems(draw):
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    n = draw(st.integers(0, 200))
    if dtype.kind == "f":
        wide = draw(st.booleans())
        elems = st.floats(width=8 * dtype.itemsize) if wide else \
            st.floats(-1000, 1000, width=8 * dtype.itemsize)
    else:
        info = np.iinfo(dtype)
        elems = st.integers(int(info.min), int(info.max)) if draw(st.booleans()) else \
            st.integers(max(int(info.min), -300), min(int(info.max), 300))
    a = draw(hnp.arrays(dtype, n, elements=elems))
    nbins = draw(st.one_of(st.sampled_from(NBINS), st.integers(1, 50)))
    kind = draw(st.sampled_from(["none", "ints", "floats", "f32", "f16", "big"]))
    r = None
    if kind == "ints":
        lo = draw(st.integers(-400, 400))
        r = (lo, lo + draw(st.integers(0, 700)))
    elif kind == "floats":
        lo = draw(st.floats(-1e4, 1e4))
        r = (lo, lo + draw(st.floats(0, 1e4)))
    elif kind in ("f32", "f16"):
        t = np.float32 if kind == "f32" else np.float16
        lo = draw(st.floats(-1e3, 1e3, width=16))
        r = (t(lo), t(lo + draw(st.floats(0, 1e3, width=16))))
    elif kind == "big":
        r = (draw(st.integers(-(2 ** 63), 0)), draw(st.integers(1, 2 ** 64 - 1)))
    return a, nbins, r


def plan_histogram(a: np.ndarray, nbins: int, r) -> tuple:
    """The cuda branch's computation with the kernel replaced by its NumPy model."""
    first, last = numeric.outer_edges(r, a.size, lambda: (a.min(), a.max()))
    edges = numeric.even_edges(first, last, nbins, a.dtype)
    plan = binning.plan_even(a.dtype, first, last, nbins, edges)
    if not plan.kernel_ok:  # the API runs NumPy on the host then: its result or its error
        np.histogram(a, nbins, r)
        return None, edges, plan
    idx = binning.even_bins_reference(a, plan)
    return np.bincount(idx[idx >= 0], minlength=nbins), edges, plan


@PROP
@given(p=even_problems())
@example(p=(np.array([0.0], np.float16), 1, (-65520, 1)))  # range beyond float16: NumPy fails
def test_prop_even_plan_reproduces_numpy(p) -> None:
    a, nbins, r = p
    want, werr, _ = outcome(lambda: np.histogram(a, nbins, r))
    got, gerr, _ = outcome(lambda: plan_histogram(a, nbins, r))
    assert gerr == werr
    if werr is not None:
        return
    counts, edges, plan = got
    np.testing.assert_array_equal(edges, want[1])
    assert edges.dtype == want[1].dtype
    if counts is None:  # NumPy itself runs (the plan says why); must be rare and justified
        assert plan.why in ("non-finite edges", "NumPy's index leaves the bins",
                            "range outside the data dtype's finite values"), plan.why
        return
    np.testing.assert_array_equal(counts, want[0])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("nbins", NBINS)
def test_common_plans_run_on_the_kernel(dtype: str, nbins: int) -> None:
    """Ordinary calls never fall back to NumPy: the automatic range, Python-number ranges."""
    a = np.random.default_rng(1).integers(0, 100, 1000).astype(dtype)
    for r in (None, (0, 1), (0, 100), (-0.5, 99.5), (0.1, 0.7)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                counts, edges, plan = plan_histogram(a, nbins, r)
            except ValueError:  # float16's "Too many bins"
                assert dtype == "float16"
                continue
        assert plan.kernel_ok, plan.why
        np.testing.assert_array_equal(counts, np.histogram(a, nbins, r)[0])


def test_plan_precision_rules() -> None:
    """NumPy's arithmetic dtype: float32 data divides in float32 with the range from the data
    or float32 scalars, in float64 with Python numbers (uint64 / float64 divisor)."""
    f32 = np.dtype(np.float32)

    def plan(first, last, n=8, dt=f32):
        return binning.plan_even(dt, first, last, n, numeric.even_edges(first, last, n, dt))

    assert plan(np.float32(0), np.float32(3)).p_dtype == np.float32
    assert plan(0, 3).p_dtype == np.float64 and plan(0.0, 3.0).p_dtype == np.float64
    assert plan(0, 4).rdenom_p == 0.25 and plan(0, 3).rdenom_p is None
    p16 = plan(np.float16(0), np.float16(2), dt=np.dtype(np.float16))
    assert p16.e_dtype == p16.p_dtype == np.float16 and p16.rdenom_p == 0.5
    assert plan(0, 1, dt=np.dtype(np.int64)).e_dtype == np.float64
    assert plan(np.float32(0), np.float32(1), dt=np.dtype(np.int8)).e_dtype == np.float32


def test_keep_bounds() -> None:
    kb = binning.keep_bounds
    assert kb(np.uint8, -5, 300) == (0, 255)
    assert kb(np.int8, 2.5, 7.5) == (3, 7)
    assert kb(np.uint8, 300, 400) is None
    lo, hi = kb(np.float32, 0.1, 0.7)  # float32 compared with Python floats in float32
    assert lo == np.float32(0.1) and hi == np.float32(0.7)
    lo, hi = kb(np.float32, np.float64(0.1), np.float64(0.7))  # in float64
    assert lo > np.float32(0.1) or float(lo) >= 0.1
    assert float(hi) <= 0.7
    lo, hi = kb(np.int64, 0.0, 2.0 ** 63)  # int64 vs float64: the top values round to 2^63
    assert hi == np.iinfo(np.int64).max


@st.composite
def edges_problems(draw):
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    a = draw(hnp.arrays(dtype, st.integers(0, 200)))
    et = draw(st.sampled_from(["float64", "float32", "int64", "int16", "uint64", "float16"]))
    e = np.sort(draw(hnp.arrays(np.dtype(et), st.integers(2, 40))))
    return a, e


@PROP
@given(p=edges_problems())
def test_prop_edges_plan_reproduces_numpy(p) -> None:
    a, e = p
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want, werr, _ = outcome(lambda: np.histogram(a, e))
    if werr is not None:
        return
    plan = binning.plan_edges(a.dtype, e)
    if not plan.kernel_ok:
        assert np.isnan(e.astype(np.float64)).any() or plan.t_dtype not in binning.KERNEL_DTYPES
        return
    idx = binning.edges_bins_reference(a, plan)
    np.testing.assert_array_equal(np.bincount(idx[idx >= 0], minlength=plan.nbins), want[0])


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("bins", [1, 3, 255, 256, 1000, [0, 50.5, 51, 255], [-200, 0, 200]])
@pytest.mark.parametrize("r", [None, (0, 256), (-1, 1), (10.5, 20.5), (0, 1e6)])
def test_byte_tables_and_folds(dtype: str, bins, r) -> None:
    a = np.random.default_rng(0).integers(0, 256, 3000).astype(np.uint8).view(dtype)
    want = np.histogram(a, bins, r)
    counts256 = np.bincount(a.view(np.uint8), minlength=256)
    h, e = numeric.fold_byte_counts(np.dtype(dtype), counts256, bins, r)
    same((h, e), want)
    if r is None and np.ndim(bins) == 0:
        return
    lut, e2 = numeric.byte_lut(np.dtype(dtype), bins, r)
    np.testing.assert_array_equal(e2, want[1])
    nb = want[0].size
    keep = lut[a.view(np.uint8)]
    np.testing.assert_array_equal(np.bincount(keep[keep >= 0], minlength=nb), want[0])
    m = numeric_variants._lut_mapping(lut, nb)
    if m is not None:
        np.testing.assert_array_equal(m.apply_to_counts(counts256)[:nb], want[0])


def test_layouts() -> None:
    cfg = numeric_cuda.DEFAULT

    def L(n: int, w: bool, e: int, **k: bool) -> numeric_cuda.Layout:
        return numeric_cuda.layout_for(n, w, e, cfg, **k)

    assert L(256, False, 4) == numeric_cuda.Layout(0, 1, True, 32768 + 257 * 4)
    assert L(257, False, 8).layout == 1 and L(257, False, 8).copies == 8
    assert L(4096, False, 8) == numeric_cuda.Layout(1, 2, False, 32768)
    assert L(8192, False, 4).layout == 1 and L(8193, False, 4).layout == 2
    assert L(128, True, 8).layout == 0 and L(129, True, 8).layout == 1
    assert L(4096, True, 8).layout == 1 and L(4097, True, 8).layout == 2
    assert L(100, False, 4, private=False).layout == 2
    for n in (1, 7, 256, 300, 4096, 8192, 100000):
        for w in (False, True):
            assert L(n, w, 8).smem <= cfg.smem_limit
    assert numeric_cuda.private_fits(4096, True, cfg)
    assert numeric_cuda.private_fits(8192, False, cfg)


def test_layouts_follow_the_config() -> None:
    """A config's budget and block change the layouts; the default is unchanged."""
    big = numeric_cuda.LaunchConfig(acc_budget=64 * 1024, block=512)
    assert big.smem_limit == 80 * 1024 and numeric_cuda.DEFAULT.smem_limit == 48 * 1024
    assert numeric_cuda.layout_for(8193, False, 4, big).layout == 1
    assert numeric_cuda.layout_for(1025, False, 0, big).copies == 15  # 64 KiB / 4100 B
    assert not numeric_cuda.private_fits(8193, False, numeric_cuda.DEFAULT)
    assert numeric_cuda.blocks_needed(1024, 4, numeric_cuda.DEFAULT) == 1
    assert numeric_cuda.blocks_needed(1025, 4, numeric_cuda.DEFAULT) == 2
    assert numeric_cuda.blocks_needed(2048, 4, big) == 1
    assert big.options != numeric_cuda.DEFAULT.options
    assert hash(big) != hash(numeric_cuda.DEFAULT) and big == numeric_cuda.LaunchConfig(
        acc_budget=64 * 1024, block=512)


def test_bits() -> None:
    b = numeric_cuda.bits
    assert b(-1, np.int8) == 0xFF and b(-2, np.int64) == 2 ** 64 - 2
    assert b(1.0, np.float32) == 0x3F800000 and b(1.0, np.float16) == 0x3C00
    assert b(1.0, np.float64) == 0x3FF0000000000000 and b(None, np.float64) == 0


def test_kernel_names_in_source() -> None:
    """Every kernel the host launches is in numeric.cu or a header it includes."""
    cu = Path(numeric_cuda.__file__).with_name("numeric.cu")
    src = cu.read_text()
    for header in re.findall(r'#include "(numeric_\w+\.cuh)"', src):
        src += cu.with_name(header).read_text()
    for name in ("hist_even", "hist_even_fast", "hist_edges", "bincount_w", "bincount_wvec",
                 "minmax_partials", "minmax_atomic"):
        assert f"{name}(" in src
    for c in numeric_cuda.C_TYPE.values():
        assert "typedef" in src and (f" {c};" in src or c == "f16")
    assert "-DWARPLAB_NUM_BLOCK=256" in numeric_cuda.DEFAULT.options


@PROP
@given(p=even_problems(), edges=st.booleans(), weighted=st.booleans(),
       density=st.sampled_from([None, False, True]))
def test_prop_public_histogram_matches_numpy(p, edges: bool, weighted: bool, density) -> None:
    a, nbins, r = p
    bins = np.linspace(-100, 100, nbins % 50 + 2) if edges else nbins
    w = (np.arange(a.size) % 3).astype(np.float32) if weighted else None
    got, gerr, gw = outcome(lambda: warplab.histogram(a, bins, r, density, w))
    want, werr, ww = outcome(lambda: np.histogram(a, bins, r, density, w))
    assert gerr == werr and gw == ww
    if werr is None:
        same(got, want)

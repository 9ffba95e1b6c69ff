"""GPU tests of NumPy's histogram and weighted bincount (``numeric_cuda.py``, ``numeric.cu``):
counts and edges bit for bit against NumPy, across dtypes, bin counts, ranges, NaN/inf and
out-of-range data, with the variant that ran checked through ``warplab.record_variants()``.
Run with ``pytest -m gpu`` on the GPU machine (``-s`` shows the throughput lines)."""
from __future__ import annotations

import time

import numpy as np
import pytest

import warplab
from conftest import clear_ran
from warplab.families.histogram import api as hapi
from warplab.families.histogram import minmax_cuda, numeric_cuda

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)
cupy = pytest.importorskip("cupy")

DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16",
          "float32", "float64")
NBINS = (1, 2, 255, 256, 257, 4096)
#: The even-bins defaults: even_fast where its one-FMA bound holds for the plan, else
#: even_private (test_even_fast_bit_for_bit checks which one each plan takes).
EVEN_DEFAULTS = ("even_fast", "even_private")
RANGES = (None, (0, 1), (-3, 3), (-2.5, 7.25), "f32", (0, 256))


def data(dtype: str, n: int, seed: int, specials: bool = True) -> np.ndarray:
    """Values around the bins: normal * 3, small integers, and NaN/inf/0/huge ones."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        a = (rng.standard_normal(n) * 3).astype(dt)
        if specials and n > 16:
            a[rng.integers(0, n, 8)] = np.array(
                [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, 3.0, 1e4], np.float64).astype(dt)
        return a
    info = np.iinfo(dt)
    a = rng.integers(max(info.min, -1000), min(info.max, 1000), n, endpoint=True).astype(dt)
    if n > 4:
        a[:2] = [info.min, info.max]
    return a


def ran_all() -> list[tuple[str, str, str]]:
    from conftest import _RAN

    return [(r.family, r.variant, r.backend) for r in _RAN[0]]


def assert_numpy(got, want, exact: bool = True) -> None:
    (h, e), (wh, we) = got, want
    assert isinstance(h, cupy.ndarray) and isinstance(e, cupy.ndarray)
    assert h.dtype == wh.dtype and e.dtype == we.dtype
    np.testing.assert_array_equal(e.get(), we)
    if exact:
        np.testing.assert_array_equal(h.get(), wh)
    else:
        np.testing.assert_allclose(h.get(), wh, rtol=1e-6, atol=1e-9)


def numpy_or_error(fn):
    try:
        return fn(), None
    except Exception as e:  # compared with warplab's
        return None, (type(e), str(e))


# --------------------------------------------------------------------------- evenly spaced


@pytest.mark.parametrize("rng_", RANGES, ids=str)
@pytest.mark.parametrize("nbins", NBINS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_even_bit_for_bit(dtype: str, nbins: int, rng_) -> None:
    h = data(dtype, 100_003, nbins)
    if rng_ == "f32":
        rng_ = (np.float32(-1.5), np.float32(2.0))
    if rng_ is None and h.dtype.kind == "f":
        h = h[np.isfinite(h)]
    want, err = numpy_or_error(lambda: np.histogram(h, nbins, rng_))
    clear_ran()
    if err:
        with pytest.raises(err[0]) as ei:
            warplab.histogram(cupy.asarray(h), nbins, rng_)
        assert str(ei.value) == err[1]
        return
    assert_numpy(warplab.histogram(cupy.asarray(h), nbins, rng_), want)
    if h.dtype.itemsize == 1:
        assert ran_all()[0] == ("histogram_even", "bytes", "cuda")
        assert ran_all()[-1][0] == "histogram"
    else:
        assert len(ran_all()) == 1 and ran_all()[0][1] in EVEN_DEFAULTS


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "uint64"])
def test_even_global_variant(dtype: str) -> None:
    h = data(dtype, 50_001, 1)
    cases = ((257, (-3, 3)), (4096, (-5.0, 5.0)), (20_000, (-10, 10)))
    if dtype == "float16":  # float16 edges: NumPy's "Too many bins" beyond ~1000 bins here
        cases = ((257, (-3, 3)), (1000, (-100, 100)))
    for nbins, r in cases:
        want = np.histogram(h, nbins, r)
        assert_numpy(warplab.histogram(cupy.asarray(h), nbins, r, variant="even_global"), want)
        clear_ran()
        assert_numpy(warplab.histogram(cupy.asarray(h), nbins, r), want)
        assert ran_all()[-1][1] in (EVEN_DEFAULTS if nbins <= 8192 else ("even_global",))


def test_nan_inf_errors_on_device() -> None:
    for bad in (np.nan, np.inf, -np.inf):
        h = np.array([1.0, bad, 2.0], np.float32)
        with pytest.raises(ValueError, match="autodetected range") as ei:
            warplab.histogram(cupy.asarray(h))
        with pytest.raises(ValueError) as ni:
            np.histogram(h)
        assert str(ei.value) == str(ni.value)


def test_empty_constant_and_density() -> None:
    for h in (np.zeros(0, np.float32), np.full(1000, 5, np.int32), np.full(9, 2.5, np.float64)):
        for r in (None, (2, 2), (0, 10)):
            assert_numpy(warplab.histogram(cupy.asarray(h), 4, r), np.histogram(h, 4, r))
    h = data("float32", 10_000, 2, specials=False)
    assert_numpy(warplab.histogram(cupy.asarray(h), 33, density=True),
                 np.histogram(h, 33, density=True))


def test_host_input_numpy_out_and_chunks() -> None:
    h = data("float32", (1 << 20) + 3, 3)
    want = np.histogram(h, 256, (-4, 4))
    got = warplab.histogram(h, 256, (-4, 4))
    assert isinstance(got[0], np.ndarray) and got[0].dtype == want[0].dtype
    np.testing.assert_array_equal(got[0], want[0])
    chunked = numeric_cuda.LaunchConfig(max_device_chunk=40_003)
    np.testing.assert_array_equal(hapi.histogram_with(chunked, h, 256, (-4, 4))[0], want[0])
    hf = h[np.isfinite(h)]
    np.testing.assert_array_equal(warplab.histogram(hf, 100)[0], np.histogram(hf, 100)[0])


def test_unaligned_views() -> None:
    h = data("float32", 5000, 4, specials=False)
    d = cupy.asarray(h)
    for off in range(1, 9):
        want = np.histogram(h[off:], 64, (-3, 3))
        assert_numpy(warplab.histogram(d[off:], 64, (-3, 3)), want)
        assert_numpy(warplab.histogram(d[off:-off], 64, (-3, 3)), np.histogram(h[off:-off], 64,
                                                                              (-3, 3)))


def test_weights_even() -> None:
    h = data("float32", 200_001, 6)
    rng = np.random.default_rng(0)
    cases = [(rng.integers(0, 9, h.size).astype(np.float64), True),
             (rng.random(h.size), False), (rng.random(h.size).astype(np.float32), False),
             (rng.integers(-5, 5, h.size).astype(np.int32), True),
             (rng.integers(0, 2, h.size) > 0, True),
             ((rng.integers(0, 3, h.size) + 1j * rng.integers(0, 3, h.size)), True)]
    for w, exact in cases:
        for nbins in (64, 1000, 4096, 5000):
            want = np.histogram(h, nbins, (-4, 4), weights=w)
            clear_ran()
            got = warplab.histogram(cupy.asarray(h), nbins, (-4, 4), weights=cupy.asarray(w))
            assert_numpy(got, want, exact)
            assert ran_all()[-1][1] in (EVEN_DEFAULTS if nbins <= 4096 else ("even_global",))


@pytest.mark.parametrize("rng_", [(-3, 3), (-2.5, 7.25), "f32", (0, 1), None], ids=str)
@pytest.mark.parametrize("nbins", NBINS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint16", "int64"])
def test_even_fast_bit_for_bit(dtype: str, nbins: int, rng_) -> None:
    """even_fast (the one-FMA bin) on random data plus every edge and its neighbouring values:
    NumPy's counts; where its bound does not hold the variant refuses (ValueError)."""
    h = data(dtype, 100_003, nbins)
    if rng_ == "f32":
        rng_ = (np.float32(-1.5), np.float32(2.0))
    if h.dtype.kind == "f":
        h = h[np.isfinite(h)] if rng_ is None else h
        e = np.histogram_bin_edges(h, nbins, rng_).astype(h.dtype)
        h = np.concatenate([h, e, np.nextafter(e, h.dtype.type(np.inf)),
                            np.nextafter(e, h.dtype.type(-np.inf))])
    want = np.histogram(h, nbins, rng_)
    for minmax in ("partials", "atomic"):
        try:
            clear_ran()
            got = hapi.histogram_with(numeric_cuda.LaunchConfig(minmax=minmax), cupy.asarray(h),
                                      nbins, rng_, variant="even_fast")
        except ValueError as e:
            assert "does not support" in str(e)
            return
        assert_numpy(got, want)
        assert ran_all() == [("histogram_even", "even_fast", "cuda")]
    clear_ran()
    assert_numpy(warplab.histogram(cupy.asarray(h), nbins, rng_), want)  # the default: even_fast
    assert ran_all()[-1] == ("histogram_even", "even_fast", "cuda")


def test_even_fast_launch_options() -> None:
    h = data("float32", (1 << 22) + 5, 11)
    want = np.histogram(h, 256, (-4, 4))
    for cfg in ({"unroll": 4, "prefetch": 1}, {"block": 512}, {"unroll": 8}):
        config = numeric_cuda.LaunchConfig(**cfg)
        assert_numpy(hapi.histogram_with(config, cupy.asarray(h), 256, (-4, 4),
                                         variant="even_fast"), want)
        assert_numpy(hapi.histogram_with(config, cupy.asarray(h), 256, (-4, 4)), want)


# --------------------------------------------------------------------------- the byte path


@pytest.mark.parametrize("dtype", ["uint8", "int8", "bool"])
@pytest.mark.parametrize("bins,r", [(256, (0, 256)), (10, None), (255, (0, 255)),
                                    (256, None), (1000, None), (7, (-3.5, 100))])
def test_byte_path(dtype: str, bins: int, r) -> None:
    h = np.random.default_rng(1).integers(0, 256, 1_000_003).astype(np.uint8)
    h = h.view(np.int8) if dtype == "int8" else (h > 100 if dtype == "bool" else h)
    with pytest.warns(RuntimeWarning) if dtype == "bool" else _nothing():
        want = np.histogram(h, bins, r)
    clear_ran()
    with pytest.warns(RuntimeWarning) if dtype == "bool" else _nothing():
        got = warplab.histogram(cupy.asarray(h), bins, r)
    assert_numpy(got, want)
    assert ran_all()[0] == ("histogram_even", "bytes", "cuda")
    assert ran_all()[1] == ("histogram", warplab.variants("histogram", "cuda")[0], "cuda")


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def test_uint8_256_bins_is_the_byte_kernel_without_sync() -> None:
    d = cupy.asarray(np.random.default_rng(2).integers(0, 256, 1 << 24).astype(np.uint8))
    clear_ran()
    got = warplab.histogram(d, 256, (0, 256))
    assert ran_all() == [("histogram_even", "bytes", "cuda"),
                         ("histogram", warplab.variants("histogram", "cuda")[0], "cuda")]
    assert_numpy(got, np.histogram(d.get(), 256, (0, 256)))


# --------------------------------------------------------------------------- edges arrays


@pytest.mark.parametrize("dtype", DTYPES)
def test_edges_bit_for_bit(dtype: str) -> None:
    h = data(dtype, 100_001, 7)
    for edges in ([-3, -1, 0, 0, 2, 1000], np.array([-2.5, 0.5, 3.0], np.float32),
                  [-np.inf, 0, np.inf], np.linspace(-5, 5, 4097), np.linspace(-5, 5, 9001),
                  np.array([2 ** 62, 2 ** 63 - 1], np.int64)):
        want = np.histogram(h, edges)
        clear_ran()
        assert_numpy(warplab.histogram(cupy.asarray(h), edges), want)
        fam, var, _ = ran_all()[0]
        assert fam == "histogram_edges"
        if h.dtype.itemsize > 1:
            assert var == ("edges_private" if len(edges) <= 8193 else "edges_global")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_subnormals_bit_for_bit(dtype: str) -> None:
    """Subnormal values next to edges at zero (and subnormal edges): NumPy's counts. CuPy
    compiles with --ftz=true, so every single-precision comparison or cast in the bin
    arithmetic must keep subnormals (numeric.cu's ieee_* helpers); found on the H100 when
    -1.4e-45 landed in the bin above 0.0."""
    t = np.dtype(dtype)
    fi = np.finfo(t)
    tiny = np.array([fi.smallest_subnormal, fi.smallest_subnormal * 3, fi.tiny / 2, fi.tiny,
                     fi.tiny * 2], t)
    vals = np.concatenate([tiny, -tiny, np.array([0.0, -0.0, 1.0, -1.0], t)])
    h = np.concatenate([np.tile(vals, 50), data(dtype, 20_001, 3, specials=False)])
    ranges = [(-3, 3), (0, 1), (-1, 0), (0.0, float(fi.tiny)),
              (-float(fi.tiny), float(fi.tiny)), None]
    for nbins in (1, 2, 256, 4096):
        for rng_ in ranges:
            want, err = numpy_or_error(lambda: np.histogram(h, nbins, rng_))
            if err:
                continue
            for variant in (None, "even_private", "even_fast", "even_global"):
                try:
                    got = warplab.histogram(cupy.asarray(h), nbins, rng_, variant=variant)
                except ValueError as e:
                    assert variant is not None and "does not support" in str(e)
                    continue
                assert_numpy(got, want)
    for edges in (np.array([-1.0, 0.0, 1.0], t), np.concatenate([-tiny[::-1], [0], tiny])):
        assert_numpy(warplab.histogram(cupy.asarray(h), edges), np.histogram(h, edges))
    lo, hi = minmax_cuda.device_min_max(cupy.asarray(h))
    assert (lo, hi) == (h.min(), h.max())


def test_edges_weighted_and_nan_edges() -> None:
    h = data("float64", 50_000, 8)
    w = np.random.default_rng(3).random(h.size)
    want = np.histogram(h, [-1, 0, 0.5, 2, 2, 7], weights=w)
    assert_numpy(warplab.histogram(cupy.asarray(h), [-1, 0, 0.5, 2, 2, 7],
                                   weights=cupy.asarray(w)), want, exact=False)
    clear_ran()
    assert_numpy(warplab.histogram(cupy.asarray(h), [1, np.nan, 3]),
                 np.histogram(h, [1, np.nan, 3]))
    assert ran_all()[-1] == ("histogram_edges", "numpy_host", "cuda")


# --------------------------------------------------------------------------- weighted bincount


@pytest.mark.parametrize("xdtype", ["uint8", "bool", "int16", "int32", "int64", "uint64"])
@pytest.mark.parametrize("wdtype", ["float64", "float32", "float16", "int64", "bool"])
@pytest.mark.parametrize("hi", [1, 127, 128, 4095, 4096, 100_000])
def test_bincount_weighted(xdtype: str, wdtype: str, hi: int) -> None:
    rng = np.random.default_rng(hi)
    top = 1 if xdtype == "bool" else min(hi, 255 if xdtype == "uint8" else
                                        (32767 if xdtype == "int16" else hi))
    x = rng.integers(0, top, 300_001, endpoint=True).astype(xdtype)
    w = rng.integers(0, 4, x.size).astype(wdtype)  # integer-valued: exact in any order
    for minlength in (0, 200_000):
        clear_ran()
        got = warplab.bincount(cupy.asarray(x), cupy.asarray(w), minlength)
        want = np.bincount(x, w, minlength)
        assert isinstance(got, cupy.ndarray) and got.dtype == want.dtype
        np.testing.assert_array_equal(got.get(), want)
        nbins = int(x.max()) + 1
        assert ran_all() == [("bincount", "private_sums_vec" if nbins <= 4096 else
                              "global_atomics", "cuda")]


@pytest.mark.parametrize("variant", ["private_sums_vec", "global_atomics_vec"])
@pytest.mark.parametrize("xdtype", ["uint8", "int16", "int32", "int64"])
@pytest.mark.parametrize("wdtype", ["float64", "float32", "float16", "int64", "bool"])
def test_bincount_weighted_vec(variant: str, xdtype: str, wdtype: str) -> None:
    rng = np.random.default_rng(7)
    hi = 255 if xdtype == "uint8" else 4095
    x = rng.integers(0, hi, 300_007, endpoint=True).astype(xdtype)
    w = rng.integers(0, 4, x.size).astype(wdtype)
    dx, dw = cupy.asarray(x), cupy.asarray(w)
    for off in (0, 1, 3):  # aligned (vector loads) and not (the scalar kernel)
        got = warplab.bincount(dx[off:], dw[off:], variant=variant)
        np.testing.assert_array_equal(got.get(), np.bincount(x[off:], w[off:]))


def test_bincount_weighted_random_floats_and_host() -> None:
    rng = np.random.default_rng(4)
    x = rng.integers(0, 1000, 1_000_000)
    w = rng.standard_normal(x.size)
    got = warplab.bincount(x, w)
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, np.bincount(x, w), rtol=1e-9, atol=1e-9)
    got = warplab.bincount(cupy.asarray(x), cupy.asarray(w), variant="global_atomics")
    np.testing.assert_allclose(got.get(), np.bincount(x, w), rtol=1e-9, atol=1e-9)


def test_bincount_weighted_errors() -> None:
    x = cupy.asarray(np.array([0, 2, 1]))
    with pytest.raises(ValueError, match="same length"):
        warplab.bincount(x, cupy.ones(2))
    with pytest.raises(TypeError, match="complex128"):
        warplab.bincount(x, cupy.ones(3, dtype=complex))
    with pytest.raises(ValueError, match="negative"):
        warplab.bincount(cupy.asarray(np.array([-1, 0])), cupy.ones(2))
    got = warplab.bincount(cupy.zeros(0, np.int64), cupy.ones(5), minlength=3)
    assert got.dtype == np.int64 and got.tolist() == [0, 0, 0]


@pytest.mark.parametrize("method", ["partials", "atomic"])
def test_device_min_max(method: str) -> None:
    cfg = numeric_cuda.LaunchConfig(minmax=method)
    for dt in DTYPES:
        h = data(dt, 70_001, 9, specials=False)
        lo, hi = minmax_cuda.device_min_max(cupy.asarray(h), cfg)
        assert lo == h.min() and hi == h.max() and lo.dtype == h.dtype
    f = data("float32", 70_001, 10)
    lo, hi = minmax_cuda.device_min_max(cupy.asarray(f), cfg)
    assert np.isnan(lo) and np.isnan(hi)
    for v in (np.array([-np.inf, 1.0], np.float32), np.array([-0.0, 0.0], np.float64),
              np.array([True, True])):
        lo, hi = minmax_cuda.device_min_max(cupy.asarray(v), cfg)
        assert lo == v.min() and hi == v.max()


# --------------------------------------------------------------------------- throughput


def _gbps(fn, nbytes: int, reps: int = 10) -> float:
    fn()
    cupy.cuda.Device().synchronize()
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    cupy.cuda.Device().synchronize()
    return nbytes * reps / (time.perf_counter() - t) / 1e9


def test_throughput_report(capsys: pytest.CaptureFixture) -> None:
    """Prints GB/s (data bytes read once / wall time, host-timed, syncs included) for the
    predictions in the hand-over: float32 1 GiB, bins=256; weighted bincount."""
    n = 1 << 28  # 1 GiB of float32
    d = cupy.random.default_rng(0).standard_normal(n, dtype=cupy.float32)
    lines = []
    for r in (None, (-4, 4), (-4.0, 4.0), (np.float32(-4), np.float32(4))):
        g = _gbps(lambda: warplab.histogram(d, 256, r), n * 4)
        lines.append(f"histogram float32 1 GiB bins=256 range={r}: {g:.0f} GB/s")
    g = _gbps(lambda: warplab.histogram(d, 256, (-4, 4), variant="even_fast"), n * 4)
    lines.append(f"histogram float32 1 GiB bins=256 range=(-4, 4) even_fast: {g:.0f} GB/s")
    g = _gbps(lambda: warplab.histogram(d, 256, variant="even_fast"), n * 4)
    lines.append(f"histogram float32 1 GiB bins=256 range=None even_fast + atomic min/max: "
                 f"{g:.0f} GB/s (2 reads)")
    g = _gbps(lambda: cupy.histogram(d, 256, (-4, 4)), n * 4, reps=3)
    lines.append(f"cupy.histogram same (range=(-4, 4)): {g:.0f} GB/s")
    try:
        from warplab.lab.campaigns.histogram.comparators import cccl_histogram_even_range

        g = _gbps(lambda: cccl_histogram_even_range(d, 256, -4.0, 4.0), n * 4, reps=3)
        lines.append(f"cuda.compute.histogram_even same: {g:.0f} GB/s")
    except ImportError as exc:
        lines.append(f"cuda.compute.histogram_even skipped: {exc}")
    x = cupy.random.default_rng(1).integers(0, 100, n // 2, dtype=cupy.int32)
    w = cupy.random.default_rng(2).random(n // 2, dtype=cupy.float64)
    for hi in (100, 4096, 1 << 20):
        xs = x if hi == 100 else cupy.random.default_rng(3).integers(0, hi, n // 2,
                                                                       dtype=cupy.int32)
        g = _gbps(lambda: warplab.bincount(xs, w), xs.nbytes + w.nbytes, reps=5)
        v = "private_sums_vec" if hi <= 4096 else "global_atomics_vec"
        gv = _gbps(lambda: warplab.bincount(xs, w, variant=v), xs.nbytes + w.nbytes, reps=5)
        lines.append(f"bincount {hi} bins {v}: {gv:.0f} GB/s")
        gc = _gbps(lambda: cupy.bincount(xs, w), xs.nbytes + w.nbytes, reps=3)
        lines.append(f"bincount int32+float64 weights, {hi} bins: warplab {g:.0f} GB/s, "
                     f"cupy {gc:.0f} GB/s")
    with capsys.disabled():
        print("\n" + "\n".join(lines))
    assert all(" 0 GB/s" not in s for s in lines)

"""The cuda branch of ``histogram`` / weighted ``bincount`` on a machine without a GPU: the real
API and launch-plan code (``api.py``, ``numeric_cuda.py``: plans, bit-packed kernel arguments,
layouts, chunking, the byte path, dtypes, density) against NumPy, with CuPy replaced by NumPy
arrays and each kernel launch by a model of ``numeric.cu`` that decodes the launch's arguments
as the kernel does (``from_bits``) and applies the kernel's arithmetic
(``binning.even_bins_reference`` / ``edges_bins_reference``).

What this cannot check is the CUDA transcription itself; ``tests/gpu/test_histogram_numeric_gpu
.py`` does, on the GPU. Skipped where a real CuPy is importable (the GPU tests run there).
"""
from __future__ import annotations

import importlib.util
import re
import sys
import types
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import warplab
from conftest import builtin_kind
from fake_cupy import Dev
from warplab.core import fastpath, registry
from warplab.families.histogram import api, binning, minmax_cuda, numeric, numeric_cuda
from warplab.families.histogram import cuda as hcuda
from warplab.families.histogram.cpu import byte_counts
from warplab.families.histogram.numeric_fast import even_fast_bins_reference

pytestmark = pytest.mark.skipif(importlib.util.find_spec("cupy") is not None,
                                reason="a real CuPy is present: the GPU tests cover this")

DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16",
          "float32", "float64")
NBINS = (1, 2, 255, 256, 257, 4096)
NAMES = {v: np.dtype(k) for k, v in numeric_cuda.C_TYPE.items()}


def _dev(a) -> Dev:
    return np.array(a).view(Dev)


def _fake_cupy() -> types.ModuleType:
    m = types.ModuleType("cupy")
    m.ndarray = Dev
    m.asarray = lambda a, dtype=None: _dev(np.asarray(a, dtype=dtype))
    m.zeros = lambda shape, dtype=float: np.zeros(shape, dtype).view(Dev)
    m.empty = lambda shape, dtype=float: np.empty(shape, dtype).view(Dev)
    m.full = lambda shape, v, dtype=None: np.full(shape, v, dtype).view(Dev)
    m.ascontiguousarray = lambda a: _dev(np.ascontiguousarray(a))
    m.concatenate = lambda xs: _dev(np.concatenate([np.asarray(x) for x in xs]))
    m.flatnonzero = np.flatnonzero
    m.asnumpy = lambda a: np.array(a).view(np.ndarray)
    m.bincount = lambda a, minlength=0: _dev(np.bincount(np.asarray(a), minlength=minlength))
    m.cuda = SimpleNamespace(Device=lambda *a: SimpleNamespace(id=0),
                             alloc=lambda size: np.empty(size, np.uint8).view(Dev).data,
                             runtime=SimpleNamespace(memGetInfo=lambda: (1 << 34, 1 << 35),
                                                     getDevice=lambda: 0),
                             get_current_stream=lambda: SimpleNamespace(synchronize=lambda: None))
    return m


def _from_bits(word, dtype: np.dtype):
    raw = int(word).to_bytes(8, "little")[:dtype.itemsize]
    return np.frombuffer(raw, dtype=dtype)[0]


LAUNCHES: list[tuple[str, numeric_cuda.Layout]] = []


def _template(expr: str) -> tuple[str, list[str]]:
    m = re.fullmatch(r"(\w+)<(.*)>", expr)
    return m.group(1), [x.strip() for x in m.group(2).split(",")]


def _model_launch(expr, group, lay, n, itemsize, args) -> None:
    """numeric.cu's kernels in NumPy, reading the launch's arguments as the kernel does."""
    name, targs = _template(expr)
    assert expr in group
    assert lay.smem <= numeric_cuda.DEFAULT.smem_limit and lay.copies >= 1
    assert targs[-1 if name.startswith("bincount") else -2] == str(lay.layout)
    LAUNCHES.append((name, lay))
    if name in ("hist_even", "hist_even_fast"):
        fast = None
        if name == "hist_even_fast":
            *args, scale, offset, delta, out_ = args
            args = (*args, out_)
            fast = (scale, offset, delta)
        (x, n_, w, edges, nbins, copies, lo, hi, first, denom, rdenom, pow2, n_b, out) = args
        D, E, P = (NAMES[t] for t in targs[:3])
        plan = SimpleNamespace(
            dtype=D, keep=(_from_bits(lo, D), _from_bits(hi, D)), e_dtype=E, p_dtype=P,
            first_e=_from_bits(first, E), denom_p=_from_bits(denom, P),
            rdenom_p=_from_bits(rdenom, P) if int(pow2) else None, n_p=_from_bits(n_b, P),
            nbins=int(nbins), edges=np.asarray(edges))
        assert np.asarray(edges).dtype == E and np.asarray(edges).size == int(nbins) + 1
        idx = binning.even_bins_reference(np.asarray(x)[:int(n_)], plan)
        if fast is not None:
            assert all(isinstance(c, np.float32) for c in fast)
            idx = even_fast_bins_reference(np.asarray(x)[:int(n_)], plan, fast)
    elif name == "hist_edges":
        (x, n_, w, edges, nbins, copies, out) = args
        D, T = (NAMES[t] for t in targs[:2])
        assert np.asarray(edges).dtype == T
        plan = SimpleNamespace(dtype=D, t_dtype=T, edges_t=np.asarray(edges), nbins=int(nbins))
        idx = binning.edges_bins_reference(np.asarray(x)[:int(n_)], plan)
    else:
        (x, n_, w, nbins, copies, out) = args
        idx = np.asarray(x)[:int(n_)].astype(np.int64)
        assert idx.size == 0 or (idx.min() >= 0 and idx.max() < int(nbins))
    x = np.asarray(x)
    assert x.flags.c_contiguous and x.dtype.itemsize == itemsize and x.size == n == int(n_)
    keep = idx >= 0
    bc = name.startswith("bincount")
    weighted = targs[-3 if not bc else -2] != "NoWeights"
    out = np.asarray(out)
    if weighted:
        wv = np.asarray(w)
        assert wv.size == x.size and wv.dtype == NAMES[targs[-3 if not bc else -2]]
        assert out.dtype == np.float64
        np.add.at(out, idx[keep], wv[keep].astype(np.float64))
    else:
        assert out.dtype == np.int64
        np.add.at(out, idx[keep], 1)


class _MinMax:
    """minmax_partials on 3 blocks."""

    def __call__(self, grid, block, args, shared_mem=0):
        if len(args) == 3:  # minmax_atomic: the keys of the minimum (complemented), maximum
            x, n, res = args
            x = np.asarray(x)[:int(n)]
            nan = np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.size, bool)
            ok = x[~nan]
            res[0] = ~np.uint64(_order_key(ok.min())) if ok.size else 0
            res[1] = _order_key(ok.max()) if ok.size else 0
            res[2] = 2 if nan.any() else 0
            return
        x, n, pmin, pmax, pflags = args
        x = np.asarray(x)[:int(n)]
        for b, part in enumerate(np.array_split(x, len(pflags))):
            nan = np.isnan(part) if part.dtype.kind == "f" else np.zeros(part.size, bool)
            ok = part[~nan]
            pflags[b] = (1 if ok.size else 0) | (2 if nan.any() else 0)
            if ok.size:
                pmin[b], pmax[b] = ok.min(), ok.max()


def _order_key(v: np.generic) -> int:
    """numeric.cu's order_key: the values' order as unsigned integers."""
    width = 8 * v.dtype.itemsize
    b = int.from_bytes(np.array(v).tobytes(), "little")
    sign = 1 << (width - 1)
    if v.dtype.kind == "f":
        return b ^ ((1 << width) - 1) if b & sign else b ^ sign
    return b ^ sign if v.dtype.kind == "i" else b


BYTE_RUNS: list[str] = []


def _model_byte_plan(expr: str, mapping, smem: int = 0) -> SimpleNamespace:
    """histogram.cu's launch plan: its kernel counts the bytes into the mapping's bins."""
    return SimpleNamespace(expr=expr, mapping=mapping, full=4)


def _model_byte_launch(plan, grid: int, block: int, data, bins) -> None:
    assert data.dtype == np.uint8
    BYTE_RUNS.append(plan.expr)
    bins += plan.mapping.apply_to_counts(byte_counts(np.asarray(data).reshape(-1)))


@pytest.fixture(autouse=True)
def fake_gpu(monkeypatch: pytest.MonkeyPatch):
    """CuPy -> NumPy, kernel launches -> models, the backend -> cuda (unless device='cpu')."""
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy())
    numeric_cuda._device_array.cache_clear()
    real_pick = registry.pick_backend

    def pick(family, device, variant, on_device):
        if device is not None and device.lower() == "cpu":
            return "cpu"
        if variant is not None and registry.get(family, variant).backend == "cpu":
            return "cpu"
        return "cuda"

    monkeypatch.setattr(registry, "pick_backend", pick)
    monkeypatch.setattr(numeric_cuda, "_launch", lambda expr, group, lay, n, isz, cfg, args:
                        _model_launch(expr, group, lay, n, isz, args))
    monkeypatch.setattr(numeric_cuda, "prepared",  # the plans' prepared launches
                        lambda expr, group, lay, n, isz, cfg: lambda args: _model_launch(
                            expr, group, lay, n, isz, args))
    monkeypatch.setattr(numeric_cuda, "_kernel", lambda expr, group, cfg: _MinMax())
    monkeypatch.setattr(numeric_cuda, "_grid", lambda *a: 3)
    monkeypatch.setattr(hcuda, "_plan", _model_byte_plan)
    monkeypatch.setattr(hcuda, "_launch", _model_byte_launch)
    # the pinned read of the min/max partials: plain host copies of the "device" arrays
    monkeypatch.setattr(minmax_cuda, "read_small", lambda *arrays: [a.get() for a in arrays])
    monkeypatch.setattr(fastpath, "read_small", lambda *arrays: [a.get() for a in arrays])
    LAUNCHES.clear()
    BYTE_RUNS.clear()
    fastpath.clear()  # launch records built on this fake stay with it
    yield real_pick
    fastpath.clear()
    numeric_cuda._device_array.cache_clear()


def ran() -> list[tuple[str, str, str]]:
    from conftest import _RAN, builtin_kind

    return [(r.family, r.variant, r.backend) for r in _RAN[0]]


def outcome(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            return fn(), None, [(x.category, str(x.message)) for x in w]
        except Exception as e:  # compared with NumPy's
            return None, (builtin_kind(e), str(e)), [(x.category, str(x.message)) for x in w]


def same_as_numpy(fn_ours, fn_np, exact_sums: bool = True) -> bool:
    """Same result (values, dtypes) or the same error as NumPy; True when NumPy raised."""
    got, gerr, gw = outcome(fn_ours)
    want, werr, ww = outcome(fn_np)
    assert gerr == werr, (gerr, werr)
    assert [c for c, _ in gw] == [c for c, _ in ww] or not ww, (gw, ww)
    if werr:
        return True
    (h, e), (wh, we) = got, want
    h, e = np.asarray(h), np.asarray(e)
    assert h.dtype == wh.dtype, (h.dtype, wh.dtype)
    assert e.dtype == we.dtype and e.shape == we.shape
    np.testing.assert_array_equal(e, we)
    if exact_sums or h.dtype.kind in "iub":
        np.testing.assert_array_equal(h, wh)
    else:
        np.testing.assert_allclose(h, wh, rtol=1e-6, atol=1e-9)
    return False


def sample(dtype: str, n: int, seed: int, specials: bool = True) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        a = (rng.standard_normal(n) * 3).astype(dt)
        if specials and n > 8:
            a[rng.integers(0, n, 4)] = np.array([np.nan, np.inf, -np.inf, 0.0], dt)
        return a
    info = np.iinfo(dt)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), n, endpoint=True).astype(dt)


# ------------------------------------------------------------------------- even bins


@pytest.mark.parametrize("nbins", NBINS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rng_", [None, (0, 1), (-3, 3), (-2.5, 7.25), "f32", (0, 256)])
def test_even_matches_numpy(dtype: str, nbins: int, rng_) -> None:
    a = sample(dtype, 3001, nbins)
    if rng_ == "f32":
        rng_ = (np.float32(-1.5), np.float32(2.0))
    if rng_ is None and np.dtype(dtype).kind == "f":
        a = a[np.isfinite(a)]
    if same_as_numpy(lambda: warplab.histogram(a, nbins, rng_),
                     lambda: np.histogram(a, nbins, rng_)):
        return  # NumPy's error ("Too many bins" for float16 edges), raised the same
    fam = ran()[-1]
    if np.dtype(dtype).itemsize == 1:
        assert fam[0] == "histogram" and BYTE_RUNS
        assert ("histogram_even", "bytes", "cuda") in ran()
    else:
        assert fam == ("histogram_even", even_default(), "cuda")
        assert LAUNCHES and LAUNCHES[-1][1].layout == (0 if nbins <= 256 else 1)


def even_default() -> str:
    """The even-bins default for the last launch: ``even_fast`` where its FMA bound holds for
    the plan (its kernel ran), else ``even_private``."""
    return "even_fast" if LAUNCHES[-1][0] == "hist_even_fast" else "even_private"


def test_even_fast_is_the_default_for_common_ranges() -> None:
    a = sample("float32", 5000, 256, specials=False)
    for rng_ in ((-4, 4), (np.float32(-4), np.float32(4)), (0.0, 1.0)):
        same_as_numpy(lambda: warplab.histogram(a, 256, rng_),
                      lambda: np.histogram(a, 256, rng_))
        assert ran()[-1] == ("histogram_even", "even_fast", "cuda")
        assert LAUNCHES[-1][0] == "hist_even_fast"


def test_automatic_range_nan_inf_errors() -> None:
    for bad in (np.nan, np.inf, -np.inf):
        a = np.array([1.0, bad, 2.0], np.float32)
        same_as_numpy(lambda: warplab.histogram(a), lambda: np.histogram(a))
    a = np.array([1, 2], np.int64)
    same_as_numpy(lambda: warplab.histogram(a, range=(3, 1)),
                  lambda: np.histogram(a, range=(3, 1)))


@pytest.mark.parametrize("dtype", ["float16", "float32", "int32", "uint8"])
def test_empty_and_constant(dtype: str) -> None:
    for a in (np.zeros(0, dtype), np.full(7, 5, dtype)):
        for r in (None, (2, 2), (0, 10)):
            same_as_numpy(lambda: warplab.histogram(a, 4, r), lambda: np.histogram(a, 4, r))


def test_too_many_bins_and_bad_bins() -> None:
    a = np.full(3, 2048, np.float16)
    for bins in (10, 0, -1, 2.5, [3, 2, 1], [[1, 2]], np.array([1.0, np.nan, 3.0])):
        same_as_numpy(lambda: warplab.histogram(a, bins), lambda: np.histogram(a, bins))


def test_bool_warns_and_counts_as_uint8() -> None:
    a = np.array([True, False, True])
    same_as_numpy(lambda: warplab.histogram(a), lambda: np.histogram(a))
    with pytest.warns(RuntimeWarning, match="Converting input from bool"):
        warplab.histogram(a, 2, (0, 2))


def test_float32_data_range_float64_arithmetic_plan() -> None:
    """range=(0, 1) with float32 data: NumPy divides in float64 (uint64 divisor); the plan
    says so and uses the exact reciprocal (a power of two)."""
    a = sample("float32", 1000, 1)
    warplab.histogram(a, 256, (0, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        edges = numeric.even_edges(0, 1, 256, np.dtype(np.float32))
    plan = binning.plan_even(np.float32, 0, 1, 256, edges)
    assert plan.e_dtype == np.float32 and plan.p_dtype == np.float64 and plan.rdenom_p == 1.0
    plan = binning.plan_even(np.float32, np.float32(-1), np.float32(2), 256,
                             numeric.even_edges(np.float32(-1), np.float32(2), 256,
                                                np.dtype(np.float32)))
    assert plan.p_dtype == np.float32 and plan.rdenom_p is None and plan.kernel_ok


def test_weighted_even_dtypes() -> None:
    a = sample("float32", 5000, 7)
    rng = np.random.default_rng(0)
    for w in (rng.random(a.size), rng.random(a.size).astype(np.float32),
              rng.integers(-5, 5, a.size).astype(np.int32), rng.integers(0, 2, a.size) > 0,
              (rng.random(a.size) + 1j * rng.random(a.size)).astype(np.complex64),
              rng.integers(0, 9, a.size).astype(np.float64)):
        exact = w.dtype.kind in "iub" or bool(np.all(w == np.round(w)))
        same_as_numpy(lambda: warplab.histogram(a, 64, (-4, 4), weights=w),
                      lambda: np.histogram(a, 64, (-4, 4), weights=w), exact_sums=exact)
        assert ran()[-1] == ("histogram_even", "even_fast", "cuda")


def test_weights_shape_mismatch_and_object_weights() -> None:
    a = sample("float64", 100, 2)
    same_as_numpy(lambda: warplab.histogram(a, weights=np.ones(99)),
                  lambda: np.histogram(a, weights=np.ones(99)))
    b = a[np.isfinite(a)]
    same_as_numpy(lambda: warplab.histogram(b, 5, weights=np.ones(b.size, object)),
                  lambda: np.histogram(b, 5, weights=np.ones(b.size, object)))
    assert ran()[-1] == ("histogram_even", "numpy_host", "cuda")


@pytest.mark.parametrize("density", [True, False])
def test_density(density: bool) -> None:
    a = sample("float32", 2000, 3)
    same_as_numpy(lambda: warplab.histogram(a, 33, (-2, 5), density=density),
                  lambda: np.histogram(a, 33, (-2, 5), density=density))
    w = np.random.default_rng(1).random(a.size)
    same_as_numpy(lambda: warplab.histogram(a, 33, (-2, 5), density=density, weights=w),
                  lambda: np.histogram(a, 33, (-2, 5), density=density, weights=w),
                  exact_sums=False)


def test_large_bin_counts_use_global_atomics() -> None:
    a = sample("float64", 20000, 4, specials=False)
    same_as_numpy(lambda: warplab.histogram(a, 10000, (-5, 5)),
                  lambda: np.histogram(a, 10000, (-5, 5)))
    assert ran()[-1] == ("histogram_even", "even_global", "cuda")  # beyond 8192 counts
    assert LAUNCHES[-1][1].layout == 2
    same_as_numpy(lambda: warplab.histogram(a, 8192, (-5, 5)),
                  lambda: np.histogram(a, 8192, (-5, 5)))
    assert ran()[-1] == ("histogram_even", "even_fast", "cuda")
    assert LAUNCHES[-1][1] == numeric_cuda.Layout(1, 1, False, 32768)


def test_named_global_variant_and_layouts() -> None:
    a = sample("float32", 4000, 5)
    for nbins in (3, 300, 9000):
        same_as_numpy(lambda: warplab.histogram(a, nbins, (-3, 3), variant="even_global"),
                      lambda: np.histogram(a, nbins, (-3, 3)))
        assert ran()[-1][1] == "even_global" and LAUNCHES[-1][1].layout == 2
    same_as_numpy(lambda: warplab.histogram(a, 9000, (-3, 3)),
                  lambda: np.histogram(a, 9000, (-3, 3)))
    assert ran()[-1][1] == "even_global"  # beyond the shared budget (8192 counts)


def test_estimator_and_complex_run_numpy_host() -> None:
    a = sample("float64", 500, 6, specials=False)
    same_as_numpy(lambda: warplab.histogram(a, "auto"), lambda: np.histogram(a, "auto"))
    assert ran()[-1] == ("histogram_even", "numpy_host", "cuda")
    c = a + 1j * a[::-1]
    same_as_numpy(lambda: warplab.histogram(c, 5), lambda: np.histogram(c, 5))
    assert ran()[-1] == ("histogram_even", "numpy_host", "cuda")


def test_host_chunks() -> None:
    cfg = numeric_cuda.LaunchConfig(max_device_chunk=4099)
    a = sample("float32", 20001, 8)
    w = np.random.default_rng(2).integers(0, 5, a.size).astype(np.float64)
    same_as_numpy(lambda: api.histogram_with(cfg, a, 100, (-3, 3), weights=w),
                  lambda: np.histogram(a, 100, (-3, 3), weights=w))
    assert sum(1 for n, _ in LAUNCHES if n.startswith("hist_even")) == -(-a.size * 12 // 4099)


def test_device_input_gives_device_output() -> None:
    a = sample("float32", 3000, 9, specials=False)
    w = np.random.default_rng(0).integers(0, 3, a.size).astype(np.float32)
    h, e = warplab.histogram(_dev(a), 16, weights=_dev(w))
    assert isinstance(h, Dev) and isinstance(e, Dev)
    wh, we = np.histogram(a, 16, weights=w)
    assert h.dtype == wh.dtype == np.float32 and e.dtype == we.dtype == np.float32
    np.testing.assert_array_equal(h.get(), wh)
    np.testing.assert_array_equal(e.get(), we)
    assert ("reduce" not in str(ran())) and LAUNCHES[-1][0] == "hist_even_fast"


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint16"])
@pytest.mark.parametrize("minmax", ["atomic", "partials"])
def test_even_fast_and_min_max(dtype: str, minmax: str) -> None:
    cfg = numeric_cuda.LaunchConfig(minmax=minmax)
    a = sample(dtype, 5001, 3)
    if a.dtype.kind == "f":
        a = a[np.isfinite(a)]
    for nbins, r in ((256, (-4, 4)), (100, (-2.5, 7.25)), (256, None), (4096, (-5.0, 5.0))):
        same_as_numpy(lambda: api.histogram_with(cfg, _dev(a), nbins, r, variant="even_fast"),
                      lambda: np.histogram(a, nbins, r))
        assert ran()[-1][1] == "even_fast" and LAUNCHES[-1][0] == "hist_even_fast"
    lo, hi = minmax_cuda.device_min_max(_dev(a), cfg)
    assert (lo, hi) == (a.min(), a.max()) and lo.dtype == a.dtype


def test_device_min_max_model_nan_and_values() -> None:
    a = np.array([3, -7, 12, 5], np.int16)
    lo, hi = minmax_cuda.device_min_max(_dev(a))
    assert (lo, hi) == (-7, 12) and lo.dtype == np.int16
    f = np.array([1.5, np.nan, -2.0], np.float32)
    lo, hi = minmax_cuda.device_min_max(_dev(f))
    assert np.isnan(lo) and np.isnan(hi) and lo.dtype == np.float32


# ------------------------------------------------------------------------- 1-byte data


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("bins", [1, 2, 10, 255, 256, 257, 4096])
@pytest.mark.parametrize("rng_", [None, (0, 256), (-10.5, 100), (0, 300), (5, 5)])
def test_bytes_path(dtype: str, bins: int, rng_) -> None:
    a = np.random.default_rng(bins).integers(0, 256, 5000).astype(np.uint8).view(dtype)
    same_as_numpy(lambda: warplab.histogram(a, bins, rng_),
                  lambda: np.histogram(a, bins, rng_))
    assert ("histogram_even", "bytes", "cuda") in ran()


def test_uint8_bins256_range0_256_is_the_identity_byte_kernel() -> None:
    a = np.random.default_rng(0).integers(0, 256, 10_000).astype(np.uint8)
    BYTE_RUNS.clear()
    same_as_numpy(lambda: warplab.histogram(a, 256, (0, 256)),
                  lambda: np.histogram(a, 256, (0, 256)))
    assert ran()[-2:] == [("histogram_even", "bytes", "cuda"),
                          ("histogram", warplab.variants("histogram", "cuda")[0], "cuda")]


def test_bytes_path_edges_arrays() -> None:
    a = np.random.default_rng(0).integers(0, 256, 5000).astype(np.uint8)
    for edges in ([0, 10, 200, 255], np.arange(0, 257, 3), [50.5, 60.5], [-1e9, 1e9],
                  np.linspace(0, 300, 600)):
        same_as_numpy(lambda: warplab.histogram(a, edges), lambda: np.histogram(a, edges))
        assert ("histogram_edges", "bytes", "cuda") in ran()


# ------------------------------------------------------------------------- edges arrays


@pytest.mark.parametrize("dtype", DTYPES)
def test_edges_arrays(dtype: str) -> None:
    a = sample(dtype, 4000, 11)
    for edges in ([-3, -1, 0, 0, 2, 1000], np.array([-2.5, 0.5, 3.0], np.float32),
                  [-np.inf, 0, np.inf], np.linspace(-5, 5, 4097), [1, 2], [7]):
        same_as_numpy(lambda: warplab.histogram(a, edges), lambda: np.histogram(a, edges))
        if np.dtype(dtype).itemsize > 1 and len(edges) >= 2:
            assert ran()[-1] == ("histogram_edges", "edges_private", "cuda")


def test_edges_with_nan_run_numpy() -> None:
    a = sample("float64", 100, 12, specials=False)
    same_as_numpy(lambda: warplab.histogram(a, [1, np.nan, 3]),
                  lambda: np.histogram(a, [1, np.nan, 3]))
    assert ran()[-1] == ("histogram_edges", "numpy_host", "cuda")


def test_edges_weighted() -> None:
    a = sample("float32", 3000, 13)
    w = np.random.default_rng(3).random(a.size)
    same_as_numpy(lambda: warplab.histogram(a, [-1, 0, 0.5, 2], weights=w),
                  lambda: np.histogram(a, [-1, 0, 0.5, 2], weights=w), exact_sums=False)


# ------------------------------------------------------------------------- properties

PROP = settings(max_examples=150, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])


@st.composite
def problems(draw):
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    n = draw(st.integers(0, 300))
    if dtype.kind == "f":
        elems = st.floats(width=8 * dtype.itemsize, allow_nan=True, allow_infinity=True,
                          min_value=None, max_value=None)
        if draw(st.booleans()):
            elems = st.floats(-100, 100, width=8 * dtype.itemsize)
    else:
        info = np.iinfo(dtype)
        elems = st.integers(int(info.min), int(info.max)) if draw(st.booleans()) else \
            st.integers(max(int(info.min), -300), min(int(info.max), 300))
    a = draw(hnp.arrays(dtype, n, elements=elems))
    bins = draw(st.one_of(st.sampled_from(NBINS), st.integers(1, 40)))
    kind = draw(st.sampled_from(["none", "ints", "floats", "f32", "edges"]))
    rng_ = None
    if kind == "ints":
        lo = draw(st.integers(-400, 400))
        rng_ = (lo, lo + draw(st.integers(0, 700)))
    elif kind == "floats":
        lo = draw(st.floats(-1e3, 1e3))
        rng_ = (lo, lo + draw(st.floats(0, 1e3)))
    elif kind == "f32":
        lo = draw(st.floats(-1e3, 1e3, width=32))
        rng_ = (np.float32(lo), np.float32(lo + draw(st.floats(0, 1e3, width=32))))
    elif kind == "edges":
        bins = np.sort(draw(hnp.arrays(np.float64, st.integers(1, 30),
                                       elements=st.floats(-500, 500))))
    w = None
    if draw(st.booleans()):
        w = draw(hnp.arrays(np.float64, n, elements=st.integers(-3, 3).map(float)))
    density = draw(st.sampled_from([None, True]))
    return a, bins, rng_, w, density


@PROP
@given(p=problems())
def test_prop_cuda_branch_matches_numpy(p) -> None:
    a, bins, rng_, w, density = p
    same_as_numpy(lambda: warplab.histogram(a, bins, rng_, density, w),
                  lambda: np.histogram(a, bins, rng_, density, w), exact_sums=not density)


# ------------------------------------------------------------------------- weighted bincount


@pytest.mark.parametrize("xdtype", ["uint8", "bool", "int16", "int32", "int64", "uint64"])
@pytest.mark.parametrize("wdtype", ["float64", "float32", "float16", "int64", "uint8", "bool"])
@pytest.mark.parametrize("hi", [1, 100, 5000])
def test_bincount_weighted(xdtype: str, wdtype: str, hi: int) -> None:
    rng = np.random.default_rng(hi)
    x = rng.integers(0, 2 if xdtype == "bool" else min(hi, 255 if xdtype == "uint8" else hi),
                     3000, endpoint=True).astype(xdtype)
    w = rng.integers(0, 4, x.size).astype(wdtype)
    for minlength in (0, 7000):
        got = warplab.bincount(x, w, minlength)
        want = np.bincount(x, w, minlength)
        assert got.dtype == want.dtype == np.float64
        np.testing.assert_array_equal(got, want)
    nbins = int(x.max()) + 1
    assert ran()[-1] == ("bincount", "private_sums_vec" if nbins <= 4096 else "global_atomics",
                         "cuda")


def test_bincount_weighted_errors_like_numpy() -> None:
    x = np.array([0, 2, 1])
    for w in (np.ones(2), np.ones((3, 1)), np.float64(1), np.ones(3, np.complex128),
              np.array(list("abc"))):
        got, gerr, _ = outcome(lambda: warplab.bincount(x, w))
        _, werr, _ = outcome(lambda: np.bincount(x, w))
        assert gerr == werr
    for args in ((np.array([-1, 0]), np.ones(2)), (np.array([], np.int64), np.ones(5))):
        got, gerr, _ = outcome(lambda: warplab.bincount(*args))
        want, werr, _ = outcome(lambda: np.bincount(*args))
        assert (gerr is None) == (werr is None)
        if werr is None:
            assert got.dtype == want.dtype and np.array_equal(got, want)


def test_bincount_weighted_device_and_chunks() -> None:
    cfg = numeric_cuda.LaunchConfig(max_device_chunk=1000)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 50, 5000)
    w = rng.random(x.size)
    np.testing.assert_allclose(api.bincount_with(cfg, x, w), np.bincount(x, w), rtol=1e-12)
    got = api.bincount_with(cfg, _dev(x), _dev(w), minlength=60)
    assert isinstance(got, Dev) and got.shape == (60,)
    np.testing.assert_allclose(got.get(), np.bincount(x, w, 60), rtol=1e-12)


@pytest.mark.parametrize("variant", ["private_sums_vec", "global_atomics_vec"])
def test_bincount_weighted_vec_variants(variant: str) -> None:
    rng = np.random.default_rng(5)
    x = rng.integers(0, 3000, 4001).astype(np.int32)
    w = rng.integers(0, 4, x.size).astype(np.float64)
    dx, dw = _dev(x), _dev(w)
    for xs, ws in ((dx, dw), (dx[1:], dw[1:])):  # aligned: bincount_wvec; not: bincount_w
        LAUNCHES.clear()
        got = warplab.bincount(xs, ws, variant=variant)
        np.testing.assert_array_equal(got.get(), np.bincount(xs.get(), ws.get()))
        aligned = all(a.__cuda_array_interface__["data"][0] % 16 == 0 for a in (xs, ws))
        assert LAUNCHES[-1][0] == ("bincount_wvec" if aligned else "bincount_w")

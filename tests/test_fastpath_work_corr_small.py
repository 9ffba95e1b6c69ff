"""``fused_small`` and ``corrcoef``'s plans without a GPU (``fake_cupy``; ``corr_small`` replaced
by the NumPy model of ``test_corr_emulated``): a warm ``corrcoef(x)`` of 8 x 64 is one
allocation, one launch and one synchronisation (the validity word is written by the kernel
into pinned memory: no copy), also with ``rowvar=False`` or ``variant="fused_small"`` named;
results, NaN rows and columns, NumPy's one warning (at the caller's line); every error, with
the same message, on a cold and a warm cache; the thresholds; every key component (dtype,
shape, strides, device, each keyword) gets its own plan."""
from __future__ import annotations

import sys
import threading
import warnings

import numpy as np
import pytest

import warplab
from fake_cupy import WORK, Dev, count_launch, dev, install
from test_corr_emulated import MODELS
from warplab.core import fastpath, registry, scalar
from warplab.families.corr import cuda, small_cuda


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch):
    g = install(monkeypatch)
    host = lambda a: a.view(np.ndarray) if isinstance(a, Dev) else a  # noqa: E731

    def counted(expr: str) -> object:
        model = MODELS[expr.split("<")[0]]
        return lambda grid, block, args: (count_launch(),
                                          model(grid, block, tuple(map(host, args))))

    monkeypatch.setattr(cuda, "_kernel", counted)
    monkeypatch.setattr(small_cuda, "_kernel", counted)
    monkeypatch.setattr(cuda, "gram_ok", lambda: (False, "no tensor cores in the fake"))
    monkeypatch.setattr(registry, "cuda_available", lambda: True)
    monkeypatch.setattr(small_cuda, "_FLAGS", small_cuda._Flags())
    cp = sys.modules["cupy"]  # the NumPy operations the full path's tiled_smem engine uses
    cp.triu = lambda a, k=0: np.triu(a, k).view(Dev)
    cp.isnan = lambda a: np.isnan(a).view(Dev)
    fastpath.clear()
    yield g
    fastpath.clear()


def _series(m: int = 8, n: int = 64, const: tuple[int, ...] = (), dtype=np.float32) -> Dev:
    x = np.cumsum(np.random.default_rng(m * n).standard_normal((m, n)), axis=1).astype(dtype)
    for i in const:
        x[i] = 0.25
    return dev(x)


def _numpy(x) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.corrcoef(np.asarray(x).astype(np.float64))


def _same(got, want) -> None:
    got = np.asarray(got)
    assert got.dtype == np.float64 and got.shape == want.shape
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=0, atol=1e-12)
    assert (got == got.T)[ok].all()
    assert got[np.isnan(got)].view(np.uint64).tolist() == \
        [0x7FF8000000000000] * int(np.isnan(got).sum())


def test_warm_call_is_one_launch(gpu) -> None:
    x = _series()
    with warplab.record_variants() as ran:
        first = warplab.corrcoef(x)
    assert [r.variant for r in ran] == ["fused_small"] and WORK["pinned"] == 1
    WORK.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every series varies: no warning
        got = warplab.corrcoef(x)
    assert dict(WORK) == {"empty": 1, "launch": 1, "sync": 1}
    for r in (first, got):
        assert type(r) is scalar.array_type()
        _same(r, _numpy(x))
        assert (np.diag(r) == 1).all() and np.abs(r).max() <= 1


@pytest.mark.parametrize("const,nan_row,inf_row", [(3, None, None), (0, 5, None),
                                                   (1, 2, 6)])
def test_constant_and_non_finite_series_warn_once_at_the_caller(gpu, const, nan_row,
                                                                inf_row) -> None:
    x = _series(const=(const,))
    if nan_row is not None:
        x[nan_row, 7] = np.nan
    if inf_row is not None:
        x[inf_row, 9] = np.inf
    bad = {i for i in (const, nan_row, inf_row) if i is not None}
    for _ in range(2):  # cold and warm record
        with pytest.warns(RuntimeWarning, match="invalid value encountered in divide") as rec:
            got = warplab.corrcoef(x)
        assert len(rec) == 1 and rec[0].filename == __file__
        _same(got, _numpy(x))
        for i in bad:
            assert np.isnan(np.asarray(got)[i]).all() and np.isnan(np.asarray(got)[:, i]).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["c", "fortran", "padded", "reversed"])
def test_layouts_and_dtypes(gpu, dtype, layout: str) -> None:
    base = np.asarray(_series(9, 40, const=(4,), dtype=dtype))
    x = {"c": dev(base), "fortran": dev(np.asfortranarray(base)),
         "padded": dev(np.pad(base, ((0, 0), (0, 5))))[:, :40],
         "reversed": dev(base[::-1].copy())[::-1]}[layout]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            WORK.clear()
            got = warplab.corrcoef(x)
            assert WORK["launch"] == 1 and WORK["empty"] == 1
            _same(got, _numpy(base))


@pytest.mark.parametrize("m,n,small", [(64, 64, True), (65, 60, False), (8, 512, True),
                                       (8, 513, False), (2, 2, True), (2, 2048, True),
                                       (2, 2049, False), (1, 64, False), (8, 1, False)])
def test_thresholds(gpu, m: int, n: int, small: bool) -> None:
    x = _series(m, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with warplab.record_variants() as ran:
            got = warplab.corrcoef(x)
    names = [r.variant for r in ran]
    assert ("fused_small" in names) == small, names
    want = _numpy(x)
    np.testing.assert_allclose(np.asarray(got), want, rtol=0, atol=1e-6, equal_nan=True)


def _plans() -> int:
    return fastpath.stats()["corr.plan"]


def test_named_variant_and_rowvar_are_one_launch(gpu) -> None:
    x = _series()
    want = _numpy(x)
    for kw, data in (({"variant": "fused_small"}, x), ({"rowvar": False}, dev(np.asarray(x).T))):
        for i in range(2):
            WORK.clear()
            with warplab.record_variants() as ran:
                got = warplab.corrcoef(data, **kw)
            assert [r.variant for r in ran] == ["fused_small"]
            if i:
                assert dict(WORK) == {"empty": 1, "launch": 1, "sync": 1}, kw
            _same(got, want)


def test_every_key_component_gets_its_own_plan(gpu) -> None:
    x = _series()
    warplab.corrcoef(x)
    calls = [lambda: warplab.corrcoef(x, rowvar=False),
             lambda: warplab.corrcoef(x, dtype=np.float32),
             lambda: warplab.corrcoef(x, precision="float32"),
             lambda: warplab.corrcoef(x, variant="tiled_smem"),
             lambda: warplab.corrcoef(x, nan_policy="pairwise"),
             lambda: warplab.corrcoef(x, out=dev(np.zeros((8, 8)))),
             lambda: warplab.corrcoef(x, x),
             lambda: warplab.corrcoef(dev(np.asarray(x, np.float64))),     # dtype
             lambda: warplab.corrcoef(x[:4]),                              # shape
             lambda: warplab.corrcoef(dev(np.asfortranarray(np.asarray(x)))),  # strides
             lambda: warplab.corrcoef(np.asarray(x).view(np.ndarray))]     # host
    for i, call in enumerate(calls):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = np.asarray(call())
            call()
        assert _plans() == i + 2
        assert got.dtype == (np.float32 if i == 1 else np.float64)
    # a 1-D series (NumPy's edge case) and ints (dispatch's choice on a cast copy)
    assert float(np.asarray(warplab.corrcoef(dev(np.arange(5.0))))) == 1.0
    xi = dev(np.asarray(_series()).astype(np.int64))
    with warplab.record_variants() as ran:
        warplab.corrcoef(xi)
    assert [r.variant for r in ran] == ["fused_small"]


def test_other_device_has_its_own_plan(gpu) -> None:
    x = _series()
    warplab.corrcoef(x)
    y = _series()
    y.device_id = 1
    _same(warplab.corrcoef(y), _numpy(x))
    assert _plans() == 2


@pytest.mark.parametrize("call", [
    lambda x: warplab.corrcoef(x, precision="float16"),
    lambda x: warplab.corrcoef(x, nan_policy="omit"),
    lambda x: warplab.corrcoef(x, dtype=np.int32),
    lambda x: warplab.corrcoef(x, variant="nosuch"),
    lambda x: warplab.corrcoef(x, x[:, :10]),
    lambda x: warplab.corrcoef(dev(np.zeros((2, 3, 4), np.float32))),
    lambda x: warplab.corrcoef(dev(np.zeros((3, 4), np.complex64))),
    lambda x: warplab.corrcoef(x, out=np.zeros((3, 3))),
    lambda x: warplab.corrcoef(_series(8, 600), variant="fused_small"),
])
def test_errors_cold_and_warm(gpu, call) -> None:
    x = _series()
    warplab.corrcoef(x)
    fastpath.clear()
    with pytest.raises((TypeError, ValueError)) as cold:
        call(x)
    with pytest.raises(type(cold.value)) as warm:  # errors are not cached: raised again
        call(x)
    assert str(warm.value) == str(cold.value)


def test_threads_share_plans(gpu) -> None:
    from conftest import run_in_threads

    xs = [_series(m, n) for m, n in ((8, 64), (3, 5), (30, 100))]
    wants = [_numpy(x) for x in xs]

    def worker(i: int) -> None:
        for _ in range(10):
            for x, want in zip(xs, wants):
                _same(warplab.corrcoef(x), want)

    run_in_threads(worker, 4)
    assert _plans() == len(xs)


def test_each_thread_has_its_own_word(gpu) -> None:
    x = _series(const=(2,))
    words = []
    together = threading.Barrier(3)  # alive together: a finished thread's word may be reused

    def work() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _same(warplab.corrcoef(x), _numpy(x))
        words.append(int(small_cuda._flag(0)[1]))
        together.wait(timeout=30)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(words)) == 3


def test_engine_blocks_for_tiles_and_pairs(gpu, monkeypatch) -> None:
    x = _series(12, 30, const=(5,))
    from warplab.families.corr import tiles

    monkeypatch.setattr(tiles, "TILE_CAP", 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = warplab.corrcoef(x, variant="fused_small")
        eng = small_cuda.SmallEngine(x, "float64")
    _same(got, _numpy(x))
    assert not eng.all_valid
    assert np.asarray(eng.valid).tolist() == [i != 5 for i in range(12)]
    with pytest.raises(ValueError, match="does not support"):
        warplab.corrcoef(_series(8, 600), variant="fused_small")

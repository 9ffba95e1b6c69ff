"""Weighted ``bincount``'s plans on device input (no GPU; ``fake_cupy``): a warm call is
exactly two allocations and two memsets, the min/max launch, one read back of its three words
through the pinned buffer (one copy, one synchronisation), and the binning launch; no
dispatch (``choose``), no ``cupy.zeros``, no pageable ``.get()``. Results equal a named
variant's and NumPy's; every key component (dtypes, shape, alignment, device, launch
configuration) builds its own plan; errors are raised again, with the same message, through
warm plans; threads share one plan."""
from __future__ import annotations

import numpy as np
import pytest

import warplab
from fake_cupy import WORK, Dev, count_launch, dev, install, poison_allocations
from warplab.core import fastpath, registry, scalar
from conftest import builtin_kind, run_in_threads
from warplab.families.histogram import api, bincount_plan, minmax_cuda, numeric_cuda


def _key(v: int, dt: np.dtype) -> int:
    """numeric.cu's order_key of an integer."""
    return int(v) + (1 << (8 * dt.itemsize - 1) if dt.kind == "i" else 0)


def _minmax(expr: str, group: tuple, cfg: object) -> object:
    def launch(grid: tuple, block: tuple, args: tuple) -> None:  # minmax_atomic's atomics
        count_launch()
        x, n, res = args
        h, r = np.asarray(x).view(np.ndarray)[:int(n)], np.asarray(res).view(np.ndarray)
        r[0] = max(r[0], ~np.uint64(_key(h.min(), h.dtype)))
        r[1] = max(r[1], np.uint64(_key(h.max(), h.dtype)))

    return launch


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch):
    g = install(monkeypatch)
    planned: list[str] = []

    def prepared(expr: str, group: tuple, lay: object, n: int, itemsize: int,
                 cfg: object) -> object:
        planned.append(expr)

        def launch(args: tuple) -> None:  # float64 sums added into the zeroed output
            count_launch()
            x, n_, w, nbins, copies, out = args
            assert int(copies) == lay.copies and expr.endswith(f", {lay.layout}>")
            o = np.asarray(out).view(np.ndarray)
            np.add.at(o, np.asarray(x)[:int(n_)], np.asarray(w).astype(np.float64))

        return launch

    monkeypatch.setattr(numeric_cuda, "prepared", prepared)
    monkeypatch.setattr(numeric_cuda, "_launch", lambda expr, group, lay, n, isz, cfg, args:
                        prepared(expr, group, lay, n, isz, cfg)(args))
    monkeypatch.setattr(numeric_cuda, "_kernel", _minmax)
    monkeypatch.setattr(numeric_cuda, "_grid", lambda *a: 3)
    monkeypatch.setattr(registry, "cuda_available", lambda: True)  # named variants
    fastpath.clear()
    yield g, planned
    fastpath.clear()


def _data(n: int = 1024, hi: int = 64, seed: int = 0, xdt: str = "int32",
          wdt: str = "float32") -> tuple[Dev, Dev]:
    rng = np.random.default_rng(seed)
    return dev(rng.integers(0, hi, n).astype(xdt)), dev(rng.integers(0, 8, n).astype(wdt))


def test_warm_bincount_work(gpu, monkeypatch) -> None:
    g, planned = gpu
    x, w = _data()
    want = np.bincount(np.asarray(x), np.asarray(w).astype(np.float64))
    full = warplab.bincount(x, w, variant="private_sums_vec")  # a plan of its own
    cold = warplab.bincount(x, w)
    chose: list[object] = []
    real = registry.choose
    monkeypatch.setattr(registry, "choose", lambda *a, **k: chose.append(a) or real(*a, **k))
    poison_allocations(monkeypatch)  # the memsets must zero the outputs
    WORK.clear()
    with warplab.record_variants() as ran:
        warm = warplab.bincount(x, w)
    assert dict(WORK) == {"empty": 2, "memset": 2, "launch": 2, "d2h": 1, "sync": 1}
    assert not chose and len(planned) == 2  # one binning launch planned per plan
    assert [(r.family, r.variant) for r in ran] == [("bincount", "private_sums_vec")]
    for got in (full, cold, warm):
        assert type(got) is scalar.array_type() and got.dtype == np.float64
        np.testing.assert_array_equal(got, want)


def test_minlength_sizes_the_output(gpu) -> None:
    x, w = _data(hi=10)
    for minlength in (0, 5, 10, 11, 300):
        got = warplab.bincount(x, w, minlength)
        want = np.bincount(np.asarray(x), np.asarray(w).astype(np.float64), minlength)
        assert got.shape == want.shape and got.dtype == np.float64
        np.testing.assert_array_equal(got, want)
    assert fastpath.stats()["bincount.plans"] == 1


@pytest.mark.parametrize("xdt", ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64"])
@pytest.mark.parametrize("wdt", ["float64", "float32", "float16", "int64", "uint8", "bool"])
def test_dtypes_same_as_numpy(gpu, xdt: str, wdt: str) -> None:
    x, w = _data(n=500, hi=100, seed=3, xdt=xdt, wdt=wdt)
    for _ in range(2):
        got = warplab.bincount(x, w)
        np.testing.assert_array_equal(got, np.bincount(np.asarray(x), np.asarray(w)))
    assert fastpath.stats()["bincount.plans"] == 1


def test_int_decoder_is_from_order_key() -> None:
    for name in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"):
        dt = np.dtype(name)
        info = np.iinfo(dt)
        mask, offset = bincount_plan.int_decoder(dt)
        for v in {info.min, info.min + 1, -1 if info.min else 0, 0, 1, info.max - 1, info.max}:
            k = _key(v, dt)
            assert (k & mask) - offset == v == minmax_cuda.from_order_key(k, dt)
            # the minimum's word holds the key's complement in 64 bits
            assert (~((1 << 64) - 1 - k) & mask) - offset == v


def test_plan_keys(gpu) -> None:
    g, _ = gpu
    x, w = _data(n=64)
    big = dev(np.zeros(80, np.int32))
    calls = [(x, w), (dev(np.asarray(x, np.int64)), w),          # x dtype
             (x, dev(np.asarray(w, np.float64))),                # weights dtype
             (x[:32], w[:32]),                                   # shape
             (big[1:65], w)]                                     # alignment (4-byte offset)
    for a, b in calls:
        np.testing.assert_array_equal(warplab.bincount(a, b), np.bincount(
            np.asarray(a), np.asarray(b).astype(np.float64)))
    assert fastpath.stats()["bincount.plans"] == len(calls)
    g.device = 1
    warplab.bincount(x, w)
    g.device = 0
    small = numeric_cuda.LaunchConfig(block=512)
    np.testing.assert_array_equal(api.bincount_with(small, x, w),
                                  np.bincount(np.asarray(x), np.asarray(w).astype(np.float64)))
    warplab.bincount(x, w, variant="private_sums")                # a named variant
    warplab.bincount(np.asarray(x).view(np.ndarray), w)           # host data
    assert fastpath.stats()["bincount.plans"] == len(calls) + 4
    for a, b in calls:  # warm: no new plan
        warplab.bincount(a, b)
    assert fastpath.stats()["bincount.plans"] == len(calls) + 4


def test_threads_share_one_plan(gpu) -> None:
    xs = [_data(n=256, seed=s) for s in range(2)]
    wants = [np.bincount(np.asarray(x), np.asarray(w).astype(np.float64)) for x, w in xs]

    def worker(i: int) -> None:
        for _ in range(50):
            np.testing.assert_array_equal(warplab.bincount(*xs[i]), wants[i])

    run_in_threads(worker, 2)
    assert fastpath.stats()["bincount.plans"] == 1  # same key


def _raised(fn, *a, **k) -> tuple[type, str]:
    with pytest.raises(Exception) as info:  # noqa: PT011  (compared below)
        fn(*a, **k)
    return builtin_kind(info.value), str(info.value)


def test_errors_through_warm_plans(gpu) -> None:
    x, w = _data(n=16)
    neg = dev(np.asarray(x))
    neg[3] = -5
    bad = [((neg, w), {}),                                          # negative value
           ((x, w[:15]), {}),                                       # length
           ((x, dev(np.ones((16, 1), np.float32))), {}),            # weights 2-D
           ((x, dev(np.ones(16, np.complex64))), {}),               # no safe cast
           ((x, w), {"minlength": -1}),
           ((x, w), {"minlength": None}),
           ((x, w), {"minlength": 2.0}),
           ((dev(np.asarray(x, np.float32)), w), {}),               # not integers
           ((dev(np.asarray(x).reshape(4, 4)), w), {}),             # not 1-D
           ((x, w), {"variant": "nope"})]
    with fastpath.bypassed():
        cold = [_raised(warplab.bincount, *a, **k) for a, k in bad]
    for _ in range(2):
        warplab.bincount(x, w)
        warplab.bincount(neg.__abs__(), w)
    for _ in range(2):  # the second time through the plans the first one kept
        assert [_raised(warplab.bincount, *a, **k) for a, k in bad] == cold
    assert cold[0] == (ValueError, "bincount needs non-negative values, found -5")


def test_other_inputs_same_as_numpy(gpu) -> None:
    x, w = _data(n=64)
    calls = [(dev(np.asarray(x, np.uint64)), w),                     # uint64 data
             (dev(np.asarray(x) > 3), w),                            # bool data
             (x, np.asarray(w)),                                     # host weights
             (dev(np.zeros(0, np.int32)), dev(np.zeros(0, np.float32)))]  # empty
    for _ in range(2):
        for a, b in calls:
            got = warplab.bincount(a, b)
            want = np.bincount(np.asarray(a).view(np.ndarray), np.asarray(b).view(np.ndarray))
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
    assert fastpath.stats()["bincount.plans"] == len(calls)


def test_unweighted_plans(gpu, monkeypatch) -> None:
    from types import SimpleNamespace

    from warplab.families.histogram import cuda

    def launch(plan: object, grid: int, block: int, data: Dev, bins: Dev) -> None:
        count_launch()
        np.asarray(bins).view(np.ndarray)[...] += np.bincount(np.asarray(data), minlength=256)

    monkeypatch.setattr(cuda, "_plan", lambda *a: SimpleNamespace(full=4))
    monkeypatch.setattr(cuda, "_launch", launch)
    x = dev(np.random.default_rng(1).integers(0, 256, 1000).astype(np.uint8))
    with warplab.record_variants() as ran:
        for _ in range(2):
            np.testing.assert_array_equal(warplab.bincount(x), np.bincount(np.asarray(x)))
    assert [r.family for r in ran] == ["histogram", "histogram"]
    assert fastpath.stats()["bincount.plans"] == 1
    with pytest.raises(ValueError, match="variant= applies to uint8"):
        warplab.bincount(np.arange(5), variant="global")

"""The plans of ``histogram`` and ``byte_histogram`` on device input (no GPU; ``fake_cupy``,
each kernel a NumPy model that reads the launch's arguments as the kernel does): a warm
``histogram(x, bins, range)`` on an input the persistent grid gives one block runs the
kernel's one-block form: one allocation and one launch, no memset, no copy (the kernel stores
every bin and writes the edges); a larger input (or ``LaunchConfig(one_block=False)``) fills
the allocation from the plan's template by one ``cudaMemcpyAsync`` first. A warm
``byte_histogram`` is one allocation, one memset and one launch. Results identical to NumPy
and to a named variant in every form, on poisoned allocations; every key component builds
its own plan; errors raised again, with the same message, through warm plans; threads share
one plan."""
from __future__ import annotations

import numpy as np
import pytest

import warplab
from conftest import builtin_kind, run_in_threads
from fake_cupy import WORK, Dev, count_launch, dev, install, poison_allocations
from warplab.core import fastpath, scalar
from warplab.families.histogram import api, numeric_cuda
from warplab.families.histogram.config import LaunchConfig
from warplab.families.histogram.spec import resolve


@pytest.fixture
def hist_gpu(monkeypatch: pytest.MonkeyPatch):
    from warplab.families.histogram import numeric_cuda

    g = install(monkeypatch)
    numeric_cuda._device_array.cache_clear()
    planned: list[str] = []

    def prepared(expr: str, group: tuple, lay: object, n: int, itemsize: int,
                 cfg: object) -> object:
        planned.append(expr)
        single = expr.split("<")[0].endswith("_one_block")
        assert all(e.split("<")[0] == expr.split("<")[0] for e in group)

        def launch(args: tuple) -> None:  # the counts NumPy gives for the device edges
            count_launch()
            x, edges = np.asarray(args[0]), np.asarray(args[3])
            counts = np.histogram(x, edges)[0]
            if single:  # stores every bin, copies the edges out
                np.asarray(args[-2]).view(np.ndarray)[...] = counts
                np.asarray(args[-1]).view(np.ndarray)[...] = edges
            else:  # adds to counts zeroed beforehand
                np.asarray(args[-1]).view(np.ndarray)[...] += counts

        return launch

    monkeypatch.setattr(numeric_cuda, "prepared", prepared)
    monkeypatch.setattr(numeric_cuda, "_grid", lambda *a: 3)
    monkeypatch.setattr(numeric_cuda, "_kernel", lambda *a: None)
    _cuda_usable(monkeypatch)
    fastpath.clear()
    yield g, planned
    fastpath.clear()
    numeric_cuda._device_array.cache_clear()


def _raised(fn, *a, **k) -> tuple[type, str]:
    with pytest.raises(Exception) as info:  # noqa: PT011  (compared below)
        fn(*a, **k)
    return builtin_kind(info.value), str(info.value)


@pytest.mark.parametrize(("n", "dtype", "work", "kernel"), [
    (1024, np.float32, {"empty": 1, "launch": 1}, "hist_even_fast_one_block"),
    (1025, np.float32, {"empty": 1, "launch": 1, "d2d": 1}, "hist_even_fast"),
    (512, np.float64, {"empty": 1, "launch": 1}, "hist_even_fast_one_block"),
    (513, np.float64, {"empty": 1, "launch": 1, "d2d": 1}, "hist_even_fast")])
def test_warm_histogram_work(hist_gpu, monkeypatch, n, dtype, work, kernel) -> None:
    _, planned = hist_gpu
    x = dev(np.random.default_rng(3).random(n).astype(dtype))
    want = np.histogram(np.asarray(x), 64, (0, 1))
    full = warplab.histogram(x, 64, (0, 1), density=False)  # a key (and plan) of its own
    first = warplab.histogram(x, 64, (0, 1))
    assert WORK["h2d"] >= 1 and len(planned) == 2  # the edges table, once
    assert planned[-1].split("<")[0] == kernel
    poison_allocations(monkeypatch)  # the kernel (or the template) must write every byte
    WORK.clear()
    with warplab.record_variants() as ran:
        hist, edges = warplab.histogram(x, 64, (0, 1))
    # one allocation for the counts and the edges
    assert dict(WORK) == work and len(planned) == 2
    assert [(r.family, r.variant) for r in ran] == [("histogram_even", "even_fast")]
    for h, e in (first, full, (hist, edges)):
        assert isinstance(h, type(x)) and isinstance(e, type(x)) and h.dtype == np.int64
        assert e.dtype == want[1].dtype and h.shape == (64,) and e.shape == (65,)
        np.testing.assert_array_equal(h, want[0])
        np.testing.assert_array_equal(e, want[1])
    assert type(hist) is type(edges) is scalar.array_type()  # fast get() (core/scalar.py)
    edges[...] = -1  # the caller's arrays are its own
    hist[...] = -1
    again = warplab.histogram(x, 64, (0, 1))
    np.testing.assert_array_equal(again[0], want[0])
    np.testing.assert_array_equal(again[1], want[1])


def test_one_block_limit_follows_the_block() -> None:
    def one(n: int, itemsize: int, cfg: LaunchConfig = numeric_cuda.DEFAULT) -> bool:
        return numeric_cuda.blocks_needed(n, itemsize, cfg) <= 1

    assert one(1024, 4) and not one(1025, 4)
    assert one(2048, 2) and not one(513, 8)
    assert one(2048, 4, LaunchConfig(block=512)) and not one(2049, 4, LaunchConfig(block=512))


def test_template_form_same_as_one_block(hist_gpu, monkeypatch) -> None:
    _, planned = hist_gpu
    poison_allocations(monkeypatch)
    x = dev(np.array([0.0, 0.5, 1.0, 1.5, -0.1, np.nan, 0.25, 1 / 64], np.float32))
    templated = LaunchConfig(one_block=False)
    for bins in (1, 64, 256):
        want = np.histogram(np.asarray(x)[np.isfinite(np.asarray(x))], bins, (0, 1))
        for _ in range(2):  # cold, then warm
            one = warplab.histogram(x, bins, (0, 1))
            WORK.clear()
            tmpl = api.histogram_with(templated, x, bins, (0, 1))
            assert WORK["d2d"] >= 1  # the template's copy (and its build's, cold)
            for h, e in (one, tmpl):
                np.testing.assert_array_equal(h, want[0])
                np.testing.assert_array_equal(e, want[1])
    assert [p.split("<")[0] for p in planned] == ["hist_even_fast_one_block",
                                                  "hist_even_fast"] * 3


def _cuda_usable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Named cuda variants and ``device="cuda"`` accepted on the fake."""
    from warplab.core import device, registry

    monkeypatch.setattr(registry, "cuda_available", lambda: True)
    monkeypatch.setattr(device, "cuda_available", lambda: True)


def test_histogram_record_keys_and_errors(hist_gpu) -> None:
    g, _ = hist_gpu
    x = dev(np.random.default_rng(4).random(256, dtype=np.float32))
    calls = [(x, 8, (0, 1)), (x, 16, (0, 1)), (x, 8, (0.0, 1)), (x, 8, [0, 2]),
             (x, 8, (-0.0, 1)), (dev(np.asarray(x, np.float64)), 8, (0, 1)), (x[:100], 8, (0, 1))]
    for a, b, r in calls:
        h, e = warplab.histogram(a, b, r)
        want = np.histogram(np.asarray(a), b, r)
        np.testing.assert_array_equal(h, want[0])
        np.testing.assert_array_equal(e, want[1])
        assert np.signbit(e[0]) == np.signbit(want[1][0])
    assert fastpath.stats()["histogram.plans"] == len(calls)
    g.device = 2
    warplab.histogram(x, 8, (0, 1))
    assert fastpath.stats()["histogram.plans"] == len(calls) + 1
    g.device = 0
    for a, b, r in calls:  # warm: no new plan
        warplab.histogram(a, b, r)
    assert fastpath.stats()["histogram.plans"] == len(calls) + 1
    bad = [((x, -1, (0, 1)), {}), ((x, 8, (1, 0)), {}), ((x, 8, (0, np.inf)), {}),
           ((x, 8, (0, 1, 2)), {}), ((x, 8, (0, 1)), {"weights": np.ones(3)}),
           ((x, 8, (0, 1)), {"variant": "nope"}), ((x, 8.0, (0, 1)), {}),
           ((x, 8, (np.nan, 1.0)), {})]
    with fastpath.bypassed():
        cold = [_raised(warplab.histogram, *a, **k) for a, k in bad]
    for _ in range(2):
        assert [_raised(warplab.histogram, *a, **k) for a, k in bad] == cold


def test_histogram_plan_follows_the_config(hist_gpu) -> None:
    _, planned = hist_gpu
    x = dev(np.random.default_rng(5).random(512, dtype=np.float32))
    want = np.histogram(np.asarray(x), 16, (0, 1))[0]
    np.testing.assert_array_equal(warplab.histogram(x, 16, (0, 1))[0], want)
    other = LaunchConfig(block=512)  # other kernels: a plan of their own
    np.testing.assert_array_equal(api.histogram_with(other, x, 16, (0, 1))[0], want)
    np.testing.assert_array_equal(warplab.histogram(x, 16, (0, 1))[0], want)
    np.testing.assert_array_equal(api.histogram_with(other, x, 16, (0, 1))[0], want)
    assert fastpath.stats()["histogram.plans"] == 2 and len(planned) == 2


def test_named_variants_and_keywords_are_keys(hist_gpu) -> None:
    x = dev(np.random.default_rng(6).random(300, dtype=np.float32))
    want = np.histogram(np.asarray(x), 32, (0, 1))
    calls = [{}, {"variant": "even_fast"}, {"variant": "even_private"}, {"device": "cuda"}]
    for _ in range(2):
        for kw in calls:
            with warplab.record_variants() as ran:
                h, e = warplab.histogram(x, 32, (0, 1), **kw)
            assert ran[-1].variant == kw.get("variant", "even_fast")
            np.testing.assert_array_equal(h, want[0])
            np.testing.assert_array_equal(e, want[1])
    assert fastpath.stats()["histogram.plans"] == len(calls)


def test_histogram_threads_share_one_plan(hist_gpu) -> None:
    xs = [dev(np.random.default_rng(s).random(700, dtype=np.float32)) for s in range(2)]
    wants = [np.histogram(np.asarray(x), 64, (0, 1))[0] for x in xs]

    def worker(i: int) -> None:
        for _ in range(50):
            np.testing.assert_array_equal(warplab.histogram(xs[i], 64, (0, 1))[0], wants[i])

    run_in_threads(worker, 2)
    assert fastpath.stats()["histogram.plans"] == 1  # same key


# --- byte_histogram ------------------------------------------------------------------------


@pytest.fixture
def bytes_gpu(monkeypatch: pytest.MonkeyPatch):
    """fake_cupy with histogram.cu's launches modelled: each counts the bytes into the
    mapping's bins (through its device table)."""
    from types import SimpleNamespace

    from warplab.families.histogram import cuda

    g = install(monkeypatch)
    built: list[tuple] = []

    def plan(expr: str, mapping: object, smem: int = 0) -> SimpleNamespace:
        built.append((expr, mapping.name))
        return SimpleNamespace(full=4, lut=np.asarray(mapping.lut).astype(np.intp))

    def launch(p: SimpleNamespace, grid: int, block: int, data: Dev, bins: Dev) -> None:
        count_launch()
        np.add.at(np.asarray(bins).view(np.ndarray), p.lut[np.asarray(data).view(np.uint8)], 1)

    monkeypatch.setattr(cuda, "_plan", plan)
    monkeypatch.setattr(cuda, "_launch", launch)
    _cuda_usable(monkeypatch)
    fastpath.clear()
    yield g, built
    fastpath.clear()


def test_warm_byte_histogram(bytes_gpu, monkeypatch) -> None:
    x = np.random.default_rng(1).integers(0, 256, 4096, dtype=np.uint8)
    want = np.bincount(x, minlength=256)
    default = warplab.variants("histogram", "cuda")[0]
    warplab.byte_histogram(x.view(Dev))
    poison_allocations(monkeypatch)  # the memset must zero the counts
    WORK.clear()
    with warplab.record_variants() as ran:
        got = warplab.byte_histogram(x.view(Dev))
    assert dict(WORK) == {"empty": 1, "memset": 1, "launch": 1}
    assert [(r.family, r.variant) for r in ran] == [("histogram", default)]
    assert type(got) is scalar.array_type() and got.dtype == np.int64
    np.testing.assert_array_equal(got, want)
    for name in warplab.variants("histogram", "cuda"):
        np.testing.assert_array_equal(warplab.byte_histogram(x.view(Dev), variant=name), want)


def test_byte_histogram_keys(bytes_gpu) -> None:
    _, built = bytes_gpu
    x = np.random.default_rng(2).integers(0, 256, 4096, dtype=np.uint8)
    want = np.bincount(x, minlength=256)
    lut = np.arange(256) % 7
    out = dev(np.zeros(256, np.int64))
    calls = [((x.view(Dev),), {}, want),
             ((x.view(np.int8).view(Dev),), {}, want),                     # dtype
             ((x[:100].view(Dev),), {}, np.bincount(x[:100], minlength=256)),  # shape
             ((x[::2].view(Dev),), {}, np.bincount(x[::2], minlength=256)),   # strides
             ((x.reshape(64, 64).view(Dev),), {}, want),                   # 2-D
             ((x.view(Dev), "letters"), {}, resolve("letters").apply_to_counts(want)),
             ((x.view(Dev), lut), {}, resolve(lut).apply_to_counts(want)),  # a table
             ((x.view(Dev),), {"variant": "global"}, want),
             ((x.view(Dev),), {"device": "cuda"}, want),
             ((x.view(Dev),), {"out": out}, want),
             ((x,), {}, want)]                                              # host data
    for _ in range(2):
        for a, k, w in calls:
            got = warplab.byte_histogram(*a, **k)
            np.testing.assert_array_equal(got, w)
            assert isinstance(got, np.ndarray) and (type(got) is np.ndarray) == (
                type(a[0]) is np.ndarray)
    assert fastpath.stats()["histogram.bytes"] == len(calls)
    out[...] = 5
    np.testing.assert_array_equal(
        warplab.byte_histogram(x.view(Dev), out=out, accumulate=True), want + 5)


def test_byte_histogram_errors_through_warm_plans(bytes_gpu) -> None:
    x = np.arange(256, dtype=np.uint8).view(Dev)
    bad = [((np.zeros(8, np.float32).view(Dev),), {}), ((x, "nope"), {}),
           ((x,), {"accumulate": True}), ((x,), {"out": dev(np.zeros(3, np.int64))}),
           ((x,), {"out": np.zeros(256, np.int64)}), ((x, np.arange(255)), {}),
           ((x,), {"variant": "nope"}), ((x,), {"device": "nope"})]
    with fastpath.bypassed():
        cold = [_raised(warplab.byte_histogram, *a, **k) for a, k in bad]
    out = dev(np.zeros(256, np.int64))
    warplab.byte_histogram(x)
    warplab.byte_histogram(x, out=out)
    for _ in range(2):
        assert [_raised(warplab.byte_histogram, *a, **k) for a, k in bad] == cold
    assert cold[0][0] is TypeError and "uint8" in cold[0][1]


def test_byte_histogram_threads_share_one_plan(bytes_gpu) -> None:
    xs = [np.random.default_rng(s).integers(0, 256, 2048, dtype=np.uint8) for s in range(2)]

    def worker(i: int) -> None:
        for _ in range(50):
            np.testing.assert_array_equal(warplab.byte_histogram(xs[i].view(Dev)),
                                          np.bincount(xs[i], minlength=256))

    run_in_threads(worker, 2)
    assert fastpath.stats()["histogram.bytes"] == 1  # same key

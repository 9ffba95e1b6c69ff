"""Work counters of ``histogram(x, bins, range)`` on device input (no GPU; ``fake_cupy``, each
kernel a NumPy model that reads the launch's arguments as the kernel does): a warm call on an
input the persistent grid gives one block runs the kernel's one-block form: one allocation
and one launch, no memset, no copy (the kernel stores every bin and writes the edges); a
larger input fills the allocation from the record's template by one ``cudaMemcpyAsync``
first. Results identical to the full path and to NumPy in both forms, on poisoned
allocations; every record key builds its own; the full path's errors raised again through
warm records."""
from __future__ import annotations

import numpy as np
import pytest

import warplab
from fake_cupy import WORK, count_launch, dev, install, poison_allocations
from warplab.core import fastpath, scalar


@pytest.fixture
def hist_gpu(monkeypatch: pytest.MonkeyPatch):
    from warplab.families.histogram import numeric_cuda

    g = install(monkeypatch)
    numeric_cuda._device_array.cache_clear()
    planned: list[str] = []

    def prepared(expr: str, group: tuple, lay: object, n: int, itemsize: int) -> object:
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
    fastpath.clear()
    yield g, planned
    fastpath.clear()
    numeric_cuda._device_array.cache_clear()


def _raised(fn, *a, **k) -> tuple[type, str]:
    with pytest.raises(Exception) as info:  # noqa: PT011  (compared below)
        fn(*a, **k)
    return type(info.value), str(info.value)


@pytest.mark.parametrize(("n", "dtype", "work", "kernel"), [
    (1024, np.float32, {"empty": 1, "launch": 1}, "hist_even_fast_one_block"),
    (1025, np.float32, {"empty": 1, "launch": 1, "d2d": 1}, "hist_even_fast"),
    (512, np.float64, {"empty": 1, "launch": 1}, "hist_even_fast_one_block"),
    (513, np.float64, {"empty": 1, "launch": 1, "d2d": 1}, "hist_even_fast")])
def test_warm_histogram_work(hist_gpu, monkeypatch, n, dtype, work, kernel) -> None:
    _, planned = hist_gpu
    x = dev(np.random.default_rng(3).random(n).astype(dtype))
    want = np.histogram(np.asarray(x), 64, (0, 1))
    with fastpath.bypassed():
        full = warplab.histogram(x, 64, (0, 1), density=False)  # density= takes the full path
    first = warplab.histogram(x, 64, (0, 1))
    assert WORK["h2d"] >= 1 and len(planned) == 2  # the edges table, once
    assert planned[-1].split("<")[0] == kernel
    poison_allocations(monkeypatch)  # the kernel (or the template) must write every byte
    WORK.clear()
    with warplab.record_variants() as ran:
        hist, edges = warplab.histogram(x, 64, (0, 1))
    # one allocation for the counts and the edges (session 10: two allocations, a memset
    # and a copy; session 11: + the template's cudaMemcpyAsync at every size)
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


def test_one_block_limit_follows_the_block(hist_gpu) -> None:
    from warplab.families.histogram import numeric_cuda, numeric_short

    assert numeric_short.one_block(1024, 4) and not numeric_short.one_block(1025, 4)
    assert numeric_short.one_block(2048, 2) and not numeric_short.one_block(513, 8)
    with numeric_cuda.launch_config(block=512):
        assert numeric_short.one_block(2048, 4) and not numeric_short.one_block(2049, 4)


def test_templated_record_same_as_one_block(hist_gpu, monkeypatch) -> None:
    from warplab.families.histogram import numeric_short

    poison_allocations(monkeypatch)
    x = dev(np.array([0.0, 0.5, 1.0, 1.5, -0.1, np.nan, 0.25, 1 / 64], np.float32))
    for bins in (1, 64, 256):
        want = np.histogram(np.asarray(x)[np.isfinite(np.asarray(x))], bins, (0, 1))
        got = []
        for templated in (False, True):
            rec = numeric_short._build(x, bins, (0, 1), templated)
            assert (rec.template is None) is not templated
            fastpath.clear()
            warplab.histogram(x, bins, (0, 1))  # builds the one-block record ...
            (key,) = numeric_short._RECORDS._plans
            numeric_short._RECORDS._plans[key] = rec  # ... then runs the form under test
            got.append(warplab.histogram(x, bins, (0, 1)))
        for h, e in got:
            np.testing.assert_array_equal(h, want[0])
            np.testing.assert_array_equal(e, want[1])


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
    assert fastpath.stats()["histogram.even"] == len(calls)
    g.device = 2
    warplab.histogram(x, 8, (0, 1))
    assert fastpath.stats()["histogram.even"] == len(calls) + 1
    bad = [((x, -1, (0, 1)), {}), ((x, 8, (1, 0)), {}), ((x, 8, (0, np.inf)), {}),
           ((x, 8, (0, 1, 2)), {}), ((x, 8, (0, 1)), {"weights": np.ones(3)}),
           ((x, 8, (0, 1)), {"variant": "nope"}), ((x, 8.0, (0, 1)), {}),
           ((x, 8, (np.nan, 1.0)), {})]
    with fastpath.bypassed():
        cold = [_raised(warplab.histogram, *a, **k) for a, k in bad]
    assert [_raised(warplab.histogram, *a, **k) for a, k in bad] == cold


def test_histogram_record_follows_launch_config(hist_gpu) -> None:
    from warplab.families.histogram import numeric_cuda

    _, planned = hist_gpu
    x = dev(np.random.default_rng(5).random(512, dtype=np.float32))
    warplab.histogram(x, 16, (0, 1))
    with numeric_cuda.launch_config(block=512):  # other kernels: a record of their own
        warplab.histogram(x, 16, (0, 1))
    warplab.histogram(x, 16, (0, 1))
    assert fastpath.stats()["histogram.even"] == 3 and len(planned) == 3

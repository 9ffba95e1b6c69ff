"""warplab.dask against the single-machine functions, on the local threaded scheduler and on a
``distributed.LocalCluster`` of two worker processes: uneven chunks, empty chunks, one chunk."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import dask  # noqa: E402

import warplab  # noqa: E402
import warplab.dask as wd  # noqa: E402

RNG = np.random.default_rng(7)
H2 = RNG.normal(size=(23, 17)).astype(np.float32)
# uneven, an empty chunk, one chunk
CHUNKINGS = [((5, 0, 11, 7), (9, 8)), ((23,), (17,)), ((1, 22), (4, 0, 13))]


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=None) as c, \
            distributed.Client(c, set_as_default=False) as client:
        yield client


@pytest.fixture(params=["threads", "cluster"])
def compute(request):
    """``compute(*lazy)``: on the threaded scheduler, or on the two-process cluster."""
    if request.param == "threads":
        return lambda *a: dask.compute(*a, scheduler="threads")
    client = request.getfixturevalue("cluster")
    return lambda *a: dask.compute(*a, scheduler=client.get)


def _close(got, exp, rtol=1e-6):
    assert np.asarray(got).dtype == np.asarray(exp).dtype
    assert np.shape(got) == np.shape(exp)
    np.testing.assert_allclose(got, exp, rtol=rtol, atol=1e-6 * rtol, equal_nan=True)


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_reductions(compute, chunks):
    x = da.from_array(H2, chunks=chunks)
    xi = da.from_array((H2 * 100).astype(np.int32), chunks=chunks)
    lazy, exp = [], []
    for op in ("sum", "mean", "min", "max", "var", "std"):
        for axis in (None, 0, 1, (0, 1), -1):
            lazy.append(getattr(wd, op)(x, axis=axis))
            exp.append(getattr(warplab, op)(H2, axis=axis))
        lazy.append(getattr(wd, op)(xi, axis=0, keepdims=True))
        exp.append(getattr(warplab, op)(xi.compute(), axis=0, keepdims=True))
    lazy.append(wd.var(x, axis=1, ddof=1))
    exp.append(warplab.var(H2, axis=1, ddof=1))
    for got, e in zip(compute(*lazy), exp):
        _close(got, e)
    assert compute(wd.sum(xi))[0] == warplab.sum(xi.compute())  # integers: exact


def test_moments_exact_where_a_naive_combine_is_not(compute):
    """Large offset, small spread: the float64 Chan combine keeps the variance."""
    h = (1e4 + RNG.normal(size=(4, 4000)) * 1e-3).astype(np.float32)
    x = da.from_array(h, chunks=(4, 700))
    got = compute(wd.var(x), wd.std(x, axis=1))
    _close(got[0], warplab.var(h), rtol=1e-5)
    _close(got[1], warplab.std(h, axis=1), rtol=1e-5)


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_series_stats(compute, chunks):
    x = da.from_array(H2, chunks=chunks)
    m, n = compute(*wd.series_stats(x))
    em, en = warplab.series_stats(H2)
    _close(m, em, rtol=1e-5)
    _close(n, en, rtol=1e-5)


@pytest.mark.parametrize("chunks", [(7, 0, 100, 93), (200,)])
def test_histograms(compute, chunks):
    h = RNG.integers(0, 256, 200, dtype=np.uint8)
    f = RNG.normal(size=200).astype(np.float32)
    ints = RNG.integers(0, 30, 200)
    x, xf, xi = (da.from_array(a, chunks=chunks) for a in (h, f, ints))
    w = da.from_array(f * 2, chunks=50)  # other chunks than the data: rechunked
    cases = [(wd.byte_histogram(x, b), warplab.byte_histogram(h, b))
             for b in ("bytes", "ascii128", "letters", np.arange(256) % 5)]
    cases.append((wd.byte_histogram(x.reshape(20, 10)), warplab.byte_histogram(h)))
    for kw in ({"bins": 10}, {"bins": 7, "range": (-1, 1)}, {"bins": np.linspace(-2, 2, 9)},
               {"bins": 5, "density": True}):
        hist, edges = wd.histogram(xf, **kw)
        eh, ee = warplab.histogram(f, **kw)
        cases += [(hist, eh), (edges, ee)]
    hist, edges = wd.histogram(xf, bins=6, weights=w)
    eh, ee = warplab.histogram(f, bins=6, weights=f * 2)
    cases += [(hist, eh), (edges, ee), (wd.histogram(xi, bins=4)[0], warplab.histogram(ints, 4)[0])]
    cases += [(wd.bincount(xi), warplab.bincount(ints)),
              (wd.bincount(xi, minlength=40), warplab.bincount(ints, minlength=40)),
              (wd.bincount(xi, weights=w), warplab.bincount(ints, weights=f * 2))]
    got = compute(*(c[0] for c in cases))
    for g, (_, e) in zip(got, cases):
        _close(g, e)


@pytest.mark.parametrize("chunks", [((9, 0, 14, 7), (6, 7)), ((30,), (13,))])
def test_corr(compute, chunks):
    s = RNG.normal(size=(30, 13)).cumsum(axis=1)
    s[4] = 2.5  # a constant series: NaN row and column
    x = da.from_array(s, chunks=chunks)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        exp = [warplab.corrcoef(s), warplab.corrcoef(s[:, :9], rowvar=False),
               *warplab.corr_pairs(s, threshold=0.6), *warplab.corr_pairs(s, top_k=3),
               *warplab.corr_pairs(s, top_k=50)]
        lazy = [wd.corrcoef(x), wd.corrcoef(x[:, :9], rowvar=False),
                *wd.corr_pairs(x, threshold=0.6), *wd.corr_pairs(x, top_k=3),
                *wd.corr_pairs(x, top_k=50)]
        got = compute(*lazy)
    for g, e in zip(got, exp):
        assert np.asarray(g).dtype == np.asarray(e).dtype
        np.testing.assert_allclose(g, e, atol=1e-12, equal_nan=True)


def test_corrcoef_blocks_and_edge_cases(compute):
    s = RNG.normal(size=(12, 8))
    x = da.from_array(s, chunks=(5, 3))  # axis 1 split: rechunked whole
    r = wd.corrcoef(x, da.from_array(s[:3] * 2 + 1, chunks=2), dtype=np.float32)
    assert r.chunks[0] == r.chunks[1] and r.dtype == np.float32
    got = compute(r, wd.corrcoef(x[0]), *wd.corr_pairs(x[:1], threshold=0.1))
    np.testing.assert_allclose(got[0], warplab.corrcoef(s, s[:3] * 2 + 1, dtype=np.float32),
                               atol=1e-6)
    assert got[1] == 1.0 and all(a.size == 0 for a in got[2:])


def test_histogram_files(compute, tmp_path):
    sizes = [0, 1, 4096, 10_001]
    for n, size in enumerate(sizes):
        (tmp_path / f"f{n}.bin").write_bytes(RNG.integers(0, 256, size, dtype=np.uint8)
                                             .tobytes())
    paths = [str(tmp_path / f"f{n}.bin") for n in range(len(sizes))]
    exp = warplab.byte_histogram(paths)
    got = compute(wd.histogram_files(str(tmp_path / "*.bin"), chunk_bytes=3000),
                  wd.histogram_files(paths, "letters"),
                  wd.histogram_files(paths[:1]))
    np.testing.assert_array_equal(got[0], exp)
    np.testing.assert_array_equal(got[1], warplab.byte_histogram(paths, "letters"))
    np.testing.assert_array_equal(got[2], np.zeros(256, np.int64))


def test_worker_killed_during_a_histogram(cluster, tmp_path):
    """A worker process killed while the histogram runs: Dask reruns its tasks elsewhere (the
    nanny restarts the worker) and the counts are still exact."""
    import os
    import signal
    import time

    h = RNG.integers(0, 256, 8 * 4096, dtype=np.uint8)

    def slow(b):
        time.sleep(0.25)
        return b

    x = da.from_array(h, chunks=4096).map_blocks(slow, dtype=np.uint8)
    fut = cluster.compute(wd.byte_histogram(x, split_every=2))
    deadline = time.monotonic() + 10
    while not any(cluster.processing().values()) and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)  # some chunks done, some running
    pids = cluster.run(os.getpid)
    busy = [w for w, tasks in cluster.processing().items() if tasks] or list(pids)
    os.kill(pids[busy[0]], signal.SIGKILL)
    got = fut.result(timeout=60)
    np.testing.assert_array_equal(got, warplab.byte_histogram(h))
    cluster.wait_for_workers(2, timeout=30)


def test_plan_rule():
    p = wd.plan(64 << 30, workers=2)
    assert (p.chunk_bytes, p.tasks, p.split_every) == (4 << 30, 16, 8)
    p = wd.plan(1 << 30, workers=2)
    assert (p.chunk_bytes, p.tasks, p.split_every) == (1 << 29, 2, 2)
    assert wd.plan(1 << 30, workers=1, chunk_kind="numpy").tasks == 4
    x = wd.rechunk(da.zeros((1000, 100), chunks=(7, 9)), workers=4)
    assert x.chunks == ((250,) * 4, (100,))


def test_bad_input():
    x = da.from_array(H2, chunks=5)
    with pytest.raises(ValueError, match="zero-size"):
        wd.min(x[:0])
    with pytest.raises(ValueError, match="split_every"):
        wd.sum(x, split_every=1)
    with pytest.raises(ValueError, match="ddof"):
        wd.var(x, axis=0, ddof=23)
    with pytest.raises(TypeError, match="uint8"):
        wd.byte_histogram(x)
    with pytest.raises(ValueError, match="estimator"):
        wd.histogram(x, bins="auto")
    with pytest.raises(ValueError, match="exactly one"):
        wd.corr_pairs(x)
    with pytest.raises(ValueError, match="precision"):
        wd.corrcoef(x, precision="fp8")
    with pytest.raises(TypeError, match="NumPy or CuPy"):
        wd.sum(da.from_array(np.ma.masked_array(H2), chunks=5))


def test_mixed_chunk_types_raise_when_computed():
    def masked_second(b, block_info=None):
        return np.ma.masked_array(b) if block_info[0]["chunk-location"][0] == 1 else b

    x = da.from_array(H2, chunks=(5, 17)).map_blocks(masked_second, meta=np.empty((0, 0)))
    for lazy in (wd.sum(x), wd.byte_histogram(x.astype(np.uint8)), wd.corrcoef(x)):
        with pytest.raises(TypeError, match="NumPy or CuPy"):
            lazy.compute(scheduler="sync")


def test_unknown_chunk_sizes():
    f = RNG.normal(size=300)
    x = da.from_array(f, chunks=70)
    pos = x[x > 0]  # chunk sizes unknown (NaN)
    assert np.isnan(pos.shape[0])
    got = dask.compute(wd.sum(pos), wd.var(pos), wd.histogram(pos, bins=5)[0],
                       wd.byte_histogram((pos * 10).astype(np.uint8)), scheduler="sync")
    ref = f[f > 0]
    _close(got[0], warplab.sum(ref))
    _close(got[1], warplab.var(ref))
    np.testing.assert_array_equal(got[2], warplab.histogram(ref, bins=5)[0])
    np.testing.assert_array_equal(got[3], warplab.byte_histogram((ref * 10).astype(np.uint8)))
    with pytest.raises(ValueError, match="unknown chunk sizes"):
        wd.corrcoef(pos[:, None] * da.ones((1, 4)))


def test_empty_arrays():
    e = da.zeros((0, 5), chunks=2)
    got = dask.compute(wd.sum(e), wd.byte_histogram(e.astype(np.uint8)), wd.sum(e, axis=0),
                       wd.histogram(e, bins=3), scheduler="sync")
    assert got[0] == 0.0 and not got[1].any() and got[2].shape == (5,)
    np.testing.assert_array_equal(got[3][1], warplab.histogram(np.zeros(0), bins=3)[1])


def test_warplab_never_imports_dask():
    import subprocess
    import sys

    code = ("import sys, warplab, warplab.lab.cli; warplab.lab.cli._parser(); "
            "bad = [m for m in ('dask', 'distributed', 'warplab.dask') if m in sys.modules]; "
            "sys.exit(str(bad) if bad else 0)")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_review_fixes_scalars_and_unknown_chunk_weights() -> None:
    """A whole-array mean is a NumPy scalar as NumPy's; weights with unknown chunk sizes
    (boolean indexing) work when the chunk counts match."""
    import dask.array as da

    import warplab.dask as wd

    x = da.from_array(np.arange(10.0), chunks=3)
    r = wd.mean(x).compute()
    assert isinstance(r, np.float64) and r == 4.5
    keep = x >= 2
    y, w = x[keep], da.from_array(np.linspace(1, 2, 10), chunks=3)[keep]
    hx, hw = np.arange(10.0)[2:], np.linspace(1, 2, 10)[2:]
    np.testing.assert_allclose(wd.bincount(y.astype(int), w).compute(),
                               np.bincount(hx.astype(int), hw))
    np.testing.assert_allclose(wd.histogram(y, bins=4, range=(0, 10), weights=w)[0].compute(),
                               np.histogram(hx, bins=4, range=(0, 10), weights=hw)[0])
    with pytest.raises(ValueError, match="as many chunks"):
        wd.bincount(y.astype(int), da.from_array(np.ones(8), chunks=8))


def test_without_a_client_the_graph_stays_lazy():
    s = np.random.default_rng(5).normal(size=(40, 8))
    x = da.from_array(s, chunks=10)
    with dask.config.set(scheduler="sync"):
        r = wd.corrcoef(x)
        assert not any(isinstance(v, distributed.Future) for v in
                       dict(r.__dask_graph__()).values())
        np.testing.assert_allclose(r.compute(), warplab.corrcoef(s), rtol=1e-12, atol=1e-13)

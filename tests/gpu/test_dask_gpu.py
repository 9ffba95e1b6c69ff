"""GPU tests of warplab.dask: CuPy chunks on the threaded scheduler and on a
``dask_cuda.LocalCUDACluster`` (one worker per GPU; skipped where dask_cuda is not
importable), against the single-GPU functions on the whole CuPy array; mixed NumPy/CuPy
chunks raise. Run with ``pytest -m gpu`` on the GPU machine."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import warplab

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)
cupy = pytest.importorskip("cupy")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import dask  # noqa: E402

import warplab.dask as wd  # noqa: E402

RNG = np.random.default_rng(11)


@pytest.fixture(scope="module")
def cuda_cluster():
    dask_cuda = pytest.importorskip("dask_cuda")
    n = cupy.cuda.runtime.getDeviceCount()
    with dask_cuda.LocalCUDACluster(n_workers=min(n, 2), dashboard_address=None) as c, \
            distributed.Client(c, set_as_default=False) as client:
        yield client


@pytest.fixture(params=["threads", "cuda_cluster"])
def compute(request):
    if request.param == "threads":
        return lambda *a: dask.compute(*a, scheduler="threads")
    client = request.getfixturevalue("cuda_cluster")
    return lambda *a: dask.compute(*a, scheduler=client.get)


def _d(h, chunks):
    return da.from_array(cupy.asarray(h), chunks=chunks, asarray=False)


def _check(got, exp, rtol=1e-6):
    assert isinstance(got, cupy.ndarray), type(got)
    assert got.dtype == exp.dtype and got.shape == exp.shape
    np.testing.assert_allclose(cupy.asnumpy(got), cupy.asnumpy(exp), rtol=rtol,
                               atol=1e-9, equal_nan=True)


@pytest.mark.parametrize("chunks", [((300, 0, 701), (64, 64)), ((1001,), (128,))])
def test_reductions_and_series(compute, chunks):
    h = RNG.normal(size=(1001, 128)).astype(np.float32)
    x, d = _d(h, chunks), cupy.asarray(h)
    lazy, exp = [], []
    for op in ("sum", "mean", "min", "max", "var", "std"):
        for axis in (None, 0, 1):
            lazy.append(getattr(wd, op)(x, axis=axis))
            exp.append(getattr(warplab, op)(d, axis=axis))
    lazy += list(wd.series_stats(x))
    exp += list(warplab.series_stats(d))
    for g, e in zip(compute(*lazy), exp):
        _check(g, cupy.asarray(e), rtol=1e-5)


@pytest.mark.parametrize("chunks", [(1 << 20, 0, 3 << 20, 12345), ((4 << 20) + 12345,)])
def test_histograms(compute, chunks):
    n = (4 << 20) + 12345
    h = RNG.integers(0, 256, n, dtype=np.uint8)
    f = RNG.normal(size=n).astype(np.float32)
    x, xf, d, df = _d(h, chunks), _d(f, chunks), cupy.asarray(h), cupy.asarray(f)
    hist, edges = wd.histogram(xf, bins=100)
    lazy = [wd.byte_histogram(x), wd.byte_histogram(x, "letters"), hist, edges,
            wd.bincount(x)]
    eh, ee = warplab.histogram(df, bins=100)
    exp = [warplab.byte_histogram(d), warplab.byte_histogram(d, "letters"), eh, ee,
           warplab.bincount(d)]
    for g, e in zip(compute(*lazy), exp):
        _check(g, e)


@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_corr(compute, precision):
    s = warplab.random_walk(3000, 256, seed=5)
    x = da.from_array(s, chunks=(700, 256), asarray=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = compute(wd.corrcoef(x, precision=precision),
                      *wd.corr_pairs(x, threshold=0.95, precision=precision),
                      *wd.corr_pairs(x, top_k=4, precision=precision))
        exp = [warplab.corrcoef(s, precision=precision),
               *warplab.corr_pairs(s, threshold=0.95, precision=precision),
               *warplab.corr_pairs(s, top_k=4, precision=precision)]
    tol = 1e-9 if precision == "float64" else 4e-6
    r, e = cupy.asnumpy(got[0]), cupy.asnumpy(exp[0])
    assert np.nanmax(np.abs(r - e)) <= tol
    # top_k: the same partners (ties within the precision's error aside)
    assert (cupy.asnumpy(got[4]) == cupy.asnumpy(exp[4])).mean() > 0.99
    if precision == "float64":  # threshold: the same pairs
        for g, e in zip(got[1:4], exp[1:4]):
            np.testing.assert_allclose(cupy.asnumpy(g), cupy.asnumpy(e), atol=1e-9)


def test_histogram_files_on_gpu_workers(compute, tmp_path):
    paths = []
    for i, size in enumerate((0, 5 << 20, 12345)):
        p = tmp_path / f"p{i}.bin"
        p.write_bytes(RNG.integers(0, 256, size, dtype=np.uint8).tobytes())
        paths.append(str(p))
    got = compute(wd.histogram_files(paths, chunk_bytes=1 << 20, device="cuda"))[0]
    np.testing.assert_array_equal(got, warplab.byte_histogram(paths, device="cpu"))


def test_mixed_numpy_cupy_chunks_raise():
    def host_second(b, block_info=None):
        return cupy.asnumpy(b) if block_info[0]["chunk-location"][0] == 1 else b

    h = RNG.integers(0, 256, 1000, dtype=np.uint8)
    x = _d(h, 250).map_blocks(host_second, meta=cupy.empty(0, np.uint8))
    for lazy in (wd.byte_histogram(x), wd.sum(x)):
        with pytest.raises(TypeError, match="mixed chunk types"):
            lazy.compute(scheduler="sync")


def test_separate_processes_with_dask_cuda_worker(tmp_path):
    """``dask scheduler`` and ``dask cuda worker`` (one worker per GPU of the machine) as
    separate processes over TCP: CuPy chunks made on the workers, results equal to NumPy's;
    no process is left after the teardown."""
    import os
    import time

    from warplab.lab.campaigns.dask.processes import dask_cli, process_cluster

    if dask_cli(cuda=True) is None:
        pytest.skip("Dask's CLI with dask-cuda (dask cuda worker) is missing")
    gpus = cupy.cuda.runtime.getDeviceCount()
    start = time.monotonic()
    s = RNG.normal(size=(4000, 256)).cumsum(axis=1)
    h = RNG.integers(0, 256, 3 << 20, dtype=np.uint8)
    paths = []
    for i, size in enumerate((0, 5 << 20, 12345)):
        p = tmp_path / f"p{i}.bin"
        p.write_bytes(RNG.integers(0, 256, size, dtype=np.uint8).tobytes())
        paths.append(str(p))
    with process_cluster(cuda=True, folder=tmp_path / "cluster") as pc:
        with pc.client() as client:
            # each worker's CUDA_VISIBLE_DEVICES starts with its own GPU (os.getenv pickles
            # by reference: it runs on the worker)
            visible = client.run(os.getenv, "CUDA_VISIBLE_DEVICES")
            first = {v.split(",")[0] for v in visible.values()}
            assert len(visible) == gpus and len(first) == gpus, visible
            # host blocks go to the workers, which make them CuPy arrays there
            x = da.from_array(s, chunks=(1000, 256)).map_blocks(cupy.asarray)
            xb = da.from_array(h, chunks=1 << 20).map_blocks(cupy.asarray)
            x, xb = client.persist([x, xb])
            hist, edges = wd.histogram(x, bins=50)
            lazy = [wd.sum(x, axis=0), wd.mean(x, axis=1), hist, edges,
                    wd.byte_histogram(xb),
                    wd.histogram_files(paths, chunk_bytes=1 << 20, device="cuda"),
                    wd.corrcoef(x), *wd.corr_pairs(x, threshold=0.9)]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                got = dask.compute(*lazy, scheduler=client.get)
        got = [cupy.asnumpy(g) if isinstance(g, cupy.ndarray) else np.asarray(g) for g in got]
        allb = b"".join(Path(p).read_bytes() for p in paths)
        exp = [np.sum(s, axis=0), np.mean(s, axis=1), *np.histogram(s, bins=50),
               np.bincount(h, minlength=256), np.bincount(np.frombuffer(allb, np.uint8),
                                                          minlength=256), np.corrcoef(s)]
        for g, e in zip(got, exp):
            np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-9)
        r = np.corrcoef(s)
        i, j = np.nonzero(np.triu(np.abs(r) >= 0.9, 1))
        far = np.abs(np.abs(r[i, j]) - 0.9) > 1e-9  # pairs at the threshold may fall either way
        assert abs(len(got[-3]) - len(i)) <= (~far).sum()
    assert pc.alive() == [], f"processes left after the teardown: {pc.alive()}"
    assert time.monotonic() - start < 240

"""GPU tests of the placement plan of ``warplab.dask.corrcoef``/``corr_pairs``: a
``dask_cuda.LocalCUDACluster`` with one worker per GPU of the machine (1, 2 or 4) as the
default client, CuPy chunks; results equal to the single-GPU call, blocks spread over every
worker, each worker holding one replica. Run with ``pytest -m gpu`` on the GPU machine."""
from __future__ import annotations

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

RNG = np.random.default_rng(23)


@pytest.fixture(scope="module")
def client():
    dask_cuda = pytest.importorskip("dask_cuda")
    n = cupy.cuda.runtime.getDeviceCount()
    with dask_cuda.LocalCUDACluster(n_workers=n, dashboard_address=None) as c, \
            distributed.Client(c) as cl:  # the default client: the functions plan for it
        yield cl


def _walks(m, n, chunks):
    h = np.cumsum(RNG.normal(size=(m, n)), axis=1).astype(np.float32)
    h[3] = 1.5  # a constant series: NaN coefficients, no pairs
    return h, da.from_array(cupy.asarray(h), chunks=(chunks, (n,)), asarray=False)


def _holders(client, arr):
    has = client.who_has(distributed.futures_of(arr))
    return {w for ws in has.values() for w in ws}


@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_corrcoef_on_every_gpu_equals_the_single_call(client, precision):
    h, x = _walks(1500, 96, (400, 0, 700, 400))
    r = wd.corrcoef(x, precision=precision).persist()
    distributed.wait(r)
    n = len(client.nthreads())
    assert len(_holders(client, r)) == min(n, 4)
    got = r.compute()
    assert isinstance(got, cupy.ndarray)
    with np.errstate(invalid="ignore", divide="ignore"):
        exp = warplab.corrcoef(cupy.asarray(h), precision=precision)
    tol = 1e-12 if precision == "float64" else 2e-5
    np.testing.assert_allclose(cupy.asnumpy(got), cupy.asnumpy(exp), atol=tol, equal_nan=True)


@pytest.mark.parametrize("kw", [{"threshold": 0.7}, {"threshold": 0.0}, {"top_k": 5}])
def test_corr_pairs_on_every_gpu_equal_the_single_call(client, kw):
    h, x = _walks(2000, 64, (500, 500, 1000))
    lazy = wd.corr_pairs(x, **kw)
    got = [cupy.asnumpy(a) for a in dask.compute(*lazy)]
    with np.errstate(invalid="ignore", divide="ignore"):
        exp = [cupy.asnumpy(a) for a in warplab.corr_pairs(cupy.asarray(h), **kw)]
    assert got[0].size == exp[0].size
    np.testing.assert_array_equal(got[0], exp[0])
    np.testing.assert_array_equal(got[1], exp[1])
    np.testing.assert_allclose(got[2], exp[2], atol=1e-12)


def test_threshold_pairs_persisted_stay_on_their_workers(client):
    _, x = _walks(3000, 32, (3000,))
    i, j, r = (a.persist() for a in wd.corr_pairs(x, threshold=0.9))
    distributed.wait([i, j, r])
    assert len(_holders(client, i)) == len(client.nthreads())
    counts = dask.compute(*[dask.delayed(len)(c) for c in i.to_delayed().ravel()])
    assert sum(counts) > 0


def test_int8_slices_corrcoef_on_every_gpu_is_the_single_call_bit_for_bit(client):
    """Series of 4,096 values: the int8_slices engine by panels, s chosen from every
    chunk's statistics; an empty chunk and a constant series included."""
    h, x = _walks(1800, 4096, (700, 0, 900, 200))
    r = wd.corrcoef(x).persist()
    distributed.wait(r)
    got = cupy.asnumpy(r.compute())
    from warplab.core.registry import record_variants

    with np.errstate(invalid="ignore", divide="ignore"), record_variants() as ran:
        exp = cupy.asnumpy(warplab.corrcoef(cupy.asarray(h)))
    assert [r.variant for r in ran] == ["int8_slices"]
    np.testing.assert_array_equal(got, exp)


def _idle() -> bool:
    return bool(cupy.cuda.Stream.null.done)


def test_corrcoef_blocks_are_done_when_wait_returns(client):
    """The GPU work of a worker's blocks is queued by one task and waited for block by block
    by the tasks that hand the blocks to Dask: when ``wait()`` returns, no device has work
    left (about 30 ms of int8 GEMMs a worker here, far longer than the wait's round trip)."""
    h = cupy.cumsum(cupy.random.default_rng(3).standard_normal((32768, 4096), np.float32),
                    axis=1)
    x = da.from_array(h, chunks=(8192, 4096), asarray=False).persist()
    distributed.wait(x)
    r = wd.corrcoef(x).persist()
    distributed.wait(r)
    assert all(client.run(_idle).values())
    corner = cupy.asnumpy(r[:64, -64:].compute())
    with np.errstate(invalid="ignore", divide="ignore"):
        exp = cupy.asnumpy(warplab.corrcoef(h)[:64, -64:])
    np.testing.assert_array_equal(corner, exp)

"""Completion means completion: when ``persist()`` + ``wait()`` or ``compute()`` of a
``warplab.dask`` result returns, the device work behind it has finished.

A GPU runs a kernel after the call that launched it returns, so a task that hands back a
CuPy array is "done" for Dask while its kernels still run. The fake device of
``slow_device`` models that without a GPU: every operation on its arrays stays unfinished
until something synchronises the device. Each test checks
that no queued work is left unfinished when the scheduler says the result is ready, on the
threaded scheduler and on an in-process ``distributed`` cluster; the control cases (a task
function that is not wrapped by ``completed``, Dask's own ``sum``) show that the check sees
unfinished work where nothing waits.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import dask  # noqa: E402
import slow_device as sd  # noqa: E402

import warplab  # noqa: E402
import warplab.dask as wd  # noqa: E402
from warplab.dask.chunking import completed  # noqa: E402

RNG = np.random.default_rng(5)
H = RNG.normal(size=(40, 16)).astype(np.float32)
B = RNG.integers(0, 256, 1000, dtype=np.uint8)
INTS = RNG.integers(0, 20, 300)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, processes=False, threads_per_worker=4,
                                  dashboard_address=None) as c, \
            distributed.Client(c, set_as_default=False) as cl:
        yield cl


def _persist_threads(lazy: list, client: Any) -> list:
    return list(dask.persist(*lazy, scheduler="threads", num_workers=8))


def _compute_threads(lazy: list, client: Any) -> list:
    return list(dask.compute(*lazy, scheduler="threads", num_workers=8))


def _persist_wait(lazy: list, client: Any) -> list:
    out = client.persist(lazy)
    with client.as_current():
        distributed.wait(out)
    return out


def _compute_cluster(lazy: list, client: Any) -> list:
    return list(dask.compute(*lazy, scheduler=client.get))


WAYS: dict[str, Callable[[list, Any], list]] = {
    "threads-persist": _persist_threads, "threads-compute": _compute_threads,
    "cluster-persist-wait": _persist_wait, "cluster-compute": _compute_cluster}


def _ready(way: str, lazy: list, request: pytest.FixtureRequest) -> tuple[list, int]:
    """Run ``lazy`` the way named; the results and how much queued device work had not
    finished the moment the scheduler said they were ready."""
    client = request.getfixturevalue("client") if way.startswith("cluster") else None
    sd.reset()
    out = WAYS[way](lazy, client)
    left = sd.unfinished()
    assert sd.queued() > 0, "the fake device ran nothing: the test tests nothing"
    return out, left


def _values(out: list, client: Any) -> list:
    """Persisted collections computed (untimed, after the check), as host arrays."""
    got = dask.compute(*out, scheduler=client.get if client else "sync")
    return [np.asarray(sd.host(g)) for g in got]


def _library_calls(whole: bool) -> tuple[list, list]:
    """Lazy warplab.dask results over the fake device's chunks and their expected values;
    ``whole``: only results of one chunk (``compute()`` of a result of several chunks ends
    with Dask's own concatenation, which does not wait for the device: docs/dask.md)."""
    x = da.from_array(sd.dev(H), chunks=(15, 16), asarray=False)  # 15, 15, 10 rows
    xb = da.from_array(sd.dev(B), chunks=600, asarray=False)
    xi = da.from_array(sd.dev(INTS), chunks=200, asarray=False)
    hist, edges = wd.histogram(x, bins=8)
    lazy = [wd.sum(x, axis=0), wd.mean(x), wd.min(x, axis=1), wd.max(x), wd.var(x, axis=0),
            wd.std(x), *wd.series_stats(x), wd.byte_histogram(xb), hist, edges,
            wd.histogram(x, bins=5, range=(-1, 1), density=True)[0], wd.bincount(xi)]
    exp = [warplab.sum(H, axis=0), warplab.mean(H), warplab.min(H, axis=1), warplab.max(H),
           warplab.var(H, axis=0), warplab.std(H), *warplab.series_stats(H),
           warplab.byte_histogram(B), *warplab.histogram(H, bins=8),
           warplab.histogram(H, bins=5, range=(-1, 1), density=True)[0],
           warplab.bincount(INTS)]
    if whole:  # min along axis 1 and series_stats have a chunk per row chunk
        keep = [i for i, a in enumerate(lazy) if a.npartitions == 1]
        lazy, exp = [lazy[i] for i in keep], [exp[i] for i in keep]
    return lazy, exp


@pytest.mark.parametrize("way", list(WAYS))
def test_results_are_ready_when_the_scheduler_says_so(way: str, monkeypatch: pytest.MonkeyPatch,
                                                      request: pytest.FixtureRequest) -> None:
    sd.install(monkeypatch)
    lazy, exp = _library_calls(whole=way.endswith("compute"))
    out, left = _ready(way, lazy, request)
    assert left == 0, f"{left} pieces of device work still queued after {way}"
    client = request.getfixturevalue("client") if way.startswith("cluster") else None
    for got, e in zip(_values(out, client), exp):
        np.testing.assert_allclose(got, np.asarray(e), rtol=1e-5, atol=1e-6)


def _scaled(b: Any) -> Any:
    return b * 2  # one kernel, and the task returns before it finishes


@pytest.mark.parametrize("way", list(WAYS))
def test_the_check_sees_tasks_that_do_not_wait(way: str, monkeypatch: pytest.MonkeyPatch,
                                               request: pytest.FixtureRequest) -> None:
    """Controls: the same check fails a task function not wrapped by ``completed`` and
    Dask's own ``sum``, and passes the same function once wrapped."""
    sd.install(monkeypatch)
    x = da.from_array(sd.dev(H), chunks=(10, 16), asarray=False).rechunk(-1)  # one chunk
    for lazy in ([x.map_blocks(_scaled)], [x.sum(axis=0)]):
        _, left = _ready(way, lazy, request)
        assert left > 0, f"{way}: a task that does not wait left no work queued"
    _, left = _ready(way, [x.map_blocks(completed(_scaled))], request)
    assert left == 0


class _Event:
    """A CUDA event's stand-in: done once synchronised."""

    def __init__(self) -> None:
        self.done = False

    def synchronize(self) -> None:
        self.done = True


def test_a_block_leaves_its_worker_only_once_its_gpu_work_is_done():
    """corrcoef's worker task hands its blocks on with the end of their GPU work; pickling
    that end (Dask spilling or moving the task's output) waits for it first and travels as
    done (a CUDA event cannot be pickled)."""
    import pickle

    from warplab.dask.corr import Done

    ev = _Event()
    copy = pickle.loads(pickle.dumps(Done(ev)))
    assert ev.done
    assert copy.event is None
    copy.wait()  # nothing left to wait for

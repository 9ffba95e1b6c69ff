"""The placement plan of ``warplab.dask.corrcoef``/``corr_pairs``: equal shares of work per
worker, one replica of the series per worker, each task where its replica is, and results equal
to the single-machine call on clusters of 1, 2 and 3 workers."""
from __future__ import annotations

import os
from itertools import pairwise

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import dask  # noqa: E402

import warplab  # noqa: E402
import warplab.dask as wd  # noqa: E402
from warplab.dask.placement import deal_blocks, equal_work_rows  # noqa: E402

RNG = np.random.default_rng(11)


@pytest.mark.parametrize("m,parts", [(2, 1), (2, 5), (10, 3), (1000, 4), (400_000, 8),
                                     (33, 33)])
def test_equal_work_rows_cut_the_triangle_evenly(m, parts):
    b = equal_work_rows(m, parts)
    assert b[0] == 0 and b[-1] == m and all(x < y for x, y in pairwise(b))
    assert len(b) - 1 <= min(parts, m)
    work = [sum(m - 1 - i for i in range(lo, hi)) if m < 5000 else
            (hi - lo) * (m - 1) - (hi * (hi - 1) - lo * (lo - 1)) // 2
            for lo, hi in pairwise(b)]
    assert sum(work) == m * (m - 1) // 2
    if len(work) > 1:  # one row more or less per cut
        assert max(work) - min(work) <= 2 * m


@pytest.fixture(scope="module", params=[1, 2, 3])
def client(request):
    # no memory limit: in-process workers see the test process's memory and would pause
    with distributed.LocalCluster(n_workers=request.param, processes=False, memory_limit=0,
                                  threads_per_worker=1, dashboard_address=None) as c, \
            distributed.Client(c) as cl:  # the default client: the functions plan for it
        yield cl


def _who(client, arr):
    """The worker holding each chunk of a persisted dask array (exactly one each)."""
    has = client.who_has(distributed.futures_of(arr))
    assert all(len(w) == 1 for w in has.values())
    return {k: next(iter(w)) for k, w in has.items()}


def test_corrcoef_blocks_are_shared_evenly_and_exact(client):
    s = RNG.normal(size=(61, 19))
    x = da.from_array(s, chunks=((13, 9, 20, 0, 19), (19,)))
    r = wd.corrcoef(x).persist()
    distributed.wait(r)
    where = _who(client, r)  # before compute(), which copies every block to one worker
    np.testing.assert_allclose(r.compute(), warplab.corrcoef(s), rtol=1e-12, atol=1e-13)
    workers = sorted(client.nthreads())
    # a block above the diagonal and its transpose live on one worker
    for (name, i, j), w in where.items():
        assert where[(name, j, i)] == w
    used = set(where.values())
    assert used <= set(workers)
    if len(workers) > 1:
        assert len(used) > 1  # the work is spread, not all on one worker


def test_corr_pairs_on_every_worker_count_equal_the_single_call(client):
    s = np.cumsum(RNG.normal(size=(70, 24)), axis=1)
    s[5] = 3.0  # a constant series pairs with nothing
    x = da.from_array(s, chunks=((30, 40), (24,)))
    for kw in ({"threshold": 0.5}, {"threshold": 0.0}, {"threshold": 1.0}, {"top_k": 4},
               {"top_k": 100}):
        with np.errstate(invalid="ignore", divide="ignore"), \
                pytest.warns(RuntimeWarning) if kw == {"top_k": 4} else _nothing():
            exp = warplab.corr_pairs(s, **kw)
        got = dask.compute(*wd.corr_pairs(x, **kw))
        for g, e in zip(got, exp):
            np.testing.assert_array_equal(g[:0].dtype, e[:0].dtype)
        np.testing.assert_array_equal(got[0], exp[0])
        np.testing.assert_array_equal(got[1], exp[1])
        np.testing.assert_allclose(got[2], exp[2], rtol=1e-12)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_threshold_pairs_are_spread_over_the_workers(client):
    s = np.cumsum(RNG.normal(size=(200, 16)), axis=1)
    x = da.from_array(s, chunks=50)
    i, j, r = (a.persist() for a in wd.corr_pairs(x, threshold=0.2))
    distributed.wait([i, j, r])
    where = _who(client, i)
    n = len(client.nthreads())
    assert len(set(where.values())) == n
    assert len(where) % n == 0  # whole shares per worker


def _task_runs(client, work):
    """``key: (worker, actions)`` of every task ``work`` runs, from the task stream."""
    with distributed.get_task_stream(client) as ts:
        work()
    return {d["key"]: (d["worker"], [a["action"] for a in d["startstops"]]) for d in ts.data}


def test_corrcoef_blocks_run_where_their_chunks_are(client):
    """The plan as run: at most two tasks a worker compute its blocks, one from the chunks
    it holds (nothing fetched) and one for the rest; every block and transpose is read on
    its task's worker with nothing fetched; every worker has a share."""
    n = len(client.nthreads())
    workers = sorted(client.nthreads())
    s = np.cumsum(RNG.normal(size=(400, 32)), axis=1)
    x = da.from_array(s, chunks=50).persist()
    distributed.wait(x)
    runs = _task_runs(client, lambda: distributed.wait(wd.corrcoef(x).persist()))
    np.testing.assert_allclose(wd.corrcoef(x).compute(), warplab.corrcoef(s), rtol=1e-12,
                               atol=1e-13)
    mine = {k: v for k, v in runs.items() if isinstance(k, tuple) and
            str(k[0]).startswith("wl-corrcoef-")}
    parts = {k: v for k, v in mine.items() if k[0].endswith("-part")}
    blocks = {k: v for k, v in mine.items() if not k[0].endswith("-part")}
    assert len(blocks) == x.numblocks[0] ** 2
    assert all(w == workers[k[1]] for k, (w, _) in parts.items())
    assert all("transfer" not in acts for k, (_, acts) in parts.items() if k[2] == 1)
    assert len(parts) <= 2 * n and {k[1] for k in parts} == set(range(n))
    assert all("transfer" not in acts for _, acts in blocks.values())
    assert len({w for w, _ in blocks.values()}) == n


def test_each_worker_builds_one_replica_for_its_pairs(client):
    """``corr_pairs``: n replicas on n different workers, and every pair task on its
    replica's worker with nothing fetched for it (a task moved elsewhere would fetch a whole
    replica)."""
    n = len(client.nthreads())
    s = np.cumsum(RNG.normal(size=(400, 32)), axis=1)
    x = da.from_array(s, chunks=50).persist()
    distributed.wait(x)
    runs = _task_runs(client, lambda: distributed.wait(
        [a.persist() for a in wd.corr_pairs(x, threshold=0.3)]))
    reps = {k: w for k, (w, _) in runs.items() if isinstance(k, tuple) and
            str(k[0]).startswith("wl-corrpairs-") and k[0].endswith("-rep")}
    assert len(reps) == n and len(set(reps.values())) == n
    tasks = {k: v for k, v in runs.items() if isinstance(k, tuple) and
             str(k[0]).startswith("wl-corrpairs-") and k[0].endswith("-rows")}
    assert tasks
    assert {w for w, _ in tasks.values()} <= set(reps.values())
    assert len({w for w, _ in tasks.values()}) == n  # every worker has a share
    assert all("transfer" not in acts for _, acts in tasks.values())


@pytest.mark.parametrize("how", ["lazy", "persisted", "persisted then lazy"])
def test_the_input_goes_with_the_planned_tasks(client, how):
    """The series' graph travels with the placed tasks in one update: lazy (optimised
    first), persisted (its futures), or persisted chunks under lazy tasks (sent as they
    are: Dask's optimisation would drop the futures)."""
    s = np.cumsum(RNG.normal(size=(90, 12)), axis=1)
    x = da.from_array(s, chunks=((40, 30, 20), (12,)))
    if how != "lazy":
        x = x.persist()
        distributed.wait(x)
    if how == "persisted then lazy":
        x = (x * 2.0 + 1.0).rechunk(((30, 30, 30), (12,)))
    np.testing.assert_allclose(wd.corrcoef(x).compute(), warplab.corrcoef(s), rtol=1e-12,
                               atol=1e-13)
    got = dask.compute(*wd.corr_pairs(x, threshold=0.5))
    exp = warplab.corr_pairs(s, threshold=0.5)
    np.testing.assert_array_equal(got[0], exp[0])
    np.testing.assert_array_equal(got[1], exp[1])


def test_file_shares_one_per_worker(client, tmp_path):
    """histogram_files' default shares: one per worker, each read on its own worker (the
    scheduler alone may queue two root tasks on one worker), the counts exact."""
    data = RNG.integers(0, 256, 3 * 100_003, dtype=np.uint8)
    paths = []
    for i, part in enumerate(np.array_split(data, 3)):
        p = tmp_path / f"f{i}.bin"
        p.write_bytes(part.tobytes())
        paths.append(str(p))
    with distributed.get_task_stream(client) as ts:
        h = wd.histogram_files(paths).persist()
        distributed.wait(h)
    np.testing.assert_array_equal(h.compute(), np.bincount(data, minlength=256))
    shares = [d["worker"] for d in ts.data if str(d["key"][0]).startswith("wl-files-")]
    assert sorted(shares) == sorted(client.nthreads())


@pytest.mark.parametrize("nb,groups", [(8, 1), (8, 2), (8, 4), (16, 4), (5, 3), (3, 4)])
def test_deal_blocks_balances_and_fetches_less_than_replicas(nb, groups):
    rows = [int(r) for r in RNG.integers(50, 60, size=nb)]
    rows[nb // 2] = 0  # an empty chunk
    home = [p * groups // nb for p in range(nb)]
    got = deal_blocks(rows, home, groups)
    assert sorted(got) == [(i, j) for i in range(nb) for j in range(i, nb)]
    cost = {b: rows[b[0]] * rows[b[1]] * (0.5 if b[0] == b[1] else 1.0) for b in got}
    load = [sum(c for b, c in cost.items() if got[b] == g) for g in range(groups)]
    assert max(load) - sum(load) / groups <= max(cost.values()) + 1e-9
    fetched = [{p for b, g2 in got.items() if g2 == g and cost[b] for p in b} -
               {p for p in range(nb) if home[p] == g} for g in range(groups)]
    assert all(got[(i, j)] == home[i] for (i, j), c in cost.items() if not c)
    if groups == 1:
        assert fetched == [set()]
    else:  # never more than whole replicas; fewer where each worker has a few chunks
        replica = sum(1 for g in range(groups) for p in range(nb) if home[p] != g and rows[p])
        got_total = sum(len(f) for f in fetched)
        assert got_total < replica if groups >= 4 and nb >= 2 * groups else \
            got_total <= replica


def test_host_processes_count_the_worker_processes_of_each_host():
    from warplab.dask.chunking import host_processes

    ws = ["tcp://10.0.0.1:4001", "ucx://10.0.0.1:4002", "tcp://10.0.0.2:4001",
          "tcp://[fe80::1]:9000", "inproc://10.0.0.3/77/1", "inproc://10.0.0.3/77/2",
          "inproc://10.0.0.3/78/1"]
    assert host_processes(ws) == {ws[0]: 2, ws[1]: 2, ws[2]: 1, ws[3]: 1, ws[4]: 2, ws[5]: 2,
                                  ws[6]: 2}
    assert host_processes([]) == {}


def test_file_workers_of_one_host_share_its_cores(tmp_path, monkeypatch):
    """Two worker processes of this host: the first files task of each makes its streaming
    threads for two processes (cores / 2); ``WARPLAB_STREAM_THREADS`` wins where set."""
    from warplab.core import staging

    data = RNG.integers(0, 256, 200_003, dtype=np.uint8)
    p = tmp_path / "f.bin"
    p.write_bytes(data.tobytes())
    want = {None: max(1, min(32, (os.cpu_count() or 1) // 2)), "3": 3}
    for setting in (None, "3"):
        if setting is None:
            monkeypatch.delenv("WARPLAB_STREAM_THREADS", raising=False)
        else:
            monkeypatch.setenv("WARPLAB_STREAM_THREADS", setting)
        with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                      dashboard_address=None) as c, distributed.Client(c) as cl:
            h = wd.histogram_files([str(p)]).compute()
            assert set(cl.run(staging.threads).values()) == {want[setting]}
        np.testing.assert_array_equal(h, np.bincount(data, minlength=256))

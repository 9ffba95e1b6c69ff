"""warplab.dask on a cluster of separate processes started by Dask's own command-line tools
(``dask scheduler`` + ``dask worker --nworkers 2 --nthreads 1``, over TCP, as on several
machines): the results equal NumPy's, the teardown leaves no process behind, and the whole
takes a bounded time. Skipped only where Dask's CLI is missing."""
from __future__ import annotations

import functools
import os
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
pytest.importorskip("distributed")

import dask  # noqa: E402

import warplab  # noqa: E402
import warplab.dask as wd  # noqa: E402
from warplab.lab.campaigns.dask import modes as md  # noqa: E402
from warplab.core import staging  # noqa: E402
from warplab.lab.campaigns.dask.processes import dask_cli, process_cluster  # noqa: E402

if dask_cli() is None:
    pytest.skip("Dask's command-line tools (python -m dask scheduler/worker) are missing",
                allow_module_level=True)

RNG = np.random.default_rng(23)


#: The workers' transfer limit read where it runs (a partial of Dask's own function: the
#: workers cannot import this module).
_transfer_limit = functools.partial(dask.config.get,
                                    "distributed.worker.transfer.message-bytes-limit")


#: The workers' streaming threads setting, read where they run.
_stream_threads = functools.partial(os.getenv, "WARPLAB_STREAM_THREADS")


def _files(tmp_path: Path, sizes: tuple[int, ...]) -> list[str]:
    paths = []
    for i, size in enumerate(sizes):
        p = tmp_path / f"part{i}.bin"
        p.write_bytes(RNG.integers(0, 256, size, dtype=np.uint8).tobytes())
        paths.append(str(p))
    return paths


def test_the_campaigns_local_clusters_take_the_transfer_limit(tmp_path, monkeypatch):
    """Every worker of the campaign's clusters fetches up to ``modes.TRANSFER_BYTES`` from
    a peer in one message (the nannies hand the config to the worker processes); their
    streaming threads are the library's own split of the host (no setting of the
    campaign's): two workers, cores / 2 each once a files task has run."""
    monkeypatch.delenv("WARPLAB_STREAM_THREADS", raising=False)
    paths = _files(tmp_path, (30_000,))
    with md.open_cluster(md.Mode("cluster", 2, "tcp"), "cpu", tmp_path) as (client, _):
        assert set(client.run(_transfer_limit).values()) == {md.TRANSFER_BYTES}
        assert set(client.run(_stream_threads).values()) == {None}
        wd.histogram_files(paths).compute()
        assert set(client.run(staging.threads).values()) == {staging.host_threads(2)}
    assert _transfer_limit() != md.TRANSFER_BYTES  # this process's config is unchanged


def test_separate_processes_over_tcp(tmp_path):
    start = time.monotonic()
    s = RNG.normal(size=(300, 40)).cumsum(axis=1)
    h = RNG.integers(0, 256, 50_000, dtype=np.uint8)
    paths = _files(tmp_path, (0, 7_000, 40_001))
    with process_cluster(workers=2, threads=1, folder=tmp_path / "cluster") as pc:
        assert pc.address.startswith("tcp://")
        with pc.client() as client:
            info = client.scheduler_info()["workers"]
            pids = set(client.run(os.getpid).values())
            assert len(info) == 2 and len(pids) == 2 and os.getpid() not in pids
            assert set(client.run(_transfer_limit).values()) == {md.TRANSFER_BYTES}
            assert set(client.run(_stream_threads).values()) == \
                {os.environ.get("WARPLAB_STREAM_THREADS")}
            x = da.from_array(s, chunks=(70, 40))
            xb = da.from_array(h, chunks=12_000)
            hist, edges = wd.histogram(x, bins=12)
            lazy = [wd.sum(x, axis=0), wd.mean(x, axis=1), hist, edges, wd.byte_histogram(xb),
                    wd.histogram_files(paths, chunk_bytes=9_000), wd.corrcoef(x),
                    *wd.corr_pairs(x, threshold=0.8)]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                got = dask.compute(*lazy, scheduler=client.get)
                exp = [np.sum(s, axis=0), np.mean(s, axis=1), *np.histogram(s, bins=12),
                       np.bincount(h, minlength=256),
                       np.bincount(np.frombuffer(b"".join(Path(p).read_bytes() for p in paths),
                                                 np.uint8), minlength=256),
                       np.corrcoef(s), *warplab.corr_pairs(s, threshold=0.8)]
        for g, e in zip(got, exp):
            np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-12)
        # the pairs against NumPy's matrix, not only against the single-machine call
        r = np.corrcoef(s)
        i, j = np.nonzero(np.triu(np.abs(r) >= 0.8, 1))
        np.testing.assert_array_equal(got[-3], i)
        np.testing.assert_array_equal(got[-2], j)
    assert pc.alive() == [], f"processes left after the teardown: {pc.alive()}"
    assert all(p.poll() is not None for p in pc.procs)
    assert time.monotonic() - start < 150

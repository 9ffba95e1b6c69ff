"""Where the Dask campaign runs a workload: its modes and the clusters behind them.

* ``direct``: one warplab call on the whole data in this process (one GPU, or NumPy).
* ``cluster``: ``dask_cuda.LocalCUDACluster`` with 1, 2 and 4 workers, one GPU each (only
  counts up to the GPUs present), over ``tcp`` and, where ``distributed_ucxx`` (dask-cuda's
  UCX transport) imports, ``ucx``; on the cpu backend ``distributed.LocalCluster`` worker
  processes (counts up to the cores, at least 2).
* ``processes``: ``dask scheduler`` and ``dask cuda worker`` (every GPU) or ``dask worker``
  (2 processes) started by Dask's CLI as separate processes over TCP (``processes.py``).

No cluster spills: host and device memory limits are off (``memory_limit=0``,
``device_memory_limit=0``), so data and results stay where they are made. Every cluster's
workers fetch up to :data:`TRANSFER_BYTES` from one peer in one message (Dask's
``distributed.worker.transfer.message-bytes-limit``, 50 MB by default: a worker building a
``corrcoef`` replica fetched the other worker's four 128 MiB blocks one message at a time;
``docs/dask.md``, ``benchmarks/NOTES.md``); the workers of one host stream files with a
thread per core together by themselves (``staging.share_host``, from
``warplab.dask.histogram_files``: what a user's cluster does). Also here: what
each worker's device synchronisation costs after a ``wait()`` (the completion lag), the fixed
cost of one ``compute()``, and releasing a run's keys before the next run.
"""
from __future__ import annotations

import contextlib
import gc
import importlib.util
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warplab.core import staging
from warplab.lab.campaigns.dask.processes import TRANSFER_BYTES, process_cluster
from warplab.lab.harness.stats import summarize

#: The workers' transfer limit (``processes.TRANSFER_BYTES``) as Dask's config, for the
#: nannies of the local clusters.
WORKER_CONFIG = {"distributed.worker.transfer.message-bytes-limit": TRANSFER_BYTES}


@dataclass(frozen=True)
class Mode:
    """``kind`` (``direct``, ``cluster``, ``processes``), its workers and protocol."""

    kind: str
    workers: int
    protocol: str | None = None

    @property
    def label(self) -> str:
        return self.kind if self.kind == "direct" else \
            f"{self.kind} {self.protocol} x{self.workers}"


def ucx_available() -> bool:
    """dask-cuda's UCX transport imports (``distributed_ucxx``)."""
    try:
        return importlib.util.find_spec("distributed_ucxx") is not None
    except (ImportError, ValueError):
        return False


def gpu_count(backend: str) -> int:
    if backend != "cuda":
        return 0
    import cupy

    return int(cupy.cuda.runtime.getDeviceCount())


def plan_modes(backend: str, gpus: int, cores: int, ucx: bool) -> list[Mode]:
    """The modes this machine runs, in order: direct, the clusters, the separate processes."""
    limit = gpus if backend == "cuda" else max(2, cores)
    counts = [w for w in (1, 2, 4) if w <= limit]
    protocols = ["tcp", "ucx"] if ucx and backend == "cuda" else ["tcp"]
    out = [Mode("direct", 1)]
    out += [Mode("cluster", w, p) for p in protocols for w in counts]
    out.append(Mode("processes", gpus if backend == "cuda" else 2, "tcp"))
    return out


@contextlib.contextmanager
def open_cluster(mode: Mode, backend: str, folder: Path, threads: int = 1
                 ) -> Iterator[tuple[Any, str]]:
    """A client of the cluster of ``mode``, current inside the block (``wait()`` and the
    chunking rule's worker count use it), and the cluster's kind. ``threads``: threads per
    worker (``--nthreads`` of the separate processes)."""
    from distributed import Client, LocalCluster

    if mode.kind == "processes":
        extra = ("--memory-limit", "0") + (("--device-memory-limit", "0")
                                           if backend == "cuda" else ())
        with process_cluster(workers=None if backend == "cuda" else mode.workers,
                             threads=threads, cuda=backend == "cuda",
                             protocol=mode.protocol or "tcp", worker_args=extra,
                             folder=folder) as pc, pc.client() as client, \
                client.as_current():
            yield client, "dask cuda worker" if backend == "cuda" else "dask worker"
        return
    import dask

    with dask.config.set(WORKER_CONFIG):  # the nannies hand their config to the workers
        if backend == "cuda":
            from dask_cuda import LocalCUDACluster

            cluster: Any = LocalCUDACluster(
                n_workers=mode.workers,
                CUDA_VISIBLE_DEVICES=",".join(map(str, range(mode.workers))),
                threads_per_worker=threads, protocol=mode.protocol, dashboard_address=None,
                memory_limit=0, device_memory_limit=0, local_directory=str(folder))
        else:
            cluster = LocalCluster(n_workers=mode.workers, processes=True,
                                   threads_per_worker=threads,
                                   protocol=f"{mode.protocol}://", dashboard_address=None,
                                   memory_limit=0, local_directory=str(folder))
    with cluster, Client(cluster, set_as_default=False) as client, client.as_current():
        yield client, type(cluster).__name__


def device_sync_ms() -> float:
    """Milliseconds a device synchronisation takes now in this process (0 without CuPy in
    use: a cpu worker). Run on every worker after ``wait()``: the completion lag."""
    if "cupy" not in sys.modules:
        return 0.0
    import cupy

    t0 = time.perf_counter()
    cupy.cuda.runtime.deviceSynchronize()
    return 1e3 * (time.perf_counter() - t0)


def completion_lag_ms(client: Any | None) -> float:
    """The largest device synchronisation time over the workers (this process without a
    client)."""
    if client is None:
        return device_sync_ms()
    return max(client.run(device_sync_ms).values(), default=0.0)


def fixed_cost(client: Any, runs: int = 20) -> dict:
    """Timing statistics (ms) of one ``compute()`` of a tiny two-chunk sum."""
    import dask
    import dask.array as da

    tiny = da.ones(10, chunks=5).sum()
    dask.compute(tiny, scheduler=client.get)
    ms = []
    for _ in range(runs):
        t0 = time.perf_counter()
        dask.compute(tiny, scheduler=client.get)
        ms.append(1e3 * (time.perf_counter() - t0))
    return summarize(ms)


def _held(keys: list, dask_worker: Any = None) -> int:
    return sum(k in dask_worker.data for k in keys)


def release(client: Any, held: list, timeout: float = 60.0) -> None:
    """Drop the persisted collections in ``held`` (the list is emptied: the caller keeps no
    other reference) and wait until no worker holds their keys, so their device memory is
    back in the workers' pools before the next run."""
    from distributed import futures_of

    keys = [f.key for c in held for f in futures_of(c)]
    held.clear()
    gc.collect()  # the futures' release messages go out as they are collected
    deadline = time.monotonic() + timeout
    while keys and time.monotonic() < deadline and any(client.run(_held, keys).values()):
        time.sleep(0.05)


def workers_of(client: Any) -> int:
    return len(client.scheduler_info(n_workers=-1)["workers"])


def cores() -> int:
    """The host's cores as the library counts them (``staging.cores``)."""
    return staging.cores()

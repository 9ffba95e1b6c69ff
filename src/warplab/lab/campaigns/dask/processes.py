"""A Dask cluster of separate processes, started by Dask's own command-line tools and
connected over TCP as on several machines: ``dask scheduler`` and ``dask worker`` (or
``dask cuda worker``, one worker per GPU), each in a process group of its own.

Used by the tests (a CPU cluster in CI, a GPU one on the GPU machine) and by the campaign's
``processes`` mode::

    with process_cluster(workers=2) as pc, pc.client() as client:
        wd.sum(x).compute(scheduler=client.get)

What the context manager does:

1. ``dask scheduler --scheduler-file F --port 0 --no-dashboard`` (``--protocol``), then
   waits for ``F`` (the address the scheduler chose);
2. ``dask worker --scheduler-file F --nworkers N --nthreads T --no-dashboard`` or
   ``dask cuda worker --scheduler-file F --nthreads T --no-dashboard`` (one worker per
   visible GPU), then waits until the scheduler sees every worker;
3. at exit: asks the scheduler to shut the cluster down, waits for every process, sends
   SIGTERM and then SIGKILL to the process groups of those still there, and checks that no
   process of those groups is left (``ProcessCluster.alive()``).

Every wait is bounded (``timeout``); a process that dies while starting raises
``RuntimeError`` with the end of its log. The processes run this interpreter
(``python -m dask``) with warplab's folder on ``PYTHONPATH``.
"""
from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ProcessCluster", "dask_cli", "process_cluster"]


def dask_cli(cuda: bool = False) -> list[str] | None:
    """The command running Dask's CLI with this interpreter (``python -m dask``), or None
    where it is missing: ``dask`` without its ``__main__``, no ``distributed`` (which brings
    ``dask scheduler`` and ``dask worker``), or for ``cuda`` no ``dask_cuda`` (``dask cuda
    worker``)."""
    need = ["dask.__main__", "distributed"] + (["dask_cuda"] if cuda else [])
    try:
        if any(importlib.util.find_spec(m) is None for m in need):
            return None
    except (ImportError, ValueError):
        return None
    return [sys.executable, "-m", "dask"]


#: The workers' ``distributed.worker.transfer.message-bytes-limit`` in every mode of the
#: campaign: up to this much from one peer in one message (``modes.WORKER_CONFIG``; here
#: through the environment of the processes).
TRANSFER_BYTES = "1GiB"


def _env(workers: int) -> dict[str, str]:
    """This process's environment with warplab's folder first on ``PYTHONPATH`` and every
    entry absolute (the workers may start in another folder), the campaign's transfer
    limit (:data:`TRANSFER_BYTES`) unless the environment sets one. The workers of one host
    split its cores for streaming by themselves (``warplab.dask.histogram_files``)."""
    import warplab

    env = dict(os.environ)
    root = str(Path(warplab.__file__).resolve().parents[1])
    parts = [str(Path(p).resolve()) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys([root, *parts]))
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.setdefault("DASK_DISTRIBUTED__WORKER__TRANSFER__MESSAGE_BYTES_LIMIT", TRANSFER_BYTES)
    return env


def _group_members(pgid: int) -> list[int]:
    """Processes of process group ``pgid`` that are still running (zombies excluded), from
    ``/proc``; an empty list where there is no ``/proc``."""
    alive = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) "
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(entry.name))
    return alive


@dataclass
class ProcessCluster:
    """The running cluster: its scheduler file and address, the expected number of workers,
    the processes started (scheduler first) and their log files."""

    scheduler_file: Path
    address: str
    workers: int
    procs: list[subprocess.Popen] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)

    def client(self, **kwargs: Any) -> Any:
        """A ``distributed.Client`` of this cluster (not set as the default client)."""
        from distributed import Client

        return Client(scheduler_file=str(self.scheduler_file), set_as_default=False, **kwargs)

    def alive(self) -> list[int]:
        """Processes of the cluster's process groups still running (none after exit)."""
        out: list[int] = []
        for p in self.procs:
            members = _group_members(p.pid)
            out += members or ([p.pid] if p.poll() is None else [])
        return sorted(set(out))

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of every process's log."""
        parts = []
        for path in self.logs:
            try:
                text = path.read_text(errors="replace").splitlines()[-lines:]
            except OSError:
                continue
            parts.append(f"--- {path.name}\n" + "\n".join(text))
        return "\n".join(parts)


def _start(cmd: list[str], log: Path, env: dict[str, str], cwd: Path) -> subprocess.Popen:
    with open(log, "wb") as f:
        return subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, cwd=cwd, start_new_session=True)


def _wait_for_file(pc: ProcessCluster, deadline: float) -> str:
    while time.monotonic() < deadline:
        if pc.procs[0].poll() is not None:
            raise RuntimeError(f"dask scheduler exited with status {pc.procs[0].returncode}"
                               f"\n{pc.log_tail()}")
        with contextlib.suppress(OSError, ValueError):
            address = json.loads(pc.scheduler_file.read_text())["address"]
            if address:
                return str(address)
        time.sleep(0.1)
    raise RuntimeError(f"dask scheduler wrote no scheduler file in time\n{pc.log_tail()}")


def _wait_for_workers(pc: ProcessCluster, deadline: float) -> None:
    from distributed import Client

    with Client(scheduler_file=str(pc.scheduler_file), set_as_default=False,
                timeout=max(1.0, deadline - time.monotonic())) as client:
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in pc.procs):
                raise RuntimeError(f"a cluster process exited while starting\n{pc.log_tail()}")
            if len(client.scheduler_info(n_workers=-1)["workers"]) >= pc.workers:
                return
            time.sleep(0.2)
    raise RuntimeError(f"{pc.workers} worker(s) did not connect in time\n{pc.log_tail()}")


def _stop(pc: ProcessCluster, timeout: float) -> None:
    """Shut the cluster down, waiting at most ``timeout`` seconds in all; SIGTERM, then
    SIGKILL, to the process groups of anything left."""
    deadline = time.monotonic() + timeout
    if pc.address:
        with contextlib.suppress(Exception):
            from distributed import Client

            with Client(scheduler_file=str(pc.scheduler_file), set_as_default=False,
                        timeout=5) as client:
                client.shutdown()
    for sig, share in ((None, 0.4), (signal.SIGTERM, 0.4), (signal.SIGKILL, 0.2)):
        if sig is not None:
            for p in pc.procs:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(p.pid, sig)
        until = min(deadline, time.monotonic() + share * timeout)
        while pc.alive() and time.monotonic() < until:
            time.sleep(0.1)
        if not pc.alive():
            break
    for p in pc.procs:  # reap the leaders
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=1)


@contextlib.contextmanager
def process_cluster(*, workers: int | None = None, threads: int = 1, cuda: bool = False,
                    protocol: str = "tcp", worker_args: tuple[str, ...] = (),
                    timeout: float = 90.0, stop_timeout: float = 30.0,
                    folder: str | Path | None = None) -> Iterator[ProcessCluster]:
    """A scheduler and workers in separate processes, started by Dask's CLI (module
    docstring); yields the :class:`ProcessCluster` once every worker is connected.

    Args:
        workers: worker processes (``dask worker --nworkers``); with ``cuda`` the number of
            visible GPUs (``dask cuda worker`` starts one per GPU), which is the default.
        threads: threads per worker (``--nthreads``).
        cuda: ``dask cuda worker`` instead of ``dask worker``.
        protocol: the scheduler's (``tcp``; ``ucx`` where distributed-ucxx is installed).
        worker_args: more options of the worker command (e.g. ``("--memory-limit", "0")``).
        timeout: seconds for the scheduler and the workers to come up.
        stop_timeout: seconds for the teardown.
        folder: where the scheduler file, the logs and the workers' scratch space go
            (default: a temporary folder, removed afterwards).

    Raises:
        RuntimeError: Dask's CLI is missing, or a process exits or is late while starting.
    """
    cli = dask_cli(cuda)
    if cli is None:
        raise RuntimeError("Dask's command-line tools are missing: pip install 'warplab[dask]'"
                           + (" and dask-cuda" if cuda else ""))
    if workers is None:
        if not cuda:
            raise RuntimeError("process_cluster: say how many workers")
        import cupy

        workers = int(cupy.cuda.runtime.getDeviceCount())
    with contextlib.ExitStack() as stack:
        root = Path(folder) if folder is not None else \
            Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="warplab-dask-")))
        root.mkdir(parents=True, exist_ok=True)
        env = _env(workers)
        pc = ProcessCluster(root / "scheduler.json", "", workers)
        pc.scheduler_file.unlink(missing_ok=True)
        try:
            deadline = time.monotonic() + timeout
            pc.logs.append(root / "scheduler.log")
            pc.procs.append(_start([*cli, "scheduler", "--scheduler-file", str(pc.scheduler_file),
                                    "--port", "0", "--no-dashboard", "--protocol", protocol],
                                   pc.logs[-1], env, root))
            pc.address = _wait_for_file(pc, deadline)
            common = ["--scheduler-file", str(pc.scheduler_file), "--nthreads", str(threads),
                      "--no-dashboard", "--local-directory", str(root / "scratch"),
                      *worker_args]
            cmd = [*cli, "cuda", "worker", *common] if cuda else \
                [*cli, "worker", *common, "--nworkers", str(workers)]
            pc.logs.append(root / "workers.log")
            pc.procs.append(_start(cmd, pc.logs[-1], env, root))
            _wait_for_workers(pc, deadline)
            yield pc
        finally:
            _stop(pc, stop_timeout)

"""What every ``warplab.dask`` function shares: the chunk kind (NumPy or CuPy) and its checks,
the chunking rule for fast GPU tasks (:func:`plan`, :func:`rechunk`), the number of workers,
and a small tree of combine tasks for results whose length the graph cannot know.

The chunking rule (docs/dask.md): Dask costs about a millisecond per task and tens of
milliseconds per ``compute()`` on a distributed cluster, while a GPU pass over 1 GiB takes
half a millisecond. So: **one task per worker**, split further only where a chunk would
exceed ``max_chunk_bytes`` (default 4 GiB of GPU data, 256 MiB of host data); the tree of
partial results combines ``split_every = tasks per worker`` partials first (one worker's
partials, as Dask places a combine next to most of its inputs), then the workers' partials.
"""
from __future__ import annotations

import functools
import math
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import dask.array as da
import numpy as np
from dask.highlevelgraph import HighLevelGraph

from warplab.core.errors import InvalidTypeError, InvalidValueError

#: Largest chunk :func:`plan` makes, per chunk kind (bytes).
MAX_CHUNK_BYTES = {"cupy": 4 << 30, "numpy": 256 << 20}


def module_of(a: Any) -> str:
    """``"numpy"`` or ``"cupy"``: the array module of one chunk (or meta). ``TypeError`` for
    anything else (masked arrays, sparse matrices, pandas objects)."""
    if type(a) is np.ndarray or isinstance(a, np.generic):
        return "numpy"
    if is_cupy(a):
        return "cupy"
    raise InvalidTypeError(f"warplab.dask: chunks must be NumPy or CuPy arrays, got "
                           f"{type(a).__module__}.{type(a).__name__}")


def is_cupy(a: Any) -> bool:
    """A CuPy array, its subclasses included (warplab's ``DeviceScalar``/``DeviceArray`` results):
    recognised by the class, not the type's module name."""
    cupy = sys.modules.get("cupy")
    return cupy is not None and isinstance(a, cupy.ndarray)


def holds_device_array(out: Any) -> Any:
    """The first CuPy array in a task's output (an array, or tuples, lists and dicts of them),
    else None."""
    if is_cupy(out):
        return out
    items = out.values() if isinstance(out, dict) else out if isinstance(out, (tuple, list)) \
        else ()
    for item in items:
        found = holds_device_array(item)
        if found is not None:
            return found
    return None


TaskFn = Callable[..., Any]


def completed(fn: TaskFn) -> TaskFn:
    """A task function that returns only when its GPU work is done: when its output holds a
    CuPy array, that array's device is synchronised before the output is handed to Dask. A
    CuPy call returns once its kernels are queued; without this, Dask would mark the task
    done (and ``persist()``/``wait()``/``compute()`` and Dask's task timings would end) while
    the GPU still works. Costs one device synchronisation per GPU task."""

    @functools.wraps(fn)
    def task(*args: Any, **kwargs: Any) -> Any:
        out = fn(*args, **kwargs)
        dev = holds_device_array(out)
        if dev is not None:
            dev.device.synchronize()
        return out

    return task


def kind(x: da.Array) -> str:
    """The chunk kind of a dask array, from its meta (``"numpy"`` or ``"cupy"``)."""
    return module_of(x._meta)


def xp_of(k: str) -> Any:
    """The array module of a chunk kind (CuPy imported only when asked for)."""
    if k == "cupy":
        import cupy

        return cupy
    return np


def check_chunk(block: Any, k: str) -> Any:
    """``block`` if it is of kind ``k``; ``TypeError`` naming both kinds otherwise (a dask
    array whose chunks mix NumPy and CuPy: its meta says one, a chunk is the other)."""
    got = module_of(block)
    if got != k:
        raise InvalidTypeError(f"warplab.dask: mixed chunk types: a {got} chunk in an array whose "
                               f"meta says {k}; make every chunk one kind first, e.g. "
                               f"x.map_blocks({k}.asarray)")
    return block


def as_dask(x: Any) -> da.Array:
    """A dask array as it is; a NumPy or CuPy array as a dask array of one chunk."""
    if isinstance(x, da.Array):
        kind(x)
        return x
    module_of(x)
    return da.from_array(x, chunks=x.shape or (), asarray=False)


def require_known(x: da.Array, what: str, axes: Sequence[int] | None = None) -> None:
    """``ValueError`` when the chunk sizes of ``axes`` (default all) are unknown (NaN)."""
    for ax in range(x.ndim) if axes is None else axes:
        if any(math.isnan(c) for c in x.chunks[ax]):
            raise InvalidValueError(f"{what}: the array has unknown chunk sizes along axis {ax} "
                                    f"(NaN); call x.compute_chunk_sizes() first")


def current_client() -> Any | None:
    """The current ``distributed`` client, or None (no client: the local schedulers)."""
    if "distributed" not in sys.modules:
        return None
    from distributed import default_client

    try:
        return default_client()
    except ValueError:  # no client
        return None


def worker_addresses(client: Any | None = None) -> list[str]:
    """Addresses of the workers of ``client`` (default: the current client), sorted; ``[]``
    without a client. One round trip to the scheduler (the client's ``scheduler_info()`` is
    a cache that lags behind workers that just joined)."""
    client = client if client is not None else current_client()
    return [] if client is None else sorted(client.nthreads())


def host_processes(workers: Sequence[str]) -> dict[str, int]:
    """Per worker address: the worker processes on its host (the workers whose addresses name
    that host; in-process workers, ``inproc://host/pid/n``, of one process count once)."""
    proc: dict[str, tuple[str, str]] = {}
    for w in workers:
        scheme, _, loc = w.partition("://")
        if scheme == "inproc":
            host, _, rest = loc.partition("/")
            proc[w] = (host, rest.partition("/")[0])
        else:
            proc[w] = (loc.rsplit(":", 1)[0] if ":" in loc else loc, w)
    per_host = Counter(host for host, _ in set(proc.values()))
    return {w: per_host[proc[w][0]] for w in workers}


def n_workers() -> int:
    """Workers of the current ``distributed`` client; 1 without one (the local scheduler)."""
    return max(1, len(worker_addresses()))


@dataclass(frozen=True)
class Plan:
    """A chunking for ``nbytes`` of data on ``workers`` workers: ``tasks`` chunks of at most
    ``chunk_bytes``, and the fan-in ``split_every`` of the tree combining their partials."""

    chunk_bytes: int
    tasks: int
    split_every: int
    workers: int


def plan(nbytes: int, *, workers: int | None = None, chunk_kind: str = "cupy",
         max_chunk_bytes: int | None = None) -> Plan:
    """The chunking rule: one task per worker, more only where a chunk would exceed
    ``max_chunk_bytes`` (default ``MAX_CHUNK_BYTES[chunk_kind]``); ``split_every`` = tasks per
    worker (at least 2), so the first level of the tree combines one worker's partials.

    Args:
        nbytes: bytes of the data.
        workers: default: the current client's workers (1 without a client).
        chunk_kind: ``"cupy"`` (GPU tasks) or ``"numpy"``.
        max_chunk_bytes: the largest chunk (GPU memory per task is bounded by it).
    """
    workers = max(1, workers or n_workers())
    cap = max(1, int(max_chunk_bytes or MAX_CHUNK_BYTES[chunk_kind]))
    per_worker = max(1, -(-int(nbytes) // workers))
    per = -(-per_worker // cap)  # tasks per worker
    chunk = -(-per_worker // per)
    return Plan(chunk_bytes=chunk, tasks=workers * per, split_every=max(2, per),
                workers=workers)


def rechunk(x: Any, *, workers: int | None = None, max_chunk_bytes: int | None = None
            ) -> da.Array:
    """``x`` rechunked by :func:`plan`: chunks of whole trailing axes (whole rows of a 2-D
    array: what ``series_stats``, ``corrcoef`` and ``corr_pairs`` want), split along axis 0
    only. A 1-D array is split into ``plan().tasks`` near-equal pieces."""
    x = as_dask(x)
    require_known(x, "rechunk")
    if x.ndim == 0 or x.size == 0:
        return x
    p = plan(x.nbytes, workers=workers, chunk_kind=kind(x), max_chunk_bytes=max_chunk_bytes)
    row = max(1, x.nbytes // x.shape[0])
    rows = max(1, min(x.shape[0], p.chunk_bytes // row))
    return x.rechunk({0: rows, **dict.fromkeys(range(1, x.ndim), -1)})


def fan_in(nblocks: int, given: int | None = None) -> int:
    """The tree fan-in for ``nblocks`` partials: ``given``, else the blocks per worker of the
    current client (at least 2)."""
    if given is not None:
        if int(given) < 2:
            raise InvalidValueError(f"split_every must be >= 2, got {given}")
        return int(given)
    return max(2, -(-max(1, nblocks) // n_workers()))


def tree(name: str, leaves: list[tuple], fn: Callable[..., Any], fan_in: int
         ) -> tuple[dict, tuple]:
    """The tasks of a tree combining the outputs of the tasks ``leaves`` with ``fn(*parts)``
    ``fan_in`` at a time; returns (graph dict, key of the root). One leaf gets one task too."""
    dsk: dict = {}
    level, keys = 0, list(leaves)
    while True:
        groups = [keys[i:i + fan_in] for i in range(0, len(keys), fan_in)] or [[]]
        keys = []
        for g, group in enumerate(groups):
            key = (f"{name}-l{level}", g)
            dsk[key] = (fn, *group)
            keys.append(key)
        level += 1
        if len(keys) == 1:
            return dsk, keys[0]


def graph(name: str, dsk: Mapping[Any, Any], deps: Sequence[da.Array]) -> HighLevelGraph:
    """``HighLevelGraph.from_collections``: the layer ``name`` of tasks ``dsk`` over the dask
    arrays ``deps``."""
    # dask's own ``DaskCollection`` protocol does not admit its ``Array`` (the protocol's
    # ``__dask_scheduler__`` is a staticmethod), so the checker is not told the arrays' type
    return HighLevelGraph.from_collections(name, dsk, dependencies=cast(Any, deps))


def array_from_tree(name: str, dsk: dict, root: tuple, deps: list[da.Array], meta: Any,
                    ndim: int = 1) -> da.Array:
    """A dask array of one chunk of unknown length: the output of ``root`` in ``dsk``."""
    out = (name,) + (0,) * ndim
    dsk = {**dsk, out: root}
    return da.Array(graph(name, dsk, deps), name, chunks=((math.nan,),) * ndim, meta=meta)


def concat_nested(parts: Any, axes: Sequence[int], xp: Any) -> Any:
    """The partials of ``da.reduction(..., concatenate=False)`` (lists nested once per
    reduced axis) concatenated along those axes."""
    if not isinstance(parts, list):
        return parts
    if len(axes) == 0:  # dask nests no deeper than the axes; a bare list is one level
        return xp.concatenate(parts)
    return xp.concatenate([concat_nested(p, axes[1:], xp) for p in parts], axis=axes[0])


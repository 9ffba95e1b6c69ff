"""``histogram_files``: one byte histogram over many files, read by the workers themselves.

The client only lists the files and their sizes (``os.stat``) and cuts their bytes, read as
one stream, into consecutive shares (one per worker by default; with a ``distributed``
client share ``i`` is sent at once to worker ``i mod n``, restricted to it: Dask's
scheduler may otherwise queue two root tasks on one worker); each task counts its share
with ``warplab.byte_histogram`` over a list of :class:`warplab.FileRange`, the same reader
the single-machine call uses: ``preadv`` straight into pinned staging buffers by worker
threads, H2D copies overlapped with the kernels (docs/streaming.md). Workers that share a host
share its cores: each process's streaming threads are made for the worker processes of its
host (cores / processes, unless ``WARPLAB_STREAM_THREADS`` is set). No byte of data passes
through the client; the per-share counts add in Dask's tree.
"""
from __future__ import annotations

import glob
import os
import stat
import uuid
from collections.abc import Sequence
from functools import partial
from typing import Any

import dask
import dask.array as da
import numpy as np

import warplab
from warplab.core import staging
from warplab.core.errors import InvalidValueError
from warplab.core.sources import FileRange
from warplab.dask.chunking import (
    completed,
    current_client,
    fan_in,
    graph,
    host_processes,
    worker_addresses,
)
from warplab.dask.placement import persist_placed

__all__ = ["file_shares", "histogram_files"]


def _expand(paths_or_glob: Any) -> list[str]:
    """Paths from a path, a glob pattern or a list of either (sorted per pattern, in the
    order given); ``FileNotFoundError`` for a missing file or a pattern matching nothing."""
    items = [paths_or_glob] if isinstance(paths_or_glob, (str, os.PathLike)) else \
        list(paths_or_glob)
    out: list[str] = []
    for item in items:
        name = os.fspath(item)
        if glob.has_magic(name):
            hits = sorted(glob.glob(name))
            if not hits:
                raise FileNotFoundError(f"no file matches {name!r}")
            out += hits
        else:
            out.append(name)
    return out


def _size(path: str) -> int:
    st = os.stat(path)  # FileNotFoundError / PermissionError name the path
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(f"is a directory: {path!r}")
    if not stat.S_ISREG(st.st_mode):
        raise InvalidValueError(f"not a regular file (a FIFO, device or socket has no size to "
                                f"split): {path!r}")
    if not os.access(path, os.R_OK):
        raise PermissionError(f"no read permission: {path!r}")
    return int(st.st_size)


def file_shares(paths: Sequence[str], sizes: Sequence[int], share_bytes: int
                ) -> list[list[FileRange]]:
    """The files' bytes, read as one stream, cut into consecutive shares of at most
    ``share_bytes``: each share a list of :class:`warplab.FileRange` (a share may end in one
    file and go on in the next; empty files give nothing)."""
    out: list[list[FileRange]] = []
    cur: list[FileRange] = []
    room = share_bytes
    for p, size in zip(paths, sizes):
        off = 0
        while off < size:
            n = min(room, size - off)
            cur.append(FileRange(p, off, n))
            off += n
            room -= n
            if room == 0:
                out.append(cur)
                cur, room = [], share_bytes
    if cur:
        out.append(cur)
    return out


@completed
def _count_share(share: list[FileRange], processes: int, *, bins: Any,
                 device: str | None) -> np.ndarray:
    """The counts of one share (runs on a worker): one ``byte_histogram`` stream over its
    ranges, read with ``preadv`` into the pinned staging buffers, as the single-machine call
    reads whole files, by this process's streaming threads, made (if not yet) for the
    ``processes`` worker processes of its host (``staging.share_host``). Host counts: the
    GPU's work is done when they are returned (``completed`` keeps that true should they
    ever stay on the device)."""
    staging.share_host(processes)
    return warplab.byte_histogram(share, bins, device=device).reshape(1, -1)


def histogram_files(paths_or_glob: Any, bins: Any = "bytes", *, chunk_bytes: int | None = None,
                    device: str | None = None, split_every: int | None = None) -> da.Array:
    """One byte histogram over every byte of many files, computed by the workers.

    Args:
        paths_or_glob: a path, a glob pattern (``"logs/*.bin"``) or a list of either; the
            files must be readable at the same paths on every worker (a shared or local file
            system of the same layout).
        bins: as ``warplab.byte_histogram`` (``"bytes"``, ``"ascii128"``, ``"letters"``, a
            256-entry table).
        chunk_bytes: bytes per task; default: one share per worker (the bytes of all files
            over the current client's workers; a task streams its share, so its memory does
            not grow with it).
        device: the backend each task asks for (``"cuda"``/``"cpu"``; default automatic on
            the worker).
        split_every: fan-in of the tree adding the per-range counts.

    Returns:
        A ``(nbins,)`` int64 NumPy-backed dask array: what
        ``warplab.byte_histogram(list_of_paths, bins)`` returns. Lazy without a
        ``distributed`` client; with one, the shares are read from the call on (the sum of
        their counts stays lazy).

    Raises:
        FileNotFoundError, IsADirectoryError, PermissionError, ValueError (not a regular
        file): at once, on the client (only metadata is read there). A file that shrinks
        before its share is read raises in that task (``ValueError``: the range is no longer
        inside the file; ``OSError``: it shrank while being read).
    """
    paths = _expand(paths_or_glob)
    sizes = [_size(p) for p in paths]
    nbins = int(warplab.byte_histogram(np.zeros(0, np.uint8), bins, device="cpu").shape[0])
    total = sum(sizes)
    client = current_client()
    workers = worker_addresses(client)
    if chunk_bytes is None:
        chunk_bytes = max(1, -(-total // max(1, len(workers))))
    if int(chunk_bytes) < 1:
        raise InvalidValueError(f"chunk_bytes must be >= 1, got {chunk_bytes}")
    ranges = file_shares(paths, sizes, int(chunk_bytes))
    # a new name per call: a later call reads the files again (they may have changed)
    name = "wl-files-" + dask.base.tokenize(paths, sizes, bins, chunk_bytes, device,
                                            uuid.uuid4().hex)
    fn = partial(_count_share, bins=bins, device=device)
    procs = host_processes(workers)
    dsk: dict = {(name, i, 0): (fn, share, procs[workers[i % len(workers)]] if workers else 1)
                 for i, share in enumerate(ranges)}
    if not dsk:
        dsk[(name, 0, 0)] = (np.zeros, (1, nbins), np.int64)
    elif workers:  # share i on worker i mod n, restricted (placement.py says why)
        dsk = persist_placed(client, name, dsk, {key: workers[i % len(workers)]
                                                 for i, key in enumerate(dsk)}, list(dsk))
    parts = da.Array(graph(name, dsk, []), name,
                     chunks=((1,) * len(dsk), (nbins,)), dtype=np.int64,
                     meta=np.empty((0, 0), np.int64))
    return parts.sum(axis=0, dtype=np.int64, split_every=fan_in(len(dsk), split_every))

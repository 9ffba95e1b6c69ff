"""``histogram_files``: one byte histogram over many files, read by the workers themselves.

The client only lists the files and their sizes (``os.stat``) and cuts them into byte ranges;
each task opens its file, maps its range (``numpy.memmap``) and counts it with
``warplab.byte_histogram`` (on the worker's GPU: the family's streaming pipeline, pinned
staging by worker threads and H2D copies overlapped with the kernels). No byte of data passes
through the client; the per-range counts add in Dask's tree.
"""
from __future__ import annotations

import glob
import os
import stat
from collections.abc import Sequence
from functools import partial
from typing import Any

import dask
import dask.array as da
import numpy as np

import warplab
from warplab.core.errors import InvalidValueError
from warplab.dask.chunking import completed, fan_in, graph, plan

__all__ = ["byte_ranges", "histogram_files"]


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


def byte_ranges(paths: Sequence[str], sizes: Sequence[int], chunk_bytes: int
                ) -> list[tuple[str, int, int]]:
    """``(path, offset, length)`` of every range: each file cut into pieces of at most
    ``chunk_bytes`` (empty files give none)."""
    return [(p, off, min(chunk_bytes, size - off))
            for p, size in zip(paths, sizes) for off in range(0, size, chunk_bytes)]


@completed
def _count_range(path: str, offset: int, length: int, bins: Any, device: str | None
                 ) -> np.ndarray:
    """The counts of bytes ``[offset, offset + length)`` of ``path`` (runs on a worker).
    Host input gives host counts, so the GPU's work has finished when they are returned;
    ``completed`` keeps that true should the counts ever stay on the device."""
    have = os.stat(path).st_size
    if have < offset + length:
        raise OSError(f"{path!r} is {have} bytes, shorter than when the ranges were cut "
                      f"(needed {offset + length}); it changed while being read")
    m = np.memmap(path, np.uint8, "r", offset=offset, shape=(length,))
    return warplab.byte_histogram(m, bins, device=device).reshape(1, -1)


def histogram_files(paths_or_glob: Any, bins: Any = "bytes", *, chunk_bytes: int | None = None,
                    device: str | None = None, split_every: int | None = None) -> da.Array:
    """One byte histogram over every byte of many files, computed by the workers.

    Args:
        paths_or_glob: a path, a glob pattern (``"logs/*.bin"``) or a list of either; the
            files must be readable at the same paths on every worker (a shared or local file
            system of the same layout).
        bins: as ``warplab.byte_histogram`` (``"bytes"``, ``"ascii128"``, ``"letters"``, a
            256-entry table).
        chunk_bytes: bytes per task; default from the chunking rule (:func:`plan`: one range
            per worker, at most 4 GiB each for GPU workers, 256 MiB for ``device="cpu"``).
        device: the backend each task asks for (``"cuda"``/``"cpu"``; default automatic on
            the worker).
        split_every: fan-in of the tree adding the per-range counts.

    Returns:
        A lazy ``(nbins,)`` int64 NumPy-backed dask array: what
        ``warplab.byte_histogram(list_of_paths, bins)`` returns.

    Raises:
        FileNotFoundError, IsADirectoryError, PermissionError, ValueError (not a regular
        file): at once, on the client (only metadata is read there). A file that shrinks
        before its range is read raises ``OSError`` in that task.
    """
    paths = _expand(paths_or_glob)
    sizes = [_size(p) for p in paths]
    nbins = int(warplab.byte_histogram(np.zeros(0, np.uint8), bins, device="cpu").shape[0])
    total = sum(sizes)
    if chunk_bytes is None:
        chunk_bytes = plan(total, chunk_kind="numpy" if device == "cpu" else "cupy").chunk_bytes
    if int(chunk_bytes) < 1:
        raise InvalidValueError(f"chunk_bytes must be >= 1, got {chunk_bytes}")
    ranges: Sequence[tuple[str | None, int, int]] = (byte_ranges(paths, sizes, int(chunk_bytes))
                                                      or [(None, 0, 0)])
    name = "wl-files-" + dask.base.tokenize(paths, sizes, bins, chunk_bytes, device)
    fn = partial(_count_range, bins=bins, device=device)
    dsk = {(name, i, 0): (fn, p, off, n) if p is not None else (np.zeros, (1, nbins), np.int64)
           for i, (p, off, n) in enumerate(ranges)}
    parts = da.Array(graph(name, dsk, []), name,
                     chunks=((1,) * len(ranges), (nbins,)), dtype=np.int64,
                     meta=np.empty((0, 0), np.int64))
    return parts.sum(axis=0, dtype=np.int64, split_every=fan_in(len(ranges), split_every))

"""Chunk sources for streaming: what host data a stream reads, and how one piece of it lands in a
staging buffer.

A source has a ``size`` (elements of ``dtype``), a ``unit`` (chunk boundaries fall on multiples
of it) and ``fill(dst, start)``, which writes elements ``[start, start + len(dst))`` into the
1-D array ``dst``; ``fill`` is called from many threads at once on disjoint ranges. Sources:

* :class:`ArraySource`: a host NumPy array. C-contiguous arrays are read as their flat bytes
  (``view`` gives zero-copy slices); any other layout is gathered row by row of its first axis
  (``unit`` = one such row), a correct copy path, never an error.
* :class:`FileSource`: regular files (a path, an open binary file object from its current
  position, or a list of paths and :class:`FileRange` byte ranges read as one concatenated
  byte stream), read with ``os.preadv``
  straight into the buffer; ``O_DIRECT`` on request for the aligned middle of each piece.

Errors are raised when a source is opened (before anything is streamed) or while it is read:
a missing file, a directory, a FIFO or device (no size to plan with), a permission problem, a
text-mode file object, a file that shrank while it was read (:class:`FileChangedError`).
"""
from __future__ import annotations

import io
import os
import stat
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from warplab.core import ntcopy
from warplab.core.arrays import file_errors
from warplab.core.errors import InvalidTypeError, InvalidValueError

#: Alignment of O_DIRECT offsets, lengths and buffer addresses (the common logical block).
DIRECT_ALIGN = 4096


class FileChangedError(OSError):
    """A file ended early while it was read (it shrank, or was truncated, mid-stream)."""


class ArraySource:
    """A host NumPy array as a chunk source (see the module docstring)."""

    def __init__(self, arr: np.ndarray) -> None:
        if not isinstance(arr, np.ndarray):
            raise InvalidTypeError(f"an ArraySource takes a NumPy array, got {type(arr).__name__}")
        self.array = arr
        self.dtype = np.dtype(arr.dtype)
        self.size = int(arr.size)
        self.contiguous = bool(arr.flags.c_contiguous)
        self.unit = 1 if self.contiguous or arr.ndim <= 1 else int(np.prod(arr.shape[1:]))
        self._flat = arr.reshape(-1) if self.contiguous else None
        self.direct = False

    @property
    def address(self) -> int | None:
        """The first byte's address of a contiguous array (None otherwise)."""
        return int(self.array.ctypes.data) if self.contiguous else None

    def view(self, start: int, stop: int) -> np.ndarray | None:
        """A zero-copy 1-D slice of a contiguous array (None for other layouts)."""
        return None if self._flat is None else self._flat[start:stop]

    def fill(self, dst: np.ndarray, start: int) -> None:
        """Copy elements ``[start, start + dst.size)`` into ``dst`` (releases the GIL; a
        contiguous array's pieces with streaming stores: ``core/ntcopy.py``)."""
        n = dst.size
        if self._flat is not None:
            ntcopy.copy(dst, self._flat[start:start + n])
            return
        a = self.array
        if a.ndim <= 1:
            np.copyto(dst, a[start:start + n])
            return
        r0, r1 = start // self.unit, (start + n) // self.unit
        np.copyto(dst.reshape((r1 - r0, *a.shape[1:])), a[r0:r1])

    def close(self) -> None:
        """Nothing to release."""


class FileRange(NamedTuple):
    """Bytes ``[offset, offset + length)`` of the file at ``path``: an item of a list of files
    given to ``warplab.byte_histogram`` (or streamed), read as if it were a file of its own."""

    path: str | os.PathLike
    offset: int
    length: int


class _Part:
    """One opened file of a :class:`FileSource`: its descriptor, where its bytes start in the
    file, how many there are, and where they sit in the concatenated stream."""

    def __init__(self, name: str, fd: int, offset: int, size: int, base: int, own: bool) -> None:
        self.name, self.fd, self.offset, self.size, self.base, self.own = \
            name, fd, offset, size, base, own
        self.direct_fd: int | None = None


def _open_regular(path: str) -> tuple[int, int]:
    """(descriptor, size) of a regular file; clear errors for everything else. O_NONBLOCK keeps
    a FIFO without a writer from blocking the open."""
    with file_errors(path):
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        _require_regular(st, path)
    except BaseException:
        os.close(fd)
        raise
    return fd, int(st.st_size)


def _require_regular(st: os.stat_result, name: str) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(f"is a directory, not a file: {name}")
    if not stat.S_ISREG(st.st_mode):
        kind = "a FIFO (pipe)" if stat.S_ISFIFO(st.st_mode) else "not a regular file"
        raise InvalidValueError(f"{name} is {kind}: streaming reads regular files (their size "
                                "plans the chunks); read it into memory first, e.g. "
                                "np.frombuffer(f.read(), np.uint8)")


class FileSource:
    """Regular files as one stream of bytes (see the module docstring).

    Args:
        files: a path, an open binary file object (read from its position to its end; its
            position is moved to the end after a complete read) or a list of paths.
        direct: also open each file with ``O_DIRECT`` and read the 4096-aligned middle of each
            piece through it (skips the page cache; for cold files). Where the file system
            refuses ``O_DIRECT`` the ordinary descriptor is used.
    """

    def __init__(self, files: Any, direct: bool = False) -> None:
        self.dtype = np.dtype(np.uint8)
        self.unit = 1
        self.contiguous = False
        self.address = None
        self.parts: list[_Part] = []
        self._fileobj: Any = None
        try:
            if is_file_object(files):
                self._open_object(files)
            else:
                single = isinstance(files, (str, os.PathLike, FileRange))
                for p in ([files] if single else files):
                    self._add(self._open_item(p))
            self.direct = bool(direct) and self._open_direct()
        except BaseException:
            self.close()
            raise
        self.size = self.size_so_far()

    def _open_item(self, item: Any) -> _Part:
        """A path (the whole file) or a :class:`FileRange` (its bytes, which must exist)."""
        rng = item if isinstance(item, FileRange) else None
        name = os.fspath(rng.path if rng else item)
        fd, size = _open_regular(name)
        if rng is None:
            return _Part(name, fd, 0, size, self.size_so_far(), True)
        off, length = int(rng.offset), int(rng.length)
        if off < 0 or length < 0 or off + length > size:
            os.close(fd)
            raise InvalidValueError(f"{name}: the range of {length} bytes at offset {off} "
                                    f"is not inside the file ({size} bytes)")
        return _Part(name, fd, off, length, self.size_so_far(), True)

    def size_so_far(self) -> int:
        return sum(p.size for p in self.parts)

    def _add(self, part: _Part) -> None:
        self.parts.append(part)

    def _open_object(self, f: Any) -> None:
        check_raw_file(f)
        name = str(getattr(f, "name", "<file object>"))
        fd = f.fileno()
        st = os.fstat(fd)
        _require_regular(st, name)
        pos = f.tell()
        self._fileobj = f
        self._add(_Part(name, fd, pos, max(0, int(st.st_size) - pos), 0, False))

    def _open_direct(self) -> bool:
        flag = getattr(os, "O_DIRECT", 0)
        if not flag:
            return False
        for p in self.parts:
            try:
                p.direct_fd = os.open(f"/proc/self/fd/{p.fd}", os.O_RDONLY | flag)
            except OSError:
                p.direct_fd = None
        return any(p.direct_fd is not None for p in self.parts)

    def view(self, start: int, stop: int) -> None:
        return None

    def fill(self, dst: np.ndarray, start: int) -> None:
        """Read bytes ``[start, start + dst.size)`` of the stream into ``dst``."""
        stop = start + dst.size
        for p in self.parts:
            lo, hi = max(start, p.base), min(stop, p.base + p.size)
            if lo < hi:
                _read_exact(p, dst[lo - start:hi - start], p.offset + lo - p.base)

    def finish(self) -> None:
        """After a complete read: a file object's position moves to its end."""
        if self._fileobj is not None and self.parts:
            p = self.parts[0]
            self._fileobj.seek(p.offset + p.size)

    def close(self) -> None:
        """Close the descriptors this source opened (never a caller's file object)."""
        for p in self.parts:
            if p.direct_fd is not None:
                os.close(p.direct_fd)
                p.direct_fd = None
            if p.own and p.fd >= 0:
                os.close(p.fd)
                p.fd = -1


def _read_exact(p: _Part, dst: np.ndarray, offset: int) -> None:
    """Fill ``dst`` from file offset ``offset``; the aligned middle through O_DIRECT when the
    part has it. ``FileChangedError`` when the file ends first."""
    done, n = 0, dst.size
    if p.direct_fd is not None and n >= 2 * DIRECT_ALIGN:
        head = (-offset) % DIRECT_ALIGN
        mid = (n - head) & ~(DIRECT_ALIGN - 1)
        addr = dst.ctypes.data + head
        if addr % DIRECT_ALIGN == 0 and mid:
            _pread_all(p.fd, dst[:head], offset, p)
            try:
                _pread_all(p.direct_fd, dst[head:head + mid], offset + head, p)
            except FileChangedError:
                raise
            except OSError:  # EINVAL: this file system refuses O_DIRECT after all
                _pread_all(p.fd, dst[head:head + mid], offset + head, p)
            done = head + mid
    _pread_all(p.fd, dst[done:], offset + done, p)


def _pread_all(fd: int, dst: np.ndarray, offset: int, p: _Part) -> None:
    view = dst.data.cast("B")
    got = 0
    while got < len(view):
        k = os.preadv(fd, [view[got:]], offset + got)
        if k == 0:
            raise FileChangedError(
                f"{p.name} ended early: expected {p.size} bytes from offset {p.offset}, found "
                f"none at offset {offset + got} (the file shrank while it was read)")
        got += k


def is_file_object(x: Any) -> bool:
    """True for an open file object (anything with ``fileno`` and ``read``). Only those whose
    bytes are their OS file's (``open(path, "rb")``, ``io.FileIO``) can be read: see
    :func:`check_raw_file`."""
    return hasattr(x, "fileno") and hasattr(x, "read") and not isinstance(x, (str, bytes))


def check_raw_file(f: Any) -> None:
    """``TypeError`` unless ``f``'s bytes are its file descriptor's: the file is read with
    ``preadv`` on ``f.fileno()``, which for a wrapper (``gzip.open``, ``bz2``, ``lzma``, a
    socket file) would be the compressed or raw bytes underneath, not what ``f.read()`` gives."""
    if type(f).__name__ == "_TemporaryFileWrapper":  # tempfile.NamedTemporaryFile
        f = f.file
    raw = f if isinstance(f, io.FileIO) else getattr(f, "raw", None)
    if isinstance(f, io.TextIOBase):
        raise InvalidTypeError("a file object must be opened in binary mode ('rb'), not text mode")
    if not isinstance(raw, io.FileIO) or not isinstance(f, (io.FileIO, io.BufferedReader,
                                                            io.BufferedRandom)):
        raise InvalidTypeError(f"file objects are read from their file descriptor: pass "
                               f"open(path, 'rb') (got {type(f).__name__}; for compressed or "
                               "wrapped streams pass the bytes, e.g. "
                               "np.frombuffer(f.read(), np.uint8))")


def is_file_source(x: Any) -> bool:
    """True for what :class:`FileSource` takes: a path, a file object, a :class:`FileRange`,
    a list of paths and file ranges."""
    if isinstance(x, (str, os.PathLike, FileRange)) or is_file_object(x):
        return True
    return isinstance(x, (list, tuple)) and len(x) > 0 and all(
        isinstance(p, (str, os.PathLike, FileRange)) for p in x)


def open_source(data: Any, direct: bool = False) -> ArraySource | FileSource:
    """The source of ``data``: a NumPy array, a path, a file object, a :class:`FileRange` or a
    list of paths and file ranges (``direct``, or ``WARPLAB_STREAM_DIRECT=1``: files through
    ``O_DIRECT`` too)."""
    direct = direct or os.environ.get("WARPLAB_STREAM_DIRECT", "").strip() == "1"
    if isinstance(data, np.ndarray):
        return ArraySource(data)
    if isinstance(data, io.BytesIO):
        return ArraySource(np.frombuffer(data.getbuffer(), np.uint8)[data.tell():])
    if is_file_source(data):
        return FileSource(data, direct=direct)
    raise InvalidTypeError(f"cannot stream a {type(data).__name__}: give a NumPy array, a path, an "
                           "open binary file or a list of paths")


def split(start: int, stop: int, parts: int, unit: int, align: int = 1) -> list[tuple[int, int]]:
    """``[start, stop)`` cut into at most ``parts`` pieces whose inner boundaries are multiples
    of ``unit`` (and of ``align`` elements where that is a multiple of ``unit``), none empty."""
    step = max(unit, -(-(stop - start) // max(1, parts)))
    q = unit * align if align > 1 else unit
    step = -(-step // q) * q
    cuts: Sequence[int] = range(start, stop, step)
    return [(a, min(a + step, stop)) for a in cuts]

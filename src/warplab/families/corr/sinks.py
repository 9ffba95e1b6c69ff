"""Where ``corr_pairs``' pairs go as their strips are found (``out=``): kept on the GPU, moved
to host memory strip by strip, or appended to a ``.npy`` file; each sink knows how much it can
hold and says, before it runs out, how many pairs were found, how many are expected and what
to change.

A sink takes strips ``(i, j, r)`` with the share of the triangle's pairs done so far
(:func:`triangle_share`), and its ``result()`` is the three fields (``abort()`` after an
error). The expected total is the pairs found so far divided by that share.
"""
from __future__ import annotations

import contextlib
import os
import struct
from typing import Any

import numpy as np

from warplab.core.arrays import to_host
from warplab.core.device import gb
from warplab.core.errors import DeviceOutOfMemoryError, HostOutOfMemoryError

#: The records of a pairs file: ``numpy.load(path, mmap_mode="r")`` reads them.
PAIR_DTYPE = np.dtype([("i", "<i8"), ("j", "<i8"), ("r", "<f8")])
#: Bytes of a pair in the result (i, j, r).
RESULT_BYTES = 24
#: Bytes of a pair while the result is assembled: the strips' pairs and one field of the
#: result (the fields are concatenated one at a time, each strip's copy dropped as it goes).
HELD_BYTES = 32
#: Bytes of a pairs file's header (``.npy`` format 1.0, padded): its length never changes, so
#: the count is written in place at the end.
HEADER_BYTES = 256

_ADVICE = {
    "device": "out='host' (pairs moved to host memory as found), out='pairs.npy' (written to "
              "that file as found), a higher threshold, or top_k= (each series' k strongest "
              "partners)",
    "host": "out='pairs.npy' (written to that file as found), a higher threshold, or top_k= "
            "(each series' k strongest partners)",
}


def triangle_share(m: int, rows: int) -> float:
    """Share of the ``M (M - 1) / 2`` pairs ``i < j`` whose row ``i`` is below ``rows``."""
    total = m * (m - 1) // 2
    done = rows * (m - 1) - rows * (rows - 1) // 2
    return done / total if total else 1.0


def too_many(where: str, found: int, share: float, m: int, room: int | None) -> str:
    """The message of a sink that cannot hold the pairs: found, expected, bytes, advice."""
    expected = max(found, round(found / share)) if share > 0 else found
    total = m * (m - 1) // 2
    place = {"device": "GPU memory", "host": "host memory"}[where]
    has = "" if room is None else f", {gb(room)} available for them"
    return (f"warplab.corr_pairs: the pairs do not fit {place}: {found:,} pairs found so far "
            f"({gb(found * RESULT_BYTES)}) in {share:.1%} of the {total:,} pairs of the "
            f"triangle, about {expected:,} expected in total ({gb(expected * RESULT_BYTES)}; "
            f"{gb(expected * HELD_BYTES)} while assembled{has}). Pass {_ADVICE[where]}.")


class _Held:
    """Strips held in memory, one list per field; ``room``: the bytes they may take while
    assembled (None: unknown, no check)."""

    where = "device"

    def __init__(self, xp: Any, m: int, room: int | None) -> None:
        self.xp, self.m, self.room = xp, m, room
        self.fields: tuple[list[Any], list[Any], list[Any]] = ([], [], [])
        self.found = 0

    def _keep(self, i: Any, j: Any, r: Any) -> tuple[Any, Any, Any]:
        return i, j, r

    def add(self, i: Any, j: Any, r: Any, share: float) -> None:
        """Hold one strip; raise when the pairs so far could not be assembled."""
        found = self.found + int(i.size)
        if self.room is not None and found * HELD_BYTES > self.room:
            err = DeviceOutOfMemoryError if self.where == "device" else HostOutOfMemoryError
            raise err(too_many(self.where, found, share, self.m, self.room))
        self.found = found
        if i.size:
            for held, a in zip(self.fields, self._keep(i, j, r)):
                held.append(a)

    def result(self) -> tuple[Any, Any, Any]:
        """The fields, each concatenated while the strips' copies of it are dropped."""
        out = []
        for held, dt in zip(self.fields, (np.int64, np.int64, np.float64)):
            a = self.xp.empty(self.found, dt)
            pos = 0
            while held:
                part = held.pop(0)
                a[pos:pos + part.size] = part
                pos += int(part.size)
                del part
            out.append(a)
        return out[0], out[1], out[2]

    def abort(self) -> None:
        for held in self.fields:
            held.clear()


class DeviceSink(_Held):
    """Pairs kept on the GPU (CuPy): they may take ``free - strip_bytes`` bytes while
    assembled (``free``: free device memory beside the engine's rows)."""

    where = "device"

    def __init__(self, xp: Any, m: int, free: int, strip_bytes: int) -> None:
        super().__init__(xp, m, max(0, free - strip_bytes))


class HostSink(_Held):
    """Pairs moved to host memory strip by strip (NumPy): they may take ``available`` bytes
    (host memory available at the start, None: unknown) less one strip's budget."""

    where = "host"

    def __init__(self, m: int, available: int | None, strip_bytes: int) -> None:
        room = None if available is None else max(0, available - strip_bytes)
        super().__init__(np, m, room)

    def _keep(self, i: Any, j: Any, r: Any) -> tuple[Any, Any, Any]:
        return to_host(i), to_host(j), to_host(r)


class FileSink:
    """Pairs appended to a ``.npy`` file of :data:`PAIR_DTYPE` records as found; the header
    (fixed length) gets the count at the end. ``result()``: read-only memory-mapped field
    views of the file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self.fh = open(self.path, "wb")  # noqa: SIM115  # closed by result() or abort()
        self.found = 0
        self.fh.write(_header(0))

    def add(self, i: Any, j: Any, r: Any, share: float) -> None:
        n = int(i.size)
        if not n:
            return
        rec = np.empty(n, PAIR_DTYPE)
        rec["i"], rec["j"], rec["r"] = to_host(i), to_host(j), to_host(r)
        rec.tofile(self.fh)
        self.found += n

    def result(self) -> tuple[Any, Any, Any]:
        self.fh.seek(0)
        self.fh.write(_header(self.found))
        self.fh.close()
        mm = np.memmap(self.path, PAIR_DTYPE, "r", offset=HEADER_BYTES, shape=(self.found,))
        return mm["i"], mm["j"], mm["r"]

    def abort(self) -> None:
        """Close and remove the unfinished file."""
        self.fh.close()
        with contextlib.suppress(OSError):
            os.remove(self.path)


def _header(count: int) -> bytes:
    """The ``.npy`` 1.0 header of ``count`` pair records, padded to :data:`HEADER_BYTES`."""
    d = (f"{{'descr': {np.lib.format.dtype_to_descr(PAIR_DTYPE)!r}, 'fortran_order': False, "
         f"'shape': ({count},), }}")
    body = d.encode("latin1").ljust(HEADER_BYTES - 10 - 1) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(body)) + body

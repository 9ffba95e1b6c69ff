"""Page-locking a user's host array in place for a stream (cuda backend), whole or chunk by chunk.

Staging copies every byte twice on the host (the user's memory into a pinned buffer, then the
DMA reads it); page-locking (``cudaHostRegister``) lets the DMA read the user's memory
directly, at the price of the driver pinning its pages (about 37 ms per GiB on the H100
machine: page-table work, not a copy of the bytes). The stream uses both at once in
``host="hybrid"``: the worker threads stage most chunks while :class:`ChunkPinner` registers
every few chunks on its own thread, ahead of the copies, and unregisters each once its copy has
run; the DMA engine reads from both. :func:`chosen_chunks` says which chunks are pinned.

Registered ranges never share a page: chosen chunks are never neighbours, and every chunk is at
least a page long (``staging.MIN_CHUNK``; chunks smaller than a page are always staged).
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from .staging import PAGE, is_pinned

#: Fraction of a hybrid stream's chunks page-locked in place (``WARPLAB_STREAM_PIN_SHARE``):
#: about the registration rate over the sum of the staging and registration rates.
PIN_SHARE = 1 / 3
#: Bytes per ``cudaHostRegister`` call: a long registration may hold the driver's lock, so
#: large chunks are registered (and copied) in pieces of at most this size.
PIN_PIECE = 64 << 20
#: Chunks of a hybrid stream registered ahead of the copy that is issued.
AHEAD = 8
_FLAGS = (0, 8)  # cudaHostRegisterDefault, then cudaHostRegisterReadOnly (read-only arrays)


def pin_share() -> float:
    """The share of chunks a hybrid stream pins (``WARPLAB_STREAM_PIN_SHARE``, in [0, 0.5])."""
    text = os.environ.get("WARPLAB_STREAM_PIN_SHARE", "").strip()
    if not text:
        return PIN_SHARE
    try:
        share = float(text)
    except ValueError:
        raise ValueError(f"WARPLAB_STREAM_PIN_SHARE={text!r} is not a number") from None
    if not 0.0 <= share <= 0.5:
        raise ValueError("WARPLAB_STREAM_PIN_SHARE must lie in [0, 0.5]")
    return share


def chosen_chunks(bounds: list[tuple[int, int]], itemsize: int, share: float) -> set[int]:
    """Indices of the chunks to page-lock: chunk ``i`` where ``floor((i + 1) * share)`` steps
    up (evenly spread; never chunk 0, never two neighbours for ``share <= 0.5``), skipping
    chunks shorter than a page."""
    if not 0.0 <= share <= 0.5:
        raise ValueError("share must lie in [0, 0.5]")
    return {i for i, (a, b) in enumerate(bounds)
            if int((i + 1) * share) > int(i * share) and (b - a) * itemsize >= PAGE}


def register(address: int, nbytes: int) -> bool:
    """Page-lock ``[address, address + nbytes)`` (read-only memory with the read-only flag);
    False where the driver refuses (the caller then copies another way)."""
    import cupy

    for flags in _FLAGS:
        try:
            cupy.cuda.runtime.hostRegister(address, nbytes, flags)
            return True
        except cupy.cuda.runtime.CUDARuntimeError:
            continue
    return False


def register_whole(src: Any, host: str) -> tuple[bool, str]:
    """(copy straight from the user's array, how host data reaches the bus) for the whole
    array: already pinned arrays are copied from directly in every mode; ``host="register"``
    page-locks a contiguous array for the call; anything else (or a refusal) is staged."""
    address = getattr(src, "address", None)
    if address is None or not getattr(src, "contiguous", False):
        return False, "stage"
    if is_pinned(address):
        return True, "pinned"
    if host != "register" or src.size == 0:
        return False, "stage"
    if register(address, src.size * src.dtype.itemsize):
        return True, "register"
    return False, "stage"


def pieces(address: int, nbytes: int, piece: int = PIN_PIECE) -> list[tuple[int, int]]:
    """``[(address, nbytes), ...]`` covering the range, cut at page-aligned addresses every
    ``piece`` bytes (so no two pieces share a page)."""
    out, end = [], address + nbytes
    while address < end:
        cut = min(end, (address + piece) // PAGE * PAGE) if end - address > piece else end
        cut = end if cut <= address else cut
        out.append((address, cut - address))
        address = cut
    return out


class ChunkPinner:
    """Registers the chosen chunks of a contiguous host array on one thread, ahead of the
    stream, and unregisters each after its copy (on a second thread, so a registration never
    waits behind a copy). :meth:`close` unregisters whatever is still registered, on every
    path; the caller synchronises its copy stream first."""

    def __init__(self, address: int, itemsize: int, bounds: list[tuple[int, int]],
                 chosen: set[int]) -> None:
        self._address, self._itemsize, self._bounds = address, itemsize, bounds
        self._order = sorted(chosen)
        self._next = 0
        self._pin = ThreadPoolExecutor(1, thread_name_prefix="warplab-pin")
        self._unpin = ThreadPoolExecutor(1, thread_name_prefix="warplab-unpin")
        self._futures: dict[int, Future] = {}
        self._unpins: list[Future] = []
        self._lock = threading.Lock()
        self._registered: set[int] = set()  # piece addresses registered, not yet released
        self.pinned_bytes = 0

    def _pieces(self, i: int) -> list[tuple[int, int]]:
        a, b = self._bounds[i]
        return pieces(self._address + a * self._itemsize, (b - a) * self._itemsize)

    def _register_chunk(self, i: int) -> list[tuple[int, int]] | None:
        done: list[tuple[int, int]] = []
        for addr, n in self._pieces(i):
            if not register(addr, n):
                self._release(done)
                return None
            with self._lock:
                self._registered.add(addr)
            done.append((addr, n))
        return done

    def _release(self, parts: list[tuple[int, int]], copied: Any = None) -> None:
        import cupy

        if copied is not None:
            copied.synchronize()
        for addr, _ in parts:
            with self._lock:
                if addr not in self._registered:
                    continue
                self._registered.discard(addr)
            cupy.cuda.runtime.hostUnregister(addr)

    def ahead(self, i: int) -> None:
        """Queue the registrations of the chosen chunks before chunk ``i + AHEAD``."""
        while self._next < len(self._order) and self._order[self._next] < i + AHEAD:
            j = self._order[self._next]
            self._futures[j] = self._pin.submit(self._register_chunk, j)
            self._next += 1

    def pieces_of(self, i: int) -> list[tuple[int, int]] | None:
        """The registered pieces of chosen chunk ``i`` (waits for its registration), or None
        when the driver refused (copy the chunk another way)."""
        self.ahead(i)
        parts = self._futures[i].result()
        if parts is not None:
            self.pinned_bytes += sum(n for _, n in parts)
        return parts

    def release_after(self, parts: list[tuple[int, int]], copied: Any) -> None:
        """Unregister ``parts`` once the event ``copied`` (their copy) has completed."""
        self._unpins.append(self._unpin.submit(self._release, parts, copied))

    def close(self) -> None:
        """Cancel registrations not started, wait for the rest, unregister what remains (the
        caller's copies must be complete)."""
        for f in self._futures.values():
            f.cancel()
        try:
            wait(list(self._futures.values()) + self._unpins)
        finally:
            with self._lock:
                left = sorted(self._registered)
            self._release([(addr, 0) for addr in left])
            self._pin.shutdown(wait=True)
            self._unpin.shutdown(wait=True)

"""The host side of a device batch: array addresses, the checks every list form shares, and
the one H2D copy of a batch's three uint64 arrays through a small ring of pinned buffers."""
from __future__ import annotations

import sys
import threading
from typing import Any, Literal

import numpy as np

from warplab.core.errors import InvalidTypeError, InvalidValueError
from warplab.core.extensions import load
from warplab.families.memcpy.cuda import DeviceBatch
from warplab.families.memcpy.spec import Addresses, Plan, overlaps
from warplab.families.memcpy.table_cuda import IN_READER, MAX_BUFFERS

RING = 4  # pinned staging buffers per device: a fifth call in flight waits for the first copy


def is_host(a: Any) -> bool:
    return isinstance(a, np.ndarray)


def _cupy_ndarray() -> type | None:
    try:
        import cupy
    except ImportError:
        return None
    return cupy.ndarray


def side(arrays: list[Any], what: str) -> tuple[list[Any], bool]:
    """The arrays as NumPy (all on the host) or CuPy (all on the current GPU) arrays, and
    whether they are on the device. ``ValueError`` for a mix, another GPU, or an array that is
    neither."""
    if all(is_host(a) for a in arrays):
        return arrays, False
    nd = _cupy_ndarray()
    convert = []
    for i, a in enumerate(arrays):
        if type(a) is nd:  # the common case first: hasattr below would build the interface dict
            continue
        if is_host(a):
            raise InvalidValueError(
                f"{what}[{i}] is a host (NumPy) array but others are on the GPU: "
                "all arrays of a call must be on the host or all on one GPU")
        if not hasattr(a, "__cuda_array_interface__"):
            raise InvalidTypeError(f"{what}[{i}] is a {type(a).__name__}, not a NumPy or GPU array")
        convert.append(i)
    import cupy

    out = list(arrays)
    for i in convert:
        out[i] = cupy.asarray(out[i])
    dev = cupy.cuda.runtime.getDevice()
    for i, a in enumerate(out):
        if a.data.device_id != dev:
            raise InvalidValueError(f"{what}[{i}] is on GPU {a.data.device_id}, the current device "
                             f"is GPU {dev}: every array of a call must be on the current device")
    return out, True


def address(a: Any) -> int:
    """The address of an array's first byte (host or device)."""
    return int(a.ctypes.data) if is_host(a) else int(a.data.ptr)


def require_contiguous(a: Any, what: str) -> None:
    if not a.flags.c_contiguous:
        raise InvalidValueError(
            f"{what} is not C-contiguous: batched copies take contiguous arrays "
            "(make one with ascontiguousarray)")


#: The C helper that reads ``copy_batched``'s device pairs (``core/devicepairs.c``), or None where
#: it is not built or ``WARPLAB_HOST_COPY=0`` (the general path reads them).
_ext, _WHY = load("warplab.core._hostcopy", "WARPLAB_HOST_COPY")


def device_table(srcs: list[Any], dsts: list[Any], table_buffers: int = 0
                 ) -> tuple[bytes, int, int, int] | Literal[True] | None:
    """(address table, largest byte size, total bytes, the current device) of
    ``copy_batched``'s pairs when every array is a CuPy array on the current device,
    C-contiguous, each pair of equal byte sizes, and no destination overlaps another or a
    source; None otherwise, and where the C helper is not built (the call then normalises and
    checks each array, and raises what it raises).

    The table is three rows of ``max(n, table_cuda.MAX_BUFFERS)`` uint64 (sources,
    destinations, sizes), the few-buffer launch's parameter as it is (``table_cuda.rows``
    views it as arrays). One call of the C helper (``core/devicepairs.c``: ``device_pairs``):
    a few attribute reads per array and the sorted-interval test, no Python loop.

    ``table_buffers`` > 0 (``copy_batched``'s plan configuration, no ``variant``/``device``):
    where the current device's plan has prepared the few-buffer launch
    (``table_cuda.IN_READER``), a batch it takes (at most ``table_buffers`` buffers, none above
    ``table_cuda.MAX_BYTES``: ``plan.decide``'s rule) is launched by the same C call on the
    current stream: True. That saves the plan key, the lookup and the Python launch of the
    smallest calls; any batch it does not take, or a launch the driver refuses, comes back
    as the tuple and runs (or raises) through the plan."""
    cupy = sys.modules.get("cupy")
    if _ext is None or cupy is None or not dsts or type(dsts[0]) is not cupy.ndarray:
        return None  # (host arrays never ask for the current device)
    device = cupy.cuda.runtime.getDevice()
    go = IN_READER.get(device) if table_buffers else None
    if go is None:
        return _ext.device_pairs(cupy.ndarray, dsts, srcs, device, MAX_BUFFERS)
    return _ext.device_pairs(cupy.ndarray, dsts, srcs, device, MAX_BUFFERS, go, table_buffers,
                             cupy.cuda.get_current_stream().ptr)


def host_pointers(srcs: list[Any], dsts: list[Any], plan: Plan
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(source addresses, destination addresses, sizes) of a plan, uint64, one per buffer."""
    s_base = np.array([address(a) for a in srcs], dtype=np.uint64)
    d_base = np.array([address(a) for a in dsts], dtype=np.uint64)
    src = s_base[plan.src_index] + plan.src_offset.astype(np.uint64)
    dst = d_base[plan.dst_index] + plan.dst_offset.astype(np.uint64)
    return src, dst, plan.size.astype(np.uint64)


def check_overlap(src: Addresses, dst: Addresses, sizes: Addresses) -> None:
    """``ValueError`` when a destination overlaps a source or another destination (address
    and size lists or uint64 arrays)."""
    if overlaps(src, dst, sizes):
        raise InvalidValueError("a destination overlaps a source or another destination; "
                         "nothing was copied")


class _Ring:
    """Pinned staging buffers reused in turn; each keeps its address and an event recorded
    after its last copy (one event per slot, created once)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.slots: list[list[Any]] = [[None, None, 0] for _ in range(RING)]  # buffer, event, ptr
        self.next = 0

    def send(self, rows: tuple[Addresses, ...]) -> Any:
        """One H2D copy of the rows (equal length, uint64 values: lists or arrays) on the
        current stream; returns the device array (len(rows), n). Waits only when this slot's
        previous copy is pending."""
        import cupy
        import cupyx

        n = len(rows[0])
        with self.lock:
            slot = self.slots[self.next]
            self.next = (self.next + 1) % RING
            if slot[1] is None:
                slot[1] = cupy.cuda.Event(block=False, disable_timing=True)
            else:
                slot[1].synchronize()
            if slot[0] is None or slot[0].size < len(rows) * n:
                slot[0] = cupyx.empty_pinned(max(len(rows) * n, 1024), dtype=np.uint64)
                slot[2] = slot[0].__array_interface__["data"][0]
            h = slot[0][:len(rows) * n].reshape(len(rows), n)
            for r, row in enumerate(rows):
                h[r] = row
            d = cupy.empty((len(rows), n), dtype=np.uint64)
            cupy.cuda.runtime.memcpyAsync(d.data.ptr, slot[2], h.nbytes,
                                          cupy.cuda.runtime.memcpyHostToDevice,
                                          cupy.cuda.get_current_stream().ptr)
            slot[1].record()
        return d


_RINGS: dict[int, _Ring] = {}


def send_batch(src: Addresses, dst: Addresses, sizes: Addresses,
               largest: int | None = None) -> DeviceBatch:
    """The batch on the current device after one H2D copy (no synchronisation); ``largest``:
    the largest size when the caller knows it (and none is negative)."""
    import cupy

    ring = _RINGS.setdefault(cupy.cuda.runtime.getDevice(), _Ring())
    d = ring.send((src, dst, sizes))
    return DeviceBatch(d[0], d[1], d[2], len(sizes), (src, dst, sizes), largest)

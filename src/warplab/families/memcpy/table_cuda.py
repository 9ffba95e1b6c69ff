"""Batched copies of a few buffers in one launch (``table.cu``).

``copy_batched`` of a few small device buffers: one launch whose parameter is the address
table itself (``memcpy_table``): no pinned staging, no host-to-device copy, no event, no device
allocation; the driver copies the parameter (``MEMCPY_TABLE_MAX`` triples of uint64) into the
launch when it is queued.

``memcpy_batched`` of at most ``MEMCPY_TABLE_MAX`` buffers (the table already on the device,
the sizes unknown to the host): one launch of ``memcpy_table_walk`` on a grid of
``WALK_BLOCKS_PER_SM`` blocks per SM, every block walking the table and copying every
``grid``-th ``MEMCPY_TABLE_CHUNK``-byte chunk of the batch (:func:`walk`), instead of the
size classes' two launches.

The table is the bytes of three ``MEMCPY_TABLE_MAX``-long uint64 rows: built with the checks by
the C reader of the pairs (``transfer.device_table``), else packed by one ``struct.Struct``
per buffer count (:func:`pack`; zero padding after each row). The C launch takes the bytes as
they are, CuPy's launch a one-element structured array over them (CuPy passes a NumPy array of
one element by value). The plan of a key that takes this path (``plan.py``) holds the launch
(:func:`prepared`); :func:`copy` runs it.
"""
from __future__ import annotations

import struct
import sys
from pathlib import Path
from typing import Any

import numpy as np

from warplab.core import launch
from warplab.core.fastpath import PlanCache
from warplab.core.launch import ARRAY, Prepared
from warplab.core.loader import defines, get_kernel
from warplab.core.registry import Variant
from warplab.families.memcpy.cuda import DEFINES as COPY_DEFINES
from warplab.families.memcpy.spec import Addresses, MemcpyProblem

SOURCE = Path(__file__).with_name("table.cu")
#: Buffers a table holds and threads per buffer (one block each); copy_bytes' unroll is the
#: other kernels' (cuda.py).
DEFINES = {"MEMCPY_TABLE_MAX": 32, "MEMCPY_TABLE_BLOCK": 256, "MEMCPY_TABLE_CHUNK": 64 << 10,
           "WARPLAB_MEMCPY_UNROLL": COPY_DEFINES["WARPLAB_MEMCPY_UNROLL"],
           "WARPLAB_MEMCPY_LOADS": COPY_DEFINES["WARPLAB_MEMCPY_LOADS"]}
MAX_BUFFERS = DEFINES["MEMCPY_TABLE_MAX"]
#: The largest buffer this path copies (one block each: larger ones go to the size classes).
MAX_BYTES = 16 << 10
_N = MAX_BUFFERS
TABLE = np.dtype([("src", np.uint64, (_N,)), ("dst", np.uint64, (_N,)), ("size", np.uint64, (_N,))])
#: Per buffer count n: the table's packing (n uint64, then zeros to the row's end, three times).
ROWS = [struct.Struct("<" + f"{n}Q{8 * (_N - n)}x" * 3) for n in range(_N + 1)]


def _bytes(p: MemcpyProblem) -> int:
    """Every byte read and written once (the table comes with the launch)."""
    return 2 * int(p.data or 0)


#: What ``registry.record_variants`` reports for this path (not a registered variant: it needs
#: the addresses on the host, which only the list forms have).
ARGS_TABLE = Variant("memcpy_batched", "args_table", "cuda", lambda *a: None, _bytes)
#: What ``record_variants`` reports for ``memcpy_batched``'s one-launch path of a few buffers.
TABLE_WALK = Variant("memcpy_batched", "table_walk", "cuda", lambda *a: None, _bytes)
#: Blocks per SM of the walk's grid (each a ``MEMCPY_TABLE_BLOCK``-thread block).
WALK_BLOCKS_PER_SM = 2


def fits(count: int, largest: int) -> bool:
    """The table takes the batch: 1..``MAX_BUFFERS`` buffers, none above ``MAX_BYTES``."""
    return 0 < count <= MAX_BUFFERS and largest <= MAX_BYTES


#: Per device: the table kernel's launch as the C reader of the pairs makes it itself
#: (``transfer.device_table``): (``launch.launch_1d()``, ``MAX_BYTES``, the kernel's handle, its
#: block, the ``Prepared`` launch, whose kernel object keeps the handle's module loaded), put
#: by :func:`prepared` where launches go from C.
IN_READER = PlanCache("memcpy.table")


def prepared() -> Prepared:
    """The table kernel's launch on the current device (compiled once per device: the
    loader's cache); where launches go from C, also the launch the C reader of later calls
    makes (:data:`IN_READER`)."""
    kernel = get_kernel(SOURCE, "memcpy_table", options=defines(DEFINES))
    block = DEFINES["MEMCPY_TABLE_BLOCK"]
    go = Prepared(kernel, None, (block,), (np.zeros(1, TABLE), np.int32(0)))
    capsule = launch.launch_1d()
    if go.c and capsule is not None:
        device = sys.modules["cupy"].cuda.runtime.getDevice()  # the kernel's (get_kernel)
        IN_READER.put(device, (capsule, MAX_BYTES, go.token, block, go))
    return go


def prepared_walk(sms: int) -> Prepared:
    """``memcpy_table_walk``'s launch on the current device (``sms`` its SM count)."""
    kernel = get_kernel(SOURCE, "memcpy_table_walk", options=defines(DEFINES))
    return Prepared(kernel, (WALK_BLOCKS_PER_SM * sms,), (DEFINES["MEMCPY_TABLE_BLOCK"],),
                    (ARRAY, ARRAY, ARRAY, np.int32(0)))


def walk(go: Prepared, src: Any, dst: Any, sizes: Any) -> None:
    """Copy ``sizes[i]`` bytes from ``src[i]`` to ``dst[i]`` (device arrays of at most
    ``MAX_BUFFERS`` 8-byte integers, C-contiguous) on the current stream with the launch
    ``go`` of :func:`prepared_walk`: one launch, nothing else."""
    go(src, dst, sizes, np.int32(sizes.size))


def pack(src: Addresses, dst: Addresses, sizes: Addresses) -> bytes:
    """The table of at most ``MAX_BUFFERS`` buffers: what ``transfer.device_table`` builds in
    C, here from address and size lists."""
    return ROWS[len(sizes)].pack(*src, *dst, *sizes)


def rows(table: bytes, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The source, destination and size rows of a table of ``n`` buffers (three rows of
    ``max(n, MAX_BUFFERS)`` uint64) as uint64 arrays over its bytes."""
    t = np.frombuffer(table, np.uint64).reshape(3, -1)
    return t[0, :n], t[1, :n], t[2, :n]


def copy(go: Prepared, table: bytes, n: int) -> None:
    """Copy the ``n`` buffers of ``table`` (:func:`fits`) on the current stream with the
    launch ``go`` of :func:`prepared`: one launch, nothing else."""
    go.at((n,), table if go.c else np.frombuffer(table, TABLE), np.int32(n))

"""Batched memcpy: N buffers of varying size copied in one launch (CUB's DeviceBatchMemcpy
TLEV/WLEV/BLEV size classes and the obvious one-launch kernels: ``cuda.py``, ``memcpy.cu``;
a stream's BLEV queue: ``blev_queue.py``;
the warp kernel's variants: ``warp_variants.py``, ``memcpy_warp.cuh``, ``memcpy_lanes.cuh``;
the default's destination windows: ``windows.py``, ``memcpy_windows.cuh``;
NumPy slice copies: ``cpu.py``), the list form ``copy_batched``, CUB's pointer form
``memcpy_batched``, and NumPy's ``concatenate`` / ``split`` on top of them (``api.py``); CUB's
DeviceBatchMemcpy benchmark grid with CUB's ``DeviceMemcpy::Batched`` as comparator
(``warplab.lab.campaigns.memcpy``: ``bench.py``, ``comparators.py``, ``cub/``)."""
from __future__ import annotations

from warplab.families.memcpy import (  # noqa: F401  (register the variants)
    cpu,
    cuda,
    warp_variants,
    windows,
)
from warplab.families.memcpy.api import concatenate, copy_batched, memcpy_batched, split

__all__ = ["concatenate", "copy_batched", "memcpy_batched", "split"]

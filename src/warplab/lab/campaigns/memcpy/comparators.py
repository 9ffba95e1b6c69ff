"""Batched-copy comparators, timed in the same run as warplab's kernels: CUB's
``DeviceMemcpy::Batched`` (not reachable from Python packages: a small C++ helper built with
nvcc at bench time, ``cub_helper.py``) and the runtime's ``cudaMemcpyBatchAsync`` (CUDA 13,
from the same helper). Skipped with a note where nvcc is missing.

A provider's ``run(batch)`` takes a :class:`~warplab.families.memcpy.cuda.DeviceBatch` with its
host arrays and enqueues the copy on the current stream.
"""
from __future__ import annotations

from typing import Any

from warplab.lab.harness.comparators import Provider
from warplab.lab.campaigns.memcpy.cub_helper import cub_memcpy_batched, probe, runtime_memcpy_batch


def _cub(b: Any) -> None:
    cub_memcpy_batched(b.src, b.dst, b.sizes, b.count)


def _runtime(b: Any) -> None:
    runtime_memcpy_batch(*b.host, b.count)


MEMCPY_PROVIDERS = (
    Provider("cub::DeviceMemcpy::Batched", "cub", probe, _cub),
    Provider("cudaMemcpyBatchAsync", "cudart", probe, _runtime),
)

"""Histogram comparators: what people use today, timed in the same run as warplab's kernels.

Each provider computes the same function as ``warplab.byte_histogram(d_data, mapping)``: the
256 byte counts from its own library call, then (for mappings other than ``bytes``) a fold of the
256 counts into the mapping's bins, which is what a user of that library would write. The fold
is one tiny matrix product (two small kernels, no synchronisation) and is timed with the rest.
Providers that cannot be imported are skipped with a note, never an error.

On the cpu backend the comparator is NumPy's own ``np.bincount(data, minlength=256)`` on the
same host bytes, folded the same way (:data:`NUMPY_PROVIDERS`).
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from warplab.lab.harness.comparators import Provider, numpy_provider, probe_module as _probe_module
from warplab.families.histogram.spec import Mapping


def _fold(counts256: Any, mapping: Mapping) -> Any:
    """256 counts -> the mapping's bins as a 256 x nbins 0/1 matrix product (cuBLAS, no host
    synchronisation; float64 is exact for counts below 2^53)."""
    if mapping.name == "bytes":
        return counts256.astype(np.int64, copy=False)
    fold = _fold_matrix(mapping.lut.tobytes(), mapping.nbins)
    return (counts256.astype(np.float64) @ fold).astype(np.int64)


@functools.lru_cache(maxsize=8)
def _fold_matrix(key: bytes, nbins: int) -> Any:
    import cupy

    lut = np.frombuffer(key, dtype=np.uint8)
    m = np.zeros((256, nbins), dtype=np.float64)
    m[np.arange(256), lut] = 1.0
    return cupy.asarray(m)


def _cupy_bincount(d: Any, mapping: Mapping) -> Any:
    import cupy

    return _fold(cupy.bincount(d, minlength=256), mapping)


def _cupy_histogram(d: Any, mapping: Mapping) -> Any:
    """``cupy.histogram`` with CuPy's CUB accelerator switched on (DeviceHistogram::HistogramEven)."""
    import cupy
    from cupy._core import _accelerator

    saved = _accelerator.get_routine_accelerators()
    _accelerator.set_routine_accelerators(["cub"])
    try:
        counts, _ = cupy.histogram(d, bins=256, range=(0, 256))
    finally:
        _accelerator.set_routine_accelerators(saved)
    return _fold(counts, mapping)


def _torch_bincount(d: Any, mapping: Mapping) -> Any:
    import cupy
    import torch

    t = torch.from_dlpack(d)
    return _fold(cupy.from_dlpack(torch.bincount(t, minlength=256)), mapping)


def _cccl_histogram_even(d: Any, mapping: Mapping) -> Any:
    import cupy
    import cuda.compute

    hist = cupy.zeros(256, dtype=np.int32)
    cuda.compute.histogram_even(d_samples=d, d_histogram=hist, num_output_levels=257,
                                lower_level=np.int32(0), upper_level=np.int32(256),
                                num_samples=int(d.size))
    return _fold(hist, mapping)


def cccl_histogram_even_range(d: Any, nbins: int, lo: float, hi: float) -> Any:
    """``cuda.compute.histogram_even`` (CUB's DeviceHistogram::HistogramEven) of floating data:
    ``nbins`` equal bins over ``[lo, hi)``, int32 counts. CUB's bins are half open, the upper
    level excluded (NumPy closes its last bin), and its bin arithmetic is its own: counts agree
    with NumPy's up to values within an ulp of an edge. The numeric histogram's comparator."""
    import cupy
    import cuda.compute

    hist = cupy.zeros(nbins, dtype=np.int32)
    level = np.dtype(d.dtype).type
    cuda.compute.histogram_even(d_samples=d, d_histogram=hist, num_output_levels=nbins + 1,
                                lower_level=level(lo), upper_level=level(hi),
                                num_samples=int(d.size))
    return hist


HISTOGRAM_PROVIDERS = (
    Provider("cupy.bincount", "cupy", lambda: _probe_module("cupy"), _cupy_bincount),
    Provider("cupy.histogram", "cupy", lambda: _probe_module("cupy"), _cupy_histogram),
    Provider("torch.bincount", "torch", lambda: _probe_module("torch"), _torch_bincount),
    Provider("cuda.compute.histogram_even", "cuda.compute",
             lambda: _probe_module("cuda.compute"), _cccl_histogram_even),
)


def _numpy_bincount(data: np.ndarray, mapping: Mapping) -> np.ndarray:
    """``np.bincount`` of the host bytes (NumPy widens them to 64-bit integers first), folded
    into the mapping's bins: what a NumPy user writes."""
    counts = np.bincount(data, minlength=256)
    return counts if mapping.name == "bytes" else mapping.apply_to_counts(counts)


#: The cpu backend's comparator: run(host uint8 data, mapping) -> int64 counts.
NUMPY_PROVIDERS = (numpy_provider("numpy.bincount", _numpy_bincount),)

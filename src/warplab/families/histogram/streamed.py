"""Host data streamed through the histogram kernels (``core/streaming.py``): the byte
histograms of host arrays and files, NumPy's ``histogram`` of large host arrays, and the
min/max pass an automatic range needs.

Each function is one call into the core with a chunk kernel and a combine; the plans call
them where host data meets the device (or, for files and large arrays, the cpu backend's
threads over chunks). Results are the one-shot path's: counts are integers (sums of per-chunk
counts are exact), min/max combine exactly.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from warplab.core import registry as _registry
from warplab.core.sources import open_source
from warplab.core.streaming import stream, worth_streaming
from warplab.families.histogram import cpu
from warplab.families.histogram.binning import KERNEL_DTYPES
from warplab.families.histogram.config import LaunchConfig
from warplab.families.histogram.numeric import NumericJob, NumericResult
from warplab.families.histogram.spec import Mapping


def _sum_counts(nbins: int) -> Any:
    def combine(parts: list) -> np.ndarray:
        if not parts:
            return np.zeros(nbins, np.int64)
        return np.sum(parts, axis=0, dtype=np.int64)  # type: ignore[return-value]  # stubs: an array
    return combine


def _cpu_counts(v: _registry.Variant, mapping: Mapping) -> Any:
    def chunk(h_part: np.ndarray, start: int) -> np.ndarray:
        counts = np.zeros(mapping.nbins, dtype=np.int64)
        v.fn(h_part, counts, mapping)
        return counts
    return chunk


def device_byte_counts(v: _registry.Variant, h_data: np.ndarray, mapping: Mapping,
                       d_bins: Any) -> Any:
    """Add the byte counts of host uint8 ``h_data`` into device ``d_bins`` with cuda variant
    ``v``: streamed when large (pinned ring, copies overlapped with the kernel), else one copy.
    Returns ``d_bins``."""
    import cupy

    if not worth_streaming(h_data.nbytes):
        if h_data.size:
            v.fn(cupy.asarray(h_data), d_bins, mapping)
        return d_bins
    return stream(h_data, lambda d_part, start: v.fn(d_part, d_bins, mapping),
                  lambda parts: d_bins, backend="cuda")


def host_byte_counts(v: _registry.Variant, h_data: np.ndarray, mapping: Mapping) -> np.ndarray:
    """The cpu variant ``v`` on host uint8 ``h_data``: threads over chunks when large."""
    if not worth_streaming(h_data.nbytes):
        if v.fn is cpu.numpy_chunked:  # fresh counts: no zeroed array to add into
            return cpu.counts(h_data, mapping)
        counts = np.zeros(mapping.nbins, dtype=np.int64)
        v.fn(h_data, counts, mapping)
        return counts
    return stream(h_data, _cpu_counts(v, mapping), _sum_counts(mapping.nbins), backend="cpu")


def file_byte_counts(files: Any, mapping: Mapping,
                     decide: Callable[[int], _registry.Variant]) -> np.ndarray:
    """Byte counts (host int64) of a path, an open binary file or a list of paths (one
    histogram over all of them), read by the worker threads straight into staging buffers
    (pinned on cuda); ``decide(total size)`` gives the variant (``byte_plan.byte_variant``)."""
    src = open_source(files)
    try:
        v = decide(src.size)
        _registry.ran(v)
        if v.backend == "cpu":
            return stream(src, _cpu_counts(v, mapping), _sum_counts(mapping.nbins),
                          backend="cpu")
        import cupy

        d_bins = cupy.zeros(mapping.nbins, dtype=np.int64)
        stream(src, lambda d_part, start: v.fn(d_part, d_bins, mapping), lambda parts: None,
               backend="cuda")
        return d_bins.get()
    finally:
        src.close()


def numeric_histogram(v: _registry.Variant, job: NumericJob) -> NumericResult:
    """Run ``histogram``'s cuda variant ``v`` on ``job``: large unweighted host data with a
    kernel plan (a given range, an edges array, or the range from :func:`host_min_max`) is
    streamed, the variant running on each device chunk and its counts added into one running
    total on the device (memory: one histogram, whatever the chunk count); everything else
    runs as one job (the byte path streams inside ``count_bytes``)."""
    plan = job.plan
    if (job.on_device or job.weights is not None or plan is None
            or not getattr(plan, "kernel_ok", False) or v.name == "numpy_host"
            or not worth_streaming(job.data.nbytes)):
        return v.fn(job)

    first: list[NumericResult] = []  # the running total: one histogram on the device

    def chunk(d_part: Any, start: int) -> None:
        r = v.fn(replace(job, data=d_part, on_device=True))
        if first:
            total = first[0].hist  # NumericResult is frozen: add into its array in place
            total += r.hist  # on the caller's stream, after this chunk's kernel
        else:
            first.append(r)

    def combine(parts: list[None]) -> NumericResult:
        return first[0]

    return stream(job.data, chunk, combine, backend="cuda")


def host_min_max(h_x: np.ndarray, cfg: LaunchConfig) -> tuple[Any, Any]:
    """(min, max) of a flat host array as NumPy's ``a.min()``, ``a.max()`` give them: large
    arrays of the kernels' dtypes in a streamed pass on the device (NaN for both when any
    element is NaN), others with NumPy."""
    if h_x.size == 0 or np.dtype(h_x.dtype) not in KERNEL_DTYPES or \
            not worth_streaming(h_x.nbytes):
        return h_x.min(), h_x.max()
    from warplab.families.histogram.minmax_cuda import device_min_max

    def combine(parts: list[tuple[Any, Any]]) -> tuple[Any, Any]:
        lo = np.array([p[0] for p in parts], dtype=h_x.dtype)
        hi = np.array([p[1] for p in parts], dtype=h_x.dtype)
        return lo.min(), hi.max()

    return stream(h_x, lambda d_part, start: device_min_max(d_part, cfg), combine, backend="cuda")

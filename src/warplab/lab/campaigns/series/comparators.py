"""Per-series reduction comparators: what people write today for ``mean(axis=1)`` (or the sum)
of an (M, N) device array: ``cupy.mean(x, axis=1)``, ``torch.mean(t, dim=1)`` and CCCL's
``cuda.compute.segmented_reduce`` over the M rows (then divided by N for the mean), on the same
device input and timed in the same run as warplab's kernels; skipped with a note when not
importable.

A provider's ``run(d_x, op)`` takes a C-contiguous 2-D CuPy array and ``op`` (``"sum"`` or
``"mean"``) and returns the M results as a CuPy array. Every comparator accumulates in the input
type (float32 for float32 data), as a user calling it without ``dtype=`` gets.

On the cpu backend the comparator is NumPy's own ``np.mean(x, axis=1)`` (or ``np.sum``) on the
same host walks (:data:`NUMPY_PROVIDERS`; float32 pairwise, in the input type too).
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from warplab.lab.harness.comparators import Provider, numpy_provider, probe_module

OPS = ("sum", "mean")


def _cupy_rows(d: Any, op: str) -> Any:
    import cupy

    return getattr(cupy, op)(d, axis=1)


def _torch_rows(d: Any, op: str) -> Any:
    import cupy
    import torch

    return cupy.from_dlpack(getattr(torch, op)(torch.from_dlpack(d), dim=1))


@functools.lru_cache(maxsize=8)
def _offsets(m: int, n: int, device: int) -> tuple[Any, Any]:
    """Start and end offsets of the M rows (int64 device arrays, cached per shape)."""
    import cupy

    starts = cupy.arange(m, dtype=np.int64) * n
    return starts, starts + n


def _cccl_rows(d: Any, op: str) -> Any:
    import cupy
    from cuda import compute

    m, n = d.shape
    starts, ends = _offsets(m, n, cupy.cuda.runtime.getDevice())
    out = cupy.empty(m, dtype=d.dtype)
    compute.segmented_reduce(d_in=d.reshape(-1), d_out=out, num_segments=m,
                             start_offsets_in=starts, end_offsets_in=ends,
                             op=compute.OpKind.PLUS, h_init=np.zeros(1, dtype=d.dtype),
                             max_segment_size=n)
    if op == "mean":
        out /= d.dtype.type(n)
    return out


SERIES_PROVIDERS = (
    # names are templates: "{op}" becomes sum or mean
    Provider("cupy.{op}", "cupy", lambda: probe_module("cupy"), _cupy_rows),
    Provider("torch.{op}", "torch", lambda: probe_module("torch"), _torch_rows),
    Provider("cccl.segmented_reduce", "cuda.compute", lambda: probe_module("cuda.compute"),
             _cccl_rows),
)

#: The cpu backend's comparator (the name a template like the others').
NUMPY_PROVIDERS = (numpy_provider("numpy.{op}", lambda x, op: getattr(np, op)(x, axis=1)),)

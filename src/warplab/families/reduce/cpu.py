"""Reductions on the CPU with NumPy: the reference and the no-GPU backend, over the whole
array (registry family ``"reduce"``) and along axes (``"reduce_axis"``)."""
from __future__ import annotations

import math

import numpy as np

from warplab.core.registry import register
from warplab.families.reduce.axis_spec import F64, FAMILY, AxisJob, axis_bytes_moved, rows_acc
from warplab.families.reduce.spec import ReduceSpec, reduce_bytes_moved


@register("reduce", "numpy", backend="cpu", bytes_moved=reduce_bytes_moved, rank=0)
def numpy_reduce(x: np.ndarray, s: ReduceSpec) -> np.generic:
    """NumPy's reduction with warplab's accumulators (float sums and means in float64).

    Performance: reads the input once (NumPy casts float32 to float64 in buffered chunks).
    """
    if s.op in ("min", "max"):
        return (np.min if s.op == "min" else np.max)(x)
    total = np.add.reduce(x, dtype=s.acc)
    if s.op == "mean":
        total = total / x.size
    return s.out.type(total)


@register(FAMILY, "numpy", backend="cpu", bytes_moved=axis_bytes_moved, rank=0)
def numpy_axis(x: np.ndarray, job: AxisJob) -> np.ndarray:
    """NumPy with warplab's accumulators: the reference and the no-GPU backend.

    Sums and means accumulate in float64 for every float dtype (int64/uint64 for integers, which
    wrap like NumPy's); var/std are NumPy's two-pass ``np.var`` in float64; min/max are
    ``np.minimum/maximum.reduce`` (NaN propagates). Any layout, any axes, no copy.

    Performance:
        Reads the input once for sum/mean/min/max (NumPy converts float16/32 to float64 in
        buffered chunks); var/std read it twice and allocate a float64 temporary of the input's
        size.
    """
    ax, op = job.axes, job.op
    if op in ("min", "max"):
        r = (np.minimum if op == "min" else np.maximum).reduce(x, axis=ax)
    elif op == "sum":
        r = np.add.reduce(x, axis=ax, dtype=rows_acc(x.dtype))
    elif op == "mean":
        r = np.add.reduce(x, axis=ax, dtype=F64) / math.prod(x.shape[d] for d in ax)
    else:
        r = np.var(x, axis=ax, dtype=F64, ddof=job.ddof)
        r = np.sqrt(r) if op == "std" else r
    return np.asarray(r).astype(job.out, copy=False)

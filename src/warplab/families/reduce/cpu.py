"""Reductions on the CPU with NumPy: the reference and the no-GPU backend."""
from __future__ import annotations

import numpy as np

from warplab.families.reduce.spec import ReduceSpec, reduce_bytes_moved
from warplab.core.registry import register


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

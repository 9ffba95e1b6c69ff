"""The NumPy backend of batched copies: a loop of slice copies on byte views (the reference,
and what runs without a GPU)."""
from __future__ import annotations

import numpy as np

from warplab.core.registry import register
from warplab.families.memcpy.spec import Plan, bytes_moved


@register("memcpy_batched", "numpy", backend="cpu", bytes_moved=bytes_moved, rank=0)
def numpy_copy(srcs: list[np.ndarray], dsts: list[np.ndarray], plan: Plan) -> None:
    """Buffer k: ``dsts[dst_index[k]][dst_offset[k]:][:size[k]] = srcs[src_index[k]][...]``,
    where ``srcs`` and ``dsts`` are flat uint8 views.

    Performance: one Python-level slice copy per buffer (about a microsecond each plus the
    bytes at memcpy speed).
    """
    for si, so, di, do, n in zip(plan.src_index.tolist(), plan.src_offset.tolist(),
                                 plan.dst_index.tolist(), plan.dst_offset.tolist(),
                                 plan.size.tolist()):
        if n > 0:
            dsts[di][do:do + n] = srcs[si][so:so + n]

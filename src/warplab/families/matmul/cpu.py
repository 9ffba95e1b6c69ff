"""Matrix products on the CPU with NumPy: the reference and the no-GPU backend."""
from __future__ import annotations

import numpy as np

from warplab.core.registry import register
from warplab.families.matmul.spec import compulsory_bytes, matmul_flops


@register("matmul", "numpy", backend="cpu", bytes_moved=compulsory_bytes, flops=matmul_flops,
          rank=0)
def numpy_matmul(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """NumPy's ``matmul`` (its BLAS) into ``c``.

    Performance: 2 m n k flops; each matrix read at least once, C written once.
    """
    return np.matmul(a, b, out=c)

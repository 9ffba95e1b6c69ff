"""Matrix product: the GPU lecture's naive and tiled kernels and the register-tiled kernels
(``cuda.py``, ``matmul.cu``), NumPy (``cpu.py``)."""
from __future__ import annotations

from warplab.families.matmul import cpu, cuda  # noqa: F401  (register the variants)
from warplab.families.matmul.api import matmul

__all__ = ["matmul"]

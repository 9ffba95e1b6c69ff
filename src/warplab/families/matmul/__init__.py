"""Matrix product: the GPU lecture's naive and tiled kernels and the register-tiled kernels
(``cuda.py``, ``matmul.cu``), NumPy (``cpu.py``)."""
from __future__ import annotations

from . import cpu, cuda  # noqa: F401  (register the variants)
from .api import matmul

__all__ = ["matmul"]

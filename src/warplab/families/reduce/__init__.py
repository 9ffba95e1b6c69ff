"""Reductions: the reduction lecture's eight kernels, the GPU lecture's single-pass global
synchronisation and ``persistent_vec`` (``cuda.py``, ``reduce.cu``), NumPy (``cpu.py``)."""
from __future__ import annotations

from . import cpu, cuda  # noqa: F401  (register the variants)
from .api import max, mean, min, reduce, sum  # noqa: A004 (NumPy's names, on purpose)

__all__ = ["sum", "min", "max", "mean", "reduce"]

"""Reductions: over the whole array, the reduction lecture's eight kernels, the GPU lecture's
single-pass global synchronisation and ``persistent_vec`` (``cuda.py``, ``reduce.cu``,
``reduce_lecture.cuh``); along axes (``axis.py``, ``axis_cuda.py``, ``axis_input.py``,
``axis.cu``), the Pearson report's K2 kernels, ``rows_adaptive`` and ``columns``; NumPy for both
(``cpu.py``, ``axis.py``)."""
from __future__ import annotations

from warplab.families.reduce import axis_cuda, axis_cuda_k2, cpu, cuda  # noqa: F401  (register the variants)
from warplab.families.reduce.api import max, mean, min, reduce, std, sum, var  # noqa: A004 (NumPy's names, on purpose)

__all__ = ["max", "mean", "min", "reduce", "std", "sum", "var"]

"""Histograms: NumPy's ``histogram`` and ``bincount`` (``numeric.py``, kernels in
``numeric_cuda.py`` / ``numeric.cu``) and byte histograms, the histogram report's four kernels and
the privatized vector kernels (``cuda.py``, ``histogram.cu``), NumPy (``cpu.py``)."""
from __future__ import annotations

from . import cpu, cuda, numeric, numeric_cuda  # noqa: F401  (register the variants)
from .api import bincount, byte_histogram, histogram

__all__ = ["byte_histogram", "histogram", "bincount"]

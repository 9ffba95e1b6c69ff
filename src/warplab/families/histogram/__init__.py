"""Histograms: NumPy's ``histogram`` and ``bincount`` (``numeric.py``; launch plans in
``numeric_cuda.py``, its cuda variants in ``numeric_variants.py``, kernels in ``numeric.cu``)
and byte histograms, the histogram report's four kernels and the privatized vector kernels
(``cuda.py``, ``histogram.cu``), NumPy (``cpu.py``)."""
from __future__ import annotations

from warplab.families.histogram import cpu, cuda, numeric, numeric_variants  # noqa: F401  (register the variants)
from warplab.families.histogram.api import bincount, byte_histogram, histogram

__all__ = ["bincount", "byte_histogram", "histogram"]

"""Byte histograms and ``bincount``: the histogram report's four kernels and the privatized
vector kernels (``cuda.py``, ``histogram.cu``), NumPy (``cpu.py``)."""
from __future__ import annotations

from . import cpu, cuda  # noqa: F401  (register the variants)
from .api import bincount, histogram

__all__ = ["histogram", "bincount"]

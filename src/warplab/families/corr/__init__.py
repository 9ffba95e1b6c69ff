"""Pearson correlation, the Pearson report's steps 3-5: ``corrcoef`` (NumPy's correlation
matrix; ``api.py``), ``corr_pairs`` (the strongest pairs without the M x M matrix;
``pairs.py``); kernels in ``cuda.py`` / ``corr.cu`` and the tensor-core Gram products in
``gram.py``, small problems in one launch in ``small_cuda.py``; NumPy in ``cpu.py``."""
from __future__ import annotations

from . import cpu, cuda, small_cuda  # noqa: F401  (register the variants)
from .api import corrcoef
from .pairs import corr_pairs

__all__ = ["corr_pairs", "corrcoef"]

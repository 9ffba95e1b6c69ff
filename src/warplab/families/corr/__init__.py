"""Pearson correlation, the Pearson report's steps 3-5: ``corrcoef`` (NumPy's correlation
matrix; ``api.py``), ``corr_pairs`` (the strongest pairs without the M x M matrix;
``pairs.py``); kernels in ``cuda.py`` / ``corr.cu`` and the tensor-core Gram products in
``gram.py``, small problems in one launch in ``small_cuda.py``; NumPy in ``cpu.py``."""
from __future__ import annotations

from warplab.families.corr import cpu, cuda, small_cuda  # noqa: F401  (register the variants)
from warplab.families.corr.api import corrcoef
from warplab.families.corr.pairs import corr_pairs

__all__ = ["corr_pairs", "corrcoef"]

"""Per-series statistics, the Pearson report's steps 1-3: random-walk series
(``walk.py``, ``walk_cuda.py``, ``walk.cu``: the report's K1 and a coalesced scan), their means
and centred norms (``api.series_stats``, on the reduce family's axis kernels), and the
report's campaign (``bench.py``: generation, K2 and accuracy tables, the sequential
baseline)."""
from __future__ import annotations

from warplab.families.series import walk_cuda  # noqa: F401  (registers the cuda variants; walk.py the numpy one)
from warplab.families.series.api import random_walk, series_stats

__all__ = ["random_walk", "series_stats"]

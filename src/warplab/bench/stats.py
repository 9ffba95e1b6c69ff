"""Order statistics of timing samples (milliseconds)."""
from __future__ import annotations

from typing import Sequence

import numpy as np


def summarize(samples_ms: Sequence[float]) -> dict:
    """min, Q10, median, Q90, max, relative noise ((Q90 - Q10) / median) and the samples.

    Quantiles are NumPy's default (linear interpolation between order statistics).
    """
    a = np.asarray(samples_ms, dtype=np.float64)
    if a.size == 0:
        raise ValueError("no samples")
    q10, med, q90 = (float(x) for x in np.quantile(a, [0.1, 0.5, 0.9]))
    return {
        "min": float(a.min()), "q10": q10, "median": med, "q90": q90, "max": float(a.max()),
        "noise": (q90 - q10) / med if med > 0 else 0.0,
        "samples": [float(x) for x in a],
    }


def gbps(nbytes: int, ms: float) -> float | None:
    """Bytes per median time in GB/s (1e9 bytes per second)."""
    return nbytes / (ms * 1e-3) / 1e9 if ms > 0 else None

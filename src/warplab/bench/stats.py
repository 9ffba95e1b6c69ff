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


def paired_ratio(numerators: Sequence[float], denominators: Sequence[float]) -> float | None:
    """Median of the per-round ratios ``numerators[i] / denominators[i]`` of two interleaved
    measurements (one value per round each, e.g. per-round medians): host drift between rounds
    cancels in each ratio, where a ratio of pooled medians lets a bimodal host state decide.
    None when the rounds do not pair up."""
    if not numerators or len(numerators) != len(denominators) or min(denominators) <= 0:
        return None
    return float(np.median(np.asarray(numerators, float) / np.asarray(denominators, float)))

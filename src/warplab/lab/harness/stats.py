"""Order statistics of timing samples (milliseconds)."""
from __future__ import annotations

from typing import Sequence

import numpy as np
from warplab.core.errors import InvalidValueError


def summarize(samples_ms: Sequence[float]) -> dict:
    """min, Q10, median, Q90, max, relative noise ((Q90 - Q10) / median) and the samples.

    Quantiles are NumPy's default (linear interpolation between order statistics).
    """
    a = np.asarray(samples_ms, dtype=np.float64)
    if a.size == 0:
        raise InvalidValueError("no samples")
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


def round_medians(samples: Sequence[float], per_round: int) -> list[float]:
    """Medians of consecutive groups of ``per_round`` samples (the rounds of an interleaved
    measurement, in the order they were taken); the one pooled median where the samples do not
    split into whole rounds. ``[]`` without samples."""
    a = np.asarray(samples, dtype=np.float64)
    if a.size == 0:
        return []
    if per_round < 1 or a.size % per_round:
        return [float(np.median(a))]
    return [float(m) for m in np.median(a.reshape(-1, per_round), axis=1)]


def paired_or_pooled(a: Sequence[float], b: Sequence[float], per_round: int) -> float | None:
    """``a / b`` of two interleaved sample lists with ``per_round`` samples per round:
    :func:`paired_ratio` of their :func:`round_medians`, else (rounds that do not pair up) the
    ratio of the pooled medians; None without samples or with a zero median."""
    if not len(a) or not len(b):
        return None
    ratio = paired_ratio(round_medians(a, per_round), round_medians(b, per_round))
    if ratio is None:
        den = float(np.median(np.asarray(b, float)))
        return float(np.median(np.asarray(a, float))) / den if den > 0 else None
    return ratio

"""``nan_policy="pairwise"``: each coefficient over the observations where both series are
finite (pandas' ``DataFrame.corr``, ``min_periods=1``), on NumPy or CuPy.

With ``w`` the 0/1 mask of finite values and ``x0`` the data with non-finite values set to 0
(each row first shifted by its own finite mean, so the raw moments below do not cancel
catastrophically), every pair needs: ``n = w w^T`` (common observations),
``sx = x0 w^T`` (sum of series i over the observations j has), ``sxx = x0^2 w^T`` and
``sxy = x0 x0^T``. Then ``cov = sxy - sx sx^T / n``, ``var_i = sxx - sx^2 / n`` and
``r = cov / sqrt(var_i var_j)``. Cost: four M x M x N float64 products (about 4x the flops of
the default path, and 4 M x M float64 temporaries), the whole matrix at once.
A pair with fewer than 2 common observations or zero variance over them gives NaN.
"""
from __future__ import annotations

from typing import Any

import numpy as np


def _xp(a: Any) -> Any:
    return np if isinstance(a, np.ndarray) else __import__("cupy")


def pairwise_complete(x: Any) -> Any:
    """The M x M pairwise-complete coefficients of the rows of ``x`` (float64, clipped to
    [-1, 1]); NaN where a pair has fewer than 2 common finite observations or no variance."""
    xp = _xp(x)
    x = x.astype(np.float64)
    finite = xp.isfinite(x)
    w = finite.astype(np.float64)
    count = w.sum(axis=1, keepdims=True)
    x0 = xp.where(finite, x, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        x0 = xp.where(finite, x0 - x0.sum(axis=1, keepdims=True) / xp.maximum(count, 1), 0.0)
    n = w @ w.T
    sx = x0 @ w.T                 # sx[i, j]: sum of series i where j is finite too
    sxx = (x0 * x0) @ w.T
    sxy = x0 @ x0.T
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = sxy - sx * sx.T / n
        var = sxx - sx * sx / n   # var[i, j]: series i over the pair's observations
        r = cov / xp.sqrt(var * var.T)
    bad = (n < 2) | ~(var > 0) | ~(var.T > 0)
    r[bad] = np.nan
    xp.clip(r, -1, 1, out=r)
    d = xp.arange(r.shape[0])
    r[d, d] = xp.where(bad[d, d], np.nan, 1.0)
    return r

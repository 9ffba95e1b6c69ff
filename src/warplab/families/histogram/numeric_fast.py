"""The one-FMA bin of ``hist_even_fast`` (``numeric.cu``): its constants, the bound that makes it
NumPy's index, and its rule in NumPy (for the tests).

NumPy's index of a kept value x (``binning.EvenPlan``) is ``trunc(((xe - first) / denom) * n)``
in NumPy's dtypes, corrected once down and once up against the edges. Write
``p(x) = (xe - first) / denom * n`` for the exact real number (xe: x cast to the edges' dtype,
first, denom: the plan's constants). Then:

* NumPy's computed f is within ``err_f = 2 (n + 1) (u_E + 2 u_P)`` of p (one rounding in E, two
  in P; u the unit roundoff, a factor 2 to spare);
* each edge lies within ``edge_err`` of its ideal position: ``|p(edges[k]) - k| <= edge_err``,
  computed here from the actual edges (float64, plus a margin for that arithmetic);
* the kernel's ``t = fma(float32(x), scale, offset)`` with ``scale = float32(n / denom)``,
  ``offset = float32(-first * n / denom)`` is within
  ``err_t = 2 u32 (3.1 X S + 1.1 |first| S + n + 1)`` of p, X the largest magnitude of a kept
  value, S = n / denom (the rounding of x, scale, offset and the FMA, a factor 2 to spare).

If p lies more than ``max(err_f, edge_err)`` from every integer, NumPy's truncation gives
floor(p) and neither correction fires (xe lies strictly between the two edges); so when t lies
more than ``delta = err_t + max(err_f, edge_err)`` from every integer and inside
``(delta, n - delta)``, NumPy's index is floor(t). Every other value takes NumPy's arithmetic.
With float32 data and 256 bins over (-4, 4), delta is about 1.5e-4: ~3 in 10,000 values take the
slow path. Plans where delta reaches 1/4 (float16 arithmetic, far-off ranges) get no constants
and the kernel is not used.
"""
from __future__ import annotations

import functools
from typing import Any, cast

import numpy as np

from warplab.families.histogram.binning import EvenPlan, even_bins_reference

U32 = 2.0 ** -24
MAGIC = np.float32(12582912.0)  # 1.5 * 2^23
#: Largest delta worth a fast path (beyond it most values near an integer take the slow one).
MAX_DELTA = 0.25


@functools.lru_cache(maxsize=256)
def fast_constants(plan: EvenPlan) -> tuple[np.float32, np.float32, np.float32] | None:
    """``(scale, offset, delta)`` of ``hist_even_fast`` for ``plan`` (float32), or None when the
    bound does not hold or is too loose (see the module docstring).

    Performance: host arithmetic over the nbins + 1 edges, cached per plan."""
    if plan.keep is None or not plan.kernel_ok or not 1 <= plan.nbins < (1 << 22):
        return None
    n = plan.nbins
    with np.errstate(all="ignore"):
        first = float(plan.first_e)
        denom = float(plan.denom_p)
        lo, hi = float(plan.keep[0]), float(plan.keep[1])
        if not (np.isfinite([first, denom, lo, hi]).all() and denom > 0):
            return None
        s = n / denom
        x_max = max(abs(lo), abs(hi))
        scale, offset = np.float32(s), np.float32(-first * s)
        if not (2.0 ** -60 < s < 2.0 ** 60 and x_max < 2.0 ** 100 and np.isfinite(offset)
                and (offset == 0 or abs(float(offset)) > 2.0 ** -60)):
            return None
        err_t = 2 * U32 * (3.1 * x_max * s + 1.1 * abs(first) * s + n + 1)
        u_e = float(np.finfo(plan.e_dtype).eps) / 2
        u_p = float(np.finfo(plan.p_dtype).eps) / 2
        err_f = 2 * (n + 1) * (u_e + 2 * u_p)
        pos = (plan.edges.astype(np.float64) - first) / denom * n
        edge_err = float(np.max(np.abs(pos - np.arange(n + 1)))) + 8 * (n + 1) * 2.0 ** -53
    delta = err_t + max(err_f, edge_err)
    if not delta < MAX_DELTA:
        return None
    d32 = np.float32(delta)
    if float(d32) < delta:
        d32 = np.nextafter(d32, np.float32(1))
    return scale, offset, d32


def _fma32(a: np.ndarray, b: np.float32, c: np.float32) -> np.ndarray:
    """float32 fused multiply-add: the product exactly (48 bits) in long double, one addition,
    one rounding to float32 (a double rounding differs only on exact ties, which the bound's
    factor 2 covers)."""
    ld = np.longdouble
    return (a.astype(ld) * ld(b) + ld(c)).astype(np.float32)


def even_fast_bins_reference(x: np.ndarray, plan: EvenPlan,
                             consts: tuple[np.float32, np.float32, np.float32]) -> np.ndarray:
    """``hist_even_fast``'s rule in NumPy: the bin of each element of ``x`` (-1: not counted),
    floor(t) where the kernel takes it, ``even_bins_reference`` elsewhere. Tests compare it with
    ``np.histogram``."""
    x = np.asarray(x, dtype=plan.dtype).reshape(-1)
    out = even_bins_reference(x, plan)
    scale, offset, delta = consts
    with np.errstate(all="ignore"):
        t = _fma32(x.astype(np.float32), scale, offset)
        tb = (t + MAGIC).astype(np.float32)
        d = (t - (tb - MAGIC)).astype(np.float32)
        top = np.float32(np.float32(plan.nbins) - delta)
        lo, hi = cast(tuple, plan.keep)  # a plan the kernel runs: it keeps values
        fast = (t > delta) & (t < top) & (np.abs(d) > delta) & (x >= lo) & (x <= hi)
    k = tb.view(np.int32).astype(np.int64) - 0x4B400000 - (d < 0)
    return np.where(fast, k, out)


def fast_share(x: Any, plan: EvenPlan, consts: tuple) -> float:
    """Fraction of the values of ``x`` the kernel bins with the FMA alone (diagnostics)."""
    x = np.asarray(x, dtype=plan.dtype).reshape(-1)
    scale, offset, delta = consts
    with np.errstate(all="ignore"):
        t = _fma32(x.astype(np.float32), scale, offset)
        d = t - np.rint(t)
    ok = (t > delta) & (t < plan.nbins - delta) & (np.abs(d) > delta)
    return float(ok.mean()) if x.size else 0.0

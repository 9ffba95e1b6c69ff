"""How NumPy's ``histogram`` maps values to bins, as plans the CUDA kernels execute bit for bit
(``numeric.cu``), and their NumPy references (the tests hold the kernels to them).

* evenly spaced bins (integer ``bins``): NumPy keeps ``first <= x <= last`` (compared as NumPy
  compares the data's dtype with the edges' Python or NumPy scalars), casts the data to the
  edges' dtype E, computes ``f = ((x - first) / (last - first)) * bins`` in the dtype P that
  NumPy's promotion gives, truncates, moves index ``bins`` to ``bins - 1`` and corrects once
  down and once up. :class:`EvenPlan` turns that into constants for the kernel: the kept
  interval as two values of the data's dtype (found by bisection with NumPy's own comparison),
  E, P, ``first`` in E, the divisor in P (and its exact reciprocal when it is a power of two),
  ``bins`` in P; :func:`even_bins_reference` is the same arithmetic in NumPy.
* edges arrays: bin ``j`` holds ``edges[j] <= x < edges[j + 1]`` (the last bin closed),
  compared in ``result_type(data, edges)`` (:class:`EdgesPlan`, :func:`edges_bins_reference`).

``numeric.py`` holds the rest of the semantics (checks, ranges, edges, weights) and the NumPy
variants; the full account of what is replicated from NumPy is its docstring.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

#: Data dtypes the CUDA kernels read (bool data is NumPy's uint8 after its warning).
KERNEL_DTYPES = tuple(np.dtype(t) for t in (
    np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
    np.float16, np.float32, np.float64))
FLOAT_DTYPES = tuple(np.dtype(t) for t in (np.float16, np.float32, np.float64))


def unsigned_subtract(a: Any, b: Any) -> Any:
    """NumPy's ``_unsigned_subtract``: ``a - b`` (a >= b), unsigned for signed integers."""
    signed_to_unsigned = {np.byte: np.ubyte, np.short: np.ushort, np.intc: np.uintc,
                          np.int_: np.uint, np.longlong: np.ulonglong}
    dt = np.result_type(a, b)
    try:
        unsigned_dt = signed_to_unsigned[dt.type]
    except KeyError:
        return np.subtract(a, b, dtype=dt)
    return np.subtract(np.asarray(a, dtype=dt), np.asarray(b, dtype=dt), casting="unsafe",
                       dtype=unsigned_dt)


# ----------------------------------------------------------------------------------------------
# The even-bins plan: NumPy's arithmetic as constants for the kernel
# ----------------------------------------------------------------------------------------------


def scalar_key(v: Any) -> tuple:
    return (type(v), v)


def _ordered_values(dtype: np.dtype) -> tuple[int, int, Callable[[int], np.ndarray]]:
    """(lowest key, highest key, key -> 1-element array) over the non-NaN values of ``dtype``
    in increasing order (integers: the values; floats: the sign-magnitude bits made ordered)."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return int(info.min), int(info.max), lambda k: np.array([k], dtype)
    ubits = np.dtype(f"u{dtype.itemsize}")
    sign = 1 << (8 * dtype.itemsize - 1)
    inf = int(np.array([np.inf], dtype).view(ubits)[0])

    def value(k: int) -> np.ndarray:
        b = k if k >= 0 else sign | (-k - 1)
        return np.array([b], ubits).view(dtype)

    return -inf - 1, inf, value


def _bisect(lo: int, hi: int, pred: Callable[[int], bool]) -> int | None:
    """Smallest k in [lo, hi] with pred(k) (pred monotone False..True); None if none."""
    if not pred(hi):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


@functools.lru_cache(maxsize=512)
def _keep_bounds(dtype: np.dtype, first_key: tuple, last_key: tuple) -> tuple | None:
    first, last = first_key[1], last_key[1]
    kmin, kmax, value = _ordered_values(dtype)
    lo = _bisect(kmin, kmax, lambda k: bool((value(k) >= first)[0]))
    # last value with v <= last: first key where v <= last turns false, minus one
    above = _bisect(kmin, kmax, lambda k: not bool((value(k) <= last)[0]))
    hi = kmax if above is None else above - 1
    if lo is None or hi < kmin or lo > hi:
        return None
    return value(lo)[0], value(hi)[0]


def keep_bounds(dtype: np.dtype, first: Any, last: Any) -> tuple | None:
    """The values of ``dtype`` NumPy keeps (``first <= x <= last``, compared as NumPy compares
    an array of ``dtype`` with these scalars) as ``(lo, hi)`` scalars of ``dtype``; None when
    none is kept. NaN is never kept. Exact by construction: bisection over the dtype's ordered
    values with NumPy's own comparison (about 64 comparisons per bound, cached)."""
    dtype = np.dtype(dtype)
    if (isinstance(first, np.generic) and isinstance(last, np.generic)
            and first.dtype == dtype and last.dtype == dtype):
        # the data's own min and max (the automatic range): compared in the data's dtype,
        # they are the bounds themselves (no bisection: this key changes with every input)
        return (first, last) if first <= last else None  # type: ignore[operator]  # stubs: generic has no <=
    return _keep_bounds(dtype, scalar_key(first), scalar_key(last))


@dataclass(frozen=True, eq=False)
class EvenPlan:
    """Everything the even-bins kernel needs, computed on the host from NumPy's own arithmetic.

    ``keep``: (lo, hi) of the data's dtype or None (nothing counted). ``e_dtype``: the edges'
    dtype (the data is cast to it); ``p_dtype``: the dtype of NumPy's index arithmetic;
    ``first_e``; ``denom_p`` (and ``rdenom_p``, its exact reciprocal, when the divisor is a power
    of two, else None); ``n_p`` (the bin count in P). ``kernel_ok`` False (with ``why``) when
    the kernel cannot reproduce NumPy (NumPy itself runs then)."""

    dtype: np.dtype
    nbins: int
    first: Any
    last: Any
    edges: np.ndarray
    keep: tuple | None
    e_dtype: np.dtype
    p_dtype: np.dtype | None
    first_e: Any
    denom_p: Any
    rdenom_p: Any
    n_p: Any
    kernel_ok: bool
    why: str = ""


def plan_even(dtype: Any, first: Any, last: Any, nbins: int, edges: np.ndarray) -> EvenPlan:
    """The :class:`EvenPlan` of NumPy's fast path for data of ``dtype``, the outer edges
    ``first``/``last`` (as :func:`outer_edges` returns them) and ``edges``
    (:func:`even_edges`)."""
    return _plan_even(np.dtype(dtype), scalar_key(first), scalar_key(last), int(nbins),
                      edges.dtype, edges.tobytes())


@functools.lru_cache(maxsize=256)
def _plan_even(dtype: np.dtype, first_key: tuple, last_key: tuple, nbins: int,
               e_dtype: np.dtype, edges_bytes: bytes) -> EvenPlan:
    first, last = first_key[1], last_key[1]
    edges = np.frombuffer(edges_bytes, dtype=e_dtype)
    base: dict[str, Any] = {"dtype": dtype, "nbins": nbins, "first": first, "last": last,
                            "edges": edges, "e_dtype": e_dtype}
    none: dict[str, Any] = {"p_dtype": None, "first_e": None, "denom_p": None, "rdenom_p": None,
                            "n_p": None}

    def refuse(why: str, keep: tuple | None = None) -> EvenPlan:
        return EvenPlan(**base, keep=keep, **none, kernel_ok=False, why=why)

    if dtype not in KERNEL_DTYPES:
        return refuse(f"data dtype {dtype}")
    if e_dtype not in FLOAT_DTYPES:
        return refuse(f"edges dtype {e_dtype}")
    if not np.isfinite(edges).all():
        return refuse("non-finite edges")
    if dtype.kind == "f":
        with np.errstate(all="ignore"):
            ends = np.array([first, last], dtype=np.float64).astype(dtype)
        if not np.isfinite(ends).all():  # e.g. float16 data, range beyond +-65504: NumPy's
            return refuse("range outside the data dtype's finite values")  # own rules decide
    keep = keep_bounds(dtype, first, last)
    if keep is None:
        return EvenPlan(**base, keep=None, **none, kernel_ok=True)
    norm_denom = unsigned_subtract(last, first)
    with np.errstate(all="ignore"):
        tmp = np.array(keep, dtype).astype(e_dtype, copy=False)
        sub = unsigned_subtract(tmp, first)
        f = (sub / norm_denom) * nbins
        p_dtype = f.dtype
        if sub.dtype != e_dtype or p_dtype not in FLOAT_DTYPES:
            return refuse(f"index arithmetic in {sub.dtype}/{p_dtype}", keep)
        # NumPy's own index of the lowest and highest kept value stays in 0 .. nbins - 1 (f is
        # monotone in x, so every kept value's is), else NumPy fails or misindexes: run it.
        if not (np.isfinite(f).all() and f[0] > -1 and f[1] < nbins + 1
                and tmp[0] >= edges[0]):
            return refuse("NumPy's index leaves the bins", keep)
        first_e = -unsigned_subtract(np.zeros(1, e_dtype), first)[0]
        denom_p = np.asarray(norm_denom).astype(p_dtype)[()]
        n_p = (np.ones(1, p_dtype) * nbins)[0]
        rdenom_p = None
        if np.isfinite(denom_p) and denom_p > 0 and np.frexp(denom_p)[0] == 0.5:
            r = (np.ones(1, p_dtype) / denom_p)[0]
            if np.isfinite(r) and r >= np.finfo(p_dtype).tiny:
                rdenom_p = r  # 1/denom exactly: x * r is x / denom rounded once, bit for bit
    return EvenPlan(**base, keep=keep, p_dtype=p_dtype, first_e=first_e, denom_p=denom_p,
                    rdenom_p=rdenom_p, n_p=n_p, kernel_ok=True)


def even_bins_reference(x: np.ndarray, plan: EvenPlan) -> np.ndarray:
    """The kernel's arithmetic in NumPy, element by element as ``numeric.cu`` does it (the
    plan's constants, float16 through float32 with one rounding per operation): the bin of each
    element of ``x`` (-1: not counted). Tests compare it with ``np.histogram``."""
    x = np.asarray(x, dtype=plan.dtype).reshape(-1)
    out = np.full(x.shape, -1, dtype=np.int64)
    if plan.keep is None or x.size == 0:
        return out
    lo, hi = plan.keep
    kept = (x >= lo) & (x <= hi)  # same dtype: a plain comparison
    xs = x[kept]
    E, P = plan.e_dtype, cast(np.dtype, plan.p_dtype)  # set where the kernel counts

    def op(fn: Callable, a: np.ndarray, b: Any, t: np.dtype) -> np.ndarray:
        if t == np.float16:  # through float32, one rounding to float16
            return fn(a.astype(np.float32), np.float32(b)).astype(np.float16)
        return fn(a.astype(t), np.asarray(b, t))

    with np.errstate(all="ignore"):
        xe = xs.astype(E)
        s = op(np.subtract, xe, plan.first_e, E).astype(P)
        if plan.rdenom_p is not None:
            q = op(np.multiply, s, plan.rdenom_p, P)
        else:
            q = op(np.divide, s, plan.denom_p, P)
        f = op(np.multiply, q, plan.n_p, P)
        idx = f.astype(np.int64)  # truncation toward zero, as NumPy's astype(np.intp)
    idx[idx == plan.nbins] -= 1
    edges = plan.edges
    idx[xe < edges[idx]] -= 1
    up = (idx != plan.nbins - 1)
    up &= xe >= edges[np.minimum(idx + 1, plan.nbins)]
    idx[up] += 1
    out[kept] = idx
    return out


# ----------------------------------------------------------------------------------------------
# Edges arrays
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class EdgesPlan:
    """Bins from an edges array: ``edges_t`` are the edges in the comparison dtype ``t_dtype``
    (``result_type(data, edges)``, as NumPy's ``searchsorted``)."""

    dtype: np.dtype
    nbins: int
    edges: np.ndarray
    t_dtype: np.dtype
    edges_t: np.ndarray | None
    kernel_ok: bool
    why: str = ""


def plan_edges(dtype: Any, edges: np.ndarray) -> EdgesPlan:
    """The :class:`EdgesPlan` of data of ``dtype`` and NumPy's (checked) ``edges``."""
    dtype = np.dtype(dtype)
    nbins = max(0, edges.size - 1)
    try:
        t = np.result_type(np.empty(1, dtype), edges)
    except TypeError:
        t = np.dtype(object)

    def refuse(why: str) -> EdgesPlan:
        return EdgesPlan(dtype, nbins, edges, t, None, False, why)

    if dtype not in KERNEL_DTYPES:
        return refuse(f"data dtype {dtype}")
    if t not in KERNEL_DTYPES:
        return refuse(f"comparison dtype {t}")
    if edges.size < 2:
        return refuse("fewer than two edges")
    with np.errstate(all="ignore"):
        edges_t = edges.astype(t)
    if t.kind == "f" and np.isnan(edges_t).any():
        return refuse("NaN among the edges")
    return EdgesPlan(dtype, nbins, edges, t, edges_t, True)


def edges_bins_reference(x: np.ndarray, plan: EdgesPlan) -> np.ndarray:
    """The edges kernel's rule in NumPy: bin of each element (-1: not counted)."""
    xt = np.asarray(x, dtype=plan.dtype).reshape(-1).astype(plan.t_dtype)
    e = cast(np.ndarray, plan.edges_t)  # set where the kernel counts
    idx = np.searchsorted(e, xt, side="right") - 1
    idx = np.minimum(idx, plan.nbins - 1)
    bad = (xt < e[0]) | (xt > e[-1])
    if plan.t_dtype.kind == "f":
        bad |= np.isnan(xt)
    idx[bad] = -1
    return idx.astype(np.int64)

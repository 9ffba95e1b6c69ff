"""NumPy's ``histogram`` and weighted ``bincount``: the semantics, the host plans of the CUDA
kernels (``numeric_cuda.py``, ``numeric.cu``) and the NumPy variants.

Registry families (each with a ``numpy`` cpu variant; the cuda ones live in ``numeric_cuda``):

* ``"histogram_even"``: ``bins`` an integer (or an estimator name such as ``"auto"``);
* ``"histogram_edges"``: ``bins`` an array of edges;
* ``"bincount"``: ``bincount`` with ``weights``.

What is replicated from NumPy (``numpy/lib/_histograms_impl.py``) and how:

* the checks and their messages: weights' shape, ``bins`` (integer, estimator name, 1-D
  monotonic edges), ``range`` (order, finiteness, unpacking), the autodetected range (empty data
  -> (0, 1), NaN/inf -> ``ValueError``), an empty range widened by 0.5 on each side, "Too many
  bins" (:func:`parse_bins`, :func:`outer_edges`, :func:`even_edges`, the same code as NumPy's);
* bool data: NumPy's ``RuntimeWarning`` and the conversion to uint8;
* evenly spaced bins (integer ``bins``): NumPy keeps ``first <= x <= last`` (compared as NumPy
  compares the data's dtype with the edges' Python or NumPy scalars), casts the data to the
  edges' dtype E, computes ``f = ((x - first) / (last - first)) * bins`` in the dtype P that
  NumPy's promotion gives (E, or float64 when the range's difference is an unsigned 64-bit
  integer or float64: ``range=(0, 1)`` with float32 data computes in float64), truncates, moves
  index ``bins`` to ``bins - 1`` and corrects once down (``x < edges[i]``) and once up
  (``x >= edges[i + 1]``, not in the last bin). :class:`EvenPlan` turns that into constants for
  the kernel: the kept interval as two values of the data's dtype (found by bisection with
  NumPy's own comparison, so every promotion rule is NumPy's), E, P, ``first`` in E, the divisor
  in P (and its exact reciprocal when the divisor is a power of two: the same quotient, no
  division), ``bins`` in P. The kernel (float16 emulated through float32 with one rounding per
  operation, as NumPy does) then computes NumPy's index bit for bit;
* edges arrays: NumPy's sort + ``searchsorted`` counts, i.e. bin ``j`` holds
  ``edges[j] <= x < edges[j + 1]`` (the last bin closed), compared in
  ``result_type(data, edges)``; NaN data never counted;
* weights: the result has the weights' dtype (bool, integers, floats, complex), sums in float64.

Deliberately not replicated (documented in ``histogram``): the order of floating-point
additions of weighted sums (NumPy adds per block of 65536 elements, or takes differences of
running sums for edges arrays; the kernels add in float64 in a different order, so weighted
results agree to rounding, counts bit for bit); the sign of a zero edge when the data's minimum
or maximum is a zero of both signs. Plans the kernels would not compute exactly as NumPy (an
index NumPy would compute out of range and fail on, non-finite edges, NaN among the edges, a
longdouble range, an estimator name) run NumPy itself on the host (cuda variant
``numpy_host``).
"""
from __future__ import annotations

import functools
import operator
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from ...core.arrays import to_host
from ...core.registry import register

EVEN = "histogram_even"
EDGES = "histogram_edges"
BINCOUNT = "bincount"

#: Data dtypes the CUDA kernels read (bool data is NumPy's uint8 after its warning).
KERNEL_DTYPES = tuple(np.dtype(t) for t in (
    np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
    np.float16, np.float32, np.float64))
FLOAT_DTYPES = tuple(np.dtype(t) for t in (np.float16, np.float32, np.float64))
#: Real weight dtypes the kernels convert to float64 (complex weights: real and imaginary parts).
WEIGHT_DTYPES = (np.dtype(np.bool_),) + KERNEL_DTYPES
BYTE_DTYPES = (np.dtype(np.uint8), np.dtype(np.int8))
builtins_range = range  # ``range`` is NumPy's argument name in this module's functions


def bool_as_uint8(arr: Any, stacklevel: int = 3) -> Any:
    """NumPy's treatment of bool data: a ``RuntimeWarning`` and a uint8 copy."""
    msg = f"Converting input from {arr.dtype} to {np.uint8} for compatibility."
    warnings.warn(msg, RuntimeWarning, stacklevel=stacklevel)
    return arr.astype(np.uint8)


# ----------------------------------------------------------------------------------------------
# NumPy's argument handling (numpy/lib/_histograms_impl.py), replicated
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Bins:
    """The parsed ``bins`` argument: ``kind`` ``"count"`` (``count`` equal bins),
    ``"estimator"`` (``name``) or ``"edges"`` (``edges``, host array as NumPy takes it)."""

    kind: str
    count: int = 0
    name: str = ""
    edges: np.ndarray | None = None


def parse_bins(bins: Any) -> Bins:
    """NumPy's parsing of ``bins`` with its errors (the estimator name is checked by NumPy)."""
    if hasattr(bins, "__cuda_array_interface__"):
        bins = to_host(bins)
    if isinstance(bins, str):
        return Bins("estimator", name=bins)
    if np.ndim(bins) == 0:
        try:
            n = operator.index(bins)
        except TypeError as e:
            raise TypeError("`bins` must be an integer, a string, or an array") from e
        if n < 1:
            raise ValueError("`bins` must be positive, when an integer")
        return Bins("count", count=n)
    if np.ndim(bins) == 1:
        edges = np.asarray(bins)
        if np.any(edges[:-1] > edges[1:]):
            raise ValueError("`bins` must increase monotonically, when an array")
        return Bins("edges", count=max(0, edges.size - 1), edges=edges)
    raise ValueError("`bins` must be 1d, when an array")


def host_range(range: Any) -> Any:
    """``range`` with device scalars (0-d CuPy arrays) brought to the host; else unchanged."""
    if range is None:
        return None
    try:
        items = list(range)
    except TypeError:
        return range
    if any(hasattr(v, "__cuda_array_interface__") for v in items):
        return tuple(to_host(v)[()] if hasattr(v, "__cuda_array_interface__") else v
                     for v in items)
    return range


def outer_edges(range: Any, size: int, min_max: Callable[[], tuple[Any, Any]]) -> tuple:
    """NumPy's ``_get_outer_edges``; ``min_max()`` gives the data's (min, max) as scalars of
    the data's dtype (called only when the range comes from the data)."""
    if range is not None:
        first_edge, last_edge = range
        if first_edge > last_edge:
            raise ValueError("max must be larger than min in range parameter.")
        if not (np.isfinite(first_edge) and np.isfinite(last_edge)):
            raise ValueError(f"supplied range of [{first_edge}, {last_edge}] is not finite")
    elif size == 0:
        first_edge, last_edge = 0, 1
    else:
        first_edge, last_edge = min_max()
        if not (np.isfinite(first_edge) and np.isfinite(last_edge)):
            raise ValueError(
                f"autodetected range of [{first_edge}, {last_edge}] is not finite")
    if first_edge == last_edge:
        first_edge = first_edge - 0.5
        last_edge = last_edge + 0.5
    return first_edge, last_edge


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


def even_edges(first: Any, last: Any, nbins: int, dtype: np.dtype) -> np.ndarray:
    """NumPy's edges of ``nbins`` equal bins for data of ``dtype`` (and "Too many bins")."""
    proxy = np.empty(1, dtype)  # the data as promotion sees it (dtype, not values)
    bin_type = np.result_type(first, last, proxy)
    if np.issubdtype(bin_type, np.integer):
        bin_type = np.result_type(bin_type, float)
    edges = np.linspace(first, last, nbins + 1, endpoint=True, dtype=bin_type)
    if np.any(edges[:-1] >= edges[1:]):
        raise ValueError(f"Too many bins for data range. Cannot create {nbins} "
                         "finite-sized bins.")
    return edges


# ----------------------------------------------------------------------------------------------
# The even-bins plan: NumPy's arithmetic as constants for the kernel
# ----------------------------------------------------------------------------------------------


def _scalar_key(v: Any) -> tuple:
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
        return (first, last) if first <= last else None
    return _keep_bounds(dtype, _scalar_key(first), _scalar_key(last))


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
    return _plan_even(np.dtype(dtype), _scalar_key(first), _scalar_key(last), int(nbins),
                      edges.dtype, edges.tobytes())


@functools.lru_cache(maxsize=256)
def _plan_even(dtype: np.dtype, first_key: tuple, last_key: tuple, nbins: int,
               e_dtype: np.dtype, edges_bytes: bytes) -> EvenPlan:
    first, last = first_key[1], last_key[1]
    edges = np.frombuffer(edges_bytes, dtype=e_dtype)
    base = dict(dtype=dtype, nbins=nbins, first=first, last=last, edges=edges, e_dtype=e_dtype)
    none = dict(p_dtype=None, first_e=None, denom_p=None, rdenom_p=None, n_p=None)

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
    E, P = plan.e_dtype, plan.p_dtype

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
    e = plan.edges_t
    idx = np.searchsorted(e, xt, side="right") - 1
    idx = np.minimum(idx, plan.nbins - 1)
    bad = (xt < e[0]) | (xt > e[-1])
    if plan.t_dtype.kind == "f":
        bad |= np.isnan(xt)
    idx[bad] = -1
    return idx.astype(np.int64)


# ----------------------------------------------------------------------------------------------
# 1-byte data: every unweighted histogram is a fold of the 256 byte counts
# ----------------------------------------------------------------------------------------------


def byte_values(dtype: np.dtype) -> np.ndarray:
    """The 256 values of a 1-byte dtype, indexed by their bit pattern."""
    return np.arange(256, dtype=np.uint8).view(dtype)


def _bins_key(bins: Any) -> Any:
    if isinstance(bins, str):
        return ("str", bins)
    if np.ndim(bins) == 0:
        return ("int", _scalar_key(bins))
    a = np.asarray(bins)
    return ("edges", a.dtype.str, a.shape, a.tobytes())


def _range_key(range: Any) -> Any:
    if range is None:
        return None
    try:
        return ("seq", tuple(_scalar_key(v) for v in range))
    except TypeError:
        return ("obj", _scalar_key(range))


def byte_lut(dtype: np.dtype, bins: Any, range: Any) -> tuple[np.ndarray, np.ndarray]:
    """NumPy's bin of each of the 256 values of a 1-byte dtype for ``bins``/``range`` (a range
    that does not depend on the data): (int64[256] bin or -1 for values NumPy drops, edges).

    Computed by NumPy itself: ``np.histogram`` of the 256 values weighted by distinct powers of
    two, 52 values at a time (sums below 2^52 are exact), so each bin's sum names its values.
    Cached. Raises NumPy's errors for bad ``bins``/``range``."""
    try:
        key = (np.dtype(dtype).str, _bins_key(bins), _range_key(range))
        hit = _BYTE_LUTS.get(key)
    except TypeError:  # an unhashable scalar somewhere: no cache
        return _byte_lut(np.dtype(dtype), bins, range)
    if hit is None:
        lut, edges = _byte_lut(np.dtype(dtype), bins, range)
        lut.flags.writeable = False
        edges.flags.writeable = False
        if len(_BYTE_LUTS) >= 128:
            _BYTE_LUTS.pop(next(iter(_BYTE_LUTS)))
        hit = _BYTE_LUTS[key] = (lut, edges)
    return hit


_BYTE_LUTS: dict = {}  # (dtype, bins, range) keys -> (lut, edges), oldest dropped first


def _byte_lut(dtype: np.dtype, bins: Any, range: Any) -> tuple[np.ndarray, np.ndarray]:
    values = byte_values(dtype)
    lut = np.full(256, -1, dtype=np.int64)
    edges = None
    for g in builtins_range(0, 256, 52):
        k = min(52, 256 - g)
        w = np.zeros(256)
        w[g:g + k] = 2.0 ** np.arange(k)
        hist, edges = np.histogram(values, bins, range, weights=w)
        for b in np.flatnonzero(hist):
            s = int(hist[b])
            for j in builtins_range(k):
                if s >> j & 1:
                    lut[g + j] = b
    return lut, np.asarray(edges)


def fold_byte_counts(dtype: np.dtype, counts256: np.ndarray, bins: Any, range: Any
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The histogram of 1-byte data from its 256 byte counts: ``np.histogram`` of the values
    present, weighted by their counts (exact: integer sums below 2^53), as int64 counts.

    The values present have the data's min and max, so a range from the data is NumPy's too."""
    counts256 = np.asarray(counts256, dtype=np.int64)
    present = np.flatnonzero(counts256)
    vals = byte_values(dtype)[present]
    hist, edges = np.histogram(vals, bins, range, weights=counts256[present].astype(np.float64))
    return hist.astype(np.int64), edges


# ----------------------------------------------------------------------------------------------
# Problems, cost model, jobs
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class NumericProblem:
    """What dispatch and the cost model see of a histogram / weighted bincount call.

    ``data_passes``: reads of the data (2 when the range comes from the data: a min/max pass
    first; bincount: its max); ``plan``: an :class:`EvenPlan` / :class:`EdgesPlan` (None when
    none was made: the byte path, or NumPy's); ``byte_ok``: 1-byte data without weights (the
    byte-histogram kernels count it)."""

    family: str
    size: int
    dtype: np.dtype
    nbins: int
    weights: np.dtype | None
    on_device: bool
    data_passes: int = 1
    plan: Any = None
    byte_ok: bool = False

    @property
    def bytes_moved(self) -> int:
        return numeric_bytes_moved(self)

    def __repr__(self) -> str:
        plan = "no plan" if self.plan is None else (
            f"{type(self.plan).__name__}" + ("" if getattr(self.plan, "kernel_ok", True)
                                             else f" for NumPy: {self.plan.why}"))
        w = "" if self.weights is None else f", weights {self.weights}"
        return (f"{self.family}: {self.size} x {self.dtype}, {self.nbins} bins{w}, "
                f"{'device' if self.on_device else 'host'} data, {plan}")


def numeric_bytes_moved(p: NumericProblem) -> int:
    """Fewest device-memory bytes: the data read ``data_passes`` times, the weights once, each
    8-byte bin written once (the edges, a few KiB read per block from L2, are not counted)."""
    b = p.data_passes * p.size * p.dtype.itemsize + 8 * p.nbins
    if p.weights is not None:
        b += p.size * p.weights.itemsize
    return b


@dataclass
class NumericJob:
    """One call as the variants see it: ``data`` and ``weights`` flat and contiguous (host or
    device, ``on_device``), the caller's ``bins`` and ``range`` (for NumPy), the parsed
    ``spec`` and the ``plan``; ``minlength`` for bincount. ``count_bytes(mapping)`` runs the
    byte-histogram dispatch on ``data`` (a uint8 view) and returns device int64 counts;
    ``max_chunk_bytes`` bounds the host data copied to the device at once."""

    data: Any
    weights: Any
    bins: Any
    range: Any
    spec: Bins | None
    plan: Any
    on_device: bool
    minlength: int = 0
    count_bytes: Callable[[Any], Any] | None = None
    max_chunk_bytes: int = 1 << 30

    def host_data(self) -> np.ndarray:
        return to_host(self.data)

    def host_weights(self) -> np.ndarray | None:
        return None if self.weights is None else to_host(self.weights)

    def device_chunks(self) -> Iterator[tuple[Any, Any]]:
        """(data, weights) device chunks: device input once; host input copied piece by piece."""
        import cupy

        n = int(self.data.size)
        if self.on_device:
            if n:
                yield self.data, self.weights
            return
        per = self.data.dtype.itemsize + (0 if self.weights is None
                                          else self.weights.dtype.itemsize)
        step = max(1, self.max_chunk_bytes // per)
        for s in builtins_range(0, n, step):
            w = None if self.weights is None else cupy.asarray(self.weights[s:s + step])
            yield cupy.asarray(self.data[s:s + step]), w


@dataclass(frozen=True)
class NumericResult:
    """What a variant returns: ``hist`` (host or device) and the host ``edges``; ``raw`` True
    when ``hist`` holds int64 counts or float64/complex128 sums that the caller still casts to
    NumPy's dtype, False when it is NumPy's result already (before ``density``)."""

    hist: Any
    edges: Any
    raw: bool = True


# ----------------------------------------------------------------------------------------------
# The NumPy variants (cpu backend): NumPy itself, bit for bit by definition
# ----------------------------------------------------------------------------------------------


@register(EVEN, "numpy", backend="cpu", bytes_moved=numeric_bytes_moved, rank=0)
def even_numpy(job: NumericJob) -> NumericResult:
    """``np.histogram`` with integer (or estimator) bins on the host data."""
    hist, edges = np.histogram(job.host_data(), job.bins, job.range,
                               weights=job.host_weights())
    return NumericResult(hist, edges, raw=False)


@register(EDGES, "numpy", backend="cpu", bytes_moved=numeric_bytes_moved, rank=0)
def edges_numpy(job: NumericJob) -> NumericResult:
    """``np.histogram`` with an edges array on the host data."""
    hist, edges = np.histogram(job.host_data(), job.bins, job.range,
                               weights=job.host_weights())
    return NumericResult(hist, edges, raw=False)


@register(BINCOUNT, "numpy", backend="cpu", bytes_moved=numeric_bytes_moved, rank=0)
def bincount_numpy(job: NumericJob) -> NumericResult:
    """``np.bincount`` with weights on the host."""
    return NumericResult(np.bincount(job.host_data(), weights=job.host_weights(),
                                     minlength=job.minlength), None, raw=False)

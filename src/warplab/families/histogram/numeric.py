"""NumPy's ``histogram`` and weighted ``bincount``: the semantics, the host plans of the CUDA
kernels (``numeric_cuda.py``, ``numeric.cu``) and the NumPy variants.

Registry families (each with a ``numpy`` cpu variant; the cuda ones live in
``numeric_variants``):

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

import operator
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from warplab.core.arrays import to_host
from warplab.core.errors import InvalidTypeError, InvalidValueError
from warplab.core.registry import register
from warplab.families.histogram.binning import KERNEL_DTYPES, scalar_key
from warplab.families.histogram.config import DEFAULT, LaunchConfig

EVEN = "histogram_even"
EDGES = "histogram_edges"
BINCOUNT = "bincount"

#: Real weight dtypes the kernels convert to float64 (complex weights: real and imaginary parts).
WEIGHT_DTYPES = (np.dtype(np.bool_), *KERNEL_DTYPES)
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
            raise InvalidTypeError("`bins` must be an integer, a string, or an array") from e
        if n < 1:
            raise InvalidValueError("`bins` must be positive, when an integer")
        return Bins("count", count=n)
    if np.ndim(bins) == 1:
        edges = np.asarray(bins)
        if np.any(edges[:-1] > edges[1:]):
            raise InvalidValueError("`bins` must increase monotonically, when an array")
        return Bins("edges", count=max(0, edges.size - 1), edges=edges)
    raise InvalidValueError("`bins` must be 1d, when an array")


def host_range(range: Any) -> Any:  # noqa: A002
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


def outer_edges(range: Any, size: int, min_max: Callable[[], tuple[Any, Any]]) -> tuple:  # noqa: A002
    """NumPy's ``_get_outer_edges``; ``min_max()`` gives the data's (min, max) as scalars of
    the data's dtype (called only when the range comes from the data)."""
    if range is not None:
        first_edge, last_edge = range
        if first_edge > last_edge:
            raise InvalidValueError("max must be larger than min in range parameter.")
        if not (np.isfinite(first_edge) and np.isfinite(last_edge)):
            raise InvalidValueError(f"supplied range of [{first_edge}, {last_edge}] is not finite")
    elif size == 0:
        first_edge, last_edge = 0, 1
    else:
        first_edge, last_edge = min_max()
        if not (np.isfinite(first_edge) and np.isfinite(last_edge)):
            raise InvalidValueError(
                f"autodetected range of [{first_edge}, {last_edge}] is not finite")
    if first_edge == last_edge:
        first_edge = first_edge - 0.5
        last_edge = last_edge + 0.5
    return first_edge, last_edge


def even_edges(first: Any, last: Any, nbins: int, dtype: np.dtype) -> np.ndarray:
    """NumPy's edges of ``nbins`` equal bins for data of ``dtype`` (and "Too many bins")."""
    proxy = np.empty(1, dtype)  # the data as promotion sees it (dtype, not values)
    bin_type = np.result_type(first, last, proxy)
    if np.issubdtype(bin_type, np.integer):
        bin_type = np.result_type(bin_type, float)
    edges = np.linspace(first, last, nbins + 1, endpoint=True, dtype=bin_type)
    if np.any(edges[:-1] >= edges[1:]):
        raise InvalidValueError(f"Too many bins for data range. Cannot create {nbins} "
                         "finite-sized bins.")
    return edges


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
        return ("int", scalar_key(bins))
    a = np.asarray(bins)
    return ("edges", a.dtype.str, a.shape, a.tobytes())


def _range_key(range: Any) -> Any:  # noqa: A002
    if range is None:
        return None
    try:
        return ("seq", tuple(scalar_key(v) for v in range))
    except TypeError:
        return ("obj", scalar_key(range))


def byte_lut(dtype: np.dtype, bins: Any, range: Any) -> tuple[np.ndarray, np.ndarray]:  # noqa: A002
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


def _byte_lut(dtype: np.dtype, bins: Any, range: Any) -> tuple[np.ndarray, np.ndarray]:  # noqa: A002
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


def fold_byte_counts(dtype: np.dtype, counts256: np.ndarray, bins: Any, range: Any  # noqa: A002
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
    byte-histogram kernels count it); ``config``: the kernels' launch configuration (what fits
    their shared memory depends on it)."""

    family: str
    size: int
    dtype: np.dtype
    nbins: int
    weights: np.dtype | None
    on_device: bool
    data_passes: int = 1
    plan: Any = None
    byte_ok: bool = False
    config: LaunchConfig = DEFAULT

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
    ``max_chunk_bytes`` bounds the host data copied to the device at once; ``config`` the
    kernels' launch configuration."""

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
    config: LaunchConfig = DEFAULT

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

"""The short path of ``bincount(x, weights)`` on device input: launch records.

A weighted ``bincount`` must read the data's largest value before it can size the result (one
synchronisation per call), but everything else it decides is the same on every call with the
same (x's dtype, shape, strides, the weights' dtype, shape, strides, both operands 16-byte
aligned or not, device, ``launch_config``): the checks of the weights, the min/max kernel and
its grid. The first call builds a :class:`Record` of them in the ``bincount.weighted`` plan
cache (``core/fastpath.py``); the launch of the binning kernel depends on the bin count too
(variant, layout, kernel, grid) and is kept per (record, bin count) in ``bincount.bins``.

A warm call: one zeroed 24-byte allocation, the min/max launch, one read back of its three
words through the pinned buffer (``fastpath.read_small``: one copy, one synchronisation;
the full path did the same until this branch with a pageable ``.get()``), the negative-value
check, one zeroed allocation of the result (``max(nbins, minlength)`` long: no concatenation
for a larger ``minlength``) and the binning launch. Not per call: ``NumericProblem`` and
``choose``, ``_grid``, ``defines``, the expression f-strings, ``from_order_key``.

What the record takes: flat contiguous, non-empty CuPy ``x`` of a signed or unsigned integer
dtype up to 64 bits (not uint64, not bool), CuPy weights of x's length, 1-D, flat contiguous,
of a dtype NumPy casts safely to float64 (bool, integers, float16/32/64); the atomic min/max
pass (``minmax_cuda.MINMAX``); no ``variant=``/``device=``. Everything else takes the full
path (``api._bincount_weighted``), which raises what it always raised; a negative value
raises here the full path's ``ValueError``, with its message.
"""
from __future__ import annotations

import sys
from typing import Any, Callable, NamedTuple

import numpy as np

from warplab.core import fastpath, registry as _registry
from warplab.core.arrays import is_flat
from warplab.core.scalar import RESULT_TYPES, zeros
from warplab.families.histogram import minmax_cuda, numeric_cuda, numeric_variants
from warplab.families.histogram.numeric import BINCOUNT, NumericJob, NumericProblem

_RECORDS = fastpath.PlanCache("bincount.weighted")
_BINS = fastpath.PlanCache("bincount.bins")
_F64, _U64 = np.dtype(np.float64), np.dtype(np.uint64)
_X_KINDS = "iu"


class Record(NamedTuple):
    """A cached call's data side: ``minmax(args)`` launches the min/max pass; ``n`` the
    element count (a kernel argument); the keys decode as ``(key & mask) - offset`` (the
    order key of numeric.cu: unsigned values as they are, signed ones offset by the sign
    bit)."""

    minmax: Callable[[tuple], None]
    n: np.uint64
    mask: int
    offset: int


class Bins(NamedTuple):
    """The binning launch of one bin count: the ``variant`` it reports, ``launch(args)`` (None:
    the variant runs itself), the bin count and the layout's accumulator copies (kernel
    arguments)."""

    variant: Any
    launch: Callable[[tuple], None] | None
    nbins: np.uint64
    copies: np.uint32


def int_decoder(dtype: Any) -> tuple[int, int]:
    """``(mask, offset)`` such that an integer dtype's value is ``(key & mask) - offset`` of
    its numeric.cu order key (``minmax_cuda.from_order_key`` for integers, on Python ints)."""
    dt = np.dtype(dtype)
    width = 8 * dt.itemsize
    return (1 << width) - 1, (1 << (width - 1)) if dt.kind == "i" else 0


def weighted(x: Any, w: Any, minlength: int) -> Any | None:
    """``bincount(x, w, minlength)`` (float64 sums on the device) through the records, or None
    (the full path; module docstring). ``minlength`` is already checked (a non-negative int).

    Raises:
        ValueError: a negative value in ``x`` (the full path's message).
    """
    cupy = sys.modules.get("cupy")
    if cupy is None or (type(x) is not cupy.ndarray and type(x) not in RESULT_TYPES) \
            or (type(w) is not cupy.ndarray and type(w) not in RESULT_TYPES) \
            or minmax_cuda.MINMAX != "atomic":
        return None
    aligned = not ((x.data.ptr | w.data.ptr) & 15)
    key = (x.dtype, x.shape, x.strides, w.dtype, w.shape, w.strides, aligned,
           cupy.cuda.runtime.getDevice(), numeric_cuda.EPOCH[0])
    rec = _RECORDS.record(key, lambda: _build(x, w))
    if rec is None:
        return None
    d_res = zeros(3, _U64)
    rec.minmax((x, rec.n, d_res))
    k_lo, k_hi, _ = fastpath.read_small(d_res)[0].tolist()  # one pinned copy, one sync
    lo = (~k_lo & rec.mask) - rec.offset
    if lo < 0:
        raise ValueError(f"bincount needs non-negative values, found {lo}")
    nbins = (k_hi & rec.mask) - rec.offset + 1
    bkey = (key, nbins)
    b = _BINS.record(bkey, lambda: _bins(x, w, nbins, aligned))
    _registry.ran(b.variant)
    if b.launch is None:  # a variant the records do not know: its own run, as the full path
        out = b.variant.fn(NumericJob(x, w, None, None, None, nbins, True, minlength)).hist
        if minlength > nbins:
            out = cupy.concatenate([out, zeros(minlength - nbins, _F64)])
        return out
    out = zeros(max(nbins, minlength), _F64)
    b.launch((x, rec.n, w, b.nbins, b.copies, out))
    return out


def _build(x: Any, w: Any) -> Record | bool:
    """The record, or False for calls the full path runs (every check it makes on the
    weights passes here, so only the data's values can still raise)."""
    dt, wd = np.dtype(x.dtype), np.dtype(w.dtype)
    if dt.kind not in _X_KINDS or dt == np.uint64 or not x.size or not is_flat(x) \
            or wd.kind not in "biuf" or not np.can_cast(wd, _F64, casting="safe") \
            or w.ndim != 1 or w.shape[0] != x.size or not is_flat(w):
        return False
    n = int(x.size)
    mask, offset = int_decoder(dt)
    return Record(minmax_cuda.minmax_prepared(dt, n), np.uint64(n), mask, offset)


def _bins(x: Any, w: Any, nbins: int, aligned: bool) -> Bins:
    """The binning launch of ``nbins`` bins: the variant dispatch chooses (as the full path
    does), launched as its registered function launches it."""
    dt, wd, n = np.dtype(x.dtype), np.dtype(w.dtype), int(x.size)
    v = _registry.choose(BINCOUNT, "cuda", NumericProblem(BINCOUNT, n, dt, nbins, wd, True, 2))
    if v.fn not in numeric_variants.BINCOUNT_KINDS:
        return Bins(v, None, np.uint64(0), np.uint32(0))
    private, vec = numeric_variants.BINCOUNT_KINDS[v.fn]
    expr, group, lay = numeric_cuda.bincount_launch(dt, wd, nbins, private, vec and aligned)
    launch = numeric_cuda.prepared(expr, group, lay, n, dt.itemsize)
    return Bins(v, launch, np.uint64(nbins), np.uint32(lay.copies))

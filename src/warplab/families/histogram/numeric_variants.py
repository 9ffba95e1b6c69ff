"""The cuda variants of the numeric histogram families (launch plans and kernels:
``numeric_cuda.py``, ``numeric.cu``): ``histogram_even`` (``bytes``, ``even_private``,
``even_fast``, ``even_global``, ``numpy_host``), ``histogram_edges`` (``bytes``,
``edges_private``, ``edges_global``, ``numpy_host``) and ``bincount`` (``private_sums``,
``private_sums_vec``, ``global_atomics_vec``, ``global_atomics``). Each runs its launch plan
per chunk of the data through ``numeric_cuda`` (looked up per call, so tests may replace the
launches there).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np

from warplab.core.arrays import to_host
from warplab.core.registry import register
from warplab.core.scalar import zeros
from warplab.families.histogram import numeric_cuda as nc
from warplab.families.histogram.binning import EdgesPlan, EvenPlan
from warplab.families.histogram.numeric import (
    BINCOUNT,
    EDGES,
    EVEN,
    WEIGHT_DTYPES,
    Bins,
    NumericJob,
    NumericProblem,
    NumericResult,
    byte_lut,
    fold_byte_counts,
    numeric_bytes_moved,
)
from warplab.families.histogram.numeric_fast import fast_constants
from warplab.families.histogram.spec import MAP_LUT, Mapping, resolve

_F64 = np.dtype(np.float64)

def _weights_ok(wd: np.dtype | None) -> bool:
    return wd is None or wd in WEIGHT_DTYPES or wd in (np.dtype(np.complex64),
                                                       np.dtype(np.complex128))


# ------------------------------------------------------------------------------- even bins


def _run_even(job: NumericJob, private: bool, fast: bool = False) -> NumericResult:
    plan: EvenPlan = job.plan
    nbins = plan.nbins
    outs = nc._outputs(job, nbins)
    if plan.keep is None:
        return NumericResult(nc._combine(outs), plan.edges)
    cfg = job.config
    lay = nc.layout_for(nbins, job.weights is not None, plan.e_dtype.itemsize, cfg,
                        private=private)
    for d_x, d_w in job.device_chunks():
        for part, out in zip(nc._real_parts(d_w), outs):
            expr, group, consts = nc.even_launch(plan, lay, None if part is None else part.dtype,
                                                 fast)
            args = (d_x, np.uint64(d_x.size), d_x if part is None else part, *consts, out)
            nc._launch(expr, group, lay, d_x.size, plan.dtype.itemsize, cfg, args)
    return NumericResult(nc._combine(outs), plan.edges)


def _even_kernel_ok(p: NumericProblem) -> bool:
    return isinstance(p.plan, EvenPlan) and p.plan.kernel_ok and _weights_ok(p.weights)


def _private_ok(p: NumericProblem) -> bool:
    return nc.private_fits(p.nbins, p.weights is not None, p.config)


def byte_path_bytes_moved(p: NumericProblem) -> int:
    """The byte kernels' cost: every data byte read once, every 8-byte bin written once."""
    return p.size * p.dtype.itemsize + 8 * p.nbins


@register(EVEN, "bytes", backend="cuda", bytes_moved=byte_path_bytes_moved,
          supports=lambda p: p.byte_ok, rank=0)
def even_bytes(job: NumericJob) -> NumericResult:
    """1-byte data without weights: the byte-histogram kernels (family ``histogram``).

    With a given range: NumPy's bin of each of the 256 values (:func:`numeric.byte_lut`) as the
    kernels' lookup table (values NumPy drops counted in one extra bin, cut off), no host sync;
    ``bins=256, range=(0, 256)`` on uint8 is the identity (mapping ``bytes``). Otherwise
    (range from the data, more than 255 bins): the 256 byte counts, folded on the host by
    ``np.histogram`` of the values present weighted by their counts (one sync).
    Performance: reads the data once; 1 launch (+ 2 KiB D2H for the fold)."""
    return _run_bytes(job)


def _lut_mapping(lut: np.ndarray, nbins: int) -> Mapping | None:
    """The byte kernels' mapping of a 256-entry bin table (-1: dropped); None when it does
    not fit their 256 bins."""
    if nbins == 256 and np.array_equal(lut, np.arange(256)):
        return resolve("bytes")
    dropped = lut < 0
    total = nbins + (1 if dropped.any() else 0)
    if nbins < 1 or total > 256:
        return None
    table = np.where(dropped, nbins, lut).astype(np.uint8)
    table.flags.writeable = False
    return Mapping("lut", MAP_LUT, total, table)


def _run_bytes(job: NumericJob) -> NumericResult:
    dtype = job.data.dtype
    spec = cast(Bins, job.spec)  # the byte path's jobs hold both
    count_bytes = cast(Callable[[Any], Any], job.count_bytes)
    nbins = spec.count
    if spec.kind == "edges" or job.range is not None:
        lut, edges = byte_lut(dtype, job.bins, job.range)
        mapping = _lut_mapping(lut, nbins)
        if mapping is not None:
            return NumericResult(count_bytes(mapping)[:nbins], edges)
    counts256 = to_host(count_bytes(resolve("bytes")))
    hist, edges = fold_byte_counts(dtype, counts256, job.bins, job.range)
    return NumericResult(hist, edges)


@register(EVEN, "even_private", backend="cuda", bytes_moved=numeric_bytes_moved,
          supports=lambda p: _even_kernel_ok(p) and _private_ok(p), rank=10)
def even_private(job: NumericJob) -> NumericResult:
    """Evenly spaced bins, NumPy's index arithmetic, shared-memory bins per block.

    Performance: one pass over the data (and weights), no per-element search: per element a
    subtraction, a division (a multiplication when the divisor is a power of two), a
    multiplication, two edge comparisons from shared memory, one shared atomic; nbins global
    atomics per block; 1 launch per chunk (+ the min/max pass when the range comes from the
    data)."""
    return _run_even(job, private=True)


@register(EVEN, "even_fast", backend="cuda", bytes_moved=numeric_bytes_moved,
          supports=lambda p: (_even_kernel_ok(p) and _private_ok(p)
                              and fast_constants(p.plan) is not None), rank=8)
def even_fast(job: NumericJob) -> NumericResult:
    """Evenly spaced bins, each from one float32 FMA where that is provably NumPy's index
    (``numeric_fast``), NumPy's arithmetic for the values near an edge; shared-memory bins per
    block as ``even_private``.

    Performance: one pass over the data; per element an FMA, three additions, compares, one
    shared atomic (no conversion instruction, no edge read) for all but a fraction ~2 delta
    of the values (3e-4 for float32 data, 256 bins over (-4, 4)); nbins global atomics per
    block; 1 launch per chunk (+ the min/max pass when the range comes from the data)."""
    return _run_even(job, private=True, fast=True)


@register(EVEN, "even_global", backend="cuda", bytes_moved=numeric_bytes_moved,
          supports=_even_kernel_ok, rank=20)
def even_global(job: NumericJob) -> NumericResult:
    """Evenly spaced bins with one global atomic per counted element (any bin count).

    Performance: as even_private but n global atomics (L2)."""
    return _run_even(job, private=False)


def _numpy_host(job: NumericJob) -> NumericResult:
    hist, edges = np.histogram(job.host_data(), job.bins, job.range, weights=job.host_weights())
    return NumericResult(hist, edges, raw=False)


@register(EVEN, "numpy_host", backend="cuda", bytes_moved=numeric_bytes_moved, rank=90)
def even_numpy_host(job: NumericJob) -> NumericResult:
    """What the kernels do not compute as NumPy (estimator names such as ``"auto"``, complex or
    object data, plans NumPy itself would fail on): ``np.histogram`` on a host copy.

    Performance: D2H copy of the data (synchronises); NumPy's speed."""
    return _numpy_host(job)


# ------------------------------------------------------------------------------- edges arrays


def _run_edges(job: NumericJob, private: bool) -> NumericResult:
    plan: EdgesPlan = job.plan
    nbins = plan.nbins
    outs = nc._outputs(job, nbins)
    weighted = job.weights is not None
    D, T = plan.dtype, plan.t_dtype
    cfg = job.config
    lay = nc.layout_for(nbins, weighted, T.itemsize, cfg, private=private)
    d_edges = nc._on_device(cast(np.ndarray, plan.edges_t))  # a plan the kernels run
    for d_x, d_w in job.device_chunks():
        for part, out in zip(nc._real_parts(d_w), outs):
            w_dtype = None if part is None else part.dtype
            group = nc._edges_group(nc.c_type(D), nc.c_type(T), nc.c_type(w_dtype))
            expr = (f"hist_edges<{nc.c_type(D)}, {nc.c_type(T)}, {nc.c_type(w_dtype)}, "
                    f"{lay.layout}, {nc._tf(lay.esmem)}>")
            args = (d_x, np.uint64(d_x.size), d_x if part is None else part, d_edges,
                    np.uint32(nbins), np.uint32(lay.copies), out)
            nc._launch(expr, group, lay, d_x.size, D.itemsize, cfg, args)
    return NumericResult(nc._combine(outs), plan.edges)


def _edges_kernel_ok(p: NumericProblem) -> bool:
    return isinstance(p.plan, EdgesPlan) and p.plan.kernel_ok and _weights_ok(p.weights)


@register(EDGES, "bytes", backend="cuda", bytes_moved=byte_path_bytes_moved,
          supports=lambda p: p.byte_ok, rank=0)
def edges_bytes(job: NumericJob) -> NumericResult:
    """1-byte data without weights: the byte-histogram kernels with NumPy's bin of each of the
    256 values as lookup table (see ``histogram_even``'s ``bytes``)."""
    return _run_bytes(job)


@register(EDGES, "edges_private", backend="cuda", bytes_moved=numeric_bytes_moved,
          supports=lambda p: _edges_kernel_ok(p) and _private_ok(p), rank=10)
def edges_private(job: NumericJob) -> NumericResult:
    """Edges array: binary search over the edges (shared memory), shared-memory bins per block.

    Performance: one pass over the data; log2(nbins + 1) edge comparisons per element; nbins
    global atomics per block; 1 launch per chunk."""
    return _run_edges(job, private=True)


@register(EDGES, "edges_global", backend="cuda", bytes_moved=numeric_bytes_moved,
          supports=_edges_kernel_ok, rank=20)
def edges_global(job: NumericJob) -> NumericResult:
    """Edges array, binary search, one global atomic per counted element (any bin count)."""
    return _run_edges(job, private=False)


@register(EDGES, "numpy_host", backend="cuda", bytes_moved=numeric_bytes_moved, rank=90)
def edges_numpy_host(job: NumericJob) -> NumericResult:
    """What the edges kernels do not take (NaN among the edges, fewer than two edges, dtypes
    without a kernel): ``np.histogram`` on a host copy. Synchronises."""
    return _numpy_host(job)


# --------------------------------------------------------------------------- weighted bincount


def _pairs_aligned(d_x: Any, d_w: Any) -> bool:
    """x and the weights both start at a 16-byte boundary (bincount_wvec's vector loads)."""
    return all(a.__cuda_array_interface__["data"][0] % 16 == 0 for a in (d_x, d_w))


def _run_bincount(job: NumericJob, private: bool, vec: bool = False) -> NumericResult:
    nbins = int(job.plan)
    out = zeros(nbins, _F64)
    for d_x, d_w in job.device_chunks():
        if d_x.dtype == np.bool_:
            d_x = d_x.view(np.uint8)
        expr, group, lay = nc.bincount_launch(d_x.dtype, d_w.dtype, nbins, private,
                                              vec and _pairs_aligned(d_x, d_w), job.config)
        args = (d_x, np.uint64(d_x.size), d_w, np.uint64(nbins), np.uint32(lay.copies), out)
        nc._launch(expr, group, lay, d_x.size, d_x.dtype.itemsize, job.config, args)
    return NumericResult(out, None)


@register(BINCOUNT, "private_sums", backend="cuda", bytes_moved=numeric_bytes_moved,
          supports=lambda p: nc.private_fits(p.nbins, True, p.config), rank=10)
def bincount_private(job: NumericJob) -> NumericResult:
    """Weighted bincount with float64 sums per block in shared memory (up to 4096 bins), one
    global float64 atomic per non-empty bin and block.

    Performance: one pass over x and the weights (+ the max pass that sizes the result);
    1 launch per chunk."""
    return _run_bincount(job, private=True)


@register(BINCOUNT, "private_sums_vec", backend="cuda", bytes_moved=numeric_bytes_moved,
          supports=lambda p: nc.private_fits(p.nbins, True, p.config), rank=8)
def bincount_private_vec(job: NumericJob) -> NumericResult:
    """``private_sums`` reading x and the weights together in 16-byte vectors (``UNROLL``
    pairs in flight per thread) when both start 16-byte aligned, else as ``private_sums``.

    Performance: as private_sums; no scalar weight loads."""
    return _run_bincount(job, private=True, vec=True)


@register(BINCOUNT, "global_atomics_vec", backend="cuda", bytes_moved=numeric_bytes_moved,
          rank=22)
def bincount_global_vec(job: NumericJob) -> NumericResult:
    """``global_atomics`` with x and the weights read together in 16-byte vectors.

    Performance: one global float64 atomic (L2) per element; the loads as private_sums_vec."""
    return _run_bincount(job, private=False, vec=True)


@register(BINCOUNT, "global_atomics", backend="cuda", bytes_moved=numeric_bytes_moved,
          rank=20)
def bincount_global(job: NumericJob) -> NumericResult:
    """Weighted bincount with one global float64 atomic per element (any bin count: the
    fallback beyond the shared budget, as CuPy does for every size)."""
    return _run_bincount(job, private=False)


#: (private, vec) of each cuda bincount variant's launch (``bincount_plan``'s prepared launches).
BINCOUNT_KINDS = {bincount_private: (True, False), bincount_private_vec: (True, True),
                  bincount_global_vec: (False, True), bincount_global: (False, False)}

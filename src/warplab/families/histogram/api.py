"""NumPy's ``histogram`` and ``bincount``, and byte histograms: validate, choose backend and
variant, run.

* :func:`histogram` and weighted :func:`bincount`: NumPy's semantics (``numeric.py``), kernels in
  ``numeric_cuda.py`` / ``numeric_variants.py`` / ``numeric.cu``; registry families
  ``histogram_even`` (integer bins), ``histogram_edges`` (an edges array), ``bincount``
  (weighted), each with NumPy as its cpu variant.
* :func:`byte_histogram`: byte counts into named or table-defined bins; registry family
  ``histogram`` (the four kernels of the histogram report and the privatized vector kernels in
  ``cuda.py``, NumPy in ``cpu.py``).
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from warplab.core import registry as _registry
from warplab.core.arrays import Input, as_input, flat_contiguous, to_host
from warplab.core.device import device_errors, resolve_backend
from warplab.core.outputs import check_out, cupy as _cupy
from warplab.families.histogram.binning import KERNEL_DTYPES, plan_edges, plan_even
from warplab.families.histogram.numeric import (BINCOUNT, BYTE_DTYPES, EDGES, EVEN, NumericJob, NumericProblem,
                      NumericResult, bool_as_uint8, even_edges, host_range, outer_edges,
                      parse_bins)
from warplab.families.histogram.cuda import device_default
from warplab.families.histogram.spec import HistogramProblem, Mapping, resolve
from warplab.families.histogram import bincount_short, numeric_short, streamed
from warplab.core.sources import is_file_source
from warplab.core.scalar import zeros

#: Largest host chunk copied to the GPU at once; ``None`` = half the free device memory.
MAX_DEVICE_CHUNK: int | None = None

STR_IS_A_PATH = ("a str is taken as a file path; pass bytes (e.g. b'...' or s.encode()) to "
                 "count a string's bytes")


def _as_input(data: Any) -> Input:
    """:func:`as_input`, with a missing path given as a ``str`` explained: the str may well
    have been meant as text."""
    try:
        return as_input(data)
    except FileNotFoundError:
        if isinstance(data, str):
            raise FileNotFoundError(f"no such file: {data!r} ({STR_IS_A_PATH})") from None
        raise


def _host_array(x: Any) -> np.ndarray:
    return to_host(x) if hasattr(x, "__cuda_array_interface__") else np.asarray(x)


def _byte_view(inp: Input) -> Any:
    """The input as 1-D contiguous bytes; ``TypeError`` naming the dtype otherwise."""
    dt = inp.dtype
    if dt not in (np.uint8, np.int8) and dt != np.bool_:
        raise TypeError(f"a byte histogram needs uint8 (or int8) data, got dtype {dt}; "
                        "use warplab.histogram or warplab.bincount for other arrays")
    return flat_contiguous(inp.array).view(np.uint8)


@device_errors
def byte_histogram(data: Any, bins: Any = "bytes", *, variant: str | None = None,
                   out: Any = None, accumulate: bool = False, device: str | None = None) -> Any:
    """Count the bytes of ``data`` into bins (the byte-histogram kernels; registry family
    ``"histogram"``).

    Args:
        data: uint8 (or int8) NumPy/CuPy array of any shape, anything with
            ``__cuda_array_interface__`` or DLPack (a torch tensor), ``bytes``/``bytearray``/
            ``memoryview``, or a path to a file (memory-mapped, read in chunks). A ``str`` is
            always a path: to count a string's bytes pass ``s.encode()``.
        bins: ``"bytes"`` (256), ``"ascii128"`` (128, codes 1..128), ``"letters"`` (27) or a
            256-entry integer lookup table byte -> bin.
        variant: a registered variant name (``warplab.variants("histogram")``); default: the
            fastest measured that supports the input.
        out: int64 array of ``nbins`` to write into (NumPy for host input, CuPy for device).
        accumulate: add into ``out`` instead of overwriting it (streaming over chunks).
        device: ``"cuda"`` or ``"cpu"``; default automatic (``WARPLAB_DEVICE`` overrides).

    Returns:
        int64 counts, NumPy for host input, CuPy for device input (``out`` when given).

    Performance:
        Reads every byte once; host input is copied to the GPU (in chunks of at most half the
        free memory) and the bins copied back, which synchronises. Device input: no host sync.
    """
    if variant is None and out is None and device is None and not accumulate:
        counts = device_default(data, bins)
        if counts is not None:
            return counts
    mapping = resolve(bins)
    if is_file_source(data):  # a path, an open binary file, a list of paths: streamed
        _check_accumulate(out, accumulate, mapping, False)
        return _deliver(_stream_files(data, mapping, variant, device), out, accumulate, False)
    inp = _as_input(data)
    h_or_d = _byte_view(inp)
    _check_accumulate(out, accumulate, mapping, inp.on_device)
    backend = _registry.pick_backend("histogram", device, variant, inp.on_device)
    problem = HistogramProblem(h_or_d.size, mapping.nbins, mapping.name, inp.on_device)
    v = _registry.choose("histogram", backend, problem, variant)
    _registry.ran(v)
    if backend == "cpu":
        counts = streamed.host_byte_counts(v, to_host(h_or_d), mapping)
        return _deliver(counts, out, accumulate, inp.on_device)
    if inp.on_device:
        if out is not None and not accumulate:
            out.fill(0)
        return _run_cuda(v, h_or_d, mapping, out)
    return _deliver(_run_cuda(v, h_or_d, mapping, None).get(), out, accumulate, False)


def _check_accumulate(out: Any, accumulate: bool, mapping: Mapping, on_device: bool) -> None:
    if accumulate and out is None:
        raise ValueError("accumulate=True needs out= to add into")
    check_out(out, (mapping.nbins,), np.int64, on_device)


def _stream_files(files: Any, mapping: Mapping, variant: str | None, device: str | None) -> Any:
    """A path, an open binary file or a list of paths, streamed (``streamed.py``)."""
    try:
        return streamed.file_byte_counts(files, mapping, variant, device)
    except FileNotFoundError:
        if isinstance(files, str):
            raise FileNotFoundError(f"no such file: {files!r} ({STR_IS_A_PATH})") from None
        raise


def _chunk_bytes() -> int:
    """Bytes of host data copied to the device at once."""
    import cupy

    return MAX_DEVICE_CHUNK or max(1 << 20, cupy.cuda.runtime.memGetInfo()[0] // 2)


def _run_cuda(v: _registry.Variant, data: Any, mapping: Mapping, d_out: Any) -> Any:
    """Run variant ``v``; device data directly, host data in chunks. Adds into ``d_out``."""
    import cupy

    bins = d_out if d_out is not None else zeros(mapping.nbins, np.int64)
    if isinstance(data, cupy.ndarray):
        v.fn(data, bins, mapping)
        return bins
    return streamed.device_byte_counts(v, data, mapping, bins)


def _deliver(counts: np.ndarray, out: Any, accumulate: bool, on_device: bool) -> Any:
    """Host counts into the caller's kind of array (``out`` when given)."""
    if on_device:
        counts = _cupy().asarray(counts)
    if out is None:
        return counts
    if accumulate:
        out += counts
    else:
        out[...] = counts
    return out



# ----------------------------------------------------------------------------------------------
# NumPy's histogram
# ----------------------------------------------------------------------------------------------


@device_errors
def histogram(a: Any, bins: Any = 10, range: Any = None, density: Any = None,  # noqa: A002
              weights: Any = None, *, variant: str | None = None,
              device: str | None = None) -> tuple[Any, Any]:
    """NumPy's ``histogram(a, bins=10, range=None, density=None, weights=None)``.

    Returns ``(hist, bin_edges)`` with NumPy's values and dtypes: int64 counts (the weights'
    dtype with ``weights``, float64 with ``density``), edges in NumPy's dtype (float64, or the
    floating dtype of the data / range). NumPy arrays for host input, CuPy arrays for device
    input.

    Args:
        a: any numeric array (NumPy, CuPy, ``__cuda_array_interface__``, DLPack, a sequence;
            ``bytes``/``bytearray``/``memoryview`` are uint8, a ``str`` a file path read as
            uint8); flattened. bool data warns and counts as uint8, as NumPy does.
        bins: number of equal bins, an estimator name (``"auto"``, ``"fd"``...) or a
            monotonically increasing array of edges (the last bin closed).
        range: ``(lower, upper)`` of the equal bins (default: the data's min and max; values
            outside are dropped; NaN is never counted; ``ValueError`` for NaN/inf in an
            automatic range, as NumPy).
        density: divide by the bin widths and the total.
        weights: an array of the shape of ``a``; each value counts its weight.
        variant: a variant of the family the call dispatches to (``histogram_even`` for integer
            or estimator bins, ``histogram_edges`` for an edges array; see
            ``warplab.variants(...)``).
        device: ``"cuda"`` or ``"cpu"``; default automatic (``WARPLAB_DEVICE`` overrides).

    Counts are NumPy's bit for bit: integer bins use NumPy's own index formula in NumPy's
    precision and its one-step edge correction; an edges array NumPy's ``searchsorted`` rule.
    Weighted sums are accumulated in float64 in another order than NumPy's (which adds per block
    of 65536 elements, or takes differences of running sums for edges arrays), so they agree to
    rounding; float16/float32/integer weights are rounded to their dtype once at the end. When
    the data's minimum or maximum is a zero of both signs, the sign of that edge may differ.
    With ``density`` on device input, a zero total gives NaN without NumPy's warning.

    Performance (cuda): one pass over the data (and weights) with shared-memory bins per block
    (up to 8192 bins of counts, 4096 of weighted sums; global atomics beyond), plus a min/max
    pass (and a host sync) when the range comes from the data; uint8/int8 data without weights
    runs the byte-histogram kernels (no min/max pass). Estimator names, complex/object data and
    the rare plans NumPy itself would fail on run NumPy on a host copy (variant
    ``numpy_host``).
    """
    if weights is None and (density is None or density is False) and variant is None \
            and device is None:
        r = numeric_short.histogram(a, bins, range)
        if r is not None:
            return r
    inp = _as_input(a)
    arr, on_device = inp.array, inp.on_device
    if hasattr(bins, "__cuda_array_interface__"):
        bins = to_host(bins)
    family = EDGES if not isinstance(bins, str) and np.ndim(bins) == 1 else EVEN
    backend = _registry.pick_backend(family, device, variant, on_device)
    if backend == "cpu":
        host_w = None if weights is None else _host_array(weights)
        problem = NumericProblem(family, int(arr.size), np.dtype(arr.dtype), 0,
                                 None if host_w is None else host_w.dtype, on_device)
        v = _registry.choose(family, "cpu", problem, variant)
        _registry.ran(v)
        job = NumericJob(to_host(arr), host_w, bins, host_range(range), None, None, False)
        return _finish(v.fn(job), None, density, on_device)

    if arr.dtype == np.bool_:
        arr = bool_as_uint8(arr, stacklevel=4)
    w = None
    if weights is not None:
        w = _cupy().asarray(weights) if on_device else _host_array(weights)
        if w.shape != arr.shape:
            raise ValueError("weights should have the same shape as a.")
        w = flat_contiguous(w)
    arr = flat_contiguous(arr)
    spec = parse_bins(bins)
    rng = host_range(range)
    dt, n = np.dtype(arr.dtype), int(arr.size)
    wd = None if w is None else np.dtype(w.dtype)
    byte_ok = dt in BYTE_DTYPES and w is None and spec.kind != "estimator"
    plan, passes = None, 1
    if spec.kind != "estimator" and dt in KERNEL_DTYPES and not (
            byte_ok and variant in (None, "bytes")):
        if spec.kind == "count":
            first, last = outer_edges(rng, n, lambda: _min_max(arr, on_device))
            edges = even_edges(first, last, spec.count, dt)
            plan = plan_even(dt, first, last, spec.count, edges)
            passes = 2 if rng is None and n else 1
        else:
            plan = plan_edges(dt, spec.edges)
    problem = NumericProblem(family, n, dt, spec.count, wd, on_device, passes, plan, byte_ok)
    v = _registry.choose(family, "cuda", problem, variant)
    _registry.ran(v)

    def count_bytes(mapping: Mapping) -> Any:
        """The byte-histogram dispatch on ``arr`` (device int64 counts of ``mapping``)."""
        bp = HistogramProblem(n, mapping.nbins, mapping.name, on_device)
        bv = _registry.choose("histogram", "cuda", bp)
        _registry.ran(bv)
        return _run_cuda(bv, arr.view(np.uint8), mapping, None)

    job = NumericJob(arr, w, bins, rng, spec, plan, on_device, count_bytes=count_bytes,
                     max_chunk_bytes=_chunk_bytes() if not on_device else 0)
    return _finish(streamed.numeric_histogram(v, job), wd, density, on_device)


def _min_max(arr: Any, on_device: bool) -> tuple[Any, Any]:
    """The data's (min, max) as NumPy gives them: NumPy on the host, one kernel on device."""
    if not on_device:
        return streamed.host_min_max(arr)
    from warplab.families.histogram.minmax_cuda import device_min_max

    return device_min_max(arr)


def _finish(res: NumericResult, wd: np.dtype | None, density: Any, on_device: bool
            ) -> tuple[Any, Any]:
    """NumPy's dtype and ``density`` on a variant's result, on the caller's side."""
    hist, edges = res.hist, np.array(res.edges)  # a copy: plans and tables are cached
    if res.raw and wd is not None:
        hist = hist.astype(wd)
    xp = np
    if on_device:
        xp = _cupy()
        hist, edges = xp.asarray(hist), xp.asarray(edges)
    elif not isinstance(hist, np.ndarray):
        hist = to_host(hist)
    if density:
        db = np.array(np.diff(to_host(edges)), float)
        hist = hist / xp.asarray(db) / hist.sum()
    return hist, edges


# ----------------------------------------------------------------------------------------------
# bincount
# ----------------------------------------------------------------------------------------------


@device_errors
def bincount(x: Any, weights: Any = None, minlength: Any = 0, *, variant: str | None = None,
             device: str | None = None) -> Any:
    """NumPy's ``bincount(x, weights=None, minlength=0)`` of non-negative integers.

    Without weights: int64 counts; uint8 (and bool) input runs the byte-histogram kernels
    (``variant=`` names one of family ``histogram``), other integer dtypes are counted by NumPy
    or CuPy. With weights: float64 sums (weights of any dtype NumPy casts safely to float64;
    int64 zeros of ``minlength`` for empty ``x``, as NumPy), NumPy's errors for other dtypes and
    a length mismatch; ``variant=`` names one of family ``bincount``.

    Raises:
        TypeError: a non-integer dtype (as NumPy: no safe cast to int64), ``minlength=None``,
            weights not castable to float64.
        ValueError: not 1-D, negative values, negative ``minlength``, weights of another length.

    Performance: uint8 as ``byte_histogram``; weighted on cuda: one pass over ``x`` and the
    weights with float64 sums per block in shared memory (up to 4096 bins; global float64
    atomics per element beyond), plus the pass that finds the largest value. The result length
    depends on the data, so device input synchronises once to read it.
    """
    if minlength is None:
        raise TypeError("use 0 instead of None for minlength")
    minlength = operator.index(minlength)
    if minlength < 0:
        raise ValueError("'minlength' must not be negative")
    if weights is not None and variant is None and device is None:
        r = bincount_short.weighted(x, weights, minlength)
        if r is not None:
            return r
    inp = _as_input(x)
    arr = inp.array
    if not inp.on_device and not isinstance(x, np.ndarray) and arr.size == 0:
        arr = arr.astype(np.intp)  # as NumPy: an empty sequence counts as integers
    dt = np.dtype(arr.dtype)
    if arr.ndim != 1:
        raise ValueError(f"bincount needs a 1-D array, got {arr.ndim} dimensions")
    if not (np.issubdtype(dt, np.integer) or dt == np.bool_):
        raise TypeError(f"bincount needs non-negative integers, got dtype {dt}")
    if weights is not None:
        return _bincount_weighted(inp, arr, weights, minlength, variant, device)
    xp = np if not inp.on_device else _cupy()
    if dt in (np.uint8, np.bool_):
        counts = byte_histogram(arr.view(np.uint8), "bytes", variant=variant, device=device)
        nz = xp.flatnonzero(counts)
        length = max(minlength, int(nz[-1]) + 1 if nz.size else 0)
        if length <= 256:
            return counts[:length]
        return xp.concatenate([counts, xp.zeros(length - 256, dtype=np.int64)])
    if arr.size and int(arr.min()) < 0:
        raise ValueError(f"bincount needs non-negative values, found {int(arr.min())}")
    if variant is not None:
        raise ValueError(f"variant= applies to uint8 input (or with weights) only; got dtype "
                         f"{dt}")
    backend = resolve_backend(device) if device else ("cuda" if inp.on_device else "cpu")
    if backend == "cpu":
        res = np.bincount(to_host(arr), minlength=minlength).astype(np.int64, copy=False)
        return _cupy().asarray(res) if inp.on_device else res
    d = _cupy().asarray(arr)
    if dt == np.uint64:  # values >= 2^63 could not be counted in memory anyway
        d = d.astype(np.int64)
    res = _cupy().bincount(d, minlength=minlength).astype(np.int64, copy=False)
    return res if inp.on_device else res.get()


def _bincount_weighted(inp: Input, arr: Any, weights: Any, minlength: int,
                       variant: str | None, device: str | None) -> Any:
    """``bincount`` with weights (NumPy's checks in NumPy's order)."""
    on_device = inp.on_device
    n, dt = int(arr.size), np.dtype(arr.dtype)
    backend = _registry.pick_backend(BINCOUNT, device, variant, on_device)
    xp = _cupy() if on_device else np
    if n == 0:  # NumPy returns int64 zeros and ignores the weights
        return xp.zeros(minlength, dtype=np.int64)
    if backend == "cpu":
        host_w = _host_array(weights)
        problem = NumericProblem(BINCOUNT, n, dt, 0, host_w.dtype, on_device)
        v = _registry.choose(BINCOUNT, "cpu", problem, variant)
        _registry.ran(v)
        if dt == np.bool_:
            arr = arr.view(np.uint8)
        job = NumericJob(to_host(arr), host_w, None, None, None, None, False, minlength)
        res = v.fn(job).hist
        return _cupy().asarray(res) if on_device else res
    arr = flat_contiguous(arr)
    lo, hi = _min_max(arr, on_device)
    if int(lo) < 0:
        raise ValueError(f"bincount needs non-negative values, found {int(lo)}")
    w = _cupy().asarray(weights) if on_device else _host_array(weights)
    if not np.can_cast(w.dtype, np.float64, casting="safe"):
        raise TypeError(f"Cannot cast array data from {w.dtype!r} to dtype('float64') "
                        "according to the rule 'safe'")
    if w.ndim != 1:
        raise ValueError("object too deep for desired array" if w.ndim > 1
                         else "object of too small depth for desired array")
    if w.shape[0] != n:
        raise ValueError("The weights and list don't have the same length.")
    w = flat_contiguous(w)
    nbins = int(hi) + 1
    problem = NumericProblem(BINCOUNT, n, dt, nbins, np.dtype(w.dtype), on_device, 2)
    v = _registry.choose(BINCOUNT, "cuda", problem, variant)
    _registry.ran(v)
    job = NumericJob(arr, w, None, None, None, nbins, on_device, minlength,
                     max_chunk_bytes=_chunk_bytes() if not on_device else 0)
    out = v.fn(job).hist
    cp = _cupy()
    if minlength > nbins:
        out = cp.concatenate([out, cp.zeros(minlength - nbins, dtype=np.float64)])
    return out if on_device else out.get()

"""NumPy's ``histogram`` and ``bincount``, and byte histograms: the public calls.

Each call normalises its input into a key, looks its plan up and runs it; a miss builds the
plan with the family's one decision (``byte_plan.py``, ``hist_plan.py``, ``bincount_plan.py``:
backend, variant through the registry, launch shape, workspace) and keeps it:

* :func:`byte_histogram`: byte counts into named or table-defined bins; registry family
  ``histogram`` (the four kernels of the histogram report and the privatized vector kernels in
  ``cuda.py``, NumPy in ``cpu.py``); plans in ``histogram.bytes``.
* :func:`histogram` and :func:`bincount`: NumPy's semantics (``numeric.py``), kernels in
  ``numeric_cuda.py`` / ``numeric_variants.py`` / ``numeric.cu``; registry families
  ``histogram_even`` (integer bins), ``histogram_edges`` (an edges array), ``bincount``
  (weighted), each with NumPy as its cpu variant; plans in ``histogram.plans`` and
  ``bincount.plans``.

:func:`histogram_with` and :func:`bincount_with` take a
:class:`~warplab.families.histogram.config.LaunchConfig` (part of the plan key): what tuning
sweeps pass; the public calls pass :data:`~warplab.families.histogram.config.DEFAULT`.
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from warplab.core import fastpath, overrides
from warplab.core.device import device_errors
from warplab.core.errors import InvalidTypeError, InvalidValueError
from warplab.core.sources import is_file_source
from warplab.families.histogram import bincount_plan, byte_plan, hist_plan
from warplab.families.histogram.config import DEFAULT, LaunchConfig
from warplab.families.histogram.spec import resolve

_BYTE_PLANS = fastpath.PlanCache("histogram.bytes")
_HIST_PLANS = fastpath.PlanCache("histogram.plans")
_BINCOUNT_PLANS = fastpath.PlanCache("bincount.plans")


@device_errors
def byte_histogram(data: Any, bins: Any = "bytes", *, variant: str | None = None,
                   out: Any = None, accumulate: bool = False, device: str | None = None) -> Any:
    """Count the bytes of ``data`` into bins (the byte-histogram kernels; registry family
    ``"histogram"``).

    Args:
        data: uint8 (or int8) NumPy/CuPy array of any shape, anything with
            ``__cuda_array_interface__`` or DLPack (a torch tensor), ``bytes``/``bytearray``/
            ``memoryview``, a path to a file, an open binary file (from its position), or a
            list of paths and ``warplab.FileRange(path, offset, length)`` byte ranges (read
            in chunks as one stream). A ``str`` is always a path: to count a string's bytes
            pass ``s.encode()``.
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
    k = byte_plan.key(data, bins, variant, device, out is not None, accumulate)
    plan = None if k is None else _BYTE_PLANS.get(k)
    if plan is None:
        if k is None and overrides.kind(data) is not None:
            raise overrides.refuse("byte_histogram", data)
        if k is None and is_file_source(data):  # a path, a binary file, a list of paths/ranges
            mapping = resolve(bins)
            byte_plan.check_accumulate(out, accumulate, mapping, False)
            counts = byte_plan.count_files(data, mapping, variant, device)
            return byte_plan.deliver(counts, out, accumulate, False)
        plan = byte_plan.build(data, bins, variant, device, out, accumulate)
        if k is not None:
            plan = _BYTE_PLANS.put(k, plan)
    return plan.run(data, out, accumulate)


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
    return histogram_with(DEFAULT, a, bins, range, density, weights, variant=variant,
                          device=device)


def histogram_with(config: LaunchConfig, a: Any, bins: Any = 10, range: Any = None,  # noqa: A002
                   density: Any = None, weights: Any = None, *, variant: str | None = None,
                   device: str | None = None) -> tuple[Any, Any]:
    """:func:`histogram` with the kernels' launch configuration ``config``."""
    k = hist_plan.key(a, bins, range, density, weights, variant, device, config)
    plan = None if k is None else _HIST_PLANS.get(k)
    if plan is None:
        o = None if k is not None else overrides.first_kind((a, weights))
        if o is not None:
            return _numpy_histogram(o, a, bins, range, density, weights, variant, device)
        plan = hist_plan.build(a, bins, range, density, weights, variant, device, config,
                               k is not None)
        if k is not None:
            plan = _HIST_PLANS.put(k, plan)
    return plan.run(a, weights)


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
    return bincount_with(DEFAULT, x, weights, minlength, variant, device)


def bincount_with(config: LaunchConfig, x: Any, weights: Any = None, minlength: Any = 0,
                  variant: str | None = None, device: str | None = None) -> Any:
    """:func:`bincount` with the kernels' launch configuration ``config``."""
    if type(minlength) is not int:
        if minlength is None:
            raise InvalidTypeError("use 0 instead of None for minlength")
        minlength = operator.index(minlength)
    if minlength < 0:
        raise InvalidValueError("'minlength' must not be negative")
    k = bincount_plan.key(x, weights, variant, device, config)
    plan = None if k is None else _BINCOUNT_PLANS.get(k)
    if plan is None:
        o = None if k is not None else overrides.first_kind((x, weights))
        if o == "masked":
            raise overrides.refuse("bincount", x if overrides.kind(x) else weights,
                                   "NumPy's bincount ignores the mask")
        if o is not None:
            return overrides.defer("bincount", o, np.bincount, (x,),
                                   {"weights": weights, "minlength": minlength},
                                   {"variant": variant, "device": device})
        plan = bincount_plan.build(x, weights, variant, device, config, k is not None)
        if k is not None:
            plan = _BINCOUNT_PLANS.put(k, plan)
    return plan.run(x, weights, minlength)


def _numpy_histogram(o: str, a: Any, bins: Any, range: Any, density: Any,  # noqa: A002
                     weights: Any, variant: str | None, device: str | None) -> tuple[Any, Any]:
    """``histogram`` of input NumPy dispatches elsewhere (``core/overrides.py``): a masked
    array (NumPy's histogram ignores its mask) raises; a subclass or an
    ``__array_function__`` object gets NumPy's own ``histogram``."""
    if o == "masked":
        raise overrides.refuse("histogram", a if overrides.kind(a) else weights,
                               "NumPy's histogram ignores the mask")
    return overrides.defer("histogram", o, np.histogram, (a, bins),
                           {"range": range, "density": density, "weights": weights},
                           {"variant": variant, "device": device})

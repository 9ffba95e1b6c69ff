"""Reductions along axes with NumPy's semantics: ``reduce_axis(a, op, axis, ...)`` and the
per-series statistics ``series_stats_rows``.

The entry points of registry family ``"reduce_axis"``: ``rows_adaptive`` and ``columns``
(cuda, default for their layouts), the Pearson report's K2 seeds (``k2_*``, cuda) and
``numpy`` (cpu). ``warplab.sum / mean / min / max / var / std`` take this family whenever
``axis`` is not None, ``keepdims`` is set, the op is var/std or the dtype is one the
whole-array family does not take. Both functions run through the family's planned path
(``plan.py``: key, plan, run; the decisions in ``plan_axis.py``); the semantics (result
dtypes, axis rules, the 2-D views the kernels read) are ``axis_spec.py``'s, whose names this
module re-exports.
"""
from __future__ import annotations

from typing import Any

from warplab.families.reduce import plan
from warplab.families.reduce.axis_spec import (  # noqa: F401
    F64,
    FAMILY,
    OPS,
    AxisError,
    AxisJob,
    AxisProblem,
    Plan2D,
    axis_bytes_moved,
    check_ddof,
    check_dtype,
    normalize_axes,
    plan_2d,
    result_dtype,
)


def reduce_axis(a: Any, op: str, axis: Any = None, *, dtype: Any = None, keepdims: bool = False,
                ddof: Any = 0, variant: str | None = None, device: str | None = None) -> Any:
    """``np.<op>(a, axis=axis, dtype=dtype, keepdims=keepdims, ddof=ddof)`` on the GPU.

    Args:
        a: numeric data of any shape and layout (NumPy, CuPy, torch, anything with
            ``__cuda_array_interface__`` or DLPack): bool, int8..int64, uint8..uint64,
            float16/32/64.
        op: ``"sum"``, ``"mean"``, ``"min"``, ``"max"``, ``"var"`` or ``"std"``.
        axis: None (every axis), an int or a tuple of ints (negative from the end).
        dtype: NumPy's ``dtype=`` (not for min/max; floating only for var/std): the elements
            are converted to it first (one extra pass) and the result has it.
        keepdims: keep the reduced axes with length one.
        ddof: var/std divide by ``N - ddof``; ``ddof >= N`` raises (N > 0).
        variant: a registered variant (``warplab.variants("reduce_axis")``); default by layout.
        device: ``"cuda"`` or ``"cpu"``; default automatic (``WARPLAB_DEVICE`` overrides).

    Returns:
        NumPy's result: for host input a NumPy array, or a NumPy scalar when the result is 0-d;
        for device input a CuPy array (a 0-d ``DeviceScalar`` for a scalar result). Float16/32
        results were accumulated in float64 (more accurate than NumPy's pairwise float32
        sums); var/std use shifted sums in float64 on the device (see ``axis_cuda``) and
        NumPy's two-pass ``np.var`` in float64 on the cpu.

    Raises:
        ValueError: unknown op; ``ddof >= N``; min/max over an empty axis (NumPy's message);
            a duplicate axis; AxisError (a ValueError/IndexError) for an axis out of range.
        TypeError: complex, object or string input; ``dtype=`` for min/max; a non-floating
            ``dtype=`` for var/std; ``ddof`` for ops other than var/std.

    Performance:
        cuda: reads the input once in one launch (``rows_adaptive``/``columns``), writes each
        result once, no host synchronisation for device input; a warm call on a 2-D view of
        a native dtype: the plan's key, one lookup, one allocation, one launch. Extra passes:
        ``dtype=`` (one conversion), a layout that is not a 2-D view (one transposed copy),
        dtypes the kernels do not take natively (bool, int8/16, uint8/16/32, float16 and
        uint64 mean/var/std: one conversion; uint64 min/max: one sign-flip pass). Host input:
        one H2D copy and one synchronising D2H copy of the result (large C-contiguous input
        reduced over trailing axes: streamed). Empty inputs are answered by NumPy on the host.
    """
    return plan.call(a, op, axis, dtype, keepdims, ddof, variant, device, "axis")


def series_stats_rows(x2d: Any, *, device: str | None = None) -> tuple[Any, Any]:
    """Per row of a 2-D (M, N) array: the mean and the centred norm sqrt(sum((x - mean)^2)).

    The Pearson report's per-series statistics (mean, then the root of the summed squared
    deviations) in ONE pass over the data on the cuda backend: the ``moments`` kernels of
    ``rows_adaptive`` (or ``columns`` for a Fortran-ordered array) accumulate shifted sums in
    float64. On the cpu backend: NumPy, two passes in float64.

    Args:
        x2d: a 2-D numeric array (NumPy or device), any layout.
        device: ``"cuda"`` or ``"cpu"``; default: the input's home, else automatic.

    Returns:
        ``(mean, norm)``, each of shape (M,): float32 for float32 input (computed in float64),
        float64 otherwise; NumPy arrays for host input, CuPy arrays for device input. A row of
        N = 0 values has mean NaN (NumPy's "Mean of empty slice" warning) and norm 0.

    Raises:
        ValueError: ``x2d`` is not 2-D.  TypeError: complex, object or string data.

    Performance:
        cuda: reads the input once in one launch and writes 2 M results (other dtypes than
        int32/int64/float32/float64: one conversion pass first; a layout that is not a 2-D
        view: one transposed copy first); a warm call on a 2-D view of a native dtype: one
        allocation, one launch. Host input: one H2D copy, one D2H copy (large C-contiguous
        input: streamed in chunks of whole series).
    """
    return plan.call(x2d, "stats", None, None, False, 0, None, device, "stats")

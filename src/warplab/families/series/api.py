"""The Pearson report's per-series functions: ``random_walk`` (its step 1: the series) and
``series_stats`` (its steps 2 and 3: each series' mean and centred norm).

``random_walk`` lives in ``walk.py`` (NumPy reference) with its kernels in ``walk_cuda.py`` /
``walk.cu``; the per-series reductions are the reduce family's axis kernels
(``families/reduce/axis*.py``: ``warplab.mean(x, axis=1)`` is the per-series mean, and the
report's K2 kernels are its ``k2_*`` variants).
"""
from __future__ import annotations

from typing import Any

from warplab.core.device import device_errors
from warplab.families.reduce.plan import call
from warplab.families.series.walk import random_walk

__all__ = ["random_walk", "series_stats"]


@device_errors
def series_stats(x: Any, *, device: str | None = None) -> tuple[Any, Any]:
    """Per series (row) of an ``(M, N)`` array: the mean and the centred norm
    ``sqrt(sum((x - mean)**2))``, the two per-series numbers Pearson's coefficient needs
    (``r = sum((x - mx)(y - my)) / (norm_x * norm_y)``).

    Args:
        x: a 2-D numeric array (NumPy, CuPy, torch, anything with ``__cuda_array_interface__``
            or DLPack) of M series with N values each, any layout.
        device: ``"cuda"`` or ``"cpu"``; default: the input's home, else automatic.

    Returns:
        ``(mean, norm)``, each of shape ``(M,)``: float32 for float32 input (accumulated in
        float64), float64 otherwise; NumPy for host input, CuPy for device input.

    Raises:
        ValueError: ``x`` is not 2-D.  TypeError: complex, object or string data.

    Performance:
        cuda: one pass over the data (shifted sums of x and x^2 in float64 per series, one
        launch), 2 M results written; host input adds one H2D and one D2H copy (large
        C-contiguous input: streamed in chunks of whole series). cpu: NumPy, two passes in
        float64. The reduce family's planned path (``reduce/plan.py``): a warm call on a
        2-D view of int32/int64/float32/float64 device data is the plan's key, one lookup,
        the results (at most 2 KiB: from the slab of small results of the device and
        stream, else one allocation) and one launch.
    """
    return call(x, "stats", None, None, False, 0, None, device, "stats")


random_walk = device_errors(random_walk)

"""What every family's public functions share about their results: the ``out=`` check and
lazy access to CuPy (imported only when the cuda backend or device data is in play)."""
from __future__ import annotations

from typing import Any

import numpy as np

from warplab.core.errors import InvalidValueError


def cupy() -> Any:
    """The ``cupy`` module (imported on first use, so the NumPy backend never needs it)."""
    import cupy as cp

    return cp


def check_out(out: Any, shape: tuple[int, ...], dtype: Any, on_device: bool, *,
              device_why: str = "the input is on the GPU") -> None:
    """``ValueError`` unless ``out`` is None or a C-contiguous array of ``shape`` and ``dtype``
    on the caller's side (CuPy when ``on_device``, NumPy otherwise)."""
    if out is None:
        return
    dtype = np.dtype(dtype)
    want = f"a CuPy array ({device_why})" if on_device else "a NumPy array"
    if on_device != hasattr(out, "__cuda_array_interface__") or not hasattr(out, "dtype"):
        raise InvalidValueError(f"out must be {want} of shape {shape} and dtype {dtype}")
    if tuple(out.shape) != tuple(shape) or out.dtype != dtype:
        raise InvalidValueError(f"out must have shape {tuple(shape)} and dtype {dtype}, got shape "
                                f"{tuple(out.shape)} and dtype {out.dtype}")
    if not out.flags.c_contiguous:
        raise InvalidValueError("out must be C-contiguous")

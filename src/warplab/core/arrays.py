"""Array interop: NumPy, CuPy, ``__cuda_array_interface__``, DLPack, bytes and files in.

``as_input`` turns whatever the user passed into a :class:`Input`: a host array (NumPy, or a
read-only memory map of a file) or a device array (CuPy, zero-copy where the producer allows).
The result of a call goes back as the same kind: NumPy for host input, CuPy for device input.
"""
from __future__ import annotations

import contextlib
import mmap
import os
import sys
from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np


class Input(NamedTuple):
    """A normalised input: ``array`` is a NumPy or CuPy array; ``on_device`` says which."""

    array: Any
    on_device: bool

    @property
    def size(self) -> int:
        return int(self.array.size)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.array.dtype)


def is_device_array(x: Any) -> bool:
    """True for CuPy arrays and anything exposing ``__cuda_array_interface__``."""
    return hasattr(x, "__cuda_array_interface__")


def _dlpack_on_cuda(x: Any) -> bool | None:
    try:
        dev_type, _ = x.__dlpack_device__()
    except Exception:
        return None
    return int(dev_type) in (2, 3, 13)  # kDLCUDA, kDLCUDAHost, kDLCUDAManaged


def map_file(path: str | os.PathLike[str]) -> np.ndarray:
    """Map a file read-only as a uint8 array (pages are read lazily, chunk by chunk).

    Raises:
        FileNotFoundError / IsADirectoryError / PermissionError with the path in the message.
    """
    p = os.fspath(path)
    with file_errors(p), open(p, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            return np.zeros(0, dtype=np.uint8)
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    return np.frombuffer(mm, dtype=np.uint8)


@contextlib.contextmanager
def file_errors(path: str) -> Iterator[None]:
    """Re-raise opening errors with the path in one plain sentence (and no chained OSError
    text): missing file, a directory, no read permission."""
    try:
        yield
    except FileNotFoundError:
        raise FileNotFoundError(f"no such file: {path}") from None
    except IsADirectoryError:
        raise IsADirectoryError(f"is a directory, not a file: {path}") from None
    except PermissionError:
        raise PermissionError(f"cannot read file (permission denied): {path}") from None


def as_input(data: Any) -> Input:
    """Normalise ``data`` (see the module docstring) without copying where possible."""
    if type(data) is np.ndarray:
        return Input(data, False)
    cupy_mod = sys.modules.get("cupy")
    if cupy_mod is not None and type(data) is cupy_mod.ndarray:
        return Input(data, True)
    if hasattr(data, "__cuda_array_interface__"):
        import cupy

        return Input(data if type(data) is cupy.ndarray else cupy.asarray(data), True)
    if isinstance(data, (str, os.PathLike)):
        return Input(map_file(data), False)
    if isinstance(data, (bytes, bytearray)):
        return Input(np.frombuffer(data, dtype=np.uint8), False)
    if isinstance(data, memoryview):
        arr = np.asarray(data)
        return Input(arr.view(np.uint8).reshape(-1) if arr.dtype.itemsize == 1 else arr, False)
    if isinstance(data, np.ndarray):
        return Input(data, False)
    if is_device_array(data):
        import cupy

        return Input(cupy.asarray(data), True)
    if hasattr(data, "__dlpack__"):
        on_cuda = _dlpack_on_cuda(data)
        if on_cuda:
            import cupy

            return Input(cupy.from_dlpack(data), True)
        return Input(np.from_dlpack(data), False)
    return Input(np.asarray(data), False)


def is_flat(arr: Any) -> bool:
    """True if ``arr`` is already 1-D and contiguous."""
    return arr.ndim == 1 and (arr.strides[0] == arr.itemsize or arr.size <= 1)


def flat_contiguous(arr: Any) -> Any:
    """A 1-D C-contiguous view of ``arr`` (a copy only when ``arr`` is not contiguous)."""
    if is_flat(arr):
        return arr
    xp = _xp(arr)
    return xp.ascontiguousarray(arr).reshape(-1)


def _xp(arr: Any) -> Any:
    if isinstance(arr, np.ndarray):
        return np
    import cupy

    return cupy


def to_host(arr: Any) -> np.ndarray:
    """Copy a device array to the host (a synchronising D2H copy); NumPy passes through."""
    if isinstance(arr, np.ndarray):
        return arr
    import cupy

    return cupy.asnumpy(arr)


def to_device(arr: Any) -> Any:
    """Copy a host array to the device (H2D); device arrays pass through."""
    import cupy

    return cupy.asarray(arr)

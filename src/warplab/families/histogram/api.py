"""Byte histograms and ``bincount``: validate, choose backend and variant, run.

Variants: see ``warplab.variants("histogram")``; the CUDA ones live in ``cuda.py`` beside this
file (the four kernels of the histogram report and the privatized vector kernels), the NumPy
one in ``cpu.py``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...core import registry as _registry
from ...core.arrays import Input, as_input, flat_contiguous, to_host
from ...core.device import device_errors, resolve_backend
from ...core.outputs import check_out, cupy as _cupy
from .spec import HistogramProblem, Mapping, resolve

#: Largest host chunk copied to the GPU at once; ``None`` = half the free device memory.
MAX_DEVICE_CHUNK: int | None = None


def _byte_view(inp: Input) -> Any:
    """The input as 1-D contiguous bytes; ``TypeError`` naming the dtype otherwise."""
    dt = inp.dtype
    if dt not in (np.uint8, np.int8) and dt != np.bool_:
        raise TypeError(f"a byte histogram needs uint8 (or int8) data, got dtype {dt}; "
                        "use warplab.bincount for other integer arrays")
    return flat_contiguous(inp.array).view(np.uint8)




@device_errors
def histogram(data: Any, bins: Any = "bytes", *, variant: str | None = None, out: Any = None,
              accumulate: bool = False, device: str | None = None) -> Any:
    """Count the bytes of ``data`` into bins.

    Args:
        data: uint8 (or int8) NumPy/CuPy array of any shape, anything with
            ``__cuda_array_interface__`` or DLPack (a torch tensor), ``bytes``/``memoryview``,
            or a path to a file (memory-mapped, read in chunks).
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
    mapping = resolve(bins)
    inp = as_input(data)
    h_or_d = _byte_view(inp)
    if accumulate and out is None:
        raise ValueError("accumulate=True needs out= to add into")
    check_out(out, (mapping.nbins,), np.int64, inp.on_device)
    backend = _registry.pick_backend("histogram", device, variant, inp.on_device)
    problem = HistogramProblem(h_or_d.size, mapping.nbins, mapping.name, inp.on_device)
    v = _registry.choose("histogram", backend, problem, variant)
    _registry.ran(v)
    if backend == "cpu":
        counts = np.zeros(mapping.nbins, dtype=np.int64)
        v.fn(to_host(h_or_d), counts, mapping)
        return _deliver(counts, out, accumulate, inp.on_device)
    if inp.on_device:
        if out is not None and not accumulate:
            out.fill(0)
        return _run_cuda(v, h_or_d, mapping, out)
    return _deliver(_run_cuda(v, h_or_d, mapping, None).get(), out, accumulate, False)


def _run_cuda(v: _registry.Variant, data: Any, mapping: Mapping, d_out: Any) -> Any:
    """Run variant ``v``; device data directly, host data in chunks. Adds into ``d_out``."""
    import cupy

    bins = d_out if d_out is not None else cupy.zeros(mapping.nbins, dtype=np.int64)
    if isinstance(data, cupy.ndarray):
        v.fn(data, bins, mapping)
        return bins
    chunk = MAX_DEVICE_CHUNK or max(1 << 20, cupy.cuda.runtime.memGetInfo()[0] // 2)
    chunk = min(chunk, max(1, data.size))
    d_buf = cupy.empty(chunk, dtype=np.uint8)
    for start in range(0, data.size, chunk):
        part = data[start:start + chunk]
        d_part = d_buf[:part.size]
        d_part.set(part)
        v.fn(d_part, bins, mapping)
    return bins


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


@device_errors
def bincount(x: Any, minlength: int = 0, *, variant: str | None = None,
             device: str | None = None) -> Any:
    """NumPy-compatible ``bincount`` of non-negative integers (no ``weights``).

    uint8 (and bool) input runs the byte-histogram kernels at full speed; other integer dtypes
    are counted correctly by NumPy or CuPy.

    Raises:
        TypeError: a non-integer dtype (as NumPy: no safe cast to int64).
        ValueError: not 1-D, negative values, negative ``minlength``.

    Performance: uint8 as ``histogram``; the result length depends on the data, so device
    input synchronises once to read it.
    """
    inp = as_input(x)
    arr = inp.array
    if not inp.on_device and not isinstance(x, np.ndarray) and arr.size == 0:
        arr = arr.astype(np.intp)  # as NumPy: an empty sequence counts as integers
    dt = np.dtype(arr.dtype)
    if arr.ndim != 1:
        raise ValueError(f"bincount needs a 1-D array, got {arr.ndim} dimensions")
    if minlength is None or int(minlength) < 0:
        raise ValueError("minlength must be a non-negative integer")
    minlength = int(minlength)
    if not (np.issubdtype(dt, np.integer) or dt == np.bool_):
        raise TypeError(f"bincount needs non-negative integers, got dtype {dt}")
    xp = np if not inp.on_device else _cupy()
    if dt in (np.uint8, np.bool_):
        counts = histogram(arr.view(np.uint8), "bytes", variant=variant, device=device)
        nz = xp.flatnonzero(counts)
        length = max(minlength, int(nz[-1]) + 1 if nz.size else 0)
        if length <= 256:
            return counts[:length]
        return xp.concatenate([counts, xp.zeros(length - 256, dtype=np.int64)])
    if arr.size and int(arr.min()) < 0:
        raise ValueError(f"bincount needs non-negative values, found {int(arr.min())}")
    if variant is not None:
        raise ValueError(f"variant= applies to uint8 input only; got dtype {dt}")
    backend = resolve_backend(device) if device else ("cuda" if inp.on_device else "cpu")
    if backend == "cpu":
        res = np.bincount(to_host(arr), minlength=minlength).astype(np.int64, copy=False)
        return _cupy().asarray(res) if inp.on_device else res
    d = _cupy().asarray(arr)
    if dt == np.uint64:  # values >= 2^63 could not be counted in memory anyway
        d = d.astype(np.int64)
    res = _cupy().bincount(d, minlength=minlength).astype(np.int64, copy=False)
    return res if inp.on_device else res.get()


"""``byte_histogram``'s plans: what a call decides once per key and then only runs.

:func:`byte_variant` is the one place the byte-histogram family chooses its backend and
variant, for host arrays, device arrays, files (``streamed.file_byte_counts``) and the byte
path of ``histogram`` and ``bincount`` alike. :func:`build` turns a call's static part (input
kind, dtype, layout, bins, ``variant=``, ``device=``, whether ``out=`` is given, ``accumulate``)
into a :class:`BytePlan`: the resolved mapping, the variant, how the data becomes flat bytes;
``api.byte_histogram`` keeps plans in the ``histogram.bytes`` cache (:func:`key`) and a warm
call runs one: ``ran``, a zeroed result, the variant's launch (``cuda.py``'s prepared launch
of its kernel, mapping and device).
"""
from __future__ import annotations

import sys
from collections.abc import Hashable
from typing import Any

import numpy as np

from warplab.core import env, registry as _registry
from warplab.core.arrays import Input, as_input, flat_contiguous, is_flat, to_host
from warplab.core.errors import InvalidTypeError, InvalidValueError
from warplab.core.outputs import check_out, cupy as _cupy
from warplab.core.scalar import RESULT_TYPES, zeros
from warplab.core.streaming import worth_streaming
from warplab.families.histogram import cpu, streamed
from warplab.families.histogram.spec import HistogramProblem, Mapping, resolve

FAMILY = "histogram"
#: ``WARPLAB_STREAM_MIN`` as stored (part of every host key with ``env.device``: the backend,
#: and whether the array is streamed, are decided by the plan).
_STREAM_MIN_ENV = env.reader("WARPLAB_STREAM_MIN")
STR_IS_A_PATH = ("a str is taken as a file path; pass bytes (e.g. b'...' or s.encode()) to "
                 "count a string's bytes")
_BYTE_CHARS = ("B", "b", "?")  # uint8, int8, bool


def explained_input(data: Any) -> Input:
    """:func:`as_input`, with a missing path given as a ``str`` explained: the str may well
    have been meant as text."""
    try:
        return as_input(data)
    except FileNotFoundError:
        if isinstance(data, str):
            raise FileNotFoundError(f"no such file: {data!r} ({STR_IS_A_PATH})") from None
        raise


def byte_variant(size: int, mapping: Mapping, on_device: bool, variant: str | None,
                 device: str | None) -> _registry.Variant:
    """The backend and variant (``Variant.backend``) that count ``size`` bytes into
    ``mapping``'s bins: ``device=``, the named variant's backend or the input's home, then
    dispatch (``registry.choose``) or the named variant."""
    backend = _registry.pick_backend(FAMILY, device, variant, on_device)
    problem = HistogramProblem(size, mapping.nbins, mapping.name, on_device)
    return _registry.choose(FAMILY, backend, problem, variant)


def byte_dtype_check(dtype: np.dtype) -> None:
    """``TypeError`` naming the dtype unless it is a byte dtype (uint8, int8, bool)."""
    if dtype not in (np.uint8, np.int8) and dtype != np.bool_:
        raise InvalidTypeError(f"a byte histogram needs uint8 (or int8) data, got dtype {dtype}; "
                        "use warplab.histogram or warplab.bincount for other arrays")


def check_accumulate(out: Any, accumulate: bool, mapping: Mapping, on_device: bool) -> None:
    """The ``out=``/``accumulate`` checks (``ValueError``)."""
    if accumulate and out is None:
        raise InvalidValueError("accumulate=True needs out= to add into")
    check_out(out, (mapping.nbins,), np.int64, on_device)


def key(data: Any, bins: Any, variant: Any, device: Any, has_out: bool, accumulate: Any
        ) -> Hashable | None:
    """The plan key of a call, or None for calls planned afresh each time (files, sequences,
    other array types, bins that are neither a name nor a NumPy table). Device arrays: dtype,
    shape, strides, bins, ``variant``, ``device``, ``out`` given, ``accumulate`` (the kernels'
    own plans add the device id); NumPy arrays also ``WARPLAB_DEVICE`` and
    ``WARPLAB_STREAM_MIN`` (read per call). A NumPy array with the default options has the
    shortest key (checked first)."""
    t = type(data)
    if t is np.ndarray and type(bins) is str and variant is None and device is None \
            and accumulate is False:
        return (env.device(), _STREAM_MIN_ENV(), data.dtype, data.shape, data.strides, bins,
                has_out)
    if type(bins) is str:
        bk: Any = bins
    elif type(bins) is np.ndarray and bins.ndim == 1 and bins.dtype.kind in "iub":
        bk = (bins.dtype.str, bins.tobytes())
    else:
        return None
    if (type(variant) is not str and variant is not None) \
            or (type(device) is not str and device is not None) or type(accumulate) is not bool:
        return None
    if t is np.ndarray:
        return ("host", env.device(), _STREAM_MIN_ENV(), data.dtype, data.shape, data.strides,
                bk, variant, device, has_out, accumulate)
    cupy = sys.modules.get("cupy")
    if cupy is not None and (t is cupy.ndarray or t in RESULT_TYPES):
        return (data.dtype, data.shape, data.strides, bk, variant, device, has_out, accumulate)
    return None


class BytePlan:
    """One call's decisions: the ``variant`` (and so the backend), the ``mapping``, whether
    the data is already flat uint8 (``direct``), int8/bool to view as uint8 (``view``) or to
    be made contiguous first; ``on_device``: device input; ``nbytes`` the input's size."""

    __slots__ = ("direct", "host_bytes", "mapping", "on_device", "small", "variant", "view")

    def __init__(self, variant: _registry.Variant, mapping: Mapping, on_device: bool,
                 direct: bool, view: bool, nbytes: int) -> None:
        self.variant, self.mapping, self.on_device = variant, mapping, on_device
        self.direct, self.view = direct, view
        #: flat uint8 host data below the streaming size, 256 bins, NumPy's variant:
        #: ``cpu.byte_counts`` is the result (``small``: one ``np.bincount``)
        self.host_bytes = (direct and not on_device and mapping.map_id == 0
                           and variant.fn is cpu.numpy_chunked and not worth_streaming(nbytes))
        self.small = self.host_bytes and nbytes < cpu.PAIRS_MIN

    def run(self, data: Any, out: Any, accumulate: bool) -> Any:
        """Count ``data`` (of the key's kind, dtype and layout) into the caller's kind of
        array (``out`` when given, added into with ``accumulate``)."""
        if self.host_bytes and out is None:
            _registry.ran(self.variant)  # flat uint8 host data into 256 bins with NumPy
            return cpu.NUMPY_BINCOUNT(data, None, 256) if self.small else cpu.byte_counts(data)
        v, mapping = self.variant, self.mapping
        if out is not None:
            check_out(out, (mapping.nbins,), np.int64, self.on_device)
        if self.direct:
            flat = data
        elif self.view:
            flat = data.view(np.uint8)
        else:
            flat = flat_contiguous(as_input(data).array).view(np.uint8)
        _registry.ran(v)
        if v.backend == "cpu":
            h_flat = flat if type(flat) is np.ndarray else to_host(flat)
            counts = streamed.host_byte_counts(v, h_flat, mapping)
            return deliver(counts, out, accumulate, self.on_device)
        if self.on_device:
            if out is None:
                counts = zeros(mapping.nbins, np.int64)
            elif not accumulate:
                out.fill(0)
            v.fn(flat, counts if out is None else out, mapping)
            return counts if out is None else out
        d_bins = streamed.device_byte_counts(v, flat, mapping, zeros(mapping.nbins, np.int64))
        return deliver(d_bins.get(), out, accumulate, False)


def build(data: Any, bins: Any, variant: str | None, device: str | None, out: Any,
          accumulate: bool) -> BytePlan:
    """The plan of a ``byte_histogram`` call on an array (the file sources are
    :func:`count_files`'): every check and decision that does not depend on the data's
    values, raising what the call raises."""
    mapping = resolve(bins)
    inp = explained_input(data)
    dt = np.dtype(inp.dtype)
    byte_dtype_check(dt)
    check_accumulate(out, accumulate, mapping, inp.on_device)
    v = byte_variant(int(inp.size), mapping, inp.on_device, variant, device)
    flat = is_flat(inp.array)
    return BytePlan(v, mapping, inp.on_device, flat and dt == np.uint8 and inp.array is data,
                    flat and inp.array is data and dt.char in _BYTE_CHARS,
                    int(inp.size) * dt.itemsize)


def count_files(files: Any, mapping: Mapping, variant: str | None, device: str | None
                ) -> np.ndarray:
    """Host counts of a path, an open binary file or a list of paths (``streamed.py``), the
    variant chosen by :func:`byte_variant` for the sources' total size."""
    try:
        return streamed.file_byte_counts(
            files, mapping, lambda size: byte_variant(size, mapping, False, variant, device))
    except FileNotFoundError:
        if isinstance(files, str):
            raise FileNotFoundError(f"no such file: {files!r} ({STR_IS_A_PATH})") from None
        raise


def deliver(counts: np.ndarray, out: Any, accumulate: bool, on_device: bool) -> Any:
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

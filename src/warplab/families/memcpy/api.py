"""Batched copies: ``copy_batched`` (lists of arrays), ``memcpy_batched`` (CUB's pointer form),
``concatenate`` and ``split`` (NumPy's, in one launch).

Variants: ``warplab.variants("memcpy_batched")``: ``warp_tiers_windows`` (the default:
``warp_tiers_words`` behind destination windows: a large batch of tiny buffers whose
destinations are scattered over more than the L2 is grouped by destination window on the
device first, so their partly written sectors meet in L2), ``warp_tiers_words`` (size
classes per warp, each size range copied its measured-best way, misaligned tiny buffers as one
byte stream per warp), ``warp_classes`` (size classes per warp, no block-wide partition),
``warp_classes_stream`` (the same, misaligned tiny buffers as one byte stream per warp),
``warp_tiers`` (the same with a second group tier of whole warps up to 1 KiB and every tiny
buffer one aligned move cannot copy streamed) (cuda, ``warp_variants.py``; the default in
``windows.py``), ``size_classes_tuned``
(the block-wide partition, tuned), ``size_classes`` (CUB's DeviceBatchMemcpy design),
``warp_per_buffer``, ``block_per_buffer``, ``loop_memcpy_async`` (cuda, ``cuda.py``) and
``numpy`` (cpu, ``cpu.py``).

Every call takes one path: its input normalised and checked, a key formed, the plan of the key
looked up (``plan.py`` builds it on a miss: every check and decision, backend, variant, the
``args_table`` launch) and run.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from warplab.core import overrides, registry as _registry
from warplab.core.device import device_errors
from warplab.core.errors import InvalidTypeError, InvalidValueError
from warplab.families.memcpy import host, table_cuda
from warplab.families.memcpy.plan import (
    DEFAULT,
    PLANS,
    CopyConfig,
    ShapedPlan,
    decide,
    decide_pointers,
    run,
    run_pointers,
)
from warplab.families.memcpy.spec import Plan as Layout, concat_plan, split_plan
from warplab.families.memcpy.transfer import (
    address,
    check_overlap,
    device_table,
    host_pointers,
    require_contiguous,
    side,
)

#: The ``device`` arguments under which NumPy arrays take the cpu backend's own run
#: (``host.py``): the default, and the cpu backend named (a host call that is not the host
#: run's returns nothing there and takes the planned path, whose checks raise for device
#: arrays).
_HOST_RUN = (None, "cpu")


def _as_list(x: Any, what: str) -> list[Any]:
    if type(x) is list:  # read, never changed: no copy
        return x
    if not isinstance(x, (list, tuple)):
        raise InvalidTypeError(f"{what} must be a list or tuple of arrays, got {type(x).__name__}")
    return list(x)


def _refuse_dispatched(public: str, *sides: Any) -> None:
    """``InvalidTypeError`` for input NumPy would dispatch elsewhere (a masked array, an
    ndarray subclass, an ``__array_function__`` object: ``core/overrides.py``): the batched
    copies have no NumPy counterpart to hand it to. Checked off the fast paths."""
    for arrays in sides:
        if overrides.first_kind(arrays) is not None:
            x = next(a for a in arrays if a is not None and overrides.kind(a) is not None)
            raise overrides.refuse(public, x)


def _no_objects(arrays: list[Any]) -> None:
    for a in arrays:
        if np.dtype(a.dtype).hasobject:
            raise InvalidTypeError("object arrays hold references, not bytes: batched copies take "
                            "numeric, boolean or structured arrays of plain data")


def _pairs(srcs: list[Any], dsts: list[Any]) -> tuple[list[Any], list[Any], bool]:
    """``copy_batched``'s arrays normalised (NumPy, or CuPy on the current device) and
    checked: one side, C-contiguous, equal byte sizes, writable, plain data. Raises what the
    call raises."""
    srcs, on_src = side(srcs, "srcs")
    dsts, on_dst = side(dsts, "dsts")
    if on_src != on_dst:
        raise InvalidValueError("srcs and dsts must both be on the host or both on the GPU")
    for i, (s, d) in enumerate(zip(srcs, dsts)):
        require_contiguous(s, f"srcs[{i}]")
        require_contiguous(d, f"dsts[{i}]")
        if s.nbytes != d.nbytes:
            raise InvalidValueError(f"srcs[{i}] has {s.nbytes} bytes, dsts[{i}] has {d.nbytes}")
        if not on_dst and not d.flags.writeable:
            raise InvalidValueError(f"dsts[{i}] is read-only")
    _no_objects(srcs)
    _no_objects(dsts)
    return srcs, dsts, on_src


@device_errors
def copy_batched(srcs: Sequence[Any], dsts: Sequence[Any], *, variant: str | None = None,
                 device: str | None = None) -> None:
    """Copy ``srcs[i]`` into ``dsts[i]`` byte for byte, for every i, in one launch.

    Args:
        srcs: a list or tuple of C-contiguous arrays: all NumPy (runs on the cpu backend) or
            all on the current GPU (CuPy, or anything with ``__cuda_array_interface__``).
        dsts: as many C-contiguous, writable arrays on the same side; ``dsts[i].nbytes ==
            srcs[i].nbytes`` (dtypes and shapes may differ: the bytes are copied).
        variant: a ``memcpy_batched`` variant (``warplab.variants("memcpy_batched")``).
        device: ``"cuda"`` or ``"cpu"``; must match where the arrays are.

    Raises:
        TypeError: not a list/tuple, or an element that is not an array.
        ValueError: lengths or byte sizes differ; a non-contiguous or read-only array; host
            and device arrays mixed, or an array on another GPU; a destination overlapping a
            source or another destination (checked on the host, sorted intervals, O(n log n)).
            Nothing is written when an error is raised.

    Performance:
        Device: the arrays read and checked, the overlap test and the address table in one
        call of the C helper built with the package (``transfer.device_table``; a few
        attribute reads per array), the plan looked up (key: side, buffer count, size
        classes, options, device: ``plan.py``); up to 32 buffers of at most 16 KiB (no
        ``variant``/``device``): one launch whose parameter is the address table
        (``args_table``, ``table_cuda.py``), which, once a call has planned it on the
        device, the same C call makes (no key, no lookup, no Python launch); otherwise one
        H2D copy of the table from pinned memory and the default variant's launches (one
        when no buffer exceeds 8 KiB, else two), which read 24 bytes per buffer and every
        byte once. No host synchronisation (a fifth call while four copies are still queued
        waits for the first). Host (NumPy arrays): every pair checked, then copied, in one
        call of the C helper built with the package (``memcpy/host.py``; whole-list checks
        and ``np.copyto`` where it is not).
    """
    copy_pairs(srcs, dsts, variant, device, DEFAULT)


def copy_pairs(srcs: Sequence[Any], dsts: Sequence[Any], variant: str | None,
               device: str | None, config: CopyConfig) -> None:
    """:func:`copy_batched` with the plan configuration ``config`` (tuning runs pass another,
    e.g. ``CopyConfig(table_buffers=0)`` for the pinned ring at every size): input read and
    checked, key, plan (``plan.decide`` on a miss), overlap test, run."""
    srcs, dsts = _as_list(srcs, "srcs"), _as_list(dsts, "dsts")
    if len(srcs) != len(dsts):
        raise InvalidValueError(f"srcs has {len(srcs)} arrays, dsts has {len(dsts)}")
    if not srcs:
        return
    if variant is None and device in _HOST_RUN and config is DEFAULT \
            and host.copy_pairs(srcs, dsts):
        return
    # CuPy arrays on the current device, checked in C; a batch of args_table's launched there
    read = device_table(srcs, dsts, config.table_buffers if variant is None and device is None
                        and 0 < config.table_buffers <= table_cuda.MAX_BUFFERS else 0)
    if read is True:
        _registry.ran(table_cuda.ARGS_TABLE)
        return
    if read is None:
        _refuse_dispatched("copy_batched", srcs, dsts)
        srcs, dsts, on_device = _pairs(srcs, dsts)
        sp, dp = [address(a) for a in srcs], [address(a) for a in dsts]
        sz = [a.nbytes for a in srcs]
        largest, total, where, table = max(sz), sum(sz), _where(on_device), None
    else:
        sp, dp, sz = [], [], []
        table, largest, total, where = read
    key = ("pairs", where, len(srcs), (largest - 1).bit_length(), (total - 1).bit_length(),
           variant, device, _registry.generation, config)
    plan = PLANS.get(key)
    if plan is None:
        plan = PLANS.put(key, decide(where is not None, len(srcs), total, largest, variant,
                                     device, config))
    if table is None:  # else checked with the table
        check_overlap(sp, dp, sz)
    if plan.table is not None:  # args_table: the table is the launch's parameter
        _registry.ran(plan.variant)
        table_cuda.copy(plan.table, table_cuda.pack(sp, dp, sz) if table is None else table,
                        len(srcs))
        return
    run(plan, sp, dp, sz, largest, (srcs, dsts), table=table)


def _device_arrays(given: tuple[Any, Any, Any]) -> tuple[Any, Any, Any]:
    """``memcpy_batched``'s arrays as CuPy arrays; ``TypeError`` for one that is not on a
    device."""
    for name, a in zip(("src_ptrs", "dst_ptrs", "sizes"), given):
        if not hasattr(a, "__cuda_array_interface__"):
            raise InvalidTypeError(f"{name} must be a device (CuPy) array, got {type(a).__name__}; "
                            "for host arrays use warplab.copy_batched")
    import cupy

    return tuple(cupy.asarray(a) for a in given)


@device_errors
def memcpy_batched(src_ptrs: Any, dst_ptrs: Any, sizes: Any, *, variant: str | None = None,
                   check: bool = False) -> None:
    """CUB's ``DeviceMemcpy::Batched`` form: copy ``sizes[i]`` bytes from address
    ``src_ptrs[i]`` to ``dst_ptrs[i]`` for every i, on the current GPU and stream.

    Args:
        src_ptrs, dst_ptrs: 1-D device arrays of addresses (uint64 or int64), equal length.
        sizes: 1-D device array of byte counts (any integer dtype; int32 and the like are
            widened on the device first: one extra launch).
        variant: a cuda variant of ``memcpy_batched``.
        check: also check on the host that no size is negative and no destination overlaps
            a source or another destination (copies the three arrays to the host: one
            synchronisation).

    Overlap of a destination with a source or another destination is undefined behaviour
    (as in CUB) unless ``check=True``. Without ``check`` a negative size copies nothing (the
    kernels read sizes as signed 64-bit: a uint64 size of 2^63 or more counts as negative).
    Nothing is checked on the device that would need a synchronisation.

    Raises:
        TypeError: host arrays (use :func:`copy_batched` for NumPy data), a non-integer dtype.
        ValueError: lengths differ, arrays not 1-D, a cpu variant; with ``check``, a negative
            size or an overlap (nothing written).

    Performance:
        No Python loop over buffers, no host synchronisation (without ``check``): up to 32
        buffers (no ``variant``) one launch whose blocks each walk the table and copy every
        grid-th 64 KiB chunk of the batch (``table_walk``, ``table_cuda.py``); more, the
        default variant's two launches, which read 24 bytes per buffer and every byte once
        (the BLEV queue is the stream's, zeroed by the kernels: no allocation up to 65,536
        buffers, no memset). The decision (checks, variant, whether the arrays need
        converting) is a plan per key (each array's dtype, shape and contiguity, ``variant``,
        the device): a warm call on 1-D C-contiguous CuPy arrays of 8-byte integers is the
        key, one lookup and the launches.
    """
    cp = sys.modules.get("cupy")
    nd = cp.ndarray if cp is not None else None
    if not (type(src_ptrs) is nd and type(dst_ptrs) is nd and type(sizes) is nd):
        _refuse_dispatched("memcpy_batched", [src_ptrs, dst_ptrs, sizes])
        src_ptrs, dst_ptrs, sizes = _device_arrays((src_ptrs, dst_ptrs, sizes))
        cp = sys.modules["cupy"]
    s, d, n = src_ptrs, dst_ptrs, sizes
    key = ("pointers", s.dtype, s.shape, s._c_contiguous, d.dtype, d.shape, d._c_contiguous,
           n.dtype, n.shape, n._c_contiguous, variant, _registry.generation,
           sys.modules["cupy"].cuda.runtime.getDevice())
    plan = PLANS.get(key)
    if plan is None:
        plan = PLANS.put(key, decide_pointers(s, d, n, variant))
    run_pointers(plan, s, d, n, check, cp)


def _homogeneous(arrays: list[Any], what: str) -> tuple[list[Any], bool, Any]:
    """NumPy's array_likes (lists, scalars) where no array is on the GPU; then :func:`side`."""
    if not any(hasattr(a, "__cuda_array_interface__") for a in arrays):
        arrays = [np.asarray(a) for a in arrays]
    arrays, on_device = side(arrays, what)
    if on_device:
        import cupy

        return arrays, True, cupy
    return arrays, False, np


@device_errors
def concatenate(arrays: Sequence[Any], axis: int | None = 0, *, variant: str | None = None,
                device: str | None = None) -> Any:
    """``np.concatenate(arrays, axis)``: one batched copy of every array's row blocks.

    NumPy's semantics: equal shapes except along ``axis`` (negative counts from the end;
    ``None`` flattens every array first), the result dtype ``np.result_type`` of the inputs.
    NumPy arrays in, NumPy out; GPU arrays in, CuPy out.

    Raises:
        ValueError: no arrays, zero-dimensional arrays, different numbers of dimensions or
            shapes, host and GPU arrays mixed; ``numpy.exceptions.AxisError`` for a bad axis.

    Performance:
        Along axis 0: one buffer per array; along axis k: one per (index of the axes before
        k, array). One H2D copy of the plan and the variant's launches; inputs that are not
        C-contiguous or not of the result dtype are converted first (one extra pass each).
    """
    arrays = _as_list(arrays, "arrays")
    if not arrays:
        raise InvalidValueError("need at least one array to concatenate")
    if variant is None and device in _HOST_RUN:
        h_out = host.concatenate(arrays, axis)
        if h_out is not None:
            return h_out
    o = overrides.first_kind(arrays)
    if o == "masked":
        x = next(a for a in arrays if overrides.kind(a) == "masked")
        raise overrides.refuse("concatenate", x, "NumPy's concatenate drops the mask "
                               "(numpy.ma.concatenate keeps it)")
    if o is not None:
        return overrides.defer("concatenate", o, np.concatenate, (arrays,), {"axis": axis},
                               {"variant": variant, "device": device})
    arrays, on_device, xp = _homogeneous(arrays, "arrays")
    if axis is None:
        arrays, axis = [a.reshape(-1) for a in arrays], 0
    key = ("concatenate", _where(on_device), axis, tuple([(a.shape, a.dtype) for a in arrays]),
           variant, device, _registry.generation)
    plan = _planned(key, lambda: _concat_plan(arrays, axis, on_device, variant, device))
    arrays = [xp.ascontiguousarray(a, dtype=plan.dtype) for a in arrays]
    out = xp.empty(plan.shapes[0], dtype=plan.dtype)
    src, dst, sizes = host_pointers(arrays, [out], plan.layout)
    run(plan.copy, src, dst, sizes, plan.largest, (arrays, [out]), plan.layout)
    return out


def _where(on_device: bool) -> int | None:
    """The current device (device arrays) or None (host arrays): a key's side."""
    return sys.modules["cupy"].cuda.runtime.getDevice() if on_device else None


def _planned(key: tuple, build: Callable[[], ShapedPlan]) -> ShapedPlan:
    """The plan of ``key``, built on a miss; an option that cannot be a key (unhashable)
    goes to ``build``, which raises what the call raises."""
    try:
        plan = PLANS.get(key)
    except TypeError:
        return build()
    return plan if plan is not None else PLANS.put(key, build())


def _shaped(layout: Layout, shapes: tuple[tuple[int, ...], ...], dtype: np.dtype,
            on_device: bool, variant: str | None, device: str | None) -> ShapedPlan:
    """The plan of ``concatenate`` or ``split``: plain data only, then the copy's decision."""
    if dtype.hasobject:
        raise InvalidTypeError("object arrays hold references, not bytes: batched copies take "
                        "numeric, boolean or structured arrays of plain data")
    count = layout.count
    largest = int(layout.size.max()) if count else 0
    copy = decide(on_device, count, int(layout.size.sum()), largest, variant, device, None)
    return ShapedPlan(copy, layout, largest, shapes, dtype)


def _concat_plan(arrays: Sequence[Any], axis: Any, on_device: bool, variant: str | None,
                 device: str | None) -> ShapedPlan:
    """``concatenate``'s checks (NumPy's errors), result shape and dtype, buffers and copy."""
    if any(a.ndim == 0 for a in arrays):
        raise InvalidValueError("zero-dimensional arrays cannot be concatenated")
    ndim = arrays[0].ndim
    for i, a in enumerate(arrays):
        if a.ndim != ndim:
            raise InvalidValueError(f"all the input arrays must have same number of dimensions: "
                             f"arrays[0] has {ndim}, arrays[{i}] has {a.ndim}")
    axis = normalize_axis_index(axis, ndim)
    shape0 = arrays[0].shape
    for i, a in enumerate(arrays):
        if a.shape[:axis] + a.shape[axis + 1:] != shape0[:axis] + shape0[axis + 1:]:
            raise InvalidValueError(f"all the input array dimensions except for the concatenation "
                             f"axis must match exactly: arrays[0] has shape {shape0}, "
                             f"arrays[{i}] has {a.shape} (axis {axis})")
    dtype = np.result_type(*[a.dtype for a in arrays])
    shape = list(shape0)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    layout = concat_plan([a.shape for a in arrays], axis, dtype.itemsize)
    return _shaped(layout, (tuple(shape),), dtype, on_device, variant, device)


@device_errors
def split(ary: Any, indices_or_sections: Any, axis: int = 0, *, copy: bool = False,
          variant: str | None = None, device: str | None = None) -> list[Any]:
    """``np.split(ary, indices_or_sections, axis)``; with ``copy=True`` every piece is its own
    C-contiguous array, all filled by one batched copy.

    ``copy=False`` returns views, as NumPy (no copy at all: NumPy's or CuPy's ``split``).
    ``indices_or_sections``: NumPy's (an int that divides the axis, or sorted split indices).

    Raises:
        ValueError: NumPy's (sections that do not divide the axis equally); AxisError.

    Performance (``copy=True``): one buffer per (index of the axes before ``axis``, piece);
    a non-contiguous input is made contiguous first (one extra pass).
    """
    if type(ary) is not np.ndarray:
        o = overrides.kind(ary)
        if o is not None:  # NumPy's split keeps masks and subclasses (views of the input)
            return overrides.defer("split", o, np.split, (ary, indices_or_sections),
                                   {"axis": axis},
                                   {"copy": copy, "variant": variant, "device": device})
    if not copy:
        if isinstance(ary, np.ndarray):
            return np.split(ary, indices_or_sections, axis)
        (a,), _, xp = _homogeneous([ary], "ary")
        return xp.split(a, indices_or_sections, axis)
    if variant is None and device in _HOST_RUN:
        h_pieces = host.split(ary, indices_or_sections, axis)
        if h_pieces is not None:
            return h_pieces
    (a,), on_device, xp = _homogeneous([ary], "ary")
    axis = normalize_axis_index(axis, a.ndim)
    widths = tuple(len(p) for p in np.split(np.arange(a.shape[axis]), indices_or_sections))
    key = ("split", _where(on_device), a.shape, a.dtype, axis, widths, variant, device,
           _registry.generation)
    plan = _planned(key, lambda: _shaped(
        split_plan(a.shape, axis, list(widths), a.dtype.itemsize),
        tuple((*a.shape[:axis], w, *a.shape[axis + 1:]) for w in widths), a.dtype,
        on_device, variant, device))
    a = xp.ascontiguousarray(a)
    pieces = [xp.empty(s, dtype=plan.dtype) for s in plan.shapes]
    src, dst, sizes = host_pointers([a], pieces, plan.layout)
    run(plan.copy, src, dst, sizes, plan.largest, ([a], pieces), plan.layout)
    return pieces

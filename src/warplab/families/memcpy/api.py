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
buffer one aligned move cannot copy streamed),
``size_classes_tuned``
(the block-wide partition, tuned), ``size_classes`` (the batch-memcpy PR's design),
``warp_per_buffer``, ``block_per_buffer``, ``loop_memcpy_async`` (cuda, ``cuda.py``) and
``numpy`` (cpu, ``cpu.py``).
"""
from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from warplab.core import fastpath, registry as _registry
from warplab.core.device import device_errors
from warplab.families.memcpy import table_cuda
from warplab.families.memcpy.cuda import DeviceBatch
from warplab.families.memcpy.spec import MemcpyProblem, Plan, concat_plan, pairwise_plan, split_plan
from warplab.families.memcpy.transfer import (check_overlap, device_pointers, host_pointers, require_contiguous,
                       send_batch, side)

FAMILY = "memcpy_batched"
#: The cuda variant dispatch chooses per (problem, registry generation) on the short paths: a
#: variant registered later is never missed.
_CHOICES = fastpath.PlanCache("memcpy.choice")
#: The address and size dtypes the kernels read as they are (the pointer form's short path).
_WORDS = frozenset((np.dtype(np.uint64), np.dtype(np.int64)))


def _choice(problem: MemcpyProblem) -> Any:
    """``registry.choose`` of the cuda backend for ``problem``, cached."""
    key = (problem, _registry.generation)
    v = _CHOICES.get(key)
    if v is None:
        v = _CHOICES.put(key, _registry.choose(FAMILY, "cuda", problem))
    return v


def _as_list(x: Any, what: str) -> list[Any]:
    if not isinstance(x, (list, tuple)):
        raise TypeError(f"{what} must be a list or tuple of arrays, got {type(x).__name__}")
    return list(x)


def _backend(on_device: bool, variant: str | None, device: str | None) -> str:
    """The arrays' side decides (host arrays: cpu, GPU arrays: cuda); ``device=`` and a named
    variant must agree with it."""
    backend = "cuda" if on_device else "cpu"
    if variant is not None or device is not None:
        backend = _registry.pick_backend(FAMILY, device, variant, on_device)
    if on_device and backend == "cpu":
        raise ValueError("the arrays are on the GPU: batched copies of device arrays run on "
                         "the cuda backend (device='cuda' or a cuda variant)")
    if not on_device and backend == "cuda":
        raise ValueError("the arrays are NumPy arrays on the host: they run on the cpu backend "
                         "(copy them to the GPU first to use a cuda variant)")
    return backend


def _execute(srcs: list[Any], dsts: list[Any], plan: Plan, on_device: bool,
             variant: str | None, device: str | None, check: bool = True) -> None:
    """Run a plan: choose the backend and variant, check for overlap, copy."""
    for a in (*srcs, *dsts):
        if np.dtype(a.dtype).hasobject:
            raise TypeError("object arrays hold references, not bytes: batched copies take "
                            "numeric, boolean or structured arrays of plain data")
    backend = _backend(on_device, variant, device)
    src, dst, sizes = host_pointers(srcs, dsts, plan)
    if check:
        check_overlap(src, dst, sizes)
    problem = MemcpyProblem(plan.count, int(plan.size.sum()),
                            int(plan.size.max()) if plan.count else 0, on_device)
    v = _registry.choose(FAMILY, backend, problem, variant)
    _registry.ran(v)
    if plan.count == 0:
        return
    if backend == "cpu":
        v.fn([a.reshape(-1).view(np.uint8) for a in srcs],
             [a.reshape(-1).view(np.uint8) for a in dsts], plan)
    else:
        v.fn(send_batch(src, dst, sizes, problem.largest))


#: Batches of at most this many buffers, none above ``table_cuda.MAX_BYTES``, go with their
#: address table as the launch's parameter (``table_cuda``); 0 turns that path off (the ring).
TABLE_BUFFERS = table_cuda.MAX_BUFFERS


def _copy_on_device(src: list[int], dst: list[int], sizes: list[int]) -> None:
    """The short path of ``copy_batched`` for CuPy arrays on the current device whose
    addresses and sizes ``device_pointers`` read: the full path's overlap check (a sweep in
    Python for few buffers), then for a few small buffers one launch with the table as its
    parameter (``args_table``), else the dispatch (cached per problem) and one H2D copy of the
    table; no plan, no NumPy address arithmetic, no per-array checks beyond that one pass."""
    check_overlap(src, dst, sizes)
    largest = max(sizes)
    if len(sizes) <= TABLE_BUFFERS and table_cuda.fits(len(sizes), largest):
        _registry.ran(table_cuda.ARGS_TABLE)
        table_cuda.copy(src, dst, sizes)
        return
    problem = MemcpyProblem(len(sizes), sum(sizes), largest, True)
    v = _choice(problem)
    _registry.ran(v)
    v.fn(send_batch(src, dst, sizes, problem.largest))


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
        Device: addresses and sizes read on the host in one pass (a few attribute reads per
        array) and the overlap test; up to 32 buffers of at most 16 KiB (CuPy arrays, no
        ``variant``/``device``): one launch whose parameter is the address table
        (``args_table``, ``table_cuda.py``); otherwise one H2D copy of the table from pinned
        memory and the default variant's launches (one when no buffer exceeds 8 KiB, else
        two), which read 24 bytes per buffer and every byte once. No host synchronisation (a
        fifth call while four copies are still queued waits for the first).
    """
    srcs, dsts = _as_list(srcs, "srcs"), _as_list(dsts, "dsts")
    if len(srcs) != len(dsts):
        raise ValueError(f"srcs has {len(srcs)} arrays, dsts has {len(dsts)}")
    if not srcs:
        return
    if variant is None and device is None:
        table = device_pointers(srcs, dsts)
        if table is not None:
            return _copy_on_device(*table)
    srcs, on_src = side(srcs, "srcs")
    dsts, on_dst = side(dsts, "dsts")
    if on_src != on_dst:
        raise ValueError("srcs and dsts must both be on the host or both on the GPU")
    nbytes = []
    for i, (s, d) in enumerate(zip(srcs, dsts)):
        require_contiguous(s, f"srcs[{i}]")
        require_contiguous(d, f"dsts[{i}]")
        n = s.nbytes
        if n != d.nbytes:
            raise ValueError(f"srcs[{i}] has {n} bytes, dsts[{i}] has {d.nbytes}")
        if not on_dst and not d.flags.writeable:
            raise ValueError(f"dsts[{i}] is read-only")
        nbytes.append(n)
    sizes = np.array(nbytes, dtype=np.int64)
    _execute(srcs, dsts, pairwise_plan(sizes), on_src, variant, device)


def _pointers_short(src: Any, dst: Any, n: Any) -> bool:
    """The short path of ``memcpy_batched`` (no ``check``, no ``variant``) for CuPy arrays:
    the full path's checks as attribute reads (1-D, equal lengths, C-contiguous, 8-byte
    integers: nothing to convert), the dispatch cached per count, then the variant's launches.
    False where any check fails: the full path then converts, or raises what it raises."""
    count = src.size
    if not (src.ndim == 1 and dst.ndim == 1 and n.ndim == 1 and dst.size == count
            and n.size == count and src._c_contiguous and dst._c_contiguous
            and n._c_contiguous and src.dtype in _WORDS and dst.dtype in _WORDS
            and n.dtype in _WORDS):
        return False
    v = _choice(MemcpyProblem(count, None, None, True))
    _registry.ran(v)
    v.fn(DeviceBatch(src, dst, n, count, None))
    return True


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
        No Python loop over buffers, no host synchronisation (without ``check``): the default
        variant's two launches read 24 bytes per buffer and every byte once (the BLEV queue
        is the stream's, zeroed by the kernels: no allocation up to 65,536 buffers, no
        memset). CuPy arrays that need no conversion take a short path: a few attribute
        reads and one cached dispatch decision before the launches.
    """
    cp = sys.modules.get("cupy")
    if (not check and variant is None and cp is not None and type(src_ptrs) is cp.ndarray
            and type(dst_ptrs) is cp.ndarray and type(sizes) is cp.ndarray
            and _pointers_short(src_ptrs, dst_ptrs, sizes)):
        return
    given = (("src_ptrs", src_ptrs), ("dst_ptrs", dst_ptrs), ("sizes", sizes))
    for name, a in given:
        if not hasattr(a, "__cuda_array_interface__"):
            raise TypeError(f"{name} must be a device (CuPy) array, got {type(a).__name__}; "
                            "for host arrays use warplab.copy_batched")
    import cupy

    arrays = []
    for name, a in given:
        a = cupy.asarray(a)
        if a.ndim != 1:
            raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
        if a.dtype.kind not in "iu":
            raise TypeError(f"{name} must hold integers, got dtype {a.dtype}")
        arrays.append(a)
    src, dst, n = arrays
    if not src.size == dst.size == n.size:
        raise ValueError(f"src_ptrs, dst_ptrs and sizes have {src.size}, {dst.size} and "
                         f"{n.size} entries")
    for name, a in (("src_ptrs", src), ("dst_ptrs", dst)):
        if a.dtype.itemsize != 8:
            raise TypeError(f"{name} must be uint64 or int64 addresses, got dtype {a.dtype}")
    src = cupy.ascontiguousarray(src).view(np.uint64)
    dst = cupy.ascontiguousarray(dst).view(np.uint64)
    n = cupy.ascontiguousarray(n if n.dtype.itemsize == 8 else n.astype(np.int64))
    backend = _registry.pick_backend(FAMILY, "cuda", variant, True)
    host = None
    data = largest = None
    if check:
        host = (src.get(), dst.get(), n.get())
        if host[2].size and host[2].astype(np.int64).min() < 0:
            raise ValueError("sizes holds a negative size; nothing was copied")
        check_overlap(*host)
        data = int(host[2].astype(np.int64).sum())
        largest = int(host[2].astype(np.int64).max()) if host[2].size else 0
    v = _registry.choose(FAMILY, backend, MemcpyProblem(int(src.size), data, largest, True),
                         variant)
    _registry.ran(v)
    v.fn(DeviceBatch(src, dst, n, int(src.size), host, largest))


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
        raise ValueError("need at least one array to concatenate")
    arrays, on_device, xp = _homogeneous(arrays, "arrays")
    if axis is None:
        arrays, axis = [a.reshape(-1) for a in arrays], 0
    if any(a.ndim == 0 for a in arrays):
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    ndim = arrays[0].ndim
    for i, a in enumerate(arrays):
        if a.ndim != ndim:
            raise ValueError(f"all the input arrays must have same number of dimensions: "
                             f"arrays[0] has {ndim}, arrays[{i}] has {a.ndim}")
    axis = normalize_axis_index(axis, ndim)
    shape0 = arrays[0].shape
    for i, a in enumerate(arrays):
        if a.shape[:axis] + a.shape[axis + 1:] != shape0[:axis] + shape0[axis + 1:]:
            raise ValueError(f"all the input array dimensions except for the concatenation "
                             f"axis must match exactly: arrays[0] has shape {shape0}, "
                             f"arrays[{i}] has {a.shape} (axis {axis})")
    dtype = np.result_type(*[a.dtype for a in arrays])
    arrays = [xp.ascontiguousarray(a, dtype=dtype) for a in arrays]
    shape = list(shape0)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    out = xp.empty(tuple(shape), dtype=dtype)
    plan = concat_plan([a.shape for a in arrays], axis, dtype.itemsize)
    _execute(arrays, [out], plan, on_device, variant, device, check=False)
    return out


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
    if not copy:
        if isinstance(ary, np.ndarray):
            return np.split(ary, indices_or_sections, axis)
        (a,), _, xp = _homogeneous([ary], "ary")
        return xp.split(a, indices_or_sections, axis)
    (a,), on_device, xp = _homogeneous([ary], "ary")
    axis = normalize_axis_index(axis, a.ndim)
    a = xp.ascontiguousarray(a)
    widths = [len(p) for p in np.split(np.arange(a.shape[axis]), indices_or_sections)]
    shapes = [a.shape[:axis] + (w,) + a.shape[axis + 1:] for w in widths]
    pieces = [xp.empty(s, dtype=a.dtype) for s in shapes]
    plan = split_plan(a.shape, axis, widths, a.dtype.itemsize)
    _execute([a], pieces, plan, on_device, variant, device, check=False)
    return pieces




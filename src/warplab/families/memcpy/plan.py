"""The batched copies' one decision, made once per key and cached (``memcpy.plan``): which
backend and variant copy a batch, and for a few small device buffers of ``copy_batched`` the
prepared launch of ``args_table`` (the address table as the launch's parameter,
``table_cuda.py``). ``api.py`` normalises every public call's input, forms the key, looks the
plan up (building it here on a miss) and runs it (:func:`run`).

The keys (``api.py`` forms them; each starts with the call's form):

* ``copy_batched``: the side (host, or the current device), the buffer count, the
  power-of-two classes of the largest buffer and of all bytes (``(n - 1).bit_length()``: the
  table's 16 KiB limit and the kernels' warp limits are class boundaries), ``variant``,
  ``device``, the registry's generation (a variant registered later is chosen by the next
  call) and the :class:`CopyConfig`;
* ``memcpy_batched``: each array's dtype, shape and contiguity, ``variant``, the registry's
  generation, the current device;
* ``concatenate``: the side, ``axis``, each array's shape and dtype, ``variant``, ``device``,
  the generation; ``split``: the side, the array's shape and dtype, the axis, the pieces'
  widths, ``variant``, ``device``, the generation.

A variant's ``supports`` sees the first problem of its key (the registered variants look at
the buffer count only). The overlap check, the upload of the address table and everything
that reads the sizes' values run on every call, in :func:`run` and the variants. Errors are
raised by the builders and never cached.
"""
from __future__ import annotations

from typing import Any, NamedTuple, cast

import numpy as np

from warplab.core import fastpath, registry as _registry
from warplab.core.errors import InvalidTypeError, InvalidValueError
from warplab.core.launch import Prepared
from warplab.families.memcpy import table_cuda
from warplab.families.memcpy.cuda import DeviceBatch, sms
from warplab.families.memcpy.spec import Addresses, MemcpyProblem, Plan as Layout, pairwise_plan
from warplab.families.memcpy.transfer import check_overlap, send_batch

FAMILY = "memcpy_batched"
#: The plans of every public call, per key (the keys start with the call's form: ``"pairs"``,
#: ``"pointers"``, ``"concatenate"``, ``"split"``).
PLANS = fastpath.PlanCache("memcpy.plan")
#: The address and size dtypes the kernels read as they are (the pointer form).
WORDS = frozenset((np.dtype(np.uint64), np.dtype(np.int64)))


class CopyConfig(NamedTuple):
    """What a tuning run may vary in ``copy_batched``'s plans (``api.copy_pairs``; part of the
    plan key).

    Attributes:
        table_buffers: batches of device pairs of at most this many buffers (at most
            ``table_cuda.MAX_BUFFERS``), none above ``table_cuda.MAX_BYTES``, go with their
            address table as the launch's parameter (``args_table``); 0: never (the pinned
            ring and the registry's variant).
    """

    table_buffers: int = table_cuda.MAX_BUFFERS


DEFAULT = CopyConfig()


class CopyPlan(NamedTuple):
    """What a list form's key runs: the variant and its backend, and for ``args_table`` its
    prepared launch on the key's device."""

    variant: _registry.Variant
    backend: str
    table: Prepared | None = None


class PointerPlan(NamedTuple):
    """What a key of ``memcpy_batched`` runs: the variant, whether the three arrays go to it
    as they are (1-D, C-contiguous, 8-byte integers) or are converted first, and for a few
    buffers (no ``variant``) the prepared launch of ``table_walk`` on the key's device."""

    variant: _registry.Variant
    convert: bool
    walk: Prepared | None = None


class ShapedPlan(NamedTuple):
    """What a key of ``concatenate`` or ``split`` runs: the copy, its buffers (a layout of
    (array, offset) pairs, ``spec.Plan``), the largest buffer, the result shapes and dtype."""

    copy: CopyPlan
    layout: Layout
    largest: int
    shapes: tuple[tuple[int, ...], ...]
    dtype: np.dtype


def backend_of(on_device: bool, variant: str | None, device: str | None) -> str:
    """The arrays' side decides (host arrays: cpu, GPU arrays: cuda); ``device=`` and a named
    variant must agree with it."""
    backend = "cuda" if on_device else "cpu"
    if variant is not None or device is not None:
        backend = _registry.pick_backend(FAMILY, device, variant, on_device)
    if on_device and backend == "cpu":
        raise InvalidValueError("the arrays are on the GPU: batched copies of device arrays run on "
                         "the cuda backend (device='cuda' or a cuda variant)")
    if not on_device and backend == "cuda":
        raise InvalidValueError(
            "the arrays are NumPy arrays on the host: they run on the cpu backend "
            "(copy them to the GPU first to use a cuda variant)")
    return backend


def decide(on_device: bool, count: int, data: int, largest: int, variant: str | None,
           device: str | None, config: CopyConfig | None) -> CopyPlan:
    """The one decision of the list forms: backend, then ``args_table`` where ``config``
    allows it (``copy_batched``'s device pairs with no ``variant``/``device``, up to
    ``config.table_buffers`` buffers none above ``table_cuda.MAX_BYTES``; ``config`` None:
    never), else the registry's variant for the problem. Raises what the call raises for
    a backend that does not match the arrays or a variant that does not take the problem."""
    if config is not None and not 0 <= config.table_buffers <= table_cuda.MAX_BUFFERS:
        raise InvalidValueError(f"table_buffers must be 0..{table_cuda.MAX_BUFFERS}, got "
                         f"{config.table_buffers}")
    backend = backend_of(on_device, variant, device)
    if (config is not None and on_device and variant is None and device is None
            and count <= config.table_buffers and table_cuda.fits(count, largest)):
        return CopyPlan(table_cuda.ARGS_TABLE, "cuda", table_cuda.prepared())
    problem = MemcpyProblem(count, data, largest, on_device)
    return CopyPlan(_registry.choose(FAMILY, backend, problem, variant), backend)


def run(plan: CopyPlan, src: Addresses, dst: Addresses, sizes: Addresses, largest: int,
        arrays: tuple[list[Any], list[Any]] | None = None,
        layout: Layout | None = None, table: bytes | None = None) -> None:
    """Run a list form's plan (not ``args_table``'s, which the call launches itself:
    ``api.copy_pairs``) on the buffers at addresses ``src``/``dst`` of ``sizes`` bytes (lists
    of ints or uint64 arrays; ``largest`` the largest size), or on ``table``, the pairs'
    address table read in C (``transfer.device_table``; ``src``/``dst``/``sizes`` are then
    not read): the cpu variant on the ``arrays`` (sources, destinations) as bytes, buffer k
    being ``layout``'s (the pairs', ``pairwise_plan(sizes)``, when None); or one H2D copy of
    the addresses from the pinned ring and the variant's launches."""
    assert plan.table is None, "args_table is launched by the call"
    _registry.ran(plan.variant)
    if table is not None:
        src, dst, sizes = table_cuda.rows(table, len(cast(tuple[list[Any], list[Any]],
                                                          arrays)[0]))
    if not len(sizes):
        return
    if plan.backend == "cpu":
        srcs, dsts = cast(tuple[list[Any], list[Any]], arrays)  # given with the cpu backend
        if layout is None:
            layout = pairwise_plan(np.asarray(sizes, dtype=np.int64))
        plan.variant.fn([a.reshape(-1).view(np.uint8) for a in srcs],
                        [a.reshape(-1).view(np.uint8) for a in dsts], layout)
    else:
        plan.variant.fn(send_batch(src, dst, sizes, largest))


def decide_pointers(src: Any, dst: Any, n: Any, variant: str | None) -> PointerPlan:
    """The one decision of ``memcpy_batched`` on three device arrays: the checks (raising
    what the call raises, in its order), the variant (the sizes are on the device: chosen by
    the buffer count), whether the arrays need converting."""
    for name, a in (("src_ptrs", src), ("dst_ptrs", dst), ("sizes", n)):
        if a.ndim != 1:
            raise InvalidValueError(f"{name} must be 1-D, got shape {a.shape}")
        if a.dtype.kind not in "iu":
            raise InvalidTypeError(f"{name} must hold integers, got dtype {a.dtype}")
    if not src.size == dst.size == n.size:
        raise InvalidValueError(f"src_ptrs, dst_ptrs and sizes have {src.size}, {dst.size} and "
                         f"{n.size} entries")
    for name, a in (("src_ptrs", src), ("dst_ptrs", dst)):
        if a.dtype.itemsize != 8:
            raise InvalidTypeError(f"{name} must be uint64 or int64 addresses, got dtype {a.dtype}")
    backend = _registry.pick_backend(FAMILY, "cuda", variant, True)
    as_they_are = (n.dtype in WORDS and src.flags.c_contiguous and dst.flags.c_contiguous
                   and n.flags.c_contiguous)
    if variant is None and 0 < src.size <= table_cuda.MAX_BUFFERS:
        return PointerPlan(table_cuda.TABLE_WALK, not as_they_are,
                           table_cuda.prepared_walk(sms(src.data.device_id)))
    v = _registry.choose(FAMILY, backend, MemcpyProblem(int(src.size), None, None, True),
                         variant)
    return PointerPlan(v, not as_they_are)


def run_pointers(plan: PointerPlan, src: Any, dst: Any, n: Any, check: bool,
                 cupy: Any) -> None:
    """Run ``memcpy_batched``'s plan: convert the arrays where the plan says so (or
    ``check``); with ``check`` read them on the host (one synchronisation), refuse negative
    sizes and overlaps, and tell the variant the largest size; then the variant's launches."""
    host = largest = None
    if plan.convert or check:
        src = cupy.ascontiguousarray(src).view(np.uint64)
        dst = cupy.ascontiguousarray(dst).view(np.uint64)
        n = cupy.ascontiguousarray(n if n.dtype.itemsize == 8 else n.astype(np.int64))
    if check:
        host = (src.get(), dst.get(), n.get())
        sizes = host[2].astype(np.int64)
        if sizes.size and sizes.min() < 0:
            raise InvalidValueError("sizes holds a negative size; nothing was copied")
        check_overlap(*host)
        largest = int(sizes.max()) if sizes.size else 0
    _registry.ran(plan.variant)
    if plan.walk is not None:
        table_cuda.walk(plan.walk, src, dst, n)
        return
    plan.variant.fn(DeviceBatch(src, dst, n, int(src.size), host, largest))

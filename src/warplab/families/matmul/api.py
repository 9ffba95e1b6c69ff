"""Matrix product ``matmul(a, b)`` of two 2-D float32 / float64 arrays.

Variants: ``warplab.variants("matmul")``: the GPU lecture's ``naive`` and ``tiled_smem16``
kernels, register-tiled kernels (the default ``regtile_64x128_8x8`` for float32,
``regtile_64x64_4x4`` for float64) in ``_matmul_cuda``, and NumPy (``cpu.matmul``). The problem
and the cost models (``flops``, ``bytes_moved`` per variant, the lecture's flop-to-word
analysis) are in ``_matmul_spec``.
"""
from __future__ import annotations

import os
import sys
from typing import Any, NamedTuple

import numpy as np

from warplab.core import fastpath, overrides, registry as _registry
from warplab.core.arrays import as_input, to_device, to_host
from warplab.core.device import device_errors
from warplab.core.errors import InvalidTypeError, InvalidValueError
from warplab.core.launch import Prepared
from warplab.core.outputs import check_out, cupy as _cupy
from warplab.core.scalar import RESULT_TYPES, empty
from warplab.families.matmul.cuda import REGTILES, prepared_regtile
from warplab.families.matmul.spec import DTYPES, MatmulProblem

#: ``matmul``'s plans (:class:`Plan`) per key (:func:`matmul`'s, :func:`_key`'s).
_PLANS = fastpath.PlanCache("matmul.plan")
_TILES = {t.name: t for t in REGTILES}


class Plan(NamedTuple):
    """What a call of one key runs: the variant (and its backend), the result's shape and
    dtype, and where both operands go to the kernel as they are (two C-contiguous CuPy arrays
    of the result dtype on the current device, no ``out``, a register-tiled variant, no empty
    dimension) the prepared launch and its dimension arguments."""

    variant: _registry.Variant
    backend: str
    on_device: bool
    shape: tuple[int, int]
    dtype: np.dtype
    go: Prepared | None = None
    dims: tuple = ()


def result_dtype(a_dtype: Any, b_dtype: Any) -> np.dtype:
    """NumPy's result dtype of ``a @ b`` for float32 / float64 operands; ``TypeError`` else."""
    for dt in (np.dtype(a_dtype), np.dtype(b_dtype)):
        if dt not in DTYPES:
            raise InvalidTypeError(f"matmul supports float32 and float64 arrays, got dtype {dt}")
    return np.result_type(a_dtype, b_dtype)




def _out_key(out: Any) -> Any:
    """What the plan's ``out`` check sees of ``out`` (None when not given)."""
    if out is None:
        return None
    flags = getattr(out, "flags", None)
    return (type(out), getattr(out, "shape", None), getattr(out, "dtype", None),
            getattr(flags, "c_contiguous", None))


def _on_device(x: Any) -> bool:
    """Whether a normalised operand (NumPy or CuPy array) is on the GPU."""
    return hasattr(x, "__cuda_array_interface__")


def _side(x: Any) -> tuple:
    """Where operand ``x`` is, as a key part: the host, or its device and 16-byte
    alignment."""
    if not _on_device(x):
        return (False,)
    return (True, x.data.device_id, x.data.ptr % 16 == 0)


def _key(x: Any, y: Any, out: Any, variant: str | None, device: str | None) -> tuple:
    """The plan key of normalised operands (NumPy or CuPy arrays): dtypes, shapes, strides,
    sides, the current device (device operands), ``WARPLAB_DEVICE`` (host operands: it picks
    their backend), ``out``, ``variant``, ``device``."""
    on_device = _on_device(x) or _on_device(y)
    where = (sys.modules["cupy"].cuda.runtime.getDevice() if on_device
             else os.environ.get("WARPLAB_DEVICE"))
    return (x.dtype, x.shape, x.strides, y.dtype, y.shape, y.strides, _side(x), _side(y),
            where, _out_key(out), variant, device)


@device_errors
def matmul(a: Any, b: Any, *, out: Any = None, variant: str | None = None,
           device: str | None = None) -> Any:
    """The matrix product ``a @ b`` of an ``m x k`` and a ``k x n`` array, like ``np.matmul``.

    Args:
        a, b: 2-D float32 or float64 arrays of any layout: NumPy, CuPy, torch or anything with
            ``__cuda_array_interface__`` / DLPack. Mixed dtypes give float64, as NumPy.
        out: C-contiguous array of shape ``(m, n)`` and the result dtype to write into (NumPy
            for host operands, CuPy when an operand is on the GPU).
        variant: a registered variant (``warplab.variants("matmul")``); default: the fastest
            that supports the problem.
        device: ``"cuda"`` or ``"cpu"``; default automatic (``WARPLAB_DEVICE`` overrides).

    Returns:
        ``(m, n)`` array of the result dtype: NumPy when both operands are on the host, CuPy
        when either is on the GPU (``out`` when given). ``k == 0`` gives zeros, as NumPy.

    Raises:
        TypeError: a dtype other than float32 / float64.  ValueError: operands that are not
        2-D, inner dimensions that differ (the message names both shapes), a bad ``out``, an
        unknown variant or one that does not support the problem.

    Performance:
        ``2 m n k`` flops; bytes per the variant's cost model (``_matmul_spec``). One kernel
        launch. Host operands are copied to the GPU and the result back (synchronising);
        device operands: no host synchronisation. Non-contiguous operands, or operands of the
        other dtype, are copied first. The decision (checks, backend, variant, kernel, grid)
        is a plan cached per key (dtypes, shapes, strides, sides, 16-byte alignment, device,
        ``out``'s shape and dtype, ``variant``, ``device``); two C-contiguous CuPy operands
        of one dtype with a register-tiled variant and no ``out``: a warm call is the key,
        one lookup, one allocation and one launch.
    """
    cp = sys.modules.get("cupy")
    if cp is not None and (type(a) is cp.ndarray or type(a) in RESULT_TYPES) \
            and (type(b) is cp.ndarray or type(b) in RESULT_TYPES):
        da, db = a.data, b.data  # two CuPy operands: _key's key without its frames
        key = (a.dtype, a.shape, a.strides, b.dtype, b.shape, b.strides,
               (True, da.device_id, da.ptr % 16 == 0), (True, db.device_id, db.ptr % 16 == 0),
               cp.cuda.runtime.getDevice(), None if out is None else _out_key(out), variant,
               device)
    else:
        o = None if type(a) is np.ndarray and type(b) is np.ndarray \
            else overrides.first_kind((a, b))
        if o == "masked":
            raise overrides.refuse("matmul", a if overrides.kind(a) else b,
                                   "NumPy's matmul multiplies the masked values too "
                                   "(numpy.ma.dot honours the mask)")
        if o is not None:  # a subclass, __array_function__: NumPy's own matmul
            kw = {} if out is None else {"out": out}
            return overrides.defer("matmul", o, np.matmul, (a, b), kw,
                                   {"variant": variant, "device": device})
        a, b = as_input(a).array, as_input(b).array
        key = _key(a, b, out, variant, device)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS.put(key, _plan(a, b, out, variant, device))
    _registry.ran(plan.variant)
    if plan.go is not None:
        c = empty(plan.shape, plan.dtype)
        plan.go(a, b, c, *plan.dims)
        return c
    return _run(plan, a, b, out)


def _plan(x: Any, y: Any, out: Any, variant: str | None, device: str | None) -> Plan:
    """The one decision of ``matmul``: checks (raising what the call raises), backend,
    variant, and for two operands that go to a register-tiled kernel as they are the
    prepared launch."""
    if x.ndim != 2 or y.ndim != 2:
        raise InvalidValueError(f"matmul needs two 2-D arrays, got shapes {tuple(x.shape)} and "
                         f"{tuple(y.shape)}")
    dtype = result_dtype(x.dtype, y.dtype)
    (m, k), n = x.shape, y.shape[1]
    if y.shape[0] != k:
        raise InvalidValueError(f"matmul: shapes {tuple(x.shape)} and {tuple(y.shape)} are not "
                         f"aligned: {k} (columns of a) != {y.shape[0]} (rows of b)")
    on_device = _on_device(x) or _on_device(y)
    check_out(out, (m, n), dtype, on_device, device_why="an operand is on the GPU")
    backend = _registry.pick_backend("matmul", device, variant, on_device)
    v = _registry.choose("matmul", backend, MatmulProblem(m, n, k, dtype, on_device), variant)
    plan = Plan(v, backend, on_device, (m, n), dtype)
    tile = _TILES.get(v.name)
    if (tile is None or backend != "cuda" or out is not None or not (m and n and k)
            or not (_on_device(x) and _on_device(y))):
        return plan
    dev = sys.modules["cupy"].cuda.runtime.getDevice()
    if (x.dtype != dtype or y.dtype != dtype or not (x.flags.c_contiguous and y.flags.c_contiguous)
            or x.data.device_id != dev or y.data.device_id != dev):
        return plan
    go, dims = prepared_regtile(tile, x, y)
    return plan._replace(go=go, dims=dims)


def _run(plan: Plan, x: Any, y: Any, out: Any) -> Any:
    """A call whose operands do not go to the kernel as they are: host operands, casts,
    other layouts, ``out``, empty products, the cpu backend or the lecture variants."""
    v, dtype, on_device = plan.variant, plan.dtype, plan.on_device
    if plan.backend == "cpu":
        c = np.empty(plan.shape, dtype) if out is None or on_device else out
        mine = None if out is None or on_device else c
        _compute(v, _operand(to_host(x), dtype, mine), _operand(to_host(y), dtype, mine), c)
        if not on_device:
            return c
        if out is None:
            return to_device(c)
        out.set(c)
        return out
    mine = out if out is not None and on_device else None
    c = mine if mine is not None else empty(plan.shape, dtype)
    _compute(v, _operand(to_device(x), dtype, mine), _operand(to_device(y), dtype, mine), c)
    if on_device:
        return c
    return c.get(out=out) if out is not None else c.get()


def _operand(arr: Any, dtype: np.dtype, out: Any) -> Any:
    """``arr`` as a C-contiguous array of ``dtype`` that does not overlap the caller's ``out``
    (None: the result is a fresh allocation, which nothing overlaps; a contiguous operand of
    ``dtype`` then passes as it is, without the overlap test)."""
    if out is None and arr.dtype == dtype and arr.flags.c_contiguous:
        return arr
    xp = _cupy() if _on_device(arr) else np
    arr = xp.ascontiguousarray(arr.astype(dtype, copy=False))
    return arr.copy() if out is not None and xp.may_share_memory(arr, out) else arr


def _compute(v: _registry.Variant, a: Any, b: Any, c: Any) -> None:
    """``c = a @ b`` by variant ``v``; zeros without a launch when ``k == 0``."""
    if c.size == 0:
        return
    if a.shape[1] == 0:
        c.fill(0)
        return
    v.fn(a, b, c)


"""The short path of ``matmul(a, b)`` on device input: the launch record.

A call with two C-contiguous CuPy arrays of one dtype (float32 or float64) on the current
device decides the same things every time for the same (dtypes, shapes, strides, 16-byte
alignment of each operand, device): the problem, the variant dispatch chooses, and for the
register-tiled variants the kernel (16-byte loads or not) and its grid. The first call builds a
:class:`Record` in the ``matmul.record`` plan cache (``core/fastpath.py``); a later call
allocates the result and launches once. Everything else (``out=``, a named ``variant``/
``device``, mixed dtypes, other layouts, empty or ``k == 0`` products, the lecture variants)
takes the full path, which raises what it always raised.
"""
from __future__ import annotations

import sys
from typing import Any, NamedTuple

import numpy as np

from warplab.core import fastpath, registry as _registry
from warplab.core.launch import ARRAY, Prepared
from warplab.core.scalar import RESULT_TYPES, empty
from warplab.families.matmul.cuda import REGTILES, _dims, _kernel
from warplab.families.matmul.spec import DTYPES, MatmulProblem

_RECORDS = fastpath.PlanCache("matmul.record")
_TILES = {t.name: t for t in REGTILES}


class Record(NamedTuple):
    """A cached call: the variant it reports, the result shape and dtype, the dimension
    arguments and the prepared launch (``core/launch.py``: kernel, grid, block)."""

    variant: Any
    shape: tuple[int, int]
    dtype: np.dtype
    dims: tuple
    go: Prepared


def matmul(a: Any, b: Any) -> Any:
    """``a @ b`` through the launch record, or None (the full path; module docstring).

    Performance: on a hit one allocation and one launch; no synchronisation."""
    cupy = sys.modules.get("cupy")
    if cupy is None or (type(a) is not cupy.ndarray and type(a) not in RESULT_TYPES) \
            or (type(b) is not cupy.ndarray and type(b) not in RESULT_TYPES):
        return None
    da, db = a.data, b.data
    dev = cupy.cuda.runtime.getDevice()
    key = (a.dtype, a.shape, a.strides, b.dtype, b.shape, b.strides, da.ptr % 16 == 0,
           db.ptr % 16 == 0, dev)
    rec = _RECORDS.record(key, lambda: _build(a, b))
    if rec is None or da.device_id != dev or db.device_id != dev:
        return None
    _registry.ran(rec.variant)
    c = empty(rec.shape, rec.dtype)
    rec.go(a, b, c, *rec.dims)
    return c


def _build(a: Any, b: Any) -> Record | bool:
    """The record, or False for calls the full path runs."""
    if a.ndim != 2 or b.ndim != 2 or a.dtype != b.dtype or np.dtype(a.dtype) not in DTYPES:
        return False
    if not (a.flags.c_contiguous and b.flags.c_contiguous):
        return False
    (m, k), n = a.shape, b.shape[1]
    if b.shape[0] != k or not (m and n and k):
        return False
    v = _registry.choose("matmul", "cuda", MatmulProblem(m, n, k, np.dtype(a.dtype), True))
    tile = _TILES.get(v.name)
    if tile is None:
        return False
    # the result is a fresh CuPy allocation: 256-byte aligned, so only a and b decide
    vec = k % 4 == 0 and n % 4 == 0 and a.data.ptr % 16 == 0 and b.data.ptr % 16 == 0
    blocks = -(-m // tile.bm) * -(-n // tile.bn)
    k, dims = _kernel(tile.expression(a.dtype, vec)), _dims(a, b)
    go = Prepared(k, (blocks,), (tile.threads,), (ARRAY, ARRAY, ARRAY, *dims))
    return Record(v, (m, n), np.dtype(a.dtype), dims, go)

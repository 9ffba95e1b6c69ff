"""The min/max pass of a histogram whose range comes from the data (NumPy's ``a.min()``,
``a.max()``, NaN when any element is NaN), on the kernels ``minmax_partials`` and
``minmax_atomic`` of ``numeric.cu`` (launched through ``numeric_cuda``'s kernel cache)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from warplab.core.errors import InvalidValueError
from warplab.core.fastpath import read_small
from warplab.core.launch import by_args
from warplab.core.scalar import zeros
from warplab.families.histogram import (
    numeric_cuda as nc,  # its kernel cache and launch shapes (looked up per call)
)
from warplab.families.histogram.config import DEFAULT, LaunchConfig


def device_min_max(d_x: Any, cfg: LaunchConfig = DEFAULT) -> tuple[Any, Any]:
    """(min, max) of a flat contiguous device array as NumPy scalars of its dtype, NaN for both
    when it holds a NaN (as NumPy's ``a.min()``, ``a.max()``). One pass (``cfg.minmax``: the
    atomic kernel, one read back of three words, or per-block partials, three reads back);
    synchronises.

    Raises ``ValueError`` for an empty array (NumPy's message)."""
    import cupy

    dt = np.dtype(d_x.dtype)
    n = int(d_x.size)
    if n == 0:
        raise InvalidValueError(
            "zero-size array to reduction operation minimum which has no identity")
    if dt == np.bool_:
        d_x = d_x.view(np.uint8)
    if cfg.minmax == "atomic":
        d_res = zeros(3, np.uint64)
        minmax_prepared(d_x.dtype, n, cfg)((d_x, np.uint64(n), d_res))
        res = read_small(d_res)[0]  # one pinned copy, one sync
        if res[2] & 2:
            nan = np.array(np.nan, dtype=dt)[()]
            return nan, nan
        lo, hi = (from_order_key(k, d_x.dtype) for k in (~res[0], res[1]))
        return (np.bool_(lo), np.bool_(hi)) if dt == np.bool_ else (lo, hi)
    expr = f"minmax_partials<{nc.c_type(d_x.dtype)}>"
    group = (expr,)
    grid = nc._grid(expr, group, 0, n, d_x.dtype.itemsize, cfg)
    pmin = cupy.empty(grid, dtype=d_x.dtype)
    pmax = cupy.empty(grid, dtype=d_x.dtype)
    pflags = zeros(grid, np.uint32)
    nc._kernel(expr, group, cfg)((grid,), (cfg.block,), (d_x, np.uint64(n), pmin, pmax, pflags))
    flags, h_min, h_max = read_small(pflags, pmin, pmax)  # one pinned copy, one sync
    if (flags & 2).any():
        nan = np.array(np.nan, dtype=dt)[()]
        return nan, nan
    ok = (flags & 1) != 0
    lo, hi = h_min[ok].min(), h_max[ok].max()
    if dt == np.bool_:
        lo, hi = np.bool_(lo), np.bool_(hi)
    return lo, hi


def minmax_prepared(dtype: Any, n: int, cfg: LaunchConfig) -> Callable[[tuple], None]:
    """The launch of ``minmax_atomic`` over ``n`` elements of ``dtype`` with kernel and grid
    decided: ``launch((x, n, res))``, ``res`` three zeroed 64-bit words."""
    expr = f"minmax_atomic<{nc.c_type(dtype)}>"
    k = nc._kernel(expr, (expr,), cfg)
    grid = (nc._grid(expr, (expr,), 0, n, np.dtype(dtype).itemsize, cfg),)
    threads = (cfg.block,)
    return by_args(k, grid, threads)


def from_order_key(key: Any, dtype: Any) -> Any:
    """The value of ``dtype`` whose ``order_key`` (numeric.cu) is ``key`` (a 64-bit word, its
    low bytes the key): floats' ordered bits back to sign-magnitude, signed integers' offset
    removed."""
    dt = np.dtype(dtype)
    width = 8 * dt.itemsize
    k = int(key) & ((1 << width) - 1)
    sign = 1 << (width - 1)
    if dt.kind == "f":
        k = k ^ sign if k & sign else k ^ ((1 << width) - 1)
    elif dt.kind == "i":
        k ^= sign
    return np.frombuffer(k.to_bytes(dt.itemsize, "little"), dtype=dt)[0]

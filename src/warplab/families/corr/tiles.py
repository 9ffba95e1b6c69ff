"""What every corrcoef variant shares: the engine a variant returns, the finishing of a block
(clip to [-1, 1], diagonal 1, NaN rows and columns for constant or non-finite series) and the
tile loop over the upper triangle that writes an M x M result of any size into ``out``.

An engine holds the prepared series of one call (normalised rows, or the raw rows and their
statistics) and computes raw coefficient blocks ``block(r0, r1, c0, c1)`` on its array module
(NumPy or CuPy). Only two kinds of block are asked for: a diagonal block (``r0 == c0`` and
``r1 == c1``), returned whole (symmetric), and a block strictly above the diagonal
(``r1 <= c0``). Blocks below the diagonal are the transposes of those above (symmetry).
"""
from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any, Protocol

import numpy as np

from warplab.core.arrays import to_device, to_host

#: Tests set this to force small tiles (None: the size free memory allows).
TILE_CAP: int | None = None
#: Bytes of the temporaries of one cpu-backend tile.
CPU_TILE_BYTES = 1 << 28
#: Share of free device memory one call may use for its tiles and temporaries.
DEVICE_SHARE = 0.6
#: A device result whose working set is at most this many bytes is computed whole without
#: asking the driver for free memory (``memGetInfo``, ~10-30 us a call).
TINY_BYTES = 1 << 20


def capped(side: int) -> int:
    """``side`` limited by ``TILE_CAP`` (tests)."""
    return max(1, min(side, TILE_CAP or side))


def cpu_tile(m: int) -> int:
    """Side of the square cpu tiles: about four float64 tile-sized temporaries in
    ``CPU_TILE_BYTES``."""
    return capped(max(1, min(m, int((CPU_TILE_BYTES / 32) ** 0.5))))


def free_device_bytes() -> int:
    """Free GPU memory plus what CuPy's pool holds unused."""
    import cupy

    free, _ = cupy.cuda.runtime.memGetInfo()
    return int(free + cupy.get_default_memory_pool().free_bytes())


def device_tile(m: int, n: int, itemsize: int, free: int, most: int = 1 << 30) -> int:
    """Side of the square device tiles that fit ``DEVICE_SHARE`` of ``free`` bytes next to
    the normalised rows (``m n itemsize``): about four float64 tile-sized temporaries per
    tile; at least 256, at most ``most`` and ``m``."""
    room = DEVICE_SHARE * free - m * n * itemsize
    side = int((max(room, 0) / 32) ** 0.5)
    return capped(max(1, min(m, most, max(256, side))))


class Engine(Protocol):
    """The prepared series of one call (see the module docstring)."""

    m: int
    xp: Any              # numpy or cupy
    valid: Any           # (M,) bool on xp: the series has a finite, non-zero centred norm
    all_valid: bool

    def block(self, r0: int, r1: int, c0: int, c1: int) -> Any:
        """Raw coefficients of rows ``r0:r1`` against ``c0:c1`` (float32 or float64)."""


def warn_invalid(all_valid: bool, depth: int = 0) -> None:
    """NumPy's warning for a constant (zero-variance) series: its coefficients are 0 / 0.
    Attributed to the public call's caller; ``depth``: frames between the public function
    and this call."""
    if not all_valid:
        warnings.warn("invalid value encountered in divide", RuntimeWarning,
                      stacklevel=4 + depth)


def finish(b: Any, r0: int, c0: int, eng: Engine) -> Any:
    """Clip ``b`` (a block at ``(r0, c0)``) to [-1, 1] in place, set the diagonal to 1 and the
    rows and columns of invalid series to NaN (their diagonal too, as NumPy). Returns ``b``.
    Engines that finish blocks themselves (the cuda engines: one kernel) do it their way."""
    fused = getattr(eng, "finish_block", None)
    if fused is not None:
        return fused(b, r0, c0)
    xp = eng.xp
    xp.clip(b, -1, 1, out=b)
    rows, cols = b.shape
    lo, hi = max(r0, c0), min(r0 + rows, c0 + cols)
    if lo < hi:
        d = xp.arange(lo, hi)
        b[d - r0, d - c0] = 1
    if not eng.all_valid:
        b[xp.nonzero(~eng.valid[r0:r0 + rows])[0], :] = np.nan
        b[:, xp.nonzero(~eng.valid[c0:c0 + cols])[0]] = np.nan
    return b


def full_matrix(eng: Engine) -> Any:
    """The whole M x M matrix on the engine's array module (one diagonal block)."""
    return finish(eng.block(0, eng.m, 0, eng.m), 0, 0, eng)


def upper_tiles(m: int, t: int) -> Iterator[tuple[int, int, int, int]]:
    """``(r0, r1, c0, c1)`` of every tile of side ``t`` on or above the diagonal, row by row."""
    t = max(1, int(t))
    for r0 in range(0, m, t):
        for c0 in range(r0, m, t):
            yield r0, min(r0 + t, m), c0, min(c0 + t, m)


def fill_tiled(eng: Engine, out: Any, tile: int) -> Any:
    """Write the finished M x M matrix into ``out`` (NumPy, a memory map, or CuPy) tile by
    tile: each tile above the diagonal once, its transpose below it. Device tiles bound for a
    host ``out`` are copied back one at a time (a synchronising D2H copy per tile)."""
    move = to_host if isinstance(out, np.ndarray) else to_device
    for r0, r1, c0, c1 in upper_tiles(eng.m, tile):
        b = move(finish(eng.block(r0, r1, c0, c1), r0, c0, eng))
        out[r0:r1, c0:c1] = b
        if c0 != r0:
            out[c0:c1, r0:r1] = b.T
    return out


def mirror_upper(b: Any, xp: Any) -> Any:
    """A square block whose upper triangle (diagonal included) is computed and whose lower
    triangle is garbage or zero, made symmetric from the upper triangle."""
    return xp.triu(b) + xp.triu(b, 1).T

"""The pairs above a threshold as a stream of row strips, already in ``(i, j)`` order.

A strip is the rows ``a:b`` of the upper triangle: the columns ``a:M`` of those rows. Engines
compute two kinds of block (``tiles.py``): a diagonal block and a block strictly above the
diagonal, so a strip is its diagonal block ``(a:b, a:b)`` and column parts ``(a:b, c0:c1)``
with ``b <= c0`` to its right. Each part is reduced at once (``|r| >= thr``; the diagonal
block's upper triangle only) to its hits in row-major order (``nonzero``), and the parts'
hits are put in ``(i, j)`` order without a sort: each part's per-row hit counts, an exclusive
cumulative sum over (row, part) in row-major order, and one scatter of every part's hits to
their final positions (elementwise work on the engine's array module). Strips taken in
increasing ``a`` give every pair of the triangle sorted by ``(i, j)``, so the pairs can leave
the GPU (or go to a file) strip by strip as they are found.

The strips' size comes from a byte budget (:func:`strip_bytes_for`): half of it holds the
worst case of the strip's pairs (every coefficient a pair: :data:`PAIR_BYTES` each), the other
half one part's temporaries (:data:`PART_BYTES` per coefficient). A strip is at least one row.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from warplab.families.corr import tiles
from warplab.families.corr.tiles import finish

#: Bytes per pair held while a strip is assembled: i, j and r of the parts' hits (24), their
#: final positions (8), one field of the ordered copy (8; the fields are scattered one at a
#: time) and one part's shifted rows (8).
PAIR_BYTES = 48
#: Bytes per coefficient of one part while it is reduced: the block (at most float64), |b|,
#: the hit masks and ``nonzero``'s scan.
PART_BYTES = 40
#: Share of free device memory one strip may use (the rest holds the pairs where they stay
#: on the GPU).
DEVICE_STRIP_SHARE = 0.25
#: Strip heights and part widths from this size up are multiples of it: the tile edge of the
#: Gram kernel (``gram_cuda.GramConfig.tile``), so no block ends in a mostly empty tile row.
ALIGN = 128


def strip_bytes_for(eng: Any) -> int:
    """The default budget of one strip's temporaries on ``eng``'s backend: on the GPU
    ``DEVICE_STRIP_SHARE`` of the free device memory (asked now, after the engine's rows),
    on the cpu backend ``tiles.CPU_TILE_BYTES``."""
    if eng.xp is np:
        return tiles.CPU_TILE_BYTES
    return int(DEVICE_STRIP_SHARE * tiles.free_device_bytes())


def strip_shape(m: int, a: int, r1: int, strip_bytes: int) -> tuple[int, int]:
    """``(rows, part_cols)`` of the strip starting at row ``a`` (rows ``a:r1`` left; columns
    ``a:m``): as many rows as half of ``strip_bytes`` holds when every coefficient of the strip
    is a pair, at least 1; the parts right of the diagonal block as wide as the other half
    holds at that height; from 128 up, multiples of 128 (:data:`ALIGN`). Both limited by
    ``tiles.TILE_CAP`` (tests)."""
    half = max(0, int(strip_bytes)) // 2
    rows = tiles.capped(max(1, min(r1 - a, _aligned(half // (PAIR_BYTES * max(1, m - a))))))
    cols = tiles.capped(max(1, _aligned(half // (PART_BYTES * rows))))
    return rows, cols


def _aligned(n: int) -> int:
    """``n`` rounded down to a multiple of :data:`ALIGN` from ``ALIGN`` up."""
    return n - n % ALIGN if n >= ALIGN else n


def strip_bounds(m: int, r0: int, r1: int, strip_bytes: int) -> Iterator[tuple[int, int, int]]:
    """``(a, b, part_cols)`` of every strip of rows ``r0:r1`` in increasing order."""
    a = r0
    while a < r1:
        rows, cols = strip_shape(m, a, r1, strip_bytes)
        yield a, a + rows, cols
        a += rows


def stream_above(eng: Any, thr: float, r0: int, r1: int, strip_bytes: int
                 ) -> Iterator[tuple[Any, Any, Any]]:
    """Pairs i < j, r0 <= i < r1, j < eng.m, |r| >= thr, strip by strip in (i, j) order:
    (i int64, j int64, r float64) arrays on eng.xp per strip (possibly empty);
    strip_bytes bounds one strip's temporaries.

    Coefficients are finished as ``corrcoef``'s (clipped to [-1, 1]; NaN, which pairs with
    nothing, for constant or non-finite series). Performance: per strip one block per part
    (the diagonal block and ``ceil((M - b) / part_cols)`` parts right of it), per part one
    compare and a compaction (``nonzero``: one synchronisation), the hits counted per row;
    one scatter per field when the strip has more than one part.
    """
    for _a, _b, i, j, r in strips_above(eng, thr, r0, r1, strip_bytes):
        yield i, j, r


def strips_above(eng: Any, thr: float, r0: int, r1: int, strip_bytes: int
                 ) -> Iterator[tuple[int, int, Any, Any, Any]]:
    """:func:`stream_above` with each strip's rows: ``(a, b, i, j, r)``."""
    for a, b, cols in strip_bounds(eng.m, r0, r1, strip_bytes):
        yield (a, b, *_strip(eng, thr, a, b, cols))


def _strip(eng: Any, thr: float, a: int, b: int, cols: int) -> tuple[Any, Any, Any]:
    """The pairs of rows ``a:b`` (columns ``a:M``) in ``(i, j)`` order."""
    xp, m = eng.xp, eng.m
    parts: list[tuple[Any, Any, Any]] = []
    counts: list[Any] = []
    for c0, c1 in [(a, b), *((c, min(c + cols, m)) for c in range(b, m, cols))]:
        blk = finish(eng.block(a, b, c0, c1), a, c0, eng)
        hit = xp.abs(blk) >= thr  # NaN compares False
        if c0 == a:
            hit = xp.triu(hit, 1)
        ii, jj = xp.nonzero(hit)
        ends = xp.searchsorted(ii, xp.arange(1, b - a + 1), side="left")  # ii is sorted
        counts.append(xp.diff(ends, prepend=0))  # per-row hits, from the hits alone
        parts.append((ii, jj + c0, blk[ii, jj].astype(np.float64)))
        del blk, hit
    if len(parts) == 1:
        ii, jj, r = parts[0]
        return ii + a, jj, r
    return _ordered(xp, a, parts, xp.stack(counts, axis=1))


def _ordered(xp: Any, a: int, parts: list[tuple[Any, Any, Any]], counts: Any
             ) -> tuple[Any, Any, Any]:
    """The parts' hits (each row-major; local rows) in ``(i, j)`` order: hit ``e`` of part
    ``k`` in row ``i`` goes to ``start[i, k] + e - first[i, k]``, where ``start`` is the
    exclusive cumulative sum of ``counts`` (rows x parts) in row-major order and ``first`` the
    exclusive cumulative sum of part ``k``'s counts over the rows. The positions once per part,
    then one field at a time (j, r, then i), each part's copy of it dropped once scattered."""
    flat = counts.ravel()
    start = (xp.cumsum(flat) - flat).reshape(counts.shape)
    shift = start - (xp.cumsum(counts, axis=0) - counts)  # final minus in-part position
    total = sum(int(p[0].size) for p in parts)
    held = [list(p) for p in parts]
    pos = [xp.arange(p[0].size, dtype=np.int64) + shift[p[0], k] if p[0].size else None
           for k, p in enumerate(parts)]
    fields: dict[int, Any] = {}
    for f, dt in ((1, np.int64), (2, np.float64), (0, np.int64)):
        out = xp.empty(total, dt)
        for k, p in enumerate(held):
            if pos[k] is not None:
                out[pos[k]] = p[0] + a if f == 0 else p[f]
            p[f] = None
        fields[f] = out
    return fields[0], fields[1], fields[2]

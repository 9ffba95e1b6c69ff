"""Pure launch planning of the CUDA axis reductions (``axis_cuda``): the kernels' block and
unroll constants and how ``rows_adaptive`` / ``columns`` size their launches from the shape and
the device's resident blocks. Host arithmetic only (CPU-tested)."""
from __future__ import annotations

from typing import NamedTuple

BLOCK = 256       # rows kernels' block (WARPLAB_AXIS_BLOCK)
UNROLL = 4        # independent loads in flight per thread (WARPLAB_AXIS_UNROLL)
COLS_BLOCK = 256  # columns kernel's block (WARPLAB_AXIS_COLS_BLOCK)
GROUPS = (1, 2, 4, 8, 16, 32)
#: Lanes per row of the packed kernel (rows of 16 L bytes, back to back).
PACKED_LANES = (1, 2, 4, 8, 16)
#: Split a column's rows over blocks only in runs of at least this many rows (partials traffic
#: stays under ~3% of the input for float32 data and float64 partials).
COLS_MIN_ROWS = 128


def _pow2_ceil(v: int) -> int:
    return 1 << max(0, int(v) - 1).bit_length()


def _ceil_to(v: int, step: int) -> int:
    """``v`` rounded up to a multiple of ``step``."""
    return -(-v // step) * step


class RowsPlan(NamedTuple):
    """A ``rows_adaptive`` launch: ``kernel`` "group" (G lanes per row, persistent grid),
    "packed" (``group`` = L lanes per row of back-to-back rows) or "split" (S blocks per row of
    ``chunk`` elements each, grid rows * S); ``vec`` 16-byte loads."""

    kernel: str
    group: int
    vec: bool
    grid: int
    splits: int
    chunk: int


def group_size(cols: int, itemsize: int) -> tuple[bool, int]:
    """(16-byte loads?, lanes per row G) for rows of ``cols`` elements: vector loads when a row
    holds at least 64 bytes; G the smallest power of two up to 32 leaving each lane at most
    ``UNROLL`` loads per row. Performance: host arithmetic only."""
    vec = cols * itemsize >= 64
    units = -(-cols // (16 // itemsize if vec else 1))
    return vec, min(32, _pow2_ceil(-(-units // UNROLL)))


def plan_rows(rows: int, cols: int, itemsize: int, sms: int, group_bps: int,
              split_bps: int, packed: bool = False) -> RowsPlan:
    """Choose the ``rows_adaptive`` launch from the shape and the device (pure: CPU-tested).

    16-byte loads when a row holds at least 64 bytes. The group size G is the smallest power of
    two (up to 32) that leaves each lane at most ``UNROLL`` loads per row (1M x 32 float32: G=2,
    16 rows per warp, 4 loads per lane). Rows needing a full warp run the group kernel while
    rows * 64 >= the resident threads (8192 x 8192: one warp per row); fewer, longer rows are
    split over S blocks each, S = resident blocks // rows (16 x 2^24 on 132 SMs x 8: S = 66,
    one wave) but at least one round of ``UNROLL`` loads per thread and block.
    ``group_bps``/``split_bps``: resident blocks per SM of the two kernels.

    ``packed``: the rows lie back to back from a 16-byte aligned base (ld == cols). Then rows of
    16, 32, ..., 256 bytes run the packed kernel instead (L = row bytes / 16 lanes per row, each
    warp instruction one 512-byte segment; 1M x 32 float32: L = 8), one warp step per warp (on
    the H100 the full grid beat 4x and 1x the resident blocks by 1% and 3%,
    benchmarks/explore_rows_short.py).

    Performance: host arithmetic only.
    """
    vec, g = group_size(cols, itemsize)
    per = 16 // itemsize if vec else 1
    units = -(-cols // per)
    resident_g = sms * group_bps
    lanes = cols * itemsize // 16
    if packed and cols * itemsize == 16 * lanes and lanes in PACKED_LANES:
        warps = -(-rows * lanes // (32 * UNROLL))
        return RowsPlan("packed", lanes, True, max(1, min(-(-warps * 32 // BLOCK), 2 ** 31 - 1)),
                        1, cols)
    if g < 32 or rows * 64 >= resident_g * BLOCK:
        warps = -(-rows // (32 // g))
        return RowsPlan("group", g, vec, max(1, min(resident_g, -(-warps * 32 // BLOCK))),
                        1, cols)
    s = max(1, min((sms * split_bps) // rows, -(-units // (BLOCK * UNROLL))))
    chunk = _ceil_to(-(-cols // s), per)
    s = -(-cols // chunk)
    return RowsPlan("split", 32, vec, rows * s, s, chunk)


class ColsPlan(NamedTuple):
    """A ``columns`` launch: ``vec`` (16-byte loads, PER columns a thread), ``cg`` column
    threads per block (the other 256 / cg threads are row lanes), ``gx`` column blocks,
    ``splits`` row ranges of ``chunk`` rows (grid (gx, splits))."""

    vec: bool
    cg: int
    gx: int
    splits: int
    chunk: int


def plan_cols(nred: int, ncols: int, itemsize: int, aligned: bool, sms: int, bps: int) -> ColsPlan:
    """Choose the ``columns`` launch (pure: CPU-tested): 16-byte loads when the base and the row
    stride are 16-byte multiples; as many column threads per block as the columns need (up to
    256), the rest of the block row lanes; the reduced rows split over as many blocks as fill
    the GPU (resident blocks // column blocks), in runs of at least ``COLS_MIN_ROWS`` rows.

    Performance: host arithmetic only."""
    vec = aligned and ncols * itemsize >= 16
    groups = -(-ncols // (16 // itemsize if vec else 1))
    cg = min(COLS_BLOCK, _pow2_ceil(groups))
    gx = -(-groups // cg)
    s = max(1, min((sms * bps) // gx, -(-nred // COLS_MIN_ROWS), 65535))
    chunk = -(-nred // s)
    return ColsPlan(vec, cg, gx, -(-nred // chunk), chunk)

"""Pure launch planning of the CUDA axis reductions (``axis_cuda``): the kernels' block and
unroll constants and how ``rows_adaptive`` / ``columns`` size their launches from the shape and
the device's resident blocks. Host arithmetic only (CPU-tested)."""
from __future__ import annotations

from typing import NamedTuple

BLOCK = 256       # rows kernels' block (WARPLAB_AXIS_BLOCK)
#: Independent loads in flight per thread (WARPLAB_AXIS_UNROLL); 8 halves the packed kernel's
#: blocks and cost 1M x 32 float32 18 points of the read on the H200 (benchmarks/NOTES.md).
UNROLL = 4
SPLIT_UNROLL = 4  # the same in the split kernel (WARPLAB_AXIS_SPLIT_UNROLL)
#: 16-byte loads with the L2::256B prefetch hint, per kernel (WARPLAB_AXIS_*_STREAM; the packed
#: and staged kernels always have it). On the H100 the hint lifted the group kernel on rows of
#: 1000 float32 from 83% to 90% of the read ceiling; the split kernel's rows read as fast
#: without it. The columns kernel reads as fast or faster without it on the H200 at every
#: geometry of 8192^2, 16-512 x 2^18-2^20 and 2^20 x 32, float32 and float64 (both forms
#: compiled, batches alternating in one process: e.g. 8192^2 float64 at 64 column threads x 8
#: splits 95.8% of the read without it, 89.0% with; benchmarks/NOTES.md).
GROUP_STREAM, SPLIT_STREAM, COLS_STREAM = True, False, False
COLS_BLOCK = 256  # columns kernel's block (WARPLAB_AXIS_COLS_BLOCK)
#: The columns kernel's loads in flight per thread (WARPLAB_AXIS_COLS_UNROLL): on the H200 8
#: read 0-8 points more than 4 on 8192^2 and 32-512 x 2^18-2^20 (16 no more than 8), two runs
#: each (benchmarks/NOTES.md).
COLS_UNROLL = 8
#: The columns kernel's short-walk form serves the plans whose threads walk at most this many
#: unrolled steps (16-byte loads only): a walk of one step takes a CTA-scope fence between its
#: loads and their sums (``fence.acq_rel.cta``), longer ones the plain walk. Alone, the plain
#: walk has ptxas interleave the float32 loads with their conversions to float64, 4-6 of the 8
#: in flight (the mean 4, the sum 6, nvdisasm); with the fenced walk beside it both issue
#: 7.75-8 first. On the H200, one process a form, alternating: the short-walk form read the
#: 16 x 2^20 float32 mean 5.5 points faster and 32 x 2^20 2.0 faster, 64 x 2^20 (8 steps) the
#: same; on the long walks of 8192^2 it read 0.4-3% less against torch (benchmarks/NOTES.md).
COLS_SHORT_STEPS = 4
#: Bytes of partials in flight per thread in the columns kernel's finish by the last block
#: (WARPLAB_AXIS_COLS_FIN_BYTES): all PER columns of FIN = bytes / (PER * accumulator) splits.
#: On the H200 128 read as fast as 256 on the split plans and 1-2 points faster on 32 x 2^20
#: (no splits: the finish's registers only cost occupancy there).
COLS_FIN_BYTES = 128
GROUPS = (1, 2, 4, 8, 16, 32)
#: Lanes per row of the packed kernel (rows of 16 L bytes, back to back).
PACKED_LANES = (1, 2, 4, 8, 16)
#: Staged tiles: 16-byte words a thread loads (WARPLAB_AXIS_STAGE_UNROLL: 16 KiB tiles);
#: the staged kernel takes rows of which a tile holds at least STAGE_MIN_ROWS (rows up to ~8 KiB:
#: on the H100 rows of 1000 float32 read 97% of the read ceiling staged four a tile, 89-90% a
#: warp per row; rows of 1000 float64 99% staged two a tile, 96% a block per row).
STAGE_UNROLL = 4
STAGE_MIN_ROWS = 2
#: Rows under this many bytes are staged in tiles of 32 KiB (8 words a thread, the kernel's
#: template argument U): on the H200 rows of 33 float64 (264 bytes) read 91.7% of the read
#: ceiling in 32 KiB tiles against 82% in 16 KiB ones, rows of 33 float32 1-3 points more;
#: rows of 1 KiB or more read 1-9 points less.
STAGE_WIDE_ROW_BYTES = 512
STAGE_WIDE_UNROLL = 8
#: The lanes per row such tiles give (at least 64 rows a tile): the module's instantiations.
STAGE_WIDE_GROUPS = (1, 2, 4)
#: Back-to-back rows of this many bytes (inclusive range) on the 16-byte grid run the group
#: kernel, not the staged one, where the group kernel applies: G = 16 or 32 lanes cover such a
#: row in one warp step of ``UNROLL`` 16-byte loads each. On the H200 131,072 x 256 float32
#: (1 KiB rows) read 86-87% of the read ceiling in the group kernel against 82-83% staged
#: (the public mean 87.6% against 82.5%), float64 (2 KiB) as fast either way (89.6-90.4
#: against 88.7-90.5); rows of 4,000 and 8,000 bytes read 90-93% staged against 78-85 in the
#: group kernel (benchmarks/NOTES.md).
GROUP_ROW_BYTES = (1 << 10, 2 << 10)
#: Whether the staged kernel loads a tile's boundary words (those that also hold bytes of the
#: neighbouring rows, or of none) element by element together with the tile's other loads (1)
#: or after it has stored those (0: the last thread's tail word then waits a second round
#: trip, and the block with it). On the H200 1 read 2-6 points more of the read ceiling on
#: rows of 33, 256 and 1000 elements (benchmarks/NOTES.md).
STAGE_HOIST = 1
#: Whether the axis kernels are launched to overlap the stream's previous kernel (core/launch.py
#: ``Prepared(overlap=True)``: programmatic dependent launch, sm_90 and later), and which of
#: them let the next such launch schedule its blocks once each of their blocks has started
#: (WARPLAB_AXIS_TRIGGER bits: 1 packed, 2 staged, 4 group, 8 split, 16 columns; the others
#: once their blocks have exited). On the H200 a grid of one wave of long blocks (the split
#: kernel's 512 blocks on 256 x 2^20 float32) read 75% instead of 99% with the early trigger
#: (likely the next grid's blocks, placed as slots free up, spread unevenly over the SMs);
#: the overlap itself gains 0.5-5 points of the read ceiling (benchmarks/NOTES.md).
OVERLAP = True
TRIGGER = 1 | 2 | 4
#: Rows of at least this many bytes run the split kernel (a block per row or more): on the H100
#: a block per row of 8, 16 or 32 KiB read 99-102% of the read ceiling, a warp per row 94-96%.
SPLIT_MIN_ROW_BYTES = 4 << 10
#: The split kernel's grid: about this many blocks per SM (chunks a power of two elements).
SPLIT_BLOCKS_PER_SM = 4
#: The columns kernel's grid: about this many blocks per SM, column blocks narrowed (down to
#: COLS_NARROW_CG column threads) before the rows are split while the column blocks alone fill
#: less than half of it. On the H200 (one process, batches alternating) 8192^2 read 89.5%
#: (float32) and 95.4% (float64) of the read ceiling at 32 column threads x 8 or 4 splits, where
#: two blocks per SM of 128-256 column threads read 84.5 and 93.1%; 512 x 2^18 float32 96.2% at
#: 128 column threads (91.4% at 256). (On the H100, with the hint, two beat one, four and eight
#: at 256 column threads.)
COLS_BLOCKS_PER_SM = 4
COLS_NARROW_CG = 32
#: Bytes of partials the last block of a column block combines at most (``plan_cols``): on the
#: H200 8192 x 8192 float32 read 84-85% of the read ceiling with 64 or 128 column threads a
#: block (8 or 16 splits: 16 or 64 KiB of partials a column block), 79% with 256 and 33 splits
#: (264 KiB); float64 at 256 x 16 (64 KiB) as fast as any other geometry.
COLS_FINISH_BYTES = 64 << 10
#: Split a column's rows over blocks only in runs of at least this many rows (partials traffic
#: stays under ~3% of the input for float32 data and float64 partials).
COLS_MIN_ROWS = 128
#: Unsplit columns of at most this many bytes (16-byte loads) are walked by row lanes of
#: ``COLS_UNROLL`` to 2 * COLS_UNROLL - 1 rows each (the largest power of two of lanes with at
#: least COLS_UNROLL rows a lane), the column threads per block narrowed to match, so each
#: lane issues one unrolled step. On the H200 (the mean's kernels alternating in one process,
#: four or five runs) 32 x 2^20 float32 read 2.0-6.3 points more at 64 column threads than at
#: 256, 64 x 2^20 float32 0.8-3.2 more at 32, 16 x 2^20 float64 1.2-3.1 more at 128; columns
#: of 512 bytes read 0.2-0.7 less (64 x 2^20 float64, 128 x 2^20 float32; benchmarks/NOTES.md).
COLS_LANE_COLUMN_BYTES = 256


def _pow2_ceil(v: int) -> int:
    return 1 << max(0, int(v) - 1).bit_length()


def _pow2_floor(v: int) -> int:
    return 1 << (max(1, int(v)).bit_length() - 1)


class RowsPlan(NamedTuple):
    """A ``rows_adaptive`` launch: ``kernel`` "group" (G lanes per row, one warp step per warp),
    "packed" (``group`` = L lanes per row of back-to-back rows), "staged" (``group`` = G lanes
    per row, tiles of ``chunk`` rows through shared memory, a block per tile, ``words``
    16-byte words a thread stages) or "split" (S blocks per row of ``chunk`` elements each,
    grid rows * S); ``vec`` 16-byte loads."""

    kernel: str
    group: int
    vec: bool
    grid: int
    splits: int
    chunk: int
    words: int = STAGE_UNROLL


def group_size(cols: int, itemsize: int) -> tuple[bool, int]:
    """(16-byte loads?, lanes per row G) for rows of ``cols`` elements: vector loads when a row
    holds at least 64 bytes; G the smallest power of two up to 32 leaving each lane at most
    ``UNROLL`` loads per row. Performance: host arithmetic only."""
    vec = cols * itemsize >= 64
    units = -(-cols // (16 // itemsize if vec else 1))
    return vec, min(32, _pow2_ceil(-(-units // UNROLL)))


def stage_unroll(cols: int, itemsize: int) -> int:
    """16-byte words a thread stages in a tile for rows of ``cols`` elements (the staged
    kernel's U): ``STAGE_WIDE_UNROLL`` for rows under ``STAGE_WIDE_ROW_BYTES``, else
    ``STAGE_UNROLL``. Performance: host arithmetic only."""
    return STAGE_WIDE_UNROLL if cols * itemsize < STAGE_WIDE_ROW_BYTES else STAGE_UNROLL


def staged_rows(cols: int, itemsize: int, unroll: int = STAGE_UNROLL) -> int:
    """Whole rows of a staged tile of ``BLOCK * unroll`` 16-byte words: the most whose words
    fit it wherever the tile starts (up to 16 - itemsize bytes before its first element share
    its first word). Performance: host arithmetic only."""
    return (BLOCK * 16 * unroll - 16 + itemsize) // (cols * itemsize)


def split_chunk(rows: int, cols: int, per: int, sms: int) -> int:
    """Elements of a row one block of the split kernel reads: a power of two, so that the grid
    holds about ``SPLIT_BLOCKS_PER_SM`` blocks per SM (at least one whole row per block when
    the rows alone give that many blocks) and a block at least one 16-byte load per thread.
    Performance: host arithmetic only."""
    per_row = max(1, (SPLIT_BLOCKS_PER_SM * sms) // rows)
    return max(_pow2_ceil(-(-cols // per_row)), BLOCK * per) if per_row > 1 else cols


def plan_rows(rows: int, cols: int, itemsize: int, sms: int, *, contiguous: bool = False,
              aligned: bool = False) -> RowsPlan:
    """Choose the ``rows_adaptive`` launch from the shape and the device (pure: CPU-tested).

    ``contiguous``: the rows lie back to back (ld == cols); ``aligned``: the base is on the
    16-byte grid. In that order:

    * packed: contiguous, aligned rows of 16, 32, ..., 256 bytes (L = row bytes / 16 lanes per
      row, each warp instruction one 512-byte segment; 1M x 32 float32: L = 8);
    * staged: other contiguous rows of which a 16 KiB tile holds at least ``STAGE_MIN_ROWS``,
      in tiles of 32 KiB for rows under 512 bytes (rows of 33 float32: 248 rows a tile, G = 1
      lane per row from shared memory; 65536 x 1000 float32: 4 a tile of 16 KiB, G = 32),
      except aligned rows of ``GROUP_ROW_BYTES`` on the 16-byte grid;
    * group: rows under ``SPLIT_MIN_ROW_BYTES`` that are not back to back (a strided view) or
      are such aligned 1-2 KiB rows (131,072 x 256 float32: G = 16); G lanes per row, G the
      smallest power of two up to 32 leaving each lane at most ``UNROLL`` loads (a warp per
      row over 1 KiB), when the warps of the rows fill at least a quarter of the GPU's
      threads;
    * split: longer rows, or too few rows for the group kernel: S blocks per row of a power of
      two ``chunk`` elements (:func:`split_chunk`): 32768 x 4097 and 8192 x 8192 float32 a
      block per row, 256 x 2^20 two, 16 x 2^24 32.

    Performance: host arithmetic only.
    """
    vec, g = group_size(cols, itemsize)
    per = 16 // itemsize if vec else 1
    row_bytes = cols * itemsize
    lanes = row_bytes // 16
    if contiguous and aligned and row_bytes == 16 * lanes and lanes in PACKED_LANES:
        warps = -(-rows * lanes // (32 * UNROLL))
        return RowsPlan("packed", lanes, True, max(1, min(-(-warps * 32 // BLOCK), 2 ** 31 - 1)),
                        1, cols)
    grouped = g < 32 or (row_bytes < SPLIT_MIN_ROW_BYTES and rows * 32 * 4 >= sms * 2048)
    on_grid = aligned and row_bytes == 16 * lanes
    banded = grouped and on_grid and GROUP_ROW_BYTES[0] <= row_bytes <= GROUP_ROW_BYTES[1]
    if contiguous and rows > 1 and staged_rows(cols, itemsize) >= STAGE_MIN_ROWS and not banded:
        u = stage_unroll(cols, itemsize)
        rt = staged_rows(cols, itemsize, u)
        gs = min(32, _pow2_floor(BLOCK // min(rt, BLOCK)))  # the block's lanes over its rows
        return RowsPlan("staged", gs, True, min(-(-rows // rt), 2 ** 31 - 1), 1, rt, u)
    if grouped:
        warps = -(-rows // (32 // g))
        return RowsPlan("group", g, vec, max(1, min(-(-warps * 32 // BLOCK), 2 ** 31 - 1)),
                        1, cols)
    chunk = split_chunk(rows, cols, per, sms)
    s = -(-cols // chunk)
    return RowsPlan("split", 32, vec, rows * s, s, chunk)


class ColsPlan(NamedTuple):
    """A ``columns`` launch: ``vec`` (16-byte loads, PER columns a thread), ``cg`` column
    threads per block (the other 256 / cg threads are row lanes), ``gx`` column blocks,
    ``splits`` row ranges of ``chunk`` rows (grid (gx, splits)); ``short_walk``: the kernel's
    short-walk form (:func:`short_walk`)."""

    vec: bool
    cg: int
    gx: int
    splits: int
    chunk: int
    short_walk: bool


def short_walk(vec: bool, cg: int, chunk: int) -> bool:
    """Whether a columns launch of ``cg`` column threads a block over row ranges of ``chunk``
    rows takes the kernel's short-walk form: 16-byte loads, and each thread's walk (every
    (COLS_BLOCK / cg)-th row of its range) at most COLS_SHORT_STEPS unrolled steps."""
    return vec and -(-chunk // (COLS_UNROLL * (COLS_BLOCK // cg))) <= COLS_SHORT_STEPS


def plan_cols(nred: int, ncols: int, itemsize: int, aligned: bool, sms: int,
              acc_bytes: int = 8, lane_bytes: int = COLS_LANE_COLUMN_BYTES) -> ColsPlan:
    """Choose the ``columns`` launch (pure: CPU-tested): 16-byte loads when the base and the row
    stride are 16-byte multiples; as many column threads per block as the columns need (up to
    256), halved (down to ``COLS_NARROW_CG``) while the column blocks fill less than half of
    ``COLS_BLOCKS_PER_SM`` blocks per SM, the rest of the block row lanes; the reduced rows
    split over blocks so that the grid holds about ``COLS_BLOCKS_PER_SM`` blocks per SM, in runs
    of at least ``COLS_MIN_ROWS`` rows. Where the rows are split, the last block of each column
    block combines the splits' partials (``acc_bytes`` each) of its columns alone: the column
    threads per block are halved (down to 16) until that is at most ``COLS_FINISH_BYTES``
    (8192 x 8192 float32: 64 column blocks of 32 threads x 8 splits; 2^20 x 32: 1 x 528).
    Unsplit columns of at most ``lane_bytes`` (``COLS_LANE_COLUMN_BYTES``) take row lanes of
    about ``COLS_UNROLL`` rows (32 x 2^20 float32: 64 column threads x 4 row lanes of 8 rows).

    Performance: host arithmetic only."""
    vec = aligned and ncols * itemsize >= 16
    per = 16 // itemsize if vec else 1
    groups = -(-ncols // per)
    cg = min(COLS_BLOCK, _pow2_ceil(groups))
    while cg > COLS_NARROW_CG and 2 * -(-groups // cg) < COLS_BLOCKS_PER_SM * sms:
        cg //= 2
    while True:
        gx = -(-groups // cg)
        s = max(1, min((COLS_BLOCKS_PER_SM * sms) // gx, -(-nred // COLS_MIN_ROWS), 65535))
        if s == 1 or cg <= 16 or s * cg * per * acc_bytes <= COLS_FINISH_BYTES:
            break
        cg //= 2
    if s == 1 and vec and nred >= 2 * COLS_UNROLL and nred * itemsize <= lane_bytes:
        cg = min(cg, COLS_BLOCK // _pow2_floor(nred // COLS_UNROLL))
        gx = -(-groups // cg)
    chunk = -(-nred // s)
    return ColsPlan(vec, cg, gx, -(-nred // chunk), chunk, short_walk(vec, cg, chunk))

"""GPU tests of the scatter ceiling (``lab/campaigns/memcpy/ceiling.py``, ``pytest -m gpu`` on the
GPU machine): every shape on batches of tiny and of mixed buffers writes exactly the first byte
of every buffer and its last byte where that lies in another 32-byte sector on either side
(``ceiling.last_touched``), from its source, and nothing else; its record through the planned
grid's runner."""
from __future__ import annotations

import numpy as np
import pytest

import warplab

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)
cupy = pytest.importorskip("cupy")

from warplab.lab.campaigns.memcpy.bench import Case  # noqa: E402
from warplab.lab.campaigns.memcpy.ceiling import (  # noqa: E402
    CEILING,
    SHAPE_NAMES,
    last_touched,
    touch_check,
)
from warplab.lab.campaigns.memcpy.ceiling_cuda import cuda_ceiling, scatter_touch  # noqa: E402
from warplab.lab.campaigns.memcpy.cells import GUARD, POISON, address  # noqa: E402
from warplab.lab.campaigns.memcpy.grid import Arena, GridCell, SizeSet, run_planned  # noqa: E402
from warplab.lab.campaigns.memcpy.plan import plan_cells  # noqa: E402

CASES = [(1, 8, 1, "shuffle", "shuffle"), (1, 8, 4, "consecutive", "shuffle"),
         (0, 8, 1, "shuffle", "consecutive"), (1, 1024, 1, "shuffle", "shuffle"),
         (1, 1024, 16, "consecutive", "consecutive"), (1, 1, 1, "shuffle", "shuffle"),
         (1, 64, 1, "shuffle", "shuffle"), (16, 16, 16, "shuffle", "shuffle"),
         (1, 33, 1, "consecutive", "consecutive")]


def _expected(cell: GridCell) -> np.ndarray:
    """The whole destination (guards included) after one touch of a poisoned one."""
    src = cell.src.get()
    sizes, s_off, d_off = (a.get().astype(np.int64) for a in (cell.sizes, cell.src_off,
                                                               cell.dst_off))
    want = np.full(cell.dst.size, POISON, dtype=np.uint8)
    full = sizes > 0
    two = last_touched(s_off + GUARD + address(cell.src), d_off + GUARD + address(cell.dst),
                       sizes)
    for at, s_end, d_end in ((full, s_off, d_off), (two, s_off + sizes - 1, d_off + sizes - 1)):
        want[d_end[at] + GUARD] = src[s_end[at] + GUARD]
    return want


def _touch_is_exact(lo: int, hi: int, align: int, src_layout: str, dst_layout: str,
                    launch) -> GridCell:
    """One launch into a poisoned destination, every destination byte checked; the cell."""
    ss = SizeSet(cupy, lo, hi, align, 1 << 18)
    cell = GridCell(Arena(cupy, ss.data), ss, Case(lo, hi, src_layout, dst_layout, align,
                                                   1 << 18))
    cell.dst.fill(POISON)
    launch(cell.batch)
    cupy.cuda.get_current_stream().synchronize()
    bad = np.flatnonzero(cell.dst.get() != _expected(cell))
    assert bad.size == 0, f"{bad.size} bytes differ, first at {bad[:5]}"
    return cell


@pytest.mark.parametrize("lo, hi, align, src_layout, dst_layout", CASES)
@pytest.mark.parametrize("shape", SHAPE_NAMES)
def test_every_shape_touches_exactly_the_end_sectors(lo: int, hi: int, align: int,
                                                     src_layout: str, dst_layout: str,
                                                     shape: str) -> None:
    cell = _touch_is_exact(lo, hi, align, src_layout, dst_layout, cuda_ceiling().shapes[shape])
    assert touch_check(cupy, cell) is None


@pytest.mark.parametrize("lo, hi, align, src_layout, dst_layout", CASES[:4])
@pytest.mark.parametrize("block, per_thread, warp, grid",
                         [(256, 1, False, 0.0), (256, 2, False, 0.25), (128, 2, False, 0.5),
                          (256, 4, False, 0.0), (256, 1, True, 0.0), (256, 1, True, 0.5)])
def test_other_grids_and_blocks_touch_exactly_the_end_sectors(
        lo: int, hi: int, align: int, src_layout: str, dst_layout: str, block: int,
        per_thread: int, warp: bool, grid: float) -> None:
    """The shapes the explore script times beside the ceiling's own (a block per chunk, a part
    of the resident grid, other blocks) touch the same bytes."""
    _touch_is_exact(lo, hi, align, src_layout, dst_layout,
                    lambda b: scatter_touch(b, block, per_thread, warp, grid=grid))


def test_empty_batch_launches_nothing() -> None:
    from warplab.families.memcpy.cuda import DeviceBatch

    z = cupy.zeros(0, dtype=np.uint64)
    for launch in cuda_ceiling().shapes.values():
        launch(DeviceBatch(z, z, z, 0, None))


def test_fresh_l2_resets_the_persisting_lines() -> None:
    """The driver call the planned grid makes before each target exists and succeeds, also
    right after a kernel that stored with an L2 evict-last hint (load policy 34's copy)."""
    from warplab.families.memcpy.cuda import DeviceBatch, run_warp_classes
    from warplab.lab.campaigns.memcpy.grid import fresh_l2
    from warplab.families.memcpy.spec import WARP_CLASSES_SWEEP

    hinted = next(c for c in WARP_CLASSES_SWEEP if c.loads == 34)
    src, dst = cupy.arange(64, dtype=cupy.uint8), cupy.zeros(64, dtype=cupy.uint8)
    sizes = cupy.full(8, 8, dtype=cupy.uint64)
    starts = cupy.arange(8, dtype=cupy.uint64) * 8
    run_warp_classes(DeviceBatch(src.data.ptr + starts, dst.data.ptr + starts, sizes, 8, None),
                     hinted)
    assert fresh_l2(cupy) is True
    cupy.cuda.get_current_stream().synchronize()
    assert bool((dst == src).all())


def test_ceiling_record_through_the_runner() -> None:
    grid = [Case(1, 8, "shuffle", "shuffle", 1, 1 << 20),
            Case(1, 1024, "consecutive", "shuffle", 1, 1 << 22)]
    cells = plan_cells(grid, [CEILING], auto_total=False, runs=3, warmup=1)
    with cupy.cuda.Stream(non_blocking=True):
        records, notes, complete = run_planned(cells, [cuda_ceiling()], {})
    assert complete and len(records) == 2
    # the driver's reset of persisting L2 lines ran before each target (grid.fresh_l2)
    assert "persisting L2 lines reset to normal before each target" in notes
    for r in records:
        p = r["params"]
        assert r["verified"], r["error"]
        assert r["provider"] == "ceiling" and p["mode"] == "ceiling"
        assert p["shape"] in p["shape_ms"] and len(p["shape_ms"]) == len(SHAPE_NAMES)
        assert r["gbps"] and r["bytes_moved"] == r["data_bytes"] + 24 * p["count"]

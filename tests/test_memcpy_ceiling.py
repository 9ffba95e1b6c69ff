"""The scatter ceiling of a batched-copy cell (lab/campaigns/memcpy/ceiling.py) on the CPU:
the target rule against it, its record through the planned grid's runner (host addresses,
fake timer), its check after a poisoned run, its place in the plan and the report, and the
kernel's compilation with nvcc."""
from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from test_memcpy_plan import _copy_by_address, _timer, _touch_by_address, host_ceiling

from warplab.lab.harness.campaign import finish_campaign
from warplab.lab.harness.comparators import Provider
from warplab.lab.campaigns.memcpy import plan as P
from warplab.lab.campaigns.memcpy.bench import MEMCPY_CAMPAIGNS, cases
from warplab.lab.campaigns.memcpy.ceiling import CEILING, SHAPE_NAMES, TOUCHED, last_touched
from warplab.lab.campaigns.memcpy.cells import Case
from warplab.lab.campaigns.memcpy.grid import run_planned
from warplab.lab.report import load_results
from warplab.lab.report.memcpy import every_variant_tables, grid_tables
from warplab.lab.report.memcpy_grid import case_key
from warplab.lab.report.memcpy_target import cell_ceiling, scatter_ceilings, target_met

COPY = 3000.0
ROOT = Path(__file__).resolve().parent.parent
DEFAULT = "warp_tiers_windows"


@pytest.mark.parametrize("ratio, pct, cub, scatter, lo, want", [
    (1.2, 10.0, 250.0, None, 1, True),        # 1.2x CUB: passes whatever the ceilings
    (1.2, 10.0, 250.0, 280.0, 1, True),
    (1.1, 10.0, 250.0, None, 1, False),       # no scatter ceiling: the copy ceiling alone
    (1.1, 10.0, 250.0, 400.0, 1, False),      # 1.2x CUB (300) below the scatter ceiling
    (1.1, 9.2, 250.0, 290.0, 1, True),        # 1.2x CUB above it, default (276) at 95.2%
    (1.1, 9.1, 250.0, 290.0, 1, False),       # ... at 94.1%
    (1.1, 9.2, 250.0, 290.0, 2, True),
    (1.05, 96.0, 2600.0, 5000.0, 1, True),    # the scatter ceiling above copy: copy decides
    (1.05, 94.0, 2600.0, 5000.0, 1, False),
    (1.3, 89.0, 1000.0, 9000.0, 1024, False),  # >= 1 KiB buffers: 90% of copy, unchanged
    (1.3, 91.0, 1000.0, 9000.0, 1024, True),
    (None, 9.2, None, 290.0, 1, None),        # no CUB
])
def test_target_rule_with_the_scatter_ceiling(ratio: float | None, pct: float, cub: float | None,
                                              scatter: float | None, lo: int,
                                              want: bool | None) -> None:
    assert target_met(ratio, pct, cub, COPY, lo, scatter) is want


def test_target_rule_needs_the_copy_ceiling() -> None:
    assert target_met(1.3, 10.0, 250.0, None, 1, 290.0) is None
    assert cell_ceiling(COPY, 290.0) == 290.0 and cell_ceiling(COPY, None) == COPY
    assert cell_ceiling(None, None) is None


def _ordered_timer(fn: Any, runs: int, warmup: int) -> tuple[list[float], bool]:
    """Each call 1 ms faster than the one before (from 100 ms): the last one timed wins."""
    _ordered_timer.calls += 1  # type: ignore[attr-defined]
    for _ in range(runs + warmup):
        fn()
    return [100.0 - _ordered_timer.calls] * runs, True  # type: ignore[attr-defined]


def _cells(lo: int = 1, hi: int = 64, total: int = 1 << 15) -> list[P.PlannedCell]:
    grid = [Case(lo, hi, s, d, 1, total) for s, d in (("consecutive", "shuffle"),
                                                     ("shuffle", "shuffle"))]
    return P.plan_cells(grid, [DEFAULT, P.CUB, CEILING], auto_total=False, runs=3, warmup=1)


def _targets(touch: Any = _touch_by_address) -> list[Any]:
    return [SimpleNamespace(name=DEFAULT, fn=_copy_by_address),
            Provider(P.CUB, "cub", lambda: None, _copy_by_address), host_ceiling(touch)]


def test_runner_records_the_fastest_shape_as_the_ceiling(tmp_path: Path) -> None:
    _ordered_timer.calls = 0  # type: ignore[attr-defined]
    cells = _cells()
    records, _, complete = run_planned(cells, _targets(), {"copy_gbps": COPY}, xp=np,
                                       timer=_ordered_timer)
    assert complete and len(records) == 3 * len(cells)
    ceil = [r for r in records if r["variant"] == CEILING]
    assert len(ceil) == len(cells)
    for r in ceil:
        p = r["params"]
        assert r["verified"], r["error"]
        assert r["provider"] == "ceiling" and p["mode"] == "ceiling" and p["touched"] == TOUCHED
        assert p["timing"] == "back_to_back" and p["runs"] == 3
        assert set(p["shape_ms"]) == set(SHAPE_NAMES)
        assert p["shape"] == SHAPE_NAMES[-1]  # timed last: the fastest
        assert r["phases"]["kernel"]["median"] == min(p["shape_ms"].values())
        assert r["bytes_moved"] == r["data_bytes"] + 24 * p["count"]  # the variants' count
    path = tmp_path / "m.json"
    finish_campaign("cpu", {"copy_gbps": COPY}, [], "full", records, path)
    res = load_results(path)
    (t,) = grid_tables(res)
    rows = [dict(zip(t.columns, r)) for r in t.rows]
    by_case = {r["params"]["case"]: r for r in ceil}
    assert len(rows) == len(cells)
    for row in rows:
        assert row["scatter GB/s"] is not None and row["% of scatter"] is not None
    assert sorted(row["scatter GB/s"] for row in rows) == pytest.approx(
        sorted(r["gbps"] for r in by_case.values()))
    (every,) = every_variant_tables(res)
    assert CEILING not in every.columns  # not a copy variant
    assert "scatter_touch" not in " ".join(str(c) for c in t.rows)


def test_report_judges_a_ceiling_against_the_copies_of_its_own_run(tmp_path: Path) -> None:
    """The newest run's ceiling (its fastest ceiling record per cell) stands against that
    run's copies only: a faster copy in an older run (other batches, or a state no grid
    measures) does not make it invalid; a faster copy in the same run does."""
    import copy

    old, _, _ = run_planned(_cells(), _targets(), {"copy_gbps": COPY}, xp=np, timer=_timer)
    new = copy.deepcopy(old)
    for r in old:
        if r["variant"] == DEFAULT:
            r["gbps"] *= 10  # far above any ceiling: in another run
    for r in new:
        if r["variant"] == CEILING:
            r["gbps"] *= 2
    other = [dict(copy.deepcopy(r), variant=f"{CEILING}[other]") for r in new
             if r["variant"] == CEILING]
    for r in other:
        r["gbps"] *= 1.5  # the run's fastest touch: 3x
    finish_campaign("cpu", {"copy_gbps": COPY}, [], "full", old, tmp_path / "a.json")
    finish_campaign("cpu", {"copy_gbps": COPY}, [], "full", new + other, tmp_path / "b.json")
    res = load_results(tmp_path)
    got = scatter_ceilings(res, case_key)
    copies = [r["gbps"] for r in new if r["variant"] == DEFAULT]
    assert len(got) == 2
    for s in got.values():
        assert s.valid and s.row.source == "b.json" and s.row.variant == f"{CEILING}[other]"
        assert s.gbps == pytest.approx(3 * max(copies))
    for r in new:
        if r["variant"] == DEFAULT:
            r["gbps"] *= 4  # now faster than the touch, in the same run
    finish_campaign("cpu", {"copy_gbps": COPY}, [], "full", new + other, tmp_path / "b.json")
    assert not any(s.valid for s in scatter_ceilings(load_results(tmp_path), case_key).values())


def _copy_all(b: Any) -> None:
    _copy_by_address(b)


def _skip_last(b: Any) -> None:
    for s, d, n in zip(b.src, b.dst, b.sizes):
        if int(n) > 0:
            ctypes.memmove(int(d), int(s), 1)


def _past_the_end(b: Any) -> None:
    _touch_by_address(b)
    i = int(np.argmax(b.dst))
    ctypes.memset(int(b.dst[i]) + int(b.sizes[i]), 0, 1)


def _both_ends(b: Any) -> None:
    for s, d, n in zip(b.src.tolist(), b.dst.tolist(), b.sizes.tolist()):
        if n > 0:
            ctypes.memmove(d, s, 1)
            ctypes.memmove(d + n - 1, s + n - 1, 1)


@pytest.mark.parametrize("broken, needle", [
    (_copy_all, "untouched bytes"), (_skip_last, "touched bytes"),
    (_both_ends, "untouched bytes"),  # both end bytes even where the last is in the first's sector
    (_past_the_end, "guard byte")])
def test_ceiling_check_catches(broken: Any, needle: str) -> None:
    records, _, _ = run_planned(_cells(1, 64), _targets(broken), {}, xp=np, timer=_timer)
    bad = [r for r in records if not r["verified"]]
    assert {r["variant"] for r in bad} == {CEILING}
    assert all(needle in r["error"] and r["gbps"] is None for r in bad)


@pytest.mark.parametrize("src, dst, size, want", [
    (0, 0, 0, False), (5, 7, 1, False),        # empty, one byte
    (0, 0, 32, False), (0, 32, 32, False),     # one sector each side
    (0, 0, 33, True), (1, 0, 32, True),        # the source's last byte in the next sector
    (0, 31, 2, True), (31, 60, 2, True),       # the destination's, the source's
    (8, 40, 8, False), (28, 64, 4, False), (28, 64, 5, True)])
def test_last_touched_where_an_end_is_in_another_sector(src: int, dst: int, size: int,
                                                        want: bool) -> None:
    got = last_touched(np.array([src]), np.array([dst]), np.array([size]))
    assert got.tolist() == [want]


def test_ceiling_of_one_byte_buffers() -> None:
    # 4096 one-byte buffers in shuffled places: the host copies move each with ctypes, once
    # per run and shape, so 2^15 of them took seconds and exercised nothing more
    records, _, _ = run_planned(_cells(1, 1, 1 << 12), _targets(), {}, xp=np, timer=_timer)
    assert all(r["verified"] for r in records), [r["error"] for r in records]


def test_plan_times_every_shape_and_fits_one_call() -> None:
    c = Case(1, 8, "shuffle", "shuffle", 1, 1 << 26)
    (one,) = P.plan_cells([c], ["x"], auto_total=False)
    (ceil,) = P.plan_cells([c], [CEILING], auto_total=False)
    launch = P.launch_s("x", 1, 8, 1, 1 << 26)
    assert ceil.est_s - one.est_s == pytest.approx(
        ((P.RUNS + P.WARMUP + 1) * len(SHAPE_NAMES) - P.RUNS - P.WARMUP - 1) * launch)
    names = ["warp_classes", "warp_tiers", DEFAULT, P.CUB, CEILING]
    cells = P.plan_cells(cases(MEMCPY_CAMPAIGNS["full"]), names)
    assert all(CEILING in p.targets for p in cells)
    assert P.estimate_s(cells) < 300  # the per-call limit is 600 s


@pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/bin/nvcc").exists(),
                    reason="no nvcc")
@pytest.mark.parametrize("arch", ["sm_75", "sm_90"])
def test_kernel_compiles(arch: str, tmp_path: Path) -> None:
    from warplab.core.loader import defines
    from warplab.lab.campaigns.memcpy import ceiling_cuda

    nvcc = shutil.which("nvcc") or "/usr/local/bin/nvcc"
    out = subprocess.run(
        [nvcc, f"-arch={arch}", "-std=c++17", f"-I{ROOT / 'src/warplab/core'}", f"-I{ceiling_cuda.MEMCPY_HEADERS}",
         *defines(ceiling_cuda.DEFINES), "-Werror", "all-warnings", "-Xptxas", "-v", "-cubin",
         str(ceiling_cuda.SOURCE), "-o", str(tmp_path / "ceiling.cubin")],
        capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    for expr in ceiling_cuda._EXPRESSIONS:  # every shape instantiated for nvcc too
        assert f"template __global__ void {expr}(" in ceiling_cuda.SOURCE.read_text()
    assert "bytes spill" in out.stderr
    assert not re.search(r"[1-9][0-9]* bytes spill", out.stderr), out.stderr

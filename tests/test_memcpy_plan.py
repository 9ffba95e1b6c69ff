"""The planned memcpy grid on the CPU (no GPU): the plan's rules and estimate
(lab/campaigns/memcpy/plan.py), the device-side draws with NumPy as the array module, and the whole
runner (lab/campaigns/memcpy/grid.py) with targets that copy by host address and a fake timer."""
from __future__ import annotations

import ctypes
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from warplab import cli
from warplab.lab.harness.campaign import finish_campaign
from warplab.lab.harness.comparators import Provider
from warplab.lab.campaigns.memcpy import plan as P
from warplab.lab.campaigns.memcpy.bench import MEMCPY_CAMPAIGNS, Case, cases, plan_of
from warplab.lab.campaigns.memcpy.ceiling import CEILING, SHAPE_NAMES, ScatterCeiling, last_touched
from warplab.lab.campaigns.memcpy.cells import GUARD, POISON, draw_sizes, layout_offsets
from warplab.lab.campaigns.memcpy.grid import Arena, GridCell, SizeSet, run_planned
from warplab.lab.report import load_results
from warplab.lab.report.memcpy import grid_tables

FAST = ["size_classes_tuned", "warp_classes", "size_classes", P.CUB]
ALL = FAST[:3] + ["warp_per_buffer", "block_per_buffer", "loop_memcpy_async", P.CUB,
                  "cudaMemcpyBatchAsync"]


def full_plan(copy_gbps: float = P.COPY_GBPS_H100) -> list[P.PlannedCell]:
    return plan_of("full", None, ALL, copy_gbps)


def test_full_plan_covers_the_pr_grid_with_fast_targets_everywhere() -> None:
    cells = full_plan()
    c = MEMCPY_CAMPAIGNS["full"]
    assert len(cells) == len(cases(c)) == 140  # 12 ranges x 3 aligns - (1-8 B, align 16), x 4
    assert {(p.case.src_layout, p.case.dst_layout) for p in cells} == set(c.layouts)
    assert {p.case.align for p in cells} == {1, 4, 16}
    witness = []
    for p in cells:
        k = p.case
        assert all(n in p.targets for n in FAST), p
        if (k.lo, k.hi, k.src_layout, k.dst_layout, k.align) in P.WITNESS:
            witness.append(p)
        else:
            assert not set(p.targets) & set(P.SLOW), p
    assert len(witness) == 2
    small, large = sorted(witness, key=lambda p: p.case.hi)
    assert set(small.targets) == set(FAST) | {"warp_per_buffer", "block_per_buffer"}
    assert set(large.targets) == set(ALL)  # 4096 buffers: the per-buffer targets run too


def test_cell_totals_keep_every_launch_above_the_floor() -> None:
    for gbps in (P.COPY_GBPS_H100, 4300.0):
        for p in full_plan(gbps):
            k = p.case
            need = gbps * 1e9 * P.MIN_LAUNCH_S
            assert P.expected_bytes(k.lo, k.hi, k.align, k.total) >= need, p
            if k.total > P.TOTALS[0]:  # the next smaller total would fall short
                assert P.expected_bytes(k.lo, k.hi, k.align, k.total // 2) < need
            assert p.count == P.buffer_count(k.lo, k.hi, k.align, k.total)
    # small buffers carry 24 bytes of metadata each: less data for the same launch
    by = {(p.case.lo, p.case.hi, p.case.align): p.case.total for p in full_plan()}
    assert by[(1, 8, 1)] < by[(16, 16, 1)] < by[(65536, 65536, 1)]


def test_estimate_fits_one_gpu_call() -> None:
    cells = full_plan()
    est = P.estimate_s(cells)
    assert 60 < est < 300, est  # the plan's own figure; the per-call limit is 600 s
    assert sum(p.est_s for p in cells) < est
    big = plan_of("full", cases(MEMCPY_CAMPAIGNS["full"], 512 << 20), ALL, None)
    assert all(p.case.total == 512 << 20 for p in big)  # --sizes: the totals as given
    assert P.estimate_s(big) > est


def test_runs_of_slow_and_fast_targets() -> None:
    p = full_plan()[0]
    assert p.runs_of("warp_classes") == (P.RUNS, P.WARMUP)
    assert p.runs_of("block_per_buffer") == (P.SLOW_RUNS, P.SLOW_WARMUP)


@pytest.mark.parametrize("lo,hi,align", [(1, 8, 1), (1, 64, 4), (16, 16, 16), (1, 4096, 16)])
@pytest.mark.parametrize("layout", ["consecutive", "shuffle"])
def test_device_draws_pack_the_buffers(lo: int, hi: int, align: int, layout: str) -> None:
    sizes = draw_sizes(np, lo, hi, align, 1 << 16)
    assert sizes.dtype == np.int64 and sizes.size == P.buffer_count(lo, hi, align, 1 << 16)
    assert (sizes >= lo).all() and (sizes <= hi).all() and (sizes % align == 0).all()
    off = layout_offsets(np, sizes, layout, 2)
    order = np.argsort(off, kind="stable")
    ends = off[order] + sizes[order]
    assert off[order][0] == 0 and (off[order][1:] == ends[:-1]).all()
    if layout == "shuffle":
        assert not (np.diff(off) >= 0).all()
        assert not np.array_equal(off, layout_offsets(np, sizes, layout, 3))


def _copy_by_address(b: Any) -> None:
    for s, d, n in zip(b.src.tolist(), b.dst.tolist(), b.sizes.tolist()):
        ctypes.memmove(d, s, n)


def _touch_by_address(b: Any) -> None:
    """The scatter ceiling with host addresses: every buffer's first byte, and its last one
    where ``last_touched`` says so."""
    last = last_touched(b.src, b.dst, b.sizes)
    for s, d, n, two in zip(b.src.tolist(), b.dst.tolist(), b.sizes.tolist(), last.tolist()):
        if n > 0:
            ctypes.memmove(d, s, 1)
        if two:
            ctypes.memmove(d + n - 1, s + n - 1, 1)


def host_ceiling(touch: Any = _touch_by_address) -> ScatterCeiling:
    """The ceiling target on host addresses, one launch per shape of the cuda one."""
    return ScatterCeiling(CEILING, {name: touch for name in SHAPE_NAMES})


def _drop_last_byte(b: Any) -> None:
    _copy_by_address(b)
    i = int(np.argmax(b.sizes))
    ctypes.memset(int(b.dst[i]) + int(b.sizes[i]) - 1, POISON, 1)


def _past_the_end(b: Any) -> None:
    _copy_by_address(b)
    i = int(np.argmax(b.dst))
    ctypes.memset(int(b.dst[i]) + int(b.sizes[i]), 0, 1)


def _timer(fn: Any, runs: int, warmup: int) -> tuple[list[float], bool]:
    for _ in range(runs + warmup):
        fn()
    return [1.0] * runs, True


HOST_SEEN: list[bool] = []  # per call of the fake cudaMemcpyBatchAsync: had host arrays


def _runtime(b: Any) -> None:
    HOST_SEEN.append(b.host is not None)
    _copy_by_address(b)


def _targets(**fns: Any) -> list[Any]:
    HOST_SEEN.clear()
    out: list[Any] = [SimpleNamespace(name=n, fn=fns.get(n, _copy_by_address)) for n in ALL
                      if n not in (P.CUB, "cudaMemcpyBatchAsync")]
    return out + [Provider(P.CUB, "cub", lambda: None, fns.get(P.CUB, _copy_by_address)),
                  Provider("cudaMemcpyBatchAsync", "cudart", lambda: None, _runtime)]


def _small_plan() -> list[P.PlannedCell]:
    grid = [Case(lo, hi, s, d, 1, 1 << 16) for lo, hi in ((1, 64), (65536, 65536), (16, 16))
            for s, d in (("consecutive", "consecutive"), ("shuffle", "consecutive"))]
    return P.plan_cells(grid, ALL, auto_total=False, runs=3, warmup=1)


def test_runner_measures_and_verifies_every_planned_target(tmp_path: Path) -> None:
    cells = _small_plan()
    tgts = _targets()
    seen: list[dict] = []
    lines: list[str] = []
    records, notes, complete = run_planned(cells, tgts, {"copy_gbps": 100.0}, xp=np,
                                           timer=_timer, add=seen.append, log=lines.append)
    assert complete and records == seen and len(lines) == len(cells)
    assert len(records) == sum(len(p.targets) for p in cells)
    for r in records:
        assert r["verified"], r["error"]
        p = r["params"]
        assert p["timing"] == "back_to_back" and p["held"] is True
        assert p["runs"] == (P.SLOW_RUNS if r["variant"] in P.SLOW else 3)
        assert r["bytes_moved"] == r["data_bytes"] + 24 * p["count"]
    # the per-buffer comparator ran in the two witness cells (few buffers at 64 KiB), with the
    # batch's host arrays
    assert sum(r["variant"] == "cudaMemcpyBatchAsync" for r in records) == 2
    assert HOST_SEEN == [True] * 2 * (P.SLOW_RUNS + P.SLOW_WARMUP + 2)
    assert any("slow baselines" in n for n in notes)
    path = tmp_path / "memcpy.json"
    finish_campaign("cpu", {"copy_gbps": 100.0}, notes, "full", records, path)  # schema 1
    tables = grid_tables(load_results(path))
    assert len(tables) == 1 and len(tables[0].rows) == len(cells)
    rows = [dict(zip(tables[0].columns, r)) for r in tables[0].rows]
    assert sorted(r["data (MiB)"] for r in rows) == pytest.approx(sorted(
        r["data_bytes"] / 2 / (1 << 20) for r in records if r["variant"] == FAST[0]))
    assert all(r["default / CUB"] == pytest.approx(1.0) for r in rows)  # 1 ms for everyone


@pytest.mark.parametrize("broken,needle", [(_drop_last_byte, "sampled bytes"),
                                           (_past_the_end, "guard byte")])
def test_runner_catches_a_wrong_copy(broken: Any, needle: str) -> None:
    cells = _small_plan()[:2]
    records, _, _ = run_planned(cells, _targets(warp_classes=broken), {}, xp=np,
                                timer=_timer)
    bad = [r for r in records if not r["verified"]]
    assert {r["variant"] for r in bad} == {"warp_classes"}
    assert all(needle in r["error"] and r["gbps"] is None for r in bad)


def test_runner_stops_at_the_deadline() -> None:
    records, notes, complete = run_planned(_small_plan(), _targets(), {}, xp=np, timer=_timer,
                                           deadline_s=0.0)
    assert records == [] and not complete
    assert any("stopped at the deadline" in n and "6 of 6" in n for n in notes)


def test_runner_resets_the_persisting_l2_lines_before_each_target(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines stored with an L2 evict-last hint outlive their kernel and speed up later ones
    (H100, benchmarks/NOTES.md): the runner resets them before every target, and says so;
    where it cannot (NumPy here) the note says that what ran before may speed a target up."""
    from warplab.lab.campaigns.memcpy import grid as G

    assert G.fresh_l2(np) is False
    _, notes, _ = run_planned(_small_plan()[:1], _targets(), {}, xp=np, timer=_timer)
    assert any("not reset" in n for n in notes)
    calls: list[Any] = []
    monkeypatch.setattr(G, "fresh_l2", lambda xp: calls.append(xp) or True)
    cells = _small_plan()[:2]
    records, notes, _ = run_planned(cells, _targets(), {}, xp=np, timer=_timer)
    assert len(calls) == len(records) + 1 and any("reset to normal" in n for n in notes)
    calls.clear()
    _, notes, _ = run_planned(cells, _targets(), {}, xp=np, timer=_timer, reset_l2=False)
    assert calls == [] and not any("L2" in n for n in notes)


def test_arena_grows_and_cells_share_sizes() -> None:
    arena = Arena(np, 1000)
    ss = SizeSet(np, 1, 64, 1, 1 << 14)
    arena.fit(ss.data)
    assert arena.capacity >= ss.data
    a = GridCell(arena, ss, Case(1, 64, "shuffle", "shuffle", 1, 1 << 14))
    b = GridCell(arena, ss, Case(1, 64, "shuffle", "consecutive", 1, 1 << 14))
    assert a.src_off is b.src_off and a.dst_off is not b.dst_off
    assert a.batch.host is None and int(a.batch.src[0]) >= a.src.ctypes.data + GUARD


def test_dry_run_prints_the_plan_and_writes_nothing(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "runs"
    assert cli.main(["bench", "memcpy", "--full", "--dry-run", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "140 cells" in text and "in all" in text and "1-8 B" in text
    assert not out.exists()
    assert cli.main(["bench", "memcpy", "--table", "--dry-run", "--out", str(out)]) == 0
    assert "not a planned campaign" in capsys.readouterr().out


@pytest.fixture
def numpy_gpu(monkeypatch: pytest.MonkeyPatch) -> Any:
    """bench.run_memcpy's cuda path on a stand-in CuPy that is NumPy (targets, ceilings, timer
    and the document's device patched); yields the bench module."""
    import contextlib
    import sys
    import types

    from warplab.lab.harness import timing
    from warplab.lab.campaigns.memcpy import bench

    class NumpyAsCupy(types.ModuleType):
        def __getattr__(self, name: str) -> Any:
            return getattr(np, name)

    fake = NumpyAsCupy("cupy")
    fake.cuda = SimpleNamespace(  # type: ignore[attr-defined]
        Stream=lambda non_blocking: contextlib.nullcontext(),
        get_current_stream=lambda: SimpleNamespace(synchronize=lambda: None))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(timing, "back_to_back_samples", _timer)
    monkeypatch.setattr(bench, "targets", lambda names, cmp: (_targets(), ["a note"]))
    monkeypatch.setattr(bench, "ceiling_target", host_ceiling)
    monkeypatch.setattr(bench, "measure_all", lambda backend: {"copy_gbps": 100.0})
    real = bench.finish_campaign
    monkeypatch.setattr(bench, "finish_campaign",
                        lambda backend, *a: real("cpu", *a))  # no GPU to describe
    return bench


GRID = [Case(1, 64, s, d, 4, 1 << 15) for s in ("consecutive", "shuffle")
        for d in ("consecutive", "shuffle")]


def test_run_memcpy_full_goes_through_the_plan(numpy_gpu: Any, tmp_path: Path) -> None:
    lines: list[str] = []
    doc = numpy_gpu.run_memcpy(campaign="full", backend="cuda", json_path=tmp_path / "m.json",
                               grid=GRID, call_arrays=(), log=lines.append)
    assert lines[0].startswith("memcpy full: 4 cells, 20 records planned")
    assert len(doc["results"]) == 20 and all(r["verified"] for r in doc["results"])
    ceil = [r for r in doc["results"] if r["params"]["mode"] == "ceiling"]
    assert len(ceil) == 4 and {r["provider"] for r in ceil} == {"ceiling"}
    assert {r["params"]["size"] for r in doc["results"]} == {1 << 15}  # --sizes kept
    assert "a note" in doc["meta"]["notes"]
    assert any(n.startswith("planned grid: 4 of 4 cells") for n in doc["meta"]["notes"])


def test_sigterm_keeps_the_records_so_far(numpy_gpu: Any, monkeypatch: pytest.MonkeyPatch,
                                          tmp_path: Path) -> None:
    import os
    import signal

    from warplab.lab.harness import timing

    calls = []

    def timer(fn: Any, runs: int, warmup: int) -> tuple[list[float], bool]:
        calls.append(1)
        if len(calls) == 4 + len(SHAPE_NAMES) + 1:  # as `timeout` would, during the sixth
            # record (the fifth, the scatter ceiling, times each of its shapes)
            os.kill(os.getpid(), signal.SIGTERM)
        return _timer(fn, runs, warmup)

    monkeypatch.setattr(timing, "back_to_back_samples", timer)
    before = signal.getsignal(signal.SIGTERM)
    path = tmp_path / "m.json"
    doc = numpy_gpu.run_memcpy(campaign="full", backend="cuda", json_path=path, grid=GRID,
                               call_arrays=())
    assert len(doc["results"]) == 5 and path.exists()
    assert any(n.startswith("terminated (SIGTERM) after 5 of 20") for n in doc["meta"]["notes"])
    assert signal.getsignal(signal.SIGTERM) == before

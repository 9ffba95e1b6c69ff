"""Report for the latency campaign: a real H100 campaign (trimmed: tests/fixtures/README.md)
loads without failures, its tables give the numbers ``warplab latency`` prints (medians in µs, warplab ÷ torch paired per round),
the targets name the cases that meet them, one figure per case draws the bars and the floor,
and the generic places (glance and median tables, summary rows, roofline) leave it out; small
fixture docs cover a run without torch, a cpu run and failing records (no GPU)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from matplotlib.axes import Axes
from matplotlib.image import imread

from conftest import RESULT_FIXTURES

from warplab.lab.harness import results as results_mod
from warplab.lab.harness.results import read_text
from warplab.lab.harness.stats import summarize
from warplab.lab.campaigns.latency.command import _paired
from warplab.lab.report import build as report_build, gallery as report_gallery
from warplab.lab.report import build_report, load_results, make_figures
from warplab.lab.report.latency import (
    FLOORS, cases, latency_figures, mode_tables, ratio, target_lines, targets, targets_table,
)
from warplab.lab.report.roofline import best_points
from warplab.lab.report.summary import family_notes, headlines
from warplab.lab.report.tables import failures_table, glance_tables, median_tables

from test_report_reduce import parse_tables

LATENCY = RESULT_FIXTURES / "latency-table-h100-a32d6b2.json"
# a run of every family on the H100 (docs/report-screenshot.png is drawn from the full files)
H100 = [RESULT_FIXTURES / f"{n}.json" for n in (
    "histogram-table-h100-b907bd7", "reduce-table-h100-7484a8f", "matmul-table-h100-1acfec3",
    "series-table-h100-89b585f", "corr-table-h100-7244eb0", "memcpy-table-h100-7244eb0",
    "stream-table-h100-89b585f", "latency-table-h100-a32d6b2")]
CASES = ["byte_hist_4k", "sum_1k", "mean_1k", "mean_rows_64", "series_stats_64",
         "corrcoef_8x64", "copy_batched_8", "memcpy_batched_8", "matmul_64", "histogram_1k",
         "bincount_1k"]


@cache
def raw_records() -> list[dict[str, Any]]:
    return json.loads(read_text(LATENCY))["results"]


def raw(case: str, mode: str, provider: str) -> dict[str, Any]:
    """The JSON record of one case, mode and provider (the floor: variant)."""
    key = "variant" if case == "floor" else "provider"
    (r,) = [r for r in raw_records() if r["params"]["case"] == case
            and r["params"]["mode"] == mode and r[key] == provider]
    return r


def us(case: str, mode: str, provider: str) -> float:
    return 1e3 * raw(case, mode, provider)["phases"]["total"]["median"]


# ------------------------------------------------------------------------- real campaigns


@pytest.mark.parametrize("path", H100, ids=lambda p: p.name)
def test_real_campaigns_load_without_failures(path: Path) -> None:
    res = load_results(path)
    assert res.failed_rows == []
    assert failures_table(res) is None
    if path.name.startswith("latency"):
        # 11 cases x 3 providers x 2 modes, plus the floors: CuPy's two (and, in the newer
        # files, warplab's own two) in both modes
        floors = {r.variant for r in res.rows if r.params["case"] == "floor"}
        assert floors in ({"floor", "floor_d2h"},
                          {"floor", "floor_d2h", "floor_launch", "floor_result"})
        assert len(res.ok_rows) == 66 + 2 * len(floors)
        assert all(r.median is None and r.stat("total") for r in res.rows)
        assert all(len(r.samples["total"]) == r.params["samples"] for r in res.rows)


def test_real_tables_match_the_cli() -> None:
    res = load_results(LATENCY)
    call, host = mode_tables(res)
    assert call.title == "latency: call latency, µs (medians)"
    assert call.columns == ["case", "input", "warplab", "cupy", "torch", "warplab ÷ torch",
                            "target: <= torch (cupy where torch has no op)"]
    assert [r[0] for r in call.rows] == CASES == [r[0] for r in host.rows]
    row = dict(zip(call.columns, call.rows[0]))  # byte_hist_4k
    assert row["input"] == "4 KiB of uint8, 256 bins"
    assert row["warplab"] == pytest.approx(59.85, abs=0.01)
    assert row["cupy"] == pytest.approx(284.35, abs=0.01)
    assert row["torch"] == pytest.approx(84.17, abs=0.01)
    assert row["warplab ÷ torch"] == pytest.approx(0.689, abs=5e-4)  # paired: 0.711 pooled
    assert row[call.columns[-1]] is True
    row = dict(zip(host.columns, host.rows[0]))
    assert (row["warplab"], row["cupy"], row["torch"]) == pytest.approx((25.34, 187.57, 46.80),
                                                                        abs=0.01)
    assert row["warplab ÷ torch"] == pytest.approx(0.541, abs=5e-4)
    assert row[host.columns[-1]] is True  # 25.3 µs, paired ratio 0.54 against torch
    # every cell is the CLI's number: medians, and its paired ratio
    for t, mode in ((call, "call_latency"), (host, "host_per_call")):
        for r in t.rows:
            case = r[0]
            assert r[2:5] == pytest.approx([us(case, mode, p) for p in ("warplab", "cupy",
                                                                        "torch")])
            assert r[5] == pytest.approx(_paired(raw(case, mode, "warplab"),
                                                 raw(case, mode, "torch")))
    assert "empty launch 12.2 µs, with a 4-byte D2H to pinned 17.8 µs (+ sync)" in call.note
    assert "empty launch 7.20 µs, with a 4-byte D2H to pinned 13.3 µs (no sync)" in host.note
    assert "medians" in call.note


def test_real_targets() -> None:
    res = load_results(LATENCY)
    (_, call_words, call, n1), (_, host_words, host, n2) = targets(res)
    assert call == ["byte_hist_4k", "series_stats_64", "memcpy_batched_8"] and n1 == 11
    assert host == ["byte_hist_4k", "series_stats_64", "memcpy_batched_8"] and n2 == 11
    assert target_lines(res) == [
        "call latency <= torch (cupy where torch has no op): met by byte_hist_4k, "
        "series_stats_64, memcpy_batched_8 (3 of 11 cases)",
        "host time per call <= torch (cupy where torch has no op): met by byte_hist_4k, "
        "series_stats_64, memcpy_batched_8 (3 of 11 cases)"]
    (t,) = targets_table(res)
    assert t.rows == [[call_words, "byte_hist_4k, series_stats_64, memcpy_batched_8", "3 of 11"],
                      [host_words, "byte_hist_4k, series_stats_64, memcpy_batched_8", "3 of 11"]]


@pytest.fixture(scope="module")
def real_report(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """The real campaign's report, built once for the three tests below (its eleven figures
    are most of their time): the page, what ``make_figures`` and ``latency_figures`` returned
    inside ``build_report`` and the figures they left out, and the bars and horizontal lines
    the figures drew (``Axes.bar`` and ``Axes.axhline`` spied on, each still drawing)."""
    got = SimpleNamespace(bars=[], lines=[], refs=None, figs=None, skipped=None)
    orig_bar, orig_line = Axes.bar, Axes.axhline

    def bar(self: Axes, x: Any, height: Any, *a: Any, **kw: Any) -> Any:
        got.bars.append(float(height))
        return orig_bar(self, x, height, *a, **kw)

    def axhline(self: Axes, y: float = 0, *a: Any, **kw: Any) -> Any:
        got.lines.append((y, str(kw.get("label", ""))))
        return orig_line(self, y, *a, **kw)

    def figures(results: Any, out_dir: Path, skipped: Any = None) -> Any:
        got.skipped = [] if skipped is None else skipped
        got.refs = make_figures(results, out_dir, got.skipped)
        return got.refs

    def latency(results: Any, name: Any, notes: Any) -> Any:
        got.figs = latency_figures(results, name, notes)
        return got.figs

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Axes, "bar", bar)
        mp.setattr(Axes, "axhline", axhline)
        mp.setattr(report_build, "make_figures", figures)
        mp.setattr(report_gallery, "latency_figures", latency)
        got.index = build_report(LATENCY, out_dir=tmp_path_factory.mktemp("latency") / "report")
    return got


def test_real_figures(real_report: SimpleNamespace) -> None:
    figs, bars, lines = real_report.figs, real_report.bars, real_report.lines
    assert real_report.skipped == []
    assert [f[2] for f in figs] == [(("case", c),) for c in CASES]
    fam, kind, _, title, path, series = figs[0]
    assert (fam, kind, series) == ("latency", "latency", ("warplab", "cupy", "torch"))
    assert title == "latency: byte_hist_4k — 4 KiB of uint8, 256 bins"
    assert imread(path).shape[1] == 720  # two panels in one column of the page's grid
    # byte_hist_4k: call latency, then host time per call; warplab, cupy, torch
    want = [us("byte_hist_4k", m, p) for m in ("call_latency", "host_per_call")
            for p in ("warplab", "cupy", "torch")]
    assert bars[:6] == pytest.approx(want)
    floors = [(us("floor", m, v), label) for m in ("call_latency", "host_per_call")
              for v, label in (("floor", "floor: empty launch"),
                               ("floor_d2h", "floor: launch + 4-byte D2H to pinned"))]
    assert lines[:4] == [(pytest.approx(y), lab) for y, lab in floors]
    assert len(bars) == 6 * 11 and len(lines) == 4 * 11


def test_real_page(real_report: SimpleNamespace) -> None:
    index = real_report.index
    page = index.read_text(encoding="utf-8")
    assert "70 verified records, 0 failed," in page
    assert 'id="failures"' not in page and "malformed" not in page
    sec = page[page.index('id="family-latency"'):]
    tables = {t["caption"]: t for t in parse_tables(sec)}
    call = tables["latency: call latency, µs (medians)"]
    assert call["rows"][0][:6] == ["byte_hist_4k", "4 KiB of uint8, 256 bins", "59.8", "284.4",
                                   "84.2", "0.69"]
    assert call["rows"][0][6] == "yes"
    assert "latency: host time per call, µs (medians)" in tables
    assert tables["latency: targets"]["rows"][1] == [
        "host time per call <= torch (cupy where torch has no op)",
        "byte_hist_4k, series_stats_64, memcpy_batched_8", "3 of 11"]
    for case in CASES:
        assert f'src="latency_{case}.png"' in sec
        assert (index.parent / f"latency_{case}.png").is_file()
    assert "Call latency and host time per call, per case" in sec
    summary = page[page.index('<section id="summary">'):page.index('<section id="devices">')]
    assert "met by byte_hist_4k, series_stats_64, memcpy_batched_8 (3 of 11 cases)" in summary


def test_generic_places_leave_latency_out(real_report: SimpleNamespace) -> None:
    res = load_results(H100)
    assert res.failed_rows == []
    assert not [t for t in glance_tables(res) + median_tables(res) if t.family == "latency"]
    assert "latency" not in {h.family for h in headlines(res)}
    assert all(p.row.family != "latency" for p in best_points(res.rows))
    assert len(family_notes(res)) == 2  # latency's targets, stream's rates
    # the figures of the latency campaign alone (its report's make_figures)
    assert {(f.family, f.kind) for f in real_report.refs} == {("latency", "latency")}
    assert real_report.skipped == []


# ---------------------------------------------------------------------------------- fixtures


def rec(case: str, mode: str, variant: str, provider: str, samples_us: list[float], *,
        backend: str = "cuda", ok: bool = True) -> dict[str, Any]:
    calls = len(samples_us) // 2 if mode == "call_latency" else 1
    params = {"size": 4096, "case": case, "mode": mode, "what": f"{case} input",
              "call": variant, "input": "device", "samples": len(samples_us), "warmup": 2,
              **({"rounds": 2, "calls": calls} if mode == "call_latency"
                 else {"bursts": len(samples_us), "burst": 1000})}
    phases = {"total": summarize([s / 1e3 for s in samples_us])} if samples_us else {}
    return results_mod.make_result(family="latency", variant=variant, provider=provider,
                                   backend=backend, params=params, phases=phases,
                                   bytes_moved=0, ceilings={}, verified=ok,
                                   error=None if ok else "wrong result")


def doc(records: list[dict[str, Any]], backend: str = "cuda") -> dict[str, Any]:
    device = ({"backend": "cuda", "name": "TestGPU"} if backend == "cuda"
              else {"backend": "cpu", "name": "cpu"})
    return {"schema": 1, "meta": {"device": device, "versions": {}, "commit": "abc",
                                  "hostname": "h", "timestamp": "2026-01-01T00:00:00Z",
                                  "time_unit": "ms", "ceilings": {}, "notes": []},
            "results": records}


def write(tmp_path: Path, d: dict[str, Any]) -> Path:
    results_mod.validate(d)
    path = tmp_path / "latency.json"
    path.write_text(json.dumps(d))
    return path


def test_paired_ratio_not_pooled(tmp_path: Path) -> None:
    """Rounds of 2x and 4x: the paired ratio is their median 3, the pooled medians' 3.33."""
    recs = [rec("sum_1k", "call_latency", "sum", "warplab", [10, 10, 10, 40, 40, 40]),
            rec("sum_1k", "call_latency", "torch.sum", "torch", [5, 5, 5, 10, 10, 10])]
    cells = cases(load_results(write(tmp_path, doc(recs))).rows)["TestGPU"]["sum_1k"]
    assert ratio(cells[("call_latency", "warplab")],
                 cells[("call_latency", "torch")]) == pytest.approx(3.0)


def floor_recs(mode: str, own: bool = False) -> list[dict[str, Any]]:
    """CuPy's two floors (12 and 18 µs) and, with ``own``, warplab's two (9 and 10.5 µs)."""
    recs = [rec("floor", mode, "floor", "cupy", [12, 12]),
            rec("floor", mode, "floor_d2h", "cupy", [18, 18])]
    return recs + ([rec("floor", mode, "floor_launch", "warplab", [9, 9]),
                    rec("floor", mode, "floor_result", "warplab", [10.5, 10.5])] if own else [])


def test_without_torch_the_target_is_cupy(tmp_path: Path) -> None:
    recs = []
    for mode in ("call_latency", "host_per_call"):
        recs += [*floor_recs(mode),
                 rec("c1", mode, "f", "warplab", [30, 30]),
                 rec("c1", mode, "cupy.f", "cupy", [40, 40]),
                 rec("c2", mode, "g", "warplab", [7, 7]),
                 rec("c2", mode, "cupy.g", "cupy", [6, 6])]
    res = load_results(write(tmp_path, doc(recs)))
    call, host = mode_tables(res)
    assert call.columns == ["case", "input", "warplab", "cupy",
                            "target: <= torch (cupy where torch has no op)"]
    assert [r[-1] for r in call.rows] == [True, False]  # 30 <= 40; 7 > 6
    assert [r[-1] for r in host.rows] == [True, False]  # 30 <= 40; 7 > 6, as call latency
    assert target_lines(res)[1] == ("host time per call <= torch (cupy where torch has no op): "
                                    "met by c1 (1 of 2 cases)")
    assert "Floor (same run): empty launch 12.0 µs, with a 4-byte D2H to pinned 18.0 µs (no sync)." \
        in host.note
    skipped: list[Any] = []
    figs = latency_figures(res, lambda *p: tmp_path / ("_".join(p) + ".png"), skipped)
    assert [f[5] for f in figs] == [("warplab", "cupy")] * 2 and not skipped


def test_cpu_run_and_failures(tmp_path: Path) -> None:
    """A cpu run (warplab alone, no floor): tables without comparator columns, no figure (one
    bar a panel) but a note; a wrong result and a call that raised are failures, not bars."""
    recs = []
    for mode in ("call_latency", "host_per_call"):
        recs += [rec("sum_1k", mode, "sum", "warplab", [20, 21], backend="cpu"),
                 rec("mean_1k", mode, "mean", "warplab", [30, 31], backend="cpu", ok=False),
                 rec("bad", mode, "bad", "warplab", [], backend="cpu", ok=False)]
    res = load_results(write(tmp_path, doc(recs, "cpu")))
    assert len(res.failed_rows) == 4
    assert any("no timing (neither a kernel nor a total phase)" in (r.error or "")
               for r in res.failed_rows)
    call, host = mode_tables(res)
    assert call.columns == ["case", "input", "warplab",
                            "target: <= torch (cupy where torch has no op)"]
    assert call.rows == [["sum_1k", "sum_1k input", pytest.approx(20.5), None]]
    assert host.rows == [["sum_1k", "sum_1k input", pytest.approx(20.5), None]]  # no comparator
    assert "floor" not in call.note.lower()
    skipped: list[Any] = []
    assert latency_figures(res, lambda *p: tmp_path / "x.png", skipped) == []
    assert [s.config for s in skipped] == [(("case", "sum_1k"),)]
    assert "warplab alone, no floor" in skipped[0].reason
    assert target_lines(res) == []  # a cpu run has no comparator to judge against


def test_total_only_is_well_formed_for_end_to_end_families_only(tmp_path: Path) -> None:
    r = rec("sum_1k", "call_latency", "sum", "warplab", [20, 21])
    hist = dict(r, family="histogram")
    (a, b) = load_results(write(tmp_path, doc([r, hist]))).rows
    assert a.ok and a.error is None
    assert not b.ok and b.error == "malformed record: no kernel timing"


def test_own_launch_floors_in_notes_and_figures(tmp_path: Path, monkeypatch: Any) -> None:
    """The floors on warplab's launch path: a line each in the figure, and in the tables'
    notes after CuPy's floors; never a row of their own."""
    recs = []
    for mode in ("call_latency", "host_per_call"):
        recs += [*floor_recs(mode, own=True),
                 rec("c1", mode, "f", "warplab", [30, 30]),
                 rec("c1", mode, "cupy.f", "cupy", [40, 40])]
    res = load_results(write(tmp_path, doc(recs)))
    call, host = mode_tables(res)
    assert [r[0] for r in call.rows] == ["c1"]
    assert call.note.endswith("(+ sync); on warplab's launch path 9.00 µs, with a 0-d "
                              "result 10.5 µs (+ sync, int()).")
    assert host.note.endswith("(no sync); on warplab's launch path 9.00 µs, with a 0-d "
                              "result 10.5 µs.")
    labels: list[str] = []
    orig = Axes.axhline

    def axhline(self: Axes, y: float = 0, *a: Any, **kw: Any) -> Any:
        labels.append(kw.get("label", ""))
        return orig(self, y, *a, **kw)

    monkeypatch.setattr(Axes, "axhline", axhline)
    latency_figures(res, lambda *p: tmp_path / ("_".join(p) + ".png"), [])
    assert labels == [lab for _, lab, _ in FLOORS] * 2

"""Report for the series campaign: bandwidth vs shape with the read roof, the K2 step chart,
the generation, K2, call, accuracy and baseline tables (from a fixture JSON, no GPU)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from matplotlib.axes import Axes
from matplotlib.image import imread

from warplab.lab.harness import results as results_mod
from warplab.lab.report import build_report, gallery as report_gallery, load_results
from warplab.lab.report.series import (
    accuracy_tables, baseline_tables, generation_tables, mean_tables, plot_bandwidth_vs_shape,
    series_figures,
)
from warplab.lab.report.tables import glance_tables, median_tables

from test_report_reduce import parse_tables

GPU = "NVIDIA H100 80GB HBM3"
COPY_GBPS, READ_GBPS = 3000.0, 3300.0
K2 = ("k2_basic", "k2_shared", "k2_shared_unrolled", "k2_multiblock", "rows_adaptive")
COMPARATORS = {"cupy.mean": "cupy", "torch.mean": "torch"}
# fraction of the read ceiling each target reaches (k2_shared regresses at short rows on purpose)
SPEED = {"k2_basic": 0.05, "k2_shared": 0.30, "k2_shared_unrolled": 0.45, "k2_multiblock": 0.6,
         "rows_adaptive": 0.9, "cupy.mean": 0.5, "torch.mean": 0.7}
SWEEP = [(1 << (20 - k), 1 << k) for k in range(5, 11)]     # fixed total 2^20
REPORT = (8192, 8192)
WALK = {"k1_thread_per_series": 0.01, "k1_thread_per_series_b32": 0.015, "warp_scan": 0.9}
FAILED = ("k2_shared", 1 << 15, 32)
ACC = [(2048, 2048, 1e-1), (2048, 2048, 1e-3), (2048, 32, 1e-3)]
CASES = {"float32 K2": ("k2_shared_unrolled", "float32", "float32"),
         "float64 K2": ("k2_shared_unrolled", "float64", "float64"),
         "default": ("rows_adaptive", "float32", "float64")}


def stats(m: float) -> dict[str, Any]:
    return {"min": m * 0.9, "q10": m * 0.95, "median": m, "q90": m * 1.1, "max": m * 1.3,
            "noise": 0.05, "samples": [m * 0.95, m, m * 1.1]}


def speed(v: str, n: int) -> float:
    s = SPEED[v]
    return s * 0.5 if v == "k2_shared" and n < 128 else s * min(1.0, n / 256 + 0.5)


def mean_ms(v: str, m: int, n: int) -> float:
    return m * n * 4 / (speed(v, n) * READ_GBPS * 1e9) * 1e3


def base(family: str, variant: str, m: int, n: int, ms: float, moved: int,
         **params: Any) -> dict[str, Any]:
    gbps = moved / (ms * 1e-3) / 1e9
    return {"family": family, "variant": variant,
            "provider": COMPARATORS.get(variant, "warplab"), "backend": "cuda",
            "params": {"size": m * n, "m": m, "n": n, "shape": f"{m}x{n}", "dtype": "float32",
                       "runs": 5, "warmup": 1, **params},
            "phases": {"h2d": None, "kernel": stats(ms), "d2h": None, "total": stats(ms)},
            "bytes_moved": moved, "gbps": gbps, "pct_of_copy_bw": 100 * gbps / COPY_GBPS,
            "verified": True, "error": None, "rel_error": 1e-7}


def mean_record(v: str, m: int, n: int, mode: str = "kernel") -> dict[str, Any]:
    ms = mean_ms(v, m, n) * (1.2 if mode == "calls" else 1.0)
    r = base("reduce_axis", v, m, n, ms, m * n * 4 + 4 * m, op="mean", layout="rows",
             data="random_walk", mode=mode, acc="float32" if v.startswith("k2") else "float64",
             **({"calls": 32} if mode == "calls" else {"held": True}))
    r["pct_of_read_bw"] = 100 * r["gbps"] / READ_GBPS
    r["tolerance"] = 4 * n * 2.0 ** -24
    if (v, m, n) == FAILED:
        r.update(verified=False, error="relative error 0.5 above 0.01", gbps=None,
                 pct_of_copy_bw=None, pct_of_read_bw=None)
    return r


def accuracy(case: str, m: int, n: int, tol: float) -> float:
    if case == "float32 K2":
        return min(1.0, 0.3 * tol * 1e3 * 32 / n)
    return 1.0


def series_doc() -> dict[str, Any]:
    recs = []
    for m, n in (REPORT, (1 << 20, 32)):
        for v, frac in WALK.items():
            recs.append(base("random_walk", v, m, n, m * n * 4 / (frac * COPY_GBPS * 1e6),
                             m * n * 4, mode="kernel", seed=1, start=100.0, eps=1e-3,
                             checked_rows=256, held=True))
    for m, n in [REPORT, *SWEEP]:
        recs += [mean_record(v, m, n) for v in SPEED]
    recs += [mean_record(v, *REPORT, mode="calls") for v in ("rows_adaptive", "cupy.mean")]
    for m, n, tol in ACC:
        for case, (v, dt, acc) in CASES.items():
            r = base("series_accuracy", v, m, n, 0.01 * n / 32, m * n * 4, dtype=dt, tol=tol,
                     case=case, acc=acc, result=dt, walk_eps=1e-3, op="sum", mode="kernel")
            a = accuracy(case, m, n, tol)
            r.update(accuracy=a, within=round(a * m), series=m, max_abs_error=0.01)
            if dt == "float32":
                r["rounding_bound"] = 0.5
            recs.append(r)
    for step, ms, ex in (("generation", 1200.0, False), ("mean", 260.0, False),
                         ("norm", 270.0, False), ("numerator", 9e4, True),
                         ("coefficient", 5e3, True)):
        r = base("series_baseline", "numpy_sequential", 8192, 8192, ms, 8192 * 8192 * 4,
                 step=step, extrapolated=ex, sample_pairs=4000 if ex else None,
                 pairs=8192 * 8191 // 2 if ex else None)
        r.update(provider="numpy", backend="cpu")
        recs.append(r)
    meta = {"device": {"backend": "cuda", "name": GPU, "cc": "9.0", "sms": 132},
            "versions": {"warplab": "0.1.0"}, "commit": "abc", "hostname": "h",
            "timestamp": "2025-01-01T00:00:00Z", "time_unit": "ms",
            "ceilings": {"copy_gbps": COPY_GBPS, "read_gbps": READ_GBPS}, "notes": []}
    return {"schema": 1, "meta": meta, "results": recs}


@pytest.fixture(scope="module")
def doc_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("series")
    p = d / "series.json"
    p.write_text(json.dumps(series_doc()))
    return p


#: What ``series_figures`` returned inside the report's ``build_report``.
SERIES_FIGURES: list[Any] = []


@pytest.fixture(scope="module")
def report(doc_path: Path) -> tuple[Path, str]:
    def figures(*args: Any, **kw: Any) -> Any:
        SERIES_FIGURES[:] = series_figures(*args, **kw)
        return SERIES_FIGURES

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(report_gallery, "series_figures", figures)
        index = build_report(doc_path.parent)
    return index, index.read_text(encoding="utf-8")


def test_fixture_is_a_valid_results_file(doc_path: Path) -> None:
    results_mod.read(doc_path)  # validates


def test_extra_keys_reach_the_rows(doc_path: Path) -> None:
    res = load_results(doc_path)
    acc = [r for r in res.rows if r.family == "series_accuracy"]
    assert acc and all("accuracy" in r.extra and "within" in r.extra for r in acc)
    k2 = [r for r in res.rows if r.family == "reduce_axis" and r.ok]
    assert all(r.extra["pct_of_read_bw"] > 0 for r in k2)
    assert all("family" not in r.extra and "params" not in r.extra for r in res.rows)


def test_figures_written(report: tuple[Path, str]) -> None:
    index, page = report
    shape = index.parent / "reduce_axis_shape_float32_mean_total-1048576.png"
    assert shape.exists() and shape.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert imread(shape).shape[0] > 100
    steps = sorted(p.name for p in index.parent.glob("reduce_axis_step_*.png"))
    assert len(steps) == 1 + len(SWEEP)
    assert "reduce_axis_step_float32_mean_8192x8192.png" in steps
    for name in [shape.name, *steps]:
        assert f'src="{name}"' in page
    assert "Bandwidth vs row length at a fixed total size" in page
    # the generic per-size figures and tables skip the series families
    assert not list(index.parent.glob("reduce_axis_time_*.png"))
    assert not list(index.parent.glob("random_walk_*.png"))


def test_shape_figure_draws_read_roof(doc_path: Path, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    res = load_results(doc_path)
    drawn: list[tuple[float, str]] = []
    orig = Axes.axhline

    def spy(self: Axes, y: float = 0, *args: Any, **kw: Any) -> Any:
        drawn.append((y, str(kw.get("label", ""))))
        return orig(self, y, *args, **kw)

    monkeypatch.setattr(Axes, "axhline", spy)
    rows = [r for r in res.rows if r.family == "reduce_axis" and r.size == 1 << 20]
    out = plot_bandwidth_vs_shape(rows, tmp_path / "s.png", title="t", styles={},
                                  order=list(SPEED), read_gbps={GPU: READ_GBPS})
    assert out is not None and out.read_bytes()[:4] == b"\x89PNG"
    assert (READ_GBPS, "measured read bandwidth (3,300 GB/s)") in drawn
    assert plot_bandwidth_vs_shape([], tmp_path / "none.png", title="t", styles={}, order=[],
                                   read_gbps={}) is None


def test_series_figures_kinds(report: tuple[Path, str]) -> None:
    figs = SERIES_FIGURES  # drawn for the report
    kinds = [f[1] for f in figs]
    assert kinds.count("shape") == 1 and kinds.count("step") == 1 + len(SWEEP)
    shape = next(f for f in figs if f[1] == "shape")
    assert shape[5][:len(K2)] == K2  # legend in the report's order, comparators after


def test_generation_table(doc_path: Path) -> None:
    (t,) = generation_tables(load_results(doc_path))
    assert t.columns[:6] == ["shape", "variant", "time (ms)", "GB/s written", "% of copy BW",
                             "x k1_thread_per_series"]
    rows = {(r[0], r[1]): r for r in t.rows}
    assert [r[1] for r in t.rows[:3]] == list(WALK)  # K1, K1 b32, then warplab's
    r = rows[("8192 x 8192", "warp_scan")]
    assert r[5] == pytest.approx(WALK["warp_scan"] / WALK["k1_thread_per_series"])
    assert r[4] == pytest.approx(100 * WALK["warp_scan"])
    assert ("2^20 x 32", "k1_thread_per_series") in rows


def test_mean_tables_steps(doc_path: Path) -> None:
    res = load_results(doc_path)
    tables = {t.title: t for t in mean_tables(res)}
    t = tables["reduce_axis: mean(axis=1) — float32 8192 x 8192"]
    assert [r[0] for r in t.rows] == [*K2, *sorted(COMPARATORS)]
    med = {v: mean_ms(v, *REPORT) for v in SPEED}
    for prev, row in zip(K2, t.rows[1:len(K2)]):
        assert row[2] == pytest.approx(med[prev] / med[row[0]])
    for row in t.rows:
        assert row[3] == pytest.approx(med["k2_basic"] / med[row[0]])
        assert row[5] == pytest.approx(100 * speed(row[0], 8192), rel=1e-3)  # % of read roof
    # the failed k2_shared record is left out; k2_shared_unrolled steps against k2_basic
    short = tables["reduce_axis: mean(axis=1) — float32 32768 x 32"]
    names = [r[0] for r in short.rows]
    assert "k2_shared" not in names
    r = short.rows[names.index("k2_shared_unrolled")]
    assert r[2] == pytest.approx(mean_ms("k2_basic", 1 << 15, 32)
                                 / mean_ms("k2_shared_unrolled", 1 << 15, 32))


def test_accuracy_table(doc_path: Path) -> None:
    (t,) = accuracy_tables(load_results(doc_path))
    assert t.columns[:5] == ["M", "N", "eps", "float32 K2: accuracy %", "float32 K2: ms"]
    assert t.columns[-1] == "float32 result bound %"
    assert [tuple(r[:3]) for r in t.rows] == [(m, n, f"{tol:.0e}") for m, n, tol in ACC]
    for (m, n, tol), row in zip(ACC, t.rows):
        cells = dict(zip(t.columns, row))
        assert cells["float32 K2: accuracy %"] == pytest.approx(
            100 * accuracy("float32 K2", m, n, tol))
        assert cells["default: accuracy %"] == pytest.approx(100.0)
        assert cells["float32 result bound %"] == pytest.approx(50.0)
    assert "eps is the tolerance" in t.note


def test_baseline_table(doc_path: Path) -> None:
    (t,) = baseline_tables(load_results(doc_path))
    steps = [r[0] for r in t.rows]
    assert steps == ["generation", "mean", "norm", "numerator", "coefficient", "total"]
    assert t.rows[-1][1] == pytest.approx((1200 + 260 + 270 + 9e4 + 5e3) / 1e3)
    assert t.rows[3][2] is True and t.rows[0][2] is False and t.rows[3][3] == 4000


def test_html_tables(report: tuple[Path, str]) -> None:
    _, page = report
    tables = parse_tables(page)
    kinds = {t["class"] for t in tables}
    assert {"generation", "series_mean", "series_calls", "accuracy", "baseline",
            "failures"} <= kinds
    (fail,) = [t for t in tables if t["class"] == "failures"]
    assert len(fail["rows"]) == 1 and fail["rows"][0][1] == "k2_shared"
    (calls,) = [t for t in tables if t["class"] == "series_calls"]
    assert {r[4] for r in calls["rows"]} == {"rows_adaptive", "cupy.mean"}
    (acc,) = [t for t in tables if t["class"] == "accuracy"]
    assert acc["rows"][0][:3] == ["2048", "2048", "1e-01"]
    # no per-size glance / medians tables for the series families
    res = load_results(report[0].parent.parent / "series.json")
    assert not glance_tables(res) and not median_tables(res)

"""Report for the corr campaign: the corr table per shape (time, TFLOP/s, % of the GEMM ceiling,
error and bound, x cupy.corrcoef), the time-and-error figure per precision, the corr_pairs table
and the summary rows (from a GPU-like fixture JSON written here, no GPU)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from matplotlib.image import imread

from warplab.lab.harness import results as results_mod
from warplab.lab.report import build_report, gallery as report_gallery, load_results
from warplab.lab.report.corr import corr_figures, corr_tables, pairs_tables, table_shapes
from warplab.lab.report.summary import headlines, summary_table
from warplab.lab.report.tables import glance_tables, median_tables

from test_report_reduce import parse_tables

GPU = "NVIDIA H100 80GB HBM3"
SGEMM, DGEMM = 51000.0, 57000.0
BIG, SMALL = (8192, 8192), (4096, 4096)
DIRECT_M = 5120  # pairwise_direct capped below the big shape, as the campaign does
# (variant, precision, provider) -> (ms at 8192 x 8192, max abs error, bound)
TARGETS: dict[tuple[str, str, str], tuple[float, float, float]] = {
    ("pairwise_direct", "float64", "warplab"): (2900.0, 1.1e-15, 1e-9),
    ("tiled_smem", "float64", "warplab"): (61.0, 2.2e-15, 1e-9),
    ("tiled_smem", "float32", "warplab"): (17.0, 3.1e-6, 4.9e-4),
    ("tiled_smem", "tf32", "warplab"): (16.5, 3.1e-6, 4.9e-4),
    ("tc_gram", "float64", "warplab"): (8.9, 2.0e-13, 1e-9),
    ("tc_gram", "float32", "warplab"): (4.4, 1.3e-6, 2.0e-6),
    ("tc_gram", "tf32", "warplab"): (2.3, 4.8e-4, 1.2e-3),
    ("cupy.corrcoef", "float64", "cupy"): (19.9, 3.3e-15, 1e-9),
    ("cublas_dsyrk", "float64", "cupy"): (11.2, 2.2e-15, 1e-9),
    ("torch.corrcoef", "float32", "torch"): (22.9, 9.3e-6, 4.9e-4),
    ("cublas_sgemm", "float32", "cupy"): (6.1, 1.1e-6, 4.9e-4),
}
CEILING = {"cupy.corrcoef": "dgemm_gflops", "cublas_dsyrk": "dgemm_gflops",
           "torch.corrcoef": "sgemm_gflops", "cublas_sgemm": "sgemm_gflops"}
FAILED = ("tiled_smem", "tf32", SMALL)  # error above its bound: a failure, not a table row


def stats(ms: float) -> dict[str, Any]:
    return {"min": ms * 0.97, "q10": ms * 0.98, "median": ms, "q90": ms * 1.03,
            "max": ms * 1.1, "noise": 0.02, "samples": [ms * 0.98, ms, ms * 1.03]}


def flops(m: int, n: int) -> int:
    return m * (m + 1) // 2 * n * 2


def ms_at(key: tuple[str, str, str], m: int, n: int) -> float:
    return TARGETS[key][0] * flops(m, n) / flops(*BIG)


def corr_record(key: tuple[str, str, str], m: int, n: int) -> dict[str, Any]:
    variant, prec, provider = key
    ms, err, bound = TARGETS[key]
    ms = ms_at(key, m, n)
    ceiling = CEILING.get(variant, "dgemm_gflops" if prec == "float64" else "sgemm_gflops")
    tf = flops(m, n) / (ms * 1e-3) / 1e12
    moved = m * n * 4 + m * m * 8
    gbps = moved / (ms * 1e-3) / 1e9
    rec = {"family": "corrcoef", "variant": variant, "provider": provider, "backend": "cuda",
           "params": {"size": m, "m": m, "n": n, "dtype": "float32", "precision": prec,
                      "variant": variant, "data": "random_walk", "mode": "call", "runs": 10,
                      "warmup": 2},
           "phases": {"h2d": None, "kernel": stats(ms), "d2h": None, "total": stats(ms)},
           "bytes_moved": moved, "gbps": gbps, "pct_of_copy_bw": 100 * gbps / 3000.0,
           "verified": True, "error": None, "flops": flops(m, n), "tflops": tf,
           "ceiling_key": ceiling,
           "pct_of_ceiling": 100 * tf * 1e3 / (DGEMM if ceiling == "dgemm_gflops" else SGEMM),
           "max_abs_error": err, "error_bound": bound, "x_cupy": None}
    if (variant, prec, (m, n)) == FAILED:
        rec.update(verified=False, error=f"max abs error 0.01 above the bound {bound:.3g}",
                   max_abs_error=0.01, tflops=None, pct_of_ceiling=None, gbps=None,
                   pct_of_copy_bw=None)
    return rec


def pairs_record() -> dict[str, Any]:
    m, n, ms = 200_000, 256, 1850.0
    return {"family": "corr_pairs", "variant": "tc_gram", "provider": "warplab",
            "backend": "cuda",
            "params": {"size": m, "m": m, "n": n, "dtype": "float32", "precision": "float64",
                       "variant": "tc_gram", "data": "clustered", "mode": "call", "runs": 3,
                       "warmup": 1, "threshold": 0.9, "clusters": 1000},
            "phases": {"h2d": None, "kernel": stats(ms), "d2h": None, "total": stats(ms)},
            "bytes_moved": m * n * 20, "gbps": 1.0, "pct_of_copy_bw": 0.03, "verified": True,
            "error": None, "flops": flops(m, n), "tflops": flops(m, n) / ms / 1e9,
            "ceiling_key": "dgemm_gflops", "pct_of_ceiling": 70.0, "max_abs_error": 4.4e-16,
            "error_bound": 1e-9, "x_cupy": None, "pairs_found": 19_900_000,
            "checked_tiles": 4, "checked_pairs": 8_386_560}


def corr_doc() -> dict[str, Any]:
    recs = []
    for m, n in (SMALL, BIG):
        shape_recs = []
        for key in TARGETS:
            rm = DIRECT_M if key[0] == "pairwise_direct" and (m, n) == BIG else m
            shape_recs.append(corr_record(key, rm, n))
        cupy = next(r for r in shape_recs if r["variant"] == "cupy.corrcoef")
        for r in shape_recs:  # as the campaign: x_cupy only at the config's own M
            if r["verified"] and r["params"]["m"] == m:
                r["x_cupy"] = cupy["phases"]["kernel"]["median"] / r["phases"]["kernel"]["median"]
        recs += shape_recs
    recs.append(pairs_record())
    meta = {"device": {"backend": "cuda", "name": GPU, "cc": "9.0", "sms": 132},
            "versions": {"warplab": "0.1.0"}, "commit": "abc", "hostname": "h",
            "timestamp": "2026-11-23T12:00:00Z", "time_unit": "ms",
            "ceilings": {"copy_gbps": 3000.0, "read_gbps": 3070.0, "sgemm_gflops": SGEMM,
                         "dgemm_gflops": DGEMM},
            "notes": [(f"pairwise_direct at M = 8192 would take about 9 s per call: measured "
                       f"at M = {DIRECT_M} (same N, the top-left block of the same reference)")]}
    return {"schema": 1, "meta": meta, "results": recs}


@pytest.fixture(scope="module")
def doc_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("corr") / "corr.json"
    p.write_text(json.dumps(corr_doc()))
    return p


#: What ``corr_figures`` returned inside the report's ``build_report``, and the figures it
#: left out there.
CORR_FIGURES: dict[str, Any] = {}


@pytest.fixture(scope="module")
def report(doc_path: Path) -> tuple[Path, str]:
    def figures(results: Any, name: Any, notes: list[Any]) -> Any:
        before = len(notes)
        CORR_FIGURES["figs"] = corr_figures(results, name, notes)
        CORR_FIGURES["skipped"] = notes[before:]
        return CORR_FIGURES["figs"]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(report_gallery, "corr_figures", figures)
        index = build_report(doc_path.parent)
    return index, index.read_text(encoding="utf-8")


def test_fixture_is_a_valid_results_file(doc_path: Path) -> None:
    results_mod.read(doc_path)


def test_capped_direct_record_joins_the_big_table(doc_path: Path) -> None:
    rows = [r for r in load_results(doc_path).rows if r.family == "corrcoef" and r.ok]
    placed = {(r.variant, r.params["m"]): shape for shape, r in table_shapes(rows)}
    assert placed[("pairwise_direct", DIRECT_M)] == BIG
    assert placed[("pairwise_direct", SMALL[0])] == SMALL
    assert placed[("tc_gram", BIG[0])] == BIG


def test_corr_table_numbers(doc_path: Path) -> None:
    tables = {t.title: t for t in corr_tables(load_results(doc_path))}
    assert list(tables) == ["corrcoef: M = 4,096 · N = 4,096 — float32 input, random_walk data",
                            "corrcoef: M = 8,192 · N = 8,192 — float32 input, random_walk data"]
    t = tables["corrcoef: M = 8,192 · N = 8,192 — float32 input, random_walk data"]
    assert t.columns == ["precision", "variant", "provider", "time (ms)", "TFLOP/s", "ceiling",
                         "% of ceiling", "max abs error", "error bound", "x cupy.corrcoef"]
    # grouped by precision: warplab in the lecture's order, then that precision's comparators
    assert [(r[0], r[1]) for r in t.rows] == [
        ("float64", f"pairwise_direct (at M = {DIRECT_M:,})"), ("float64", "tiled_smem"),
        ("float64", "tc_gram"), ("float64", "cublas_dsyrk"), ("float64", "cupy.corrcoef"),
        ("float32", "tiled_smem"), ("float32", "tc_gram"), ("float32", "cublas_sgemm"),
        ("float32", "torch.corrcoef"), ("tf32", "tiled_smem"), ("tf32", "tc_gram")]
    rows = {(r[0], r[1]): dict(zip(t.columns, r)) for r in t.rows}
    tc = rows[("float64", "tc_gram")]
    assert tc["time (ms)"] == pytest.approx(8.9)
    assert tc["TFLOP/s"] == pytest.approx(flops(*BIG) / 8.9e-3 / 1e12)
    assert tc["ceiling"] == "DGEMM"
    assert tc["% of ceiling"] == pytest.approx(100 * flops(*BIG) / 8.9e-3 / 1e9 / DGEMM)
    assert (tc["max abs error"], tc["error bound"]) == ("2.0e-13", "1.0e-9")
    assert tc["x cupy.corrcoef"] == pytest.approx(19.9 / 8.9)
    assert rows[("tf32", "tc_gram")]["ceiling"] == "SGEMM"
    assert rows[("float32", "torch.corrcoef")]["max abs error"] == "9.3e-6"
    # the capped record: its own time, its speedup as a ratio of rates
    direct = rows[("float64", f"pairwise_direct (at M = {DIRECT_M:,})")]
    assert direct["time (ms)"] == pytest.approx(ms_at(("pairwise_direct", "float64", "warplab"),
                                                      DIRECT_M, BIG[1]))
    assert direct["x cupy.corrcoef"] == pytest.approx(19.9 / 2900.0)
    # the failed record is left out of its table
    small = tables["corrcoef: M = 4,096 · N = 4,096 — float32 input, random_walk data"]
    assert ("tf32", "tiled_smem") not in {(r[0], r[1]) for r in small.rows}
    assert len(small.rows) == len(TARGETS) - 1


def test_pairs_table(doc_path: Path) -> None:
    (t,) = pairs_tables(load_results(doc_path))
    row = dict(zip(t.columns, t.rows[0]))
    assert (row["M"], row["N"], row["threshold"], row["variant"]) == (200_000, 256, 0.9,
                                                                      "tc_gram")
    assert row["time (ms)"] == pytest.approx(1850.0)
    assert (row["pairs found"], row["tiles checked"], row["verified"]) == (19_900_000, 4, True)


def test_time_error_figures(report: tuple[Path, str]) -> None:
    figs, skipped = CORR_FIGURES["figs"], CORR_FIGURES["skipped"]  # drawn for the report
    assert [f[2] for f in figs] == [(("m", 4096), ("n", 4096)), (("m", 8192), ("n", 8192))]
    assert not skipped
    big = figs[1]
    assert big[1] == "time_error" and len(big[5]) == 11
    assert big[5][0] == f"pairwise_direct · float64 (at M = {DIRECT_M:,})"
    img = imread(big[4])
    assert img.shape[1] == 1200 and img.shape[0] > 400  # wide: a full row of the page


def test_single_row_figure_is_skipped(tmp_path: Path) -> None:
    doc = corr_doc()
    doc["results"] = [r for r in doc["results"] if r["family"] == "corrcoef"
                      and r["variant"] == "tc_gram" and r["params"]["precision"] == "float64"
                      and r["params"]["m"] == 4096]
    (tmp_path / "one.json").write_text(json.dumps(doc))
    skipped: list[Any] = []
    figs = corr_figures(load_results(tmp_path / "one.json"),
                        lambda *p: tmp_path / "x.png", skipped)
    assert figs == [] and len(skipped) == 1
    assert "one bar (tc_gram at float64 alone)" in skipped[0].reason


def test_summary_rows(doc_path: Path) -> None:
    heads = [h for h in headlines(load_results(doc_path)) if h.family.startswith("corr")]
    assert [dict(h.config)["precision"] for h in heads] == ["float64", "float32", "tf32"]
    assert {h.family for h in heads} == {"corrcoef"}  # corr_pairs has no comparator
    f64 = heads[0]
    assert f64.best.variant == "tc_gram" and f64.rival.variant == "cublas_sgemm"
    assert f64.ratio == pytest.approx(6.1 / 8.9)
    assert (f64.roof_name, f64.roof) == ("DGEMM", DGEMM)
    assert f64.spread == pytest.approx((6.1 / 8.9, 6.1 / 8.9, 2))
    t = summary_table(heads)
    cells = dict(zip(t.columns, t.rows[0]))
    assert cells["compared at"] == "precision float64, M = 8,192 · N = 8,192"
    assert cells["best warplab"] == "tc_gram float64, 8.9 ms, err 2.0e-13"
    assert cells["best comparator"] == "cublas_sgemm float32, 6.1 ms, err 1.1e-6"


def test_page(report: tuple[Path, str]) -> None:
    index, page = report
    tables = parse_tables(page)
    kinds = [t["class"] for t in tables]
    assert kinds.count("corr") == 2 and kinds.count("corr_pairs") == 1
    assert "failures" in kinds
    for png in ("corrcoef_time_error_4096x4096.png", "corrcoef_time_error_8192x8192.png"):
        assert (index.parent / png).exists() and f'src="{png}"' in page
    assert "Time and error per precision" in page
    # nothing of the generic per-size gallery and tables: sizes are not this family's axis
    assert not [p for p in index.parent.glob("corr*.png") if "time_error" not in p.name]
    res = load_results(index.parent.parent / "corr.json")
    assert not glance_tables(res) and not median_tables(res)

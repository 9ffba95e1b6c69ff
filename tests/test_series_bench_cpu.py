"""The series campaign (lab/campaigns/series/bench.py, command.py) on the NumPy backend: valid JSON,
every record verified, the baseline's extrapolation keys, the CLI tables and its errors."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from warplab.lab.harness import results
from warplab.lab.cli import main
from warplab.lab.campaigns.series import bench as sb
from warplab.lab.campaigns.series import bench_accuracy as sa
from warplab.lab.campaigns.series import measure as sm
from warplab.families.series.walk import random_walk
from warplab.families.series.walk import WalkParams


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> dict:
    path = tmp_path_factory.mktemp("series") / "series.json"
    doc = sb.run_series(campaign="quick", backend="cpu", json_path=path)
    return {"doc": doc, "path": path}


def _by_family(doc: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in doc["results"]:
        out.setdefault(r["family"], []).append(r)
    return out


def test_quick_cpu_writes_valid_json_all_verified(quick: dict) -> None:
    doc = results.read(quick["path"])  # validates
    assert doc["meta"]["campaign"] == "quick"
    fams = _by_family(doc)
    assert set(fams) == {"random_walk", "reduce_axis", "series_accuracy", "series_baseline"}
    bad = [(r["family"], r["variant"], r["error"]) for r in doc["results"] if not r["verified"]]
    assert not bad
    assert all(r["backend"] == "cpu" for r in doc["results"])
    notes = " ".join(doc["meta"]["notes"])
    assert "no K2 is emulated" in notes and "NumPy's float32 pairwise" in notes


def test_generation_and_mean_records(quick: dict) -> None:
    fams = _by_family(quick["doc"])
    (gen,) = fams["random_walk"]
    p = gen["params"]
    assert (gen["variant"], p["m"], p["n"], p["size"]) == ("numpy", 1024, 1024, 1 << 20)
    assert 1 <= p["checked_rows"] <= 1024 and gen["rel_error"] < 1e-6
    assert gen["bytes_moved"] == 4 << 20 and gen["gbps"] > 0
    means = {r["variant"]: r for r in fams["reduce_axis"]}
    assert set(means) == {"numpy", "numpy.mean"}
    ours = means["numpy"]
    assert ours["params"]["acc"] == "float64" and means["numpy.mean"]["params"]["acc"] == "float32"
    assert ours["rel_error"] <= ours["tolerance"] and ours["pct_of_read_bw"] > 0
    assert means["numpy.mean"]["tolerance"] == pytest.approx(4 * 1024 * 2.0 ** -24)


def test_accuracy_records(quick: dict) -> None:
    acc = _by_family(quick["doc"])["series_accuracy"]
    rows = {(r["params"]["m"], r["params"]["n"], r["params"]["tol"]) for r in acc}
    assert rows == {r for r in sb.ACCURACY_TABLE if r[0] * r[1] <= 1 << 20}
    assert {r["params"]["case"] for r in acc} == {c[0] for c in sa.CPU_CASES}
    for r in acc:
        assert 0.0 <= r["accuracy"] <= 1.0 and r["series"] == r["params"]["m"]
        assert r["within"] == round(r["accuracy"] * r["series"])
        assert r["params"]["walk_eps"] == sm.WALK_EPS
    f64 = [r for r in acc if r["params"]["case"] == "default dtype=float64"]
    assert all(r["accuracy"] == 1.0 for r in f64)  # float64 sums of the float32 values
    # a float32 result is no better than the float64 sum rounded to float32
    for r in acc:
        if r["params"]["result"] == "float32":
            assert r["accuracy"] <= r["rounding_bound"] + 1e-12


def test_baseline_records_extrapolate_pairs(quick: dict) -> None:
    base = {r["params"]["step"]: r for r in _by_family(quick["doc"])["series_baseline"]}
    assert list(base) == ["generation", "mean", "norm", "numerator", "coefficient"]
    for step, r in base.items():
        p = r["params"]
        assert "extrapolated" in p and "sample_pairs" in p
        assert r["provider"] == "numpy" and r["verified"]
        if step in ("numerator", "coefficient"):
            assert p["extrapolated"] is True and p["sample_pairs"] == 1000
            assert p["pairs"] == 1024 * 1023 // 2
        else:
            assert p["extrapolated"] is False and p["sample_pairs"] is None


def test_check_walk_catches_wrong_values() -> None:
    params = WalkParams(sm.SEED, sm.START, sm.WALK_EPS)
    x = random_walk(40, 64, start=sm.START, eps=sm.WALK_EPS, seed=sm.SEED, device="cpu")
    ok, rel, err, k = sb.check_walk(x, 40, 64, "float32", params)
    assert ok and err is None and k == 40 and rel < 1e-6
    y = x.copy()
    y[:, 10] *= 1.001
    ok, rel, err, _ = sb.check_walk(y, 40, 64, "float32", params)
    assert not ok and "relative error" in err
    # a large output is checked on a sample of rows (CHECK_ELEMENTS values)
    m, n = 600, 4096
    big = random_walk(m, n, start=sm.START, eps=sm.WALK_EPS, seed=sm.SEED, device="cpu")
    ok, _, _, k = sb.check_walk(big, m, n, "float32", params)
    assert ok and k == sb.CHECK_ELEMENTS // n < m


def test_sum_tolerance() -> None:
    assert sm.sum_tolerance(8192, np.float32, np.float32) == pytest.approx(8192 * 2.0 ** -24 * 4)
    assert sm.sum_tolerance(10, np.float32, np.float64) == 1e-5
    assert sm.sum_tolerance(10, np.float64, np.float64) == 1e-12


def _table_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("note:")]


def test_series_command_prints_tables(capsys: pytest.CaptureFixture, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    out = tmp_path / "s.json"
    assert main(["series", "--m", "64", "--n", "128", "--runs", "2", "--warmup", "1",
                 "--json", str(out)]) == 0
    text = capsys.readouterr().out
    flat = " ".join(text.split())  # a title wraps where its table's measured columns end
    assert "generation of 64 x 128 float32 walks (cpu)" in flat
    assert "mean(axis=1) of 64 x 128 float32 (cpu)" in flat
    assert re.search(r"^\s*numpy\s+\d", text, re.M)
    assert max(len(ln.rstrip()) for ln in _table_lines(text)) <= 80
    doc = results.read(out)
    assert {r["family"] for r in doc["results"]} == {"random_walk", "reduce_axis"}
    assert all(r["verified"] for r in doc["results"])


def test_series_command_float64_sum(capsys: pytest.CaptureFixture) -> None:
    assert main(["series", "--m", "2^5", "--n", "1K", "--dtype", "float64", "--op", "sum",
                 "--runs", "1", "--warmup", "0", "--compare"]) == 0
    text = capsys.readouterr().out
    assert "sum(axis=1) of 32 x 1024 float64 (cpu)" in " ".join(text.split())
    assert "numpy.sum" in text


def test_bench_series_writes_json(capsys: pytest.CaptureFixture, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["bench", "series", "--out", str(tmp_path)]) == 0
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    doc = results.read(run / "series.json")
    assert all(r["verified"] for r in doc["results"])
    text = capsys.readouterr().out
    for title in ("generation of 1024 x 1024", "mean(axis=1) of 1024 x 1024",
                  "sums within eps of the float64 sum", "sequential baseline"):
        assert title in text
    table = [ln for ln in _table_lines(text) if not ln.startswith(("series quick", "results:"))]
    assert max(len(ln.rstrip()) for ln in table) <= 80
    assert main(["report", str(run)]) == 0
    html = (run / "report" / "index.html").read_text()
    assert 'class="accuracy"' in html and 'class="baseline"' in html


@pytest.mark.parametrize("argv, needle", [
    (["series", "--m", "0"], "--m"),
    (["series", "--n", "-3"], "--n"),
    (["series", "--m", "lots"], "--m"),
    (["series", "--variant", "nosuch"], "nosuch"),
    (["series", "--variant", "k2_basic"], "cpu"),
])
def test_series_bad_input_exits_2_with_one_line(argv: list[str], needle: str,
                                                capsys: pytest.CaptureFixture) -> None:
    assert main(argv + ["--runs", "1", "--warmup", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warplab: error:") and needle in err[0], err


def test_run_series_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="float32 or float64"):
        sb.run_series(backend="cpu", shapes=[(2, 2)], dtype="int32")
    with pytest.raises(ValueError, match="m must be"):
        sb.run_series(backend="cpu", shapes=[(0, 2)], parts=("generation",))
    with pytest.raises(ValueError, match="unknown series part"):
        sb.run_series(backend="cpu", shapes=[(2, 2)], parts=("nope",))
    with pytest.raises(ValueError, match="unknown campaign"):
        sb.campaign_for("nope", "cpu")


def test_campaign_contents() -> None:
    q, t, f = (sb.SERIES_CAMPAIGNS[k] for k in ("quick", "table", "full"))
    assert q.generation == q.means == ((8192, 8192),)
    assert all(n <= 8192 for _, n, _ in q.accuracy)
    assert t.means[:3] == ((8192, 8192), (1 << 20, 32), (16, 1 << 24))
    assert set(t.means[3:]) == {(1 << 17, 256), (1 << 21, 33), (65536, 1000), (32768, 4097),
                                (256, 1 << 20)}  # the shapes beside the tuned ones
    assert len(t.accuracy) == 19 and t.accuracy[0] == (2048, 2048, 0.1)
    assert t.accuracy[-1] == (16384, 65536, 1e-6)
    assert {n for m, n in f.means if m * n == 1 << 28} == {1 << k for k in range(5, 25)}
    assert json.dumps(sb.ACCURACY_TABLE)  # plain numbers

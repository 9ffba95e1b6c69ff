"""The numpy campaign (warplab's calls on host input against NumPy's): records valid and
verified with a ratio per case, a wrong result is marked, the table fits 80 columns, the CLI
writes the JSON."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from warplab import cli
from warplab.lab.campaigns.numpy import bench as nb
from warplab.lab.harness.results import read, validate

TINY = nb.NumpyCampaign(repeats=2, burst_ms=0.05, large=False)


@pytest.fixture(autouse=True)
def _tiny(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(nb.CAMPAIGNS, "quick", TINY)
    monkeypatch.setenv("WARPLAB_COMMIT", "test-commit")


def test_quick_campaign_records_ratios_and_table(tmp_path: Path) -> None:
    path = tmp_path / "numpy.json"
    doc = nb.run_numpy(campaign="quick", json_path=path)
    validate(read(path))
    recs = doc["results"]
    names = {r["variant"] for r in recs}
    assert len(names) == len(nb.cases(False)) == 13
    assert {r["provider"] for r in recs} == {"warplab", "numpy"}
    for r in recs:
        assert r["verified"] and r["error"] is None, r
        assert r["backend"] == "cpu" and r["phases"]["total"]["median"] > 0
        assert r["params"]["ratio"] > 0
        assert r["params"]["ratio"] == pytest.approx(
            [w for w in recs if w["variant"] == r["variant"] and w["provider"] == "warplab"][0]
            ["phases"]["total"]["median"]
            / [n for n in recs if n["variant"] == r["variant"] and n["provider"] == "numpy"][0]
            ["phases"]["total"]["median"])
    lines = nb.table_lines(recs)
    assert len(lines) == 2 + len(names)
    assert max(map(len, lines)) <= 80
    assert all(line.rstrip().endswith("x") for line in lines[2:])


def test_large_cases_are_named_and_fit() -> None:
    large = nb.cases(True)
    assert len(large) > len(nb.cases(False))
    assert max(len(c.name) for c in large) <= 34


def test_a_wrong_result_and_a_failure_are_marked() -> None:
    wrong = nb.Case("wrong", 8, lambda: np.zeros(2), lambda: np.ones(2))
    w, n = nb.measure(wrong, TINY)
    assert not w["verified"] and "differs" in w["error"] and n["verified"]
    assert nb.table_lines([w, n])[2].endswith("x!")

    def boom() -> None:
        raise ValueError("no")

    (f,) = nb.measure(nb.Case("boom", 8, boom, lambda: None), TINY)
    assert not f["verified"] and f["error"] == "ValueError: no"
    assert "err" in nb.table_lines([f])[2]


def test_cli_bench_numpy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["bench", "numpy", "--quick", "--out", str(tmp_path),
                     "--variant", "byte_histogram"]) == 0
    (path,) = tmp_path.glob("*/numpy.json")
    doc = read(path)
    assert {r["variant"] for r in doc["results"]} == {"byte_histogram 16 B",
                                                       "byte_histogram 4096 B"}
    out = capsys.readouterr().out
    assert "ratio" in out and max(map(len, out.splitlines())) <= 80

"""``warplab corr`` and ``warplab bench corr`` on the NumPy backend: output within 80 columns,
self-describing JSON, bad input as one line and exit status 2."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from warplab import cli
from warplab.lab.harness.results import read
from warplab.lab.console import console

QUICK = ["--runs", "2", "--warmup", "0"]


@pytest.fixture(autouse=True)
def _narrow(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(console, "width", 80)
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("WARPLAB_COMMIT", "test-commit")


def test_corr_command_fits_80_columns(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "c.json"
    argv = ["--device", "cpu", "corr", "--m", "64", "--n", "32", "--variant", "all",
            "--json", str(path), *QUICK]
    assert cli.main(argv) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    lines = [x for x in out.splitlines() if " eta " not in x]
    assert "corrcoef 64 x 32" in out and "numpy" in out
    assert max(len(x) for x in lines) <= 80 and "…" not in out
    rec = read(path)["results"][0]
    assert rec["family"] == "corrcoef" and rec["verified"]
    assert {"m", "n", "dtype", "precision", "variant"} <= set(rec["params"])
    assert rec["max_abs_error"] < 1e-12 and rec["flops"] == 64 * 65 // 2 * 32 * 2


def test_bench_corr_quick(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    argv = ["--device", "cpu", "bench", "corr", "--quick", "--out", str(tmp_path), *QUICK]
    assert cli.main(argv) == 0, capsys.readouterr().err
    (path,) = tmp_path.glob("*/corr.json")
    doc = json.loads(path.read_text())
    fams = {r["family"] for r in doc["results"]}
    assert fams == {"corrcoef", "corr_pairs"}
    pairs = next(r for r in doc["results"] if r["family"] == "corr_pairs")
    assert pairs["verified"] and pairs["pairs_found"] > 0 and pairs["checked_pairs"] > 0
    (theirs,) = [r for r in doc["results"] if r["provider"] == "numpy"]  # the cpu comparator
    assert theirs["variant"] == "numpy.corrcoef" and theirs["verified"]
    assert theirs["ceiling_key"] == "dgemm_gflops" and theirs["max_abs_error"] < 1e-12


@pytest.mark.parametrize("extra, match", [
    (["--precision", "half"], "unknown precision"),
    (["--variant", "tiled_smem"], "does not run on the cpu backend"),
    (["--m", "1"], "M >= 2"),
])
def test_bad_arguments_one_line(extra: list[str], match: str,
                                capsys: pytest.CaptureFixture) -> None:
    argv = ["--device", "cpu", "corr", "--m", "8", "--n", "8", *QUICK]
    assert cli.main(argv[:-len(QUICK)] + extra + QUICK) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and match in err[0]

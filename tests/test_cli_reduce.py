"""CLI of the reduction family on the NumPy backend (no GPU)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from warplab.lab.harness import results
from warplab.lab.cli import main


def _one_error_line(capsys: pytest.CaptureFixture) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warplab: error:"), err
    return err[0]


def test_reduce_prints_the_lecture_table(capsys, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    assert main(["reduce", "--size", "4K", "--dtype", "float32", "--runs", "2", "--warmup", "1",
                 "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "numpy" in text and "4096 float32" in text
    assert "step speedup" not in text  # one variant on the cpu: a column of dashes, dropped
    doc = results.read(out)
    (rec,) = doc["results"]
    assert rec["family"] == "reduce" and rec["verified"] and rec["params"]["mode"] == "kernel"
    assert rec["rel_error"] is not None and rec["rel_error"] < 1e-6


def test_bench_reduce_writes_json_and_report(capsys, tmp_path: Path) -> None:
    assert main(["bench", "reduce", "--sizes", "1K,4K", "--dtypes", "int32,float64", "--ops",
                 "sum,max", "--runs", "2", "--warmup", "1", "--out", str(tmp_path)]) == 0
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    doc = results.read(run / "reduce.json")
    want = {(n, d, o) for n in (1024, 4096) for d in ("int32", "float64") for o in ("sum", "max")}
    for provider in ("warplab", "numpy"):  # NumPy's own np.sum / np.max: the cpu comparator
        got = {(r["params"]["size"], r["params"]["dtype"], r["params"]["op"])
               for r in doc["results"] if r["provider"] == provider}
        assert got == want, provider
    assert {r["variant"] for r in doc["results"] if r["provider"] == "numpy"} == {
        "numpy.sum", "numpy.max"}
    assert all(r["verified"] for r in doc["results"])
    assert main(["report", str(run)]) == 0
    html = (run / "report" / "index.html").read_text()
    assert "reduce" in html


@pytest.mark.parametrize("argv, needle", [
    (["reduce", "--variant", "unroll2"], "cpu"),
    (["reduce", "--variant", "nosuch"], "nosuch"),
])
def test_reduce_errors_are_one_line(argv, needle, capsys) -> None:
    assert main(argv + ["--size", "1K", "--runs", "1", "--warmup", "0"]) == 2
    assert needle in _one_error_line(capsys)


def test_reduce_bad_dtype_is_an_argparse_error(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["reduce", "--dtype", "int8"])
    assert exc.value.code == 2
    assert "int8" in capsys.readouterr().err


def test_bench_reduce_cpu_campaign_is_capped(tmp_path: Path, capsys) -> None:
    assert main(["bench", "reduce", "--quick", "--runs", "1", "--warmup", "0",
                 "--out", str(tmp_path)]) == 0
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    doc = json.loads((run / "reduce.json").read_text())
    assert max(r["params"]["size"] for r in doc["results"]) == 1 << 20
    assert any("capped" in n for n in doc["meta"]["notes"])


def test_bench_reduce_cpu_no_compare(tmp_path: Path, capsys) -> None:
    assert main(["bench", "reduce", "--sizes", "1K", "--dtypes", "float32", "--runs", "2",
                 "--warmup", "0", "--no-compare", "--out", str(tmp_path)]) == 0
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    doc = results.read(run / "reduce.json")
    assert [r["provider"] for r in doc["results"]] == ["warplab"]
    assert not any("NumPy's own" in n for n in doc["meta"]["notes"])

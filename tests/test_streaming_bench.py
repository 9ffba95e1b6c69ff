"""The stream campaign and its CLI on the cpu backend: records in the results schema, every
result verified, the phases and overlap fields present, bad names refused."""
from __future__ import annotations

import json

import pytest

from warplab.lab.harness import results
from warplab.lab.cli import main
from warplab.lab.campaigns.stream.bench import run_stream


def test_campaign_records(tmp_path) -> None:
    doc = run_stream(campaign="quick", backend="cpu", json_path=tmp_path / "s.json",
                     sizes=[1 << 16, 3 << 16], runs=2, warmup=0, tmp_dir=str(tmp_path))
    results.read(tmp_path / "s.json")
    recs = doc["results"]
    assert {r["variant"] for r in recs} == {"pageable", "file_cached", "file_cold",
                                            "file_direct"}
    assert all(r["verified"] and r["e2e_gbps"] > 0 for r in recs)
    assert {r["params"]["op"] for r in recs} == {"histogram", "sum"}
    files = [r for r in recs if r["variant"].startswith("file")]
    assert all(r["read"]["median"] > 0 and r["overlap"] > 0 for r in files)
    assert all(r["params"]["size"] in (1 << 16, 3 << 16) for r in recs)


def test_bad_names(tmp_path) -> None:
    with pytest.raises(ValueError, match="unknown stream source"):
        run_stream(campaign="quick", backend="cpu", json_path=None, sources=["tape"])
    with pytest.raises(ValueError, match="unknown stream op"):
        run_stream(campaign="quick", backend="cpu", json_path=None, ops=["median"])


def test_cli_stream_and_bench(tmp_path, capsys) -> None:
    out = tmp_path / "s.json"
    assert main(["stream", "--sizes", "64K", "--source", "pageable,file_cached", "--runs", "1",
                 "--tmp", str(tmp_path), "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert len(doc["results"]) == 3
    assert "end to end" in capsys.readouterr().out
    assert main(["bench", "stream", "--quick", "--sizes", "64K", "--variant", "pageable",
                 "--runs", "1", "--out", str(tmp_path / "runs")]) == 0
    assert list((tmp_path / "runs").glob("*/stream.json"))


def test_histogram_files_cli_with_progress(tmp_path, capsys) -> None:
    p = tmp_path / "f.txt"
    p.write_bytes(b"hello world\n" * 1000)
    q = tmp_path / "g.txt"
    q.write_bytes(b"abc")
    assert main(["histogram", str(p), str(q), "--top", "2"]) == 0
    text = capsys.readouterr().out
    assert "12000 bytes" in text and "3 bytes" in text


def test_bad_sizes_one_line(tmp_path, capsys) -> None:
    assert main(["bench", "stream", "--sizes", "0", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "sizes must be > 0" in err[0]

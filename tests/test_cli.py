"""The ``warplab`` command on the NumPy backend: in-process through ``cli.main`` and once as
``python -m warplab``."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

import warplab
from warplab import cli
from warplab.lab import console
from warplab.lab.harness import results

SRC = Path(__file__).resolve().parent.parent / "src"
no_gpu = pytest.mark.skipif(warplab.cuda_available(), reason="a usable GPU is present here")



@pytest.fixture(autouse=True)
def _private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the temporary folders the CLI makes (``histogram`` without ``--json``) in tmp_path."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("WARPLAB_COMMIT", "test-commit")


@pytest.fixture
def text_file(tmp_path: Path) -> Path:
    f = tmp_path / "in.txt"
    f.write_bytes(b"Hello World\nzzz")
    return f


def run_main(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    rc = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def assert_user_error(rc: int, err: str, *needles: str) -> None:
    assert rc == 2
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("warplab: error: "), err
    for n in needles:
        assert n in lines[0], (n, err)


# -------------------------------------------------------------------------------- device


def test_device_table(capsys: pytest.CaptureFixture, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("WARPLAB_CACHE_DIR", str(tmp_path))  # no stored ceilings yet
    rc, out, err = run_main(capsys, "device")
    assert rc == 0, err
    assert "copy_gbps" in out and "cpu" in out and "backend" in out


def test_device_json(capsys: pytest.CaptureFixture, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("WARPLAB_CACHE_DIR", str(tmp_path))  # no stored ceilings yet
    rc, out, _ = run_main(capsys, "device", "--json")
    assert rc == 0
    info = json.loads(out)
    assert info["backend"] == "cpu"
    assert info["copy_gbps"] > 0 and info["copy_bytes"] > 0
    assert "copy_ms" not in info


def test_device_explicit_cpu(capsys: pytest.CaptureFixture, monkeypatch) -> None:
    monkeypatch.delenv("WARPLAB_DEVICE")
    rc, out, _ = run_main(capsys, "--device", "cpu", "device", "--json")
    assert rc == 0 and json.loads(out)["backend"] == "cpu"


def test_subprocess_python_m(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(SRC), WARPLAB_DEVICE="cpu", WARPLAB_COMMIT="x")
    p = subprocess.run([sys.executable, "-m", "warplab", "device", "--json"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    assert info["backend"] == "cpu" and info["copy_gbps"] > 0
    # and a user error from a real process: status 2, one line, no traceback
    p = subprocess.run([sys.executable, "-m", "warplab", "histogram", str(tmp_path / "nope")],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
    assert_user_error(p.returncode, p.stderr, "nope")
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------- histogram


GOLDEN_BYTES = """\
{path}: 15 bytes, bins bytes (256), numpy_chunked (cpu)
┏━━━━━┳━━━━━━━━━┳━━━━━━━┳━━━━━━━━┓
┃ bin ┃   label ┃ count ┃      % ┃
┡━━━━━╇━━━━━━━━━╇━━━━━━━╇━━━━━━━━┩
│ 108 │   108 l │     3 │ 20.000 │
│ 122 │   122 z │     3 │ 20.000 │
│ 111 │   111 o │     2 │ 13.333 │
│  10 │   10 \\n │     1 │  6.667 │
│  32 │  32 ' ' │     1 │  6.667 │
│  72 │    72 H │     1 │  6.667 │
│  87 │    87 W │     1 │  6.667 │
│ 100 │   100 d │     1 │  6.667 │
│ 101 │   101 e │     1 │  6.667 │
│ 114 │   114 r │     1 │  6.667 │
└─────┴─────────┴───────┴────────┘
"""

GOLDEN_LETTERS = """\
{path}: 15 bytes, bins letters (27), numpy_chunked (cpu)
┏━━━━━┳━━━━━━━┳━━━━━━━┳━━━━━━━━┓
┃ bin ┃ label ┃ count ┃      % ┃
┡━━━━━╇━━━━━━━╇━━━━━━━╇━━━━━━━━┩
│  12 │   L/l │     3 │ 20.000 │
│  26 │   Z/z │     3 │ 20.000 │
│   0 │ other │     2 │ 13.333 │
└─────┴───────┴───────┴────────┘
"""


def test_histogram_file_golden(capsys: pytest.CaptureFixture, text_file: Path,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    """``warplab histogram FILE`` counts with the library and prints at once: default bins
    ``bytes``, no measurement, no ceilings, no results JSON."""
    from warplab.lab.campaigns.histogram import command

    def no_campaign(*a, **k):
        raise AssertionError("the plain command must not run the timing campaign")

    monkeypatch.setattr(command, "run_histogram", no_campaign)
    rc, out, err = run_main(capsys, "histogram", text_file)
    assert rc == 0, err
    assert out == GOLDEN_BYTES.format(path=text_file)
    assert "measuring" not in out + err and "ceiling" not in out + err
    assert sorted(p.name for p in text_file.parent.iterdir()) == ["in.txt"]


def test_histogram_files_letters_top(capsys: pytest.CaptureFixture, text_file: Path,
                                     tmp_path: Path) -> None:
    other = tmp_path / "b.bin"
    other.write_bytes(b"\x00\x00\xff")
    rc, out, err = run_main(capsys, "histogram", text_file, other, "--bins", "letters",
                            "--top", "3")
    assert rc == 0, err
    first, second = out.split(f"{other}: ")
    assert first == GOLDEN_LETTERS.format(path=text_file)
    assert second.startswith("3 bytes, bins letters (27), numpy_chunked (cpu)")
    assert re.search(r"other\s*[│|]\s*3\b", second)


def test_histogram_file_matches_library(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    f = tmp_path / "r.bin"
    data = np.random.default_rng(3).integers(0, 256, 5000, dtype=np.uint8)
    f.write_bytes(data.tobytes())
    rc, out, err = run_main(capsys, "histogram", f, "--top", "0")
    assert rc == 0, err
    want = np.bincount(data, minlength=256)
    rows = re.findall(r"^│\s*(\d+)\s*│[^│]*│\s*(\d+)\s*│", out, flags=re.M)
    assert len(rows) == np.count_nonzero(want)
    assert all(want[int(b)] == int(c) for b, c in rows)


def test_histogram_file_variant(capsys: pytest.CaptureFixture, text_file: Path) -> None:
    rc, out, err = run_main(capsys, "histogram", text_file, "--variant", "numpy_chunked")
    assert rc == 0, err
    assert "numpy_chunked (cpu)" in out


def test_histogram_file_time(capsys: pytest.CaptureFixture, text_file: Path) -> None:
    """``--time`` runs today's timing lab on the file: the bins and the timing table."""
    rc, out, err = run_main(capsys, "histogram", text_file, "--time", "--bins", "letters",
                            "--runs", "2", "--warmup", "1")
    assert rc == 0, err
    assert "numpy_chunked" in out and "times in ms" in out
    assert "15 bytes" in out
    assert re.search(r"L/l\s*[│|]\s*3\b", out) and re.search(r"Z/z\s*[│|]\s*3\b", out), out


@pytest.mark.parametrize("opt", [["--runs", "2"], ["--compare"], ["--variant", "all"],
                                 ["--pinned"]])
def test_timing_options_imply_time(capsys: pytest.CaptureFixture, text_file: Path,
                                   opt: list[str]) -> None:
    rc, out, err = run_main(capsys, "histogram", text_file, *opt, "--warmup", "0",
                            "--runs", "2")
    assert rc == 0, err
    assert "times in ms" in out


def test_histogram_time_needs_one_file(capsys: pytest.CaptureFixture, text_file: Path) -> None:
    rc, _, err = run_main(capsys, "histogram", text_file, text_file, "--time")
    assert_user_error(rc, err, "one FILE")


def test_histogram_size_without_generate(capsys: pytest.CaptureFixture,
                                         text_file: Path) -> None:
    rc, _, err = run_main(capsys, "histogram", text_file, "--size", "1K")
    assert_user_error(rc, err, "--generate")


def test_histogram_unknown_variant_plain(capsys: pytest.CaptureFixture, text_file: Path) -> None:
    rc, _, err = run_main(capsys, "histogram", text_file, "--variant", "nosuch")
    assert_user_error(rc, err, "nosuch", "numpy_chunked")


def test_histogram_missing_among_files(capsys: pytest.CaptureFixture, text_file: Path,
                                       tmp_path: Path) -> None:
    rc, out, err = run_main(capsys, "histogram", text_file, tmp_path / "gone.bin")
    assert_user_error(rc, err, "gone.bin")
    assert "a str is taken" not in err  # the CLI's FILE is a path, not text


def test_histogram_generate_json(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    out_json = tmp_path / "out.json"
    rc, out, err = run_main(capsys, "histogram", "--generate", "uniform", "--size", "4K",
                            "--json", out_json, "--runs", "2", "--warmup", "1")
    assert rc == 0, err
    doc = results.read(out_json)
    assert doc["schema"] == 1
    recs = doc["results"]
    assert len(recs) == 1
    r = recs[0]
    assert r["verified"] is True and r["error"] is None
    assert r["variant"] == "numpy_chunked" and r["backend"] == "cpu"
    assert r["params"]["size"] == 4096 and r["params"]["data"] == "uniform"
    assert r["params"]["bins"] == "bytes"  # the library's default
    assert r["bytes_moved"] == 4096 + 8 * 256
    assert r["gbps"] > 0
    assert len(r["phases"]["kernel"]["samples"]) == 2
    assert doc["meta"]["device"]["backend"] == "cpu"
    assert not (tmp_path / "histogram.json").exists()  # moved to the requested name


def test_histogram_variant_all(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    out_json = tmp_path / "all.json"
    rc, _, err = run_main(capsys, "histogram", "--generate", "const", "--size", "2^12",
                          "--bins", "bytes", "--variant", "all", "--json", out_json,
                          "--runs", "2", "--warmup", "0", "--top", "0")
    assert rc == 0, err
    doc = results.read(out_json)
    assert [r["variant"] for r in doc["results"]] == warplab.variants("histogram", "cpu")
    assert all(r["verified"] for r in doc["results"])


@pytest.mark.parametrize("text,want", [("1048576", 1 << 20), ("2^20", 1 << 20), ("64K", 65536),
                                       ("1M", 1 << 20), ("1GiB", 1 << 30), ("4G", 4 << 30),
                                       ("4k", 4096), ("12", 12)])
def test_parse_size(text: str, want: int) -> None:
    assert console.parse_size(text) == want


def test_histogram_size_zero(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    out_json = tmp_path / "zero.json"
    rc, _, err = run_main(capsys, "histogram", "--generate", "uniform", "--size", "0",
                          "--json", out_json, "--runs", "2", "--warmup", "0")
    assert rc == 0, err
    assert [r["params"]["size"] for r in results.read(out_json)["results"]] == [0]


def test_histogram_explicit_size_above_cpu_quick_max(capsys: pytest.CaptureFixture,
                                                     tmp_path: Path) -> None:
    out_json = tmp_path / "big.json"
    rc, _, err = run_main(capsys, "histogram", "--generate", "const", "--size", "5M",
                          "--bins", "bytes", "--json", out_json, "--runs", "2", "--warmup", "0")
    assert rc == 0, err
    recs = results.read(out_json)["results"]
    assert [r["params"]["size"] for r in recs] == [5 << 20] and recs[0]["verified"]


def test_bench_only_large_sizes_on_cpu(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    rc, _, err = run_main(capsys, "bench", "--out", tmp_path, "--sizes", "8M", "--runs", "1",
                          "--warmup", "0", "--data", "const", "--bins", "bytes")
    assert "max() arg" not in err
    assert rc == 0, err


def test_histogram_json_keeps_neighbouring_results(capsys: pytest.CaptureFixture,
                                                   tmp_path: Path, text_file: Path) -> None:
    keep = tmp_path / "histogram.json"
    keep.write_text('{"keep": 1}')
    rc, _, err = run_main(capsys, "histogram", text_file, "--json", tmp_path / "mine.json",
                          "--runs", "2", "--warmup", "0")
    assert rc == 0, err
    assert (tmp_path / "mine.json").is_file()
    assert keep.is_file() and keep.read_text() == '{"keep": 1}'


# ---------------------------------------------------------------------------- bench/report


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Path]:
    root = tmp_path_factory.mktemp("bench")
    rc = cli.main(["--device", "cpu", "bench", "--quick", "--out", str(root), "--sizes", "1K,4K",
                   "--runs", "2", "--warmup", "1"])
    return rc, root


def test_bench_quick(bench_run: tuple[int, Path]) -> None:
    rc, root = bench_run
    assert rc == 0
    runs = list(root.iterdir())
    assert len(runs) == 1 and re.fullmatch(r"\d{8}-\d{6}", runs[0].name), runs
    doc = results.read(runs[0] / "histogram.json")
    recs = doc["results"]
    # sizes x (uniform, const) x (ascii128, letters) x (warplab's variant, NumPy's own call)
    assert len(recs) == 2 * 2 * 2 * 2
    assert {r["params"]["size"] for r in recs} == {1024, 4096}
    assert {r["params"]["data"] for r in recs} == {"uniform", "const"}
    assert {r["params"]["bins"] for r in recs} == {"ascii128", "letters"}
    assert all(r["verified"] for r in recs)
    assert {(r["variant"], r["provider"]) for r in recs} == {("numpy_chunked", "warplab"),
                                                              ("numpy.bincount", "numpy")}
    assert any("np.bincount" in n for n in doc["meta"]["notes"])
    assert doc["meta"]["campaign"] == "quick"


def test_report_from_bench(capsys: pytest.CaptureFixture, bench_run: tuple[int, Path]) -> None:
    _, root = bench_run
    run_dir = next(root.iterdir())
    rc, out, err = run_main(capsys, "report", run_dir)
    assert rc == 0, err
    index = run_dir / "report" / "index.html"
    assert index.is_file() and index.stat().st_size > 0
    assert "<html" in index.read_text().lower()


def test_report_missing(capsys: pytest.CaptureFixture) -> None:
    rc, _, err = run_main(capsys, "report", "/nonexistent")
    assert_user_error(rc, err, "/nonexistent")


# ------------------------------------------------------------------------------- errors


def test_missing_file(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    rc, _, err = run_main(capsys, "histogram", tmp_path / "missing.bin")
    assert_user_error(rc, err, "missing.bin")


def test_directory_as_file(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    rc, _, err = run_main(capsys, "histogram", tmp_path)
    assert_user_error(rc, err, str(tmp_path))


def test_generate_without_size(capsys: pytest.CaptureFixture) -> None:
    rc, _, err = run_main(capsys, "histogram", "--generate", "uniform")
    assert_user_error(rc, err, "--size")


def test_file_and_generate(capsys: pytest.CaptureFixture, text_file: Path) -> None:
    rc, _, err = run_main(capsys, "histogram", text_file, "--generate", "uniform",
                          "--size", "1K")
    assert_user_error(rc, err)


def test_neither_file_nor_generate(capsys: pytest.CaptureFixture) -> None:
    rc, _, err = run_main(capsys, "histogram")
    assert_user_error(rc, err)


def test_unknown_variant(capsys: pytest.CaptureFixture) -> None:
    rc, _, err = run_main(capsys, "histogram", "--generate", "uniform", "--size", "1K",
                          "--variant", "nosuch")
    assert_user_error(rc, err, "nosuch", "numpy_chunked")


def test_cuda_variant_on_cpu(capsys: pytest.CaptureFixture) -> None:
    rc, _, err = run_main(capsys, "histogram", "--generate", "uniform", "--size", "1K",
                          "--variant", "global")
    assert_user_error(rc, err, "global")


def test_bad_runs(capsys: pytest.CaptureFixture) -> None:
    rc, _, err = run_main(capsys, "histogram", "--generate", "uniform", "--size", "1K",
                          "--runs", "0")
    assert_user_error(rc, err, "--runs")


def test_bad_size_is_argparse_error(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as ei:
        cli.main(["histogram", "--generate", "uniform", "--size", "abc"])
    assert ei.value.code == 2
    _, err = capsys.readouterr()
    assert "not a size" in err and "Traceback" not in err


@no_gpu
@pytest.mark.parametrize("argv", [["--device", "cuda", "device"],
                                  ["--device", "gpu", "histogram", "--generate", "uniform",
                                   "--size", "1K"]])
def test_cuda_without_gpu(capsys: pytest.CaptureFixture, argv: list[str]) -> None:
    rc, _, err = run_main(capsys, *argv)
    assert_user_error(rc, err, "cuda")


def test_bogus_env_device(capsys: pytest.CaptureFixture, monkeypatch) -> None:
    monkeypatch.setenv("WARPLAB_DEVICE", "bogus")
    rc, _, err = run_main(capsys, "device")
    assert_user_error(rc, err, "bogus")

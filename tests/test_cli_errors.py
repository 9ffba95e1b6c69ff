"""The lab CLI's refusals: one line on stderr, exit 2, no progress fragment on stdout and
nothing left on disk (the NumPy backend)."""
from __future__ import annotations

from pathlib import Path

import pytest

from warplab import cli

pytest.importorskip("rich")


def _refused(capsys: pytest.CaptureFixture, *argv: str) -> str:
    try:
        rc = cli.main([str(a) for a in argv])
    except SystemExit as exc:  # argparse's own refusals
        rc = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert rc == 2, (rc, out, err)
    assert "━" not in out and "0/?" not in out, out  # no progress bar before the error
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    return lines[0]


def test_a_zero_total_is_refused(capsys):
    assert "--total must be at least 1 byte" in _refused(capsys, "memcpy", "--total", "0",
                                                         "--device", "cpu")


def test_an_unknown_variant_is_named_unknown(capsys):
    line = _refused(capsys, "memcpy", "--variant", "nope", "--device", "cpu")
    assert "unknown memcpy_batched variant 'nope'" in line and "valid:" in line


def test_a_variant_of_the_other_backend_says_so(capsys):
    line = _refused(capsys, "bench", "reduce", "--variant", "persistent_vec", "--quick",
                    "--device", "cpu", "--out", "x")
    assert "another backend than cpu" in line and "numpy" in line


@pytest.mark.parametrize("value", ["-1M", "-5"])
def test_a_negative_size_reaches_the_size_parser(capsys, value):
    line = _refused(capsys, "stream", "--sizes", value, "--device", "cpu")
    assert "not a size" in line and value in line


def test_a_refused_bench_leaves_no_folder(capsys, tmp_path: Path):
    out = tmp_path / "new" / "runs"
    _refused(capsys, "bench", "reduce", "--variant", "nope", "--quick", "--device", "cpu",
             "--out", out)
    assert not (tmp_path / "new").exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    _refused(capsys, "bench", "reduce", "--variant", "nope", "--quick", "--device", "cpu",
             "--out", kept)
    assert kept.exists() and not any(kept.iterdir())  # the user's own folder stays


@pytest.mark.parametrize("cmd", ["stream", "dask"])
def test_a_missing_tmp_folder_is_named(capsys, cmd):
    line = _refused(capsys, cmd, "--tmp", "/nonexistent/x", "--device", "cpu")
    assert "no such folder: '/nonexistent/x'" in line


def test_compare_of_two_families_says_so(capsys):
    fx = Path(__file__).parent / "fixtures" / "results"
    line = _refused(capsys, "compare", fx / "histogram-table-h100-b907bd7.json",
                    fx / "reduce-table-h100-7484a8f.json")
    assert "nothing to compare" in line and "histogram" in line and "reduce" in line

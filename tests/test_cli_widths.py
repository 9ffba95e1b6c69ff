"""The CLI fits the terminal: every command's output at a narrow (60), the usual (80) and a
wide (120) width has no line wider than the terminal, no number cut short (rich's ellipsis),
no column dropped (the words a table must show are there) and no column that is nothing but
dashes; and the argument errors, ``--version`` and ``--device`` after the subcommand behave
as a user expects."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from warplab import cli
from warplab.lab.console import console

WIDTHS = (60, 80, 120)
DASH_ONLY = ("-", "—")


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("WARPLAB_COMMIT", "test-commit")


@pytest.fixture
def width(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(console, "width", request.param)
    monkeypatch.setenv("COLUMNS", str(request.param))
    return request.param


def commands(tmp: Path) -> dict[str, list[str]]:
    data = tmp / "in.txt"
    data.write_bytes(b"Hello World\nzzz" * 100)
    quick = ["--runs", "2", "--warmup", "0"]
    return {
        "device": ["device"],
        "histogram-file": ["histogram", str(data)],
        "histogram-time": ["histogram", "--generate", "uniform", "--size", "64K", "--time",
                           "--variant", "all", *quick],
        "reduce": ["reduce", "--size", "64K", "--dtype", "float32", "--variant", "all", *quick],
        "matmul": ["matmul", "--size", "64", "--variant", "all", *quick],
        "series": ["series", "--m", "64", "--n", "64", *quick],
        "corr": ["corr", "--m", "64", "--n", "32", *quick],
        "memcpy": ["memcpy", "--min", "1", "--max", "64", "--total", "1M", *quick],
        "bench-reduce": ["bench", "reduce", "--quick", "--sizes", "64K", "--out", str(tmp / "r"),
                         *quick],
        "stream": ["stream", "--sizes", "1M", "--source", "pageable,file_cached", "--op",
                   "histogram", *quick],
        "bench-histogram": ["bench", "histogram", "--sizes", "64K", "--data", "uniform",
                            "--bins", "letters", "--out", str(tmp / "h"), *quick],
    }
#: Text every run of a command must show whole (a squeezed text column loses it silently).
MUST_SHOW = {"stream": ("pageable", "file_cached", "stage"),
             "bench-histogram": ("verified", "numpy_chunked", "letters")}


def _table_lines(out: str) -> list[str]:
    """Output lines without the progress bar's (its record text is cut to fit on purpose)."""
    return [line for line in out.splitlines() if " eta " not in line]


@pytest.mark.parametrize("width", WIDTHS, indirect=True)
@pytest.mark.parametrize("name", ["device", "histogram-file", "histogram-time", "reduce",
                                  "matmul", "series", "corr", "memcpy", "bench-reduce",
                                  "stream", "bench-histogram"])
def test_output_fits(name: str, width: int, tmp_path: Path,
                     capsys: pytest.CaptureFixture) -> None:
    argv = ["--device", "cpu", *commands(tmp_path)[name]]
    assert cli.main(argv) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    lines = _table_lines(out)
    assert lines, name
    # a file path is printed whole (the terminal wraps it; copy and paste keep working)
    too_wide = [line for line in out.splitlines() if len(line) > width and str(tmp_path) not in line]
    assert not too_wide, (name, width, too_wide[:3])
    cut = [line for line in lines if "…" in line]
    assert not cut, (name, width, cut[:3])
    for text in MUST_SHOW.get(name, ()):
        assert text in out, (name, width, text)
    for line in lines:  # a table row whose every cell is a dash would be a dropped column
        cells = [c.strip() for c in line.strip("│┃").split("│")]
        assert not (len(cells) > 2 and all(c in DASH_ONLY for c in cells[1:])), line


def test_version(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith("warplab ")


@pytest.mark.parametrize("argv,needle", [
    (["bogus"], "invalid choice"),
    ([], "required"),
    (["reduce", "--bogus"], "--bogus"),
    (["reduce", "--dtype", "int8"], "int8"),
    (["bench", "reduce", "--dtypes", "float16"], "float16"),
    (["bench", "matmul", "--dtypes", "int32"], "int32"),
    (["bench", "reduce", "--ops", "prod"], "prod"),
    (["reduce", "--size", "4T"], "memory"),
])
def test_mistakes_are_one_line(argv: list[str], needle: str, tmp_path: Path,
                               capsys: pytest.CaptureFixture) -> None:
    out_dir = tmp_path / "runs"
    if argv[:1] == ["bench"]:
        argv = [*argv, "--out", str(out_dir)]
    try:
        rc = cli.main(["--device", "cpu", *argv])
    except SystemExit as exc:  # argparse
        rc = exc.code
    err = capsys.readouterr().err
    assert rc == 2
    assert len(err.strip().splitlines()) == 1, err
    assert "error" in err and needle in err, err
    assert not out_dir.exists() or not any(out_dir.iterdir()), "a run folder was left behind"


def test_device_after_the_subcommand(capsys: pytest.CaptureFixture) -> None:
    assert cli.main(["reduce", "--device", "cpu", "--size", "4K", "--runs", "1",
                     "--warmup", "0"]) == 0
    assert "(cpu)" in capsys.readouterr().out


@pytest.mark.parametrize("cols", [60, 64, 70, 76])
def test_text_columns_are_never_squeezed_away(cols: int) -> None:
    """rich may shrink a wrapping text column to nothing (no ellipsis) and crop the numbers at
    the right edge: print_table must transpose such a table instead (the stream table at 60
    columns lost its source and host columns that way)."""
    import io

    from rich.console import Console
    from rich.table import Table

    from warplab.lab.harness.tables import print_table

    t = Table(title="stream")
    for col in ("size", "source", "host", "chunk", "e2e ms", "GB/s", "read ms", "overlap"):
        t.add_column(col, justify="left" if col in ("source", "host") else "right")
    t.add_row("16 MiB", "pageable", "view", "2 MiB", "23.74", "0.7", "0.00", "-")
    t.add_row("16 MiB", "file_cached", "stage", "2 MiB", "36.35", "0.5", "13.40", "0.41")
    buf = io.StringIO()
    print_table(t, Console(file=buf, width=cols))
    out = buf.getvalue()
    for text in ("pageable", "file_cached", "stage", "13.40", "0.41", "overlap"):
        assert text in out, (cols, text, out)
    assert max(map(len, out.splitlines())) <= cols

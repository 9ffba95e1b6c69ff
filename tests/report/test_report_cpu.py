"""The summary of a run on the NumPy backend: NumPy's own calls as the comparators, the ratio
and the note that says what it means (on a CPU only), the reason where NumPy has no such call
and where a rate passes the measured roof."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import RESULT_FIXTURES

from warplab.lab.campaigns.corr.bench import run_corr
from warplab.lab.campaigns.histogram.bench import run_histogram
from warplab.lab.campaigns.matmul.bench import run_matmul
from warplab.lab.campaigns.reduce.bench import run_reduce
from warplab.lab.campaigns.series.bench import run_series
from warplab.lab.harness.measure import Settings
from warplab.lab.report import build_report, load_results
from warplab.lab.report.load import Row
from warplab.lab.report.summary import (
    CPU_NO_COMPARATOR,
    CPU_NOTE,
    Headline,
    headlines,
    pct_text,
    rival_text,
    summary_table,
)

FAST = Settings(runs=2, warmup=0, max_seconds=None)
#: every speed family of a cpu run with a NumPy call to compare with, and that call
NUMPY_CALLS = {"histogram": "numpy.bincount", "reduce": "numpy.sum", "matmul": "numpy.matmul",
               "reduce_axis": "numpy.mean", "corrcoef": "numpy.corrcoef"}
SENTENCE = "own function on the same input"  # the note's words, as the page writes them


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The quick campaigns of ``warplab bench all --quick`` on the cpu backend, at small sizes
    and two runs each, into one folder (as ``bench`` writes them)."""
    out = tmp_path_factory.mktemp("cpu-run")
    run_histogram(campaign="quick", backend="cpu", json_path=out / "histogram.json",
                  sizes=[1 << 10, 1 << 12], settings=FAST)
    run_reduce(campaign="quick", backend="cpu", json_path=out / "reduce.json",
               configs=[(1 << 10, "float32"), (1 << 12, "float32"), (1 << 12, "int32")],
               settings=FAST)
    run_matmul(campaign="quick", backend="cpu", json_path=out / "matmul.json",
               configs=[(32, 32, 32, "float32"), (64, 64, 64, "float32")], settings=FAST)
    run_series(campaign="quick", backend="cpu", json_path=out / "series.json",
               shapes=[(32, 256)], parts=("generation", "mean"), settings=FAST)
    run_corr(campaign="quick", backend="cpu", json_path=out / "corr.json", shapes=[(48, 64)],
             with_pairs=False, settings=FAST)
    return out


def _rows(heads: list[Headline]) -> dict[str, dict[str, str]]:
    t = summary_table(heads)
    return {r[0]: dict(zip(t.columns, r)) for r in t.rows}


def test_cpu_records_numpy_comparators(cpu_run: Path) -> None:
    for name in ("histogram", "reduce", "matmul", "series", "corr"):
        doc = json.loads((cpu_run / f"{name}.json").read_text())
        theirs = [r for r in doc["results"] if r["provider"] == "numpy"]
        assert theirs and all(r["verified"] and r["backend"] == "cpu" for r in theirs), name
        assert any("NumPy's own" in n for n in doc["meta"]["notes"]), name
        assert not any("comparators" in n and "need the GPU" in n
                       for n in doc["meta"]["notes"]), name


def test_cpu_summary_rows_have_numpy_and_a_ratio(cpu_run: Path) -> None:
    heads = headlines(load_results(cpu_run))
    by = {h.family: h for h in heads}
    assert set(NUMPY_CALLS) | {"random_walk"} <= set(by)
    for family, call in NUMPY_CALLS.items():
        h = by[family]
        assert h.backend == "cpu" and h.best is not None and h.best.provider == "warplab"
        assert h.rival is not None and h.rival.provider == "numpy", family
        assert h.rival.variant == call and h.ratio is not None and h.ratio > 0, family
    rows = _rows(heads)
    for family, call in NUMPY_CALLS.items():
        assert rows[family]["best comparator"].startswith(call)
        assert rows[family]["warplab / comparator"].endswith("×")
    assert rows["random_walk"]["best comparator"] == CPU_NO_COMPARATOR["random_walk"]
    assert CPU_NOTE in summary_table(heads).note


def test_cpu_note_on_the_page(cpu_run: Path, tmp_path: Path) -> None:
    page = build_report(cpu_run, tmp_path / "report").read_text(encoding="utf-8")
    start = page.index('<section id="summary">')
    block = page[start:page.index("</section>", start)]
    assert SENTENCE in block and "numpy.bincount" in block and "numpy.sum" in block


@pytest.mark.parametrize("name", ["histogram-table-h100-b907bd7", "reduce-table-h100-7484a8f",
                                  "matmul-table-h100-1acfec3"])
def test_no_cpu_note_on_a_gpu_run(name: str, tmp_path: Path) -> None:
    src = RESULT_FIXTURES / f"{name}.json"
    heads = headlines(load_results(src))
    assert heads and all(h.backend == "cuda" for h in heads)
    assert CPU_NOTE not in summary_table(heads).note
    page = build_report(src, tmp_path / "report").read_text(encoding="utf-8")
    assert SENTENCE not in page


# ------------------------------------------------------------------- rows built by hand


def _row(backend: str, *, family: str = "reduce", provider: str = "warplab",
         variant: str = "numpy", nbytes: int = 4 << 20, gbps: float = 30.0) -> Row:
    ms = nbytes / (gbps * 1e9) * 1e3
    return Row(family=family, variant=variant, provider=provider, backend=backend,
               device="dev", source="r.json", size=nbytes // 4, params={},
               phases={"kernel": {"median": ms}}, bytes_moved=nbytes, gbps=gbps,
               pct_of_copy_bw=None, verified=True, error=None)


def _head(best: Row, rival: Row | None = None, roof: float = 10.0,
          roof_bytes: int | None = 64 << 20) -> Headline:
    return Headline(best.family, "dev", "gbps", (), best.size, best, rival, "read", roof, None,
                    roof_bytes=roof_bytes)


def test_above_the_roof_on_a_cpu_says_why() -> None:
    text = pct_text(_head(_row("cpu")))
    assert text.startswith("300%") and "4 MiB stay in the CPU's caches" in text
    assert "read roof reads 64 MiB from memory" in text
    # a GPU row, or an input as large as the roof's buffer: only the mark
    assert pct_text(_head(_row("cuda"))) == "300% (above the measured roof)"
    assert pct_text(_head(_row("cpu", nbytes=64 << 20))) == "300% (above the measured roof)"
    assert pct_text(_head(_row("cpu"), roof_bytes=None)) == "300% (above the measured roof)"
    assert pct_text(_head(_row("cpu", gbps=5.0))) == "50%"


@pytest.mark.parametrize("family", sorted(CPU_NO_COMPARATOR))
def test_cpu_rows_without_a_numpy_call_say_why(family: str) -> None:
    assert rival_text(_head(_row("cpu", family=family))) == CPU_NO_COMPARATOR[family]
    assert rival_text(_head(_row("cuda", family=family))) == "none measured"
    assert rival_text(_head(_row("cpu", family="reduce"))) == "none measured"


def test_cpu_note_only_with_a_cpu_row() -> None:
    rival: Any = _row("cpu", provider="numpy", variant="numpy.sum", gbps=15.0)
    cpu = _head(_row("cpu"), rival)
    gpu = _head(_row("cuda"), _row("cuda", provider="cupy", variant="cupy.sum"))
    assert cpu.ratio == pytest.approx(2.0)
    assert CPU_NOTE in summary_table([gpu, cpu]).note
    assert CPU_NOTE not in summary_table([gpu]).note

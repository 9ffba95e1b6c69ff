"""The NumPy-backend campaign in the report: its records are well formed (no "malformed
record" failures), one table of the pairs, and a line under the summary; the dask campaign's
host-read records too."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from warplab.lab.campaigns.numpy.bench import run_numpy
from warplab.lab.report.build import build_report
from warplab.lab.report.load import load_results
from warplab.lab.report.numpy import numpy_tables, summary_line


@pytest.fixture(scope="module")
def numpy_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("numpy-run")
    run_numpy(campaign="quick", json_path=folder / "numpy.json",
              names=["byte_histogram 16", "bincount 1000"])
    return folder


def test_numpy_records_are_results_not_failures(numpy_run: Path) -> None:
    res = load_results(numpy_run)
    assert res.rows and all(r.ok for r in res.rows), [r.error for r in res.rows if not r.ok]
    (table,) = numpy_tables(res)
    cases = [row[0] for row in table.rows]
    assert cases[0].startswith("byte_histogram 16") and any("bincount" in c for c in cases)
    for _, ours, theirs, ratio in table.rows:
        assert ours > 0 and theirs > 0 and ratio == pytest.approx(ours / theirs)
    line = summary_line(res)
    assert line is not None and re.search(r"\d+ of \d+ cases within 1\.5×", line)


def test_numpy_table_and_line_on_the_page(numpy_run: Path, tmp_path: Path) -> None:
    page = build_report(numpy_run, tmp_path / "report").read_text()
    assert "Failures (" not in page
    assert "NumPy backend against NumPy, per call" in page
    assert "cases within 1.5×" in page


def test_dask_host_read_records_are_well_formed() -> None:
    pytest.importorskip("distributed")
    from warplab.lab.campaigns.dask.bench import _host_reads
    from warplab.lab.report.load import Source, flatten_record

    recs = _host_reads([__file__], "cpu", {}, quick=True, worker_counts=[1, 2])
    src = Source(path=Path("dask.json"), meta={"device": {"backend": "cpu"}})
    assert all(flatten_record(r, src).ok for r in recs)
    from warplab.core import staging
    from warplab.lab.campaigns.dask import modes as md

    cache = [r["params"]["threads"] for r in recs if r["params"]["source"] == "page_cache"]
    # one read per distinct thread count: a thread per core, the direct call's threads, and
    # the workers' together (split so that they use a thread per core)
    assert len(cache) == len(set(cache)) and {md.cores(), staging.threads()} <= set(cache)

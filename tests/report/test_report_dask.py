"""Report for the Dask campaign: its end-to-end records (``phases.total`` only) load
as well formed, one table lists them with the campaign's derived columns, and the generic
per-size tables leave the family out (no GPU, no Dask needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from warplab.lab.report import build_report, load_results
from warplab.lab.report.dask import COLUMNS, dask_tables
from warplab.lab.report.tables import glance_tables, median_tables


def _rec(variant: str, mode: str, workers: int, ms: float, **extra: Any) -> dict[str, Any]:
    t = {"min": ms, "q10": ms, "median": ms, "q90": ms, "max": ms, "noise": 0.0,
         "samples": [ms]}
    params = {"size": 1 << 18, "m": 512, "n": 128, "mode": mode, "workers": workers}
    if mode == "cluster":
        params["cluster"] = "LocalCluster"
    return {"family": "dask", "variant": variant, "provider": "warplab", "backend": "cpu",
            "params": params, "phases": {"h2d": None, "kernel": None, "d2h": None, "total": t},
            "bytes_moved": 1 << 18, "gbps": None, "pct_of_copy_bw": None, "verified": True,
            "error": None, "e2e_gbps": None, "speedup": None, "efficiency": None,
            "overhead_pct": None, **extra}


def _doc(tmp_path: Path) -> Path:
    doc = {"schema": 1, "meta": {"timestamp": "2026-11-23T20:00:00+00:00", "time_unit": "ms",
                                 "device": {"name": "cpu", "backend": "cpu"}, "ceilings": {},
                                 "notes": []},
           "results": [_rec("corrcoef", "direct", 1, 3.25),
                       _rec("corrcoef", "cluster", 1, 6.0, speedup=1.0, efficiency=1.0,
                            overhead_pct=84.6),
                       _rec("corrcoef", "cluster", 2, 3.5, speedup=1.71, efficiency=0.86)]}
    path = tmp_path / "dask.json"
    path.write_text(json.dumps(doc))
    return path


def test_records_load_and_table(tmp_path: Path) -> None:
    res = load_results(_doc(tmp_path))
    assert [r.error for r in res.rows] == [None] * 3 and all(r.ok for r in res.rows)
    (table,) = dask_tables(res)
    assert table.columns == COLUMNS
    rows = {(r[1], r[2]): dict(zip(table.columns, r)) for r in table.rows}
    assert rows[("direct", 1)]["median ms"] == pytest.approx(3.25)
    assert rows[("cluster", 1)]["overhead %"] == pytest.approx(84.6)
    assert rows[("cluster", 2)]["speedup"] == pytest.approx(1.71)
    assert rows[("cluster", 2)]["cluster"] == "LocalCluster"
    assert not [t for t in glance_tables(res) + median_tables(res) if t.family == "dask"]


def test_page_has_the_table_and_no_failures(tmp_path: Path) -> None:
    page = build_report(_doc(tmp_path), tmp_path / "report").read_text()
    assert "0 failed" in page and "dask: distributed calls end to end" in page

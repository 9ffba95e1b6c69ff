"""Unit tests for warplab.lab.report loading, grouping, tables and figure functions."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from warplab.lab.report import load_results, render_table
from warplab.lab.report.figures import (
    plot_bandwidth_vs_size, plot_phases_at_largest, plot_time_vs_size,
)
from warplab.lab.report.groups import config_slug, fmt_size, slug
from warplab.lab.report.tables import Table, failures_table, glance_tables, speedup_tables


def _s(m: float) -> dict[str, Any]:
    return {"min": m, "q10": m, "median": m, "q90": m, "max": m, "noise": 0.0, "samples": [m]}


def rec(variant: str, size: int, median: float, **kw: Any) -> dict[str, Any]:
    params = {"size": size, "data": "uniform", "bins": "bytes", "nbins": 256, "pinned": True,
              "runs": 3, "warmup": 1}
    params.update(kw.pop("params", {}))
    out = {"family": "histogram", "variant": variant, "provider": "warplab", "backend": "cuda",
           "params": params, "phases": {"h2d": None, "kernel": _s(median), "d2h": None,
                                        "total": _s(median)},
           "bytes_moved": size, "gbps": size / (median * 1e6), "pct_of_copy_bw": None,
           "verified": True, "error": None}
    out.update(kw)
    return out


def doc(results: list[dict[str, Any]], **meta: Any) -> dict[str, Any]:
    m = {"device": {"backend": "cuda", "name": "TestGPU"}, "time_unit": "ms",
         "ceilings": {"copy_gbps": 100.0}, "notes": []}
    m.update(meta)
    return {"schema": 1, "meta": m, "results": results}


def write(path: Path, d: Any) -> Path:
    path.write_text(json.dumps(d))
    return path


def test_load_flattens_and_converts_units(tmp_path: Path) -> None:
    f = write(tmp_path / "a.json", doc([rec("global", 1024, 2000.0)], time_unit="us"))
    res = load_results([f])
    (row,) = res.rows
    assert row.median == pytest.approx(2.0)  # 2000 us -> 2 ms
    assert row.stat("kernel", "noise") == 0.0
    assert row.size == 1024 and row.device == "TestGPU" and row.source == "a.json"
    assert row.copy_gbps == 100.0 and row.ok
    assert row.config == (("bins", "bytes"), ("data", "uniform"))


def test_malformed_and_failed_records_become_failures(tmp_path: Path) -> None:
    bad = rec("private", 64, 1.0)
    bad["phases"]["kernel"] = None
    nan = rec("global_stride", 64, float("nan"))
    unverified = rec("global", 64, 1.0, verified=False)
    f = write(tmp_path / "a.json", doc([bad, nan, unverified, "junk", rec("global", 32, 1.0)]))
    res = load_results(f)
    assert [r.ok for r in res.rows] == [False, False, False, False, True]
    assert "no kernel timing" in (res.rows[0].error or "")
    assert "not an object" in (res.rows[3].error or "")
    table = failures_table(res)
    assert table is not None and len(table.rows) == 4
    assert failures_table(load_results(write(tmp_path / "b.json", doc([rec("g", 8, 1.0)])))) \
        is None


def test_explicit_non_results_file_raises(tmp_path: Path) -> None:
    f = write(tmp_path / "x.json", {"name": "a saved device answer"})
    with pytest.raises(ValueError, match="no warplab results JSON in"):
        load_results(f)
    res = load_results([f, write(tmp_path / "y.json", doc([rec("global", 8, 1.0)]))])
    assert [s.path.name for s in res.sources] == ["y.json"]
    assert res.skipped[0][0].name == "x.json"


def test_config_keys_drop_derived_and_keep_varying(tmp_path: Path) -> None:
    rows = []
    for bins, nb in (("bytes", 256), ("letters", 26)):
        for pinned in (True, False):
            rows.append(rec("global", 8, 1.0, params={"bins": bins, "nbins": nb,
                                                      "pinned": pinned, "runs": 7}))
    res = load_results(write(tmp_path / "a.json", doc(rows)))
    keys = {tuple(k for k, _ in r.config) for r in res.rows}
    assert keys == {("bins", "data", "pinned")}


def test_measurement_details_do_not_split_configs(tmp_path: Path) -> None:
    rows = [rec("global", 8, 1.0, params={"bins": "bytes", "runs": 7, "held": True,
                                          "rounds": 5, "checked_rows": 512}),
            rec("global", 16, 1.0, params={"bins": "bytes", "runs": 3, "held": False,
                                           "rounds": None, "checked_rows": None})]
    res = load_results(write(tmp_path / "a.json", doc(rows)))
    assert len({r.config for r in res.rows}) == 1


def test_speedup_table_values(tmp_path: Path) -> None:
    rows = [rec("global", s, 4.0 * s) for s in (8, 16)]
    rows += [rec("private", s, 1.0 * s) for s in (8, 16)]
    rows += [rec("cupy.bincount", 16, 64.0, provider="cupy", error="boom")]
    res = load_results(write(tmp_path / "a.json", doc(rows)))
    (t,) = speedup_tables(res)
    assert t.columns == ["data", "size", "global", "private"]
    assert t.rows == [["uniform", "2^4", 1.0, 4.0]]
    (g,) = glance_tables(res)
    assert [row[g.columns.index("variant")] for row in g.rows] == ["private", "global"]


def test_plot_functions_skip_when_nothing_to_draw(tmp_path: Path) -> None:
    f = write(tmp_path / "a.json", doc([rec("global", 8, 1.0, verified=False),
                                        rec("private", 8, 1.0, error="x")]))
    rows = load_results(f).rows
    kw: dict[str, Any] = {"title": "t", "styles": {}, "order": ["global", "private"]}
    assert plot_time_vs_size(rows, tmp_path / "t.png", **kw) is None
    assert plot_bandwidth_vs_size(rows, tmp_path / "b.png", ceilings={}, **kw) is None
    assert plot_phases_at_largest(rows, tmp_path / "p.png", title="t", order=["global"]) is None
    assert not list(tmp_path.glob("*.png"))


def test_plot_time_writes_png(tmp_path: Path) -> None:
    f = write(tmp_path / "a.json", doc([rec("global", 2**k, 0.01 * k) for k in range(3, 9)]))
    rows = load_results(f).rows
    out = plot_time_vs_size(rows, tmp_path / "sub" / "t.png", title="a $b$ _c", styles={},
                            order=["global"])
    assert out is not None and out.read_bytes()[:4] == b"\x89PNG"


def test_formatting_helpers() -> None:
    assert fmt_size(2**20) == "2^20" and fmt_size(1000) == "1,000" and fmt_size(None) == "—"
    assert slug("file:a b/c") == "file-a-b-c" and slug("///") == "x"
    assert config_slug((("bins", "letters"), ("data", "file:x y"))) == \
        "bins-letters_data-file-x-y"
    assert config_slug(()) == "all"


def _table(text: str) -> Table:
    return Table(text, [text, "x"], [[text, math.pi], [None, True]], "glance", text,
                 row_keys=[text, text], note=text)


@settings(max_examples=60, deadline=None, database=None)
@given(st.text(min_size=1, max_size=30))
def test_render_table_escapes_everything(text: str) -> None:
    out, plain = render_table(_table(text)), render_table(_table("a"))
    for ch in "<>\"'":  # text from JSON adds no markup and cannot break out of attributes
        assert out.count(ch) == plain.count(ch)
    assert "3.14" in out and "—" in out and "yes" in out

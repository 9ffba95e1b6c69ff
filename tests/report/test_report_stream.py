"""Report for the stream campaign: the real H100 campaign's end-to-end table per op
splits each call into read, H2D and kernel with their overlap, its figure draws GB/s end to end
vs size with the pinned H2D roof, the summary gives a line (no comparator), and the generic
per-size figures and tables leave the family out (no GPU)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from matplotlib.axes import Axes

from warplab.lab.report import build_report, load_results, make_figures
from warplab.lab.report.stream import end_to_end_tables, stream_figures, summary_lines
from warplab.lab.report.summary import headlines
from warplab.lab.report.tables import glance_tables, median_tables

from conftest import RESULT_FIXTURES
from test_report_reduce import parse_tables

STREAM = RESULT_FIXTURES / "stream-table-h100-89b585f.json"
H2D_PINNED = json.loads(STREAM.read_text())["meta"]["ceilings"]["h2d_pinned_gbps"]


def raw(size: int, op: str, source: str) -> dict[str, Any]:
    (r,) = [r for r in json.loads(STREAM.read_text())["results"]
            if (r["params"]["size"], r["params"]["op"], r["variant"]) == (size, op, source)]
    return r


def test_end_to_end_tables() -> None:
    hist, total = end_to_end_tables(load_results(STREAM))
    assert hist.title == "stream: histogram of host data, end to end"
    assert total.title == "stream: sum of host data, end to end"
    assert hist.columns == ["size", "source", "host", "chunk", "end to end (ms)", "GB/s",
                            "% of pinned H2D", "read (ms)", "H2D (ms)", "kernel (ms)",
                            "overlap"]
    assert len(hist.rows) == 3 * 7 and len(total.rows) == 3 * 4
    assert [r[1] for r in total.rows[:4]] == ["pinned", "pageable", "register", "oneshot"]
    rows = {(r[0], r[1]): dict(zip(total.columns, r)) for r in total.rows}
    got, want = rows[("4 GiB", "pageable")], raw(4 << 30, "sum", "pageable")
    assert got["host"] == "stage" and got["chunk"] == "32 MiB"
    assert got["end to end (ms)"] == pytest.approx(want["phases"]["total"]["median"])
    assert got["GB/s"] == pytest.approx(want["e2e_gbps"])
    assert got["% of pinned H2D"] == pytest.approx(want["pct_of_h2d_pinned"])
    assert got["read (ms)"] == pytest.approx(want["read"]["median"])
    assert got["H2D (ms)"] == pytest.approx(want["phases"]["h2d"]["median"])
    assert got["kernel (ms)"] == pytest.approx(want["phases"]["kernel"]["median"])
    assert got["overlap"] == pytest.approx(want["overlap"])
    one = rows[("4 GiB", "oneshot")]  # streaming off: no phases collected, no overlap
    assert one["chunk"] == "—" and one["GB/s"] == pytest.approx(9.81, abs=0.01)
    assert [one[k] for k in ("read (ms)", "H2D (ms)", "kernel (ms)", "overlap")] == [None] * 4
    assert rows[("4 GiB", "register")]["read (ms)"] == 0.0  # no staging: a real zero
    assert "55.1 GB/s" in total.note and "overlap" in total.note


def test_figure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    roofs: list[float] = []
    orig = Axes.axhline

    def spy(self: Axes, y: float = 0, *a: Any, **kw: Any) -> Any:
        roofs.append(y)
        return orig(self, y, *a, **kw)

    monkeypatch.setattr(Axes, "axhline", spy)
    skipped: list[Any] = []
    (fig,) = stream_figures(load_results(STREAM),
                            lambda *p: tmp_path / ("_".join(p) + ".png"), skipped)
    assert fig[:3] == ("stream", "stream", ())
    assert fig[5] == ("pinned", "pageable", "file_cached", "register", "oneshot", "file_cold",
                      "file_direct")
    assert roofs == [pytest.approx(H2D_PINNED)] * 2  # one roof per op panel
    assert not skipped


def test_summary_line_and_generic_places(tmp_path: Path) -> None:
    res = load_results(STREAM)
    assert res.failed_rows == []
    assert summary_lines(res) == [
        "GB/s end to end at 4 GiB: fastest from pinned, sum 52.2 GB/s (95% of pinned H2D); "
        "from a pageable array, sum 23.0 GB/s (42% of pinned H2D)"]
    assert not [h for h in headlines(res) if h.family == "stream"]
    assert not [t for t in glance_tables(res) + median_tables(res) if t.family == "stream"]
    skipped: list[Any] = []
    refs = make_figures(res, tmp_path, skipped)
    assert [(f.family, f.kind) for f in refs] == [("stream", "stream")] and skipped == []


def test_page(tmp_path: Path) -> None:
    page = build_report(STREAM, out_dir=tmp_path / "r").read_text(encoding="utf-8")
    sec = page[page.index('id="family-stream"'):]
    tables = {t["caption"]: t for t in parse_tables(sec)}
    hist = tables["stream: histogram of host data, end to end"]
    assert hist["header"][7:] == ["read (ms)", "H2D (ms)", "kernel (ms)", "overlap"]
    assert hist["rows"][0] == ["256 MiB", "pinned", "pinned", "8 MiB", "6.49", "41.4", "75.1",
                               "0.00", "5.64", "0.52", "0.95"]
    assert 'src="stream_e2e.png"' in sec and "Figures not drawn" not in sec

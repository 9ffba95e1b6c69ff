"""Report for the reduce family: step-speedup figure, lecture table, bandwidth roof."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from matplotlib.axes import Axes
from matplotlib.image import imread

from warplab.lab.report import build_report, load_results
from warplab.lab.report.figures import plot_bandwidth_vs_size, plot_step_speedup
from warplab.lab.report.groups import config_keys, step_speedups
from warplab.lab.report.tables import lecture_tables

GPU = "NVIDIA H100 80GB HBM3"
COPY_GBPS = 3000.0
LECTURE = ("neighbored_gmem", "neighbored_smem", "neighbored_smem_nodiv", "interleaved_smem",
           "unroll2", "unroll_warp8", "complete_unroll8", "complete_unroll8_template",
           "single_pass_fence", "persistent_vec")
COMPARATORS = {"cupy.sum": "cupy", "torch.sum": "torch", "cuda.compute.reduce_into": "cuda.compute"}
# Relative throughput; complete_unroll8_template is a small regression on purpose (step < 1).
SPEED = {"neighbored_gmem": 1.0, "neighbored_smem": 1.7, "neighbored_smem_nodiv": 2.9,
         "interleaved_smem": 3.6, "unroll2": 6.5, "unroll_warp8": 15.0, "complete_unroll8": 17.5,
         "complete_unroll8_template": 17.0, "single_pass_fence": 21.0, "persistent_vec": 26.0,
         "cupy.sum": 20.0, "torch.sum": 23.0, "cuda.compute.reduce_into": 27.0}
DTYPES = {"int32": 4, "float32": 4}
SIZES = [2**k for k in range(10, 21)]
LARGEST = SIZES[-1]
FAILED = ("int32", "unroll2", LARGEST)  # this record errors


def kernel_ms(variant: str, size: int, dtype: str) -> float:
    slow = 1.25 if dtype == "float32" else 1.0
    return 0.003 + size * DTYPES[dtype] / (SPEED[variant] * 6e7) * slow


def rel_error(variant: str, dtype: str) -> float | None:
    if not dtype.startswith("float"):
        return None
    return 3.1e-08 * (1 + list(SPEED).index(variant))


def stats(m: float) -> dict[str, Any]:
    return {"min": m * 0.9, "q10": m * 0.95, "median": m, "q90": m * 1.1, "max": m * 1.3,
            "noise": 0.05, "samples": [m * 0.95, m, m * 1.1]}


def record(variant: str, size: int, dtype: str) -> dict[str, Any]:
    k = kernel_ms(variant, size, dtype)
    moved = size * DTYPES[dtype]
    failed = (dtype, variant, size) == FAILED
    gbps = None if failed else moved / (k * 1e-3) / 1e9
    rec: dict[str, Any] = {
        "family": "reduce", "variant": variant, "provider": COMPARATORS.get(variant, "warplab"),
        "backend": "cuda",
        "params": {"size": size, "dtype": dtype, "op": "sum", "data": "random", "pinned": True,
                   "runs": 5, "warmup": 1, "held": variant in LECTURE},
        "phases": {"h2d": stats(moved / 2e7 + 0.01), "kernel": stats(k), "d2h": stats(0.01),
                   "total": stats(k + 0.02)},
        "bytes_moved": moved, "gbps": gbps,
        "pct_of_copy_bw": None if gbps is None else 100 * gbps / COPY_GBPS,
        "verified": not failed, "error": "CUDA error: reduce failed (test)" if failed else None,
    }
    err = rel_error(variant, dtype)
    if err is not None:
        rec["rel_error"] = err
    elif dtype == "float32":
        rec["rel_error"] = None
    return rec


def reduce_doc(variants: tuple[str, ...] = tuple(SPEED)) -> dict[str, Any]:
    results = [record(v, s, dt) for dt in DTYPES for s in SIZES for v in variants]
    meta = {"device": {"backend": "cuda", "name": GPU, "cc": "9.0", "sms": 132},
            "versions": {"warplab": "0.1.0"}, "commit": "abc1234", "hostname": "testhost",
            "timestamp": "2025-01-01T00:00:00Z", "time_unit": "ms",
            "ceilings": {"copy_gbps": COPY_GBPS}, "notes": []}
    return {"schema": 1, "meta": meta, "results": results}


def write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc))
    return path


class _Tables(HTMLParser):
    """Every <table>: class, caption, header cells, and body rows (lists of cell texts)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[dict[str, Any]] = []
        self._cell: list[str] | None = None
        self._caption = False
        self._head = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append({"class": dict(attrs).get("class"), "caption": "",
                                "header": [], "rows": []})
        elif tag == "caption":
            self._caption = True
        elif tag == "thead":
            self._head = True
        elif tag == "tr" and self.tables and not self._head:
            self.tables[-1]["rows"].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "caption":
            self._caption = False
        elif tag == "thead":
            self._head = False
        elif tag in ("td", "th") and self._cell is not None and self.tables:
            t, text = self.tables[-1], "".join(self._cell).strip()
            (t["header"] if self._head else t["rows"][-1]).append(text)
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._caption and self.tables:
            self.tables[-1]["caption"] += data
        elif self._cell is not None:
            self._cell.append(data)


def parse_tables(page: str) -> list[dict[str, Any]]:
    p = _Tables()
    p.feed(page)
    return p.tables


def expected_lecture(dtype: str) -> list[dict[str, str]]:
    """The lecture table rows computed here, independently of warplab.lab.report."""
    ok = [v for v in SPEED if (dtype, v, LARGEST) != FAILED]
    t = {v: kernel_ms(v, LARGEST, dtype) for v in ok}
    base = t["neighbored_gmem"]
    rows, prev = [], None
    for v in [v for v in LECTURE if v in ok] + sorted(v for v in ok if v in COMPARATORS):
        gbps = LARGEST * DTYPES[dtype] / (t[v] * 1e-3) / 1e9
        err = rel_error(v, dtype)
        rows.append({
            "variant": v, "time (ms)": format(t[v], ".4g"),
            "step speedup": "—" if v in COMPARATORS or prev is None else f"{prev / t[v]:.2f}",
            "cumulative speedup": f"{base / t[v]:.2f}",
            "GB/s": f"{gbps:.1f}", "% of copy BW": f"{100 * gbps / COPY_GBPS:.1f}",
            "rel. error": "-" if err is None else f"{err:.1e}", "verified": "yes",
        })
        if v not in COMPARATORS:
            prev = t[v]
    return rows


CONFIG = {dt: f"op=sum, dtype={dt}, data=random" for dt in DTYPES}
STEP_PNG = {dt: f"reduce_step_op-sum_dtype-{dt}_data-random.png" for dt in DTYPES}


@pytest.fixture(scope="module")
def reduce_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    d = tmp_path_factory.mktemp("reduce")
    write(d / "reduce.json", reduce_doc())
    index = build_report(d)
    return index, index.read_text(encoding="utf-8")


def test_config_keys_are_op_dtype_data(tmp_path: Path) -> None:
    res = load_results(write(tmp_path / "r.json", reduce_doc()))
    assert config_keys("reduce", res.rows) == ["op", "dtype", "data"]
    assert {r.config for r in res.rows} == {
        (("op", "sum"), ("dtype", dt), ("data", "random")) for dt in DTYPES}
    rel = {(r.params["dtype"], r.variant): r.rel_error for r in res.rows}
    assert rel[("float32", "cupy.sum")] == pytest.approx(3.1e-08 * 11)
    assert rel[("int32", "cupy.sum")] is None


def test_step_speedup_pngs(reduce_report: tuple[Path, str]) -> None:
    index, page = reduce_report
    for dt, name in STEP_PNG.items():
        p = index.parent / name
        assert p.exists(), name
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        img = imread(p)
        assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100
        assert f'src="{name}"' in page
    for kind in ("time", "speedup", "bandwidth", "phases"):
        for dt in DTYPES:
            assert (index.parent / f"reduce_{kind}_op-sum_dtype-{dt}_data-random.png").exists()
    assert "Step speedups at the largest size" in page


def test_lecture_tables(reduce_report: tuple[Path, str]) -> None:
    _, page = reduce_report
    lecture = {t["caption"]: t for t in parse_tables(page) if t["class"] == "lecture"}
    assert set(lecture) == {f"reduce: lecture table — {CONFIG[dt]} (size 2^20)"
                            for dt in DTYPES}
    for dt in DTYPES:
        t = lecture[f"reduce: lecture table — {CONFIG[dt]} (size 2^20)"]
        assert t["header"] == ["variant", "time (ms)", "step speedup", "cumulative speedup",
                               "GB/s", "% of copy BW", "rel. error", "verified"]
        got = [dict(zip(t["header"], cells)) for cells in t["rows"]]
        assert got == expected_lecture(dt), dt
    # every variant in order in the float32 table; the int32 one lacks the failed unroll2 and
    # steps unroll_warp8 against interleaved_smem
    f32 = [cells[0] for cells in lecture[f"reduce: lecture table — {CONFIG['float32']} "
                                         "(size 2^20)"]["rows"]]
    assert f32 == list(LECTURE) + sorted(COMPARATORS)
    i32 = {cells[0]: cells for cells in lecture[f"reduce: lecture table — {CONFIG['int32']} "
                                                "(size 2^20)"]["rows"]}
    assert "unroll2" not in i32
    step = kernel_ms("interleaved_smem", LARGEST, "int32") / kernel_ms("unroll_warp8", LARGEST,
                                                                     "int32")
    assert i32["unroll_warp8"][2] == f"{step:.2f}"
    # a regression shows as a step below 1
    assert float(i32["complete_unroll8_template"][2]) < 1.0
    # rel_error formatting: 3.1e-08 style for floats, "-" where the record has none
    assert "3.1e-08" in page and i32["persistent_vec"][6] == "-"
    # lecture tables come after the speedup table and before the glance table
    assert page.index('class="speedup"') < page.index('class="lecture"') \
        < page.index('class="glance"')


def test_failures_not_in_speed_tables(reduce_report: tuple[Path, str]) -> None:
    _, page = reduce_report
    tables = parse_tables(page)
    (fail,) = [t for t in tables if t["class"] == "failures"]
    assert len(fail["rows"]) == 1 and fail["rows"][0][1] == "unroll2"
    assert "reduce failed (test)" in page
    i32 = f"reduce: lecture table — {CONFIG['int32']} (size 2^20)"
    for t in tables:
        if t["class"] == "lecture" and t["caption"] == i32:
            assert all(cells[0] != "unroll2" for cells in t["rows"])
        if t["class"] == "glance":
            h = t["header"]
            rows = [dict(zip(h, c)) for c in t["rows"]]
            assert not any(r["dtype"] == "int32" and r["variant"] == "unroll2" for r in rows)
            assert any(r["dtype"] == "float32" and r["variant"] == "unroll2" for r in rows)
        if t["class"] == "speedup":
            h = t["header"]
            by_dtype = {c[h.index("dtype")]: dict(zip(h, c)) for c in t["rows"]}
            assert by_dtype["int32"]["unroll2"] == "—" and by_dtype["float32"]["unroll2"] != "—"
            assert by_dtype["int32"]["neighbored_gmem"] == "1.00"
        if t["class"] == "medians" and "dtype=int32" in t["caption"]:
            h = t["header"]
            last = dict(zip(h, t["rows"][-1]))
            assert last["size"] == "2^20" and last["unroll2"] == "—"


def test_step_speedups_match_independent_computation(tmp_path: Path) -> None:
    res = load_results(write(tmp_path / "r.json", reduce_doc()))
    rows = [r for r in res.rows if r.params["dtype"] == "float32"]
    size, steps = step_speedups("reduce", rows)
    assert size == LARGEST
    assert [s.row.variant for s in steps] == list(LECTURE) + sorted(COMPARATORS)
    t = {v: kernel_ms(v, LARGEST, "float32") for v in SPEED}
    for prev, cur in zip(steps, steps[1:len(LECTURE)]):
        assert cur.step == pytest.approx(t[prev.row.variant] / t[cur.row.variant])
    assert steps[0].step is None and steps[0].cumulative == pytest.approx(1.0)
    for s in steps:
        assert s.cumulative == pytest.approx(t["neighbored_gmem"] / t[s.row.variant])
        assert s.on_chain == (s.row.variant in LECTURE)
        assert s.comparator == (s.row.variant in COMPARATORS)
        if s.comparator:
            assert s.step is None


def test_no_step_figure_or_lecture_table_without_baseline(tmp_path: Path) -> None:
    doc = reduce_doc(tuple(v for v in SPEED if v != "neighbored_gmem"))
    res = load_results(write(tmp_path / "r.json", doc))
    assert lecture_tables(res) == []
    assert plot_step_speedup(res.rows, tmp_path / "s.png", family="reduce", title="t") is None
    index = build_report(tmp_path / "r.json")
    assert not list(index.parent.glob("reduce_step_*.png"))
    assert list(index.parent.glob("reduce_bandwidth_*.png"))
    assert 'class="lecture"' not in index.read_text(encoding="utf-8")


def test_bandwidth_figure_draws_copy_roof(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    res = load_results(write(tmp_path / "r.json", reduce_doc()))
    drawn: list[tuple[float, str]] = []
    orig = Axes.axhline

    def spy(self: Axes, y: float = 0, *args: Any, **kw: Any) -> Any:
        drawn.append((y, str(kw.get("label", ""))))
        return orig(self, y, *args, **kw)

    monkeypatch.setattr(Axes, "axhline", spy)
    rows = [r for r in res.rows if r.params["dtype"] == "int32"]
    order = list(LECTURE) + sorted(COMPARATORS)
    out = plot_bandwidth_vs_size(rows, tmp_path / "bw.png", title="reduce bw", styles={},
                                 order=order, ceilings={GPU: COPY_GBPS},
                                 xlabel="size (elements)")
    assert out is not None and out.read_bytes()[:4] == b"\x89PNG"
    assert (COPY_GBPS, "measured copy bandwidth (3,000 GB/s)") in drawn

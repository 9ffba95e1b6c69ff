"""Report for the batched-copy campaign: bandwidth vs buffer-size class per alignment with one
panel per layout and the copy roof, the grid table (default vs CUB, % of copy, target), every
variant's GB/s, the public call, and the summary row (from a GPU-like fixture JSON written here,
no GPU)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from matplotlib.axes import Axes
from matplotlib.image import imread

from warplab.lab.harness import results as results_mod
from warplab.lab.report import build_report, load_results
from warplab.lab.report.memcpy import (
    call_tables, every_variant_tables, grid_tables, memcpy_figures,
)
from warplab.lab.report.memcpy_grid import case_key, class_label
from warplab.lab.report.memcpy_target import INVALID, scatter_ceilings, target_met, valid_scatter
from warplab.lab.report.summary import headlines, summary_table
from warplab.lab.report.tables import glance_tables, median_tables

from test_report_reduce import parse_tables

GPU = "NVIDIA H100 80GB HBM3"
COPY = 3000.0
PR_SIZES = ((1, 8), (1, 64), (1, 256), (1, 1024), (1, 4096), (16, 16), (64, 64), (256, 256),
            (1024, 1024), (4096, 4096), (65536, 65536), (1, 65536))
LAYOUTS = {"C": "consecutive", "S": "shuffle"}
# CUB's GB/s (all bytes, CC) per class: figures of the H100's size for the synthetic records
CUB = {(1, 8): 927, (1, 64): 1300, (1, 256): 1700, (1, 1024): 2100, (1, 4096): 1900,
       (16, 16): 1021, (64, 64): 1400, (256, 256): 1897, (1024, 1024): 2411,
       (4096, 4096): 1527, (65536, 65536): 2000, (1, 65536): 2200}
# other series as a fraction of CUB (the default: 1.25x, capped at 96% of copy)
VARIANTS = {"block_per_buffer": 0.35, "warp_per_buffer": 0.6, "size_classes": 0.95,
            "size_classes_tuned": 1.25, "cudaMemcpyBatchAsync": 0.2}
PROVIDER = {"cub::DeviceMemcpy::Batched": "cub", "cudaMemcpyBatchAsync": "cudart"}
LOOP_LIMIT = 20_000
SMALL_GRID: dict[str, Any] = {
    "sizes": ((1, 8), (16, 16), (1, 1024), (4096, 4096), (65536, 65536)),
    "layouts": ("CC", "SS"), "aligns": (1, 4)}
WORST = (4, "SS", 16, 16)  # (align, layout, lo, hi) where the fixture's default trails CUB
FAILED = ("warp_per_buffer", 1, "CC", 1, 8)
SCATTER = 1500.0  # GB/s of the scatter ceiling in the fixture's 1-8 B SS align-1 cell (valid)


def stats(ms: float) -> dict[str, Any]:
    return {"min": ms * 0.97, "q10": ms * 0.98, "median": ms, "q90": ms * 1.03,
            "max": ms * 1.1, "noise": 0.02, "samples": [ms * 0.98, ms, ms * 1.03]}


def gbps(series: str, lo: int, hi: int, lay: str, align: int) -> float:
    cub = CUB[(lo, hi)] * (0.8 if "S" in lay else 1.0) * (1.1 if align > 1 and hi < 4096 else 1)
    if series == "cub::DeviceMemcpy::Batched":
        return cub
    if series == "loop_memcpy_async":
        return ((lo + hi) + 24) / 5e-6 / 1e9
    v = cub * VARIANTS[series]
    if series == "size_classes_tuned":
        v = min(v * (1.2 if lo >= 65536 else 1.0), 0.96 * COPY)
        if (align, lay, lo, hi) == WORST:
            v = 0.9 * cub
    return v


def record(series: str, lo: int, hi: int, lay: str, align: int, total: int) -> dict[str, Any]:
    a_lo, a_hi = -(-lo // align), hi // align
    count = max(1, int(total // ((a_lo + a_hi) / 2 * align)))
    data = 2 * total
    moved = data + 24 * count
    g = gbps(series, lo, hi, lay, align)
    ms = moved / (g * 1e9) * 1e3
    rec = {"family": "memcpy", "variant": series, "provider": PROVIDER.get(series, "warplab"),
           "backend": "cuda",
           "params": {"size": total, "min": lo, "max": hi, "in": LAYOUTS[lay[0]],
                      "out": LAYOUTS[lay[1]], "align": align, "count": count,
                      "case": f"{lay[0]}_{lay[1]}_{lo}_{hi}_a{align}", "mode": "kernel",
                      "runs": 20, "warmup": 3, "held": True},
           "phases": {"h2d": None, "kernel": stats(ms), "d2h": None, "total": stats(ms)},
           "bytes_moved": moved, "gbps": g, "pct_of_copy_bw": 100 * g / COPY,
           "verified": True, "error": None, "data_bytes": data,
           "data_gbps": data / (ms * 1e-3) / 1e9}
    if (series, align, lay, lo, hi) == FAILED:
        rec.update(verified=False, error="12 sampled bytes differ from their source", gbps=None,
                   pct_of_copy_bw=None, data_gbps=None)
    return rec


def call_record(series: str, n: int) -> dict[str, Any]:
    ms = 0.04 + n * (0.0004 if series == "copy_batched" else 0.006)
    return {"family": "memcpy", "variant": series,
            "provider": "warplab" if series == "copy_batched" else "cupy", "backend": "cuda",
            "params": {"size": n * 2048, "min": 1, "max": 4096, "in": "consecutive",
                       "out": "consecutive", "align": 1, "count": n, "case": "C_C_1_4096_a1",
                       "mode": "call", "runs": 30, "warmup": 3},
            "phases": {"h2d": None, "kernel": stats(ms), "d2h": None, "total": stats(ms)},
            "bytes_moved": n * 4120, "gbps": None, "pct_of_copy_bw": None, "verified": True,
            "error": None, "data_bytes": n * 4096, "data_gbps": None}


def memcpy_doc(sizes: Any = PR_SIZES, layouts: Any = ("CC", "CS", "SC", "SS"),
               aligns: Any = (1, 4, 16), total: int = 512 << 20) -> dict[str, Any]:
    recs = []
    series = ["loop_memcpy_async", "block_per_buffer", "warp_per_buffer", "size_classes",
              "size_classes_tuned", "cub::DeviceMemcpy::Batched", "cudaMemcpyBatchAsync"]
    for lo, hi in sizes:
        for a in aligns:
            if hi // a < max(-(-lo // a), 1):
                continue
            for lay in layouts:
                for s in series:
                    r = record(s, lo, hi, lay, a, total)
                    if s != "loop_memcpy_async" or r["params"]["count"] <= LOOP_LIMIT:
                        recs.append(r)
    if (1, 8) in sizes and "SS" in layouts:  # the scatter ceiling of one cell
        ceil = record("cub::DeviceMemcpy::Batched", 1, 8, "SS", 1, total)
        ms = ceil["bytes_moved"] / (SCATTER * 1e9) * 1e3
        ceil.update(variant="scatter_touch", provider="ceiling", gbps=SCATTER,
                    pct_of_copy_bw=100 * SCATTER / COPY)
        ceil["params"].update(mode="ceiling", shape="b256x2", shape_ms={"b256x2": ms})
        ceil["phases"].update(kernel=stats(ms), total=stats(ms))
        recs.append(ceil)
    recs += [call_record(s, n) for n in (100, 1000, 10000)
             for s in ("copy_batched", "cupy_copy_loop")]
    meta = {"device": {"backend": "cuda", "name": GPU, "cc": "9.0", "sms": 132},
            "versions": {"warplab": "0.1.0"}, "commit": "abc", "hostname": "h",
            "timestamp": "2026-11-23T12:00:00Z", "time_unit": "ms",
            "ceilings": {"copy_gbps": COPY, "read_gbps": 3070.0},
            "notes": [(f"loop_memcpy_async skipped above {LOOP_LIMIT} buffers (a call per "
                       "buffer)")]}
    return {"schema": 1, "meta": meta, "results": recs}


@pytest.fixture(scope="module")
def doc_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("memcpy") / "memcpy.json"
    p.write_text(json.dumps(memcpy_doc(**SMALL_GRID)))
    return p


@pytest.fixture(scope="module")
def report(doc_path: Path) -> tuple[Path, str]:
    index = build_report(doc_path.parent)
    return index, index.read_text(encoding="utf-8")


def test_fixture_is_a_valid_results_file(doc_path: Path) -> None:
    results_mod.read(doc_path)


@pytest.mark.parametrize("lo, hi, text", [
    (1, 8, "1–8 B"), (16, 16, "16 B"), (1, 1024, "1 B–1 KiB"), (1024, 4096, "1–4 KiB"),
    (65536, 65536, "64 KiB"), (1, 65536, "1 B–64 KiB"), (1536, 1536, "1.5 KiB"),
    (1 << 20, 1 << 20, "1 MiB")])
def test_class_labels(lo: int, hi: int, text: str) -> None:
    assert class_label(lo, hi) == text


def test_target_rule() -> None:
    assert target_met(1.2, 50.0, 1000.0, COPY, 1) is True
    assert target_met(1.1, 50.0, 1000.0, COPY, 1) is False
    # 1.2x CUB would pass the ceiling: 95% of copy is enough
    assert target_met(1.05, 96.0, 2600.0, COPY, 1) is True
    assert target_met(1.05, 94.0, 2600.0, COPY, 1) is False
    # buffers >= 1 KiB also need 90% of copy
    assert target_met(1.3, 80.0, 1000.0, COPY, 1024) is False
    assert target_met(1.3, 89.0, 1000.0, COPY, 1024) is False
    assert target_met(1.3, 90.0, 1000.0, COPY, 1024) is True
    assert target_met(None, 80.0, None, COPY, 1) is None


def test_grid_table(doc_path: Path) -> None:
    t, t4 = grid_tables(load_results(doc_path))
    assert "align 1" in t.title and "align 4" in t4.title
    assert t.columns == ["align", "layout", "buffer sizes", "buffers", "data (MiB)",
                         "default GB/s", "default data GB/s", "CUB GB/s", "default / CUB",
                         "% of copy", "scatter GB/s", "% of scatter", "scatter check",
                         "target"]
    assert "size_classes_tuned (default) against CUB" in t.title and "all bytes" in t.note
    keys = [(r[0], r[1], r[2]) for r in t.rows]
    assert keys[:5] == [(1, "CC", "1–8 B"), (1, "CC", "16 B"), (1, "CC", "1 B–1 KiB"),
                        (1, "CC", "4 KiB"), (1, "CC", "64 KiB")]
    assert len(t.rows) == len(t4.rows) == 2 * 5  # 5 classes x CC, SS
    rows = {(r[0], r[1], r[2]): dict(zip(t.columns, r)) for r in t.rows + t4.rows}
    cell = rows[(1, "CC", "4 KiB")]
    assert cell["CUB GB/s"] == pytest.approx(1527)
    assert cell["default GB/s"] == pytest.approx(1.25 * 1527)
    assert cell["default / CUB"] == pytest.approx(1.25)
    assert cell["% of copy"] == pytest.approx(100 * 1.25 * 1527 / COPY)
    assert cell["default data GB/s"] < cell["default GB/s"]
    assert cell["buffers"] == (512 << 20) // 4096
    assert cell["data (MiB)"] == 512
    assert cell["target"] is False  # 64% of copy with 4 KiB buffers: below 90%
    assert rows[(1, "CC", "16 B")]["target"] is True
    assert rows[(4, "SS", "16 B")]["target"] is False  # the fixture's worst case
    # the scatter ceiling where measured (1-8 B SS, align 1), not a row or series of its own
    tiny = rows[(1, "SS", "1–8 B")]
    assert tiny["scatter GB/s"] == pytest.approx(SCATTER)
    assert tiny["% of scatter"] == pytest.approx(100 * tiny["default GB/s"] / SCATTER)
    assert tiny["scatter check"] == "valid"
    assert cell["scatter GB/s"] is None and cell["% of scatter"] is None
    assert cell["scatter check"] is None


def _slow_scatter_doc(tmp_path: Path, gbps: float) -> Path:
    """The small fixture with its scatter ceiling at ``gbps`` GB/s."""
    doc = memcpy_doc(**SMALL_GRID)
    (ceil,) = [r for r in doc["results"] if r["variant"] == "scatter_touch"]
    ms = ceil["bytes_moved"] / (gbps * 1e9) * 1e3
    ceil.update(gbps=gbps, pct_of_copy_bw=100 * gbps / COPY)
    ceil["phases"].update(kernel=stats(ms), total=stats(ms))
    path = tmp_path / "slow.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_scatter_ceiling_below_a_copy_is_invalid(tmp_path: Path) -> None:
    path = _slow_scatter_doc(tmp_path, 1.0)  # below every copy of its cell
    res = load_results(path)
    (s,) = scatter_ceilings(res, case_key).values()
    assert not s.valid and s.gbps is None and s.best_copy and s.best_copy > 1.0
    assert s.verdict == INVALID == "invalid: a copy was faster"
    t, _ = grid_tables(res)
    tiny = next(dict(zip(t.columns, r)) for r in t.rows if r[1:3] == ["SS", "1–8 B"])
    assert tiny["scatter GB/s"] == pytest.approx(1.0)  # shown, not used
    assert tiny["% of scatter"] is None and tiny["scatter check"] == INVALID
    ratio, pct = tiny["default / CUB"], tiny["% of copy"]
    cub = tiny["CUB GB/s"]
    assert tiny["target"] is target_met(ratio, pct, cub, COPY, 1)  # the copy ceiling alone
    assert INVALID in t.note


def test_a_scatter_ceiling_at_the_fastest_copy_is_valid(tmp_path: Path) -> None:
    (s,) = scatter_ceilings(load_results(_slow_scatter_doc(tmp_path, SCATTER)),
                            case_key).values()
    fastest = s.best_copy
    assert fastest is not None and SCATTER >= fastest and s.valid
    (s,) = scatter_ceilings(load_results(_slow_scatter_doc(tmp_path, fastest)),
                            case_key).values()
    assert s.valid and s.gbps == pytest.approx(fastest)  # as fast as the fastest copy: valid
    (s,) = scatter_ceilings(load_results(_slow_scatter_doc(tmp_path, 0.999 * fastest)),
                            case_key).values()
    assert not s.valid


@pytest.mark.parametrize("scatter, copies, want", [
    (None, [100.0], None), (0.0, [1.0], None), (100.0, [], True), (100.0, [None, 50.0], True),
    (100.0, [100.0, 99.0], True), (100.0, [100.5], False), (100.0, [20.0, None, 120.0], False)])
def test_valid_scatter(scatter: float | None, copies: list[float | None],
                       want: bool | None) -> None:
    assert valid_scatter(scatter, copies) is want


def test_figure_leaves_an_invalid_scatter_ceiling_out(tmp_path: Path,
                                                      plot_labels: list[str]) -> None:
    lines = plot_labels
    memcpy_figures(load_results(_slow_scatter_doc(tmp_path, 1.0)),
                   lambda *p: tmp_path / ("_".join(map(str, p)) + ".png"), [])
    assert not [label for label in lines if label.startswith("cell ceiling")]


def test_every_variant_and_call_tables(doc_path: Path) -> None:
    res = load_results(doc_path)
    (t,) = every_variant_tables(res)
    assert t.kind == "glance"
    assert t.columns[3:] == ["loop_memcpy_async", "block_per_buffer", "warp_per_buffer",
                             "size_classes", "size_classes_tuned",
                             "cub::DeviceMemcpy::Batched", "cudaMemcpyBatchAsync"]
    first = dict(zip(t.columns, t.rows[0]))
    assert first["warp_per_buffer"] is None  # the failed record is left out
    assert first["loop_memcpy_async"] is None  # skipped above 20,000 buffers
    (c,) = call_tables(res)
    assert [r[:2] for r in c.rows[:2]] == [[100, "copy_batched"], [100, "cupy_copy_loop"]]
    assert c.formats[0] == ",.0f"
    assert c.rows[0][4] == pytest.approx(1e3 * (0.04 + 100 * 0.0004) / 100)


def test_figures(doc_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    drawn: list[tuple[float, str]] = []
    orig = Axes.axhline

    def spy(self: Axes, y: float = 0, *args: Any, **kw: Any) -> Any:
        drawn.append((y, str(kw.get("label", ""))))
        return orig(self, y, *args, **kw)

    monkeypatch.setattr(Axes, "axhline", spy)
    lines: list[tuple[str, list[float]]] = []
    orig_plot = Axes.plot

    def plot_spy(self: Axes, *args: Any, **kw: Any) -> Any:
        lines.append((str(kw.get("label", "")), list(args[1]) if len(args) > 1 else []))
        return orig_plot(self, *args, **kw)

    monkeypatch.setattr(Axes, "plot", plot_spy)
    skipped: list[Any] = []
    figs = memcpy_figures(load_results(doc_path),
                          lambda *p: tmp_path / ("_".join(map(str, p)) + ".png"), skipped)
    assert [f[2] for f in figs] == [(("align", 1),), (("align", 4),)]
    assert not skipped
    assert figs[0][5][:5] == ("loop_memcpy_async", "block_per_buffer", "warp_per_buffer",
                              "size_classes", "size_classes_tuned")
    # one roof per panel (CC, SS), at the measured copy ceiling
    assert drawn.count((COPY, "measured copy bandwidth (3,000 GB/s)")) == 2 * 2
    assert imread(figs[0][4]).shape[1] == 1200  # two panels: a full row
    # the cell's ceiling, dashed, only where a scatter ceiling was measured (SS 1-8 B, align 1)
    ceil = [ys for label, ys in lines if label.startswith("cell ceiling")]
    assert len(ceil) == 1 and ceil[0][0] == pytest.approx(min(COPY, SCATTER))
    assert all(y != y for y in ceil[0][1:])  # NaN: not measured
    assert "scatter_touch" not in figs[0][5]


def test_single_class_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "one.json").write_text(json.dumps(memcpy_doc(((16, 16),), ("CC",), (1,))))
    skipped: list[Any] = []
    assert memcpy_figures(load_results(tmp_path / "one.json"),
                          lambda *p: tmp_path / "x.png", skipped) == []
    assert "a single buffer-size class (16 B)" in skipped[0].reason


def test_summary_row(doc_path: Path) -> None:
    (h,) = [h for h in headlines(load_results(doc_path)) if h.family == "memcpy"]
    assert h.best.variant == "size_classes_tuned" and h.rival.variant.startswith("cub")
    assert h.ratio == pytest.approx(0.9)
    assert dict(h.config) == {"align": 4, "layout": "SS", "min": 16, "max": 16}
    assert (h.roof_name, h.roof) == ("copy", COPY)
    assert h.spread[0] == pytest.approx(0.9) and h.spread[2] == 20
    # cases with buffers >= 1 KiB: 4 KiB and 64 KiB, CC and SS, align 1 and 4
    large = [(lo, lay, a) for lo, hi in SMALL_GRID["sizes"] for lay in SMALL_GRID["layouts"]
             for a in SMALL_GRID["aligns"] if lo >= 1024]
    fast = sum(gbps("size_classes_tuned", lo, lo, lay, a) >= 0.90 * COPY
               for lo, lay, a in large)
    assert len(large) == 8 and 0 < fast < 8
    (cells,) = [dict(zip(t.columns, r)) for t in [summary_table([h])] for r in t.rows]
    assert cells["compared at"] == (
        f"worst of 20 cases vs CUB; ≥ 90% of copy in {fast} of 8 cases ≥ 1 KiB "
        f"({100 * fast / 8:.0f}%), SS 16 B · align 4")


def test_summary_roof_is_the_worst_cases_cell_ceiling(tmp_path: Path) -> None:
    """Where the worst case against CUB has a valid scatter ceiling below the copy ceiling,
    the summary judges it against that cell ceiling; an invalid one leaves the copy's."""
    doc = memcpy_doc(sizes=((1, 8), (16, 16)), layouts=("SS",), aligns=(1,))
    for r in doc["results"]:  # the default trails CUB most in the scatter ceiling's cell
        if r["variant"] == "size_classes_tuned" and r["params"]["max"] == 8:
            r["gbps"] = 0.5 * gbps("cub::DeviceMemcpy::Batched", 1, 8, "SS", 1)
    p = tmp_path / "memcpy.json"
    p.write_text(json.dumps(doc))
    (h,) = [h for h in headlines(load_results(p)) if h.family == "memcpy"]
    assert dict(h.config) == {"align": 1, "layout": "SS", "min": 1, "max": 8}
    assert (h.roof_name, h.roof) == ("cell ceiling", SCATTER)
    for r in doc["results"]:  # a copy faster than the touch: the ceiling is invalid
        if r["variant"] == "block_per_buffer" and r["params"]["max"] == 8:
            r["gbps"] = 2 * SCATTER
    p.write_text(json.dumps(doc))
    (h,) = [h for h in headlines(load_results(p)) if h.family == "memcpy"]
    assert (h.roof_name, h.roof) == ("copy", COPY)


def test_page(report: tuple[Path, str]) -> None:
    index, page = report
    tables = parse_tables(page)
    kinds = [t["class"] for t in tables]
    assert kinds.count("memcpy") == 2 and kinds.count("memcpy_calls") == 1
    assert "failures" in kinds and "glance" in kinds
    for png in ("memcpy_bandwidth_align-1.png", "memcpy_bandwidth_align-4.png"):
        assert (index.parent / png).exists() and f'src="{png}"' in page
    # no generic per-size figures or tables: the total data is not the axis of this family
    assert sorted(p.name for p in index.parent.glob("memcpy_*.png")) == [
        "memcpy_bandwidth_align-1.png", "memcpy_bandwidth_align-4.png"]
    res = load_results(index.parent.parent / "memcpy.json")
    assert not median_tables(res)
    assert all(t.family != "memcpy" for t in glance_tables(res))


def test_default_is_the_registry_default() -> None:
    from warplab.core import registry
    from warplab.lab.report.memcpy_grid import DEFAULT

    assert registry.variants("memcpy_batched", "cuda")[0].name == DEFAULT


def test_runs_from_before_a_switch_keep_their_default() -> None:
    """An older run measured ``warp_tiers_words`` as its default, an older one still
    ``warp_classes``: the tables call those the default where the current one is absent."""
    from types import SimpleNamespace

    from warplab.lab.report.memcpy_grid import DEFAULT, default_name

    def rows(*names: str) -> list:
        return [SimpleNamespace(variant=n, provider="warplab") for n in names]

    assert default_name(rows("warp_tiers_words", "warp_classes")) == "warp_tiers_words"
    assert default_name(rows("warp_classes", "size_classes")) == "warp_classes"
    assert default_name(rows(DEFAULT, "warp_tiers_words")) == DEFAULT


def test_explore_series_stay_out_of_the_tables_and_figures(tmp_path: Path) -> None:
    """Series of warplab kernels the package does not register (the explore scripts' shapes
    and repeats, variants since removed) are left out of the every-variant table and the
    figures, and the table's note counts them; the comparators and registered variants stay."""
    doc = memcpy_doc(sizes=((1, 8), (16, 16)), layouts=("CC",), aligns=(1,))
    extra = []
    for name in ("default again", "warp_classes[t16,g8,s256,b4,st4,z3,l10]", "warp_tiers_old"):
        for lo, hi in ((1, 8), (16, 16)):
            r = record("size_classes", lo, hi, "CC", 1, 512 << 20)
            r["variant"] = name
            extra.append(r)
    doc["results"] += extra
    p = tmp_path / "memcpy.json"
    p.write_text(json.dumps(doc))
    res = load_results(p)
    (t,) = every_variant_tables(res)
    assert t.columns[3:] == ["block_per_buffer", "warp_per_buffer", "size_classes",
                             "size_classes_tuned", "cub::DeviceMemcpy::Batched",
                             "cudaMemcpyBatchAsync"]  # the loop: no record of < 20,000 buffers
    assert t.note.startswith("3 more series of warplab kernels")
    figs = memcpy_figures(res, lambda *q: tmp_path / ("_".join(map(str, q)) + ".png"), [])
    assert not {"default again", "warp_tiers_old"} & set(figs[0][5])
    (clean,) = every_variant_tables(load_results(Path(doc_path_clean(tmp_path))))
    assert clean.note == ""


def doc_path_clean(tmp_path: Path) -> Path:
    p = tmp_path / "clean" / "memcpy.json"
    p.parent.mkdir()
    p.write_text(json.dumps(memcpy_doc(sizes=((1, 8), (16, 16)), layouts=("CC",),
                                       aligns=(1,))))
    return p

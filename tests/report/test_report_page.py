"""The page as a reader meets it: the summary's numbers, roof labels whose unit fits the value,
each device once, figures left out with the reason, corrupt files named, and a screenshot taken
by a headless browser (skipped where no ``chromium`` is installed)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import RESULT_FIXTURES

from warplab import cli
from warplab.lab.report import build as report_build
from warplab.lab.report import build_report, load_results, make_figures
from warplab.lab.report.roofline import Roof, best_points, plot_roofline, roofs
from warplab.lab.report.skips import SkippedFigure
from warplab.lab.report.summary import headlines, summary_table
from warplab.lab.report.units import fmt_bandwidth, fmt_flops, fmt_ms, fmt_pct, fmt_timestamp

GPU = "TestGPU 80GB"
READ, COPY = 3000.0, 2800.0


def stats(m: float, spread: float = 0.02) -> dict[str, Any]:
    return {"min": m * (1 - spread), "q10": m * (1 - spread / 2), "median": m,
            "q90": m * (1 + spread / 2), "max": m * (1 + spread), "noise": spread,
            "samples": [m]}


def rec(family: str, variant: str, size: int, gbps: float, *, provider: str = "warplab",
        params: dict[str, Any] | None = None, flops: int | None = None,
        ok: bool = True) -> dict[str, Any]:
    """A record whose kernel median gives ``gbps`` (or, with ``flops``, ``gbps`` GFLOP/s)."""
    moved = size * 4
    median_ms = (flops if flops else moved) / (gbps * 1e9) * 1e3
    r = {"family": family, "variant": variant, "provider": provider, "backend": "cuda",
         "params": {"size": size, **(params or {})},
         "phases": {"h2d": None, "kernel": stats(median_ms), "d2h": None,
                    "total": stats(median_ms)},
         "bytes_moved": moved, "gbps": moved / (median_ms * 1e-3) / 1e9 if ok else None,
         "pct_of_copy_bw": None, "verified": ok, "error": None if ok else "boom"}
    if flops:
        r.update(flops=flops, gflops=gbps)
    return r


def doc(results: list[dict[str, Any]], name: str = GPU, ceilings: dict[str, Any] | None = None,
        timestamp: str = "2025-01-01T00:00:00Z", commit: str = "abc1234") -> dict[str, Any]:
    ceil = {"copy_gbps": COPY, "read_gbps": READ, "sgemm_gflops": 50000.0,
            "dgemm_gflops": 25000.0} if ceilings is None else ceilings
    return {"schema": 1, "meta": {
        "device": {"backend": "cuda", "name": name, "cc": "9.0", "sms": 132},
        "versions": {"warplab": "0.1.0"}, "commit": commit, "hostname": "h",
        "timestamp": timestamp, "time_unit": "ms", "ceilings": ceil, "notes": []},
        "results": results}


def write(path: Path, d: Any) -> Path:
    path.write_text(json.dumps(d))
    return path


def reduce_results() -> list[dict[str, Any]]:
    """Two configs; at 2^20 the comparator ``c.fast`` fails, so the summary compares at 2^18."""
    out = []
    for dtype, speed in (("float32", 1.0), ("int32", 0.5)):
        p = {"dtype": dtype, "op": "sum"}
        for k in (16, 18, 20):
            s = 1 << k
            out += [rec("reduce", "slow", s, 100.0 * speed, params=p),
                    rec("reduce", "fast", s, 2400.0 * speed * k / 20, params=p),
                    rec("reduce", "c.slow", s, 200.0 * speed, provider="c", params=p),
                    rec("reduce", "c.fast", s, 2000.0 * speed, provider="c", params=p,
                        ok=k < 20)]
    return out


def matmul_results() -> list[dict[str, Any]]:
    out = []
    for n in (1024, 2048, 4096):
        f = 2 * n**3
        out += [rec("matmul", "tiled", n, 30000.0, params={"dtype": "float32"}, flops=f),
                rec("matmul", "cublas", n, 40000.0, provider="cupy",
                    params={"dtype": "float32"}, flops=f)]
    return out


# -------------------------------------------------------------------------------- summary


def test_summary_numbers(tmp_path: Path) -> None:
    res = load_results(write(tmp_path / "r.json", doc(reduce_results() + matmul_results())))
    heads = {h.family: h for h in headlines(res)}
    red = heads["reduce"]
    # float32 preferred; compared at 2^18, the largest size where every comparator ran
    assert dict(red.config)["dtype"] == "float32" and red.size == 1 << 18
    assert red.best is not None and red.best.variant == "fast"
    assert red.rival is not None and red.rival.variant == "c.fast"
    assert red.best_rate == pytest.approx(2400.0 * 18 / 20)
    assert red.ratio == pytest.approx(2400.0 * 18 / 20 / 2000.0)
    assert red.roof_name == "read" and red.roof == READ
    assert red.pct_of_roof == pytest.approx(100 * 2160.0 / READ)
    lo, hi, n = red.spread or (0, 0, 0)
    assert n == 2 and lo == pytest.approx(hi)  # int32 runs at half speed on both sides
    mm = heads["matmul"]
    assert mm.metric == "gflops" and mm.size == 4096 and mm.roof_name == "SGEMM"
    assert mm.ratio == pytest.approx(0.75) and mm.pct_of_roof == pytest.approx(60.0)
    table = summary_table(list(heads.values()))
    rows = {r[0]: dict(zip(table.columns, r)) for r in table.rows}
    assert rows["matmul"]["warplab rate"] == "30.0 TFLOP/s"
    assert rows["matmul"]["roof (measured)"] == "SGEMM 50.0 TFLOP/s"
    assert rows["reduce"]["warplab rate"] == "2,160 GB/s"
    assert rows["reduce"]["warplab / comparator"] == "1.08×"
    assert rows["reduce"]["% of roof"] == "72%"


@pytest.fixture(scope="module")
def reduce_matmul_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report of ``reduce_results() + matmul_results()`` (its index.html), built once for
    the summary and the screenshot test."""
    d = tmp_path_factory.mktemp("reduce-matmul")
    return build_report(write(d / "r.json", doc(reduce_results() + matmul_results())))


def test_summary_on_the_page_first(reduce_matmul_report: Path) -> None:
    page = reduce_matmul_report.read_text(encoding="utf-8")
    summary = page.index('<section id="summary">')
    assert summary < page.index('<section id="devices">') < page.index('id="family-reduce"')
    block = page[summary:page.index("</section>", summary)]
    assert 'class="summary"' in block and "c.fast" in block and "1.08×" in block
    assert "72%" in block and "of read 3,000 GB/s" in block
    # one headline figure per family, and it is a figure of the headline configuration
    imgs = re.findall(r'<img src="([^"]+)"', block)
    assert len(imgs) == 2
    assert imgs[0].startswith("matmul_throughput") or imgs[1].startswith("matmul_throughput")
    assert any(i.startswith("reduce_bandwidth") and "float32" in i for i in imgs)


def test_summary_without_comparator(tmp_path: Path) -> None:
    rows = [rec("reduce", "numpy", 1 << k, 5.0 * k, params={"dtype": "float32"})
            for k in (10, 12)]
    res = load_results(write(tmp_path / "c.json", doc(rows, ceilings={"read_gbps": 8.5})))
    (h,) = headlines(res)
    assert h.rival is None and h.ratio is None and h.size == 1 << 12
    row = dict(zip(summary_table([h]).columns, summary_table([h]).rows[0]))
    assert row["best comparator"] == "none measured" and row["warplab rate"] == "60.0 GB/s"
    assert row["% of roof"] == "706% (above the measured roof)"


# ---------------------------------------------------------------------------------- units


@pytest.mark.parametrize("gflops, text", [
    (91.2, "91.2 GFLOP/s"), (29.0, "29.0 GFLOP/s"), (51213.25, "51.2 TFLOP/s"),
    (0.5, "500 MFLOP/s"), (999.4, "999 GFLOP/s"), (1000.0, "1.00 TFLOP/s")])
def test_flops_unit_from_value(gflops: float, text: str) -> None:
    assert fmt_flops(gflops) == text


def test_other_units() -> None:
    assert fmt_bandwidth(2995.13) == "2,995 GB/s" and fmt_bandwidth(18.18) == "18.2 GB/s"
    assert fmt_bandwidth(0.866) == "866 MB/s"
    assert fmt_ms(0.004) == "4 µs" and fmt_ms(1500) == "1.5 s" and fmt_ms(20) == "20 ms"
    assert fmt_pct(97.4) == "97%" and fmt_pct(1.43) == "1.4%"
    assert fmt_timestamp("2026-11-22T14:01:23+00:00") == "2026-11-22 14:01 UTC"


def test_roof_labels_choose_the_unit(tmp_path: Path, plot_labels: list[str]) -> None:
    """A CPU run: SGEMM 91 and DGEMM 29 GFLOP/s, never "0.1 TFLOP/s"."""
    ceil = {"copy_gbps": 18.2, "read_gbps": 8.6, "sgemm_gflops": 91.2, "dgemm_gflops": 29.0}
    assert [r.text for r in roofs(ceil)] == [
        "copy (read + write) 18.2 GB/s", "read 8.60 GB/s", "SGEMM 91.2 GFLOP/s",
        "DGEMM 29.0 GFLOP/s"]
    assert Roof("compute", "SGEMM", 51213.0).text == "SGEMM 51.2 TFLOP/s"
    labels = plot_labels
    rows = [rec("matmul", "numpy", 512, 60.0, params={"dtype": "float32"}, flops=2 * 512**3)]
    res = load_results(write(tmp_path / "m.json", doc(rows, ceilings=ceil)))
    out = plot_roofline(best_points(res.rows), ceil, tmp_path / "roof.png", title="roofline")
    assert out is not None
    assert "roof: SGEMM 91.2 GFLOP/s" in labels and "roof: DGEMM 29.0 GFLOP/s" in labels
    assert not any("TFLOP/s" in s for s in labels)


# ------------------------------------------------------------------------- devices and runs


def test_each_device_once(tmp_path: Path) -> None:
    d = tmp_path / "runs"
    d.mkdir()
    for i, (copy, ts) in enumerate([(2800.0, "2025-01-01T10:00:00Z"),
                                    (2900.0, "2025-01-01T12:00:00Z"),
                                    (2850.0, "2025-01-01T11:00:00Z")]):
        rows = [rec("reduce", "fast", 1 << k, 1000.0 + i, params={"dtype": "float32"})
                for k in (10, 12)]
        write(d / f"run{i}.json", doc(rows, ceilings={"copy_gbps": copy}, timestamp=ts,
                                      commit=f"c{i}"))
    write(d / "other.json", doc([rec("reduce", "fast", 1 << 10, 5.0, params={"dtype":
                                                                             "float32"})],
                                name="OtherGPU", ceilings={"copy_gbps": 100.0},
                                timestamp="2025-01-02T00:00:00Z"))
    page = build_report(d).read_text(encoding="utf-8")
    section = page[page.index('<section id="devices">'):]
    section = section[:section.index("</section>")]
    assert section.count(f'<div class="device" data-device="{GPU}">') == 1
    assert section.count('<div class="device" data-device="OtherGPU">') == 1
    assert section.count(f"<h3>{GPU}</h3>") == 1
    # the newest run's ceiling (run1, 12:00), the range over the three runs, rounded
    assert "2,900 GB/s" in section and "3 runs: 2,800–2,900 GB/s" in section
    assert "2800.0" not in section and "2900.0" not in section
    runs = section[section.index('<table class="runs">'):]
    assert runs.count("<tr>") == 1 + 4                   # header + one row per file
    assert runs.index("run0.json") < runs.index("run2.json") < runs.index("run1.json")
    assert "2025-01-01 12:00 UTC" in runs


# ------------------------------------------------------------------------ skipped figures


def test_figures_not_worth_drawing_are_listed_with_the_reason(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [rec("histogram", v, 1 << 30, g, params={"bins": "bytes", "data": "uniform"})
            for v, g in (("global", 10.0), ("private", 900.0))]        # one size only
    for k in (10, 14, 18):                                              # a curve, no noise
        for bins in ("ascii128", "letters"):
            p = {"bins": bins, "data": "text"}
            rows += [rec("histogram", "global", 1 << k, 10.0, params=p),
                     rec("histogram", "private", 1 << k, 50.0 * k, params=p)]
    made: dict[str, Any] = {}

    def figures(results: Any, out_dir: Path, skipped: Any = None) -> Any:
        """make_figures as build_report calls it, its answer kept (one drawing for both)."""
        made["skipped"] = skipped
        made["refs"] = make_figures(results, out_dir, skipped)
        return made["refs"]

    monkeypatch.setattr(report_build, "make_figures", figures)
    page = build_report(write(tmp_path / "h.json", doc(rows))).read_text(encoding="utf-8")
    refs, skipped = made["refs"], made["skipped"]
    why = {(s.kind, dict(s.config).get("bins")): s.reason for s in skipped}
    assert why[("time", "bytes")].startswith("a single size (2^30)")
    assert why[("bandwidth", "bytes")].startswith("a single size (2^30)")
    assert why[("phases", "ascii128")].startswith("only the kernel phase was timed")
    assert why[("ratio", None)].startswith("pure noise")  # letters and ascii128 run alike
    assert not [r for r in refs if dict(r.config).get("bins") == "bytes"]
    assert ("bandwidth", (("bins", "ascii128"), ("data", "text"))) in {
        (r.kind, r.config) for r in refs}
    assert "Figures not drawn" in page
    assert "<b>Kernel time vs size</b> (bins=bytes, data=uniform): a single size (2^30)" in page
    assert "<b>letters / ascii128 time ratio</b> (data=text): pure noise" in page


def test_one_bar_phases_is_not_drawn(tmp_path: Path) -> None:
    r = [rec("reduce", "only", 1 << k, 100.0, params={"dtype": "float32"}) for k in (10, 12)]
    for x in r:
        x["phases"]["h2d"] = stats(1.0)
    res = load_results(write(tmp_path / "p.json", doc(r)))
    skipped: list[SkippedFigure] = []
    make_figures(res, tmp_path / "figs", skipped)
    assert [s.reason for s in skipped if s.kind == "phases"] == ["one bar (a single variant)"]


# ------------------------------------------------------------------------- corrupt files


@pytest.mark.parametrize("name, content, needle", [
    ("truncated.json", '{"schema": 1, "meta": {}, "results": [', "not valid JSON"),
    ("garbage.json", "not json at all", "not valid JSON"),
    ("binary.json", b"\xff\xfe\x00\x81", "cannot read"),
    ("noresults.json", '{"schema": 1, "meta": {}}', "no 'results' list"),
    ("future.json", '{"schema": 2, "results": []}', "schema 2"),
])
def test_corrupt_file_is_an_error_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture,
                                            name: str, content: str | bytes,
                                            needle: str) -> None:
    d = tmp_path / "results"
    d.mkdir()
    write(d / "good.json", doc(reduce_results()))
    bad = d / name
    bad.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ValueError, match=re.escape(name)) as exc:
        build_report(d)
    assert needle in str(exc.value)
    capsys.readouterr()
    assert cli.main(["report", str(d)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and name in err[0] and err[0].startswith("warplab: error:")


# ---------------------------------------------------------------------------- screenshot


def screenshot(index: Path, tmp_path: Path, height: int) -> Any:
    """The page as headless chromium draws it in a window 1280 wide (RGB floats in [0, 1])."""
    from matplotlib.image import imread

    shot = tmp_path / "shot.png"
    cmd = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
           f"--window-size=1280,{height}", f"--screenshot={shot}", index.as_uri()]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)
    assert shot.is_file(), f"chromium wrote no screenshot (rc {run.returncode}): {run.stderr}"
    return imread(shot)[:, :, :3]


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not on PATH")
def test_headless_screenshot(reduce_matmul_report: Path, tmp_path: Path) -> None:
    img = screenshot(reduce_matmul_report, tmp_path, 1600)
    assert img.shape[1] == 1280 and img.shape[0] >= 1000
    top = img[:700]
    assert top.std() > 0.05                      # text, a table and figures, not a blank page
    # the content spans the page's width (the summary table is laid out full width)
    assert (top.mean(axis=2) < 0.95).any(axis=0)[100:1200].mean() > 0.5


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not on PATH")
def test_headless_screenshot_latency_and_stream(tmp_path: Path) -> None:
    """The real H100 latency and stream campaigns: nothing failed, and the browser draws the
    latency figures (warplab's blue and torch's red bars)."""
    src = [RESULT_FIXTURES / "latency-table-h100-a32d6b2.json",
           RESULT_FIXTURES / "stream-table-h100-89b585f.json"]
    index = build_report(src, out_dir=tmp_path / "report")
    page = index.read_text(encoding="utf-8")
    assert "103 verified records, 0 failed," in page and 'id="failures"' not in page
    img = (screenshot(index, tmp_path, 3200) * 255).round()

    def share(rgb: tuple[int, int, int]) -> float:
        return float((abs(img - rgb).max(axis=2) <= 6).mean())

    assert img.shape[1] == 1280
    assert share((31, 119, 180)) > 1e-3  # warplab's bars (#1f77b4)
    assert share((214, 39, 40)) > 1e-3   # torch's bars (#d62728)

"""End-to-end tests for warplab.lab.report.build_report on synthesized results JSON."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from warplab.lab.report import build as report_build
from warplab.lab.report import build_report, load_results, make_figures

H100 = "NVIDIA H100 80GB HBM3"
CPU = "AMD EPYC 9654 (test)"
WARPLAB = ("global", "global_stride", "private", "private_stride")
COMPARATORS = {  # variant -> (provider, bins mappings it runs on)
    "cupy.bincount": ("cupy", ("bytes", "ascii128", "letters")),
    "torch.bincount": ("torch", ("bytes", "ascii128", "letters")),
    "cuda.compute.histogram_even": ("cuda.compute", ("bytes",)),
}
NBINS = {"bytes": 256, "ascii128": 128, "letters": 26}
SPEED = {"global": 1.0, "global_stride": 2.0, "private": 6.0, "private_stride": 10.0,
         "cupy.bincount": 3.0, "torch.bincount": 2.5, "cuda.compute.histogram_even": 12.0,
         "numpy.bincount": 0.5}
SIZES = [2**k for k in range(3, 21)]


def stats(m: float) -> dict[str, Any]:
    return {"min": m * 0.9, "q10": m * 0.95, "median": m, "q90": m * 1.1, "max": m * 1.3,
            "noise": 0.05, "samples": [m * 0.95, m, m * 1.1]}


def record(variant: str, size: int, *, family: str = "histogram", provider: str = "warplab",
           backend: str = "cuda", data: str = "uniform", bins: str = "bytes",
           verified: bool = True, error: str | None = None, copy_gbps: float | None = 3000.0,
           params: dict[str, Any] | None = None) -> dict[str, Any]:
    """One schema-1 record with a plausible time model."""
    slow = (4.0 if data == "const" and variant.startswith("global") else 1.0)
    slow *= 1.3 if bins == "letters" else 1.0
    kernel = 0.004 + size / (SPEED.get(variant, 1.0) * 2e8) * slow
    moved = size
    gbps = moved / (kernel * 1e6) if backend == "cuda" else None
    if params is None:
        params = {"size": size, "data": data, "bins": bins, "nbins": NBINS[bins],
                  "pinned": True, "runs": 5, "warmup": 1}
    return {
        "family": family, "variant": variant, "provider": provider, "backend": backend,
        "params": params,
        "phases": {"h2d": stats(size / 2e7 + 0.01) if backend == "cuda" else None,
                   "kernel": stats(kernel),
                   "d2h": stats(0.01) if backend == "cuda" else None,
                   "total": stats(kernel + 0.02)},
        "bytes_moved": moved, "gbps": gbps,
        "pct_of_copy_bw": 100 * gbps / copy_gbps if gbps and copy_gbps else None,
        "verified": verified, "error": error,
    }


def meta(name: str, backend: str, copy_gbps: float | None,
         notes: list[str] | None = None) -> dict[str, Any]:
    return {"device": {"backend": backend, "name": name, "cc": "9.0" if backend == "cuda" else None,
                       "sms": 132 if backend == "cuda" else None,
                       "memory_bytes": 85 * 2**30 if backend == "cuda" else None,
                       "driver": "test"},
            "versions": {"warplab": "0.1.0", "python": "3.11.7", "numpy": "2.0",
                         "cupy": "13.0" if backend == "cuda" else None, "torch": None},
            "commit": "abc1234", "hostname": "testhost", "timestamp": "2025-01-01T00:00:00Z",
            "time_unit": "ms", "ceilings": {"copy_gbps": copy_gbps, "read_gbps": None},
            "notes": notes or []}


def cuda_doc() -> dict[str, Any]:
    """H100 histogram results: 4 kernels + comparators, 3 mappings, 2 data kinds, 2 failures."""
    results = []
    for bins in ("bytes", "ascii128", "letters"):
        for data in ("uniform", "const"):
            for size in SIZES:
                for v in WARPLAB:
                    results.append(record(v, size, data=data, bins=bins))
                for v, (prov, mappings) in COMPARATORS.items():
                    if bins not in mappings:
                        continue
                    if v == "cuda.compute.histogram_even" and data == "uniform":
                        if size == 2**10:  # the only record of this variant here, unverified
                            results.append(record(v, size, provider=prov, data=data,
                                                  bins=bins, verified=False))
                        continue
                    err = ("CUDA error: an illegal memory access was encountered"
                           if (v, bins, data, size) == ("torch.bincount", "letters", "const",
                                                        SIZES[-1]) else None)
                    results.append(record(v, size, provider=prov, data=data, bins=bins,
                                          error=err))
    return {"schema": 1, "meta": meta(H100, "cuda", 3000.0, ["clocks not locked", "a < b & c"]),
            "results": results}


def cpu_doc() -> dict[str, Any]:
    results = [record(v, s, backend="cpu", provider="numpy" if "." in v else "warplab")
               for v in ("global", "private", "numpy.bincount") for s in SIZES[:8]]
    return {"schema": 1, "meta": meta(CPU, "cpu", None), "results": results}


def write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc))
    return path


class Tables(HTMLParser):
    """Collect every <table>: class, caption, header, and (data-config, cells) rows."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[dict[str, Any]] = []
        self._cell: list[str] | None = None
        self._in_caption = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self.tables.append({"class": a.get("class"), "caption": "", "header": [],
                                "rows": []})
        elif tag == "caption":
            self._in_caption = True
        elif tag == "tr" and self.tables:
            self.tables[-1]["rows"].append((a.get("data-config"), []))
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "caption":
            self._in_caption = False
        elif tag in ("td", "th") and self._cell is not None and self.tables:
            text = "".join(self._cell).strip()
            t = self.tables[-1]
            if tag == "th" and t["rows"] and t["rows"][-1][0] is None and not t["rows"][-1][1]:
                t["header"].append(text)
            else:
                t["rows"][-1][1].append(text)
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._in_caption and self.tables:
            self.tables[-1]["caption"] += data
        elif self._cell is not None:
            self._cell.append(data)


def parse_tables(page: str) -> list[dict[str, Any]]:
    p = Tables()
    p.feed(page)
    for t in p.tables:
        t["rows"] = [(k, cells) for k, cells in t["rows"] if k is not None]
    return p.tables


#: The figures ``make_figures`` returned inside the h100 report's ``build_report``.
H100_FIGURES: list[Any] = []


@pytest.fixture(scope="module")
def h100_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    d = tmp_path_factory.mktemp("h100")
    write(d / "h100.json", cuda_doc())
    # JSON files of other kinds next to results files (a saved `warplab device` answer, a list)
    write(d / "device.json", {"backend": "cuda", "name": "DeviceFileGPU", "sms": 1})
    write(d / "list.json", [1, 2, 3])

    def figures(*args: Any, **kw: Any) -> Any:
        H100_FIGURES[:] = make_figures(*args, **kw)
        return H100_FIGURES

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(report_build, "make_figures", figures)
        index = build_report(d)
    return index, index.read_text(encoding="utf-8")


def expected_histogram_pngs() -> list[str]:
    names = []
    for bins in ("bytes", "ascii128", "letters"):
        for data in ("const", "uniform"):
            for kind in ("time", "speedup", "bandwidth", "phases"):
                names.append(f"histogram_{kind}_bins-{bins}_data-{data}.png")
    names += [f"histogram_ratio-letters-ascii128_data-{d}.png" for d in ("const", "uniform")]
    return names


def test_index_and_header(h100_report: tuple[Path, str]) -> None:
    index, page = h100_report
    assert index == index.parent / "index.html" and index.parent.name == "report"
    assert index.exists()
    assert H100 in page
    for s in ("9.0", "132", "85.0 GiB", "abc1234", "2025-01-01 00:00 UTC", "3,000 GB/s",
              "clocks not locked", "a &lt; b &amp; c", "numpy"):
        assert s in page, s
    assert "a < b & c" not in page


def test_expected_pngs_exist_and_are_png(h100_report: tuple[Path, str]) -> None:
    index, page = h100_report
    for name in expected_histogram_pngs():
        p = index.parent / name
        assert p.exists(), name
        assert p.read_bytes()[:4] == b"\x89PNG", name
        assert f'src="{name}"' in page, name


def test_failures_section_lists_failed_records(h100_report: tuple[Path, str]) -> None:
    _, page = h100_report
    start = page.index('<section id="failures">')
    section = page[start:page.index("</section>", start)]
    assert "torch.bincount" in section
    assert "illegal memory access" in section
    assert "cuda.compute.histogram_even" in section
    fail = [t for t in parse_tables(page) if t["class"] == "failures"]
    assert len(fail) == 1 and len(fail[0]["rows"]) == 2


def _col(table: dict[str, Any], name: str) -> int:
    return table["header"].index(name)


def test_failed_records_not_in_speed_tables(h100_report: tuple[Path, str]) -> None:
    _, page = h100_report
    tables = parse_tables(page)
    bad = {"bins=letters, data=const": "torch.bincount",
           "bins=bytes, data=uniform": "cuda.compute.histogram_even"}
    glance = [t for t in tables if t["class"] == "glance"]
    assert len(glance) == 1
    seen = set()
    for key, cells in glance[0]["rows"]:
        seen.add(key)
        if key in bad:
            assert bad[key] not in cells
    assert set(bad) <= seen
    speed = {t["caption"]: t for t in tables if t["class"] == "speedup"}
    assert set(speed) == {f"histogram: speedup vs global — bins={b}"
                          for b in ("bytes", "ascii128", "letters")}
    letters = speed["histogram: speedup vs global — bins=letters"]
    rows = dict(letters["rows"])
    assert rows["bins=letters, data=const"][_col(letters, "torch.bincount")] == "—"
    assert rows["bins=letters, data=uniform"][_col(letters, "torch.bincount")] != "—"
    assert rows["bins=letters, data=const"][_col(letters, "global")] == "1.00"
    assert float(rows["bins=letters, data=const"][_col(letters, "private_stride")]) > 5
    bytes_t = speed["histogram: speedup vs global — bins=bytes"]
    brows = dict(bytes_t["rows"])
    assert brows["bins=bytes, data=uniform"][_col(bytes_t, "cuda.compute.histogram_even")] == "—"
    assert brows["bins=bytes, data=const"][_col(bytes_t, "cuda.compute.histogram_even")] != "—"
    assert "2^20" in brows["bins=bytes, data=const"]
    ratio = [t for t in tables if t["class"] == "ratio"]
    assert len(ratio) == 1
    rrows = dict(ratio[0]["rows"])
    assert rrows["data=const"][_col(ratio[0], "torch.bincount")] == "—"
    assert 1.05 < float(rrows["data=uniform"][_col(ratio[0], "global")]) < 1.3


def bytes_only(doc: dict[str, Any]) -> dict[str, Any]:
    """The doc restricted to bins=bytes (fewer figures, faster tests)."""
    return dict(doc, results=[r for r in doc["results"] if r["params"]["bins"] == "bytes"])


def test_failed_records_not_plotted(h100_report: tuple[Path, str], tmp_path: Path) -> None:
    # the h100 report's figures (its bins=bytes ones are those of bytes_only(cuda_doc()))
    by = {(f.kind, f.config): f for f in H100_FIGURES}
    cfg = (("bins", "bytes"), ("data", "uniform"))
    for kind in ("time", "speedup", "bandwidth", "phases"):
        assert "cuda.compute.histogram_even" not in by[(kind, cfg)].series
    assert "cuda.compute.histogram_even" in by[("time", (("bins", "bytes"), ("data", "const")))].series
    # a config with only failed rows yields no figure at all
    doc = bytes_only(cuda_doc())
    doc["results"] = [dict(r, verified=False) for r in doc["results"]]
    res = load_results(write(tmp_path / "bad.json", doc))
    assert make_figures(res, tmp_path / "none") == []


def test_non_results_files_left_out_and_listed(h100_report: tuple[Path, str]) -> None:
    _, page = h100_report
    assert "DeviceFileGPU" not in page
    start = page.index("Left out, not results files (2)")
    for name in ("device.json", "list.json"):
        assert name in page[start:]


def test_merged_cuda_and_cpu_with_null_ceilings(tmp_path: Path) -> None:
    a = write(tmp_path / "a.json", bytes_only(cuda_doc()))
    b = write(tmp_path / "b.json", cpu_doc())
    out = tmp_path / "out"
    index = build_report([a, b], out_dir=out)
    assert index == out / "index.html"
    page = index.read_text(encoding="utf-8")
    assert H100 in page and CPU in page and "not measured" in page
    assert f"numpy.bincount [{CPU}]" in page
    assert (out / "histogram_time_bins-bytes_data-uniform.png").exists()


def test_cpu_only_report(tmp_path: Path) -> None:
    f = write(tmp_path / "cpu.json", cpu_doc())
    index = build_report(f)
    assert index == tmp_path / "report" / "index.html"
    pngs = sorted(p.name for p in index.parent.glob("*.png"))
    # gbps is null on cpu: no bandwidth figure; no h2d/d2h: no phases figure (kernel only);
    # every time is ~4 us plus < 1%: the speedups all lie inside the run-to-run range
    assert pngs == ["histogram_time_bins-bytes_data-uniform.png"]
    page = index.read_text(encoding="utf-8")
    assert CPU in page
    assert "only the kernel phase was timed" in page
    assert "no verified record with a bandwidth (GB/s)" in page
    assert "pure noise: at every size the two times behind the speedup vs global overlap" in page


def test_other_family_renders(tmp_path: Path) -> None:
    results = []
    for dtype in ("float32", "int32"):
        for v, prov in (("tree", "warplab"), ("warp_shuffle", "warplab"), ("cupy.sum", "cupy")):
            for s in SIZES[:10]:
                results.append(record(v, s, family="reduce", provider=prov,
                                      params={"size": s, "dtype": dtype, "runs": 3}))
    results.append(record("warp_shuffle", 2**15, family="reduce", error="boom",
                          params={"size": 2**15, "dtype": "int32"}))
    doc = {"schema": 1, "meta": meta(H100, "cuda", 2500.0), "results": results}
    doc["results"] += cuda_doc()["results"][:50]
    index = build_report(write(tmp_path / "reduce.json", doc))
    page = index.read_text(encoding="utf-8")
    for dtype in ("float32", "int32"):
        for kind in ("time", "bandwidth", "phases"):
            p = index.parent / f"reduce_{kind}_dtype-{dtype}.png"
            assert p.read_bytes()[:4] == b"\x89PNG"
        assert not (index.parent / f"reduce_speedup_dtype-{dtype}.png").exists()
    assert 'id="family-reduce"' in page and 'id="family-histogram"' in page
    glance = [t for t in parse_tables(page) if t["class"] == "glance"]
    reduce_rows = [cells for t in glance for k, cells in t["rows"] if k and k.startswith("dtype=")]
    assert len(reduce_rows) == 6
    assert "boom" in page


def test_html_escaping_of_json_strings(tmp_path: Path) -> None:
    doc = cpu_doc()
    doc["meta"]["device"]["name"] = "<script>alert(1)</script>"
    doc["meta"]["notes"] = ['"quoted" <b>']
    for r in doc["results"]:
        r["variant"] = r["variant"] + "<i>"
    page = build_report(write(tmp_path / "x.json", doc)).read_text(encoding="utf-8")
    assert "<script>alert" not in page and "&lt;script&gt;" in page
    assert "<i>" not in page and "&lt;b&gt;" in page


def test_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        build_report(tmp_path / "missing")
    with pytest.raises(FileNotFoundError):
        build_report([tmp_path / "missing.json"])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="no warplab results JSON in"):
        build_report(empty)
    write(empty / "device.json", {"name": "not results"})
    with pytest.raises(ValueError, match="no warplab results JSON in"):
        build_report(empty)
    write(empty / "old.json", {"schema": 0, "results": []})
    with pytest.raises(ValueError, match="old.json: schema 0"):
        build_report(empty)

"""The roofline: roof arithmetic, point coordinates, and the figure from synthetic results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from matplotlib.image import imread

from warplab.lab.report import build_report, load_results
from warplab.lab.report.roofline import (
    attainable, best_points, device_ceilings, point_roof, ridge, roofline_table, roofs,
)

H100 = "NVIDIA H100 80GB HBM3"
NEW_CEILINGS = {"copy_gbps": 3000.0, "read_gbps": 3200.0, "sgemm_gflops": 50000.0,
                "dgemm_gflops": 60000.0, "h2d_pinned_gbps": 55.0, "copy_method": "x",
                "copy_ms": {"median": 0.7}}


def stats(m: float) -> dict[str, Any]:
    return {"min": m, "q10": m, "median": m, "q90": m, "max": m, "noise": 0.0, "samples": [m]}


def record(family: str, variant: str, size: int, params: dict[str, Any], *, ms: float,
           bytes_moved: int, flops: int | None = None, provider: str = "warplab") -> dict:
    gbps = bytes_moved / (ms * 1e-3) / 1e9
    rec = {"family": family, "variant": variant, "provider": provider, "backend": "cuda",
           "params": {"size": size, **params},
           "phases": {"h2d": None, "kernel": stats(ms), "d2h": None, "total": stats(ms)},
           "bytes_moved": bytes_moved, "gbps": gbps, "pct_of_copy_bw": None,
           "verified": True, "error": None}
    if flops is not None:
        rec["flops"] = flops
        rec["gflops"] = flops / (ms * 1e-3) / 1e9
    return rec


def matmul(variant: str, n: int, ms: float, dtype: str = "float32") -> dict:
    item = 4 if dtype == "float32" else 8
    return record("matmul", variant, n, {"dtype": dtype}, ms=ms, bytes_moved=3 * n * n * item,
                  flops=2 * n ** 3)


def doc(ceilings: dict[str, Any] | None, results: list[dict]) -> dict:
    meta = {"device": {"backend": "cuda", "name": H100, "cc": "9.0", "sms": 132},
            "versions": {}, "commit": "abc", "hostname": "h", "timestamp": "t",
            "time_unit": "ms", "notes": []}
    if ceilings is not None:
        meta["ceilings"] = ceilings
    return {"schema": 1, "meta": meta, "results": results}


def mixed_results() -> list[dict]:
    return [
        matmul("naive", 1024, 2.0), matmul("naive", 4096, 60.0),
        matmul("tiled_smem16", 4096, 20.0), matmul("cublas", 4096, 3.0),
        matmul("cublas", 4096, 3.5, dtype="float64"),
        record("reduce", "persistent_vec", 1 << 28, {"dtype": "float32", "op": "sum"},
               ms=0.4, bytes_moved=4 << 28),
        record("reduce", "persistent_vec", 1 << 20, {"dtype": "float32", "op": "sum"},
               ms=0.01, bytes_moved=4 << 20),
        record("histogram", "private_stride", 1 << 30, {"bins": "bytes", "data": "uniform"},
               ms=0.5, bytes_moved=1 << 30),
    ]


def write(tmp_path: Path, name: str, d: dict) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(d))
    return p


def test_roof_math() -> None:
    assert attainable(1.0, 3000.0, 50000.0) == 3000.0          # memory-bound side
    assert attainable(100.0, 3000.0, 50000.0) == 50000.0       # compute-bound side
    assert attainable(100.0, 3000.0, None) == 300000.0         # no compute roof
    assert ridge(3000.0, 50000.0) == pytest.approx(16.667, rel=1e-3)
    assert attainable(ridge(3000.0, 50000.0), 3000.0, 50000.0) == pytest.approx(50000.0)


def test_roofs_from_ceilings() -> None:
    rs = roofs(NEW_CEILINGS)
    assert [(r.kind, r.value) for r in rs] == [("bandwidth", 3000.0), ("bandwidth", 3200.0),
                                               ("compute", 50000.0), ("compute", 60000.0)]
    assert [r.kind for r in roofs({"copy_gbps": 2991.0, "read_gbps": None})] == ["bandwidth"]
    assert roofs({}) == []


def test_point_coordinates(tmp_path: Path) -> None:
    res = load_results(write(tmp_path, "r.json", doc(NEW_CEILINGS, mixed_results())))
    pts = {(p.row.family, p.row.variant, p.row.params.get("dtype")): p
           for p in best_points(res.rows)}
    naive = pts[("matmul", "naive", "float32")]
    assert naive.row.size == 4096                      # the largest size wins
    assert naive.x == pytest.approx(2 * 4096 ** 3 / (3 * 4096 * 4096 * 4))   # N / 6
    assert naive.y == pytest.approx(2 * 4096 ** 3 / 60e-3 / 1e9)
    assert naive.flops_based
    red = pts[("reduce", "persistent_vec", "float32")]
    assert red.row.size == 1 << 28 and not red.flops_based
    assert red.x == 0.25                                # one op per 4-byte element
    assert red.y == pytest.approx(0.25 * (4 << 28) / 0.4e-3 / 1e9)
    hist = pts[("histogram", "private_stride", None)]
    assert hist.x == 1.0 and hist.y == pytest.approx((1 << 30) / 0.5e-3 / 1e9)


def test_point_roof_picks_the_dtype_compute_roof(tmp_path: Path) -> None:
    res = load_results(write(tmp_path, "r.json", doc(NEW_CEILINGS, mixed_results())))
    pts = {(p.row.variant, p.row.params.get("dtype")): p for p in best_points(res.rows)}
    ceil = device_ceilings(res.sources, H100)
    assert point_roof(pts[("cublas", "float32")], ceil) == (50000.0, "compute")
    assert point_roof(pts[("cublas", "float64")], ceil) == (60000.0, "compute")
    # integer ops: bandwidth roof only (the highest measured one), even at high intensity
    assert point_roof(pts[("private_stride", None)], ceil) == (3200.0, "memory")


def test_report_with_matmul_and_new_ceilings(tmp_path: Path) -> None:
    src = write(tmp_path, "mixed.json", doc(NEW_CEILINGS, mixed_results()))
    index = build_report(src, tmp_path / "rep")
    png = tmp_path / "rep" / "roofline_NVIDIA-H100-80GB-HBM3.png"
    assert png.is_file() and imread(png).shape[0] > 100
    page = index.read_text()
    assert 'id="roofline"' in page and "roofline_NVIDIA-H100-80GB-HBM3.png" in page
    assert "not FP flops" in page and "% of roof" in page


def test_old_results_without_new_ceilings(tmp_path: Path) -> None:
    """Only copy_gbps: the copy roof, no compute roof, percentages against copy."""
    src = write(tmp_path, "old.json", doc({"copy_gbps": 2991.0, "copy_bytes": 1 << 30},
                                          mixed_results()))
    build_report(src, tmp_path / "rep")
    assert (tmp_path / "rep" / "roofline_NVIDIA-H100-80GB-HBM3.png").is_file()
    res = load_results(src)
    table = roofline_table(res.rows, res.sources)
    col = table.columns.index("roof Gop/s")
    for row in table.rows:
        assert row[col] == pytest.approx(row[table.columns.index("op/B")] * 2991.0)


def test_results_without_any_ceilings(tmp_path: Path) -> None:
    src = write(tmp_path, "bare.json", doc(None, mixed_results()))
    build_report(src, tmp_path / "rep")
    assert (tmp_path / "rep" / "roofline_NVIDIA-H100-80GB-HBM3.png").is_file()
    res = load_results(src)
    table = roofline_table(res.rows, res.sources)
    assert all(row[table.columns.index("roof Gop/s")] is None for row in table.rows)


def test_no_points_no_figure(tmp_path: Path) -> None:
    failed = matmul("naive", 64, 1.0)
    failed.update(verified=False, gbps=None, error="mismatch")
    src = write(tmp_path, "f.json", doc(NEW_CEILINGS, [failed]))
    build_report(src, tmp_path / "rep")
    assert not list((tmp_path / "rep").glob("roofline*.png"))

"""Ceilings on the cpu backend, the datasheet arithmetic, and ``warplab device --measure``."""
from __future__ import annotations

import json

import pytest

from warplab import cli
from warplab.lab.harness import ceiling_rates, ceilings

MEASURED = ("copy_gbps", "read_gbps", "sgemm_gflops", "dgemm_gflops")
GPU_ONLY = ("h2d_pinned_gbps", "h2d_pageable_gbps", "d2h_pinned_gbps", "d2h_pageable_gbps")
H100 = {"sms": 132, "sm_clock_mhz": 1980.0, "cc": "9.0", "datasheet_bw_gbps": 3352.32}


def test_cpu_ceilings_measured_and_cached() -> None:
    c = ceilings.measure_all("cpu")
    for key in MEASURED:
        assert c[key] > 0, key
        name = key.rsplit("_", 1)[0]
        assert c[f"{name}_method"] and c[f"{name}_ms"]["median"] > 0
    for key in GPU_ONLY:
        assert c[key] is None and "cuda" in c[key.replace("_gbps", "_method")]
    assert c["sgemm_n"] == c["dgemm_n"] == ceiling_rates.GEMM_N["cpu"]
    assert c["datasheet_fp32_gflops"] is None and c["datasheet_bw_gbps"] is None
    assert ceilings.measure_all("cpu") is c
    assert ceiling_rates.copy_bandwidth("cpu")["copy_gbps"] == c["copy_gbps"]


def test_cpu_read_ceiling_is_the_fastest_read() -> None:
    c = ceiling_rates.read_bandwidth("cpu", nbytes=1 << 20)
    by = c["read_gbps_by_method"]
    assert set(by) == {name for name, _ in ceiling_rates.CPU_READS}
    assert c["read_gbps"] == pytest.approx(max(by.values()))
    assert c["read_method"].startswith(ceiling_rates.CPU_READ_METHOD) and c["read_bytes"] == 1 << 20


def test_cpu_ceilings_measured_another_way_are_measured_again(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("WARPLAB_CACHE_DIR", str(tmp_path))
    ceilings._MEMO.clear()
    old = {"copy_gbps": 1.0, "read_gbps": 2.0, "read_method": "np.sum of float32, bytes read",
           "sgemm_n": ceiling_rates.GEMM_N["cpu"]}
    ceilings.cache_path("cpu").write_text(json.dumps(old))
    assert ceilings.cached_ceilings("cpu") is None  # the read ceiling of np.sum alone
    calls: list = []
    monkeypatch.setattr(ceilings, "_measure_all", lambda b: calls.append(b) or {
        "copy_gbps": 3.0, "read_method": ceiling_rates.CPU_READ_METHOD + " (x)",
        "sgemm_n": ceiling_rates.GEMM_N["cpu"]})
    assert ceilings.measure_all("cpu")["copy_gbps"] == 3.0 and calls == ["cpu"]
    ceilings._MEMO.clear()
    assert ceilings.cached_ceilings("cpu")["copy_gbps"] == 3.0  # stored, current: reused
    assert ceilings.stale({**old, "read_method": ceiling_rates.CPU_READ_METHOD, "sgemm_n": 512},
                          "cpu")
    assert not ceilings.stale(old, "cuda")


def test_transfer_direction_checked() -> None:
    with pytest.raises(ValueError, match="direction"):
        ceiling_rates.host_transfer("cpu", "h2h", True)


def test_datasheet_h100() -> None:
    d = ceilings.datasheet(H100)
    assert d["datasheet_bw_gbps"] == H100["datasheet_bw_gbps"]
    assert d["datasheet_sm_gcycles"] == pytest.approx(132 * 1.98)
    assert d["datasheet_fp32_gflops"] == pytest.approx(132 * 128 * 2 * 1.98)   # 66.9 TFLOP/s
    assert d["datasheet_fp64_gflops"] == pytest.approx(132 * 64 * 2 * 1.98)    # 33.5
    assert d["datasheet_fp64_tensor_gflops"] == pytest.approx(2 * 132 * 64 * 2 * 1.98)
    assert d["datasheet_int8_tensor_gops"] == pytest.approx(8192 * 132 * 1.98)  # 2,141 TOPS
    assert "132 SMs" in d["datasheet_basis"]


@pytest.mark.parametrize("props", [{"sms": 80, "sm_clock_mhz": 1500.0, "cc": "99.9"},
                                   {"sms": None, "sm_clock_mhz": None, "cc": None}, {}])
def test_datasheet_unknown_or_missing(props: dict) -> None:
    d = ceilings.datasheet(props)
    assert d["datasheet_fp32_gflops"] is None and d["datasheet_fp64_tensor_gflops"] is None
    assert d["datasheet_int8_tensor_gops"] is None
    if props.get("sms"):
        assert d["datasheet_sm_gcycles"] == pytest.approx(120.0)


def test_comparison_rows_percentages() -> None:
    c = {"copy_gbps": 3000.0, "read_gbps": 3100.0, "sgemm_gflops": 50000.0,
         "dgemm_gflops": 60000.0, **ceilings.datasheet(H100)}
    rows = {r[0]: r for r in ceilings.comparison_rows(c)}
    assert rows["copy (read + write), GB/s"][3] == pytest.approx(100 * 3000 / 3352.32)
    assert rows["H2D pinned, GB/s"][1:4] == (None, None, None)
    dgemm = rows["DGEMM, GFLOP/s"]
    assert dgemm[3] > 100  # tensor-core DGEMM beats the FP64 lane peak, and says so
    assert rows["DGEMM vs FP64 tensor cores, GFLOP/s"][3] < 100
    no_tensor = {k: v for k, v in c.items() if k != "datasheet_fp64_tensor_gflops"}
    assert not any("tensor" in r[0] for r in ceilings.comparison_rows(no_tensor))


def test_cli_device_measure_json(capsys: pytest.CaptureFixture) -> None:
    rc = cli.main(["device", "--measure", "--json"])
    out = capsys.readouterr().out
    assert rc == 0
    info = json.loads(out)
    assert info["backend"] == "cpu"
    for key in MEASURED:
        assert info[key] > 0, key
    for key in GPU_ONLY:
        assert info[key] is None
    assert info["copy_ms"]["median"] > 0


def info_backend() -> str:
    from warplab.core.device import resolve_backend

    return resolve_backend(None)


def test_cli_device_measure_table(capsys: pytest.CaptureFixture) -> None:
    rc = cli.main(["device", "--measure"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "measured ceilings" in out and "SGEMM" in out
    # no datasheet numbers for a CPU: the datasheet columns would be dashes only, so they go
    assert ("% of datasheet" in out) == (info_backend() == "cuda")


def test_ceilings_are_stored_per_device_and_refreshed(tmp_path, monkeypatch) -> None:
    """measure_all measures once per device and keeps it on disk; --measure measures again."""
    monkeypatch.setenv("WARPLAB_CACHE_DIR", str(tmp_path))
    path = ceilings.cache_path("cpu")
    assert path.parent == tmp_path and "cpu" in path.name
    first = ceilings.measure_all("cpu", refresh=True)
    assert path.exists() and first["measured_at"]
    ceilings._MEMO.clear()  # a new process: read back from the file, not measured again
    calls: list = []
    monkeypatch.setattr(ceilings, "_measure_all", lambda b: calls.append(b) or {"copy_gbps": 1.0})
    again = ceilings.measure_all("cpu")
    assert calls == [] and again["measured_at"] == first["measured_at"]
    fresh = ceilings.measure_all("cpu", refresh=True)
    assert calls == ["cpu"] and fresh["copy_gbps"] == 1.0
    path.write_text("{not json")  # a damaged cache is measured again, never an error
    ceilings._MEMO.clear()
    assert ceilings.measure_all("cpu")["copy_gbps"] == 1.0 and calls == ["cpu", "cpu"]


def test_device_without_measure_uses_the_stored_ceilings(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("WARPLAB_CACHE_DIR", str(tmp_path))
    ceilings._MEMO.clear()
    assert cli.main(["device"]) == 0
    assert "not measured on this device yet" in capsys.readouterr().out
    ceilings.measure_all("cpu", refresh=True)
    assert cli.main(["device"]) == 0
    out = capsys.readouterr().out
    assert "measured ceilings" in out and "stored" in out

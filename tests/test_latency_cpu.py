"""The latency campaign on the NumPy backend: records valid and verified, the checks catch a
wrong answer and a copy that did not happen, a failing call is a record, the tables of a GPU
run (synthetic records) and the CLI fit 80 columns."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from warplab import cli
from warplab.lab.harness.results import read, validate
from warplab.lab.harness.stats import summarize
from warplab.lab.console import console
from warplab.lab.campaigns.latency import bench as lb
from warplab.lab.campaigns.latency.bench import (
    Impl,
    LatencyCampaign,
    measure_group,
    run_latency,
)
from warplab.lab.campaigns.latency.cases import CASES, POISON, Case, check, host, select
from warplab.lab.campaigns.latency.command import print_tables

TINY = LatencyCampaign(rounds=2, calls=3, bursts=2, burst=5, warmup=1)


@pytest.fixture(autouse=True)
def _narrow(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(console, "width", 80)
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("WARPLAB_COMMIT", "test-commit")


@pytest.fixture
def tiny(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(lb.LATENCY_CAMPAIGNS, "quick", TINY)
    monkeypatch.setattr(lb, "CPU_BURST", 4)


def test_cpu_campaign_records(tiny: None) -> None:
    doc = run_latency(backend="cpu", json_path=None)
    validate(doc)
    recs = doc["results"]
    cpu_cases = [c.name for c in CASES if not c.gpu_only]
    assert sorted({r["params"]["case"] for r in recs}) == sorted(cpu_cases)
    assert len(recs) == 2 * len(cpu_cases)
    for r in recs:
        assert r["family"] == "latency" and r["provider"] == "warplab" and r["backend"] == "cpu"
        assert r["verified"] and r["error"] is None and r["gbps"] is None, r
        p = r["params"]
        assert p["mode"] in ("call_latency", "host_per_call") and p["input"] == "host"
        n = TINY.rounds * TINY.calls if p["mode"] == "call_latency" else TINY.bursts
        assert p["samples"] == n == len(r["phases"]["total"]["samples"])
        assert r["phases"]["total"]["median"] > 0 and p["size"] > 0
    assert {r["variant"] for r in recs} == {c.function for c in CASES if not c.gpu_only}
    assert any("memcpy_batched_8 skipped" in n for n in doc["meta"]["notes"])
    assert any("comparators" in n for n in doc["meta"]["notes"])


def test_select_by_case_and_function() -> None:
    assert [c.name for c in select(["mean"])] == ["mean_1k", "mean_rows_64"]
    assert [c.name for c in select(["sum_1k", "matmul"])] == ["sum_1k", "matmul_64"]
    assert len(select(None)) == len(CASES)
    with pytest.raises(ValueError, match="unknown latency case.*nope.*valid: byte_hist_4k"):
        select(["nope"])


def test_check_catches_wrong_answers() -> None:
    exact = Case("c", "f", "", "", dict, lambda d, **kw: None, lambda d: None)
    loose = Case("c", "f", "", "", dict, lambda d, **kw: None, lambda d: None, tol=1e-5)
    assert check(exact, np.array([1, 2, 3]), np.array([1, 2, 3])) == (True, None)
    assert not check(exact, np.array([1, 2, 4]), np.array([1, 2, 3]))[0]
    assert not check(exact, np.array([1, 2]), np.array([1, 2, 3]))[0]
    assert not check(loose, (np.ones(2), np.ones(2)), (np.ones(2),))[0]
    assert check(loose, 100.0005, 100.0)[0] and not check(loose, 100.01, 100.0)[0]
    assert not check(loose, np.array([np.nan]), np.array([1.0]))[0]


def test_host_conversions() -> None:
    assert host(np.float32(2.5)) == 2.5 and isinstance(host(np.float32(2.5)), float)
    got = host((np.arange(3), np.zeros(())))
    assert isinstance(got, tuple) and got[1] == 0.0 and np.array_equal(got[0], np.arange(3))


def test_copy_that_did_not_happen_is_caught() -> None:
    lazy = Case("lazy_copy", "copy_batched", "", "", lambda g: {
        "srcs": [g.integers(0, 255, size=16, dtype=np.uint8)],
        "dsts": [np.zeros(16, dtype=np.uint8)]},
        lambda d, **kw: None, lambda d: d["srcs"], copies=True)
    impls, _, _ = lb.case_impls(lazy, "cpu", False)
    ok, err = impls[0].verify()
    assert not ok and "relative error" in err


def test_poisoned_before_verifying() -> None:
    seen = []

    def copy(d: dict, **kw: object) -> None:
        seen.append(d["dsts"][0].copy())
        d["dsts"][0][:] = d["srcs"][0]

    case = Case("copy", "copy_batched", "", "", lambda g: {
        "srcs": [np.arange(8, dtype=np.uint8)], "dsts": [np.arange(8, dtype=np.uint8)]},
        copy, lambda d: d["srcs"], copies=True)
    impls, _, _ = lb.case_impls(case, "cpu", False)
    assert impls[0].verify() == (True, None)
    assert (seen[-1] == POISON).all()


def test_failing_call_is_a_record() -> None:
    def boom() -> None:
        raise RuntimeError("no such thing")

    good = Impl("sum", "warplab", "sum(x)", lambda: 1.0, lambda: 1.0, lambda: (True, None))
    bad = Impl("torch.sum", "torch", "torch.sum", boom, boom, lambda: (True, None))
    wrong = Impl("cupy.sum", "cupy", "cupy.sum", lambda: 2.0, lambda: 2.0,
                 lambda: (False, "relative error 1 above 1e-05"))
    recs = measure_group("sum_1k", "x", 4096, "cpu", [good, bad, wrong], TINY, {})
    validate({"schema": 1, "meta": {k: {} for k in ("device", "versions", "ceilings")}
              | {"commit": None, "hostname": "h", "timestamp": "t", "notes": []},
              "results": recs})
    by = {(r["variant"], r["params"]["mode"]): r for r in recs}
    assert len(recs) == 6
    assert by[("sum", "call_latency")]["verified"]
    err = by[("torch.sum", "host_per_call")]
    assert not err["verified"] and "RuntimeError: no such thing" in err["error"]
    assert err["phases"]["total"] is None and err["params"]["samples"] == 0
    w = by[("cupy.sum", "call_latency")]  # a wrong answer is still timed, and marked
    assert not w["verified"] and w["phases"]["total"]["median"] > 0


def _rec(case: str, variant: str, provider: str, mode: str, us: float,
         ok: bool = True) -> dict:
    from warplab.lab.harness.results import make_result

    return make_result(family="latency", variant=variant, provider=provider, backend="cuda",
                       params={"size": 4096, "case": case, "mode": mode},
                       phases={"total": summarize([us / 1e3] * 3)}, bytes_moved=0,
                       ceilings={}, verified=ok, error=None if ok else "relative error 1")


def test_gpu_tables_fit_80_columns(capsys: pytest.CaptureFixture) -> None:
    recs = []
    for mode in ("call_latency", "host_per_call"):
        recs += [_rec("floor", "floor", "cupy", mode, 11.8),
                 _rec("floor", "floor_d2h", "cupy", mode, 14.2),
                 _rec("floor", "floor_launch", "warplab", mode, 9.3),
                 _rec("floor", "floor_result", "warplab", mode, 10.4)]
        for c in CASES:
            recs += [_rec(c.name, c.function, "warplab", mode, 31.3),
                     _rec(c.name, "cupy." + c.function, "cupy", mode, 33.9),
                     _rec(c.name, "torch." + c.function, "torch", mode, 19.1,
                          ok=c.name != "histogram_1k")]
    print_tables(recs, "cuda")
    out = capsys.readouterr().out
    assert max(len(x) for x in out.splitlines()) <= 80 and "…" not in out
    assert "memcpy_batched_8" in out and "series_stats_64" in out
    row = next(x for x in out.splitlines() if "sum_1k" in x)
    assert "31.3" in row and "33.9" in row and "19.1" in row and "1.64" in row
    assert "19.1!" in next(x for x in out.splitlines() if "histogram_1k" in x)
    assert "floor (empty launch): 11.8 us" in out and "14.2 us" in out
    assert "warplab's launch: 9.3 us, with a 0-d result 10.4 us (+ sync, int())" in out
    assert "warplab's launch: 9.3 us, with a 0-d result 10.4 us (no sync)" in out
    assert "floor_launch" not in out  # the floors are lines under the tables, not rows


def test_latency_command(tiny: None, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "l.json"
    argv = ["--device", "cpu", "latency", "--case", "sum,matmul", "--json", str(path)]
    assert cli.main(argv) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    lines = [x for x in out.splitlines() if " eta " not in x]
    assert max(len(x) for x in lines) <= 80 and "…" not in out
    assert "sum_1k" in out and "matmul_64" in out and "corrcoef" not in out
    assert "cupy" not in out.split("note:")[0]  # no comparator columns on the cpu backend
    assert {r["params"]["case"] for r in read(path)["results"]} == {"sum_1k", "matmul_64"}


def test_bench_latency(tiny: None, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    argv = ["--device", "cpu", "bench", "latency", "--quick", "--variant", "bincount",
            "--runs", "2", "--warmup", "0", "--out", str(tmp_path)]
    assert cli.main(argv) == 0, capsys.readouterr().err
    (path,) = tmp_path.glob("*/latency.json")
    doc = read(path)
    assert doc["meta"]["campaign"] == "quick"
    assert [r["params"]["samples"] for r in doc["results"]] == [TINY.rounds * 2, TINY.bursts]


@pytest.mark.parametrize("argv,needle", [
    (["latency", "--case", "nope"], "unknown latency case"),
    (["latency", "--runs", "0"], "--runs must be >= 1"),
])
def test_bad_input_one_line(argv: list[str], needle: str,
                            capsys: pytest.CaptureFixture) -> None:
    assert cli.main(["--device", "cpu", *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1


def test_ratio_is_paired_per_round() -> None:
    from warplab.lab.campaigns.latency.command import _paired

    def rec(samples_us: list[float]) -> dict:
        r = _rec("sum_1k", "sum", "warplab", "call_latency", 1.0)
        r["phases"]["total"] = summarize([s / 1e3 for s in samples_us])
        r["params"]["calls"] = 3
        return r

    w, t = rec([10, 10, 10, 40, 40, 40]), rec([5, 5, 5, 10, 10, 10])
    assert _paired(w, t) == pytest.approx(3.0)  # rounds 2x and 4x; pooled medians: 3.33
    assert _paired(w, None) is None


def test_bench_all_leaves_other_variant_names_alone(tiny: None, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture) -> None:
    import argparse

    from warplab.lab.campaigns.latency.command import bench

    args = argparse.Namespace(family="all", variant=["numpy", "sum"], no_compare=True,
                              runs=2, warmup=0, sizes=None, dtypes=None, data=None, bins=None,
                              ops=None)
    assert bench(args, "cpu", "quick", tmp_path)
    assert {r["params"]["case"] for r in read(tmp_path / "latency.json")["results"]} == {"sum_1k"}
    args.family = "latency"
    with pytest.raises(ValueError, match="unknown latency case.*numpy"):
        bench(args, "cpu", "quick", tmp_path)

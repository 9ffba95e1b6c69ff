"""``warplab dask`` / ``warplab bench dask`` on the cpu backend: the quick campaign end to end
(direct, LocalCluster processes, and a cluster started by Dask's CLI), valid results JSON,
every record verified, new data and keys per run, a too-fast record rejected by its ceiling,
and a table that fits 80 columns."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("distributed")

from warplab.lab.campaigns.dask import limits, workloads as wl
from warplab.lab.campaigns.dask.command import print_tables
from warplab.lab.campaigns.dask.processes import dask_cli
from warplab.lab.cli import main
from warplab.lab.console import console
from warplab.lab.harness.results import validate

SERIES = ("corr_pairs_0.9", "corr_pairs_0.99", "corrcoef")
FILES = ("histogram_files", "histogram_files_cold")


@pytest.fixture(scope="module")
def quick(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("dask") / "dask.json"
    assert main(["--device", "cpu", "dask", "--runs", "2", "--warmup", "0",
                 "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    validate(doc)
    return doc


def test_quick_campaign_records(quick):
    recs = quick["results"]
    bad = [(r["variant"], r["params"].get("mode"), r["error"]) for r in recs if not r["verified"]]
    assert not bad
    seen = {(r["variant"], r["params"]["mode"], r["params"]["workers"]) for r in recs}
    modes = {("direct", 1), ("cluster", 1), ("cluster", 2)}
    if dask_cli() is not None:
        modes.add(("processes", 2))
    for w in SERIES + FILES:
        assert {(w, *m) for m in modes} <= seen, w
    assert not any(r["variant"] == "corrcoef_large" for r in recs)  # needs 4 GPUs
    assert any("corrcoef_large skipped" in n for n in quick["meta"]["notes"])
    assert {("fixed_cost", "cluster", 1), ("fixed_cost", "cluster", 2)} <= seen
    assert {r["params"]["source"] for r in recs if r["variant"] == "host_read"} == \
        {"memory", "page_cache"}
    work = [r for r in recs if r["variant"] in SERIES + FILES]
    for r in work:
        assert r["ceiling"]["value"] > 0 and r["pct_of_ceiling"] is not None
        assert r["completion_lag_ms"] is not None and r["completion_late"] is False
        assert r["params"]["protocol"] == (None if r["params"]["mode"] == "direct" else "tcp")
    one = [r for r in work if r["params"]["mode"] == "cluster" and r["params"]["workers"] == 1]
    assert one and all(r["speedup"] == 1.0 and r["overhead_pct"] is not None for r in one)
    cold = [r for r in recs if r["variant"] == "histogram_files_cold"]
    assert all(r["params"]["resident_after_evict"] for r in cold)
    assert all(isinstance(r["params"]["evicted"], bool) for r in cold)


def test_every_run_has_new_data(quick):
    """A seed per run (warm-up included), the same seeds in every mode; the checks compare
    each run with the direct run of its seed."""
    for r in quick["results"]:
        if r["variant"] not in SERIES + FILES:
            continue
        seeds = r["params"]["seeds"]
        assert len(seeds) == len(set(seeds)) == r["params"]["runs"] + r["params"]["warmup"]
        assert r["params"]["reference"] == "direct"
    pairs = [r for r in quick["results"] if r["variant"] == "corr_pairs_0.9"]
    counts = {tuple(r["params"]["pairs"]) for r in pairs}
    assert len(counts) == 1, counts  # every mode found the direct call's pairs, run by run
    assert len(set(next(iter(counts)))) > 1  # and each run's data differs


def test_new_keys_per_run():
    """The collections a run persists share no key with another run's (Dask would hand
    back the previous result for an existing key instead of computing it)."""
    def keys(w, seed, paths):
        x = wl.series(w, "cpu", seed) if w.op != "files" else None
        lazy = wl.lazy_call(w, x, paths, "cpu", seed)
        return set().union(*(c.__dask_graph__().keys() for c in lazy))

    ws = {w.name: w for w in wl.CAMPAIGNS["quick"]}
    paths = [__file__]
    for name in ("corr_pairs_0.9", "corrcoef", "histogram_files"):
        a, b = keys(ws[name], 1000, paths), keys(ws[name], 1001, paths)
        assert a and b and not a & b, name


def test_a_record_above_its_ceiling_is_failed():
    """A rate above the devices' ceiling is no result: the record fails and names it."""
    peaks = [{"dgemm_gflops": 50_000.0, "datasheet_fp64_tensor_gflops": 66_900.0}] * 4
    ceiling, how = limits.flop_ceiling(peaks, "float64", "cuda")
    assert ceiling == pytest.approx(4 * 66.9)
    r = {"verified": True, "error": None, "tflops": 1676.0}
    limits.judge(r, 1676.0, "TFLOP/s", ceiling, how)
    assert r["verified"] is False and r["tflops"] is None
    assert "exceeds its ceiling" in r["error"] and "datasheet 66900" in r["error"]
    # the int8 slices' ceiling where that engine runs: 15 int8 GEMMs a product at float64's
    # nominal 5 slices, 6 at float32's 3; the other engines keep the GEMM's
    h100 = [{"dgemm_gflops": 50_000.0, "datasheet_fp64_tensor_gflops": 66_900.0,
             "datasheet_int8_tensor_gops": 2_140_000.0, "tf32gemm_gflops": 400_000.0}] * 2
    c64, how64 = limits.flop_ceiling(h100, "float64", "cuda", "int8_slices")
    assert c64 == pytest.approx(2 * 2_140.0 / 15) and "int8 slices" in how64
    c32, _ = limits.flop_ceiling(h100, "float32", "cuda", "int8_slices")
    assert c32 == pytest.approx(2 * 2_140.0 / 6)
    assert limits.flop_ceiling(h100, "float64", "cuda", "tc_gram")[0] == pytest.approx(2 * 66.9)
    assert limits.flop_ceiling(peaks, "float64", "cuda", "int8_slices")[0] == ceiling  # no sheet
    ok = {"verified": True, "error": None, "tflops": 200.0}
    limits.judge(ok, 200.0, "TFLOP/s", ceiling, how)
    assert ok["verified"] and ok["pct_of_ceiling"] == pytest.approx(100 * 200 / 267.6)
    gb, by = limits.byte_ceiling([{"h2d_pinned_gbps": 50.0}] * 2, 30.0, "cuda")
    assert (gb, by) == (30.0, "host page-cache read 30.0 GB/s")
    too_fast = {"verified": True, "error": None, "e2e_gbps": 40.0}
    limits.judge(too_fast, 40.0, "GB/s", gb, by)
    assert not too_fast["verified"] and "page-cache" in too_fast["error"]


def test_table_fits_80_columns(quick, monkeypatch, capsys):
    monkeypatch.setattr(console, "width", 80)
    print_tables(quick)
    out = capsys.readouterr().out
    wide = [line for line in out.splitlines() if len(line) > 80]
    assert not wide, wide[:3]
    assert out.count("fixed cost of one compute()") == 1  # one line, every cluster on it
    assert "host read" in out and "corr_pairs_0.9" in out and "…" not in out


def test_unknown_workload_is_a_user_error(capsys):
    assert main(["--device", "cpu", "dask", "--workload", "nope"]) == 2
    assert "unknown dask workload" in capsys.readouterr().err
    assert main(["--device", "cpu", "dask", "--threads", "0"]) == 2
    assert "threads must be >= 1" in capsys.readouterr().err


def test_threads_per_worker(quick, tmp_path):
    """The clusters' threads per worker are recorded (1 by default); with two, tasks that
    share a worker's replica at once give the same results (checked against the one-worker
    cluster's, every record verified)."""
    one = [r for r in quick["results"] if r["params"].get("mode") in ("cluster", "processes")
           and r["variant"] in SERIES + FILES]
    assert one and all(r["params"]["threads_per_worker"] == 1 for r in one)
    out = tmp_path / "threads.json"
    assert main(["--device", "cpu", "dask", "--workload", "corrcoef,corr_pairs_0.9",
                 "--modes", "cluster", "--threads", "2", "--runs", "1", "--warmup", "0",
                 "--json", str(out)]) == 0
    recs = [r for r in json.loads(out.read_text())["results"] if r["variant"] in SERIES]
    assert len(recs) >= 4 and all(r["verified"] for r in recs), \
        [(r["variant"], r["error"]) for r in recs if not r["verified"]]
    assert all(r["params"]["threads_per_worker"] == 2 for r in recs)


def test_a_workload_for_four_gpus_runs_only_where_four_workers_are():
    from warplab.lab.campaigns.dask.bench import _runs_in
    from warplab.lab.campaigns.dask.modes import Mode

    ws = wl.chosen("table", ["corrcoef", "corrcoef_large"], None, None)
    names = {m: [w.name for w in _runs_in(ws, m)]
             for m in (Mode("direct", 1), Mode("cluster", 2, "tcp"), Mode("cluster", 4, "ucx"),
                       Mode("processes", 4, "tcp"))}
    assert names == {Mode("direct", 1): ["corrcoef"],
                     Mode("cluster", 2, "tcp"): ["corrcoef"],
                     Mode("cluster", 4, "ucx"): ["corrcoef", "corrcoef_large"],
                     Mode("processes", 4, "tcp"): ["corrcoef", "corrcoef_large"]}

"""The measurement harness on the host: stats, results JSON (schema 1) and the host timer."""
from __future__ import annotations

import copy
import dataclasses
import json
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from warplab.lab.harness import results, stats, timing


# ------------------------------------------------------------------------------- stats


def test_summarize_known_samples() -> None:
    s = stats.summarize([5.0, 1.0, 3.0, 2.0, 4.0])
    assert s["min"] == 1.0 and s["max"] == 5.0 and s["median"] == 3.0
    assert s["q10"] == pytest.approx(1.4) and s["q90"] == pytest.approx(4.6)
    assert s["noise"] == pytest.approx((4.6 - 1.4) / 3.0)
    assert s["samples"] == [5.0, 1.0, 3.0, 2.0, 4.0]  # in run order
    assert set(s) == {"min", "q10", "median", "q90", "max", "noise", "samples"}


def test_summarize_order_and_noise_random() -> None:
    rng = np.random.default_rng(3)
    for n in (1, 2, 3, 10, 101):
        a = rng.exponential(size=n) + 0.5
        s = stats.summarize(a)
        assert s["min"] <= s["q10"] <= s["median"] <= s["q90"] <= s["max"]
        assert s["median"] == pytest.approx(float(np.median(a)))
        assert s["noise"] == pytest.approx((s["q90"] - s["q10"]) / s["median"])
        assert all(isinstance(s[k], float) for k in ("min", "q10", "median", "q90", "max"))
    one = stats.summarize([2.5])
    assert one["min"] == one["median"] == one["max"] == 2.5 and one["noise"] == 0.0


def test_summarize_zero_median_and_empty() -> None:
    assert stats.summarize([0.0, 0.0, 0.0])["noise"] == 0.0
    with pytest.raises(ValueError):
        stats.summarize([])


def test_paired_ratio_pairs_rounds_not_pools() -> None:
    # per-round medians of run 26 (float32 2^10, us): two slow rounds, three fast ones; ours
    # is faster in every round, while the pooled medians of the 200 calls were 21.3 vs 19.3
    ours = [22.7, 22.2, 17.6, 17.9, 18.4]
    theirs = [23.5, 22.8, 18.3, 18.7, 18.8]
    r = stats.paired_ratio(theirs, ours)
    assert r == pytest.approx(float(np.median(np.divide(theirs, ours)))) and r > 1.0
    assert stats.paired_ratio(ours, ours) == 1.0
    assert stats.paired_ratio([], []) is None
    assert stats.paired_ratio([1.0, 2.0], [1.0]) is None
    assert stats.paired_ratio([1.0], [0.0]) is None


def test_call_table_shows_the_paired_speedup() -> None:
    from rich.console import Console

    from warplab.lab.harness.tables import call_table

    def rec(variant: str, provider: str, rounds: list[float] | None) -> dict:
        samples = [x for x in rounds or [0.02] for _ in range(4)]
        r = {"variant": variant, "provider": provider, "verified": True, "error": None,
             "params": {"dtype": "float32", "op": "sum", "size": 1024, "mode": "call"},
             "phases": {"kernel": stats.summarize(samples)}}
        if rounds is not None:
            r["round_medians"] = rounds
        return r

    records = [rec("persistent_vec", "warplab", [0.020, 0.010]),
               rec("cupy.sum", "cupy", [0.030, 0.020])]
    console = Console(width=200, record=True)
    console.print(call_table(records, "t"))
    rows = [line for line in console.export_text().splitlines() if "cupy.sum" in line]
    assert len(rows) == 1 and "1.75" in rows[0]  # median of 1.5 and 2.0
    records[1].pop("round_medians")  # an older results file: no pairing, no number
    console = Console(width=200, record=True)
    console.print(call_table(records, "t"))
    row = next(line for line in console.export_text().splitlines() if "cupy.sum" in line)
    assert "1.75" not in row and " - " in row


def test_gbps() -> None:
    assert stats.gbps(2_000_000, 1.0) == pytest.approx(2.0)
    assert stats.gbps(10, 0.0) is None


# ------------------------------------------------------------------------------ results


def st(m: float) -> dict:
    return stats.summarize([m * 0.9, m, m * 1.2])


def record(**over) -> dict:
    kw = dict(family="histogram", variant="numpy_chunked", provider="warplab", backend="cpu",
              params={"size": 4096, "data": "uniform", "bins": "ascii128"},
              phases={"kernel": st(0.5), "total": st(0.5)}, bytes_moved=4096 + 8 * 128,
              ceilings={"copy_gbps": 20.0}, verified=True, error=None)
    kw.update(over)
    return results.make_result(**kw)


@pytest.fixture
def meta(monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setenv("WARPLAB_COMMIT", "0123abc")
    return results.make_meta({"backend": "cpu", "name": "test cpu"}, {"copy_gbps": 20.0},
                             ["a note"])


@pytest.fixture
def doc(meta: dict) -> dict:
    return {"schema": results.SCHEMA, "meta": meta,
            "results": [record(), record(variant="other", verified=False, error="boom")]}


def test_make_meta(meta: dict) -> None:
    for k in ("device", "versions", "commit", "hostname", "timestamp", "ceilings", "notes"):
        assert k in meta
    assert meta["commit"] == "0123abc"
    assert meta["notes"] == ["a note"] and meta["ceilings"] == {"copy_gbps": 20.0}
    assert meta["versions"]["numpy"] == np.__version__


def test_make_result_speed() -> None:
    r = record()
    want = (4096 + 8 * 128) / (0.5e-3) / 1e9
    assert r["gbps"] == pytest.approx(want)
    assert r["pct_of_copy_bw"] == pytest.approx(100 * want / 20.0)
    assert r["phases"]["h2d"] is None and r["phases"]["d2h"] is None
    assert set(r["phases"]) == set(results.PHASES)
    assert r["verified"] is True and r["error"] is None
    assert r["bytes_moved"] == 4096 + 8 * 128


def test_make_result_no_speed_when_not_verified() -> None:
    r = record(verified=False, error="differs in 3 bins")
    assert r["gbps"] is None and r["pct_of_copy_bw"] is None and r["verified"] is False
    r = record(verified=False)
    assert r["gbps"] is None


def test_make_result_without_ceiling_or_kernel() -> None:
    r = record(ceilings={})
    assert r["gbps"] is not None and r["pct_of_copy_bw"] is None
    r = record(phases={})
    assert r["gbps"] is None and r["pct_of_copy_bw"] is None


def test_round_trip(tmp_path: Path, doc: dict) -> None:
    results.validate(doc)
    p = results.write(tmp_path / "sub" / "histogram.json", doc["meta"], doc["results"])
    assert p == tmp_path / "sub" / "histogram.json" and p.is_file()
    back = results.read(p)
    assert back == json.loads(json.dumps(doc))
    assert back["results"][0]["gbps"] == pytest.approx(doc["results"][0]["gbps"])


def test_gzip_results_read_and_load_like_plain_ones(tmp_path: Path, doc: dict) -> None:
    """A results file compressed by scripts/compact_results.py reads as the plain one did,
    and a folder holding it loads it in the report; nothing else in the folder changes."""
    import importlib.util

    from warplab.lab.report import load_results

    p = results.write(tmp_path / "old.json", doc["meta"], doc["results"])
    plain, before = results.read(p), load_results(tmp_path)
    (tmp_path / "small.txt").write_text("x")
    spec = importlib.util.spec_from_file_location(
        "compact_results", Path(__file__).resolve().parents[1] / "scripts" / "compact_results.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ((gz, old, new),) = mod.compact(tmp_path, over=10)
    assert gz == tmp_path / "old.json.gz" and not p.exists() and new < old
    assert results.read(gz) == plain
    assert sorted(q.name for q in tmp_path.iterdir()) == ["old.json.gz", "small.txt"]
    res = load_results(tmp_path)
    def rows(r):
        return [dataclasses.replace(x, source="") for x in r.ok_rows + r.failed_rows]

    assert rows(res) == rows(before)
    assert res.ok_rows and [s.path.name for s in res.sources] == ["old.json.gz"]
    gz.write_bytes(b"not gzip")
    with pytest.raises(ValueError, match="cannot read results file"):
        load_results(tmp_path)


def _broken(doc: dict, how: str) -> dict:
    d = copy.deepcopy(doc)
    r0 = d["results"][0]
    if how == "schema":
        d["schema"] = 2
    elif how == "no_schema":
        del d["schema"]
    elif how == "not_dict":
        return [d]  # type: ignore[return-value]
    elif how == "no_meta":
        del d["meta"]
    elif how.startswith("meta:"):
        del d["meta"][how[5:]]
    elif how == "results_not_list":
        d["results"] = {"0": r0}
    elif how.startswith("rec:"):
        del r0[how[4:]]
    elif how == "no_size":
        del r0["params"]["size"]
    elif how == "quantiles":
        r0["phases"]["kernel"]["q10"] = r0["phases"]["kernel"]["q90"] + 1
    elif how == "min_above_median":
        r0["phases"]["total"]["min"] = r0["phases"]["total"]["median"] * 2
    elif how == "stat_missing":
        del r0["phases"]["kernel"]["noise"]
    elif how == "verified_with_error":
        r0["error"] = "wrong"
    elif how == "unverified_with_gbps":
        d["results"][1]["gbps"] = 1.0
    else:
        raise AssertionError(how)
    return d


BROKEN = (["schema", "no_schema", "not_dict", "no_meta", "results_not_list", "no_size",
           "quantiles", "min_above_median", "stat_missing", "verified_with_error",
           "unverified_with_gbps"]
          + [f"meta:{k}" for k in ("device", "versions", "commit", "hostname", "timestamp",
                                   "ceilings", "notes")]
          + [f"rec:{k}" for k in ("family", "variant", "provider", "backend", "params", "phases",
                                  "bytes_moved", "gbps", "pct_of_copy_bw", "verified", "error")])


@pytest.mark.parametrize("how", BROKEN)
def test_validate_rejects(doc: dict, how: str, tmp_path: Path) -> None:
    bad = _broken(doc, how)
    with pytest.raises(ValueError):
        results.validate(bad)
    # write refuses it too, and read refuses such a file
    if how not in ("schema", "no_schema", "not_dict", "no_meta"):
        with pytest.raises(ValueError):
            results.write(tmp_path / "x.json", bad["meta"], bad["results"])
        assert not (tmp_path / "x.json").exists()
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(bad))
    with pytest.raises(ValueError):
        results.read(f)


def test_validate_names_the_problem(doc: dict) -> None:
    with pytest.raises(ValueError, match="meta.hostname"):
        results.validate(_broken(doc, "meta:hostname"))
    with pytest.raises(ValueError, match="quantiles"):
        results.validate(_broken(doc, "quantiles"))
    with pytest.raises(ValueError, match="gbps|speed"):
        results.validate(_broken(doc, "unverified_with_gbps"))
    with pytest.raises(ValueError, match="error"):
        results.validate(_broken(doc, "verified_with_error"))


def test_validate_accepts_null_phases(doc: dict) -> None:
    d = copy.deepcopy(doc)
    d["results"][0]["phases"]["kernel"] = None
    results.validate(d)
    d["results"] = []
    results.validate(d)


# ------------------------------------------------------------------------------- timing


def test_time_runs_phases_and_total() -> None:
    calls: list[str] = []

    def run(rec) -> None:
        calls.append("run")
        with rec.phase("h2d"):
            time.sleep(0.002)
        with rec.phase("kernel"):
            time.sleep(0.030)  # far longer than h2d: the order holds on a loaded host

    s = timing.time_runs(run, warmup=2, runs=4, cuda=False)
    assert len(calls) == 6
    assert set(s) == {"h2d", "kernel", "total"}
    assert all(len(v) == 4 for v in s.values())
    for h, k, t in zip(s["h2d"], s["kernel"], s["total"]):
        assert t == pytest.approx(h + k)
        assert h >= 1.9 and k >= 29.9  # milliseconds
        assert k > h


def test_time_runs_between_and_min_one_run() -> None:
    events: list[str] = []

    def run(rec) -> None:
        events.append("run")
        with rec.phase("kernel"):
            pass

    s = timing.time_runs(run, warmup=1, runs=0, cuda=False, between=lambda: events.append("b"))
    assert len(s["kernel"]) == 1 and len(s["total"]) == 1
    assert events == ["b", "run", "b", "run"]


def _sleepy(ms: float):
    count = [0]

    def run(rec) -> None:
        count[0] += 1
        with rec.phase("kernel"):
            time.sleep(ms / 1e3)

    return run, count


def test_max_seconds_reduces_runs_not_below_three() -> None:
    run, count = _sleepy(10)
    s = timing.time_runs(run, warmup=1, runs=50, cuda=False, max_seconds=0.001)
    assert len(s["kernel"]) == 3 and len(s["total"]) == 3
    assert count[0] == 4


def test_max_seconds_reduces_to_budget() -> None:
    run, _ = _sleepy(10)
    s = timing.time_runs(run, warmup=1, runs=50, cuda=False, max_seconds=0.1)
    assert 3 <= len(s["kernel"]) <= 11


def test_max_seconds_keeps_fewer_requested_runs() -> None:
    run, _ = _sleepy(5)
    assert len(timing.time_runs(run, warmup=1, runs=2, cuda=False,
                                max_seconds=0.0001)["kernel"]) == 2
    run, _ = _sleepy(1)
    assert len(timing.time_runs(run, warmup=1, runs=6, cuda=False,
                                max_seconds=100.0)["kernel"]) == 6
    # without warm-up there is no estimate: all runs
    run, _ = _sleepy(5)
    assert len(timing.time_runs(run, warmup=0, runs=5, cuda=False,
                                max_seconds=0.0001)["kernel"]) == 5


def _malformed(doc: dict, how: str) -> dict:
    d = copy.deepcopy(doc)
    r0 = d["results"][0]
    if how == "record_int":
        d["results"][0] = 1
    elif how == "phases_null":
        r0["phases"] = None
    elif how == "params_null":
        r0["params"] = None
    elif how == "quantile_null":
        r0["phases"]["kernel"]["q10"] = None
    else:
        raise AssertionError(how)
    return d


@pytest.mark.parametrize("how", ["record_int", "phases_null", "params_null", "quantile_null"])
def test_validate_malformed_is_value_error(doc: dict, how: str) -> None:
    with pytest.raises(ValueError):
        results.validate(_malformed(doc, how))


def test_git_commit_names_the_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WARPLAB_COMMIT", raising=False)
    got = results.git_commit()
    if got is None:
        pytest.skip("not a git checkout")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(results.__file__).parent,
                          capture_output=True, text=True).stdout.strip()
    assert got in (head, head + "-dirty")

"""``warplab compare``: matching, verdicts, the 80-column table, the figure, the JSON and the
CLI's exit statuses, on results documents built here (CPU only)."""
from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from warplab import cli
from warplab.lab.harness import compare as cmp
from warplab.lab.harness import results
from warplab.lab.report.compare_figure import ratio_figure

H100, H200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"
CEIL = {"copy_gbps": 3000.0}


@pytest.fixture(autouse=True)
def _commit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WARPLAB_COMMIT", "0123456789abcdef0123456789abcdef01234567")


def stats(median: float, noise: float = 0.02) -> dict:
    """Phase statistics with the given median and relative noise (Q90 - Q10) / median."""
    h = median * noise / 2
    return {"min": median - 2 * h, "q10": median - h, "median": median, "q90": median + h,
            "max": median + 2 * h, "noise": noise, "samples": [median]}


def rec(variant: str = "warp_shuffle", ms: float = 1.0, noise: float = 0.02, *,
        family: str = "reduce", provider: str = "warplab", backend: str = "cuda",
        verified: bool = True, error: str | None = None, phase: str = "kernel",
        **params: Any) -> dict:
    p = {"size": 1 << 24, "dtype": "float32", "op": "sum", "data": "random", "mode": "kernel",
         "pinned": False, "runs": 20, "warmup": 3, **params}
    r = results.make_result(family=family, variant=variant, provider=provider,
                            backend=backend, params=p, phases={phase: stats(ms, noise)},
                            bytes_moved=4 << 24, ceilings=CEIL, verified=verified, error=error)
    return r


def doc(records: list[dict], device: str = H100, **meta: Any) -> dict:
    d = {"schema": results.SCHEMA, "meta": {**results.make_meta(
        {"name": device, "backend": "cuda"}, CEIL), **meta}, "results": records}
    results.validate(d)
    return d


def write(tmp_path: Path, name: str, d: dict) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(d))
    return p


def only_pair(c: dict) -> dict:
    assert len(c["pairs"]) == 1, c["pairs"]
    return c["pairs"][0]


def run_main(capsys: pytest.CaptureFixture, *argv: Any) -> tuple[int, str, str]:
    rc = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def assert_one_line_error(rc: int, err: str, *needles: str) -> None:
    assert rc == 2
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("warplab: error: "), err
    for n in needles:
        assert n in lines[0], (n, err)


# ------------------------------------------------------------------------------- verdicts


def test_same_files_are_same() -> None:
    a = doc([rec("warp_shuffle", 1.0), rec("two_pass", 2.0), rec("cupy.sum", 1.5,
                                                                 provider="cupy")])
    c = cmp.compare(a, copy.deepcopy(a))
    assert [p["verdict"] for p in c["pairs"]] == ["SAME"] * 3
    assert all(p["ratio"] == 1.0 and p["phase"] == "kernel" for p in c["pairs"])
    assert c["only_a"] == c["only_b"] == [] and c["warnings"] == []
    assert c["counts"]["SAME"] == 3 and cmp.exit_status(c, True) == 0


@pytest.mark.parametrize("b_ms, verdict", [(0.8, "FASTER"), (1.25, "SLOWER"), (1.01, "SAME")])
def test_faster_slower_same(b_ms: float, verdict: str) -> None:
    p = only_pair(cmp.compare(doc([rec(ms=1.0)]), doc([rec(ms=b_ms)])))
    assert p["verdict"] == verdict
    assert p["ratio"] == pytest.approx(b_ms) and p["rel_diff"] == pytest.approx(b_ms - 1)
    assert p["a"]["median_ms"] == 1.0 and p["b"]["median_ms"] == pytest.approx(b_ms)
    assert p["bound"] == pytest.approx(0.02)


def test_within_noise_uses_the_larger_noise_of_either_file() -> None:
    # 5 % slower: beyond B's 1 % noise but within A's 8 % (and the other way round)
    for na, nb in ((0.08, 0.01), (0.01, 0.08)):
        p = only_pair(cmp.compare(doc([rec(ms=1.0, noise=na)]), doc([rec(ms=1.05, noise=nb)])))
        assert p["verdict"] == "SAME" and p["bound"] == pytest.approx(0.08)
    p = only_pair(cmp.compare(doc([rec(ms=1.0, noise=0.04)]), doc([rec(ms=1.05, noise=0.01)])))
    assert p["verdict"] == "SLOWER"
    # the boundary itself is SAME (nvbench: |diff| <= noise)
    p = only_pair(cmp.compare(doc([rec(ms=1.0, noise=0.25)]), doc([rec(ms=1.25, noise=0.0)])))
    assert p["verdict"] == "SAME"


def test_threshold_sets_a_minimum_difference() -> None:
    a, b = doc([rec(ms=1.0, noise=0.01)]), doc([rec(ms=1.05, noise=0.01)])
    assert only_pair(cmp.compare(a, b))["verdict"] == "SLOWER"
    p = only_pair(cmp.compare(a, b, threshold=10))
    assert p["verdict"] == "SAME" and p["bound"] == pytest.approx(0.10)
    # a threshold below the noise changes nothing: the bound is the larger one
    assert only_pair(cmp.compare(a, b, threshold=0.5))["bound"] == pytest.approx(0.01)
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="threshold"):
            cmp.compare(a, b, threshold=bad)


def test_failed_records_are_listed_never_compared() -> None:
    a = doc([rec("v1", 1.0, verified=False, error="got 3, want 4"), rec("v2", 1.0),
             rec("v3", 1.0)])
    b = doc([rec("v1", 9.0), rec("v2", 9.0, verified=False, error="relative error 1 above 0"),
             rec("v3", 9.0, verified=False, error="boom")])
    c = cmp.compare(a, b)
    assert [p["verdict"] for p in c["pairs"]] == ["FAILED"] * 3
    assert all(p["ratio"] is None and p["bound"] is None for p in c["pairs"])
    assert "in A" in c["pairs"][0]["reason"] and "in B" in c["pairs"][1]["reason"]
    assert c["counts"]["FAILED"] == 3 and c["counts"]["SLOWER"] == 0
    assert cmp.exit_status(c, fail_on_slower=True) == 0
    text = render(c)
    assert "got 3, want 4" in text and "relative error 1 above 0" in text
    assert "failed" in text and "not compared" in text


def test_unmatched_in_both_directions() -> None:
    a = doc([rec("both"), rec("only_a"), rec("both", size=1 << 20)])
    b = doc([rec("only_b"), rec("both", size=1 << 20), rec("both")])
    c = cmp.compare(a, b)
    assert [(p["variant"], p["config"]["size"]) for p in c["pairs"]] == [
        ("both", 1 << 24), ("both", 1 << 20)]  # in A's order
    assert [r["variant"] for r in c["only_a"]] == ["only_a"]
    assert [r["variant"] for r in c["only_b"]] == ["only_b"]
    assert c["counts"]["only_a"] == c["counts"]["only_b"] == 1
    text = render(c)
    assert "unmatched" in text and "only_a" in text and "only_b" in text


def test_run_specific_params_do_not_split_a_config() -> None:
    a = doc([rec(runs=20, warmup=3, held=True, checked_rows=64, rounds=5)])
    b = doc([rec(runs=7, warmup=1, held=False, checked_rows=8, rounds=9)])
    assert only_pair(cmp.compare(a, b))["verdict"] == "SAME"
    assert cmp.key(a["results"][0]) == cmp.key(b["results"][0])
    assert "runs" not in cmp.config(a["results"][0]) and "op" in cmp.config(a["results"][0])


@pytest.mark.parametrize("field, other", [
    ("mode", "call"), ("op", "max"), ("dtype", "int64"), ("size", 1 << 20), ("data", "equal"),
    ("shape", "square"), ("bins", "letters")])
def test_identifying_params_keep_configs_apart(field: str, other: Any) -> None:
    c = cmp.compare(doc([rec()]), doc([rec(**{field: other})]))
    assert c["pairs"] == [] and len(c["only_a"]) == len(c["only_b"]) == 1


def test_provider_and_backend_are_part_of_the_key() -> None:
    c = cmp.compare(doc([rec("x", provider="cupy")]), doc([rec("x"), rec("x", backend="cpu")]))
    assert c["pairs"] == [] and len(c["only_b"]) == 2


def test_different_devices_are_compared_but_flagged_first() -> None:
    c = cmp.compare(doc([rec(ms=1.0)]), doc([rec(ms=0.5)], device=H200))
    assert only_pair(c)["verdict"] == "FASTER"
    assert len(c["warnings"]) == 1 and H100 in c["warnings"][0] and H200 in c["warnings"][0]
    first = render(c).splitlines()[0]
    assert first.startswith("warning: different devices") and H200 in first
    assert not cmp.compare(doc([rec()]), doc([rec()]))["warnings"]


def test_total_phase_when_no_kernel_phase() -> None:
    c = cmp.compare(doc([rec(ms=2.0, phase="total")]), doc([rec(ms=3.0, phase="total")]))
    p = only_pair(c)
    assert p["phase"] == "total" and p["verdict"] == "SLOWER" and p["ratio"] == 1.5
    assert "* total phase" in render(c)
    # kernel in one file only: the common total phase, else untimed
    a = doc([rec(ms=2.0)])
    a["results"][0]["phases"]["total"] = stats(4.0)
    p = only_pair(cmp.compare(a, doc([rec(ms=4.4, phase="total")])))
    assert p["phase"] == "total" and p["ratio"] == pytest.approx(1.1)
    p = only_pair(cmp.compare(doc([rec(ms=2.0)]), doc([rec(ms=2.0, phase="total")])))
    assert p["verdict"] == "UNTIMED" and p["ratio"] is None


def test_time_units_are_converted() -> None:
    b = doc([rec(ms=1000.0)], time_unit="us")  # 1000 us = 1 ms
    p = only_pair(cmp.compare(doc([rec(ms=1.0)]), b))
    assert p["b"]["median_ms"] == pytest.approx(1.0) and p["verdict"] == "SAME"


def test_repeated_configs_pair_in_file_order_with_a_warning() -> None:
    c = cmp.compare(doc([rec(ms=1.0), rec(ms=2.0)]), doc([rec(ms=1.0), rec(ms=2.0), rec()]))
    assert [p["ratio"] for p in c["pairs"]] == [1.0, 1.0]
    assert len(c["only_b"]) == 1
    assert any(w.startswith("A records reduce") for w in c["warnings"])
    assert any(w.startswith("B records reduce") for w in c["warnings"])


# ------------------------------------------------------------------------------- text


def render(c: dict, width: int = 80) -> str:
    con = Console(width=width, record=True, file=io.StringIO())
    for item in cmp.renderables(c):
        con.print(item)
    return con.export_text()


def test_table_fits_80_columns() -> None:
    long_err = "relative error 3.2e-05 above 1e-06 " * 6
    a = doc([rec("warp_shuffle", 0.105), rec("two_pass", 0.21, noise=0.3),
             rec("cupy.sum", 0.15, provider="cupy"),
             rec("k2_rows_block_with_a_rather_long_variant_name", 61.0, family="reduce_axis",
                 shape="1000x100000", m=1000, n=100000, layout="rows", acc="float32",
                 data="random_walk", seed=7, start=100, eps=0.01),
             rec("global", 1.7, family="histogram", bins="bytes", nbins=256),
             rec("only_in_a", 2.0, family="matmul", shape="4096x8192x1024")])
    b = copy.deepcopy(a)
    b["meta"]["device"]["name"] = H200 + " with a long device name " * 3
    b["results"][0]["phases"]["kernel"] = stats(0.09)
    b["results"][2]["phases"]["kernel"] = stats(0.2)
    b["results"][4].update(verified=False, error=long_err, gbps=None, pct_of_copy_bw=None)
    b["results"][5]["params"]["shape"] = "8192x8192x1024"
    c = cmp.compare(a, b, threshold=3, sources=("runs/" + "a" * 120 + ".json", "b.json"))
    text = render(c)
    widths = [len(line) for line in text.splitlines()]
    assert max(widths) <= 80, text
    for needle in ("FASTER", "SLOWER", "SAME", "FAILED", "unmatched", "0.857", "±3.0%"):
        assert needle in text, needle
    assert text.splitlines()[-1].startswith("5 pairs: 1 faster, 1 slower, 2 same, 1 failed")
    print(text)


def test_fmt_ms_units() -> None:
    assert cmp.fmt_ms(0.105) == "105.0 µs" and cmp.fmt_ms(1.7) == "1.700 ms"
    assert cmp.fmt_ms(2500.0) == "2.500 s" and cmp.fmt_ms(5e-6) == "5.000 ns"
    assert cmp.fmt_ms(None) == "—"


def test_labels_are_short() -> None:
    r = rec("k2", family="reduce_axis", shape="10x20", m=10, n=20, size=200, runs=5)
    assert cmp.label(r) == "k2 float32 sum 10x20 size=200 data=random mode=kernel pinned=false"
    assert cmp.label(rec("sum", provider="torch", size=10**8), {"pinned", "mode"}) == \
        "sum (torch) float32 sum size=1e8 data=random"


# ------------------------------------------------------------------------------- files, CLI


def test_cli_compare_prints_and_exits(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    fa = write(tmp_path, "a.json", doc([rec("fast", 1.0), rec("slow", 1.0), rec("same", 1.0)]))
    fb = write(tmp_path, "b.json", doc([rec("fast", 0.5), rec("slow", 2.0), rec("same", 1.0)],
                                       device=H200))
    rc, out, err = run_main(capsys, "compare", fa, fb)
    assert rc == 0, err
    assert out.splitlines()[0].startswith("warning: different devices")
    assert "FASTER" in out and "SLOWER" in out and "SAME" in out
    assert max(len(line) for line in out.splitlines()) <= 80, out
    rc, _, _ = run_main(capsys, "compare", fa, fb, "--fail-on-slower")
    assert rc == 1
    rc, _, _ = run_main(capsys, "compare", fa, fb, "--fail-on-slower", "--threshold", "150")
    assert rc == 0  # a 2x slowdown within a 150 % threshold
    rc, _, _ = run_main(capsys, "compare", fa, fa, "--fail-on-slower")
    assert rc == 0


def test_cli_json_and_figure(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    fa = write(tmp_path, "a.json", doc([rec("x", 1.0), rec("y", 1.0, family="histogram",
                                                            bins="bytes"), rec("gone")]))
    fb = write(tmp_path, "b.json", doc([rec("x", 0.7), rec("y", 1.4, family="histogram",
                                                            bins="bytes"), rec("new")]))
    fig, js = tmp_path / "out" / "ratio.png", tmp_path / "out" / "cmp.json"
    rc, out, err = run_main(capsys, "compare", fa, fb, "--figure", fig, "--json", js)
    assert rc == 0, err
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and fig.stat().st_size > 1000
    c = json.loads(js.read_text())
    assert c["kind"] == "warplab.compare" and c["a"]["source"] == str(fa)
    assert [p["verdict"] for p in c["pairs"]] == ["FASTER", "SLOWER"]
    assert [r["variant"] for r in c["only_a"]] == ["gone"]
    assert [r["variant"] for r in c["only_b"]] == ["new"]
    assert str(fig) in out and str(js) in out
    # the figure is a function of the JSON alone, and draws with nothing to compare too
    empty = cmp.compare(doc([rec("p")]), doc([rec("q")]))
    assert ratio_figure(empty, tmp_path / "empty.png").read_bytes()[:4] == b"\x89PNG"
    assert ratio_figure(c, tmp_path / "again.png").stat().st_size > 1000


def test_load_reads_gzip_results_as_plain_ones(tmp_path: Path) -> None:
    """benchmarks/results keeps large campaigns as .json.gz: compare reads them as .json."""
    import gzip

    plain = write(tmp_path, "a.json", doc([rec()]))
    gz = tmp_path / "a.json.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    assert cmp.load(gz) == cmp.load(plain)


def _bad_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    good = doc([rec()])
    no_meta = copy.deepcopy(good)
    del no_meta["meta"]["hostname"]
    bad_noise = copy.deepcopy(good)
    bad_noise["results"][0]["phases"]["kernel"]["noise"] = "high"
    cases = {
        "missing": (tmp_path / "nope.json", "no such results file"),
        "not json": (tmp_path / "x.json", "is not JSON"),
        "binary": (tmp_path / "x.bin", "is not JSON"),
        "bad gzip": (tmp_path / "x.json.gz", "is not JSON"),
        "folder": (tmp_path, "is a folder"),
        "wrong schema": (write(tmp_path, "s2.json", {**good, "schema": 2}), "schema 1"),
        "a list": (write(tmp_path, "list.json", [good]), "schema 1"),
        "meta lacks a key": (write(tmp_path, "m.json", no_meta), "meta.hostname missing"),
        "record lacks a key": (write(tmp_path, "r.json", {**good, "results": [{"family": "x"}]}),
                               "results[0] lacks"),
        "noise not a number": (write(tmp_path, "n.json", bad_noise), "noise"),
    }
    (tmp_path / "x.json").write_text("{not json")
    (tmp_path / "x.bin").write_bytes(b"\xff\xfe\x00garbage")
    (tmp_path / "x.json.gz").write_bytes(b"not gzip")
    return cases


@pytest.mark.parametrize("case", ["missing", "not json", "binary", "bad gzip", "folder",
                                  "wrong schema",
                                  "a list", "meta lacks a key", "record lacks a key",
                                  "noise not a number"])
@pytest.mark.parametrize("side", ["a", "b"])
def test_bad_files_exit_2_with_one_line(case: str, side: str, tmp_path: Path,
                                        capsys: pytest.CaptureFixture) -> None:
    path, needle = _bad_files(tmp_path)[case]
    good = write(tmp_path, "good.json", doc([rec()]))
    argv = ["compare", path, good] if side == "a" else ["compare", good, path]
    rc, out, err = run_main(capsys, *argv)
    assert_one_line_error(rc, err, needle)
    if case != "folder":
        assert path.name in err
    with pytest.raises((ValueError, FileNotFoundError)):
        cmp.load(path)


def test_negative_threshold_is_a_user_error(tmp_path: Path,
                                           capsys: pytest.CaptureFixture) -> None:
    f = write(tmp_path, "a.json", doc([rec()]))
    rc, _, err = run_main(capsys, "compare", f, f, "--threshold", "-5")
    assert_one_line_error(rc, err, "--threshold")


def test_load_round_trips_results_write(tmp_path: Path) -> None:
    d = doc([rec()])
    p = results.write(tmp_path / "r.json", d["meta"], d["results"])
    assert cmp.load(p) == json.loads(p.read_text())
    c = cmp.compare_files(p, p)
    assert c["a"]["source"] == str(p) and only_pair(c)["verdict"] == "SAME"

"""``warplab dask`` / ``warplab bench dask`` on the cpu backend: the quick campaign end to end
(LocalCluster processes), valid results JSON, every record verified."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("distributed")

from warplab.lab.harness.results import validate  # noqa: E402
from warplab.lab.cli import main  # noqa: E402


def test_quick_campaign(tmp_path):
    out = tmp_path / "dask.json"
    assert main(["--device", "cpu", "dask", "--runs", "1", "--warmup", "0",
                 "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    validate(doc)
    recs = doc["results"]
    assert all(r["verified"] for r in recs)
    seen = {(r["variant"], r["params"]["mode"], r["params"]["workers"]) for r in recs}
    for w in ("corr_pairs", "corrcoef", "histogram_files"):
        assert {(w, "direct", 1), (w, "cluster", 1), (w, "cluster", 2)} <= seen
    assert {("fixed_cost", "cluster", 1), ("fixed_cost", "cluster", 2)} <= seen
    one = [r for r in recs if r["params"]["mode"] == "cluster" and r["params"]["workers"] == 1
           and r["variant"] != "fixed_cost"]
    assert all(r["speedup"] == 1.0 and r["overhead_pct"] is not None for r in one)


def test_unknown_workload_is_a_user_error(capsys):
    assert main(["--device", "cpu", "dask", "--workload", "nope"]) == 2
    assert "unknown dask workload" in capsys.readouterr().err

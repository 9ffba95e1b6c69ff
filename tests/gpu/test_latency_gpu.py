"""GPU test of the latency campaign (``pytest -m gpu`` on the GPU machine): a short quick run
on device-resident inputs completes, every record (warplab's, CuPy's, PyTorch's, the floor's)
is verified against the NumPy float64 reference and holds its samples; the comparators that
import are there. Timings are not asserted."""
from __future__ import annotations

import pytest

import warplab
from warplab.lab.harness.comparators import probe_module
from warplab.lab.harness.results import validate
from warplab.lab.campaigns.latency import bench as lb
from warplab.lab.campaigns.latency.cases import CASES

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)
cupy = pytest.importorskip("cupy")

SHORT = lb.LatencyCampaign(rounds=2, calls=10, bursts=2, burst=50, warmup=3)


@pytest.fixture(scope="module")
def doc() -> dict:
    saved = lb.LATENCY_CAMPAIGNS["quick"]
    lb.LATENCY_CAMPAIGNS["quick"] = SHORT
    try:
        return lb.run_latency(backend="cuda", json_path=None)
    finally:
        lb.LATENCY_CAMPAIGNS["quick"] = saved


def test_every_record_verified(doc: dict) -> None:
    validate(doc)
    bad = [(r["params"]["case"], r["variant"], r["error"]) for r in doc["results"]
           if not r["verified"]]
    assert not bad, bad
    for r in doc["results"]:
        p = r["params"]
        assert r["backend"] == "cuda" and p["input"] == "device"
        n = SHORT.rounds * SHORT.calls if p["mode"] == "call_latency" else SHORT.bursts
        assert len(r["phases"]["total"]["samples"]) == n


def test_cases_providers_and_floor(doc: dict) -> None:
    libs = ["warplab"] + [lib for lib in ("cupy", "torch") if probe_module(lib) is None]
    for case in CASES:
        recs = [r for r in doc["results"] if r["params"]["case"] == case.name]
        assert {r["provider"] for r in recs} == set(libs), case.name
        assert {r["params"]["mode"] for r in recs} == {"call_latency", "host_per_call"}
        assert any(r["variant"] == case.function for r in recs)
    floor = {(r["variant"], r["params"]["mode"]): r for r in doc["results"]
             if r["params"]["case"] == lb.FLOOR_CASE}
    assert len(floor) == 8 and all(r["phases"]["total"]["median"] > 0 for r in floor.values())
    assert {v for v, _ in floor} == {"floor", "floor_d2h", "floor_launch", "floor_result"}
    assert all(r["verified"] for r in floor.values())  # floor_result: int() read back 42
    assert {r["provider"] for (v, _), r in floor.items() if v.startswith("floor_")
            and v != "floor_d2h"} == {"warplab"}

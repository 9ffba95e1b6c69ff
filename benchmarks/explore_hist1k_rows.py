"""histogram_1k and mean_rows_64 (issue 15): the short paths before and after branch hist1k,
next to PyTorch and CuPy in the same run (GPU machine; not part of the package's API).

Cases as the latency campaign's (``lab/campaigns/latency/cases.py``): ``histogram(x, 64, (0, 1))``
of 1,024 float32, ``mean(x, axis=1)`` of 64 x 64 float32. Implementations per case:

* ``warplab``: the public call (this branch: the one-block histogram kernel, no template copy;
  the axis record without a closure or a ``fire`` frame);
* ``warplab_before``: the session-11 short path restated here on this branch's records
  (histogram: the template form of ``hist_plan.Record`` (``LaunchConfig(one_block=False)``): cupy.empty,
  one device-to-device cudaMemcpyAsync, two arrays, the atomic kernel; mean: the closure per
  lookup, ``axis_cuda.fire``);
* the campaign's comparators (``torch.histc``, ``torch.mean``, ``cupy.mean``; CuPy has no
  histogram with this call shape in the campaign).

Timing: the campaign's ``measure_group`` ("table": 6 rounds x 500 calls of call latency, 9
bursts of 1,000 back-to-back calls of host time per call), repeated ``--repeats`` times in
alternating order (noise); every implementation verified against NumPy first. Then the
pieces of a warm call, host time per call (median of 9 bursts of 1,000): key building, the
device and stream queries, allocations, the array constructions, the copy, the launches.

Usage: PYTHONPATH=$PWD/src timeout 240 python3 benchmarks/explore_hist1k_rows.py --out F.json
"""
from __future__ import annotations

import argparse
import json
import math
import sys

import cupy
import numpy as np
from explore_small_call_costs import host_us

import warplab
from warplab.core import fastpath, registry
from warplab.families.histogram import api as hist_api, hist_plan
from warplab.families.histogram.config import LaunchConfig
from warplab.lab.campaigns.latency.bench import (
    LATENCY_CAMPAIGNS,
    _impl,
    case_impls,
    measure_group,
)
from warplab.lab.campaigns.latency.cases import CASES, to_device
from warplab.families.reduce import axis_cuda, axis_fast

_I64 = np.dtype(np.int64)
TEMPLATED = LaunchConfig(one_block=False)


def hist_before(rec_cache: fastpath.PlanCache):
    """The session-11 histogram short path (template copy) on a templated record."""
    def call(d: dict) -> tuple:
        a, bins, rng = d["x"], 64, (0.0, 1.0)
        key = hist_plan.key(a, bins, rng, None, None, None, None, TEMPLATED)
        rec = rec_cache.get(key)
        if rec is None:
            rec = rec_cache.put(key, hist_plan.build(a, bins, rng, None, None, None, None,
                                                     TEMPLATED, True))
        registry.ran(rec.variant)
        mem = cupy.empty(rec.nbytes, np.uint8).data
        mem.copy_from_device_async(rec.template, rec.nbytes)
        out = cupy.ndarray(rec.shape, _I64, mem)
        edges = cupy.ndarray(rec.e_shape, rec.e_dtype, mem + rec.offset)
        rec.launch((a, rec.n, a, *rec.rest, out))
        return out, edges
    return call


def mean_before(d: dict):
    """The session-11 axis short path: a closure per lookup, ``fire``'s frame."""
    a, op, axis, keepdims, ddof = d["x"], "mean", 1, False, 0
    key = (op, a.dtype, a.shape, a.strides, a.data.ptr % 16 == 0, axis, keepdims, ddof,
           cupy.cuda.runtime.getDevice())
    rec = axis_fast._RECORDS.record(key, lambda: axis_fast._build(a, op, axis, keepdims, ddof))
    registry.ran(rec.variant)
    out = axis_cuda._empty(rec.shape, rec.dtype)
    axis_cuda.fire(rec.launch, a, out)
    return out


def per_call_us(fn, burst: int = 1000, bursts: int = 9) -> float:
    """Median host time per call (us) over bursts of back-to-back calls (synchronised
    outside the timing), after 50 warm-up calls."""
    for _ in range(50):
        fn()
    return host_us(fn, burst, bursts)


def pieces(x_h: cupy.ndarray, x_m: cupy.ndarray) -> dict[str, float]:
    """Host time per call of the pieces of the two warm calls."""
    import torch

    warplab.histogram(x_h, 64, (0.0, 1.0))
    warplab.mean(x_m, axis=1)
    h_rec = next(r for r in hist_api._HIST_PLANS._plans.values()
                 if isinstance(r, hist_plan.Record))
    t_rec = hist_plan.build(x_h, 64, (0.0, 1.0), None, None, None, None, TEMPLATED, True)
    m_rec = next(r for r in axis_fast._RECORDS._plans.values() if r)
    out_m = cupy.empty(64, np.float32)
    mem = cupy.cuda.alloc(h_rec.nbytes)
    out_h = cupy.ndarray(h_rec.shape, _I64, mem)
    edges = cupy.ndarray(h_rec.e_shape, h_rec.e_dtype, mem + h_rec.offset)
    go = m_rec.launch
    t_x = torch.from_dlpack(x_m)
    t_h = torch.from_dlpack(x_h)
    rng = (0.0, 1.0)
    fns = {
        "getDevice()": cupy.cuda.runtime.getDevice,
        "get_current_stream().ptr": lambda: cupy.cuda.get_current_stream().ptr,
        "registry.ran": lambda: registry.ran(m_rec.variant),
        "hist key (range key + tuple)": lambda: (
            x_h.dtype, x_h.shape, x_h.strides, 64, hist_plan._range_key(rng),
            cupy.cuda.runtime.getDevice(), 0),
        "mean key (tuple)": lambda: (
            "mean", x_m.dtype, x_m.shape, x_m.strides, x_m.data.ptr % 16 == 0, 1, False, 0,
            cupy.cuda.runtime.getDevice()),
        "records.get(mean key)": lambda: axis_fast._RECORDS.get(
            ("mean", x_m.dtype, x_m.shape, x_m.strides, x_m.data.ptr % 16 == 0, 1, False, 0,
             cupy.cuda.runtime.getDevice())),
        "cupy.empty(64, f32)": lambda: cupy.empty(64, np.float32),
        "cupy.ndarray((64,), f32)": lambda: cupy.ndarray((64,), np.float32),
        "axis_cuda._empty((64,), f32)": lambda: axis_cuda._empty((64,), np.dtype(np.float32)),
        "cupy.cuda.alloc(hist nbytes)": lambda: cupy.cuda.alloc(h_rec.nbytes),
        "cupy.empty(hist nbytes, u8).data": lambda: cupy.empty(h_rec.nbytes, np.uint8).data,
        "cupy.ndarray on a pointer": lambda: cupy.ndarray(h_rec.shape, _I64, mem),
        "template cudaMemcpyAsync": lambda: mem.copy_from_device_async(t_rec.template,
                                                                       t_rec.nbytes),
        "hist launch, one block": lambda: h_rec.launch(
            (x_h, h_rec.n, x_h, *h_rec.rest, out_h, edges)),
        "hist launch, templated": lambda: t_rec.launch((x_h, t_rec.n, x_h, *t_rec.rest, out_h)),
        "mean launch (Prepared)": lambda: go.go(x_m, *go.mid, out_m, *go.tail),
        "warplab.histogram": lambda: warplab.histogram(x_h, 64, (0.0, 1.0)),
        "warplab.mean(axis=1)": lambda: warplab.mean(x_m, axis=1),
        "axis_fast.reduce": lambda: axis_fast.reduce(x_m, "mean", 1, False, 0),
        "torch.empty(64, cuda)": lambda: torch.empty(64, device=t_x.device),
        "torch.histc": lambda: torch.histc(t_h, bins=64, min=0.0, max=1.0),
        "torch.mean(dim=1)": lambda: torch.mean(t_x, dim=1),
    }
    return {name: per_call_us(fn) for name, fn in fns.items()}


def extra_checks() -> list[str]:
    """The new histogram path against NumPy on a few more inputs (edges, NaN, out of range,
    n = 1, the one-block limit and one above); returns the failures."""
    bad = []
    g = np.random.default_rng(1)
    for n in (1, 1000, 1024, 1025, 4096):
        for bins, rng in ((1, (0, 1)), (64, (0.0, 1.0)), (256, (-0.5, 1.5))):
            h = g.random(n, dtype=np.float32)
            h[::7] = np.linspace(rng[0], rng[1], bins + 1, dtype=np.float32)[
                g.integers(0, bins + 1, len(h[::7]))]
            h[::11] = np.nan
            h[::13] = 2.5
            want = np.histogram(h, bins, rng)
            for _ in range(2):
                got = [a.get() for a in warplab.histogram(cupy.asarray(h), bins, rng)]
                if not (np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
                        and got[1].dtype == want[1].dtype):
                    bad.append(f"histogram n={n} bins={bins} range={rng}")
    return bad


def _median(rec: dict) -> float:
    tot = rec.get("phases", {}).get("total")
    return tot["median"] * 1e3 if tot else math.nan


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    c = LATENCY_CAMPAIGNS["table"]
    cases = {k.name: k for k in CASES if k.name in ("histogram_1k", "mean_rows_64")}
    records: list[dict] = []
    for rep in range(args.repeats):
        for name in (("histogram_1k", "mean_rows_64") if rep % 2 == 0
                     else ("mean_rows_64", "histogram_1k")):
            case = cases[name]
            impls, size, _ = case_impls(case, "cuda", True)
            h_inputs = case.make(np.random.default_rng(sum(map(ord, case.name))))
            d = to_device(h_inputs)  # the data case_impls made, a copy of it
            before = hist_before(fastpath.PlanCache("explore.hist_before")) \
                if name == "histogram_1k" else mean_before
            ref = case.reference(h_inputs)
            fn = (lambda dd, b=before: b(dd)[0]) if name == "histogram_1k" else before
            impls.insert(1, _impl(case, "before", "warplab_before", "session-11 short path",
                                  fn, d, ref, cupy.cuda.get_current_stream().synchronize))
            order = impls if rep % 2 == 0 else impls[::-1]
            for r in measure_group(case.name, case.what, size, "cuda", order, c, {}):
                r["params"]["repeat"] = rep
                records.append(r)
    x_h = cupy.asarray(cases["histogram_1k"].make(np.random.default_rng(0))["x"])
    x_m = cupy.asarray(cases["mean_rows_64"].make(np.random.default_rng(0))["x"])
    parts = pieces(x_h, x_m)
    bad = extra_checks()
    print(f"{'case':14} {'impl':16} {'rep':>3} {'call us':>8} {'host us':>8} ok")
    table: dict[tuple, dict] = {}
    for r in records:
        p = r["params"]
        key = (p["case"], r.get("provider", ""), r["variant"], p["repeat"])
        table.setdefault(key, {})[p["mode"]] = _median(r)
        table[key]["ok"] = r.get("verified")
    for (case, prov, var, rep), v in sorted(table.items()):
        label = prov if prov.startswith("warplab") else var
        print(f"{case:14} {label:16} {rep:>3} {v.get('call_latency', math.nan):8.1f} "
              f"{v.get('host_per_call', math.nan):8.2f} {v.get('ok')}")
    print("\npieces, host us per call (median of 9 bursts of 1,000):")
    for k, v in parts.items():
        print(f"  {k:34} {v:7.2f}")
    print("extra histogram checks:", "all OK" if not bad else f"FAILED {bad}")
    with open(args.out, "w") as f:
        json.dump({"records": records, "pieces_us": parts, "extra_failures": bad,
                   "device": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(),
                   "launch": __import__("warplab.core.launch", fromlist=["status"]).status()},
                  f, indent=1, default=str)
    return 1 if bad or not all(v.get("ok") for v in table.values()) else 0


if __name__ == "__main__":
    sys.exit(main())

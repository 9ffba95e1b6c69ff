"""Small calls of issue 15 part B on the GPU: main's path next to this branch's and PyTorch's,
in one run (call latency with the result on the host, and host time per call over bursts of
back-to-back calls), plus correctness checks of the new short paths.

    PYTHONPATH=$PWD/src timeout 240 python3 benchmarks/explore_small_calls.py --out $OUT/small.json

Implementations per case (``warplab.lab.campaigns.latency.cases``):

* ``new``: the case's call as a user writes it (this branch's default path);
* ``main``: the same call forced through main's path: ``corrcoef(x, variant="tc_gram")`` (main's
  default for 8 x 64 on sm_80+), ``copy_batched`` through ``memcpy.api.copy_pairs`` with
  ``CopyConfig(table_buffers=0)`` (the pinned ring); cases this branch did not change run
  their call twice (a noise estimate);
* torch (and cupy with ``--cupy``) from the latency campaign's comparators; the floor (empty
  launch + sync).

Prints a compact table (medians, us) and the checks; writes everything to ``--out`` (JSON).
"""
from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np

import warplab
from warplab.lab.campaigns.latency import bench as lb
from warplab.lab.campaigns.latency.cases import CASES, to_device
from warplab.lab.campaigns.latency.comparators import comparators, to_torch

NAMES = ("corrcoef_8x64", "copy_batched_8", "memcpy_batched_8", "matmul_64", "histogram_1k",
         "bincount_1k")
CAMPAIGN = lb.LatencyCampaign(rounds=4, calls=300, bursts=5, burst=1000, warmup=30)


def _main_path(name: str, call: Callable[..., Any]) -> tuple[str, Callable]:
    from warplab.families.memcpy import api as mc_api
    from warplab.families.memcpy.plan import CopyConfig

    if name == "corrcoef_8x64":
        return "main (variant=tc_gram)", lambda d: warplab.corrcoef(d["x"], variant="tc_gram")
    if name == "copy_batched_8":
        ring = CopyConfig(table_buffers=0)
        return "main (ring)", lambda d: mc_api.copy_pairs(d["srcs"], d["dsts"], None, None, ring)
    return "same call (unchanged)", lambda d: call(d)


def _impls(case: Any, with_cupy: bool) -> list[lb.Impl]:
    h = case.make(np.random.default_rng(sum(map(ord, case.name))))
    ref = case.reference(h)
    d = to_device(h)
    sync = lb._sync("cuda")
    out = [lb._impl(case, "new", "warplab", case.code, lambda x: case.call(x), d, ref,
                    sync)]
    label, fn = _main_path(case.name, case.call)
    out.append(lb._impl(case, "main", "warplab", label, fn, d, ref, sync))
    comps, _ = comparators(case.name, True)
    for c in comps:
        if c.library == "torch" or with_cupy:
            inputs = to_torch(d) if c.library == "torch" else d
            out.append(lb._impl(case, c.name, c.library, c.name, c.run, inputs, ref, sync))
    return out


def _check_corrcoef() -> dict:
    """fused_small against NumPy and the tc_gram path around the thresholds, with constant,
    NaN and inf series; the warning; bit symmetry."""
    import cupy

    rows = []
    rng = np.random.default_rng(5)
    for m, n, dt in ((2, 2, np.float32), (8, 64, np.float32), (8, 64, np.float64),
                     (64, 64, np.float32), (65, 63, np.float64), (8, 512, np.float32),
                     (8, 513, np.float32), (2, 2048, np.float64), (33, 100, np.float64)):
        h = np.cumsum(rng.standard_normal((m, n)), axis=1).astype(dt)
        h[m // 2] = 0.5
        if m > 3:
            h[1, n // 2] = np.nan
            h[2, 0] = np.inf
        x = cupy.asarray(h)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with warplab.record_variants() as ran:
                got = warplab.corrcoef(x).get()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            old = warplab.corrcoef(x, variant="tc_gram").get()
            want = np.corrcoef(h.astype(np.float64))
        nan_ok = bool(np.array_equal(np.isnan(got), np.isnan(want)))
        ok = ~np.isnan(want)
        err = float(np.abs(got[ok] - want[ok]).max()) if ok.any() else 0.0
        diff = float(np.abs(got[ok] - old[ok]).max()) if ok.any() else 0.0
        nan_bits = bool((got[np.isnan(got)].view(np.uint64) == 0x7FF8000000000000).all())
        rows.append({"m": m, "n": n, "dtype": np.dtype(dt).name,
                     "variant": [r.variant for r in ran], "warned": len(w),
                     "nan_pattern": nan_ok, "nan_bits": nan_bits, "err_vs_numpy": err,
                     "diff_vs_tc_gram": diff, "symmetric": bool(np.array_equal(
                         np.nan_to_num(got), np.nan_to_num(got.T))),
                     "ok": nan_ok and nan_bits and err < 1e-12 and len(w) == 1})
    return {"rows": rows, "ok": all(r["ok"] for r in rows)}


def _check_copies() -> dict:
    """args_table against the expected bytes for sizes and alignments at its limits."""
    import cupy

    from warplab.families.memcpy import table_cuda

    rng = np.random.default_rng(7)
    rows = []
    for sizes in ([1024] * 8, [0, 1, 3, 15, 16, 17, 31, 33, 255, 4097],
                  [table_cuda.MAX_BYTES] * 3 + [table_cuda.MAX_BYTES - 1],
                  [5] * table_cuda.MAX_BUFFERS, [table_cuda.MAX_BYTES + 1, 7]):
        for off in (0, 1, 4, 8):
            pool = cupy.asarray(rng.integers(0, 256, sum(sizes) + 64 * len(sizes) + 64,
                                             dtype=np.uint8))
            dpool = cupy.full(pool.size, 0xA5, np.uint8)
            srcs, dsts, at = [], [], 0
            for i, n in enumerate(sizes):
                srcs.append(pool[at + off:at + off + n])
                dsts.append(dpool[at + (i % 16):at + (i % 16) + n])
                at += n + 64
            with warplab.record_variants() as ran:
                warplab.copy_batched(srcs, dsts)
            good = all(bool((s == t).all()) for s, t in zip(srcs, dsts))
            rows.append({"sizes": len(sizes), "largest": max(sizes), "offset": off,
                         "variant": [r.variant for r in ran], "ok": good})
    return {"rows": rows, "ok": all(r["ok"] for r in rows)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--cupy", action="store_true", help="also time CuPy's calls")
    args = ap.parse_args()
    import cupy

    t0 = time.time()
    report: dict[str, Any] = {"device": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(),
                              "campaign": CAMPAIGN.__dict__, "cases": {}, "checks": {}}
    for name, check in (("corrcoef", _check_corrcoef), ("copy_batched", _check_copies)):
        try:
            report["checks"][name] = check()
        except Exception as exc:  # noqa: BLE001
            report["checks"][name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    floor = lb.measure_group("floor", "empty launch", 0, "cuda", lb.floor_impls(), CAMPAIGN, {})
    report["floor"] = floor
    print(f"{'case':18} {'impl':26} {'latency us':>11} {'host us':>9}  ok")
    fl: dict[str, dict[str, float]] = {}
    for rec in floor:
        fl.setdefault(rec["variant"], {})[rec["params"]["mode"]] = \
            (rec["phases"].get("total") or {}).get("median", 0.0) * 1e3
    for variant, v in fl.items():
        print(f"{'floor':18} {variant:26} {v.get('call_latency', 0):>11.1f} "
              f"{v.get('host_per_call', 0):>9.1f}")
    for case in (c for c in CASES if c.name in NAMES):
        impls = _impls(case, args.cupy)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            recs = lb.measure_group(case.name, case.what, 0, "cuda", impls, CAMPAIGN, {})
        report["cases"][case.name] = recs
        by = {}
        for r in recs:
            med = (r["phases"].get("total") or {}).get("median")
            by.setdefault((r["variant"], r["provider"]), {})[r["params"]["mode"]] = med
            by[(r["variant"], r["provider"])]["ok"] = r["verified"]
            by[(r["variant"], r["provider"])]["error"] = r.get("error")
        for (variant, provider), v in by.items():
            lat, host = v.get("call_latency"), v.get("host_per_call")
            f = (lambda t: f"{t * 1e3:.1f}" if t is not None else "-")
            label = variant if provider == "warplab" else f"{provider}:{variant}"
            print(f"{case.name:18} {label[:26]:26} {f(lat):>11} {f(host):>9}  {v['ok']}"
                  + (f" {v['error'][:60]}" if v.get("error") else ""))
    for name, c in report["checks"].items():
        print(f"check {name}: {'ok' if c.get('ok') else 'FAILED'}"
              + (f" {c.get('error')}" if c.get("error") else ""))
        for r in c.get("rows", []):
            if not r["ok"]:
                print("  bad:", json.dumps(r)[:200])
    cc = report["checks"].get("corrcoef", {}).get("rows", [])
    if cc:
        print("corrcoef max |fused - tc_gram| over the checks: "
              f"{max(r['diff_vs_tc_gram'] for r in cc):.3g}; max err vs NumPy "
              f"{max(r['err_vs_numpy'] for r in cc):.3g}")
    report["seconds"] = time.time() - t0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, default=str))
    print(f"wrote {args.out} in {report['seconds']:.0f} s")


if __name__ == "__main__":
    main()

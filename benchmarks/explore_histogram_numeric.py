"""Tuning sweep of NumPy's histogram and weighted bincount on the GPU (issue 14's speed targets;
not part of the package's API).

One run times every variant and launch option at the target shapes with CUDA events
(``back_to_back_ms``: the public call on device input, back to back, median of 20) and checks
each result: histogram counts bit for bit against ``np.histogram`` of the same data, weighted
sums against ``cupy.bincount`` (rtol 1e-9), comparators against NumPy's counts (CUB's bins are
its own, so it reports how many counts differ). Cases:

* ``hist``: float32 1 GiB (normal), bins=256, range (-4, 4) / (-4.0, 4.0) / float32 (-4, 4):
  ``even_private`` (the default before session 8) and ``even_fast`` (the default since) under launch options (block, unroll,
  prefetch);
* ``none``: the same with range=None (a min/max pass, then the binning pass: 2 reads), with the
  min/max pass as ``partials`` or ``atomic``, and that pass alone;
* ``cmp``: ``cupy.histogram`` (default accelerators, and CUB) and
  ``cuda.compute.histogram_even`` (skipped when not importable);
* ``bincount``: int32 x (512 MiB) with float64 weights (1 GiB), 100 / 4096 / 2^20 bins, each
  variant under launch options and shared budgets, and ``cupy.bincount(x, w)``.

Columns: ms (median), GB/s of the case's bytes (histogram: the data once; bincount: x + w, as the
GPU test prints), % of the measured read ceiling for the bytes the call must read (range=None:
the data twice; bincount: x twice, the weights once), ok.

Usage (GPU machine, about 2 minutes): PYTHONPATH=src python3
benchmarks/explore_histogram_numeric.py [--only hist,none,cmp,bincount]; writes
``$OUT/explore-histogram-numeric.json`` when OUT is set.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any, Callable

import cupy
import numpy as np

from warplab.lab.harness.ceiling_rates import copy_bandwidth, read_bandwidth
from warplab.lab.harness.timing import back_to_back_ms
from warplab.families.histogram import api, binning, minmax_cuda, numeric, numeric_cuda, numeric_fast
from warplab.lab.campaigns.histogram.comparators import cccl_histogram_even_range

N = 1 << 28  # 1 GiB of float32
T0 = time.perf_counter()
ROWS: list[dict[str, Any]] = []
READ = 0.0
#: Launch options tried (LaunchConfig fields); {} is the default (256, unroll 2, no prefetch).
CONFIGS = ({}, {"unroll": 4}, {"prefetch": 1}, {"unroll": 4, "prefetch": 1}, {"block": 512},
           {"block": 512, "unroll": 4, "prefetch": 1}, {"unroll": 8})
SHORT = ({}, {"unroll": 4}, {"unroll": 4, "prefetch": 1})


def cfg_name(cfg: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in cfg.items()) or "default"


def record(case: str, name: str, cfg: dict, ms: float, nbytes: int, must_read: int, ok: Any,
           note: str = "") -> None:
    gbps = nbytes / ms / 1e6
    pct = 100 * must_read / ms / 1e6 / READ
    ROWS.append(dict(case=case, variant=name, config=cfg_name(cfg), ms=ms, gbps=gbps,
                     pct_of_read=pct, ok=ok, note=note))
    print(f"{time.perf_counter() - T0:6.1f}s  {case:34s} {name:34s} {cfg_name(cfg):28s} "
          f"{ms:8.3f} ms {gbps:7.0f} GB/s {pct:5.1f}% read  ok={ok} {note}", flush=True)


def run(case: str, name: str, cfg: dict, fn: Callable[[numeric_cuda.LaunchConfig], Any],
        check: Callable[[Any], Any], nbytes: int, must_read: int, note: str = "") -> None:
    """Time ``fn(config)`` with the launch configuration of ``cfg`` (LaunchConfig fields)."""
    config = numeric_cuda.LaunchConfig(**cfg)
    try:
        ok = check(fn(config))
        ms = back_to_back_ms(lambda: fn(config), runs=20, warmup=3)
    except Exception as exc:  # a variant that fails is a row, not the end of the sweep
        print(f"{case} {name} {cfg_name(cfg)} FAILED: {type(exc).__name__}: {exc}", flush=True)
        ROWS.append(dict(case=case, variant=name, config=cfg_name(cfg), error=repr(exc)))
        return
    record(case, name, cfg, ms, nbytes, must_read, ok, note)


def hist_cases(d: Any, h: np.ndarray, which: set[str]) -> None:
    nb = N * 4
    ranges = {"(-4, 4)": (-4, 4), "(-4.0, 4.0)": (-4.0, 4.0),
              "f32(-4, 4)": (np.float32(-4), np.float32(4))}
    if "hist" in which:
        for label, r in ranges.items():
            want = np.histogram(h, 256, r)[0]
            first, last = numeric.outer_edges(r, N, lambda: (None, None))
            plan = binning.plan_even(h.dtype, first, last, 256,
                                     numeric.even_edges(first, last, 256, h.dtype))
            consts = numeric_fast.fast_constants(plan)
            share = numeric_fast.fast_share(h[:1 << 20], plan, consts) if consts else 0.0
            note = f"P={plan.p_dtype}, fast share {share:.5f}" + (
                f", delta {float(consts[2]):.2e}" if consts else "")
            full = label == "(-4, 4)"  # every option once; the other ranges a short list
            for v, cfgs in (("even_private", SHORT if full else ({},)),
                            ("even_fast", CONFIGS if full else SHORT)):
                for cfg in cfgs:
                    run(f"hist f32 1GiB 256 {label}", v, cfg,
                        lambda c: api.histogram_with(c, d, 256, r, variant=v),
                        lambda got: bool(np.array_equal(got[0].get(), want)), nb, nb, note)
    if "none" in which:
        want = np.histogram(h, 256)[0]
        for method in ("partials", "atomic"):
            for cfg in SHORT:
                run("min/max pass f32 1GiB", method, {**cfg, "minmax": method},
                    lambda c: minmax_cuda.device_min_max(d, c),
                    lambda got: bool(got == (h.min(), h.max())), nb, nb)
            for v in ("even_private", "even_fast"):
                for cfg in SHORT:
                    run("hist f32 1GiB 256 range=None", f"{v}+{method}",
                        {**cfg, "minmax": method},
                        lambda c: api.histogram_with(c, d, 256, variant=v),
                        lambda got: bool(np.array_equal(got[0].get(), want)), nb, 2 * nb,
                        "2 reads: min/max, then bins")


def comparator_cases(d: Any, h: np.ndarray) -> None:
    nb = N * 4
    want = np.histogram(h, 256, (-4, 4))[0]

    def diff(got: Any) -> str:
        return f"{int(np.abs(cupy.asnumpy(got).astype(np.int64) - want).sum())} counts differ"

    run("cmp f32 1GiB 256 (-4, 4)", "cupy.histogram", {},
        lambda c: cupy.histogram(d, 256, (-4, 4))[0], diff, nb, nb)
    try:
        from cupy._core import _accelerator

        saved = _accelerator.get_routine_accelerators()
        _accelerator.set_routine_accelerators(["cub"])
        try:
            run("cmp f32 1GiB 256 (-4, 4)", "cupy.histogram[cub]", {},
                lambda c: cupy.histogram(d, 256, (-4, 4))[0], diff, nb, nb)
        finally:
            _accelerator.set_routine_accelerators(saved)
    except ImportError as exc:
        print("cupy accelerators not available:", exc)
    try:
        import cuda.compute  # noqa: F401
    except ImportError as exc:
        print("cuda.compute not importable, its comparator skipped:", exc, flush=True)
        return
    run("cmp f32 1GiB 256 (-4, 4)", "cuda.compute.histogram_even", {},
        lambda c: cccl_histogram_even_range(d, 256, -4.0, 4.0), diff, nb, nb)


def bincount_cases() -> None:
    n = N // 2
    rng = cupy.random.default_rng(2)
    w = rng.random(n, dtype=cupy.float64)
    nb = n * (4 + 8)
    must = n * (4 + 4 + 8)  # x twice (its max sizes the result), the weights once
    for hi in (100, 4096, 1 << 20):
        x = cupy.random.default_rng(3).integers(0, hi, n, dtype=cupy.int32)
        want = cupy.bincount(x, w).get()

        def close(got: Any) -> bool:
            return bool(np.allclose(cupy.asnumpy(got), want, rtol=1e-9, atol=1e-9))

        case = f"bincount i32+f64 {hi} bins"
        run(case, "cupy.bincount", {}, lambda c: cupy.bincount(x, w), close, nb, must)
        private = hi <= 4096
        variants = (("private_sums", "private_sums_vec") if private else ()) + (
            ("global_atomics", "global_atomics_vec") if hi > 100 else ())  # 100: ~50 ms each
        for v in variants:
            cfgs = list(SHORT) + [{"block": 512}]
            if v.startswith("private") and hi == 4096:
                cfgs += [{"acc_budget": 64 * 1024}, {"acc_budget": 96 * 1024, "unroll": 4}]
            for cfg in cfgs:
                run(case, v, cfg, lambda c: api.bincount_with(c, x, w, variant=v), close, nb,
                    must)
        best = "private_sums_vec" if private else "global_atomics_vec"
        for cfg in SHORT:
            run(case, f"{best}+atomic minmax", {**cfg, "minmax": "atomic"},
                lambda c: api.bincount_with(c, x, w, variant=best), close, nb, must)
        del x


def main() -> None:
    global READ
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="hist,none,cmp,bincount")
    which = set(ap.parse_args().only.split(","))
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    READ = read_bandwidth("cuda")["read_gbps"]
    copy = copy_bandwidth("cuda")["copy_gbps"]
    print(f"{props['name'].decode()}: read ceiling {READ:.0f} GB/s, copy {copy:.0f} GB/s "
          f"(read + write); 90% of read = {0.9 * READ:.0f} GB/s, 1 GiB in "
          f"{(1 << 30) / (0.9 * READ) / 1e3:.0f} us", flush=True)
    if which & {"hist", "none", "cmp"}:
        d = cupy.random.default_rng(0).standard_normal(N, dtype=cupy.float32)
        h = d.get()
        hist_cases(d, h, which)
        if "cmp" in which:
            comparator_cases(d, h)
        del d, h
        cupy.get_default_memory_pool().free_all_blocks()
    if "bincount" in which:
        bincount_cases()
    out = os.environ.get("OUT")
    if out:
        path = os.path.join(out, "explore-histogram-numeric.json")
        with open(path, "w") as fh:
            json.dump({"device": props["name"].decode(), "read_gbps": READ, "copy_gbps": copy,
                       "rows": ROWS}, fh, indent=1)
        print("wrote", path)
    bad = [r for r in ROWS if r.get("ok") is False or "error" in r]
    print(f"{len(ROWS)} rows, {len(bad)} wrong or failed, {time.perf_counter() - T0:.0f} s")


if __name__ == "__main__":
    main()

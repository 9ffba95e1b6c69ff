"""The int8_slices corrcoef variant (the Ozaki scheme, families/corr/slices*.py) on the GPU
machine (not part of the package's API; benchmarks/NOTES.md holds the predictions).

On 8192 float32 random walks of 8192 values (warplab.random_walk, seed 1), CUDA events, median
of RUNS after WARMUP calls:

1. raw cuBLAS int8 GemmEx (TN, int32 out, as the engine calls it): TOPS of 8192 x 8192 x K
   for K = 8192 .. 5 x 8192 (the level GEMMs of a full square);
2. the public call ``warplab.corrcoef(x, precision=p, variant=v)`` for v in int8_slices,
   tc_gram and p in float64, float32, tf32, next to ``cupy.corrcoef(x)``: ms, TFLOP/s
   (``spec.corr_flops``), max abs error against cupy.corrcoef's float64 result (computed
   once), the chosen s and its bound, the time as a fraction of cupy.corrcoef's;
3. int8_slices' phases: normalise, row statistics (+ the read-back), split, the GEMMs and the
   combines of the diagonal block, per precision; then the diagonal block alone for forced
   s = 2 .. 6 (time, error, bound: what each target would cost) and for panel widths 512 ..
   4096 at the float64 choice;
4. the crossover: both variants' public calls on smaller shapes (512 .. 4096 series), and which
   one automatic dispatch takes there.

Usage: PYTHONPATH=src python3 benchmarks/explore_ozaki.py --json $OUT/ozaki.json [--m 8192]
       [--parts raw,calls,phases,sweeps,crossover]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import cupy
import numpy as np
from explore_axis_rows import kernel_ms  # CUDA-event median (same folder)

import warplab
from warplab.families.corr import cuda as corr_cuda
from warplab.families.corr import slices, slices_cuda
from warplab.families.corr.spec import PRECISIONS, CorrProblem, corr_flops

RUNS, WARMUP = 7, 2


def _events_ms(events: list) -> dict[str, float]:
    events[-1][2].synchronize()
    out: dict[str, float] = {}
    for name, a, b in events:
        out[name] = out.get(name, 0.0) + cupy.cuda.get_elapsed_time(a, b)
    return out


def raw_gemms(m: int, rows: list[dict]) -> None:
    kmax = 5 * m
    a = cupy.random.randint(-128, 128, size=(m, kmax), dtype=np.int32).astype(np.int8)
    b = cupy.random.randint(-128, 128, size=(m, kmax), dtype=np.int32).astype(np.int8)
    c = cupy.empty((m, m), np.int32)
    for j in range(1, 6):
        k = j * m
        ms = kernel_ms(lambda k=k: slices_cuda.gemm_s8(m, m, k, b.data.ptr, kmax, a.data.ptr,
                                                       kmax, c.data.ptr, m),
                       runs=RUNS, warmup=WARMUP)
        tops = 2 * m * m * k / ms / 1e9
        rows.append({"part": "raw_gemm", "m": m, "n": m, "k": k, "ms": ms, "tops": tops})
        print(f"int8 GemmEx {m} x {m} x {k:6d}: {ms:7.3f} ms {tops:7.1f} TOPS", flush=True)
    want = a[:64, :m].astype(np.float64) @ b[:64, :m].astype(np.float64).T
    slices_cuda.gemm_s8(m, m, m, b.data.ptr, kmax, a.data.ptr, kmax, c.data.ptr, m)
    assert bool((c[:64, :64].astype(np.float64) == want).all()), "int8 GEMM result wrong"


def public_calls(x, ref, rows: list[dict]) -> float:
    m, n = x.shape
    cp_ms = kernel_ms(lambda: cupy.corrcoef(x), runs=RUNS, warmup=WARMUP)
    rows.append({"part": "call", "target": "cupy.corrcoef", "precision": "float64", "ms": cp_ms,
                 "tflops": corr_flops(CorrProblem(m, n, np.dtype(np.float32), "float64", True))
                 / cp_ms / 1e9, "x_cupy": 1.0})
    print(f"cupy.corrcoef               {cp_ms:8.3f} ms", flush=True)
    for precision in PRECISIONS:
        flops = corr_flops(CorrProblem(m, n, np.dtype(np.float32), precision, True))
        for variant in ("int8_slices", "tc_gram", None):  # None: the automatic choice
            def call(v=variant, p=precision):
                return warplab.corrcoef(x, variant=v, precision=p)
            err = float(cupy.abs(call() - ref).max())
            ms = kernel_ms(call, runs=RUNS, warmup=WARMUP)
            row = {"part": "call", "target": variant or "default", "precision": precision,
                   "ms": ms,
                   "tflops": flops / ms / 1e9, "max_abs_error": err, "x_cupy": ms / cp_ms}
            if variant == "int8_slices":
                eng = corr_cuda.SlicesEngine(x, precision)
                row.update(slices=eng.slices, bound=eng.prep.bound)
                del eng
            rows.append(row)
            extra = f" s={row['slices']} bound {row['bound']:.1e}" if "slices" in row else ""
            print(f"{row['target']:12s} {precision:8s}     {ms:8.3f} ms {row['tflops']:6.1f} TFLOP/s "
                  f"{ms / cp_ms:5.2f}x cupy  err {err:.2e}{extra}", flush=True)
            cupy.get_default_memory_pool().free_all_blocks()
    return cp_ms


def _phases(x, precision: str, forced: int | None = None,
            width: int | None = None) -> tuple[dict[str, float], object]:
    ev = []
    for name in ("normalise", "prepare"):
        ev.append([name, cupy.cuda.Event(), cupy.cuda.Event()])
    ev[0][1].record()
    z, valid, extent = corr_cuda.normalise_with_extent(x)
    ev[0][2].record()
    ev[1][1].record()
    prep = slices_cuda.Prepared(z, valid, precision, slices=forced, extent=extent)
    ev[1][2].record()
    prep.events = []
    r = prep.block(0, x.shape[0], 0, x.shape[0], width=width, finish=True)
    times = _events_ms([tuple(e) for e in ev] + prep.events)
    times["block"] = times["gemms"] + times["combine"]
    return times, (prep, z, valid, r, extent)


def breakdown(x, ref, rows: list[dict], sweeps: bool) -> None:
    m = x.shape[0]
    for precision in PRECISIONS:
        samples = []
        for i in range(WARMUP + 3):
            t, keep = _phases(x, precision)
            if i >= WARMUP:
                samples.append(t)
        prep, z, valid, _, extent = keep
        med = {k: float(np.median([s[k] for s in samples])) for k in samples[-1]}
        for name, fn in (("stats", lambda z=z, v=valid, e=extent: slices_cuda.row_stats(z, v, e)),
                         ("split", lambda z=z, p=prep: slices_cuda.split(z, p.c, p.plan))):
            med[name] = kernel_ms(fn, runs=RUNS, warmup=1)
        ops = slices.block_ops(0, m, 0, m, prep.plan)
        row = {"part": "phases", "precision": precision, "slices": prep.slices,
               "int8_tops": ops / med["gemms"] / 1e9, "int8_ops": ops, **med}
        rows.append(row)
        print(f"phases {precision:8s} s={prep.slices}: " + "  ".join(
            f"{k} {v:.3f}" for k, v in med.items()) + f" ms; GEMMs {row['int8_tops']:.0f} TOPS",
            flush=True)
        cupy.get_default_memory_pool().free_all_blocks()
    if not sweeps:
        return
    for forced in range(2, 7):
        _sweep(x, ref, rows, "slices", forced=forced)
    for width in (512, 1024, 2048, 4096):
        _sweep(x, ref, rows, "panel", width=width)


def _sweep(x, ref, rows: list[dict], what: str, forced: int | None = None,
           width: int | None = None) -> None:
    times = []
    for _ in range(3):
        t, keep = _phases(x, "float64", forced, width)
        times.append(t["block"])
    prep, r = keep[0], keep[3]
    err = float(cupy.abs(r - ref).max())  # random walks: every series valid
    block = float(np.median(times))
    row = {"part": f"sweep_{what}", "slices": prep.slices, "width": width or slices.PANEL_ROWS,
           "block_ms": block, "max_abs_error": err, "bound": prep.bound}
    rows.append(row)
    print(f"sweep {what:6s} s={prep.slices} width {row['width']:5d}: block {block:7.3f} ms "
          f"err {err:.2e} bound {prep.bound:.2e}", flush=True)
    del keep, prep, r
    cupy.get_default_memory_pool().free_all_blocks()


def crossover(rows: list[dict]) -> None:
    """Public calls of int8_slices and tc_gram on smaller shapes: where the default switches
    (``cuda.SLICES_PREFER_M``, ``cuda.SLICES_PREFER_N``)."""
    for m, n in ((512, 1024), (1024, 1024), (1024, 8192), (2048, 1024), (2048, 8192),
                 (4096, 1024), (4096, 4096)):
        x = warplab.random_walk(m, n, seed=2)
        for precision in PRECISIONS:
            ms = {}
            for variant in ("int8_slices", "tc_gram"):
                ms[variant] = kernel_ms(lambda v=variant, p=precision, xs=x: warplab.corrcoef(
                    xs, variant=v, precision=p), runs=RUNS, warmup=WARMUP)
            auto = "int8_slices" if corr_cuda._slices_prefer(
                CorrProblem(m, n, np.dtype(np.float32), precision, True)) else "tc_gram"
            rows.append({"part": "crossover", "m": m, "n": n, "precision": precision,
                         "work": m * m * n, "auto": auto, **ms})
            print(f"crossover {m:5d} x {n:5d} {precision:8s}: int8_slices "
                  f"{ms['int8_slices']:7.3f} ms  tc_gram {ms['tc_gram']:7.3f} ms  "
                  f"auto {auto}", flush=True)
        del x
        cupy.get_default_memory_pool().free_all_blocks()


PARTS = ("raw", "calls", "phases", "sweeps", "crossover")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="write the rows here")
    ap.add_argument("--m", type=int, default=8192, help="series (and values per series)")
    ap.add_argument("--parts", default=",".join(PARTS), help=f"of {', '.join(PARTS)}")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    dev = cupy.cuda.Device()
    name = cupy.cuda.runtime.getDeviceProperties(dev.id)["name"].decode()
    print(f"device {name} cc {dev.compute_capability}; median of {RUNS}", flush=True)
    rows: list[dict] = []
    if "raw" in parts:
        raw_gemms(args.m, rows)
        cupy.get_default_memory_pool().free_all_blocks()
    x = warplab.random_walk(args.m, args.m, seed=1)
    ref = cupy.corrcoef(x)  # float64 (CuPy computes float32 input in float64)
    if "calls" in parts:
        public_calls(x, ref, rows)
    if "phases" in parts:
        breakdown(x, ref, rows, "sweeps" in parts)
    del x, ref
    cupy.get_default_memory_pool().free_all_blocks()
    if "crossover" in parts:
        crossover(rows)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        meta = {"device": name, "cc": dev.compute_capability, "m": args.m, "runs": RUNS,
                "targets": slices.TARGETS, "panel_rows": slices.PANEL_ROWS}
        args.json.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()

"""The Gram kernel configurations (``gram_cuda.CONFIGS``) against the default and cuBLAS (GPU
machine; not part of the package's API; benchmarks/NOTES.md holds the
predictions).

For M = N = 8192 and 4096 (normalised random-walk rows, as ``corrcoef`` feeds ``gram``): every
configuration's ``gram(z, precision, config=)`` on a @ a.T — CUDA events, median of 10 after 2
warm-ups, TFLOP/s counting the triangle's flops (M (M + 1) / 2 * 2N, as gram.py counts them),
the max abs error against a float64 cuBLAS product of the same rows, and the registers and
local memory of the kernel NVRTC built. Float64 for every configuration; float32 and tf32 for
those whose TF32 build differs from the default's (warp grid, ring depth). Reference rows:
cuBLAS DGEMM (z @ z.T, full M^2 N) and DSYRK (upper triangle) on the same float64 rows, and
the public ``corrcoef`` (float64) at 8192. Prints a table; writes JSON to $OUT if set.
Usage: PYTHONPATH=src python3 benchmarks/explore_gram.py [8192 4096]
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import cupy
import cupy.cublas  # not imported by "import cupy"
import numpy as np
from explore_axis_rows import kernel_ms  # CUDA-event median (same folder)

import warplab
from warplab.core.loader import get_kernel
from warplab.families.corr import cuda as corr_cuda
from warplab.families.corr import gram_cuda
from warplab.families.corr.gram import gram

RUNS, WARMUP = 10, 2


def _tf32_build_differs(name: str) -> bool:
    cfg, d = gram_cuda.CONFIGS[name], gram_cuda.DEFAULT
    return (cfg.warps, cfg.f32_warps, cfg.stages, cfg.tile, cfg.tf32_bk) != \
        (d.warps, d.f32_warps, d.stages, d.tile, d.tf32_bk)


def _kernel_facts(z, precision: str, config: str) -> dict:
    smem, cc = gram_cuda.device_limits()
    m, n = z.shape
    p = gram_cuda.plan(precision, z.dtype, m, m, n, sym=True, pointers=(z.data.ptr,),
                       smem_limit=smem, config=config, cc=cc)
    k = get_kernel(gram_cuda.SOURCE, p.expression, options=gram_cuda._options(config))
    return {"expression": p.expression, "threads": p.threads, "stages": p.stages,
            "smem": p.smem, "regs": int(k.num_regs), "local_bytes": int(k.local_size_bytes)}


def _configs(precision: str, m: int) -> list[str]:
    """Every configuration the device runs for float64; for the TF32 modes (at 8192 only) the
    default and those whose TF32 build differs."""
    _, cc = gram_cuda.device_limits()
    if precision != "float64" and m != 8192:
        return []
    return [c for c in gram_cuda.CONFIGS if gram_cuda.CONFIGS[c].min_cc <= cc
            and (precision == "float64" or c == "default" or _tf32_build_differs(c))]


def _time_precision(x, precision: str, rows: list[dict]) -> None:
    m = x.shape[0]
    tri = m * (m + 1) / 2 * 2 * m
    z, _ = corr_cuda.normalise_rows(x, corr_cuda.work_dtype(precision))
    z64 = z.astype(np.float64)
    ref = z64 @ z64.T
    out = cupy.empty((m, m), np.float64 if precision == "float64" else np.float32)
    for name in _configs(precision, m):
        gram(z, precision=precision, out=out, config=name)
        err = float(cupy.abs(out.astype(np.float64) - ref).max())
        ms = kernel_ms(lambda n=name: gram(z, precision=precision, out=out, config=n),
                       runs=RUNS, warmup=WARMUP)
        row = {"m": m, "n": m, "precision": precision, "target": f"gram:{name}", "ms": ms,
               "tflops": tri / ms / 1e9, "max_abs_error": err,
               **_kernel_facts(z, precision, name)}
        rows.append(row)
        print(f"{m:5d} {precision:8s} {name:14s} {ms:8.3f} ms {row['tflops']:6.1f} TFLOP/s "
              f"err {err:.2e}  regs {row['regs']:3d} local {row['local_bytes']:3d} B "
              f"stages {row['stages']} smem {row['smem']}", flush=True)
    if precision != "float64":
        return
    ms = kernel_ms(lambda: z64 @ z64.T, runs=RUNS, warmup=WARMUP)
    rows.append({"m": m, "n": m, "precision": "float64", "target": "cublas_dgemm", "ms": ms,
                 "tflops": 2 * m * m * m / ms / 1e9})
    print(f"{m:5d} float64  cuBLAS DGEMM   {ms:8.3f} ms {rows[-1]['tflops']:6.1f} TFLOP/s "
          f"(full M^2 N)", flush=True)
    c64 = cupy.empty((m, m), np.float64)
    ms = kernel_ms(lambda: cupy.cublas.syrk("N", z64, out=c64, lower=False), runs=RUNS,
                   warmup=WARMUP)
    rows.append({"m": m, "n": m, "precision": "float64", "target": "cublas_dsyrk", "ms": ms,
                 "tflops": tri / ms / 1e9})
    print(f"{m:5d} float64  cuBLAS DSYRK   {ms:8.3f} ms {rows[-1]['tflops']:6.1f} TFLOP/s "
          f"(triangle)", flush=True)


def run_size(m: int, rows: list[dict]) -> None:
    x = warplab.random_walk(m, m, seed=1)
    for precision in ("float64", "float32", "tf32"):
        _time_precision(x, precision, rows)
        cupy.get_default_memory_pool().free_all_blocks()
    if m == 8192:
        ms = kernel_ms(lambda: warplab.corrcoef(x), runs=RUNS, warmup=WARMUP)
        rows.append({"m": m, "n": m, "precision": "float64", "target": "corrcoef:default",
                     "ms": ms, "tflops": m * (m + 1) / 2 * 2 * m / ms / 1e9})
        print(f"{m:5d} float64  corrcoef       {ms:8.3f} ms (public call, default config)",
              flush=True)


def main() -> None:
    sizes = [int(s) for s in sys.argv[1:]] or [8192, 4096]
    dev = cupy.cuda.Device()
    props = cupy.cuda.runtime.getDeviceProperties(dev.id)
    print(f"device {props['name'].decode()} cc {dev.compute_capability}; median of {RUNS}",
          flush=True)
    rows: list[dict] = []
    for m in sizes:
        run_size(m, rows)
    if os.environ.get("OUT"):
        path = Path(os.environ["OUT"]) / "explore-gram.json"
        meta = {"device": props["name"].decode(), "cc": dev.compute_capability,
                "configs": {k: v.defines for k, v in gram_cuda.CONFIGS.items()}}
        path.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
        print(f"wrote {path}")


if __name__ == "__main__":
    main()

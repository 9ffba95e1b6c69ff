"""Tuning sweep of ``matmul_regtile`` (GPU machine; not part of the package's API).

Block tile x thread tile x slice depth x resident blocks, float32, square N = 4096 and 8192,
16-byte loads; then the smaller sizes N = 768..3072, where the tile count decides (few large
tiles leave SMs idle); ``--sweeps groups`` also times the block order's group sizes. Every
configuration is checked first (an odd shape with scalar loads and a multiple-of-4 shape with
vector loads, against cuBLAS in float64), then timed with CUDA events in three rounds
alternating with ``cupy.matmul`` (cuBLAS SGEMM, full FP32: CUPY_TF32 unset); its ratio is the
median of the per-round ratios. Registers and local (spill) bytes are the compiled kernel's.
Run 1 swept nine other tiles (listed with its results in benchmarks/NOTES.md); the large list
is run 2's, the small one run 3's.
Usage: PYTHONPATH=src python3 benchmarks/explore_matmul.py [--out DIR] [--sweeps large,small]
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import cupy
import numpy as np

from warplab.families.matmul.cuda import RegTile, launch_regtile
from warplab.lab.harness.timing import back_to_back_ms
from warplab.core.loader import get_kernel, occupancy_blocks_per_sm

F32 = (np.dtype(np.float32),)
CONFIGS = (  # RegTile(bk, warps_m, warps_n, sub_m, sub_n, min_blocks)
    RegTile(8, 2, 2, 4, 2, 2, F32),    # 128x128, 16x8, 128 threads (run 1's pick)
    RegTile(16, 2, 2, 4, 2, 2, F32),   # the same, slices of 16
    RegTile(8, 4, 1, 2, 4, 2, F32),    # 128x128, 8x16, 128 threads
    RegTile(8, 1, 4, 4, 2, 2, F32),    # 64x256, 16x8, 128 threads
    RegTile(8, 2, 1, 4, 2, 4, F32),    # 128x64, 16x8, 64 threads, 4 blocks per SM
    RegTile(8, 2, 2, 2, 2, 3, F32),    # 64x128, 8x8, 128 threads, 3 blocks per SM
    RegTile(16, 2, 2, 2, 2, 3, F32),   # the same, slices of 16 (the default since run 2)
    RegTile(8, 4, 2, 2, 2, 2, F32),    # 128x128, 8x8, 256 threads (run 1's default)
)
SMALL = (CONFIGS[6], CONFIGS[5], CONFIGS[0], CONFIGS[4], RegTile(16, 4, 2, 1, 1, 2, F32))
SMALL_SIZES = (768, 1024, 1536, 2048, 3072)
GROUPS = (1, 4, 8, 16)


def operands(m: int, n: int, k: int) -> tuple:
    a = cupy.random.random((m, k), dtype=np.float32) * 2 - 1
    b = cupy.random.random((k, n), dtype=np.float32) * 2 - 1
    return a, b, cupy.empty((m, n), np.float32)


def rel_error(c, a, b) -> float:
    ref = a.astype(np.float64) @ b.astype(np.float64)
    return float(cupy.linalg.norm(c - ref) / cupy.linalg.norm(ref))


def time_vs_cublas(run, a, b, c) -> tuple[float, float]:
    """(median ms, median ratio cuBLAS time / this time) over three alternating rounds."""
    ts, ratios = [], []
    for _ in range(3):
        t = back_to_back_ms(run, runs=10, warmup=2)
        ref = back_to_back_ms(lambda: cupy.matmul(a, b, out=c), runs=10, warmup=2)
        ts.append(t)
        ratios.append(ref / t)
    return float(np.median(ts)), float(np.median(ratios))


def sweep(configs: tuple[RegTile, ...], sizes: tuple[int, ...], log: list[dict]) -> None:
    module = tuple(e for t in configs for e in t.expressions())
    checks = [operands(997, 1003, 1001), operands(1024, 1000, 1028)]
    data = {n: operands(n, n, n) for n in sizes}
    for n, (a, b, c) in data.items():
        t = back_to_back_ms(lambda: cupy.matmul(a, b, out=c), runs=10, warmup=2)
        print(f"N={n}: cupy.matmul (cuBLAS) {t:.3f} ms, {2 * n**3 / t / 1e9:.1f} TFLOP/s",
              flush=True)
    print(f"{'config':<24}{'regs':>5}{'local':>6}{'smem':>7}{'blk/SM':>7}{'err odd':>10}"
          f"{'err vec':>10}" + "".join(f"{f'N={n} ms':>12}{'TFLOP/s':>9}{'x cuBLAS':>9}"
                                       for n in sizes), flush=True)
    for tile in configs:
        k = get_kernel("matmul", tile.expression(F32[0], True), all_expressions=module)
        errs = []
        for a, b, c in checks:
            c.fill(np.nan)
            launch_regtile(tile, a, b, c, module)
            errs.append(rel_error(c, a, b))
        row = {"config": tile.name, "bk": tile.bk, "threads": tile.threads,
               "min_blocks": tile.min_blocks, "registers": int(k.num_regs),
               "local_bytes": int(k.local_size_bytes), "smem": int(k.shared_size_bytes),
               "blocks_per_sm": occupancy_blocks_per_sm(k, tile.threads, 0),
               "rel_err_odd": errs[0], "rel_err_vec": errs[1]}
        line = (f"{tile.name + f'/bk{tile.bk}':<24}{row['registers']:>5}{row['local_bytes']:>6}"
                f"{row['smem']:>7}{row['blocks_per_sm']:>7}{errs[0]:>10.1e}{errs[1]:>10.1e}")
        for n, (a, b, c) in data.items():
            ms, ratio = time_vs_cublas(lambda: launch_regtile(tile, a, b, c, module), a, b, c)
            row[f"ms_{n}"], row[f"ratio_{n}"] = ms, ratio
            line += f"{ms:>12.3f}{2 * n**3 / ms / 1e9:>9.1f}{ratio:>9.3f}"
        print(line, flush=True)
        log.append(row)


def group_sweep(n: int, log: list[dict]) -> None:
    tile = CONFIGS[0]
    expr = tile.expression(F32[0], True)
    a, b, c = operands(n, n, n)
    for g in GROUPS:
        k = get_kernel("matmul", expr, all_expressions=(expr,),
                       options=(f"-DWARPLAB_MATMUL_GROUP_M={g}",))
        blocks = -(-n // tile.bm) * -(-n // tile.bn)
        ms, ratio = time_vs_cublas(lambda: k((blocks,), (tile.threads,),
                                             (a, b, c, np.int32(n), np.int32(n), np.int32(n))),
                                   a, b, c)
        print(f"{tile.name} GROUP_M={g:<3} N={n}: {ms:.3f} ms, {2 * n**3 / ms / 1e9:.1f} "
              f"TFLOP/s, x cuBLAS {ratio:.3f}", flush=True)
        log.append({"config": tile.name, "group_m": g, "n": n, "ms": ms, "ratio": ratio})


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    p.add_argument("--sweeps", default="large,small",
                   help="comma-separated: large (N = 4096, 8192), small (N = 768..3072), groups")
    args = p.parse_args()
    sweeps = args.sweeps.split(",")
    print(f"CUPY_TF32={os.environ.get('CUPY_TF32')!r} (cuBLAS in full FP32 unless '1')")
    log: list[dict] = []
    if "large" in sweeps:
        sweep(CONFIGS, (4096, 8192), log)
    if "small" in sweeps:
        sweep(SMALL, SMALL_SIZES, log)
    if "groups" in sweeps:
        group_sweep(8192, log)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "explore-matmul.json").write_text(json.dumps(log, indent=1))


if __name__ == "__main__":
    main()

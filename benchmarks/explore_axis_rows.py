"""rows_adaptive's launch for short rows (GPU machine; not part of the package's API).

The series table (H100, session 6) measured ``mean(axis=1)`` of 1M x 32 float32 at 2.61 TB/s
(85% of the read ceiling) with the plan's choice: G = 2 lanes per row, a persistent grid of the
resident blocks. This sweeps the two knobs of the group kernel on that shape and on 8192 x 8192:
G (lanes per row) and the grid (the persistent grid times 1, 2, 4, or one warp per row step for
every row: no loop). Kernel time only (CUDA events, median of 50 after 5 warm-ups), the same
launch as ``axis_cuda._launch_rows``; cupy.mean in the same run.
Usage: PYTHONPATH=src python3 benchmarks/explore_axis_rows.py
"""
from __future__ import annotations

import cupy
import numpy as np

from warplab.lab.harness import ceilings
from warplab.core.loader import occupancy_blocks_per_sm
from warplab.families.reduce import axis_cuda as ac


def kernel_ms(fn, runs: int = 50, warmup: int = 5) -> float:
    for _ in range(warmup):
        fn()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(runs):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop))
    return float(np.median(times))


def main() -> None:
    read = ceilings.measure_all("cuda")["read_gbps"]
    dev = cupy.cuda.runtime.getDevice()
    sms = ac.sm_count(dev)
    for rows, cols in ((1 << 20, 32), (8192, 8192)):
        x = cupy.random.standard_normal((rows, cols), dtype=np.float32)
        out = cupy.empty(rows, np.float32)
        nbytes = x.nbytes + out.nbytes
        args = ac.targs("mean", np.dtype(np.float32))
        ref = x.astype(np.float64).mean(axis=1)
        vec, g0 = ac.group_size(cols, 4)
        cp_ms = kernel_ms(lambda x=x: cupy.mean(x, axis=1))
        print(f"{rows}x{cols}: plan G={g0}; cupy.mean {cp_ms * 1e3:.1f} us "
              f"{nbytes / cp_ms / 1e6:.0f} GB/s; read ceiling {read:.0f} GB/s")
        for g in ac.GROUPS:
            expr = f"axis_rows_group<{args}, {g}, {'true' if vec else 'false'}>"
            k = ac._kernel(expr, args, dev)
            bps = occupancy_blocks_per_sm(ac._kernel(expr, args, dev), ac.BLOCK, 0)
            resident = sms * bps
            warps = -(-rows // (32 // g))
            full = -(-warps * 32 // ac.BLOCK)
            for label, grid in (("x1", min(resident, full)), ("x2", min(2 * resident, full)),
                                ("x4", min(4 * resident, full)), ("all", full)):
                def launch(k=k, grid=grid, a=(x, np.uint64(rows), np.uint64(cols), np.uint64(cols),
                                              out, np.float64(0), np.uint64(0))):
                    k((grid,), (ac.BLOCK,), a)
                ms = kernel_ms(launch)
                err = float(cupy.abs(out.astype(np.float64) - ref).max())
                print(f"  G={g:2d} grid {label:3s} {grid:6d} blocks ({bps}/SM resident): "
                      f"{ms * 1e3:7.1f} us {nbytes / ms / 1e6:6.0f} GB/s "
                      f"{100 * nbytes / ms / 1e6 / read:5.1f}% of read  err {err:.1e}")


if __name__ == "__main__":
    main()

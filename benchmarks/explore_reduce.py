"""Tuning sweep of ``reduce_persistent_vec`` under five timing conditions (GPU machine only).

Float32 and int32 sums of 2^28 elements (the table's data: ``reduce_bench.make_input``). Each
configuration (accumulators x blocks per SM, load flavour, grid = 1x or 4x the resident blocks,
sweep order: front to back or tail first) is timed in three rounds alternating with cupy.sum
under one condition, and its ratio is the median of the per-round ratios (both sides see the
same clocks, temperature and L2 state):

- ``back-to-back``: CUDA events around launches queued one after another;
- ``held``: the harness's held kernel phase (queued behind a blocking kernel);
- ``held+h2d``: as the table measures: each run refills the input (1 GiB H2D, from pinned
  host memory here to keep the sweep short; the table's pageable copy ends the same way, with
  the copy's last lines in L2), then the held kernel phase;
- ``held+flush``: each run first writes a buffer of twice the L2 size, then the held phase;
- ``held+produce``: each run first rewrites the input in place on the device (``x *= 1``, as a
  kernel that produced ``x`` would leave it: its last lines dirty in L2), then the held phase.

``small``: the launch shape of small inputs (one block against the default grid), 2^10..2^18.

Usage: PYTHONPATH=src python3 benchmarks/explore_reduce.py [condition ... | small]
"""
from __future__ import annotations

import sys

import cupy
import cupyx
import numpy as np

from warplab.families.reduce.spec import spec
from warplab.lab.campaigns.reduce.bench import make_input
from warplab.lab.harness.timing import back_to_back_ms, time_runs
from warplab.core.loader import get_kernel, occupancy_blocks_per_sm

N = 1 << 28
LOADS = {0: "ldcs", 1: "ldg", 2: "nc.L2::256B"}
ORDERS = {0: "front first", 1: "tail first"}
# (accumulators, blocks per SM in the launch bounds, load flavour, grid multiplier, sweep order)
CONFIGS = ((8, 2, 0, 1, 0), (8, 2, 1, 1, 0), (8, 2, 0, 1, 1), (8, 2, 1, 1, 1), (8, 2, 2, 1, 1))
CONDITIONS = ("back-to-back", "held", "held+h2d", "held+flush", "held+produce")


class Condition:
    """Times a launch function under one condition; returns the median kernel time in ms."""

    def __init__(self, name: str, h_x: np.ndarray, d_x: cupy.ndarray) -> None:
        self.name, self.h_x, self.d_x = name, h_x, d_x
        l2 = cupy.cuda.runtime.getDeviceProperties(0)["l2CacheSize"]
        self.flush_buf = cupy.empty(2 * l2, np.uint8) if name == "held+flush" else None

    def __call__(self, fn) -> float:
        if self.name == "back-to-back":
            return back_to_back_ms(fn, runs=40, warmup=5)

        def run(rec) -> None:
            if self.name == "held+h2d":
                with rec.phase("h2d"):
                    self.d_x.set(self.h_x)
            with rec.phase("kernel", hold=True):
                fn()

        flush, d_x = self.flush_buf, self.d_x
        between = None
        if flush is not None:
            between = lambda: flush.fill(0)  # noqa: E731
        elif self.name == "held+produce":
            between = lambda: cupy.multiply(d_x, 1, out=d_x)  # noqa: E731
        samples = time_runs(run, warmup=3, runs=20, cuda=True, between=between)
        return float(np.median(samples["kernel"]))


def sweep(dtype: str, conditions: list[str]) -> None:
    s = spec("sum", np.dtype(dtype))
    x = make_input(dtype, N)
    h_x = cupyx.empty_pinned(x.shape, dtype=x.dtype)
    h_x[...] = x
    d_x = cupy.asarray(h_x)
    ref = float(np.add.reduce(h_x, dtype=np.float64))
    sms = cupy.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    counter = cupy.zeros(1, np.uint32)
    partials = cupy.empty(1 << 16, dtype=s.acc)
    out = cupy.empty((), dtype=s.out)
    expr = f"reduce_persistent_vec<{s.c_types}>"
    for cname in conditions:
        cond = Condition(cname, h_x, d_x)
        t_cupy = cond(lambda: cupy.sum(d_x))
        print(f"{dtype} {cname}: cupy.sum {t_cupy:.4f} ms ({4 * N / t_cupy / 1e6:.0f} GB/s)",
              flush=True)
        for acc, minb, load, mult, order in CONFIGS:
            opts = (f"-DWARPLAB_REDUCE_VEC_ACC={acc}", f"-DWARPLAB_REDUCE_VEC_MINB={minb}",
                    f"-DWARPLAB_REDUCE_VEC_LOAD={load}", f"-DWARPLAB_REDUCE_VEC_ORDER={order}")
            k = get_kernel("reduce", expr, all_expressions=(expr,), options=opts)
            grid = sms * occupancy_blocks_per_sm(k, 512, 0) * mult
            args = (d_x, np.uint64(N), partials, counter, out)
            ts, ratios = [], []
            for _ in range(3):
                t = cond(lambda: k((grid,), (512,), args))
                ratios.append(cond(lambda: cupy.sum(d_x)) / t)
                ts.append(t)
            ok = abs(float(out.get()) - ref) <= 1e-6 * max(1.0, abs(ref))
            t = float(np.median(ts))
            print(f"  acc {acc} blocks/SM {minb} load {LOADS[load]:11s} grid x{mult} "
                  f"{ORDERS[order]:11s}: {t:.4f} ms "
                  f"({4 * N / t / 1e6:.0f} GB/s) x cupy {np.median(ratios):.4f} "
                  f"(rounds {min(ratios):.4f}..{max(ratios):.4f}) ok={ok}", flush=True)


def small_grid(dtype: str) -> None:
    """Small inputs: one block per 512 16-byte vectors (up to the persistent grid; the rule
    before run 28, with the last-block finish from 2 blocks on) against one block (no partials,
    no atomics), held timing after an H2D refill as the table measures, 3 rounds each."""
    s = spec("sum", np.dtype(dtype))
    expr = f"reduce_persistent_vec<{s.c_types}>"
    k = get_kernel("reduce", expr, all_expressions=(expr,))
    sms = cupy.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    full = sms * occupancy_blocks_per_sm(k, 512, 0)
    counter = cupy.zeros(1, np.uint32)
    partials = cupy.empty(1 << 16, dtype=s.acc)
    out = cupy.empty((), dtype=s.out)
    per_block = 16 // s.dtype.itemsize * 512
    for log2 in range(10, 19):
        n = 1 << log2
        x = make_input(dtype, n)
        d_x = cupy.asarray(x)
        ref = float(np.add.reduce(x, dtype=np.float64))
        cond = Condition("held+h2d", x, d_x)
        cupy.sum(d_x)  # its first call synchronises (set-up): not inside a held phase
        cupy.cuda.get_current_stream().synchronize()
        row = []
        for grid in (min(full, -(-n // per_block)), 1):
            args = (d_x, np.uint64(n), partials, counter, out)
            ts = [cond(lambda: k((grid,), (512,), args)) for _ in range(3)]
            ok = abs(float(out.get()) - ref) <= 1e-6 * max(1.0, abs(ref))
            row.append(f"grid {grid:4d} {1e3 * np.median(ts):6.2f} us ok={ok}")
        t_cupy = np.median([cond(lambda: cupy.sum(d_x)) for _ in range(3)])
        print(f"{dtype} 2^{log2}: " + " | ".join(row) + f" | cupy.sum {1e3 * t_cupy:6.2f} us",
              flush=True)


def main() -> None:
    if sys.argv[1:] == ["small"]:
        for dtype in ("float32", "int32", "float64"):
            small_grid(dtype)
        return
    conditions = sys.argv[1:] or list(CONDITIONS)
    for dtype in ("float32", "int32"):
        sweep(dtype, conditions)


if __name__ == "__main__":
    main()

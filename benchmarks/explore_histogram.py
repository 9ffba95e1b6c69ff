"""Tuning sweep of the privatized vector kernels (not part of the package's API).

Compiles ``hist_privatized_vec`` with -D overrides of block size and unroll depth, launches it
with several grid sizes on 1 GiB of uniform / const / text bytes, and prints GB/s (input bytes
over the median of CUDA-event-timed launches) next to the measured copy bandwidth.
Usage (GPU machine): PYTHONPATH=src python3 benchmarks/explore_histogram.py [--json PATH]
"""
from __future__ import annotations

import argparse
import itertools
import json

import cupy
import numpy as np

from warplab.families.histogram.cuda import EXPRESSIONS, vec_shared_bytes
from warplab.families.histogram.spec import resolve
from warplab.lab.harness import data
from warplab.lab.harness.ceiling_rates import copy_bandwidth
from warplab.lab.harness.timing import back_to_back_ms
from warplab.families.histogram.cpu import byte_counts
from warplab.core.loader import get_kernel, occupancy_blocks_per_sm

N = 1 << 30


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    args = ap.parse_args()
    copy = copy_bandwidth("cuda")["copy_gbps"]
    sms = cupy.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    inputs = {k: cupy.asarray(data.generate_fast(k, N)) for k in ("uniform", "const", "text")}
    refs = {k: byte_counts(v.get()) for k, v in inputs.items()}
    m = resolve("bytes")
    lut = cupy.asarray(m.lut)
    rows = []
    print(f"copy bandwidth {copy:.0f} GB/s, {sms} SMs")
    for layout, runs, block, unroll in itertools.product((0, 1), ("false", "true"),
                                                         (256, 512, 1024), (1, 2, 4)):
        expr = f"hist_privatized_vec<{layout}, {runs}, 0>"
        opts = (f"-DWARPLAB_VEC_BLOCK={block}", f"-DWARPLAB_VEC_UNROLL={unroll}")
        try:
            k = get_kernel("histogram", expr, all_expressions=EXPRESSIONS, options=opts)
        except Exception as exc:
            print(layout, runs, block, unroll, "compile failed", exc)
            continue
        smem = vec_shared_bytes(layout) * block // 512 if layout == 0 else vec_shared_bytes(1)
        occ = occupancy_blocks_per_sm(k, block, smem)
        for per_sm in sorted({1, 2, occ, 2 * occ}):
            grid = sms * per_sm
            res = {}
            for name, d in inputs.items():
                bins = cupy.zeros(256, dtype=np.int64)

                def launch():
                    k((grid,), (block,), (d, np.uint64(N), bins, np.uint32(256), lut),
                      shared_mem=smem)

                ms = back_to_back_ms(launch, runs=20, warmup=3)
                bins.fill(0)
                launch()
                ok = bool((bins.get() == refs[name]).all())
                res[name] = (N / ms / 1e6, ok)
            row = dict(layout=layout, runs=runs, block=block, unroll=unroll, regs=k.num_regs,
                       occ=occ, blocks_per_sm=per_sm,
                       **{f"{n}_gbps": g for n, (g, _) in res.items()},
                       ok=all(o for _, o in res.values()))
            rows.append(row)
            print(" ".join(f"{k}={v:.0f}" if isinstance(v, float) else f"{k}={v}"
                           for k, v in row.items()), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"copy_gbps": copy, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()

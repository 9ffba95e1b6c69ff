"""Warps per group of 32 buffers in the warp kernel (``cuda.parts_log2``): the batched copy of
a few thousand 1-8 KiB buffers against one warp per group (GPU machine; not part of the
package's API).

The two numbers (benchmarks/NOTES.md): 64 MiB of 4 KiB buffers is 16,384 buffers, 512 groups
of 32; a warp copies its group's buffers one after another with 2 KiB in flight (32 lanes x 4
16-byte loads), so 512 warps keep 1 MiB in flight where the H100 needs ~3 MB to stream at its
copy rate: 59% of copy (76 us; 1 KiB buffers 75%, 60 us). With P warps per group, each taking
every P-th buffer of the group's lists, the bytes in flight grow P-fold up to the resident
warps.

Per cell (fixed-size buffers at a data total, consecutive or shuffled on both sides, align
16): ``memcpy_batched(..., variant="warp_tiers_words")`` with ``cuda.PARTS_WAVES`` set to 0
(one warp per group), the library's value and twice it; 20 calls
back to back between CUDA events, median of 7; every byte checked once per setting; GB/s of
data read and written over the copy ceiling measured in the same run (``cudaMemcpyAsync``
device to device of the same total, same timing).

Usage: PYTHONPATH=src python3 benchmarks/explore_memcpy_parts.py [--json PATH]
"""
from __future__ import annotations

import argparse
import json

import cupy
import numpy as np
from host_timing import device_per_call

import warplab
from warplab.families.memcpy import cuda

CELLS = [(1024, 64 << 20), (4096, 64 << 20), (8192, 64 << 20), (65536, 64 << 20),
         (512, 64 << 20), (1024, 256 << 20), (4096, 256 << 20), (1024, 1 << 30),
         (4096, 1 << 30)]
CALLS, SAMPLES = 20, 7


def timed(fn) -> float:
    """Median seconds per call of ``CALLS`` calls between two events, ``SAMPLES`` times."""
    return device_per_call(fn, CALLS, SAMPLES)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    rows = []
    waves = cuda.PARTS_WAVES
    for size, total in CELLS:
        count = total // size
        src = cupy.random.randint(0, 256, total, dtype=np.uint8)
        dst = cupy.empty(total, np.uint8)
        copy_s = timed(lambda: cupy.cuda.runtime.memcpyAsync(
            dst.data.ptr, src.data.ptr, total, 3, cupy.cuda.get_current_stream().ptr))
        for layout in ("C_C", "S_S"):
            rng = np.random.default_rng(size + total)
            so = np.arange(count, dtype=np.uint64) * size
            do = so.copy()
            if layout == "S_S":
                so = so[rng.permutation(count)]
                do = do[rng.permutation(count)]
            sp = cupy.asarray(so + src.data.ptr)
            dp = cupy.asarray(do + dst.data.ptr)
            sizes = cupy.full(count, size, np.int64)
            row = {"size": size, "total": total, "count": count, "layout": layout,
                   "copy_us": copy_s * 1e6}
            for name, w in (("one_warp", 0), ("library", waves), ("double", 2 * waves)):
                cuda.PARTS_WAVES = w
                dst.fill(0)
                warplab.memcpy_batched(sp, dp, sizes, variant="warp_tiers_words")
                cupy.cuda.get_current_stream().synchronize()
                rs = cupy.asarray((so // size).astype(np.int64))
                rd = cupy.asarray((do // size).astype(np.int64))
                ok = bool((dst.reshape(count, size)[rd] == src.reshape(count, size)[rs]).all())
                s = timed(lambda: warplab.memcpy_batched(sp, dp, sizes,
                                                         variant="warp_tiers_words"))
                lg = cuda.parts_log2(count, cuda.sms(0) * 4 * 8)
                row[name] = {"us": s * 1e6, "pct_copy": 100 * copy_s / s, "ok": ok,
                             "parts": 1 << lg}
            cuda.PARTS_WAVES = waves
            rows.append(row)
            print(f"{size:>6} B {total >> 20:>5} MiB {layout}  copy {copy_s * 1e6:7.1f} us  " +
                  "  ".join(f"{k} P{row[k]['parts']} {row[k]['us']:7.1f} us "
                            f"{row[k]['pct_copy']:5.1f}%{'' if row[k]['ok'] else ' WRONG'}"
                            for k in ("one_warp", "library", "double")), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"calls": CALLS, "samples": SAMPLES, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()

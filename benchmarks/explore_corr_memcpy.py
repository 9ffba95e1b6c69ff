"""Two questions the session-6 tables left open (GPU machine; not part of the package's API).

1. corrcoef at M = N = 8192: how much of the public call is the tensor-core Gram product
   (``gram`` alone on normalised rows) and how much the rest (normalisation, the constant-row
   check, mirror/clip/diagonal)? CUDA events, median of 5 after 2 warm-ups.
2. memcpy: the size-class thresholds of the ``size_classes`` kernels (tile shape, TLEV and WLEV
   limits, BLEV chunk) on the cells where the default trails CUB (16 B, 64 B, 1-64 B, 1-8 B)
   and where it trails warp/block-per-buffer (4 KiB, 64 KiB): GB/s counting all bytes, each
   result checked against the default's output.
Usage: PYTHONPATH=src python3 benchmarks/explore_corr_memcpy.py [corr] [memcpy]
"""
from __future__ import annotations

import sys

import cupy
import numpy as np
from explore_axis_rows import kernel_ms as event_ms  # CUDA-event median (same folder)

import warplab
from warplab.core.loader import defines, get_kernel
from warplab.families.corr import cuda as corr_cuda
from warplab.families.corr.gram import gram
from warplab.families.memcpy import cuda as mc
from warplab.lab.campaigns.memcpy.bench import make_sizes, offsets
from warplab.families.memcpy.spec import SizeClasses


def corr_split() -> None:
    x = warplab.random_walk(8192, 8192, seed=1)
    for precision in ("float64", "float32", "tf32"):
        z, _ = corr_cuda.normalise_rows(x, corr_cuda.work_dtype(precision))
        t_norm = event_ms(lambda p=precision: corr_cuda.normalise_rows(
            x, corr_cuda.work_dtype(p)), runs=5, warmup=2)
        t_gram = event_ms(lambda z=z, p=precision: gram(z, precision=p), runs=5, warmup=2)
        t_call = event_ms(lambda p=precision: warplab.corrcoef(x, precision=p), runs=5, warmup=2)
        print(f"corrcoef 8192^2 {precision}: public call {t_call:.2f} ms = gram {t_gram:.2f} + "
              f"normalise {t_norm:.2f} + rest {t_call - t_gram - t_norm:.2f}", flush=True)


CLASSES = [  # (tile threads, buffers per thread, TLEV max, WLEV max, BLEV chunk)
    (256, 1, 32, 8192, 32768),   # the default (size_classes_tuned)
    (128, 4, 32, 1024, 8192),    # the PR's
    (256, 1, 64, 8192, 32768), (256, 1, 128, 8192, 32768), (256, 1, 16, 8192, 32768),
    (128, 4, 64, 8192, 32768), (128, 2, 32, 8192, 32768), (512, 1, 32, 8192, 32768),
    (256, 1, 32, 4096, 32768), (256, 1, 32, 16384, 32768), (256, 1, 32, 65536, 65536),
    (256, 1, 32, 8192, 16384), (256, 1, 32, 8192, 65536),
]
CELLS = [(1, 8), (16, 16), (1, 64), (64, 64), (256, 256), (4096, 4096), (65536, 65536),
         (1, 65536)]


def memcpy_sweep(total: int = 64 << 20) -> None:
    exprs = []
    for c in CLASSES:
        exprs += [mc._tiles_expr(SizeClasses(*c)), f"memcpy_size_classes_blev<{c[4]}>"]
    exprs = tuple(dict.fromkeys(exprs))
    kern = {e: get_kernel(mc.SOURCE, e, all_expressions=exprs, options=defines(mc.DEFINES))
            for e in exprs}
    sms = mc.sms(cupy.cuda.Device().id)
    print("cell        " + " ".join(f"{'/'.join(map(str, c)):>22}" for c in CLASSES), flush=True)
    for lo, hi in CELLS:
        sizes = make_sizes(lo, hi, 1, total)
        so, do = offsets(sizes, "consecutive", 2), offsets(sizes, "consecutive", 3)
        data = int(sizes.sum())
        src = cupy.random.RandomState(0).randint(0, 256, size=data + 64, dtype=np.uint8)
        dst = cupy.zeros(data + 64, dtype=np.uint8)
        ref = cupy.zeros_like(dst)
        base_s, base_d, base_r = (np.uint64(a.data.ptr) for a in (src, dst, ref))
        d_src = cupy.asarray(so.astype(np.uint64) + base_s)
        d_sz = cupy.asarray(sizes.astype(np.uint64))
        n = sizes.size
        all_bytes = 2 * data + 24 * n
        row = []
        for c in CLASSES:
            cls = SizeClasses(*c)

            def run(dst_ptrs, cls=cls, n=n, d_src=d_src, d_sz=d_sz):
                # counter, finished BLEV blocks, first chunks, ids (memcpy.cu)
                ws = cupy.empty(2 + n + -(-n // 2), dtype=np.uint64)
                counter, first = ws[:2], ws[2:2 + n]
                ids = ws[2 + n:].view(np.uint32)
                counter.data.memset_async(0, 16)
                tiles = -(-n // (cls.tile_threads * cls.buffers_per_thread))
                kern[mc._tiles_expr(cls)]((tiles,), (cls.tile_threads,),
                                          (d_src, dst_ptrs, d_sz, np.uint64(n), counter, ids,
                                           first))
                kern[f"memcpy_size_classes_blev<{cls.chunk}>"](
                    (mc.BLEV_BLOCKS_PER_SM * sms,), (mc.BLEV_THREADS,),
                    (d_src, dst_ptrs, d_sz, counter, ids, first))

            if not row:  # the default writes the reference
                run(cupy.asarray(do.astype(np.uint64) + base_r))
            d_dst = cupy.asarray(do.astype(np.uint64) + base_d)
            ms = event_ms(lambda d=d_dst, r=run: r(d), runs=10, warmup=2)
            ok = bool((dst == ref).all())
            dst.fill(0)
            row.append(f"{all_bytes / ms / 1e6:>7.0f}{'' if ok else ' WRONG':6s}")
        print(f"{lo}-{hi:<8} " + " ".join(f"{r:>22}" for r in row), flush=True)


if __name__ == "__main__":
    parts = sys.argv[1:] or ["corr", "memcpy"]
    if "corr" in parts:
        corr_split()
    if "memcpy" in parts:
        memcpy_sweep()

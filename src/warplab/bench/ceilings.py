"""Measured ceilings every figure is judged against.

``copy_gbps``: a large device-to-device copy (``cudaMemcpyAsync``), bytes read + written per
second, median of several runs. On the cpu backend: ``np.copyto`` of a large array, same rule.
"""
from __future__ import annotations

import functools

import numpy as np

from .stats import summarize
from .timing import time_runs


@functools.lru_cache(maxsize=4)
def copy_bandwidth(backend: str, nbytes: int | None = None, runs: int = 20) -> dict:
    """Measure the copy ceiling once per process and backend."""
    if backend == "cuda":
        import cupy

        free = cupy.cuda.runtime.memGetInfo()[0]
        n = nbytes or min(1 << 30, free // 4)
        src, dst = cupy.empty(n, np.uint8), cupy.empty(n, np.uint8)
        src.fill(1)

        def run(rec):
            with rec.phase("kernel"):
                dst.data.copy_from_device_async(src.data, n)

        s = time_runs(run, warmup=3, runs=runs, cuda=True)
        del src, dst
        method = "cudaMemcpyAsync device-to-device, bytes read + written"
    else:
        n = nbytes or (256 << 20)
        src, dst = np.ones(n, np.uint8), np.empty(n, np.uint8)

        def run(rec):
            with rec.phase("kernel"):
                np.copyto(dst, src)

        s = time_runs(run, warmup=1, runs=max(3, runs // 4), cuda=False)
        method = "np.copyto host-to-host, bytes read + written"
    st = summarize(s["kernel"])
    return {"copy_gbps": 2 * n / (st["median"] * 1e-3) / 1e9, "copy_bytes": n,
            "copy_ms": st, "copy_method": method}

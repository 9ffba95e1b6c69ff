"""Host time of the public ``copy_batched`` on lists of small device arrays (1..4096 bytes)
against a Python loop of CuPy copies, host clock around call + synchronize, median of 20
(GPU machine; not part of the package's API). Usage:
PYTHONPATH=src python3 benchmarks/explore_copy_batched_call.py
"""
import time, numpy as np, cupy, warplab
for n in (100, 1000):
    sizes = np.random.default_rng(6).integers(1, 4097, size=n)
    srcs = [cupy.full(int(s), 7, dtype=np.uint8) for s in sizes]
    dsts = [cupy.empty(int(s), dtype=np.uint8) for s in sizes]
    def loop():
        for s, d in zip(srcs, dsts): d[...] = s
    for name, fn in (("copy_batched", lambda: warplab.copy_batched(srcs, dsts)), ("loop", loop)):
        for _ in range(3): fn()
        cupy.cuda.Device().synchronize()
        ts = []
        for _ in range(20):
            t = time.perf_counter(); fn(); cupy.cuda.Device().synchronize(); ts.append(time.perf_counter() - t)
        print(n, name, "%.1f us/array" % (np.median(ts) / n * 1e6), flush=True)
    assert all(bool((d == s).all()) for s, d in zip(srcs, dsts))

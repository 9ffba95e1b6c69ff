"""Why does staging into pinned memory run at 12.6 GB/s? (GPU machine; not part of the API.)

The stream campaign (session 7, H100 machine, 16 cores) measured its threaded ``np.copyto`` of
a pageable array into pinned buffers at 12.6 GB/s, while the issue measured 46.5 GB/s with 16
threads copying a 4 GiB pageable array into pinned memory. This sweeps, host side only:

- destination: pinned (``cupyx.empty_pinned``) or plain pageable NumPy memory;
- threads: 1, 2, 4, 8, 16; bytes per task: 1, 4, 16 MiB (the staging code splits a chunk
  into one piece per thread);
- copy: ``np.copyto`` and ``ctypes.memmove`` (both release the GIL for large copies);
- source: a 1 GiB array, touched before (resident) and a fresh one (first-touch page faults
  during the copy, as for an array the user just allocated);

and ``staging.measure_rates("cuda")`` as the stream measures it. GB/s = bytes copied / best of 3.
Usage: PYTHONPATH=src python3 benchmarks/explore_staging.py
"""
from __future__ import annotations

import ctypes
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

TOTAL = 1 << 30


def sweep(dst: np.ndarray, src: np.ndarray, threads: int, piece: int, how: str) -> float:
    bounds = [(a, min(a + piece, TOTAL)) for a in range(0, TOTAL, piece)]
    if how == "copyto":
        def one(b: tuple[int, int]) -> None:
            np.copyto(dst[b[0]:b[1]], src[b[0]:b[1]])
    else:
        d0, s0 = dst.ctypes.data, src.ctypes.data

        def one(b: tuple[int, int]) -> None:
            ctypes.memmove(d0 + b[0], s0 + b[0], b[1] - b[0])
    with ThreadPoolExecutor(threads) as ex:
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            list(ex.map(one, bounds))
            best = min(best, time.perf_counter() - t0)
    return TOTAL / best / 1e9


def main() -> None:
    import cupyx

    from warplab.core import staging

    print("staging.rates('cuda'):", staging.measure_rates("cuda"))
    src = np.ones(TOTAL, np.uint8)
    dests = {"pinned": cupyx.empty_pinned(TOTAL, np.uint8), "pageable": np.empty(TOTAL, np.uint8)}
    for d in dests.values():
        d.fill(0)
    print(f"{'dest':9s} {'how':8s} {'threads':>7s} {'piece':>6s}  GB/s")
    for name, dst in dests.items():
        for how in ("copyto", "memmove"):
            for threads in (1, 2, 4, 8, 16):
                for piece in (1 << 20, 4 << 20, 16 << 20):
                    gbps = sweep(dst, src, threads, piece, how)
                    print(f"{name:9s} {how:8s} {threads:7d} {piece >> 20:4d}Mi  {gbps:6.1f}")
    for threads in (4, 16):
        fresh = np.empty(TOTAL, np.uint8)  # not touched: page faults inside the copy
        t0 = time.perf_counter()
        with ThreadPoolExecutor(threads) as ex:
            list(ex.map(lambda a: np.copyto(dests["pinned"][a:a + (16 << 20)],
                                            fresh[a:a + (16 << 20)]),
                        range(0, TOTAL, 16 << 20)))
        print(f"fresh source -> pinned, {threads} threads, 16 MiB pieces: "
              f"{TOTAL / (time.perf_counter() - t0) / 1e9:6.1f} GB/s (first touch)")


if __name__ == "__main__":
    main()

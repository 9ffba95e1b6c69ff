"""Do slabs for small results pay (issue 15, session 15)? A/B in one process on the GPU machine.

``core/scalar.py`` carves results of at most ``scalar.SMALL`` bytes from per-thread,
per-stream slabs instead of one CuPy pool allocation (and, zeroed, one memset) per result.
This script times the same calls with slabs (``SMALL`` as shipped) and without
(``SMALL = 0``: every result from the pool), alternating the two in each of ``--rounds``
rounds so that the host's drift touches both alike: host time per call (``-n`` calls back to
back, the stream synchronised outside the timing), per round the ratio slabs / pool, and the
median of those ratios. Results are checked against NumPy once per mode.

Usage: PYTHONPATH=src python3 benchmarks/explore_result_slabs.py --out $OUT/slabs.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import cupy
import numpy as np

import warplab
from warplab.core import scalar


def burst(fn, n: int) -> float:
    """Microseconds per call of ``n`` back-to-back calls (synchronised before and after)."""
    stream = cupy.cuda.get_current_stream()
    stream.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    dt = (time.perf_counter() - t0) / n * 1e6
    stream.synchronize()
    return dt


def cases() -> dict:
    rng = np.random.default_rng(15)
    m = cupy.asarray(rng.standard_normal((64, 64)).astype(np.float32))
    u = cupy.asarray(rng.random(1024).astype(np.float32))
    b = cupy.asarray(rng.integers(0, 256, 4096).astype(np.uint8))
    k = cupy.asarray(rng.integers(0, 64, 1024).astype(np.int32))
    w = cupy.asarray(rng.integers(0, 9, 1024).astype(np.float64))
    f32, i64 = np.dtype(np.float32), np.dtype(np.int64)
    hm = m.get().astype(np.float64)
    return {
        "scalar.empty(64, float32)": (lambda: scalar.empty(64, f32), None),
        "scalar.zeros(256, int64)": (lambda: scalar.zeros(256, i64),
                                     lambda r: not r.get().any()),
        "mean(m, axis=1)": (lambda: warplab.mean(m, axis=1),
                            lambda r: np.allclose(r.get(), hm.mean(1), rtol=1e-5)),
        "series_stats(m)": (lambda: warplab.series_stats(m),
                            lambda r: np.allclose(r[0].get(), hm.mean(1), rtol=1e-5)),
        "byte_histogram(b)": (lambda: warplab.byte_histogram(b),
                              lambda r: (r.get() == np.bincount(b.get(), minlength=256)).all()),
        "histogram(u, 64, (0, 1))": (
            lambda: warplab.histogram(u, 64, (0, 1)),
            lambda r: (r[0].get() == np.histogram(u.get(), 64, (0, 1))[0]).all()),
        "bincount(k, w)": (lambda: warplab.bincount(k, w),
                           lambda r: np.array_equal(r.get(), np.bincount(k.get(), w.get()))),
        "corrcoef(m[:8])": (lambda: warplab.corrcoef(m[:8]),
                            lambda r: np.allclose(r.get(), np.corrcoef(hm[:8]), atol=1e-6)),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("-n", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    shipped = scalar.SMALL
    modes = {"slabs": shipped, "pool": 0}
    out: dict = {"small": shipped, "slab": scalar.SLAB, "n": args.n, "cases": {}}
    for name, (fn, ok) in cases().items():
        samples: dict[str, list[float]] = {m: [] for m in modes}
        verified = {}
        for mode, small in modes.items():
            scalar.SMALL = small
            scalar.drop_slabs()
            for _ in range(50):
                fn()
            verified[mode] = True if ok is None else bool(ok(fn()))
        for r in range(args.rounds):
            order = list(modes.items()) if r % 2 == 0 else list(modes.items())[::-1]
            for mode, small in order:
                scalar.SMALL = small
                samples[mode].append(burst(fn, args.n))
        scalar.SMALL = shipped
        ratios = [a / b for a, b in zip(samples["slabs"], samples["pool"])]
        row = {m: statistics.median(v) for m, v in samples.items()}
        row.update(ratio=statistics.median(ratios), verified=verified, samples=samples)
        out["cases"][name] = row
        print(f"{name:28s} slabs {row['slabs']:7.2f} us  pool {row['pool']:7.2f} us  "
              f"ratio {row['ratio']:.3f}  verified {verified}", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()

"""Host time of a small call's result array (issue 15), interleaved in one run: what
``warplab.mean(m, axis=1)`` on 64 x 64 float32 pays for its 64-element result
(``scalar.empty``: CuPy's pool and a ``DeviceArray``) against carving it from a slab (one pool
allocation per 64 KiB, session 13's idea, measured there in another run than its comparator),
and the array object alone. Every piece runs ``-n`` calls back to back per burst; the pieces
take turns burst by burst, so host drift touches them alike; medians over ``--reps`` bursts.
GPU machine; not part of the package's API.

Usage: PYTHONPATH=src python3 benchmarks/explore_small_results.py --out $OUT/results.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time

import cupy
import numpy as np

import warplab
from warplab.core import fastpath, scalar

SLAB, ALIGN = 64 * 1024, 256


class Carver:
    """Session 13's slab, per (device, stream), lock around the bump (``locked``) or one
    slab per host thread (no lock)."""

    def __init__(self, locked: bool) -> None:
        self.locked, self.lock, self.local = locked, threading.Lock(), threading.local()
        self.slabs: dict = {}

    def take(self, shape: tuple, dtype: np.dtype, nbytes: int) -> object:
        step = -(-nbytes // ALIGN) * ALIGN
        key = (cupy.cuda.runtime.getDevice(), fastpath.stream_key())
        slabs = self.slabs if self.locked else self.local.__dict__
        slab = slabs.get(key)
        if slab is None:
            slab = slabs[key] = [None, SLAB]
        if self.locked:
            self.lock.acquire()
        try:
            off = slab[1]
            if off + step > SLAB:
                slab[0], off = cupy.cuda.alloc(SLAB), 0
            slab[1] = off + step
            mem = slab[0]
        finally:
            if self.locked:
                self.lock.release()
        return scalar.array_type()(shape, dtype, mem + off)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("-n", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args()
    f32 = np.dtype(np.float32)
    m = cupy.random.rand(64, 64, dtype=np.float32)
    ref = m.get().astype(np.float64).mean(axis=1)
    got = warplab.mean(m, axis=1)
    assert np.allclose(got.get(), ref, rtol=1e-5), "warplab.mean(m, axis=1) is wrong"
    mem = cupy.cuda.alloc(SLAB)
    locked, unlocked = Carver(True), Carver(False)
    c = locked.take((64,), f32, 256)
    c[...] = 3
    assert float(c.sum()) == 192.0 and type(c) is scalar.array_type()
    pieces = {
        "cupy.empty(64, float32)": lambda: cupy.empty(64, f32),
        "scalar.empty((64,), float32) (the axis results' now)": lambda: scalar.empty((64,), f32),
        "DeviceArray((64,), float32, memptr) (object alone)":
            lambda: scalar.array_type()((64,), f32, mem),
        "cupy.ndarray((64,), float32, memptr)": lambda: cupy.ndarray((64,), f32, mem),
        "memptr + 256": lambda: mem + 256,
        "carve, lock (session 13's slab)": lambda: locked.take((64,), f32, 256),
        "carve, per-thread slab, no lock": lambda: unlocked.take((64,), f32, 256),
        "fastpath.stream_key() + getDevice()":
            lambda: (cupy.cuda.runtime.getDevice(), fastpath.stream_key()),
        "warplab.mean(m, axis=1)": lambda: warplab.mean(m, axis=1),
        "warplab.sum(m)": lambda: warplab.sum(m),
    }
    try:
        import torch

        t = torch.as_tensor(m, device="cuda")
        pieces["torch.mean(t, dim=1)"] = lambda: torch.mean(t, dim=1)
        pieces["torch.empty(64, device=cuda)"] = lambda: torch.empty(64, device="cuda")
    except Exception as e:  # noqa: BLE001
        print("torch absent:", e, file=sys.stderr)
    samples: dict[str, list[float]] = {k: [] for k in pieces}
    stream = cupy.cuda.get_current_stream()
    for fn in pieces.values():
        for _ in range(50):
            fn()
    for _ in range(args.reps):
        for name, fn in pieces.items():
            stream.synchronize()
            t0 = time.perf_counter()
            for _ in range(args.n):
                fn()
            samples[name].append((time.perf_counter() - t0) / args.n * 1e6)
            stream.synchronize()
    rows = {k: statistics.median(v) for k, v in samples.items()}
    for k, v in rows.items():
        print(f"  {k:<56} {v:7.2f} us", flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"host_us": rows, "samples_us": samples, "n": args.n, "reps": args.reps},
                      fh, indent=1)


if __name__ == "__main__":
    main()

"""Pageable host arrays: stage every chunk, or page-lock every few in place while the threads
stage the others (``host="hybrid"``, ``core/pinning.py``)? (GPU machine; issue 16.)

1. What registration costs here: ``cudaHostRegister`` / ``Unregister`` of 64 MiB and 256 MiB
   pieces of a 4 GiB pageable array (ms per GiB), and whether a registration running on one
   thread stalls the driver calls of another (the longest ``memcpyAsync`` + event record of the
   main thread while a second thread registers 1 GiB in 64 MiB pieces).
2. The public calls ``byte_histogram`` and ``sum`` (as int32) of a pageable 4 GiB array under
   stage and hybrid (pin shares, piece sizes), in alternating order, three rounds, each round
   with the staging rate measured first (the host's state moves between calls). Every result
   is checked against the first.

Usage: PYTHONPATH=src python3 benchmarks/explore_stream_hybrid.py [--out FILE.json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import threading
import time

import numpy as np

import warplab
from warplab.core import pinning, staging, streaming

GIB = 1 << 30
CONFIGS = (("stage", None, None), ("hybrid", "0.2", 64), ("hybrid", "0.33", 64),
           ("hybrid", "0.5", 64), ("hybrid", "0.33", 256))


def register_costs(a: np.ndarray) -> list[dict]:
    import cupy

    rows = []
    for piece in (64 << 20, 256 << 20):
        base, n = a.ctypes.data, 1 * GIB
        parts = pinning.pieces(base, n, piece)
        t0 = time.perf_counter()
        for p, m in parts:
            cupy.cuda.runtime.hostRegister(p, m, 0)
        t1 = time.perf_counter()
        for p, _ in parts:
            cupy.cuda.runtime.hostUnregister(p)
        t2 = time.perf_counter()
        rows.append({"piece_mib": piece >> 20, "register_ms_per_gib": (t1 - t0) * 1e3,
                     "unregister_ms_per_gib": (t2 - t1) * 1e3})
        print(f"register {piece >> 20:4d} MiB pieces: {(t1 - t0) * 1e3:6.1f} ms/GiB, "
              f"unregister {(t2 - t1) * 1e3:6.1f} ms/GiB", flush=True)
    return rows


def driver_stall(a: np.ndarray) -> dict:
    """Longest main-thread memcpyAsync + record while another thread registers 1 GiB."""
    import cupy

    d = cupy.empty(4096, np.uint8)
    h = cupy.cuda.alloc_pinned_memory(4096)
    stream = cupy.cuda.Stream(non_blocking=True)
    parts = pinning.pieces(a.ctypes.data + GIB, GIB, 64 << 20)
    done = threading.Event()

    def reg() -> None:
        for p, m in parts:
            cupy.cuda.runtime.hostRegister(p, m, 0)
        done.set()

    def calls(stop_when_done: bool) -> list[float]:
        out = []
        while len(out) < 20000 and not (stop_when_done and done.is_set()):
            t0 = time.perf_counter()
            cupy.cuda.runtime.memcpyAsync(d.data.ptr, h.ptr, 4096, 1, stream.ptr)
            cupy.cuda.Event(disable_timing=True).record(stream)
            out.append(time.perf_counter() - t0)
            if len(out) % 64 == 0:
                stream.synchronize()
        stream.synchronize()
        return out

    idle = calls(False)[:2000]
    t = threading.Thread(target=reg)
    t.start()
    busy = calls(True)
    t.join()
    for p, _ in parts:
        cupy.cuda.runtime.hostUnregister(p)
    row = {"idle_max_us": max(idle) * 1e6, "idle_median_us": statistics.median(idle) * 1e6,
           "during_register_max_us": max(busy) * 1e6,
           "during_register_median_us": statistics.median(busy) * 1e6,
           "calls_during_register": len(busy)}
    print("driver calls while another thread registers 1 GiB: "
          + ", ".join(f"{k} {v:.1f}" for k, v in row.items()), flush=True)
    return row


def run_config(fn, x, host: str, share: str | None, piece: int | None) -> tuple[float, dict, object]:
    os.environ["WARPLAB_STREAM_HOST"] = host
    if share is not None:
        os.environ["WARPLAB_STREAM_PIN_SHARE"] = share
        pinning.PIN_PIECE = piece << 20
    with streaming.collect() as stats:
        t0 = time.perf_counter()
        got = fn(x)
        wall = time.perf_counter() - t0
    return x.nbytes / wall / 1e9, stats[-1], got


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    a = np.empty(4 * GIB, np.uint8)
    a[:] = np.arange(4 * GIB // 8, dtype=np.uint64).view(np.uint8) * np.uint8(37)
    out: dict = {"register": register_costs(a), "stall": driver_stall(a), "runs": []}
    def host(r):
        return r.get() if hasattr(r, "get") else np.asarray(r)

    calls = {"byte_histogram": lambda x: host(warplab.byte_histogram(x)),
             "sum_int32": lambda x: int(warplab.sum(x.view(np.int32)))}
    want = {k: f(a) for k, f in calls.items()}  # warm-up, reference (stage: the default)
    for r in range(args.rounds):
        staging._RATES.pop("cuda", None)
        rate = staging.rates("cuda")
        print(f"round {r}: staging {rate.stage_gbps:.1f} GB/s, H2D {rate.h2d_gbps:.1f}",
              flush=True)
        order = CONFIGS if r % 2 == 0 else CONFIGS[::-1]
        for name, fn in calls.items():
            for host, share, piece in order:
                gbps, st, got = run_config(fn, a, host, share, piece)
                ok = bool(np.array_equal(got, want[name]))
                out["runs"].append({"round": r, "call": name, "host": host, "share": share,
                                    "piece_mib": piece, "gbps": gbps, "verified": ok,
                                    "stage_gbps": rate.stage_gbps, "h2d_gbps": rate.h2d_gbps,
                                    **{k: v for k, v in st.items() if k != "host"},
                                    "how": st["host"]})
    print(f"\n{'call':15} {'host':7} {'share':5} {'MiB':>4}  GB/s per round        median  ok")
    for name in calls:
        for host, share, piece in CONFIGS:
            rs = [x for x in out["runs"] if x["call"] == name and x["host"] == host
                  and x["share"] == share and x["piece_mib"] == piece]
            g = [x["gbps"] for x in rs]
            print(f"{name:15} {host:7} {share or '-':5} {piece or '-':>4}  "
                  + " ".join(f"{v:5.1f}" for v in g)
                  + f"   {statistics.median(g):5.1f}  {all(x['verified'] for x in rs)}")
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()

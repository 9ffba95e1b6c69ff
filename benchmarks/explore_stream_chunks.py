"""Where does the pageable stream lose against the staging sweep? (GPU machine; not the API.)

``explore_staging.py`` (session 8, H100 machine, 16 cores) copies a pageable array into pinned
memory at 44-50 GB/s with 16 threads and 4-16 MiB pieces, yet the stream campaign measured
19.4 GB/s end to end for a pageable 4 GiB array. This times the public call
``warplab.sum(x)`` on a pageable 4 GiB float32 array (and a pinned copy of it, the bus alone)
under chunk sizes (``chunk_bytes`` through ``WARPLAB_STREAM_CHUNK``) and ring depths
(``streaming.RING``), best of 3 after a warm-up. Prints a table; JSON to $OUT if set.
Usage: PYTHONPATH=src python3 benchmarks/explore_stream_chunks.py
"""
from __future__ import annotations

import json
import os
import time

import numpy as np

import warplab
from warplab.core import staging, streaming

N = 1 << 30  # float32: 4 GiB


def best_gbps(fn, nbytes: int, reps: int = 3) -> float:
    fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return nbytes / best / 1e9


def main() -> None:
    import cupyx

    rows = []
    x = np.random.default_rng(0).standard_normal(N, dtype=np.float32)
    want = float(x.sum(dtype=np.float64))
    pinned = cupyx.empty_pinned(N, np.float32)
    pinned[...] = x
    print("rates:", staging.measure_rates("cuda"), flush=True)
    g = best_gbps(lambda: warplab.sum(pinned), x.nbytes)
    rows.append({"source": "pinned", "chunk_mib": None, "ring": streaming.RING, "gbps": g})
    print(f"pinned source, planned chunk: {g:.1f} GB/s", flush=True)
    for ring in (4, 8):
        streaming.RING = ring
        for mib in (None, 16, 32, 64, 128, 256):
            if mib is None:
                os.environ.pop("WARPLAB_STREAM_CHUNK", None)
            else:
                os.environ["WARPLAB_STREAM_CHUNK"] = str(mib << 20)
            got = float(warplab.sum(x))
            ok = abs(got - want) <= 1e-3 * abs(want) + 1.0
            g = best_gbps(lambda: warplab.sum(x), x.nbytes)
            rows.append({"source": "pageable", "chunk_mib": mib, "ring": ring, "gbps": g,
                         "ok": ok})
            print(f"pageable ring {ring} chunk {mib or 'planned'} MiB: {g:.1f} GB/s ok={ok}",
                  flush=True)
    os.environ.pop("WARPLAB_STREAM_CHUNK", None)
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "explore-stream-chunks.json"), "w") as fh:
            json.dump({"rows": rows, "threads": staging.threads()}, fh, indent=1)


if __name__ == "__main__":
    main()

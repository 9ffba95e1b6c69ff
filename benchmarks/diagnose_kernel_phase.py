"""Where does the kernel phase's time go? (GPU machine; not part of the package's API.)

Times the default histogram kernel on 1 GiB of uniform bytes in several settings, medians of
CUDA-event-timed runs, to separate the kernel itself from what surrounds it in a run of the
harness: host launch overhead between the events (held vs not held), the H2D copy before it
(pageable, pinned), and an idle gap before the kernel (GPU clocks).
Usage: PYTHONPATH=src python3 benchmarks/diagnose_kernel_phase.py
"""
from __future__ import annotations

import time

import cupy
import cupyx
import numpy as np

import warplab
from warplab.core import registry as _registry
from warplab.families.histogram.spec import resolve
from warplab.lab.harness import data
from warplab.lab.harness.timing import time_runs

N = 1 << 30


def main() -> None:
    h = data.generate_fast("uniform", N)
    h_pinned = cupyx.empty_pinned(N, dtype=np.uint8)
    h_pinned[...] = h
    d = cupy.asarray(h)
    bins = cupy.zeros(256, dtype=np.int64)
    m = resolve("bytes")
    for name in (warplab.variants("histogram", "cuda")[0], "warp_private_vec"):
        v = _registry.get("histogram", name)

        def kernel():
            bins.fill(0)
            v.fn(d, bins, m)

        def case(label, before=None, hold=False):
            def run(rec):
                if before:
                    with rec.phase("before"):
                        before()
                with rec.phase("kernel", hold=hold):
                    kernel()
            s = time_runs(run, warmup=3, runs=15, cuda=True)
            print(f"{name:18s} {label:40s} kernel median {np.median(s['kernel']):.4f} ms "
                  f"({N / np.median(s['kernel']) / 1e6:.0f} GB/s)", flush=True)

        case("back-to-back, not held")
        case("back-to-back, held", hold=True)
        case("after pageable H2D, not held", lambda: d.set(h))
        case("after pageable H2D, held", lambda: d.set(h), hold=True)
        case("after pinned H2D, not held", lambda: d.set(h_pinned))
        case("after pinned H2D, held", lambda: d.set(h_pinned), hold=True)
        case("after 100 ms idle, held",
             lambda: (cupy.cuda.get_current_stream().synchronize(), time.sleep(0.1)), hold=True)


if __name__ == "__main__":
    main()

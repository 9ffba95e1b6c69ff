"""Where the host time of each small call goes (GPU machine; not part of the package's API).

For every latency case (lab/campaigns/latency/cases.py) on device input: warm up, then run the call
``CALLS`` times back to back under cProfile (no synchronisation, as the campaign's "host time
per call") and print the functions with the most own time and the most cumulative time, per
call in microseconds. cProfile inflates Python-heavy frames (a few hundred ns per call
event), so read shares, not absolute times; the wall time per call without the profiler is
printed first.
Usage: PYTHONPATH=src python3 benchmarks/profile_latency.py [CASE ...] > profile.log
"""
from __future__ import annotations

import cProfile
import pstats
import sys
import time

import cupy
import numpy as np

from warplab.lab.campaigns.latency import cases as lc

CALLS, TOP = 300, 14


def main(names: list[str]) -> None:
    for case in lc.select(names or None):
        d = lc.to_device(case.make(np.random.default_rng(0)))
        for _ in range(20):
            case.call(d)
        cupy.cuda.get_current_stream().synchronize()
        t0 = time.perf_counter()
        for _ in range(CALLS):
            case.call(d)
        wall = (time.perf_counter() - t0) / CALLS * 1e6
        cupy.cuda.get_current_stream().synchronize()
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(CALLS):
            case.call(d)
        prof.disable()
        cupy.cuda.get_current_stream().synchronize()
        st = pstats.Stats(prof)
        rows = []
        for (file, line, fn), (cc, nc, tt, ct, _) in st.stats.items():
            short = f"{file.split('site-packages/')[-1].split('src/')[-1]}:{line}({fn})"
            rows.append((tt, ct, nc, short))
        print(f"\n=== {case.name}: {case.code}  wall {wall:.1f} us/call (no profiler)")
        print("  own us/call  cum us/call  calls/call  function")
        for key, label in ((0, "by own time"), (1, "by cumulative time")):
            print(f"  -- {label}")
            for tt, ct, nc, short in sorted(rows, key=lambda r: -r[key])[:TOP]:
                print(f"  {tt / CALLS * 1e6:10.2f} {ct / CALLS * 1e6:12.2f} {nc / CALLS:10.2f}  "
                      f"{short}")


if __name__ == "__main__":
    main(sys.argv[1:])

"""Few long rows: how many blocks per row? (GPU machine; not part of the package's API.)

The series table (H100, session 7) measured ``rows_adaptive`` on 16 x 2^24 float32 at 2810
GB/s (91% of the read ceiling) with its split plan: S = 66 blocks per row, one wave of the
resident blocks, each block reading ~1 MB of its row. ``k2_multiblock`` reached 3046 and
torch.mean 3006 on the same data. This times the split kernel under other S (2x, 4x, 8x the
plan's: several waves, smaller chunks) and reports ``k2_multiblock`` and torch beside it:
held kernel phase (the campaign's timing), median of 30, each result checked against the
float64 mean.
Usage: PYTHONPATH=src python3 benchmarks/explore_rows_long.py
"""
from __future__ import annotations

import cupy
import numpy as np

from warplab.lab.harness import ceilings
from warplab.lab.harness.ceilings import _timed
from warplab.core.loader import occupancy_blocks_per_sm
from warplab.families.reduce import axis_cuda as ac
from warplab.families.reduce.axis import reduce_axis


def held_ms(fn) -> float:
    return _timed(fn, cuda=True, warmup=3, runs=30, hold=True)["median"]


def main() -> None:
    read = ceilings.measure_all("cuda")["read_gbps"]
    rows, cols = 16, 1 << 24
    x = cupy.random.standard_normal((rows, cols), dtype=np.float32)
    ref = x.astype(np.float64).mean(axis=1)
    nbytes = x.nbytes + rows * 4
    t = np.dtype(np.float32)
    args = ac.targs("mean", t)
    dev = cupy.cuda.runtime.getDevice()
    sms = ac.sm_count(dev)
    es = f"axis_rows_split<{args}, true>"
    k = ac._kernel(es, args, dev)
    bps = occupancy_blocks_per_sm(ac._kernel(es, args, dev), ac.BLOCK, 0)
    plan = ac.plan_rows(rows, cols, 4, sms, bps, bps)
    print(f"read ceiling {read:.0f} GB/s; plan: S = {plan.splits}, chunk {plan.chunk}, "
          f"{bps} blocks/SM resident")
    out = cupy.empty(rows, np.float32)
    for mult in (1, 2, 4, 8, 16):
        s = plan.splits * mult
        chunk = -(-(-(-cols // s)) // 4) * 4
        s = -(-cols // chunk)
        partials = ac._partials("double", t, rows * s)
        tickets = ac.TICKETS.get(rows)

        def launch(s=s, chunk=chunk, partials=partials, tickets=tickets) -> None:
            k((rows * s,), (ac.BLOCK,), (x, np.uint64(rows), np.uint64(cols), np.uint64(cols),
                                         np.uint32(s), np.uint64(chunk), partials, tickets, out,
                                         np.float64(0), np.uint64(0)))
        ms = held_ms(launch)
        err = float(cupy.abs(out.astype(np.float64) - ref).max())
        gbps = nbytes / ms / 1e6
        print(f"  split S = {s:5d} ({mult:2d}x plan): {ms * 1e3:7.1f} us {gbps:6.0f} GB/s "
              f"{100 * gbps / read:5.1f}% of read  err {err:.1e}")
    for name, fn in (("k2_multiblock", lambda: reduce_axis(x, "mean", 1, variant="k2_multiblock")),
                     ("rows_adaptive", lambda: reduce_axis(x, "mean", 1))):
        ms = held_ms(fn)
        print(f"  {name:28s}: {ms * 1e3:7.1f} us {nbytes / ms / 1e6:6.0f} GB/s "
              f"{100 * nbytes / ms / 1e6 / read:5.1f}% of read")
    try:
        import torch

        xt = torch.as_tensor(x, device="cuda")
        ms = held_ms(lambda: torch.mean(xt, dim=1))
        print(f"  {'torch.mean':28s}: {ms * 1e3:7.1f} us {nbytes / ms / 1e6:6.0f} GB/s "
              f"{100 * nbytes / ms / 1e6 / read:5.1f}% of read")
    except ImportError:
        print("  torch not importable")


if __name__ == "__main__":
    main()

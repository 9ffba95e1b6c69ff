"""Where the call latency of the batched copies goes on the device side, against PyTorch
(GPU machine; not part of the package's API).

The latency campaign measured ``copy_batched`` and ``memcpy_batched`` of 8 device buffers of
1 KiB at 1.23-1.24x the call latency of ``torch._foreach_copy_`` while their host times were
1.21x and 0.83x of torch's: 2-3 us of the difference is after the host's part. This splits,
for each of the three calls (the same buffers; torch on DLPack views of them):

* ``host``: host microseconds per call, back to back (``host_timing.per_call``);
* ``latency``: the call then a synchronisation of the current stream, per call;
* ``device``: the GPU time of one call alone, from an event recorded before it to one after
  it, with a spinning kernel queued first so that the host's launch time is hidden (the
  queue is full when the events run): the kernels' own time, median of ``--rounds``;
* ``sync``: the latency with ``cudaDeviceSynchronize`` (CuPy's device) instead of the
  stream's, and with torch's ``torch.cuda.synchronize()`` for torch.

Every call's copies are checked once. Usage:
  PYTHONPATH=src:benchmarks python3 benchmarks/explore_batched_device.py [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import statistics

import cupy
import numpy as np
from host_timing import per_call

import warplab

PAIRS, NBYTES = 8, 1024
SPIN = r'''extern "C" __global__ void spin(long long cycles) {
    long long t0 = clock64(); while (clock64() - t0 < cycles) { } }'''


def _device_us(fn, spin, rounds: int) -> float:
    """Median GPU microseconds of one ``fn()`` queued behind a 200 us spinning kernel."""
    out = []
    for _ in range(rounds):
        a, b = cupy.cuda.Event(), cupy.cuda.Event()
        spin((1,), (1,), (np.int64(400_000),))
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(cupy.cuda.get_elapsed_time(a, b) * 1e3)
    return statistics.median(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--json", default=None)
    a = p.parse_args()
    import torch

    rng = np.random.default_rng(1)
    srcs = [cupy.asarray(rng.integers(0, 255, NBYTES, dtype=np.uint8)) for _ in range(PAIRS)]
    dsts = [cupy.zeros(NBYTES, np.uint8) for _ in range(PAIRS)]
    src_ptrs = cupy.asarray([s.data.ptr for s in srcs], np.uint64)
    dst_ptrs = cupy.asarray([d.data.ptr for d in dsts], np.uint64)
    sizes = cupy.asarray([NBYTES] * PAIRS, np.int64)
    t_srcs = [torch.from_dlpack(s) for s in srcs]
    t_dsts = [torch.from_dlpack(d) for d in dsts]
    calls = {
        "copy_batched": lambda: warplab.copy_batched(srcs, dsts),
        "memcpy_batched": lambda: warplab.memcpy_batched(src_ptrs, dst_ptrs, sizes),
        "torch._foreach_copy_": lambda: torch._foreach_copy_(t_dsts, t_srcs),
    }
    spin = cupy.RawKernel(SPIN, "spin")
    device = cupy.cuda.Device()
    rows = {}
    for name, fn in calls.items():
        for d in dsts:
            d.fill(0)
        fn()
        device.synchronize()
        assert all(bool((d == s).all()) for s, d in zip(srcs, dsts)), name
        rows[name] = {
            "host_us": per_call(fn),
            "latency_us": per_call(fn, sync_each=True),
            "latency_device_sync_us": per_call(lambda fn=fn: (fn(), device.synchronize())),
            "device_us": _device_us(fn, spin, a.rounds),
        }
        if name.startswith("torch"):
            rows[name]["latency_torch_sync_us"] = per_call(
                lambda fn=fn: (fn(), torch.cuda.synchronize()))
    cols = ["host_us", "latency_us", "latency_device_sync_us", "device_us"]
    print(f"{'call':22s}" + "".join(f"{c[:-3]:>22s}" for c in cols))
    for name, r in rows.items():
        print(f"{name:22s}" + "".join(f"{r[c]:22.2f}" for c in cols))
    if "latency_torch_sync_us" in rows["torch._foreach_copy_"]:
        print(f"torch with torch.cuda.synchronize(): "
              f"{rows['torch._foreach_copy_']['latency_torch_sync_us']:.2f} us")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"pairs": PAIRS, "bytes_each": NBYTES, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()

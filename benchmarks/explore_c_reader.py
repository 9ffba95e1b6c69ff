"""The C reader of ``copy_batched``'s device pairs (``core/devicepairs.c``: ``device_pairs``) A/B
between two builds of the extension, with CuPy arrays over host memory
(``cupy.cuda.UnownedMemory``): no GPU needed, only CuPy installed (not part of the package's
API).

Both builds are loaded in one process (as ``a._hostcopy`` and ``b._hostcopy``). First
``--cases`` random batches (1-100 pairs of 0-1000 elements of eight dtypes, C-contiguous or
not, some overlapping, on another device or not CuPy arrays at all) must give equal results
(the same table, largest and total, or None from both); then the reader of ``--pairs`` pairs
is timed, the two builds' batches of 5,000 calls alternating, and the median of the per-round
ratios printed.

Usage: python benchmarks/explore_c_reader.py BEFORE.so AFTER.so [--pairs N] [--cases N]
(build one with ``python -c "import setup; setup.build_in_place()"`` and copy
``src/warplab/core/_hostcopy*.so`` aside before the change).
"""
from __future__ import annotations

import argparse
import importlib.util
import random
import statistics
import timeit
from typing import Any

import cupy
import numpy as np

DTYPES = (np.float32, np.float64, np.float16, np.int8, np.uint64, np.complex128, np.bool_,
          np.int32)


def load(tag: str, path: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"{tag}._hostcopy", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--cases", type=int, default=4000)
    args = ap.parse_args()
    mods = {"before": load("a", args.before), "after": load("b", args.after)}
    host = np.zeros(1 << 24, np.uint8)
    mems = {d: cupy.cuda.UnownedMemory(host.ctypes.data, host.nbytes, host, device_id=d)
            for d in (0, 1)}
    rng = random.Random(1)

    def array(off: int, dev: int = 0) -> Any:
        dt, n = np.dtype(rng.choice(DTYPES)), rng.choice([0, 1, 3, 64, 1000])
        mp = cupy.cuda.MemoryPointer(mems[dev], off)
        kind = rng.choices(["c", "t", "2d", "slice"], [40, 1, 3, 1])[0]
        if kind == "t":  # transposed: not C-contiguous unless trivial
            return cupy.ndarray((4, max(n // 4, 1)), dt, mp).T
        if kind == "2d":
            return cupy.ndarray((2, max(n // 2, 1)), dt, mp)
        if kind == "slice":
            return cupy.ndarray((max(n, 2),), dt, mp)[::2]
        return cupy.ndarray((n,), dt, mp)

    refused = 0
    for case in range(args.cases):
        n = rng.choice([1, 2, 8, 33, 100])
        srcs = [array(40000 * i) for i in range(n)]
        dsts = [cupy.ndarray(s.shape, s.dtype, cupy.cuda.MemoryPointer(mems[0], 40000 * i + 20000))
                if rng.random() < 0.9 else array(40000 * i + 20000) for i, s in enumerate(srcs)]
        r = rng.random()
        if r < 0.05:  # a destination on a source
            dsts[rng.randrange(n)] = srcs[rng.randrange(n)]
        elif r < 0.08:  # a destination on another device
            j = rng.randrange(n)
            dsts[j] = cupy.ndarray(srcs[j].shape, srcs[j].dtype,
                                   cupy.cuda.MemoryPointer(mems[1], 1 << 23))
        elif r < 0.1:  # not a CuPy array
            dsts[rng.randrange(n)] = np.zeros(4)
        dev, rows = rng.choice([0, 0, 0, 1]), rng.choice([0, 32])
        a, b = (m.device_pairs(cupy.ndarray, dsts, srcs, dev, rows) for m in mods.values())
        assert a == b, f"case {case}: {a and a[1:]} != {b and b[1:]}"
        refused += a is None
    print(f"{args.cases} batches: equal results ({refused} refused by both)")
    mem = mems[0]
    srcs = [cupy.ndarray((256,), np.float32, cupy.cuda.MemoryPointer(mem, 1024 * i))
            for i in range(args.pairs)]
    dsts = [cupy.ndarray((256,), np.float32, cupy.cuda.MemoryPointer(mem, (1 << 20) + 1024 * i))
            for i in range(args.pairs)]
    us: dict[str, list[float]] = {k: [] for k in mods}
    for _ in range(15):
        for k, m in mods.items():
            us[k].append(1e6 * timeit.timeit(
                lambda m=m: m.device_pairs(cupy.ndarray, dsts, srcs, 0, 32), number=5000) / 5000)
    for k, v in us.items():
        print(f"{k}: {args.pairs} pairs, median {statistics.median(v):.3f} us, min {min(v):.3f}")
    ratios = [b / a for a, b in zip(us["before"], us["after"])]
    print(f"after / before, median of the per-round ratios: {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()

"""The public per-row and per-column reductions of two trees on one GPU machine (not part of
the package's API).

``run``: ``warplab.mean``/``sum(x, axis=a)`` on the issue's shapes, float32 and float64, with
``torch.mean``/``sum(dim=a)`` on the same device array timed in the same process: ``CALLS``
calls back to back between two CUDA events, the two libraries' batches alternating, median of
``BATCHES`` batches. Only the public API is called, so the same script times any tree
(``PYTHONPATH=<tree>/src``); every result is checked against a float64 reduction (largest
error over the largest magnitude at most ``TOL``: ``verified`` in the record, ``WRONG`` in the
line).

``compare``: the records of runs of two trees (each a list of JSON files, e.g. two rounds a
tree with the order alternated), matched by (axis, shape, dtype, op): the median time per
tree, new / base, and torch's time over each tree's (the steadier figure across processes).

Usage: python3 benchmarks/public_axis_before_after.py run --json PATH [--shapes A:RxC,...]
       python3 benchmarks/public_axis_before_after.py compare --base A.json... --new B.json...
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from typing import Any

#: (axis, rows, columns): the issue's per-row shapes and the axis-0 table's.
SHAPES = ((1, 1 << 20, 32), (1, 1 << 17, 256), (1, 1 << 21, 33), (1, 65536, 1000),
          (1, 32768, 4097), (1, 8192, 8192), (1, 256, 1 << 20), (1, 16, 1 << 24),
          (0, 8192, 8192), (0, 32, 1 << 20), (0, 1 << 20, 32), (0, 16, 1 << 20),
          (0, 64, 1 << 20), (0, 128, 1 << 20), (0, 512, 1 << 18), (0, 2048, 1 << 16))
DTYPES, OPS = ("float32", "float64"), ("mean", "sum")
CALLS, BATCHES = 10, 9
#: Largest relative error verified, by dtype (results rounded to float32 carry 6e-8).
TOL = {"float32": 1e-5, "float64": 1e-12}


def alternate(calls: dict[str, Callable[[], Any]]) -> dict[str, float]:
    """Median per-call ms of each call, their batches of ``CALLS`` calls between two CUDA
    events alternating (``host_timing.device_per_call``: one warm call before each batch)."""
    from host_timing import device_per_call

    for c in calls.values():
        c()
    samples: dict[str, list[float]] = {k: [] for k in calls}
    for _ in range(BATCHES):
        for k, c in calls.items():
            samples[k].append(device_per_call(c, CALLS, 1) * 1e3)
    return {k: statistics.median(v) for k, v in samples.items()}


def parse_shapes(text: str) -> tuple[tuple[int, int, int], ...]:
    out = []
    for item in text.split(","):
        axis, _, rc = item.partition(":")
        r, _, c = rc.partition("x")
        out.append((int(axis), int(r), int(c)))
    return tuple(out)


def run(path: str, shapes: tuple[tuple[int, int, int], ...]) -> None:
    import cupy
    import numpy as np
    import torch

    import warplab as wl

    records = []
    for axis, r, c in shapes:
        for dt in DTYPES:
            x = cupy.random.default_rng(7).random((r, c), dtype=np.float32).astype(dt)
            t = torch.from_dlpack(x)
            ref_sum = cupy.sum(x, axis=axis, dtype=np.float64)
            for op in OPS:
                ref = ref_sum / (r if axis == 0 else c) if op == "mean" else ref_sum
                got = getattr(wl, op)(x, axis=axis)
                err = float(cupy.max(cupy.abs(got.astype(np.float64) - ref))
                            / max(1.0, float(cupy.max(cupy.abs(ref)))))
                ours, theirs = getattr(wl, op), getattr(torch, op)
                ms = alternate({"warplab": lambda f=ours, a=x, k=axis: f(a, axis=k),
                                "torch": lambda f=theirs, a=t, k=axis: f(a, dim=k)})
                nbytes = x.nbytes + ref.size * x.itemsize
                rec = {"axis": axis, "shape": [r, c], "dtype": dt, "op": op,
                       "warplab_ms": ms["warplab"], "torch_ms": ms["torch"],
                       "warplab_gbs": nbytes / ms["warplab"] / 1e6, "max_rel_err": err,
                       "verified": err <= TOL[dt]}
                records.append(rec)
                print(f"axis {axis} {r}x{c} {dt} {op}: {ms['warplab'] * 1e3:9.1f} us "
                      f"({rec['warplab_gbs']:7.1f} GB/s), torch / warplab "
                      f"{ms['torch'] / ms['warplab']:.3f}, err {err:.1e}"
                      f"{'' if rec['verified'] else '  WRONG'}", flush=True)
            del x, t
            cupy.get_default_memory_pool().free_all_blocks()
    with open(path, "w") as f:
        json.dump({"device": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(),
                   "calls": CALLS, "batches": BATCHES, "records": records}, f, indent=1)


def key(r: dict) -> tuple:
    return r["axis"], tuple(r["shape"]), r["dtype"], r["op"]


def load(paths: list[str]) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = {}
    for p in paths:
        with open(p) as f:
            for r in json.load(f)["records"]:
                out.setdefault(key(r), []).append(r)
    return out


def compare(base: list[str], new: list[str]) -> int:
    """Prints the matched records; returns the number of cases where new is more than 3%
    slower than base by both the time and the ratio to torch, or a record of either tree was
    not verified (marked WRONG)."""
    a, b = load(base), load(new)
    slower = 0
    print(f"{'axis shape dtype op':34} {'base us':>9} {'new us':>9} {'new/base':>8} "
          f"{'torch/base':>10} {'torch/new':>9}")
    for k in sorted(set(a) & set(b)):
        def med(rs: list[dict], f: str) -> float:
            return statistics.median(r[f] for r in rs)

        tb, tn = med(a[k], "warplab_ms"), med(b[k], "warplab_ms")
        rb = statistics.median(r["torch_ms"] / r["warplab_ms"] for r in a[k])
        rn = statistics.median(r["torch_ms"] / r["warplab_ms"] for r in b[k])
        flag = tn / tb > 1.03 and rn < rb / 1.03
        wrong = not all(r.get("verified", True) for r in a[k] + b[k])
        slower += flag or wrong
        label = f"{k[0]} {k[1][0]}x{k[1][1]} {k[2]} {k[3]}"
        print(f"{label:34} {tb * 1e3:9.1f} {tn * 1e3:9.1f} {tn / tb:8.3f} {rb:10.3f} "
              f"{rn:9.3f}{'  SLOWER' if flag else ''}{'  WRONG' if wrong else ''}")
    print(f"{slower} case(s) more than 3% slower by both the time and the ratio to torch, "
          "or not verified")
    return slower


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--json", required=True)
    r.add_argument("--shapes", type=parse_shapes, default=SHAPES,
                   help="axis:RxC,... (default: the issue's shapes)")
    c = sub.add_parser("compare")
    c.add_argument("--base", nargs="+", required=True)
    c.add_argument("--new", nargs="+", required=True)
    args = p.parse_args()
    if args.cmd == "run":
        run(args.json, args.shapes)
    else:
        sys.exit(1 if compare(args.base, args.new) else 0)


if __name__ == "__main__":
    main()

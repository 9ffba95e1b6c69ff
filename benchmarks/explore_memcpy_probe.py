"""Where the layout-probed kernel's default body loses 2-4% against the default kernel
(session 18, call 1: C_C 1-8 B a1 1252 -> 1214 GB/s, C_C 16 B -3.8%, S_C 1-8 B a4 -3.2%).
Diagnostic kernels (``explore_memcpy_probe.cu``), each the default's body with one
difference, timed beside the default and ``warp_tiers_probed`` on the cells whose buffers
are at most 8 KiB (none queued: the kernels get null queue pointers) by the planned grid's
runner (L2 reset before each target, every record checked): both bodies with the verdict a
kernel parameter (0 and 1), the default's body behind a load of the verdict word, behind the
barrier alone, both bodies with the verdict in constant memory (0 and 1), the evict-first
body alone. GPU machine; not part of the package's API.

Usage: cd benchmarks && PYTHONPATH=../src python3 explore_memcpy_probe.py --out $OUT/x.json
"""
from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import cupy
import numpy as np
from explore_memcpy_small import cells_args, finish_script, measure_cells, records_by_case

from warplab.core.loader import BASE_OPTIONS, defines
from warplab.families.memcpy import cuda as mc
from warplab.families.memcpy.bench import Case, targets

SOURCE = Path(__file__).with_name("explore_memcpy_probe.cu")
NAMES = ("probe_by_value", "probe_load_only", "probe_barrier_only", "probe_by_constant",
         "probe_tiny_only")
C, S = "consecutive", "shuffle"
CELLS = [(1, 8, 1, C, C), (1, 8, 4, C, C), (1, 8, 4, S, C), (1, 8, 1, S, C), (16, 16, 1, C, C),
         (1, 8, 1, C, S), (1, 8, 1, S, S), (1, 8, 4, C, S), (1, 8, 4, S, S)]


MODULE: list = []


def module():
    """The diagnostic kernels' module (compiled once, with the default's constants)."""
    if not MODULE:
        options = (*BASE_OPTIONS, *defines({**mc.DEFINES, "WARPLAB_MEMCPY_LOADS": 2}),
                   f"-I{mc.SOURCE.parent}")
        MODULE.append(cupy.RawModule(code=SOURCE.read_text(), options=options))
    return MODULE[0]


def kernel(name: str):
    return module().get_function(name)


def main() -> None:
    args = cells_args(__doc__)
    t0 = time.perf_counter()
    word = cupy.zeros(1, dtype=np.uint32)
    fns = {n: kernel(n) for n in NAMES}
    c_ptr = module().get_global("c_verdict")

    def launch(name: str, b, *extra):
        grid = min(-(-b.count // mc.WARP_THREADS), mc.MAX_GRID)
        fns[name]((grid,), (mc.WARP_THREADS,), (b.src, b.dst, b.sizes, np.uint64(b.count),
                                                  np.uint64(0), np.uint64(0), np.uint64(0),
                                                  *extra))

    def by_constant(v: int):
        def fn(b) -> None:
            c_ptr.copy_from_device_async(word_v[v].data, 4)
            launch("probe_by_constant", b)
        return fn

    word_v = {0: cupy.zeros(1, dtype=np.uint32), 1: cupy.ones(1, dtype=np.uint32)}
    tgts = [t for t in targets(["warp_tiers_words", "warp_tiers_probed"], False)[0]]
    tgts += [SimpleNamespace(name="by_value v0", fn=lambda b: launch("probe_by_value", b,
                                                                     np.uint32(0))),
             SimpleNamespace(name="by_value v1", fn=lambda b: launch("probe_by_value", b,
                                                                     np.uint32(1))),
             SimpleNamespace(name="load_only", fn=lambda b: launch("probe_load_only", b, word)),
             SimpleNamespace(name="barrier_only", fn=lambda b: launch("probe_barrier_only", b)),
             SimpleNamespace(name="by_constant v0", fn=by_constant(0)),
             SimpleNamespace(name="by_constant v1", fn=by_constant(1)),
             SimpleNamespace(name="tiny_only", fn=lambda b: launch("probe_tiny_only", b))]
    notes = ["constant verdict: copied device to device before each launch of by_constant"]
    grid = [Case(lo, hi, s, d, a, 1) for lo, hi, a, s, d in CELLS]
    records, ceilings = measure_cells(grid, tgts, notes, args.runs)
    by_case = records_by_case(records)
    names = [t.name for t in tgts]
    print(f"{'cell':<14}" + "".join(f"{n[:14]:>15}" for n in names))
    for case, recs in by_case.items():
        base = recs.get("warp_tiers_words", {}).get("gbps")
        row = f"{case:<14}"
        for n in names:
            r = recs.get(n)
            row += (f"{r['gbps']:8.0f} {r['gbps'] / base:5.3f}{' ' if r['verified'] else '!'}"
                    if r and base else f"{'-':>15}")
        print(row, flush=True)
    finish_script("explore_memcpy_probe", records, ceilings, notes, args.out, t0)


if __name__ == "__main__":
    main()

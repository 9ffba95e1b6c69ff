"""corrcoef by row chunks against one engine over every row, on one GPU, without Dask.

``warplab.dask.corrcoef``'s workers compute their blocks from engines over each row chunk
(``families/corr/chunks.py``: ``Chunks``, each chunk's engine built by its first block).
A replica plan builds one engine over every row instead. This times both on one GPU for the
Dask campaign's shape (65,536 x 4,096 float32 random walks in 8 row chunks), each block
synchronised (the Dask task of a block used to be):

* ``whole``: the engine over every row (what the single call and a replica build), then the
  36 blocks ``(I, J)``, ``I <= J``, from it;
* ``chunks``: ``first`` the block (0, 0) with chunk 0's engine, then the other 35 blocks
  (the first block of each chunk builds its engine).

Prints the median of ``--runs`` per phase (ms) and writes them as JSON. Usage (GPU machine):
  PYTHONPATH=src python3 benchmarks/explore_corr_chunks.py --json $OUT/chunks.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import numpy as np


def _walks(m: int, n: int, seed: int) -> Any:
    import cupy

    rng = cupy.random.default_rng(seed)
    return cupy.cumsum(rng.standard_normal((m, n), dtype=cupy.float32), axis=1)


def _clock(phases: dict, name: str, t: float) -> float:
    import cupy

    cupy.cuda.Device().synchronize()
    now = time.perf_counter()
    phases[name] = phases.get(name, 0.0) + 1e3 * (now - t)
    return now


def run(m: int, n: int, nb: int, precision: str, seed: int) -> dict[str, Any]:
    """One run of both plans; odd seeds run the chunks first (clocks, memory pool)."""
    import cupy

    from warplab.core import registry
    from warplab.families.corr.chunks import Chunks
    from warplab.families.corr.spec import CorrProblem
    from warplab.families.corr.tiles import finish

    x = _walks(m, n, seed)
    cuts = np.linspace(0, m, nb + 1).astype(int).tolist()
    parts = list(zip(cuts, cuts[1:]))
    v = registry.choose("corrcoef", "cuda", CorrProblem(m, n, np.dtype(np.float32), precision,
                                                        True))

    def whole() -> dict[str, float]:
        w: dict[str, float] = {}
        t = time.perf_counter()
        eng = v.fn(x, precision)
        t = _clock(w, "engine", t)
        for i, (a, b) in enumerate(parts):
            for c, d in parts[i:]:
                finish(eng.block(a, b, c, d), a, c, eng)
                t = _clock(w, "blocks", t)
        return w

    def chunks() -> dict[str, float]:
        p: dict[str, float] = {}
        t = time.perf_counter()
        work = Chunks(v, precision, {i: x[a:b] for i, (a, b) in enumerate(parts)})
        for i in range(nb):
            for j in range(i, nb):
                work.block(i, j)  # the first block of a chunk builds its engine
                t = _clock(p, "blocks" if (i, j) != (0, 0) else "first", t)
        return p

    cupy.cuda.Device().synchronize()
    order = (chunks, whole) if seed % 2 else (whole, chunks)
    out: dict[str, Any] = {f.__name__: f() for f in order}
    for ph in out.values():
        ph["total"] = sum(ph.values())
    out["variant"] = v.name
    out["first"] = order[0].__name__
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, default=65536)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--precision", default="float64")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    runs = [run(a.m, a.n, a.blocks, a.precision, seed) for seed in range(a.runs + 1)][1:]
    print(f"variant {runs[0]['variant']}; {a.m} x {a.n}, {a.blocks} chunks, "
          f"median of {a.runs} (ms)")
    table = {}
    for plan in ("whole", "chunks"):
        table[plan] = {ph: statistics.median(r[plan][ph] for r in runs) for ph in runs[0][plan]}
        print(f"{plan:7s}", "  ".join(f"{ph} {ms:8.2f}" for ph, ms in table[plan].items()))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"args": vars(a), "median": table, "runs": runs}, f, indent=1)


if __name__ == "__main__":
    main()

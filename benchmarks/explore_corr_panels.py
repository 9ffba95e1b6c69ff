"""corrcoef by panels of rows against one engine over every row, on one GPU, without Dask.

``warplab.dask.corrcoef`` builds, per worker, the engine of each row chunk its blocks need
(``families/corr/panels.py``): each chunk's statistics (int8_slices: the normalisation and
the digit statistics, one read-back), the shared choice, the chunk's engine, then the blocks.
The replica plan it replaced built one engine over every row on every worker. This times
both plans' phases on one GPU for the Dask campaign's shape (65,536 x 4,096 float32 random
walks in 8 row chunks), each block synchronised as a Dask task is (``chunking.completed``):

* ``whole``: the engine over every row (what the single call and a replica build), then the
  36 blocks ``(I, J)``, ``I <= J``, from it;
* ``panels``: the 8 chunks' statistics, the choice, the 8 chunk engines, the 36 blocks.

Prints the median of ``--runs`` per phase (ms) and writes them as JSON. Usage (GPU machine):
  PYTHONPATH=src python3 benchmarks/explore_corr_panels.py --json $OUT/panels.json
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


def run(m: int, n: int, nb: int, precision: str, seed: int) -> dict[str, dict[str, float]]:
    import cupy

    from warplab.core import registry
    from warplab.families.corr import panels
    from warplab.families.corr.spec import CorrProblem
    from warplab.families.corr.tiles import finish

    x = _walks(m, n, seed)
    cuts = np.linspace(0, m, nb + 1).astype(int).tolist()
    parts = list(zip(cuts, cuts[1:]))
    v = registry.choose("corrcoef", "cuda", CorrProblem(m, n, np.dtype(np.float32), precision,
                                                        True))
    out: dict[str, dict[str, float]] = {"whole": {}, "panels": {}}
    cupy.cuda.Device().synchronize()
    w = out["whole"]
    t = time.perf_counter()
    eng = v.fn(x, precision)
    t = _clock(w, "engine", t)
    for i, (a, b) in enumerate(parts):
        for c, d in parts[i:]:
            finish(eng.block(a, b, c, d), a, c, eng)
            t = _clock(w, "blocks", t)
    del eng
    p = out["panels"]
    t = time.perf_counter()
    stats = [panels.statistics(v, x[a:b], precision) for a, b in parts]
    t = _clock(p, "statistics", t)
    shared = panels.choice(v, [s for s in stats if s is not None], precision, n)
    t = _clock(p, "choice", t)
    pans = []
    for a, b in parts:
        pans.append(panels.Panel(v, x[a:b], precision, shared))
        t = _clock(p, "engines", t)
    for i in range(nb):
        for j in range(i, nb):
            panels.block(pans[i], None if i == j else pans[j])
            t = _clock(p, "blocks", t)
    for ph in out.values():
        ph["total"] = sum(ph.values())
    out["variant"] = {"name": v.name}  # type: ignore[dict-item]
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
    print(f"variant {runs[0]['variant']['name']}; {a.m} x {a.n}, {a.blocks} chunks, "
          f"median of {a.runs} (ms)")
    table = {}
    for plan in ("whole", "panels"):
        table[plan] = {ph: statistics.median(r[plan][ph] for r in runs) for ph in runs[0][plan]}
        print(f"{plan:7s}", "  ".join(f"{ph} {ms:8.2f}" for ph, ms in table[plan].items()))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"args": vars(a), "median": table, "runs": runs}, f, indent=1)


if __name__ == "__main__":
    main()

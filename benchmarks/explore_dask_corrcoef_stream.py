"""Where the time of distributed ``corrcoef`` goes: Dask's task stream of the campaign's run.

The Dask campaign (``warplab.lab.campaigns.dask``) measured ``corrcoef`` 65,536 x 4,096
(float64 products, 8 row blocks) on 2 H200 over UCX at 180.8 ms against 289 ms on one worker
(1.60x) where the compute alone bounds it at ~155 ms (1.86x). This runs the campaign's own
run (``workloads.on_cluster``: the series made and persisted untimed, then the call and the
``persist()`` of its result timed until ``wait()``) on the campaign's own clusters
(``modes.open_cluster``: ``LocalCUDACluster`` over ucx or tcp, or a CPU ``LocalCluster``)
inside ``distributed.get_task_stream``, and splits each timed run's wall time:

* scheduling latency: clock start to the first task's compute start (the client submitting
  the tasks: ``corr.py`` sends every task in one graph update inside the call); ``call`` is
  when ``warplab.dask.corrcoef`` returned (timed by wrapping it: two ``time.time()`` calls);
* makespan: first compute start to last compute stop; completion latency: last compute
  stop to the clock's stop (the scheduler telling the client);
* per task kind (``part``: a worker's blocks from the chunks it holds, or the rest of its
  blocks, the GPU work; ``diag``/``upper``: the reads of one block of a part; the Gram
  blocks (I, I) and (I, J > I); ``transpose``: the views (J, I)): count, summed and largest
  compute, first start and last stop, summed ``transfer`` startstops;
* per worker: busy compute, first start, last stop, idle gaps between its tasks, the bytes
  and seconds it received (the workers' ``transfer_incoming_log``), the Gram blocks it ran
  and their share of the multiply-adds (``rows_I * rows_J``, half on the diagonal);
* beside each run: the fixed cost of one ``compute()`` of a tiny graph (``modes.fixed_cost``,
  median of 5) and that tiny graph's own split; after it, the largest device synchronisation
  over the workers (``completion_lag_ms``: GPU work outliving the clock).

Times are the workers' own ``time.time()`` (Dask's ``scheduler_delay`` correction held at 0:
one host, one clock; ``_one_clock``). Tables of the median run per worker
count; every run in the JSON, with each worker's first start and last stop of each task kind.
Usage (GPU machine, Dask, dask-cuda and UCX installed as benchmarks/dask_gpu.sh does):
  PYTHONPATH=src python3 benchmarks/explore_dask_corrcoef_stream.py --workers 1,2 \
      --protocol ucx --json $OUT/stream.json
  PYTHONPATH=src python3 benchmarks/explore_dask_corrcoef_stream.py --cpu --workers 1,2 \
      --m 2048 --n 256 --runs 2 --json /tmp/stream.json      (any machine: NumPy chunks)
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from dataclasses import replace
from itertools import pairwise
from pathlib import Path
from typing import Any

from warplab.lab.campaigns.dask import modes as md, workloads as wl
from warplab.lab.campaigns.dask.bench import SEED0


def _kind(key: Any, name: str, data: str) -> str:
    """The task kind of a key of the run (``key_split`` for anything unforeseen)."""
    from dask.utils import key_split

    head = key[0] if isinstance(key, tuple) else key
    if head == name and len(key) == 3:
        return "diag" if key[1] == key[2] else "upper" if key[1] < key[2] else "transpose"
    return {f"{name}-part": "part", data: "data"}.get(head, key_split(key))


def _one_clock(dask_worker: Any = None) -> None:
    """Dask's correction of this worker's times (``scheduler_delay``, re-estimated from each
    heartbeat's round trip, off by milliseconds on a loaded host) held at 0: one host, one
    clock. A subclass whose ``scheduler_delay`` is always 0, as distributed's own
    ``utils_test.NoSchedulerDelayWorker``."""
    cls = type(dask_worker)
    if not getattr(cls, "one_clock", False):
        zero = property(lambda self: 0.0, lambda self, value: None)
        dask_worker.__class__ = type(cls.__name__, (cls,), {"scheduler_delay": zero,
                                                             "one_clock": True})


def _received(t0: float, t1: float, dask_worker: Any = None) -> list[tuple]:
    """(start, stop, bytes, source) of each transfer into this worker within [t0, t1]."""
    return [(e["start"], e["stop"], e["total"], e["who"])
            for e in dask_worker.transfer_incoming_log if e["stop"] >= t0 and e["start"] <= t1]


def _merge(iv: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for a, b in sorted(iv):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def analyse(recs: list[dict], t0: float, wall: float, names: tuple[str, str],
            rows: tuple[int, ...], received: dict | None = None) -> dict:
    """The split of one timed run (module docstring); times in ms from the clock start."""
    ms = 1e3
    kinds: dict[str, dict] = {}
    per_w: dict[str, dict] = {}
    for r in recs:
        k = _kind(r["key"], *names)
        if k == "data":  # made and waited for before the clock started
            continue
        w = r["worker"]
        st = kinds.setdefault(k, {"count": 0, "compute_ms": 0.0, "max_ms": 0.0,
                                  "first_ms": None, "last_ms": None, "transfer_ms": 0.0,
                                  "transfers": 0})
        pw = per_w.setdefault(w, {"iv": [], "diag": 0, "upper": 0, "units": 0.0,
                                  "tasks": {}})
        st["count"] += 1
        pk = pw["tasks"].setdefault(k, {"count": 0, "first_ms": None, "last_ms": None})
        pk["count"] += 1
        for s in r["startstops"]:
            a, b = ms * (s["start"] - t0), ms * (s["stop"] - t0)
            if s["action"] == "transfer":
                st["transfer_ms"] += b - a
                st["transfers"] += 1
            elif s["action"] == "compute":
                st["compute_ms"] += b - a
                st["max_ms"] = max(st["max_ms"], b - a)
                st["first_ms"] = a if st["first_ms"] is None else min(st["first_ms"], a)
                st["last_ms"] = b if st["last_ms"] is None else max(st["last_ms"], b)
                pw["iv"].append((a, b))
                pk["first_ms"] = a if pk["first_ms"] is None else min(pk["first_ms"], a)
                pk["last_ms"] = b if pk["last_ms"] is None else max(pk["last_ms"], b)
        if k in ("diag", "upper"):
            i, j = r["key"][1], r["key"][2]
            pw[k] += 1
            pw["units"] += rows[i] * rows[j] * (0.5 if i == j else 1.0)
    total_units = sum(p["units"] for p in per_w.values()) or 1.0
    workers = {}
    for w, p in sorted(per_w.items()):
        iv = _merge(p["iv"])
        gaps = [b[0] - a[1] for a, b in pairwise(iv)]
        got = (received or {}).get(w, [])
        workers[w] = {
            "busy_ms": sum(b - a for a, b in iv), "first_ms": iv[0][0] if iv else None,
            "last_ms": iv[-1][1] if iv else None, "idle_gaps_ms": sum(gaps),
            "max_gap_ms": max(gaps, default=0.0), "gram_diag": p["diag"],
            "gram_upper": p["upper"], "gram_share": p["units"] / total_units,
            "recv_bytes": sum(g[2] for g in got), "recv_ms": ms * sum(g[1] - g[0] for g in got),
            "recv_count": len(got), "tasks": p["tasks"]}
    firsts = [v["first_ms"] for v in workers.values() if v["first_ms"] is not None]
    lasts = [v["last_ms"] for v in workers.values() if v["last_ms"] is not None]
    first, last = (min(firsts), max(lasts)) if firsts else (0.0, 0.0)
    return {"wall_ms": ms * wall, "sched_latency_ms": first, "makespan_ms": last - first,
            "completion_latency_ms": ms * wall - last, "kinds": kinds, "workers": workers}


def _timed_call(client: Any, w: Any, backend: str, seed: int, held: list) -> dict:
    """One campaign run inside the task stream; returns its split (and keeps its keys in
    ``held`` for the next release)."""
    from distributed import get_task_stream

    import warplab.dask as wd

    call_done: list[float] = []
    orig = wd.corrcoef

    def corrcoef(*a: Any, **k: Any) -> Any:  # when the call (its submissions) returned
        out = orig(*a, **k)
        call_done.append(time.time())
        return out

    md.release(client, held)
    wd.corrcoef = corrcoef
    try:
        with get_task_stream(client) as ts:
            data, out, sec = wl.on_cluster(w, client, [], backend, seed)
            t1 = time.time()
    finally:
        wd.corrcoef = orig
    held.extend([*data, *out])
    t0 = t1 - sec
    lag = md.completion_lag_ms(client)
    received = client.run(_received, t0, t1)
    x = data[0]
    res = analyse(ts.data, t0, sec, (out[0].name, x.name), x.chunks[0], received)
    res.update(call_ms=1e3 * (call_done[0] - t0) if call_done else None, lag_ms=lag)
    return res


def _tiny(client: Any) -> dict:
    """The campaign's fixed cost beside the run, and one tiny compute split the same way."""
    import dask
    import dask.array as da
    from distributed import get_task_stream

    fixed = md.fixed_cost(client, runs=5)["median"]
    tiny = da.ones(10, chunks=5).sum()
    with get_task_stream(client) as ts:
        p0 = time.perf_counter()
        dask.compute(tiny, scheduler=client.get)
        sec = time.perf_counter() - p0
        t1 = time.time()
    split = analyse(ts.data, t1 - sec, sec, ("", ""), ())
    return {"fixed_cost_ms": fixed, **{k: split[k] for k in (
        "wall_ms", "sched_latency_ms", "makespan_ms", "completion_latency_ms")}}


def _f(x: Any, nd: int = 1) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def report(n: int, runs: list[dict]) -> None:
    """The runs' lines, then the tables of the median run (80 columns)."""
    print(f"\n== {n} worker(s), ms from the clock start (tiny: the tiny graph's)")
    print("   run   wall  call sched makespan compl   lag | tiny: fixed sched compl")
    for i, r in enumerate(runs):
        t = r["tiny"]
        print(f"   {i:>3} {r['wall_ms']:6.1f} {_f(r['call_ms']):>5} "
              f"{r['sched_latency_ms']:5.1f} {r['makespan_ms']:8.1f} "
              f"{r['completion_latency_ms']:5.1f} {r['lag_ms']:5.1f} | "
              f"{t['fixed_cost_ms']:11.1f} {t['sched_latency_ms']:5.1f} "
              f"{t['completion_latency_ms']:5.1f}")
    med = sorted(runs, key=lambda r: r["wall_ms"])[len(runs) // 2]
    print(f"   median run {runs.index(med)}: task kinds, then workers")
    print(f"   {'kind':<10}{'count':>6}{'compute':>9}{'max':>8}{'first':>8}{'last':>8}"
          f"{'xfer ms':>9}{'xfers':>6}")
    for k, s in sorted(med["kinds"].items(), key=lambda kv: kv[1]["first_ms"] or 0.0):
        print(f"   {k:<10}{s['count']:>6}{s['compute_ms']:>9.1f}{s['max_ms']:>8.1f}"
              f"{_f(s['first_ms']):>8}{_f(s['last_ms']):>8}{s['transfer_ms']:>9.1f}"
              f"{s['transfers']:>6}")
    print(f"   {'worker':<18}{'busy':>7}{'first':>7}{'last':>7}{'gaps':>6}{'maxgap':>7}"
          f"{'diag+up':>8}{'share':>6}{'recv MiB':>9}")
    for a, v in med["workers"].items():
        print(f"   {a.split('://')[-1][-18:]:<18}{v['busy_ms']:>7.1f}{_f(v['first_ms']):>7}"
              f"{_f(v['last_ms']):>7}{v['idle_gaps_ms']:>6.1f}{v['max_gap_ms']:>7.1f}"
              f"{v['gram_diag']:>4}+{v['gram_upper']:<3}{v['gram_share']:>6.2f}"
              f"{v['recv_bytes'] / 2**20:>9.1f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", default="1,2", help="worker counts, e.g. 1,2")
    p.add_argument("--protocol", default="ucx", choices=["ucx", "tcp"])
    p.add_argument("--m", type=int, default=None, help="series (65536; --cpu: 2048)")
    p.add_argument("--n", type=int, default=None, help="values per series (4096; --cpu: 256)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--json", default=None, help="write every run's split here")
    p.add_argument("--cpu", action="store_true", help="CPU LocalCluster, NumPy chunks, tcp")
    p.add_argument("--threads", type=int, default=1, help="threads per worker")
    a = p.parse_args()
    backend, protocol = ("cpu", "tcp") if a.cpu else ("cuda", a.protocol)
    base = next(w for w in wl.CAMPAIGNS["table"] if w.name == "corrcoef")
    w = replace(base, m=a.m or (2048 if a.cpu else base.m), n=a.n or (256 if a.cpu else base.n))
    counts = [int(c) for c in a.workers.split(",") if c]
    doc: dict[str, Any] = {"m": w.m, "n": w.n, "blocks": w.blocks, "precision": w.precision,
                           "backend": backend, "protocol": protocol, "threads": a.threads,
                           "results": []}
    print(f"corrcoef {w.m:,} x {w.n:,} {w.precision}, {w.blocks} row blocks, {backend}, "
          f"{protocol}, {a.threads} thread(s) a worker; ms")
    for n in counts:
        with tempfile.TemporaryDirectory() as d, \
                md.open_cluster(md.Mode("cluster", n, protocol), backend, Path(d),
                               a.threads) as (c, kind):
            c.run(_one_clock)
            held: list = []
            _timed_call(c, w, backend, SEED0, held)  # warm-up (the campaign's first seed)
            runs = []
            for i in range(a.runs):
                r = _timed_call(c, w, backend, SEED0 + 1 + i, held)
                r["tiny"] = _tiny(c)
                runs.append(r)
            md.release(c, held)
        doc["results"].append({"workers": n, "cluster": kind, "runs": runs})
        report(n, runs)
    med = {r["workers"]: statistics.median(x["wall_ms"] for x in r["runs"])
           for r in doc["results"]}
    if 1 in med:
        one = doc["results"][counts.index(1)]["runs"]
        fixed = statistics.median(x["tiny"]["fixed_cost_ms"] for x in one)
        for n, t in med.items():
            if n == 1:
                continue
            bound = fixed + (med[1] - fixed) / n
            print(f"{n} worker(s): median {t:.1f} ms, {med[1] / t:.2f}x over one; bound "
                  f"(fixed {fixed:.1f} + rest / {n}) {bound:.1f} ms, {med[1] / bound:.2f}x")
    if a.json:
        Path(a.json).write_text(json.dumps(doc, indent=1, default=str))
        print(f"wrote {a.json}")


if __name__ == "__main__":  # worker processes start by spawn: nothing runs on import
    main()

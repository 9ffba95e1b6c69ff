"""Which worker runs which task: the placement plan of ``corrcoef`` and ``corr_pairs``.

Every coefficient block ``(I, J)`` needs the rows of two row chunks. Letting Dask fetch them
per task moves the chunks between workers once per block pair (and more GPUs get slower).
Instead ``corrcoef``'s blocks are dealt in equal shares of multiply-adds, each to the worker
that needs the fewest rows it does not hold (:func:`deal_blocks`), so each worker fetches a
remote chunk once; ``corr_pairs``' ranges of rows need every column, so each worker builds
**one replica** of the prepared series (its engine: the normalised rows, the same object the
single-GPU call builds) from the input chunks, fetching each remote chunk once, and the ranges
hold equal numbers of pairs (:func:`equal_work_rows`).

The plan holds only with worker restrictions, and Dask keeps those only where they reach the
scheduler with the tasks: graph annotations (``dask.annotate``, layer annotations) are dropped
by the array optimisation that ``persist`` and ``compute`` run (its task fusion rebuilds the
graph without them), and without restrictions the scheduler's work stealing moves a task to an
idle worker, which then fetches its inputs again. So with a ``distributed`` client the planned
tasks are sent when the function is called (:func:`persist_placed`): one graph, one layer per
worker annotated with that worker (strictly: ``allow_other_workers=False``), not optimised,
in one update of the scheduler (a ``submit`` per task is a message each: on four H200s a
call of 72 tasks returned in 6-10 ms that way, 1-3 ms in one update); the returned
collection is backed by the futures of its chunks, and what only they need (a replica, a
worker's blocks before they are handed over) is released once they are computed. Without a
client the graph stays lazy and there is one group.
"""
from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any


def deal_blocks(rows: Sequence[int], home: Sequence[int],
                groups: int) -> dict[tuple[int, int], int]:
    """The group of each block ``(i, j)``, ``i <= j``, of the row chunks of ``rows`` rows,
    chunk ``p`` held by group ``home[p]``: equal shares of multiply-adds, few chunks fetched.
    Largest block first (blocks of one home before the others), to the group that needs the
    fewest rows it does not hold among those it keeps within the mean share, else to the
    least loaded. Blocks of an empty chunk stay with its home."""
    nb, groups = len(rows), max(1, groups)
    out = {(i, j): home[i] for i in range(nb) for j in range(i, nb) if not rows[i] * rows[j]}
    blocks = [(i, j) for i in range(nb) for j in range(i, nb) if rows[i] * rows[j]]
    cost = {b: rows[b[0]] * rows[b[1]] * (0.5 if b[0] == b[1] else 1.0) for b in blocks}
    mean = sum(cost.values()) / groups * (1 + 1e-9)
    has = [{p for p in range(nb) if home[p] == g} for g in range(groups)]
    load = [0.0] * groups
    for b in sorted(blocks, key=lambda b: (-cost[b], home[b[0]] != home[b[1]], b)):
        def new_rows(g: int, b: tuple[int, int] = b) -> int:
            return sum(rows[p] for p in set(b) - has[g])

        fit = [g for g in range(groups) if load[g] + cost[b] <= mean]
        g = (min(fit, key=lambda g: (new_rows(g), load[g], g)) if fit else
             min(range(groups), key=lambda g: (load[g], new_rows(g), g)))
        out[b] = g
        load[g] += cost[b]
        has[g] |= set(b)
    return out


def equal_work_rows(m: int, parts: int) -> list[int]:
    """Row boundaries ``0 = a_0 < a_1 < ... = m`` cutting the pairs ``i < j`` of ``m`` series
    into ``parts`` ranges of rows with (nearly) equal numbers of pairs: row ``i`` has
    ``m - 1 - i`` of them, so early ranges are shorter. Fewer ranges where ``m`` is small."""
    parts = max(1, min(int(parts), m))
    total = m * (m - 1) / 2
    bounds = [0]
    for t in range(1, parts):
        # the a with a (m - 1) - a (a - 1) / 2 = t / parts * total: the smaller root
        w = t / parts * total
        b = m - 0.5
        a = b - math.sqrt(max(b * b - 2 * w, 0.0))
        bounds.append(min(m, max(bounds[-1] + 1, round(a))))
    bounds.append(m)
    return sorted(set(bounds))


def persist_placed(client: Any, name: str, dsk: Mapping[Hashable, Any],
                   where: Mapping[Hashable, str], outputs: Sequence[Hashable],
                   deps: Sequence[Any] = ()) -> dict[Hashable, Any]:
    """Every task of ``dsk`` sent to ``client`` now, in one graph update: the tasks listed
    in ``where`` restricted to that worker (strictly), the rest free. ``deps``: collections
    whose keys the tasks name (their graphs go with the tasks; a persisted one's chunks are
    passed as its futures). Returns the future of each key in ``outputs``; the other tasks
    are released once their dependents are done."""
    from dask.highlevelgraph import HighLevelGraph, MaterializedLayer
    from distributed import futures_of

    futures = {f.key: f for d in deps for f in futures_of(d)}
    parts: dict[str | None, dict[Hashable, Any]] = {}
    for key, (fn, *args) in dsk.items():
        args = [futures.get(a, a) if isinstance(a, tuple) else a for a in args]
        parts.setdefault(where.get(key), {})[key] = (fn, *args)
    layers: dict[str, Any] = {}
    for i, (worker, tasks) in enumerate(parts.items()):
        notes = None if worker is None else {"workers": [worker], "allow_other_workers": False}
        layers[f"{name}-on-{i}"] = MaterializedLayer(tasks, annotations=notes)
    placed = HighLevelGraph(layers, {lay: set() for lay in layers})
    hlg = HighLevelGraph.merge(*(d.__dask_graph__() for d in deps), placed)
    keys = list(outputs)
    return dict(zip(keys, client.get(hlg, keys, sync=False)))

"""Which worker runs which task: the placement plan of ``corrcoef`` and ``corr_pairs``.

Every coefficient block ``(I, J)`` needs the rows of two blocks of series. Letting Dask fetch
them per task moves row panels between workers once per block pair (and more GPUs get
slower). Instead, each worker builds **one replica** of the prepared series (its engine: the
normalised rows, the same object the single-GPU call builds) from the input blocks, fetching
each remote block once, and the blocks of coefficients are dealt to the workers so that each
worker's share of the multiply-adds is equal.

The plan holds only with worker restrictions, and Dask keeps those only where they are given
at submission: graph annotations (``dask.annotate``, layer annotations) are dropped by the
array optimisation that ``persist`` and ``compute`` run (its task fusion rebuilds the graph
without them), and without restrictions the scheduler's work stealing moves a task to an idle
worker, which then fetches a whole replica. So with a ``distributed`` client the planned
tasks are submitted when the function is called (:func:`submit_placed`), each restricted to
its worker (strictly: ``allow_other_workers=False``), and the returned collection is backed by
their futures; without a client the graph stays lazy and there is one group.
"""
from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any


def deal(costs: Sequence[float], groups: int) -> list[int]:
    """The group of each item: largest cost first to the least loaded group (ties to the
    lowest group), so each group's total is within the largest item of the mean."""
    load = [0.0] * max(1, groups)
    out = [0] * len(costs)
    for i in sorted(range(len(costs)), key=lambda i: (-costs[i], i)):
        g = min(range(len(load)), key=lambda g: (load[g], g))
        out[i] = g
        load[g] += costs[i]
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


def submit_placed(client: Any, dsk: Mapping[Hashable, Any], inputs: Mapping[Hashable, Any],
                  where: Mapping[Hashable, str]) -> dict[Hashable, Any]:
    """``dsk`` with each task listed in ``where`` submitted now to ``client``, restricted to
    that worker, its value replaced by its future; tasks not listed stay lazy. ``dsk`` is in
    dependency order (a task after the tasks it names); a task's arguments that are keys of
    ``inputs`` (futures) or of tasks submitted before it are passed as those futures."""
    futures: dict[Hashable, Any] = dict(inputs)
    out: dict[Hashable, Any] = {}
    for key, task in dsk.items():
        if key not in where:
            out[key] = task
            continue
        fn, *args = task
        args = [futures.get(a, a) if isinstance(a, tuple) else a for a in args]
        futures[key] = out[key] = client.submit(fn, *args, key=key, workers=[where[key]],
                                                allow_other_workers=False, pure=False)
    return out

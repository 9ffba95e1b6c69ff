"""Which worker runs which task: the placement plan of ``corrcoef`` and ``corr_pairs``.

Every coefficient block ``(I, J)`` needs the rows of two blocks of series. Letting Dask fetch
them per task moves row panels between workers once per block pair (and more GPUs get
slower). Instead, each worker builds **one replica** of the prepared series (its engine: the
normalised rows, the same object the single-GPU call builds) from the input blocks, fetching
each remote block once, and the blocks of coefficients are dealt to the workers so that each
worker's share of the multiply-adds is equal. The replica and that worker's blocks are pinned
to it by Dask annotations (``workers=``, loose: a task may still run elsewhere if its worker
leaves). Without a ``distributed`` client there is one group and no annotation.
"""
from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, cast

from dask.highlevelgraph import HighLevelGraph, MaterializedLayer


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


def pinned_graph(name: str, dsk: Mapping[Hashable, Any], deps: Sequence[Any],
                 where: Mapping[Hashable, str]) -> HighLevelGraph:
    """``HighLevelGraph.from_collections`` of the layer ``name`` whose tasks listed in
    ``where`` are annotated to run on that worker (loose restrictions); none when ``where``
    is empty."""
    hlg = HighLevelGraph.from_collections(name, cast(Any, dsk), dependencies=list(deps))
    if not where:
        return hlg
    pins = dict(where)
    layer = MaterializedLayer(dict(dsk), annotations={
        "workers": lambda key: [pins[key]] if key in pins else None,
        "allow_other_workers": True})
    layers = {**hlg.layers, name: layer}
    return HighLevelGraph(layers, hlg.dependencies)

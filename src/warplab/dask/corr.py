"""``corrcoef`` and ``corr_pairs`` of dask arrays: the single-GPU engines on every worker.

``corrcoef``'s blocks are the row chunks' block pairs ``(I, J)``, ``I <= J`` (``(J, I)`` is
the transpose, a view), dealt to the workers in equal shares, each to the worker that needs
the fewest rows it does not hold. A worker computes them in at most two tasks (its blocks
among the chunks it holds, then the rest), from an engine per row chunk
(``families/corr/chunks.py``: the single call's variant over the chunk's rows); a task queues
its blocks' GPU work and each chunk of the result is handed to Dask by a task that waits for
its block.
``corr_pairs`` needs every series for each range of rows: each worker builds one replica of
the prepared series (the engine ``warplab.corrcoef`` builds: normalised rows and their
validity) from the input's row chunks, fetching each remote chunk once, and reduces its ranges'
coefficients at once (to the pairs above the threshold, or to each row's k strongest), so no
task holds more than a strip of coefficients. With a ``distributed`` client the tasks are sent
at the call, each restricted to its worker (``placement.py``). Every task returns when its GPU
work is done.
"""
from __future__ import annotations

import math
import operator
from functools import partial
from itertools import pairwise
from typing import Any

import dask
import dask.array as da
import numpy as np
from dask.array.utils import meta_from_array
from dask.highlevelgraph import HighLevelGraph

import warplab
from warplab.core import registry as _registry
from warplab.core.errors import InvalidTypeError, InvalidValueError
from warplab.dask.chunking import (
    as_dask,
    check_chunk,
    completed,
    current_client,
    graph,
    kind,
    require_known,
    worker_addresses,
    xp_of,
)
from warplab.dask.placement import deal_blocks, equal_work_rows, persist_placed
from warplab.families.corr import tiles
from warplab.families.corr.chunks import Chunks
from warplab.families.corr.pairs import CorrPairs, TopK, check_selection
from warplab.families.corr.spec import CorrProblem
from warplab.families.corr.strips import stream_above, strip_bytes_for
from warplab.families.corr.tiles import finish

__all__ = ["corr_pairs", "corrcoef"]

PRECISIONS = ("float64", "float32", "tf32")
#: Side of the device tiles of a ``top_k`` task (a float64 tile and its merge temporaries).
TOP_SIDE = 8192


def _series(x: Any, y: Any, rowvar: bool) -> da.Array:
    """NumPy's ``cov`` preparation on dask arrays: 2-D, one series per row, ``y`` stacked
    under ``x``; the values of a series in one chunk (axis 1 rechunked whole where it is
    split)."""
    arrays = [as_dask(a) for a in (x, y) if a is not None]
    for a in arrays:
        if a.ndim > 2:
            raise InvalidValueError(f"corrcoef takes 1-D or 2-D data, got {a.ndim} dimensions")
        if np.dtype(a.dtype).kind not in "biuf":
            raise InvalidTypeError(f"corrcoef takes real numbers, got dtype {a.dtype}")
    arrays = [a[None, :] if a.ndim == 1 else a for a in arrays]
    if not rowvar:
        arrays = [a if a.shape[0] == 1 else a.T for a in arrays]
    xs = da.concatenate(arrays, axis=0) if len(arrays) > 1 else arrays[0]
    require_known(xs, "corrcoef")
    if xs.numblocks[1] > 1:
        xs = xs.rechunk({1: -1})
    return xs


def _precision(precision: str | None) -> str:
    p = precision or "float64"
    if p not in PRECISIONS:
        raise InvalidValueError(f"unknown precision {p!r}; valid: {', '.join(PRECISIONS)}")
    return p


class Replica:
    """One worker's prepared series: the engine the single-GPU call builds (normalised rows
    and their validity) over every series. Its size is the data's, so Dask's cost model never
    finds it cheap to move."""

    def __init__(self, eng: Any, nbytes: int) -> None:
        self.eng, self.nbytes = eng, int(nbytes)

    def __sizeof__(self) -> int:
        return self.nbytes


def _replica(k: str, precision: str, *blocks: Any) -> Replica:
    """The engine over all the rows (the blocks stacked in order), built on this worker; its
    GPU work done before it returns."""
    for b in blocks:
        check_chunk(b, k)
    xp = xp_of(k)
    data = xp.concatenate(blocks) if len(blocks) > 1 else blocks[0]
    v = _variant(k, precision, data, int(data.shape[0]))
    eng = v.fn(data, precision)
    if k == "cupy":
        data.device.synchronize()
    return Replica(eng, data.nbytes * 2)


def _variant(k: str, precision: str, x: Any, m: int) -> Any:
    """The variant the single call picks for all ``m`` series (``x``: some of them)."""
    v = _registry.choose("corrcoef", "cuda" if k == "cupy" else "cpu", CorrProblem(
        m, int(x.shape[1]), np.dtype(x.dtype), precision, k == "cupy"))
    _registry.ran(v)
    return v


def _blocks(k: str, precision: str, m: int, dtype: np.dtype, pairs: list[tuple[int, int]],
            index: list[int], *chunks: Any) -> list[tuple[Any, Done]]:
    """The blocks ``(I, J)`` of ``pairs`` (in order) from the row chunks ``chunks`` (chunk
    ``index[t]`` of the call is ``chunks[t]``), each chunk's engine built once, each block
    with the end of its GPU work (:class:`Done`). The GPU work is queued, not waited for:
    the tasks that hand each block to Dask (:func:`_block`) wait for its end, so every chunk
    of the result is complete when Dask has it, and the GPU computes the next blocks while
    Dask takes the finished ones (a task each)."""
    for c in chunks:
        check_chunk(c, k)
    rows = dict(zip(index, chunks))
    xp = xp_of(k)
    full = {i: c for i, c in rows.items() if c.shape[0]}
    work = Chunks(_variant(k, precision, next(iter(full.values())), m), precision,
                  full) if full else None
    if work is not None:
        work.prepare([(i, j) for i, j in pairs if i in full and j in full])
    out = []
    for i, j in pairs:
        if work is None or i not in full or j not in full:
            b = xp.empty((rows[i].shape[0], rows[j].shape[0]), dtype)
        else:
            b = work.block(i, j).astype(dtype, copy=False)
        out.append((b, _mark(k)))
    return out


class Done:
    """The end of a block's GPU work: an event recorded after it (None: nothing to wait
    for). Pickled (Dask spilling or moving a task's output) only once the work is done, and
    as done: a CUDA event does not travel."""

    def __init__(self, event: Any = None) -> None:
        self.event = event

    def wait(self) -> None:
        if self.event is not None:
            self.event.synchronize()

    def __reduce__(self) -> tuple:
        self.wait()
        return (Done, ())


def _mark(k: str) -> Done:
    """The end of the work queued so far on the current stream (CuPy chunks)."""
    if k != "cupy":
        return Done()
    import cupy

    event = cupy.cuda.Event(block=False, disable_timing=True)
    event.record()
    return Done(event)


def _block(blocks: list[tuple[Any, Done]], t: int, transpose: bool = False) -> Any:
    """Block ``t`` of a :func:`_blocks` task (its transpose, a view), once its GPU work is
    done."""
    b, done = blocks[t]
    done.wait()
    return b.T if transpose else b


def _whole(xs: Any, dtype: np.dtype) -> Any:
    """NumPy's edge cases (one series, fewer than two values) on the whole array."""
    return warplab.corrcoef(xs, dtype=dtype)


def _replicas(xs: da.Array, k: str, precision: str, name: str, groups: int) -> dict:
    """One replica task per group, each over every block of ``xs``."""
    blocks = [(xs.name, i, 0) for i in range(xs.numblocks[0])]
    fn = partial(_replica, k, precision)
    return {(f"{name}-rep", g): (fn, *blocks) for g in range(groups)}


class _Plan:
    """Where the tasks of one call run: the current client's workers (none: no client, one
    group, a lazy graph). With workers the planned tasks and the series' own graph go to the
    scheduler together, in one graph update (:meth:`graphs`), not a ``persist`` of the input
    first and the tasks after it. The series' graph is optimised as ``persist`` would, unless
    it holds futures (Dask's optimisation drops them)."""

    def __init__(self, xs: da.Array) -> None:
        self.client = current_client()
        self.workers = worker_addresses(self.client)
        self.groups = max(1, len(self.workers))
        self.xs: da.Array = xs
        if self.workers:
            from distributed import futures_of

            if not futures_of(xs):
                self.xs = dask.optimize(xs)[0]

    def homes(self) -> list[int]:
        """The group holding each row chunk of a persisted series (one round trip to the
        scheduler); consecutive chunks to each group where that is not known (a lazy
        series: its chunks are computed where the scheduler puts them)."""
        nb = self.xs.numblocks[0]
        home = [p * self.groups // nb for p in range(nb)]
        if self.client is None:
            return home
        from distributed import futures_of

        futures = {f.key: f for f in futures_of(self.xs)}
        keys = [(self.xs.name, p, 0) for p in range(nb)]
        if not all(key in futures for key in keys):
            return home
        who = self.client.who_has([futures[key] for key in keys])
        group = {w: g for g, w in enumerate(self.workers)}
        return [next((group[w] for w in who.get(key, ()) if w in group), h)
                for key, h in zip(keys, home)]

    def graphs(self, names: list[str], dsk: dict, where: dict) -> list[HighLevelGraph]:
        """One graph per name in ``names`` (a layer of that name holding its tasks, keys
        ``(name, ...)``): lazy on top of the series, or with every task in ``where`` (key:
        group) sent to its worker (``placement.persist_placed``), each graph holding the
        futures of its chunks."""
        if not self.workers:
            return [graph(n, dsk, [self.xs]) for n in names]
        pins = {key: self.workers[g] for key, g in where.items()}
        keys = {n: [k for k in dsk if k[0] == n] for n in names}
        futures = persist_placed(self.client, names[0], dsk, pins,
                                 [k for n in names for k in keys[n]], [self.xs])
        return [graph(n, {k: futures[k] for k in keys[n]}, []) for n in names]


def corrcoef(x: Any, y: Any = None, rowvar: bool = True, *, dtype: Any = None,
             precision: str | None = None) -> da.Array:
    """``numpy.corrcoef`` of dask arrays: an ``(M, M)`` dask array whose blocks are
    the row chunks of the data (series per row; ``rowvar=False``: per column; ``y`` stacked
    under ``x``). A series whose values span several chunks is rechunked whole along axis 1
    first. ``dtype``: the result's (float64 by default); ``precision``: as
    ``warplab.corrcoef`` (the same engine runs on each worker). Persist it to keep the blocks
    on the workers: ``r = corrcoef(x).persist()``.

    Placement (``placement.py``): the blocks ``(I, J)``, ``I <= J``, are dealt to the
    workers of the current client in equal shares of multiply-adds, each to the worker that
    needs the fewest rows it does not hold (each remote chunk fetched once per worker); a
    worker computes them in at most two tasks from an engine per row chunk (the single
    call's variant; ``int8_slices`` chooses s per block from its two chunks' rows, so a
    block equals the single call's wherever its rows choose the call's s, and meets the
    precision's target everywhere); ``(J, I)`` is the transpose (a view). With a
    ``distributed`` client these tasks and the input's graph are sent at the call, each task
    restricted to its worker (the returned array is backed by their futures); without one
    the graph is lazy. Each chunk of the result is complete (its GPU work done) when Dask
    has it.

    Constant or non-finite series give NaN rows and columns as the single-machine function,
    but without its ``RuntimeWarning`` (it would be raised on a worker). Unknown chunk sizes:
    ``ValueError`` (call ``x.compute_chunk_sizes()``)."""
    precision = _precision(precision)
    xs = _series(x, y, rowvar)
    res = np.dtype(np.float64 if dtype is None else dtype)
    if res.kind != "f":
        raise InvalidTypeError(f"corrcoef: dtype must be a float dtype, got {res}")
    m, n = (int(s) for s in xs.shape)
    if m <= 1 or n < 2:
        shape = () if m == 1 else (m, m)
        d = dask.delayed(_whole)(xs, res)
        return da.from_delayed(d, shape=shape, dtype=res,
                               meta=meta_from_array(xs._meta, len(shape), res))
    k = kind(xs)
    name = "wl-corrcoef-" + dask.base.tokenize(xs, precision, res)
    plan = _Plan(xs)
    rows = xs.chunks[0]
    home = plan.homes()
    parts: dict[tuple[int, bool], list[tuple[int, int]]] = {}
    for (i, j), g in deal_blocks(rows, home, plan.groups).items():
        parts.setdefault((g, home[i] == home[j] == g), []).append((i, j))
    dsk: dict = {}
    where: dict = {}
    for (g, local), pairs in parts.items():
        key = (f"{name}-part", g, int(local))
        index = sorted({c for pair in pairs for c in pair})
        dsk[key] = (partial(_blocks, k, precision, m, res, pairs, index),
                    *((xs.name, c, 0) for c in index))
        where[key] = g
        for t, (i, j) in enumerate(pairs):
            dsk[(name, i, j)] = (_block, key, t)
            where[(name, i, j)] = g
            if i != j:  # a view of the block, on the block's worker
                dsk[(name, j, i)] = (_block, key, t, True)
                where[(name, j, i)] = g
    return da.Array(plan.graphs([name], dsk, where)[0], name, chunks=(rows, rows),
                    meta=meta_from_array(xs._meta, 2, res))


# ---------------------------------------------------------------------------------------------
# corr_pairs
# ---------------------------------------------------------------------------------------------

@completed
def _pairs_rows(rep: Replica, r0: int, r1: int, thr: float) -> tuple:
    """Every pair ``i < j`` with ``r0 <= i < r1`` and ``|r| >= thr``, in ``(i, j)`` order:
    the single-GPU call's strips."""
    eng = rep.eng
    xp = eng.xp
    parts = list(stream_above(eng, thr, r0, r1, strip_bytes_for(eng)))
    if not parts:
        return (xp.zeros(0, np.int64), xp.zeros(0, np.int64), xp.zeros(0, np.float64))
    return tuple(xp.concatenate([p[f] for p in parts]) for f in range(3))


@completed
def _top_rows(rep: Replica, r0: int, r1: int, kk: int, side: int) -> tuple:
    """Each series ``r0 <= i < r1``: its ``kk`` strongest partners over every column, grouped
    by ``i``, strongest first. Rows and columns are cut on one lattice (multiples of
    ``side``, and ``r0``, ``r1``), so each piece is a diagonal block, a block above the
    diagonal, or the transpose of one (what the engines compute)."""
    eng = rep.eng
    xp, m = eng.xp, eng.m
    cuts = sorted({*range(0, m, side), r0, r1, m})
    best = TopK(xp, r1 - r0, kk)
    for a, b in pairwise(cuts):
        if a < r0 or b > r1:
            continue
        for c, d in pairwise(cuts):
            if c == a:
                blk = finish(eng.block(a, b, a, b), a, a, eng)
                ix = xp.arange(b - a)
                blk[ix, ix] = np.nan  # no self pairs
            elif c > a:
                blk = finish(eng.block(a, b, c, d), a, c, eng)
            else:
                blk = xp.ascontiguousarray(finish(eng.block(c, d, a, b), c, a, eng).T)
            best.merge(a - r0, c, blk)
    i, j, r = best.result()
    return i + r0, j, r


def corr_pairs(x: Any, *, threshold: float | None = None, top_k: int | None = None,
               rowvar: bool = True, precision: str | None = None) -> CorrPairs:
    """``warplab.corr_pairs`` of a dask array, never holding the M x M matrix:
    ``CorrPairs(i, j, r)``, three 1-D dask arrays of unknown length (one chunk per range of
    rows; compute them together: ``dask.compute(*pairs)``), equal to the single-machine
    result: with ``threshold`` every pair ``i < j`` with ``|r| >= threshold`` sorted by
    ``(i, j)``; with ``top_k`` each series' ``k`` strongest partners, grouped by ``i``,
    strongest first.

    Placement (``placement.py``): each worker of the current client builds one replica of the
    prepared series; the series are cut into ranges of rows, one or more per worker, each
    task computing its rows' pairs from the local replica: with ``threshold`` the rows
    against the columns after them, the ranges cut so that each holds an equal number of
    pairs (the single-GPU call's strips, in ``(i, j)`` order, no sort); with ``top_k`` the
    rows against every column (twice the multiply-adds of the triangle, but no exchange of
    candidates between workers), ranges of equal rows. With a ``distributed`` client the
    tasks are sent at the call, each restricted to its worker; without one the graph is
    lazy. Pairs stay on the worker that found them (CuPy for CuPy chunks) until computed or
    persisted."""
    thr, top = check_selection(threshold, top_k)
    precision = _precision(precision)
    xs = _series(x, None, rowvar)
    m, n = (int(s) for s in xs.shape)
    name = "wl-corrpairs-" + dask.base.tokenize(xs, thr, top, precision)
    meta_i = meta_from_array(xs._meta, 1, np.int64)
    meta_r = meta_from_array(xs._meta, 1, np.float64)
    if m < 2 or n < 2:
        return CorrPairs(*(da.from_array(meta, chunks=(0,), asarray=False) for meta in
                           (meta_i, meta_i, meta_r)))
    k = kind(xs)
    plan = _Plan(xs)
    groups = plan.groups
    dsk = _replicas(xs, k, precision, name, groups)
    parts = groups * max(1, -(-xs.numblocks[0] // groups))
    if thr is not None:
        bounds = equal_work_rows(m, parts)
    else:
        step = -(-m // min(parts, m))
        bounds = [*range(0, m, step), m]
    where: dict = {(f"{name}-rep", g): g for g in range(groups)}
    kk = min(top or 1, m - 1)
    side = tiles.cpu_tile(m) if k == "numpy" else TOP_SIDE
    for t, (r0, r1) in enumerate(pairwise(bounds)):
        g = t % groups
        rep = (f"{name}-rep", g)
        dsk[(f"{name}-rows", t)] = ((_pairs_rows, rep, r0, r1, thr) if thr is not None else
                                    (_top_rows, rep, r0, r1, kk, side))
        where[(f"{name}-rows", t)] = g
        for f, part in enumerate("ijr"):
            dsk[(f"{name}-{part}", t)] = (operator.getitem, (f"{name}-rows", t), f)
            where[(f"{name}-{part}", t)] = g
    chunks = ((math.nan,) * (len(bounds) - 1),)
    names = [f"{name}-{part}" for part in "ijr"]
    return CorrPairs(*(da.Array(g, n, chunks=chunks, meta=meta) for g, n, meta in
                       zip(plan.graphs(names, dsk, where), names, (meta_i, meta_i, meta_r))))

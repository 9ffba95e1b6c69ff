"""The planned grid on the device (``warplab bench memcpy --full``): the plan of ``plan.py``
run cell by cell, every target of a cell on one batch.

What differs from the table campaign (``bench.run_memcpy``): the sizes and offsets are drawn
on the device (CuPy's ``RandomState``: no host work per buffer, no host-to-device copy of the
batch) once per set of sizes and shared by its four layouts; the source and destination
regions are allocated once for the whole grid; each target is timed by CUDA events around
launches enqueued back to back behind a blocking kernel (``timing.back_to_back_samples``:
one synchronisation per record, the host's cost per call never in the figure); the slow
baselines run only in the plan's witness cells. Before each target the persisting L2 lines
are reset to normal (:func:`fresh_l2`). The check after a poisoned run is the
benchmark's own (``cells.check_destination``), with every byte beyond the cell's region,
up to the end of the shared destination, as guard.

Every function takes the array module (``xp``: CuPy on the GPU, NumPy in the CPU tests,
where a target copies with host addresses) and the timer, so the whole loop runs on the CPU.
"""
from __future__ import annotations

import ctypes
import functools
import time
from collections.abc import Callable
from itertools import groupby
from typing import Any

import numpy as np

from warplab.lab.harness.measure import Settings
from warplab.lab.harness.stats import summarize
from warplab.lab.campaigns.memcpy.cells import (
    GUARD,
    POISON,
    Case,
    address,
    check_destination,
    draw_sizes,
    layout_offsets,
    params_of,
    record_of,
    sample_bytes,
    sample_picks,
    target_call,
)
from warplab.lab.campaigns.memcpy.ceiling import MODE, PROVIDER, TOUCHED, ScatterCeiling, touch_check
from warplab.families.memcpy.cuda import DeviceBatch
from warplab.lab.campaigns.memcpy.plan import PER_BUFFER_LIMIT, SLOW, WITNESS, PlannedCell
from warplab.families.memcpy.spec import MemcpyProblem

#: Targets that want the batch's host arrays (the list form: no read-back per call).
HOST_TARGETS = frozenset({"loop_memcpy_async", "cudaMemcpyBatchAsync"})
Timer = Callable[[Callable[[], None], int, int], tuple[list[float], bool]]
Check = Callable[["GridCell"], "str | None"]


def to_host(a: Any) -> np.ndarray:
    """A NumPy copy of a CuPy array (a NumPy array as it is)."""
    return a.get() if hasattr(a, "get") else np.asarray(a)


def synchronize(xp: Any) -> None:
    """Wait for the current stream (nothing to wait for with NumPy)."""
    cuda = getattr(xp, "cuda", None)
    if cuda is not None:
        cuda.get_current_stream().synchronize()


@functools.cache
def _reset_entry() -> Any:
    """``cuCtxResetPersistingL2Cache`` of the driver, or None where it cannot be loaded."""
    try:
        return ctypes.CDLL("libcuda.so.1").cuCtxResetPersistingL2Cache
    except (OSError, AttributeError):
        return None


def fresh_l2(xp: Any) -> bool:
    """Reset the current context's persisting L2 lines to normal
    (``cuCtxResetPersistingL2Cache``); whether it did (False with NumPy, without the driver
    call, or when it fails).

    Why: lines a kernel stores with an L2 evict-last hint (the sweep's load policies 32, 34,
    50, 64, 66) stay in L2 after it ends and speed up every later kernel on the same buffers:
    on the H100 the default copy runs 4% faster by geometric mean over 17 cells (10% at
    C_S 1-8 B) right after such kernels, and exactly as fast as before once reset
    (``benchmarks/explore_memcpy_touch.py``, benchmarks/NOTES.md). So each target is timed
    from the same L2 state, whatever ran before it."""
    if getattr(xp, "cuda", None) is None:
        return False
    entry = _reset_entry()
    return entry is not None and entry() == 0


class Arena:
    """The source (random bytes) and destination regions of every cell, with a guard of
    :data:`GUARD` bytes before; a cell uses their first ``data`` bytes after the guard.
    Grown (allocated again) when a cell needs more."""

    def __init__(self, xp: Any, data: int) -> None:
        self.xp, self.capacity = xp, 0
        self.fit(data)

    def fit(self, data: int) -> None:
        if data <= self.capacity:
            return
        self.src = self.dst = None  # let the pool reuse the old blocks
        self.capacity = int(data * 1.05) + (1 << 20)
        n = self.capacity + 2 * GUARD
        self.src = self.xp.random.RandomState(4).randint(0, 256, size=n, dtype=np.uint8)
        self.dst = self.xp.empty(n, dtype=np.uint8)


class SizeSet:
    """One (min, max, align, total): the sizes (int64, and uint64 for the kernels) and their
    offsets per layout, drawn once on the array module's device for the four layouts."""

    def __init__(self, xp: Any, lo: int, hi: int, align: int, total: int) -> None:
        self.xp = xp
        self.sizes = draw_sizes(xp, lo, hi, align, total)
        self.sizes_u64 = self.sizes.astype(np.uint64)
        self.count = int(self.sizes.size)
        self.data = int(self.sizes.sum())
        self.largest_at = int(self.sizes.argmax())
        self.largest = int(self.sizes[self.largest_at])
        self._offsets: dict[tuple[str, int], Any] = {}

    def offsets(self, layout: str, seed: int) -> Any:
        """Offsets of ``layout`` (shuffles seeded: 2 for sources, 3 for destinations)."""
        key = (layout, seed if layout == "shuffle" else 0)
        if key not in self._offsets:
            self._offsets[key] = layout_offsets(self.xp, self.sizes, layout, seed)
        return self._offsets[key]


class GridCell:
    """One cell on the device: the batch over the arena and the check's samples. Has what
    ``bench.DeviceCase`` has (``case``, ``batch``, ``sizes``, ``src_off``, ``dst_off``,
    ``data``, ``src``, ``dst``, ``verify``), so scripts may use either; ``pick``: the sampled
    buffers (``cells.sample_picks``)."""

    def __init__(self, arena: Arena, ss: SizeSet, case: Case, host: bool = False) -> None:
        xp = self.xp = arena.xp
        self.case, self.sizes, self.data, self.largest = case, ss.sizes, ss.data, ss.largest
        self.src, self.dst = arena.src, arena.dst
        self.src_off = ss.offsets(case.src_layout, 2)
        self.dst_off = ss.offsets(case.dst_layout, 3)
        u = np.uint64
        src = self.src_off.astype(u) + u(address(arena.src) + GUARD)
        dst = self.dst_off.astype(u) + u(address(arena.dst) + GUARD)
        arrays = (to_host(src), to_host(dst), to_host(ss.sizes_u64)) if host else None
        self.batch = DeviceBatch(src, dst, ss.sizes_u64, ss.count, arrays)
        pick = self.pick = sample_picks(ss.count, ss.largest_at)
        at = xp.asarray(pick)
        s_idx, d_idx = sample_bytes(to_host(ss.sizes[at]), to_host(self.src_off[at]),
                                    to_host(self.dst_off[at]))
        self.sample_src, self.sample_dst = xp.asarray(s_idx), xp.asarray(d_idx)
        self.src_sum = int(self.src[GUARD:GUARD + self.data].sum(dtype=np.uint64))

    def verify(self) -> tuple[bool, str | None]:
        return check_destination(self.xp, self.src, self.dst, self.data, self.sample_src,
                                 self.sample_dst, self.src_sum)


def _record(cell: GridCell, name: str, provider: str, st: Settings, ceilings: dict,
            samples: list[float] | None, held: bool, err: str | None, **extra: Any) -> dict:
    """A planned record: timed (``samples``) and checked (``err`` None), or failed."""
    c, b = cell.case, cell.batch
    problem = MemcpyProblem(b.count, cell.data, cell.largest, True)
    if samples is None:
        return record_of(c, problem, name, provider, "cuda", {}, False, err, ceilings,
                         params_of(c, b.count, st, 0, **extra))
    phase = summarize(samples)
    return record_of(c, problem, name, provider, "cuda", {"kernel": phase, "total": phase},
                     err is None, err, ceilings,
                     params_of(c, b.count, st, len(samples), held=held, timing="back_to_back",
                               **extra))


def measure_planned(cell: GridCell, target: Any, runs: int, warmup: int, ceilings: dict,
                    timer: Timer, check: Check | None = None) -> dict:
    """One record: a launch (compilation, allocation), ``warmup + runs`` launches timed back
    to back, then a launch into the poisoned destination and the check (and ``check(cell)``
    after it where given: None when right, else what is wrong)."""
    call, name, provider = target_call(target, cell.batch)
    st = Settings(runs=runs, warmup=warmup)
    try:
        call()
        synchronize(cell.xp)
        samples, held = timer(call, runs, warmup)
        cell.dst.fill(POISON)
        call()
        synchronize(cell.xp)
        ok, err = cell.verify()
        if ok and check is not None:
            err = check(cell)
    except Exception as exc:  # noqa: BLE001  (a failing target is a record, never a crash)
        return _record(cell, name, provider, st, ceilings, None, False,
                       f"{type(exc).__name__}: {exc}")
    extra = {"full_check": True} if check is not None else {}
    return _record(cell, name, provider, st, ceilings, samples, held, err, **extra)


def measure_ceiling(cell: GridCell, target: ScatterCeiling, runs: int, warmup: int,
                    ceilings: dict, timer: Timer, check: Check | None = None) -> dict:
    """The scatter ceiling's record (``ceiling.py``): every shape timed as
    :func:`measure_planned` times a variant; the fastest shape's median is the record's
    (``params.shape``; every shape's median in ``params.shape_ms``), then that shape runs
    into the poisoned destination and ``ceiling.touch_check`` checks it. ``check`` is a
    copy's check and does not apply (the destination is not a copy)."""
    st = Settings(runs=runs, warmup=warmup)
    about = {"mode": MODE, "touched": TOUCHED}
    try:
        timed = {}
        for shape, launch in target.shapes.items():
            call = functools.partial(launch, cell.batch)
            call()
            synchronize(cell.xp)
            timed[shape] = timer(call, runs, warmup)
        medians = {s: float(np.median(samples)) for s, (samples, _) in timed.items()}
        best = min(medians, key=medians.__getitem__)
        cell.dst.fill(POISON)
        target.shapes[best](cell.batch)
        synchronize(cell.xp)
        err = touch_check(cell.xp, cell)
    except Exception as exc:  # noqa: BLE001  (a failing target is a record, never a crash)
        return _record(cell, target.name, PROVIDER, st, ceilings, None, False,
                       f"{type(exc).__name__}: {exc}", **about)
    samples, held = timed[best]
    return _record(cell, target.name, PROVIDER, st, ceilings, samples, held, err, **about,
                   shape=best, shape_ms=medians,
                   shapes_note=f"the fastest of {len(medians)} shapes (bBLOCKxK: threads per "
                               "block x buffers per thread; wBLOCK: a warp's pieces in lane "
                               "order), each timed like a variant")


def run_planned(cells: list[PlannedCell], targets: list[Any], ceilings: dict, *,
                xp: Any = None, timer: Timer | None = None, deadline_s: float | None = None,
                add: Callable[[dict], None] | None = None,
                log: Callable[[str], None] | None = None, check: Check | None = None,
                reset_l2: bool = True) -> tuple[list[dict], list[str], bool]:
    """Measure the plan's cells (the targets it names that are in ``targets``, by name):
    (records, notes, whether every cell ran). Before each set of sizes, stops when its
    planned seconds would end past ``deadline_s`` after the start (a note says how many cells
    were left out). ``add`` gets each record as it is made; ``log`` a line per cell (its
    seconds against the plan's); ``check``: see :func:`measure_planned`; ``reset_l2``:
    :func:`fresh_l2` before each target (a note says whether it could)."""
    if xp is None:
        import cupy as xp
    if timer is None:
        from warplab.lab.harness.timing import back_to_back_samples as timer
    by_name = {t.name: t for t in targets}
    records: list[dict] = []
    notes = [f"planned grid: the slow baselines ({', '.join(SLOW)}) only in the cells "
             + ", ".join(Case(*w, total=0).label for w in WITNESS)
             + " (loop_memcpy_async and cudaMemcpyBatchAsync up to "
             f"{PER_BUFFER_LIMIT['loop_memcpy_async']} buffers); every other target in "
             "every cell, timed back to back behind a blocking kernel"]
    if not cells:
        return records, notes, True
    if reset_l2:
        notes.append("persisting L2 lines reset to normal before each target" if fresh_l2(xp)
                     else "persisting L2 lines not reset (no driver call): what ran before a "
                          "target may speed it up")
    t0 = time.perf_counter()
    arena = Arena(xp, max(c.case.total for c in cells))
    done = 0
    for key, group in groupby(cells, key=lambda c: c.size_key):
        group = list(group)
        planned = sum(c.est_s for c in group)
        if deadline_s is not None and time.perf_counter() - t0 + planned > deadline_s:
            notes.append(f"stopped at the deadline ({deadline_s:.0f} s): {len(cells) - done} "
                         f"of {len(cells)} planned cells not measured")
            break
        ss = SizeSet(xp, *key)
        arena.fit(ss.data)
        for pc in group:
            t_cell = time.perf_counter()
            case = pc.case
            cell = GridCell(arena, ss, case, host=bool(HOST_TARGETS & set(pc.targets)))
            for name in pc.targets:
                if name in by_name:
                    target = by_name[name]
                    measure = (measure_ceiling if isinstance(target, ScatterCeiling)
                               else measure_planned)
                    if reset_l2:
                        fresh_l2(xp)
                    rec = measure(cell, target, *pc.runs_of(name), ceilings, timer, check)
                    records.append(rec)
                    if add:
                        add(rec)
            done += 1
            if log:
                log(f"{case.label}: {ss.count} buffers, {time.perf_counter() - t_cell:.2f} s "
                    f"(planned {pc.est_s:.2f})")
            del cell
        del ss
        pool = getattr(xp, "get_default_memory_pool", None)
        if pool is not None:
            pool().free_all_blocks()
    notes.append(f"planned grid: {done} of {len(cells)} cells in "
                 f"{time.perf_counter() - t0:.0f} s (planned "
                 f"{sum(c.est_s for c in cells):.0f} s for all, start-up not counted)")
    return records, notes, done == len(cells)

"""CUB's DeviceBatchMemcpy benchmark: uniform random sizes in [min, max] (multiples of the
alignment), CONSECUTIVE or SHUFFLE offsets for input and output, GB/s counting all bytes
(data read + written and 24 bytes of metadata per buffer) and data bytes only.

Kernel records: the batch is on the device before timing; the kernel phase (held behind a
blocking kernel) is the variant's or comparator's launches on a non-default stream. Then the
destination is poisoned (0xA5), the copy runs once more and is verified on the device: every
byte of a sample of buffers (the first and last 32, 192 at random and the largest) against its
source, the byte sum of the whole destination region against the source's, and 256 guard bytes
before and after the region still poisoned. Call records (``params.mode = "call"``): the
public ``copy_batched`` on a list of device arrays, host-timed until the stream is idle.
"""
from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from warplab.lab.harness.campaign import check_variant_names, finish_campaign
from warplab.lab.harness.ceilings import measure_all
from warplab.lab.harness.comparators import campaign_targets
from warplab.lab.harness.measure import Settings, time_device_runs
from warplab.lab.harness.stats import summarize
from warplab.lab.harness.timing import time_runs
from warplab.lab.campaigns.memcpy.cells import (  # Case, make_sizes, offsets: this module's API too
    GUARD,
    LAYOUTS,
    POISON,
    Case,
    check_destination,
    make_sizes,
    offsets,
    params_of,
    record_of,
    sample_bytes,
    sample_picks,
    target_call,
)
from warplab.lab.campaigns.memcpy.comparators import MEMCPY_PROVIDERS
from warplab.families.memcpy.cpu import numpy_copy
from warplab.lab.campaigns.memcpy.plan import RUNS, WARMUP, PlannedCell, estimate_s, plan_cells
from warplab.families.memcpy.spec import MemcpyProblem, Plan

#: Slow-per-buffer targets run only up to this many buffers (a driver call per buffer).
PER_BUFFER_LIMIT = {"loop_memcpy_async": 20_000, "cudaMemcpyBatchAsync": 1_000_000}


class DeviceCase:
    """A case's buffers on the GPU: source and destination regions (with guards), and the
    batch (addresses and sizes) on the device and the host."""

    def __init__(self, c: Case) -> None:
        import cupy

        from warplab.families.memcpy.transfer import send_batch

        self.case = c
        self.sizes = make_sizes(c.lo, c.hi, c.align, c.total)
        self.src_off = offsets(self.sizes, c.src_layout, seed=2)
        self.dst_off = offsets(self.sizes, c.dst_layout, seed=3)
        self.data = int(self.sizes.sum())
        self.src = cupy.random.RandomState(4).randint(0, 256, size=self.data + 2 * GUARD,
                                                      dtype=np.uint8)
        self.dst = cupy.empty(self.data + 2 * GUARD, dtype=np.uint8)
        s0, d0 = int(self.src.data.ptr) + GUARD, int(self.dst.data.ptr) + GUARD
        u = np.uint64
        self.batch = send_batch(self.src_off.astype(u) + u(s0), self.dst_off.astype(u) + u(d0),
                                self.sizes.astype(u))
        self.src_sum = int(self.src[GUARD:GUARD + self.data].sum(dtype=np.uint64))
        pick = sample_picks(self.sizes.size, int(np.argmax(self.sizes)))
        s_idx, d_idx = sample_bytes(self.sizes[pick], self.src_off[pick], self.dst_off[pick])
        self.sample_src, self.sample_dst = cupy.asarray(s_idx), cupy.asarray(d_idx)
        cupy.cuda.get_current_stream().synchronize()

    def verify(self) -> tuple[bool, str | None]:
        """Check the destination after one poisoned run (see the module docstring)."""
        import cupy

        return check_destination(cupy, self.src, self.dst, self.data, self.sample_src,
                                 self.sample_dst, self.src_sum)


def measure_target(dc: DeviceCase, target: Any, settings: Settings, ceilings: dict) -> dict:
    """One kernel record of a cuda variant or a provider on a prepared case."""
    import cupy

    c, b = dc.case, dc.batch
    call, name, provider = target_call(target, b)
    problem = MemcpyProblem(b.count, dc.data, int(dc.sizes.max()), True)

    def run(rec: Any, held: bool) -> None:
        with rec.phase("kernel", hold=held):
            call()

    try:
        call()  # compile, build, allocate outside any held phase
        cupy.cuda.get_current_stream().synchronize()
        samples, held = time_device_runs(run, settings)
        dc.dst.fill(POISON)
        call()
        cupy.cuda.get_current_stream().synchronize()
        ok, err = dc.verify()
    except Exception as exc:  # noqa: BLE001  (a failing target is a record, never a crash)
        return record_of(c, problem, name, provider, "cuda", {}, False,
                         f"{type(exc).__name__}: {exc}", ceilings,
                         params_of(c, b.count, settings, 0))
    return record_of(c, problem, name, provider, "cuda",
                     {k: summarize(v) for k, v in samples.items()}, ok, err, ceilings,
                     params_of(c, b.count, settings, len(samples["total"]), held=held))


def measure_calls(n_arrays: int, settings: Settings, ceilings: dict, seed: int = 6) -> list[dict]:
    """Host time per public call on ``n_arrays`` device arrays of 1..4096 bytes:
    ``copy_batched`` (addresses, overlap check, one H2D copy, launches) against a Python loop
    of CuPy copies (``dst[...] = src`` per array), until the stream is idle."""
    import cupy

    from warplab.families.memcpy.api import copy_batched

    sizes = np.random.default_rng(seed).integers(1, 4097, size=n_arrays)
    srcs = [cupy.full(int(s), i % 251, dtype=np.uint8) for i, s in enumerate(sizes)]
    dsts = [cupy.empty(int(s), dtype=np.uint8) for s in sizes]
    stream = cupy.cuda.get_current_stream()

    def loop() -> None:
        for s, d in zip(srcs, dsts):
            d[...] = s

    case = Case(1, 4096, "consecutive", "consecutive", 1, int(sizes.sum()))
    problem = MemcpyProblem(n_arrays, int(sizes.sum()), int(sizes.max()), True)
    records = []
    for name, provider, fn in (("copy_batched", "warplab", lambda: copy_batched(srcs, dsts)),
                               ("cupy_copy_loop", "cupy", loop)):
        def run(rec: Any, fn: Callable[[], None] = fn) -> None:
            with rec.phase("kernel"):
                fn()
                stream.synchronize()

        for d in dsts:
            d.fill(POISON)
        samples = time_runs(run, warmup=max(settings.warmup, 3), runs=max(settings.runs, 30),
                            cuda=False, max_seconds=settings.max_seconds)
        ok = all(bool((d == s).all()) for s, d in zip(srcs[:64], dsts[:64]))
        rec = record_of(case, problem, name, provider, "cuda",
                        {k: summarize(v) for k, v in samples.items()}, ok,
                        None if ok else "copied arrays differ", ceilings,
                        params_of(case, n_arrays, settings, len(samples["total"]), mode="call"))
        rec["gbps"] = rec["pct_of_copy_bw"] = rec["data_gbps"] = None  # a latency
        records.append(rec)
    return records


def measure_cpu(c: Case, settings: Settings, ceilings: dict) -> dict:
    """The NumPy variant on host memory, host-timed, every byte verified."""
    sizes = make_sizes(c.lo, c.hi, c.align, c.total)
    so, do = offsets(sizes, c.src_layout, 2), offsets(sizes, c.dst_layout, 3)
    data = int(sizes.sum())
    src = np.random.default_rng(4).integers(0, 256, size=data + 2 * GUARD, dtype=np.uint8)
    dst = np.full(data + 2 * GUARD, POISON, dtype=np.uint8)
    zero = np.zeros(sizes.size, dtype=np.int64)
    plan = Plan(zero, so + GUARD, zero.copy(), do + GUARD, sizes)

    def run(rec: Any) -> None:
        with rec.phase("kernel"):
            numpy_copy([src], [dst], plan)

    samples = time_runs(run, warmup=settings.warmup, runs=settings.runs, cuda=False,
                        max_seconds=settings.max_seconds)
    want = np.full_like(dst, POISON)
    for s, d, n in zip(so.tolist(), do.tolist(), sizes.tolist()):
        want[GUARD + d:GUARD + d + n] = src[GUARD + s:GUARD + s + n]
    ok = bool(np.array_equal(dst, want))
    return record_of(c, MemcpyProblem(sizes.size, data, int(sizes.max()), False), "numpy",
                     "warplab", "cpu", {k: summarize(v) for k, v in samples.items()}, ok,
                     None if ok else "destination differs from the reference", ceilings,
                     params_of(c, sizes.size, settings, len(samples["total"])))


#: The size ranges (min, max) of CUB's DeviceBatchMemcpy benchmark: ranges 1-8 .. 1-4096, fixed
#: sizes, and 1-64 KiB.
PR_SIZES = ((1, 8), (1, 64), (1, 256), (1, 1024), (1, 4096), (16, 16), (64, 64), (256, 256),
            (1024, 1024), (4096, 4096), (65536, 65536), (1, 65536))


@dataclass(frozen=True)
class MemcpyCampaign:
    sizes: tuple[tuple[int, int], ...]
    layouts: tuple[tuple[str, str], ...]
    aligns: tuple[int, ...]
    total: int
    runs: int
    warmup: int
    call_arrays: tuple[int, ...]   # list lengths of the public-call records
    planned: bool = False   # plan.py's rules and grid.py's run: see run_memcpy


_ALL_LAYOUTS = tuple((a, b) for a in LAYOUTS for b in LAYOUTS)
MEMCPY_CAMPAIGNS = {
    "quick": MemcpyCampaign(((1, 8), (1, 64), (256, 256), (4096, 4096), (65536, 65536)),
                            (("consecutive", "consecutive"),), (1,), 64 << 20, 10, 2, (1000,)),
    "table": MemcpyCampaign(PR_SIZES, (("consecutive", "consecutive"), ("shuffle", "shuffle")),
                            (1,), 256 << 20, 10, 2, (100, 1000, 10000)),
    "full": MemcpyCampaign(PR_SIZES, _ALL_LAYOUTS, (1, 4, 16), 512 << 20, RUNS, WARMUP,
                           (100, 1000, 10000), planned=True),
}
CPU_TOTAL = 1 << 20


def cases(c: MemcpyCampaign, total: int | None = None) -> list[Case]:
    """The campaign's grid; cells whose range holds no multiple of the alignment are left
    out (as in CUB's DeviceBatchMemcpy benchmark: sizes are multiples of the alignment)."""
    out = []
    for lo, hi in c.sizes:
        for a in c.aligns:
            if hi // a < max(-(-lo // a), 1):
                continue
            for src, dst in c.layouts:
                out.append(Case(lo, hi, src, dst, a, total or c.total))
    return out


def targets(variant_names: list[str] | None, with_comparators: bool
            ) -> tuple[list[Any], list[str]]:
    """cuda variants (named, or all) and the usable comparators, plus skip notes."""
    return campaign_targets("memcpy_batched", "cuda", MEMCPY_PROVIDERS, variant_names,
                            with_comparators)


def ceiling_target() -> Any:
    """The scatter ceiling of the cuda backend (``ceiling.py``), a target of the planned
    grid beside the comparators."""
    from warplab.lab.campaigns.memcpy.ceiling_cuda import cuda_ceiling

    return cuda_ceiling()


class Terminated(BaseException):
    """SIGTERM (``timeout``'s signal) during a planned campaign: its JSON keeps what ran."""


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """Turn SIGTERM into :class:`Terminated` inside the block (main thread only; elsewhere
    the signal keeps its handler)."""
    def raise_terminated(signum: int, frame: Any) -> None:
        raise Terminated()

    try:
        old = signal.signal(signal.SIGTERM, raise_terminated)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def plan_of(campaign: str, grid: list[Case] | None, names: list[str],
            copy_gbps: float | None, settings: Settings | None = None) -> list[PlannedCell]:
    """The plan of a planned campaign: its grid with the plan's totals, or ``grid`` (the
    ``--sizes`` totals) as it is."""
    c = MEMCPY_CAMPAIGNS[campaign]
    st = settings or Settings(runs=c.runs, warmup=c.warmup)
    return plan_cells(grid if grid is not None else cases(c), names, copy_gbps,
                      auto_total=grid is None, runs=st.runs, warmup=st.warmup)


def run_memcpy(*, campaign: str = "quick", backend: str, json_path: Path | None,
               grid: list[Case] | None = None, variant_names: list[str] | None = None,
               with_comparators: bool = True, settings: Settings | None = None,
               call_arrays: tuple[int, ...] | None = None,
               progress: Callable[[int, int, dict], None] | None = None,
               log: Callable[[str], None] | None = None,
               deadline_s: float | None = None) -> dict:
    """Run a memcpy campaign (or an explicit ``grid``); write ``json_path`` if given.

    A planned campaign (``--full``) on the GPU runs :func:`plan_of`'s cells through
    ``grid.run_planned`` (``log`` gets the plan's estimate first, then a line per cell; new
    cells stop starting once ``deadline_s`` would pass), the others every target on every
    case with the held timing of ``measure_target``."""
    c = MEMCPY_CAMPAIGNS[campaign]
    settings = settings or Settings(runs=c.runs, warmup=c.warmup, max_seconds=0.5)
    notes: list[str] = []
    if backend == "cpu":
        if grid is None:
            grid = cases(c, CPU_TOTAL)
            notes.append(f"cpu backend: campaign data capped at {CPU_TOTAL} bytes per case")
        notes.append("cpu backend: comparators (CUB, cudaMemcpyBatchAsync) need the GPU; "
                     "NumPy has no batched copy to stand in (warplab's numpy variant is the "
                     "per-buffer loop a NumPy user writes)")
        check_variant_names("memcpy_batched", variant_names, backend)
    grid_given = grid
    grid = grid if grid is not None else cases(c)
    ceilings = measure_all(backend)
    records: list[dict] = []
    expected = [0]  # records a planned campaign will make (0: not known)

    def add(rec: dict) -> None:
        records.append(rec)
        if progress:
            progress(len(records), expected[0], rec)

    if backend == "cpu":
        for case in grid:
            add(measure_cpu(case, settings, ceilings))
        return finish_campaign(backend, ceilings, notes, campaign, records, json_path)
    import cupy

    tgts, more = targets(variant_names, with_comparators)
    notes += more
    skipped: set[str] = set()
    calls = call_arrays if call_arrays is not None else c.call_arrays
    with cupy.cuda.Stream(non_blocking=True):  # cudaMemcpyBatchAsync refuses the legacy one
        if c.planned:
            from warplab.lab.campaigns.memcpy.grid import run_planned

            if with_comparators:  # the yardstick of the target rule, beside CUB
                tgts.append(ceiling_target())
                notes.append("scatter_touch (provider ceiling, params.mode ceiling): the "
                             "cell's scatter ceiling, not a copy (see docs/memcpy.md)")
            cells = plan_of(campaign, grid_given, [t.name for t in tgts],
                            ceilings.get("copy_gbps"), settings)
            est = estimate_s(cells, startup=False, calls=bool(calls))
            if log:
                log(f"memcpy {campaign}: {len(cells)} cells, "
                    f"{sum(len(p.targets) for p in cells)} records planned, about {est:.0f} s")
            expected[0] = sum(len(p.targets) for p in cells) + 2 * len(calls)
            try:
                with _sigterm_raises():
                    _, planned_notes, complete = run_planned(
                        cells, tgts, ceilings, add=add, log=log, deadline_s=deadline_s)
            except Terminated:
                stop = (f"terminated (SIGTERM) after {len(records)} of {expected[0]} records: "
                        "the records so far")
                planned_notes, complete = [stop], False
            notes += planned_notes
            grid, calls = [], calls if complete else ()
        for case in grid:
            dc = DeviceCase(case)
            for t in tgts:
                limit = PER_BUFFER_LIMIT.get(t.name)
                if limit is not None and dc.batch.count > limit:
                    skipped.add(f"{t.name} skipped above {limit} buffers (a call per buffer)")
                    continue
                add(measure_target(dc, t, settings, ceilings))
            del dc
            cupy.get_default_memory_pool().free_all_blocks()
        for n in calls:
            for rec in measure_calls(n, settings, ceilings):
                add(rec)
    notes += sorted(skipped)
    return finish_campaign(backend, ceilings, notes, campaign, records, json_path)

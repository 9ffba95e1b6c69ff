"""The plan of a planned memcpy grid (``--full``), computed on the CPU before anything runs:
per cell its data total, expected buffer count, targets and estimated seconds.

Rules (the whole grid of CUB's DeviceBatchMemcpy benchmark, with CUB, in one GPU command of
a few minutes):

- **Total per cell.** The smallest power of two from 16 MiB to 512 MiB whose expected bytes
  (CUB's benchmark's count, ``2 * data + 24 * buffers``) take at least :data:`MIN_LAUNCH_S` at
  the copy ceiling: no variant can run a launch shorter than that, and the bytes are several
  times the L2 (50 MiB on the H100), so back-to-back launches do not read each other's data
  from it.
  Small buffers carry more metadata per data byte, so their cells need less data.
- **Targets.** Every cuda variant and comparator in every cell except the slow baselines
  (:data:`SLOW`), which run only in the :data:`WITNESS` cells (one of small, one of large
  buffers), and only up to their per-buffer limits (:data:`PER_BUFFER_LIMIT`).
- **Timing.** :data:`RUNS` launches after :data:`WARMUP` (:data:`SLOW_RUNS` /
  :data:`SLOW_WARMUP` for the slow baselines), back to back behind a blocking kernel
  (``bench.timing.back_to_back_samples``), one launch before for compilation and one after
  into a poisoned destination for the check.
- **Estimate.** Per cell: a fixed cost, a cost per new set of sizes, per target a fixed cost
  plus its launches at :func:`rate_gbps` (the slowest rate of any fast target in an H100
  table of the default and CUB, per size range: conservative for a new variant and for a
  faster GPU; benchmarks/NOTES.md); the scatter ceiling (``ceiling.py``) times each of its
  shapes, at the same rate (it is faster than any copy: conservative).
  The constants are guesses from the logs of that H100 table; the run prints its real time
  per cell.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from warplab.lab.campaigns.memcpy.ceiling import CEILING, SHAPE_NAMES
from warplab.lab.campaigns.memcpy.cells import Case, aligned_range, buffer_count
from warplab.families.memcpy.spec import META_BYTES

#: The H100's measured copy ceiling (``benchmarks/results/memcpy-table-h100-7244eb0.json.gz``),
#: the plan's default where none is measured.
COPY_GBPS_H100 = 2957.0
MIN_LAUNCH_S = 100e-6
TOTALS = tuple(1 << k for k in range(24, 30))   # 16 MiB .. 512 MiB
RUNS, WARMUP = 20, 3
SLOW_RUNS, SLOW_WARMUP = 5, 1
CUB = "cub::DeviceMemcpy::Batched"
SLOW = ("loop_memcpy_async", "block_per_buffer", "warp_per_buffer", "cudaMemcpyBatchAsync")
#: (min, max, in, out, align) of the cells where the slow baselines run.
WITNESS = ((1, 64, "consecutive", "consecutive", 1),
           (65536, 65536, "consecutive", "consecutive", 1))
#: Targets that make a driver call per buffer: run only up to this many buffers.
PER_BUFFER_LIMIT = {"loop_memcpy_async": 20_000, "cudaMemcpyBatchAsync": 20_000}
#: Host seconds per buffer of the per-buffer targets (H100 host: ~5.7 and ~4.9 us).
PER_BUFFER_S = {"loop_memcpy_async": 6e-6, "cudaMemcpyBatchAsync": 5e-6}
#: Slowest GB/s (all bytes) of the fast targets per size range on the H100
#: (``benchmarks/results/memcpy-table-h100-7244eb0.json.gz``, CC and SS, align 1); ranges not
#: listed fall back to :data:`FALLBACK_GBPS`.
SLOWEST_FAST_GBPS = {(1, 8): 267, (1, 64): 370, (1, 256): 672, (1, 1024): 1402,
                     (1, 4096): 716, (16, 16): 424, (64, 64): 619, (256, 256): 1731,
                     (1024, 1024): 1989, (4096, 4096): 885, (65536, 65536): 1810,
                     (1, 65536): 1179}
#: The same for block_per_buffer and warp_per_buffer (the slower of the two).
SLOWEST_BASELINE_GBPS = {(1, 8): 42, (1, 64): 105, (1, 256): 293, (1, 1024): 839,
                         (1, 4096): 1981, (16, 16): 70, (64, 64): 182, (256, 256): 484,
                         (1024, 1024): 1605, (4096, 4096): 2654, (65536, 65536): 2742,
                         (1, 65536): 2176}
FALLBACK_GBPS = 40.0
#: Seconds: per cell (layout arrays, Python), per new set of sizes (device draws, permutations),
#: per record (the first launch, syncs, the check), once per run (imports, ceilings, NVRTC and
#: nvcc builds when not cached), the public-call records at the end.
CELL_S, SIZES_S, RECORD_S, STARTUP_S, CALLS_S = 0.15, 0.2, 0.06, 45.0, 10.0


@dataclass(frozen=True)
class PlannedCell:
    """One cell: its case (sizes in [lo, hi], layouts, alignment, the data total chosen), the
    expected buffer count, the targets (names) in order, the estimated seconds, and the runs
    and warm-up runs of the fast targets."""

    case: Case
    count: int
    targets: tuple[str, ...]
    est_s: float
    runs: int = RUNS
    warmup: int = WARMUP

    @property
    def size_key(self) -> tuple[int, int, int, int]:
        """Cells of one key share their sizes (only the layouts differ)."""
        c = self.case
        return c.lo, c.hi, c.align, c.total

    def runs_of(self, name: str) -> tuple[int, int]:
        """(timed runs, warm-up runs) of a target here."""
        return (SLOW_RUNS, SLOW_WARMUP) if name in SLOW else (self.runs, self.warmup)


def expected_bytes(lo: int, hi: int, align: int, total: int) -> float:
    """The byte count of CUB's DeviceBatchMemcpy benchmark for a cell, expected: twice the
    data plus 24 bytes per buffer."""
    a_lo, a_hi = aligned_range(lo, hi, align)
    n = buffer_count(lo, hi, align, total)
    return 2 * n * (a_lo + a_hi) / 2 * align + META_BYTES * n


def cell_total(lo: int, hi: int, align: int, copy_gbps: float,
               min_launch_s: float = MIN_LAUNCH_S) -> int:
    """The smallest total of :data:`TOTALS` whose bytes take ``min_launch_s`` at
    ``copy_gbps`` (the largest where none does)."""
    need = copy_gbps * 1e9 * min_launch_s
    return next((t for t in TOTALS if expected_bytes(lo, hi, align, t) >= need), TOTALS[-1])


def rate_gbps(name: str, lo: int, hi: int) -> float:
    """The planning rate (GB/s, all bytes) of a kernel target in a size range."""
    table = SLOWEST_BASELINE_GBPS if name in SLOW else SLOWEST_FAST_GBPS
    return float(table.get((lo, hi), FALLBACK_GBPS))


def launch_s(name: str, lo: int, hi: int, align: int, total: int) -> float:
    """Estimated seconds of one launch (one call for the per-buffer targets)."""
    if name in PER_BUFFER_S:
        return PER_BUFFER_S[name] * buffer_count(lo, hi, align, total)
    return expected_bytes(lo, hi, align, total) / (rate_gbps(name, lo, hi) * 1e9)


def _targets(names: Iterable[str], c: Case, count: int) -> tuple[str, ...]:
    witness = (c.lo, c.hi, c.src_layout, c.dst_layout, c.align) in WITNESS
    return tuple(n for n in names if (n not in SLOW or witness)
                 and count <= PER_BUFFER_LIMIT.get(n, count))


def plan_cells(cases: Iterable[Case], names: Iterable[str], copy_gbps: float | None = None,
               auto_total: bool = True, runs: int = RUNS, warmup: int = WARMUP
               ) -> list[PlannedCell]:
    """The plan of ``cases`` for the targets ``names`` in that order. ``auto_total``: each
    cell's total from :func:`cell_total` at ``copy_gbps`` (default :data:`COPY_GBPS_H100`);
    else the cases' own totals. ``runs`` and ``warmup``: of every target but the slow
    baselines."""
    gbps = copy_gbps or COPY_GBPS_H100
    names = list(names)
    out: list[PlannedCell] = []
    seen: set[tuple[int, int, int, int]] = set()
    for c in cases:
        total = cell_total(c.lo, c.hi, c.align, gbps) if auto_total else c.total
        count = buffer_count(c.lo, c.hi, c.align, total)
        tgts = _targets(names, c, count)
        key = (c.lo, c.hi, c.align, total)
        est = CELL_S + (0.0 if key in seen else SIZES_S)
        seen.add(key)
        for n in tgts:
            r, w = (SLOW_RUNS, SLOW_WARMUP) if n in SLOW else (runs, warmup)
            launches = (r + w + 1) * len(SHAPE_NAMES) + 1 if n == CEILING else r + w + 2
            est += RECORD_S + launches * launch_s(n, c.lo, c.hi, c.align, total)
        out.append(PlannedCell(replace(c, total=total), count, tgts, est, runs, warmup))
    return out


def estimate_s(cells: Iterable[PlannedCell], *, startup: bool = True,
               calls: bool = True) -> float:
    """The plan's estimated seconds: its cells, plus start-up and the call records."""
    return (sum(c.est_s for c in cells) + (STARTUP_S if startup else 0.0)
            + (CALLS_S if calls else 0.0))


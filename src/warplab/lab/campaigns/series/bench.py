"""The Pearson report's measurements, in warplab's harness: generation of the series (report §3),
their per-series mean, the report's K2 steps (§4), the accuracy of float and double sums (§4.7)
and the sequential baseline (§1.2.1).

Four record families, every record of schema 1 (``bench/results.py``) plus the keys below:

``random_walk`` (the generation table): every variant writes (M, N) walks from 100 (``seed``,
``start``, ``eps`` in params). Kernel phase: the call, held behind a blocking kernel (cuda) or
host-timed (cpu). GB/s = ``walk_bytes_moved`` (M N itemsize bytes written) / median,
``pct_of_copy_bw`` of the measured copy ceiling. Verified against the NumPy reference of the same
Philox numbers (``walk.reference_rows``) on a fixed random sample of rows (``params.checked_rows``;
at most ``CHECK_ELEMENTS`` values, at least one row): max relative error (``rel_error``) within
one ulp of the dtype plus 4 N float64 unit roundoffs (``warp_scan`` multiplies in another order).

``reduce_axis`` (the K2 table): ``mean(axis=1)`` of walks generated on the device, by every
``reduce_axis`` variant that supports it and the comparators (``comparators.py``); the table
campaign's shapes are 8192 x 8192, ``TARGET_SHAPES`` and ``ROW_SHAPES``.
``params.mode`` ``"kernel"``: the call, held. ``params.mode`` ``"calls"``: the public call
(``warplab.mean(x, axis=1)``) and the CuPy / torch calls on device input, ``params.calls`` calls
back to back between two CUDA events, per-call time = elapsed / calls: what users get. Keys:
``rel_error`` (max over series of |mean - float64 mean| / |float64 mean|), ``tolerance`` (the
verification bound: max(TOLERANCE of the result dtype, 4 N u) with u the unit roundoff of the
accumulator ``params.acc``: the K2 seeds and the comparators sum in the input type, so float32
gets N 2^-24 4, warplab's default and NumPy's reference float64), ``pct_of_read_bw`` (GB/s as %
of the measured read ceiling ``meta.ceilings.read_gbps``; GB/s = ``axis_bytes_moved`` / median),
``read_gbps_same_bytes`` (the same read kernel over the input's own bytes, for inputs of at
least ``SAME_BYTES_MIN``; None below: ``ceiling_rates.read_bandwidth`` says why it is lower than
the 1 GiB ceiling) and ``pct_of_read_same_bytes``.

``series_accuracy`` (the accuracy table): per (M, N, eps) of ``ACCURACY_TABLE``, the SUMS of the
M series (the report compared sums) by each case of ``CUDA_CASES`` (cpu: ``CPU_CASES``) against
the float64 sum of the same float32 values on the host. ``eps`` (``params.tol``) is the
tolerance, absolute; the walk itself always steps by at most ``WALK_EPS`` (``params.walk_eps``).
Keys: ``accuracy`` (share of series within eps, 0..1), ``within`` and ``series`` (the counts),
``max_abs_error``, ``rel_error``/``tolerance`` (verification as above), and for float32 results
``rounding_bound``: the share that the float64 sum rounded to float32 would reach (a float32
result cannot do better: a sum of 2e5 has an ulp of 1/64). The kernel phase times the sums; one
timing per (M, N) and case, shared by its eps rows. The cpu backend has no K2 kernels: its
cases are warplab's numpy variant (float64 accumulation) and NumPy's own float32 pairwise sum.

``series_baseline`` (the sequential program of §1.2.1, NumPy on the host whatever the backend):
``params.step`` generation, mean, norm (sqrt of the summed squared deviations), numerator (one
``np.dot`` of deviations per pair i < j) and coefficient (one division per pair). The pair steps
time a random sample of pairs and scale to all M (M - 1) / 2: ``params.extrapolated`` true,
``params.sample_pairs`` and ``params.pairs``; the others time the whole step (extrapolated false).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from warplab.lab.harness.campaign import finish_campaign
from warplab.lab.harness.ceiling_rates import read_bandwidth
from warplab.lab.harness.ceilings import measure_all
from warplab.lab.harness.comparators import Provider, available, cpu_note
from warplab.lab.harness.measure import Settings
from warplab.lab.harness.results import make_result
from warplab.lab.harness.stats import summarize
from warplab.core import registry
from warplab.core.arrays import to_host
from warplab.families.reduce.axis import AxisProblem, axis_bytes_moved, reduce_axis
from warplab.lab.campaigns.series.bench_accuracy import ACCURACY_TABLE, measure_accuracy, measure_baseline
from warplab.lab.campaigns.series.comparators import NUMPY_PROVIDERS, SERIES_PROVIDERS
from warplab.lab.campaigns.series.measure import (
    SEED,
    START,
    WALK_EPS,
    Shape,
    failed_record,
    fits_device,
    max_rel,
    release_memory,
    shape_params,
    sum_tolerance,
    timed,
    verdict,
    walk_data,
)
from warplab.families.series.walk import WalkParams, WalkProblem, random_walk, reference_rows, walk_bytes_moved
from warplab.core.errors import InvalidValueError

CHECK_ELEMENTS = 1 << 21      # generated values checked against the NumPy reference, per record
CALLS = 32                    # public calls between two events
CPU_MAX_ELEMENTS = 1 << 24    # the cpu backend's campaign shapes stop here (asked ones do not)
SAME_BYTES_MIN = 1 << 24      # inputs from 16 MiB get the read ceiling at their own size too
REPORT_SHAPE: Shape = (8192, 8192)
TARGET_SHAPES: tuple[Shape, ...] = ((1 << 20, 32), (16, 1 << 24))
#: The shapes beside the tuned ones (rows of 256, 33, 1000 and 4097 values; 256 long rows): the
#: table campaign's means cover them too.
ROW_SHAPES: tuple[Shape, ...] = ((1 << 17, 256), (1 << 21, 33), (65536, 1000), (32768, 4097),
                                 (256, 1 << 20))
SWEEP: tuple[Shape, ...] = tuple((1 << (28 - k), 1 << k) for k in range(5, 25))  # 2^28 values
PARTS = ("generation", "mean", "accuracy", "baseline")


@dataclass(frozen=True)
class SeriesCampaign:
    generation: tuple[Shape, ...]
    means: tuple[Shape, ...]
    accuracy: tuple[tuple[int, int, float], ...]
    baseline: Shape
    sample_pairs: int
    runs: int
    warmup: int


_TABLE = SeriesCampaign((REPORT_SHAPE, *TARGET_SHAPES),
                        (REPORT_SHAPE, *TARGET_SHAPES, *ROW_SHAPES),
                        ACCURACY_TABLE, REPORT_SHAPE, 4000, runs=20, warmup=3)
SERIES_CAMPAIGNS = {
    "quick": SeriesCampaign((REPORT_SHAPE,), (REPORT_SHAPE,),
                            tuple(r for r in ACCURACY_TABLE if r[1] <= 8192), (1024, 1024), 1000,
                            runs=10, warmup=2),
    "table": _TABLE,
    "full": replace(_TABLE, means=tuple(dict.fromkeys(_TABLE.means + SWEEP))),
}
# the NumPy backend: small shapes (seconds), the report's accuracy rows up to 2^20 values
CPU_QUICK = SeriesCampaign(((1024, 1024),), ((1024, 1024),),
                           tuple(r for r in ACCURACY_TABLE if r[0] * r[1] <= 1 << 20),
                           (1024, 1024), 1000, runs=5, warmup=1)


def campaign_for(name: str, backend: str) -> SeriesCampaign:
    """The campaign ``name`` on ``backend`` (cpu quick: :data:`CPU_QUICK`)."""
    if name not in SERIES_CAMPAIGNS:
        raise InvalidValueError(f"unknown campaign {name!r}; valid: {', '.join(SERIES_CAMPAIGNS)}")
    return CPU_QUICK if backend == "cpu" and name == "quick" else SERIES_CAMPAIGNS[name]



# --- generation (report §3) -----------------------------------------------------------------

def check_walk(out: Any, m: int, n: int, dtype: str, params: WalkParams, seed: int = 7
               ) -> tuple[bool, float, str | None, int]:
    """(verified, max relative error, error, rows checked) of generated walks ``out`` against
    the NumPy reference on a fixed random sample of at most ``CHECK_ELEMENTS`` values."""
    k = max(1, min(m, CHECK_ELEMENTS // n))
    rows = np.sort(np.random.default_rng(seed).choice(m, k, replace=False))
    if k < m and hasattr(out, "__cuda_array_interface__"):
        import cupy

        got = to_host(out[cupy.asarray(rows)])
    else:
        got = to_host(out[rows] if k < m else out)
    ref = np.concatenate([reference_rows(int(j), int(j) + 1, n, params) for j in rows])
    rel = max_rel(got, ref)
    ok, err = verdict(rel, float(np.finfo(np.dtype(dtype)).eps) + 4 * n * 2.0 ** -53)
    return ok, rel, err, k


def measure_generation(m: int, n: int, dtype: str, names: Sequence[str], backend: str,
                       settings: Settings, ceilings: dict, emit: Callable[[dict], None]) -> None:
    """One ``random_walk`` record per variant in ``names`` at (m, n)."""
    params = WalkParams(SEED, START, WALK_EPS)
    dt = np.dtype(dtype)
    for name in names:
        kw = dict(family="random_walk", variant=name, provider="warplab", backend=backend,
                  bytes_moved=walk_bytes_moved(WalkProblem(m, n, dt)), ceilings=ceilings)
        p = shape_params(m, n, dtype, start=START, eps=WALK_EPS, seed=SEED, mode="kernel",
                         warmup=settings.warmup)

        def call(name: str = name) -> Any:
            return random_walk(m, n, start=START, eps=WALK_EPS, seed=SEED, dtype=dtype,
                               variant=name, device=backend)
        try:
            phases, held, out = timed(call, backend, settings)
            ok, rel, err, k = check_walk(out, m, n, dtype, params)
        except Exception as exc:  # a failing variant is a record, not the end of the campaign
            emit(failed_record(exc, params={**p, "runs": 0}, **kw))
            continue
        del out
        rec = make_result(phases=phases, verified=ok, error=err, params={
            **p, "runs": len(phases["kernel"]["samples"]), "held": held, "checked_rows": k}, **kw)
        rec["rel_error"] = rel
        emit(rec)


# --- per-series mean (report §4) ------------------------------------------------------------

def _acc(variant: str, provider: str, dtype: np.dtype) -> np.dtype:
    """The accumulator of a target: the input type for the K2 seeds and the comparators,
    float64 for warplab's own variants."""
    if provider != "warplab" or variant.startswith("k2_"):
        return dtype
    return np.dtype(np.float64)


def mean_targets(names: Sequence[str] | None, problem: AxisProblem, backend: str,
                 with_comparators: bool) -> tuple[list[Any], list[str]]:
    """The reduce_axis variants of ``backend`` supporting ``problem`` (``names``: only those),
    then the usable comparators; plus skip notes."""
    vs = [v for v in registry.variants("reduce_axis", backend) if v.supports(problem)
          and (names is None or v.name in names)]
    skipped = [x for x in names or [] if x not in {v.name for v in vs}]
    notes = [f"reduce_axis variant(s) {', '.join(skipped)} skipped: no support for "
             f"{problem.op}(axis=1) of {problem.rows} x {problem.cols} {problem.dtype}"
             ] if skipped else []
    if not with_comparators:
        return vs, notes
    if backend != "cuda":
        return vs + list(NUMPY_PROVIDERS), notes + [cpu_note(
            "CuPy, torch, cuda.compute", f"np.{problem.op}(x, axis=1) (float32 pairwise)")]
    provs, more = available(SERIES_PROVIDERS)
    return vs + provs, notes + more


def measure_means(x: Any, x_host: np.ndarray, op: str, targets: Sequence[Any], backend: str,
                  settings: Settings, ceilings: dict, emit: Callable[[dict], None],
                  calls: bool) -> None:
    """One ``reduce_axis`` record per target on ``x`` (device or host), then (``calls``) the
    public call and the CuPy / torch calls back to back."""
    m, n = x_host.shape
    dt = np.dtype(x_host.dtype)
    problem = AxisProblem(m, n, "rows", op, dt, backend == "cuda")
    ref = np.add.reduce(x_host, axis=1, dtype=np.float64)
    if op == "mean":
        ref = ref / n
    read = ceilings.get("read_gbps")
    same = read_bandwidth(backend, nbytes=x_host.nbytes)["read_gbps"] if (
        x_host.nbytes >= SAME_BYTES_MIN) else None
    out_dt = dt  # float sums and means keep the input type

    def record(name: str, provider: str, phases: dict, got: Any, extra: dict) -> dict:
        acc = _acc(name, provider, dt)
        tol = sum_tolerance(n, out_dt, acc)
        rel = max_rel(to_host(got), ref)
        ok, err = verdict(rel, tol)
        rec = make_result(family="reduce_axis", variant=name, provider=provider, backend=backend,
                          params=shape_params(m, n, dt.name, op=op, layout="rows",
                                              data="random_walk", acc=acc.name,
                                              warmup=settings.warmup, **extra),
                          phases=phases, bytes_moved=axis_bytes_moved(problem),
                          ceilings=ceilings, verified=ok, error=err)
        rec.update(rel_error=rel, tolerance=tol, pct_of_read_bw=(
            100.0 * rec["gbps"] / read if rec["gbps"] and read else None),
            read_gbps_same_bytes=same, pct_of_read_same_bytes=(
                100.0 * rec["gbps"] / same if rec["gbps"] and same else None))
        return rec

    for t in targets:
        if isinstance(t, Provider):
            name, provider = t.name.format(op=op), t.library
            call = (lambda t=t: t.run(x, op))
        else:
            name, provider = t.name, "warplab"
            call = (lambda t=t: reduce_axis(x, op, axis=1, variant=t.name))
        p = {"mode": "kernel"}
        try:
            phases, held, got = timed(call, backend, settings)
        except Exception as exc:
            emit(failed_record(exc, family="reduce_axis", variant=name, provider=provider,
                         backend=backend, params=shape_params(m, n, dt.name, op=op, runs=0, **p),
                         bytes_moved=axis_bytes_moved(problem), ceilings=ceilings))
            continue
        emit(record(name, provider, phases, got, {
            **p, "runs": len(phases["kernel"]["samples"]), "held": held}))
    if calls and backend == "cuda":
        for name, provider, call in public_calls(x, op, targets):
            samples, got = back_to_back(call, CALLS, max(settings.runs, 5), settings.warmup)
            emit(record(name, provider, {"kernel": summarize(samples)}, got,
                        {"mode": "calls", "calls": CALLS, "runs": len(samples)}))


def public_calls(x: Any, op: str, targets: Sequence[Any]) -> list[tuple[str, str, Callable]]:
    """(name, provider, call) of what users call: ``warplab.<op>(x, axis=1)`` (named after the
    variant it dispatches to) and the CuPy and torch comparators among ``targets``."""
    from warplab.families.reduce import api

    with registry.record_variants() as ran:
        getattr(api, op)(x, axis=1)
    default = ran[-1].variant if ran else "default"
    out = [(default, "warplab", lambda: getattr(api, op)(x, axis=1))]
    out += [(t.name.format(op=op), t.library, lambda t=t: t.run(x, op)) for t in targets
            if isinstance(t, Provider) and t.library in ("cupy", "torch")]
    return out


def back_to_back(call: Callable[[], Any], calls: int, batches: int, warmup: int
                 ) -> tuple[list[float], Any]:
    """Per-call ms of ``calls`` calls between two CUDA events, once per batch; the last
    result."""
    import cupy

    out = None
    for _ in range(max(1, warmup)):
        out = call()
    samples = []
    for _ in range(batches):
        a, b = cupy.cuda.Event(), cupy.cuda.Event()
        a.record()
        for _ in range(calls):
            out = call()
        b.record()
        b.synchronize()
        samples.append(cupy.cuda.get_elapsed_time(a, b) / calls)
    return samples, out



# --- the campaign -----------------------------------------------------------------------------

def split_names(names: Sequence[str] | None, backend: str
                ) -> tuple[list[str] | None, list[str] | None]:
    """``--variant`` names split into (random_walk, reduce_axis) names of ``backend`` (None:
    all); ``ValueError`` for names of neither family or of the other backend."""
    if not names:
        return None, None
    walk = {v.name: v for v in registry.variants("random_walk")}
    axis = {v.name: v for v in registry.variants("reduce_axis")}
    unknown = [n for n in names if n not in walk and n not in axis]
    if unknown:
        raise InvalidValueError(f"unknown series variant(s) {', '.join(unknown)}; valid: "
                         f"{', '.join([*walk, *axis])}")
    wrong = [n for n in names if (walk.get(n) or axis[n]).backend != backend]
    if wrong:
        valid = [v for v, x in {**walk, **axis}.items() if x.backend == backend]
        raise InvalidValueError(f"variant(s) {', '.join(wrong)} do not run on the {backend} backend "
                         f"(valid on {backend}: {', '.join(valid)})")
    return [n for n in names if n in walk], [n for n in names if n in axis]


def _check_shape(m: Any, n: Any) -> Shape:
    for name, v in (("m", m), ("n", n)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise InvalidValueError(f"{name} must be an int >= 1 (series and values per series), "
                             f"got {v!r}")
    return int(m), int(n)


def _cap(shapes: Sequence[Shape], backend: str, itemsize: int, explicit: bool,
         notes: list[str]) -> list[Shape]:
    """Campaign shapes the backend can take: cpu stops at ``CPU_MAX_ELEMENTS`` (asked-for
    shapes do not), cuda where the data and its temporaries (4x) do not fit."""
    kept = []
    for m, n in shapes:
        if backend == "cpu" and not explicit and m * n > CPU_MAX_ELEMENTS:
            notes.append(f"cpu backend: {m} x {n} skipped (campaign shapes stop at "
                         f"{CPU_MAX_ELEMENTS} values)")
        elif not fits_device(4 * m * n * itemsize, backend):
            notes.append(f"{m} x {n} skipped: does not fit the device memory")
        else:
            kept.append((m, n))
    return kept


def run_series(*, campaign: str = "quick", backend: str, json_path: Path | None = None,
               shapes: Sequence[Shape] | None = None, dtype: str = "float32", op: str = "mean",
               parts: Sequence[str] = PARTS, variant_names: Sequence[str] | None = None,
               with_comparators: bool = True, settings: Settings | None = None,
               progress: Callable[[int, int, dict], None] | None = None) -> dict:
    """Run the series campaign (or, with ``shapes``, the generation and mean tables of those
    shapes); write ``json_path`` if given; return the results document."""
    c = campaign_for(campaign, backend)
    if dtype not in ("float32", "float64"):
        raise InvalidValueError(f"series data are float32 or float64, not {dtype!r}")
    if op not in ("sum", "mean"):
        raise InvalidValueError(f"the K2 table reduces with sum or mean, not {op!r}")
    bad = [p for p in parts if p not in PARTS]
    if bad:
        raise InvalidValueError(f"unknown series part(s) {', '.join(bad)}; valid: {', '.join(PARTS)}")
    explicit = shapes is not None
    shapes = [_check_shape(m, n) for m, n in shapes] if explicit else None
    settings = settings or Settings(runs=c.runs, warmup=c.warmup)
    walk_names, axis_names = split_names(variant_names, backend)
    notes: list[str] = []
    if "mean" in parts:
        notes.append("per-row table: verified when the largest relative error over the series "
                     "is at most max(1e-5 float32 / 1e-12 float64, 4 N u), u the unit roundoff "
                     "of the accumulator (2^-24 for the seed kernels and comparators on float32 "
                     "data)")
    if backend == "cpu" and "mean" in parts:
        notes.append("cpu backend: the seed kernels and the public-call timing need the GPU")
    if backend == "cpu" and "accuracy" in parts:
        notes.append("cpu backend: no K2 is emulated; the accuracy table compares warplab's "
                     "numpy variant (float64 accumulation) with NumPy's float32 pairwise sums")
    ceilings = measure_all(backend)
    records: list[dict] = []

    def emit(rec: dict) -> None:
        records.append(rec)
        if progress:
            progress(len(records), 0, rec)

    itemsize = np.dtype(dtype).itemsize
    if "generation" in parts:
        names = walk_names if walk_names is not None else [
            v.name for v in registry.variants("random_walk", backend)]
        for m, n in _cap(shapes or c.generation, backend, itemsize, explicit, notes):
            measure_generation(m, n, dtype, names, backend, settings, ceilings, emit)
            release_memory(backend)
    if "mean" in parts:
        for m, n in _cap(shapes or c.means, backend, itemsize, explicit, notes):
            problem = AxisProblem(m, n, "rows", op, np.dtype(dtype), backend == "cuda")
            tgts, more = mean_targets(axis_names, problem, backend, with_comparators)
            notes += [x for x in more if x not in notes]
            x, host = walk_data(m, n, dtype, backend)
            measure_means(x, host, op, tgts, backend, settings, ceilings, emit,
                          calls=axis_names is None)
            del x, host
            release_memory(backend)
    if "accuracy" in parts:
        measure_accuracy(c.accuracy, backend, settings, ceilings, emit, notes)
    if "baseline" in parts:
        measure_baseline(*c.baseline, c.sample_pairs, settings, ceilings, emit)
    return finish_campaign(backend, ceilings, notes, campaign, records, json_path)


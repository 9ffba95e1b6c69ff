"""Measure the matmul variants and the cuBLAS comparator: GFLOP/s and the flop-to-word analysis.

Per run (cuda): H2D copies of A and B, the product (held behind a blocking kernel), D2H copy of
C, timed with CUDA events; on the cpu backend the product alone, host-timed (warplab's NumPy
variant, and NumPy's own ``np.matmul`` as the comparator there). The output is
poisoned with NaN before each target, and the C of the last run is compared with a float64
NumPy product: relative Frobenius error ``||C - C_ref|| / ||C_ref||`` below 1e-5 (float32) or
1e-12 (float64), recorded as ``rel_error``. Products above ``REFERENCE_BUDGET`` multiply-adds
are checked on a fixed random sample of rows (``params.checked_rows``) plus a NaN/inf scan of C.

Every record carries, besides the schema's keys: ``flops`` (per call, ``2 m n k``), ``gflops``
(achieved, from the kernel median), ``dims`` ``[m, n, k]``, the variant's arithmetic intensity
``intensity`` (flops over its cost model's bytes), ``bound_gflops`` = min(compute ceiling,
intensity x measured copy bandwidth), ``bound_by`` (``"memory"`` or ``"compute"``),
``pct_of_bound``, ``pct_of_ceiling`` (of the compute ceiling, whose ``meta.ceilings`` key is
``compute_ceiling``) and, where the cublas comparator ran on the same config, ``pct_of_cublas``.
The compute ceiling is the measured cuBLAS rate in ``meta.ceilings`` (``sgemm_gflops`` /
``dgemm_gflops``) when present, else the datasheet peak there, else the bound is memory's alone.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from warplab.families.matmul.spec import MatmulProblem, compulsory_bytes, intensity, matmul_flops
from warplab.lab.harness.ceilings import measure_all
from warplab.lab.harness.comparators import Provider, campaign_targets, cpu_note
from warplab.lab.harness.measure import TOLERANCE, Settings, time_device_runs
from warplab.lab.harness.results import make_result
from warplab.lab.harness.stats import summarize
from warplab.lab.harness.campaign import finish_campaign
from warplab.lab.campaigns.matmul.comparators import MATMUL_PROVIDERS, NUMPY_PROVIDERS
from warplab.lab.harness.timing import time_runs
from warplab.core.errors import InvalidTypeError, InvalidValueError

GEMM_CEILING = {np.dtype(np.float32): ("sgemm_gflops", "datasheet_fp32_gflops"),
                np.dtype(np.float64): ("dgemm_gflops", "datasheet_fp64_gflops")}


@dataclass(frozen=True)
class MatmulCampaign:
    configs: tuple[tuple[int, int, int, str], ...]   # (m, n, k, dtype)
    runs: int
    warmup: int


def square(sizes: tuple[int, ...], dtype: str) -> tuple[tuple[int, int, int, str], ...]:
    """``(n, n, n, dtype)`` per size."""
    return tuple((n, n, n, dtype) for n in sizes)


MATMUL_CAMPAIGNS = {
    "quick": MatmulCampaign(square((128, 256, 512, 1024), "float32"), runs=10, warmup=2),
    "full": MatmulCampaign(square((128, 256, 512, 1000, 1024, 2048, 4096, 4097, 8192), "float32")
                           + square((1024, 4096), "float64"), runs=20, warmup=3),
    # the closing table: N = 1024, 4096, 8192 (naive at 8192 takes about a second per call:
    # the time budget per record, Settings.max_seconds, cuts it to three runs)
    "table": MatmulCampaign(square((1024, 4096, 8192), "float32"), runs=20, warmup=3),
}
CPU_MATMUL_MAX = 1024  # the NumPy backend's campaigns stop here


def make_operands(m: int, n: int, k: int, dtype: str, seed: int = 1
                  ) -> tuple[np.ndarray, np.ndarray]:
    """A (m x k) and B (k x n), uniform in [-1, 1), the same for every target."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    a = rng.random((m, k), dtype=dt) * dt.type(2) - dt.type(1)
    b = rng.random((k, n), dtype=dt) * dt.type(2) - dt.type(1)
    return a, b


@dataclass(frozen=True)
class Reference:
    """float64 rows ``rows`` (None: all) of the product, on the host."""

    rows: np.ndarray | None
    values: np.ndarray

    def rel_error(self, c: np.ndarray) -> float:
        """``||c - ref||_F / ||ref||_F`` over the checked rows; NaN if any of ``c`` is not
        finite (an unwritten, poisoned element)."""
        if not np.isfinite(c).all():
            return float("nan")
        got = c if self.rows is None else c[self.rows]
        scale = float(np.linalg.norm(self.values))
        diff = float(np.linalg.norm(got.astype(np.float64) - self.values))
        return diff / scale if scale else diff


REFERENCE_BUDGET = 1 << 35  # multiply-adds of the host reference (a 512-row sample at N = 8192)


def reference(a: np.ndarray, b: np.ndarray, seed: int = 2) -> Reference:
    """The float64 product, or a fixed random sample of its rows for products larger than
    ``REFERENCE_BUDGET`` multiply-adds."""
    m, k = a.shape
    n = b.shape[1]
    keep = max(1, REFERENCE_BUDGET // max(1, n * k))
    rows = None if keep >= m else np.sort(np.random.default_rng(seed).choice(m, keep, False))
    sub = a if rows is None else a[rows]
    return Reference(rows, sub.astype(np.float64) @ b.astype(np.float64))


def compute_ceiling(ceilings: dict, dtype: Any) -> tuple[float | None, str | None]:
    """(GFLOP/s, ceilings key): the measured cuBLAS rate, else the datasheet peak, else None."""
    for key in GEMM_CEILING[np.dtype(dtype)]:
        if ceilings.get(key):
            return float(ceilings[key]), key
    return None, None


def add_flop_analysis(rec: dict, p: MatmulProblem, ceilings: dict) -> dict:
    """The lecture's flop-to-word analysis of one record (keys in the module docstring)."""
    flops = matmul_flops(p)
    kernel = rec["phases"].get("kernel")
    gflops = flops / (kernel["median"] * 1e-3) / 1e9 if (
        rec["verified"] and kernel and kernel["median"] > 0) else None
    ai = intensity(p, rec["bytes_moved"])
    peak, peak_key = compute_ceiling(ceilings, p.dtype)
    bw = ceilings.get("copy_gbps")
    memory_bound = ai * bw if ai and bw else None
    bound, by = peak, "compute"
    if memory_bound is not None and (peak is None or memory_bound < peak):
        bound, by = memory_bound, "memory"
    rec.update(flops=flops, gflops=gflops, dims=[p.m, p.n, p.k], intensity=ai,
               bound_gflops=bound, bound_by=by if bound else None, compute_ceiling=peak_key,
               pct_of_ceiling=100.0 * gflops / peak if gflops and peak else None,
               pct_of_bound=100.0 * gflops / bound if gflops and bound else None)
    return rec


def _params(p: MatmulProblem, s: Settings, runs: int, backend: str, **extra: Any) -> dict:
    square_ = p.m == p.n == p.k
    return {"size": p.n if square_ else p.m, "shape": "square" if square_ else
            f"{p.m}x{p.n}x{p.k}", "dtype": np.dtype(p.dtype).name, "mode": "kernel",
            "pinned": bool(s.pinned and backend == "cuda"), "runs": runs, "warmup": s.warmup,
            **extra}


def _target(t: Any) -> tuple[Callable[[Any, Any, Any], Any], str, str, Callable[..., int]]:
    """(call(a, b, c), name, provider, cost model) of a variant or a comparator."""
    if isinstance(t, Provider):
        return t.run, t.name, t.library, compulsory_bytes
    return t.fn, t.name, "warplab", t.bytes_moved


def _record(p: MatmulProblem, backend: str, name: str, provider: str, cost: Callable[..., int],
            samples: dict | None, got: np.ndarray | None, ref: Reference, settings: Settings,
            ceilings: dict, error: str | None = None, **extra: Any) -> dict:
    rel = ref.rel_error(got) if got is not None else None
    if ref.rows is not None:
        extra["checked_rows"] = int(ref.rows.size)
    tol = TOLERANCE[np.dtype(p.dtype)]
    if rel is not None and np.isnan(rel):
        rel, error = None, error or "C has NaN or inf elements (unwritten or overflowed)"
    if error is None and not (rel is not None and rel <= tol):
        error = f"relative error {rel:.3g} above {tol:g}"
    phases = {k: summarize(v) for k, v in (samples or {}).items()}
    runs = len(samples["total"]) if samples else 0
    rec = make_result(family="matmul", variant=name, provider=provider, backend=backend,
                      params=_params(p, settings, runs, backend, **extra), phases=phases,
                      bytes_moved=cost(p), ceilings=ceilings, verified=error is None,
                      error=error)
    rec["rel_error"] = rel
    return add_flop_analysis(rec, p, ceilings)


class DeviceOperands:
    """Device buffers (and pinned host copies if asked) of one config, shared by its targets."""

    def __init__(self, h_a: np.ndarray, h_b: np.ndarray, settings: Settings) -> None:
        import cupy
        import cupyx

        host = cupyx.empty_pinned if settings.pinned else np.empty
        self.h_a, self.h_b = host(h_a.shape, h_a.dtype), host(h_b.shape, h_b.dtype)
        self.h_a[...], self.h_b[...] = h_a, h_b
        self.h_c = host((h_a.shape[0], h_b.shape[1]), h_a.dtype)
        self.d_a, self.d_b = cupy.asarray(h_a), cupy.asarray(h_b)
        self.d_c = cupy.empty(self.h_c.shape, h_a.dtype)


def measure_cuda(ops: DeviceOperands, ref: Reference, target: Any, settings: Settings,
                 ceilings: dict) -> dict:
    """One record of a cuda variant or comparator on the config held by ``ops``."""
    import cupy

    call, name, provider, cost = _target(target)
    (m, k), n = ops.h_a.shape, ops.h_b.shape[1]
    p = MatmulProblem(m, n, k, ops.h_a.dtype, False)

    def run(rec: Any, held: bool) -> None:
        with rec.phase("h2d"):
            ops.d_a.set(ops.h_a)
            ops.d_b.set(ops.h_b)
        with rec.phase("kernel", hold=held):
            call(ops.d_a, ops.d_b, ops.d_c)
        with rec.phase("d2h"):
            ops.d_c.get(out=ops.h_c)

    try:
        ops.d_c.fill(np.nan)  # poison: an element no run writes fails the check
        call(ops.d_a, ops.d_b, ops.d_c)  # compile outside any held phase
        cupy.cuda.get_current_stream().synchronize()
        samples, held = time_device_runs(run, settings)
    except Exception as exc:  # a failing target is a record with an error, not a crash
        return _record(p, "cuda", name, provider, cost, None, None, ref, settings, ceilings,
                       error=f"{type(exc).__name__}: {exc}")
    return _record(p, "cuda", name, provider, cost, samples, ops.h_c, ref, settings, ceilings,
                   held=held)


def measure_cpu(h_a: np.ndarray, h_b: np.ndarray, ref: Reference, target: Any,
                settings: Settings, ceilings: dict) -> dict:
    """The NumPy variant or NumPy's own call, host-timed (one phase: ``kernel``)."""
    call, name, provider, cost = _target(target)
    (m, k), n = h_a.shape, h_b.shape[1]
    p = MatmulProblem(m, n, k, h_a.dtype, False)
    h_c = np.full((m, n), np.nan, dtype=h_a.dtype)

    def run(rec: Any) -> None:
        with rec.phase("kernel"):
            call(h_a, h_b, h_c)

    samples = time_runs(run, warmup=settings.warmup, runs=settings.runs, cuda=False,
                        max_seconds=settings.max_seconds)
    return _record(p, "cpu", name, provider, cost, samples, h_c, ref, settings, ceilings)


def add_pct_of_cublas(records: list[dict]) -> None:
    """``pct_of_cublas`` on every record of one config, where cublas has a rate there."""
    base = next((r["gflops"] for r in records if r["variant"] == "cublas" and r["gflops"]), None)
    for r in records:
        r["pct_of_cublas"] = 100.0 * r["gflops"] / base if base and r["gflops"] else None


def targets(backend: str, variant_names: list[str] | None, with_comparators: bool
            ) -> tuple[list[Any], list[str]]:
    """Variants (named, or all of the backend) and the usable comparators, plus notes."""
    tgts, notes = campaign_targets("matmul", backend, MATMUL_PROVIDERS, variant_names,
                                   with_comparators, cpu_providers=NUMPY_PROVIDERS)
    if backend != "cuda":
        return tgts, [cpu_note("cublas", "np.matmul")] if with_comparators else []
    if any(isinstance(t, Provider) for t in tgts):
        notes.append("cublas: cupy.matmul -> cuBLAS SGEMM/DGEMM in full FP32/FP64 arithmetic "
                     "(CuPy's TF32 mode, CUPY_TF32=1, is off; checked before the run)")
    return tgts, notes


def run_matmul(*, campaign: str = "quick", backend: str, json_path: Path | None,
               configs: list[tuple[int, int, int, str]] | None = None,
               variant_names: list[str] | None = None, with_comparators: bool = True,
               settings: Settings | None = None,
               progress: Callable[[int, int, dict], None] | None = None) -> dict:
    """Run a matmul campaign (or explicit ``(m, n, k, dtype)`` configs); write ``json_path``
    if given and return the results document."""
    c = MATMUL_CAMPAIGNS[campaign]
    settings = settings or Settings(runs=c.runs, warmup=c.warmup)
    tgts, notes = targets(backend, variant_names, with_comparators)
    configs = list(configs or c.configs)
    for m, n, k, dtype in configs:
        if min(m, n, k) < 1:
            raise InvalidValueError(f"matmul sizes must be >= 1, got m={m} n={n} k={k}")
        if np.dtype(dtype) not in TOLERANCE:
            raise InvalidTypeError(f"matmul supports float32 and float64, got dtype {dtype}")
    if backend == "cpu" and configs == list(c.configs):
        configs = [cfg for cfg in configs if max(cfg[:3]) <= CPU_MATMUL_MAX]
        notes.append(f"cpu backend: campaign sizes capped at {CPU_MATMUL_MAX}")
    ceilings = measure_all(backend)
    records: list[dict] = []

    def runnable_on(p: MatmulProblem) -> list:
        return [t for t in tgts if isinstance(t, Provider) or t.supports(p)]

    total = sum(len(runnable_on(MatmulProblem(m, n, k, np.dtype(dt), False)))
                for m, n, k, dt in configs)
    for m, n, k, dtype in configs:
        h_a, h_b = make_operands(m, n, k, dtype)
        ref = reference(h_a, h_b)
        p = MatmulProblem(m, n, k, np.dtype(dtype), False)
        runnable = runnable_on(p)
        notes += [f"{t.name} skipped on {p}: not supported" for t in tgts if t not in runnable]
        ops = DeviceOperands(h_a, h_b, settings) if backend == "cuda" else None
        config_records = []
        for t in runnable:
            rec = (measure_cuda(ops, ref, t, settings, ceilings) if ops is not None
                   else measure_cpu(h_a, h_b, ref, t, settings, ceilings))
            config_records.append(rec)
            records.append(rec)
            if progress:
                progress(len(records), total, rec)
        add_pct_of_cublas(config_records)
        del ops
    return finish_campaign(backend, ceilings, notes, campaign, records, json_path)

"""The Pearson report's accuracy table (its section 4.7: float and double sums against a
double-precision reference) and its sequential baseline (section 1.2.1: the five steps in NumPy
on the host). Record families ``series_accuracy`` and ``series_baseline``; their keys are
documented in ``bench.py``."""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Sequence

import numpy as np

from warplab.lab.harness.measure import Settings
from warplab.lab.harness.results import make_result
from warplab.lab.harness.stats import summarize
from warplab.lab.harness.timing import time_runs
from warplab.core import registry
from warplab.core.arrays import to_host
from warplab.families.reduce.axis import reduce_axis
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
from warplab.families.series.walk import random_walk
from warplab.core.errors import InvalidValueError

# The report's float-vs-double table (§4.7): (M, N, eps); its double half repeats 2048 x 2048.
FLOAT_HALF = ((2048, 2048, 1e-1), (2048, 2048, 1e-2), (2048, 2048, 1e-3), (2048, 1024, 1e-3),
              (2048, 512, 1e-3), (2048, 256, 1e-3), (2048, 128, 1e-3), (2048, 64, 1e-3),
              (2048, 32, 1e-3), (4096, 32, 1e-3))
DOUBLE_HALF = tuple((2048, n, 1e-3) for n in (2048, 4096, 8192, 16384, 32768, 65536)) + (
    (4096, 65536, 1e-3), (8192, 65536, 1e-3), (16384, 65536, 1e-3), (16384, 65536, 1e-6))
ACCURACY_TABLE = tuple(dict.fromkeys(FLOAT_HALF + DOUBLE_HALF))
# (label, variant or None for the default dispatch, data dtype, dtype= of the call, accumulator)
CUDA_CASES = (("float32 K2", "k2_shared_unrolled", "float32", None, "float32"),
              ("float64 K2", "k2_shared_unrolled", "float64", None, "float64"),
              ("default", None, "float32", None, "float64"),
              ("default dtype=float64", None, "float32", "float64", "float64"))
CPU_CASES = (("default", "numpy", "float32", None, "float64"),
             ("default dtype=float64", "numpy", "float32", "float64", "float64"),
             ("numpy float32", "np.sum", "float32", None, "float32"))

# --- accuracy of the sums (report §4.7) -----------------------------------------------------

def _case_call(case: tuple, x32: Any, x64: Any) -> Callable[[], Any]:
    """The sums of one accuracy case (see ``CUDA_CASES`` / ``CPU_CASES``)."""
    _, variant, data, dtype_arg, _ = case
    x = x64 if data == "float64" else x32
    if variant == "np.sum":
        return lambda: np.sum(x, axis=1)
    return lambda: reduce_axis(x, "sum", axis=1, dtype=dtype_arg, variant=variant)


def measure_accuracy(rows: Sequence[tuple[int, int, float]], backend: str, settings: Settings,
                     ceilings: dict, emit: Callable[[dict], None], notes: list[str]) -> None:
    """``series_accuracy`` records: per shape of ``rows`` every case once (timed), then per eps
    of that shape one record per case."""
    cases = CUDA_CASES if backend == "cuda" else CPU_CASES
    by_shape: dict[Shape, list[float]] = {}
    for m, n, tol in rows:
        by_shape.setdefault((m, n), []).append(tol)
    for (m, n), tols in by_shape.items():
        if not fits_device(m * n * 20, backend):  # float32 + float64 data + dtype=float64 copy
            notes.append(f"accuracy {m} x {n} skipped: needs {m * n * 20 / 2**30:.1f} GiB on "
                         f"the {backend} device")
            continue
        x32, host = walk_data(m, n, "float32", backend)
        x64 = x32.astype(np.float64) if any(c[2] == "float64" for c in cases) else None
        ref = np.add.reduce(host, axis=1, dtype=np.float64)
        del host
        bound32 = np.abs(ref.astype(np.float32).astype(np.float64) - ref)
        for case in cases:
            label, variant, data, dtype_arg, acc = case
            out_dt = np.dtype(dtype_arg or data)
            kw = dict(family="series_accuracy", provider="numpy" if variant == "np.sum"
                      else "warplab", backend=backend, ceilings=ceilings,
                      bytes_moved=m * n * np.dtype(data).itemsize + m * out_dt.itemsize)
            try:
                with registry.record_variants() as ran:
                    phases, held, got = timed(_case_call(case, x32, x64), backend,
                                              replace(settings, runs=min(settings.runs, 10)))
            except Exception as exc:
                for tol in tols:
                    emit(failed_record(exc, variant=variant or "default", params=shape_params(
                        m, n, data, tol=tol, case=label, runs=0), **kw))
                continue
            name = ran[-1].variant if ran else str(variant)
            got = to_host(got).astype(np.float64)
            diff = np.abs(got - ref)
            rel = max_rel(got, ref)
            tolerance = sum_tolerance(n, out_dt, acc)
            ok, err = verdict(rel, tolerance)
            for tol in tols:
                within = int(np.count_nonzero(diff <= tol))
                rec = make_result(variant=name, verified=ok, error=err, phases=phases, params=
                                  shape_params(m, n, data, tol=tol, case=label, acc=acc,
                                               result=out_dt.name, walk_eps=WALK_EPS, seed=SEED,
                                               op="sum", mode="kernel", held=held,
                                               runs=len(phases["kernel"]["samples"]),
                                               warmup=settings.warmup), **kw)
                rec.update(rel_error=rel, tolerance=tolerance, accuracy=within / m,
                           within=within, series=m, max_abs_error=float(np.max(diff)))
                if out_dt == np.float32:
                    rec["rounding_bound"] = float(np.mean(bound32 <= tol))
                emit(rec)
        del x32, x64
        release_memory(backend)



# --- the sequential baseline (report §1.2.1) ------------------------------------------------

def _pairs(m: int, k: int, seed: int = 11) -> tuple[np.ndarray, np.ndarray]:
    """``k`` random pairs i < j of ``m`` series (fixed seed)."""
    rng = np.random.default_rng(seed)
    i = rng.integers(0, m, k)
    j = (i + 1 + rng.integers(0, m - 1, k)) % m  # j != i
    return np.minimum(i, j), np.maximum(i, j)


def measure_baseline(m: int, n: int, sample_pairs: int, settings: Settings, ceilings: dict,
                     emit: Callable[[dict], None]) -> None:
    """The sequential program's five steps in NumPy on the host (``series_baseline``)."""
    if m < 2:
        raise InvalidValueError(f"the baseline needs at least 2 series, got m={m}")
    pairs = m * (m - 1) // 2
    k = min(sample_pairs, pairs)
    pi, pj = _pairs(m, k)
    st = replace(settings, warmup=min(settings.warmup, 1))
    state: dict[str, Any] = {}
    it = 4  # bytes per float32 value

    def gen() -> Any:
        state["x"] = random_walk(m, n, start=START, eps=WALK_EPS, seed=SEED, device="cpu")
        return state["x"]

    def mean() -> Any:
        state["mu"] = np.mean(state["x"], axis=1)
        return state["mu"]

    def norm() -> Any:
        d = state["x"] - state["mu"][:, None]
        state["d"], state["norm"] = d, np.sqrt(np.einsum("ij,ij->i", d, d))
        return state["norm"]

    def numerator() -> Any:
        d = state["d"]
        state["num"] = np.array([np.dot(d[a], d[b]) for a, b in zip(pi.tolist(), pj.tolist())])
        return state["num"]

    def coefficient() -> Any:
        nm, num = state["norm"].tolist(), state["num"].tolist()
        state["coef"] = np.array([c / (nm[a] * nm[b])
                                  for c, a, b in zip(num, pi.tolist(), pj.tolist())])
        return state["coef"]

    steps = (("generation", gen, m * n * it, False), ("mean", mean, m * n * it, False),
             ("norm", norm, m * n * it, False), ("numerator", numerator, 2 * n * it, True),
             ("coefficient", coefficient, 3 * it, True))
    for step, fn, nbytes, pairwise in steps:
        scale = pairs / k if pairwise else 1.0
        p = shape_params(m, n, "float32", step=step, extrapolated=pairwise,
                         sample_pairs=k if pairwise else None, pairs=pairs if pairwise else None,
                         warmup=st.warmup)
        kw = dict(family="series_baseline", variant="numpy_sequential", provider="numpy",
                  backend="cpu", bytes_moved=int(nbytes * (pairs if pairwise else 1)),
                  ceilings=ceilings)
        try:
            raw = time_runs(lambda rec, fn=fn: _host_phase(rec, fn), warmup=st.warmup,
                            runs=st.runs, cuda=False, max_seconds=st.max_seconds)
            ok, rel, err = _check_step(step, state, pi, pj)
        except Exception as exc:
            emit(failed_record(exc, params={**p, "runs": 0}, **kw))
            return
        phases = {ph: summarize([v * scale for v in vals]) for ph, vals in raw.items()}
        rec = make_result(phases=phases, verified=ok, error=err,
                          params={**p, "runs": len(raw["kernel"])}, **kw)
        rec["rel_error"] = rel
        emit(rec)


def _host_phase(rec: Any, fn: Callable[[], Any]) -> None:
    with rec.phase("kernel"):
        fn()


def _check_step(step: str, s: dict, pi: np.ndarray, pj: np.ndarray
                ) -> tuple[bool, float | None, str | None]:
    """Each step against float64 NumPy: means and norms relative, dot products relative to
    ``norm_i norm_j`` (a numerator can be near 0), all within ``sum_tolerance``."""
    x = s["x"]
    n = x.shape[1]
    if step == "generation":
        ok = bool(np.isfinite(x).all() and (x > 0).all())
        return ok, None, None if ok else "non-finite or non-positive values generated"
    x64 = x.astype(np.float64)
    mu = x64.mean(axis=1)
    tol = sum_tolerance(n, np.float32, np.float32)
    if step == "mean":
        rel = max_rel(s["mu"], mu)
    elif step == "norm":
        d = x64 - mu[:, None]
        rel = max_rel(s["norm"], np.sqrt(np.einsum("ij,ij->i", d, d)))
    else:  # pair steps on the coefficient's scale: |got - ref| / (norm_i norm_j)
        d = x64 - mu[:, None]
        nrm = np.sqrt(np.einsum("ij,ij->i", d, d))
        den = np.maximum(nrm[pi] * nrm[pj], np.finfo(np.float64).tiny)
        ref = np.einsum("ij,ij->i", d[pi], d[pj]) / den
        got = s["num"] / den if step == "numerator" else s["coef"]
        rel = float(np.max(np.abs(np.asarray(got, np.float64) - ref))) if len(ref) else 0.0
    ok, err = verdict(rel, tol)
    return ok, rel, err



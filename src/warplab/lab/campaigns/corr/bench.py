"""The corr campaign: ``corrcoef`` per variant x precision next to the comparators, and a
``corr_pairs`` run, each record with its time, effective TFLOP/s, % of the measured GEMM
ceiling and its max abs error against a float64 reference in the same row.

Timing: the public call on device input (random-walk series from ``random_walk``, float32),
between two CUDA events per run (the call synchronises once inside, so it is not held behind a
blocking kernel); the cpu backend times NumPy with the host clock (warplab's NumPy variant,
and NumPy's own ``np.corrcoef`` as the comparator there). Flops: ``M (M + 1) / 2 * N``
multiply-adds, 2 flops each, for every variant and comparator (``spec.corr_flops``). Ceiling:
``dgemm_gflops`` for ``precision="float64"`` (and the float64 comparators), ``sgemm_gflops``
otherwise (TF32 may pass 100% of it). Reference: float64 rows centred and normalised, their
float64 product (cuBLAS DGEMM on the GPU, NumPy on the host), clipped, diagonal 1. A record is
verified when its max abs error is within the stated bound (``spec.error_bound``).

Records: family ``"corrcoef"`` (params ``m, n, dtype, precision, variant, data``) or
``"corr_pairs"`` (plus ``threshold``, ``pairs_found``, ``checked_tiles``, ``checked_pairs``),
with ``flops``, ``tflops``, ``ceiling_key``, ``pct_of_ceiling``, ``max_abs_error``,
``error_bound`` and ``x_cupy`` (cupy.corrcoef's time over the record's, same config).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from warplab.lab.harness.campaign import finish_campaign
from warplab.lab.harness.ceilings import measure_all
from warplab.lab.harness.comparators import Provider, available, cpu_note
from warplab.lab.harness.measure import Settings
from warplab.lab.harness.results import make_result
from warplab.lab.harness.stats import summarize
from warplab.lab.harness.timing import time_runs
from warplab.core import registry as _registry
from warplab.families.series.api import random_walk
from warplab.families.corr.api import corrcoef
from warplab.lab.campaigns.corr.comparators import (
    CEILING, CORR_PROVIDERS, NUMPY_PROVIDERS, UPPER_ONLY, Precentred,
)
from warplab.families.corr.pairs import corr_pairs
from warplab.families.corr.spec import PRECISIONS, CorrProblem, corr_flops, error_bound, work_itemsize
from warplab.families.corr.tiles import free_device_bytes
from warplab.core.errors import InvalidValueError


@dataclass(frozen=True)
class CorrCampaign:
    shapes: tuple[tuple[int, int], ...]      # (M, N) of the corrcoef rows
    pairs: tuple[int, int, float] | None     # (M, N, threshold) of the corr_pairs row
    runs: int
    warmup: int


CORR_CAMPAIGNS = {
    "quick": CorrCampaign(((2048, 2048),), (20000, 256, 0.9), runs=10, warmup=2),
    "table": CorrCampaign(((8192, 8192),), (200000, 256, 0.9), runs=10, warmup=2),
    "full": CorrCampaign(((1024, 1024), (2048, 2048), (4096, 4096), (8192, 8192),
                          (8192, 1024), (1024, 8192)), (200000, 256, 0.9), runs=10, warmup=2),
}
#: the cpu backend's campaigns (NumPy): small shapes
CPU_SHAPES = ((256, 256),)
CPU_PAIRS = (2000, 64, 0.9)
#: pairwise_direct runs at a smaller M where the full M would take longer than this
DIRECT_BUDGET_S = 5.0
DIRECT_PROBE_M = 2048
#: corr_pairs data: series per cluster (a shared factor plus noise of this scale)
CLUSTER_SIZE = 200
CLUSTER_NOISE = 0.2
#: corr_pairs verification: random tiles of this side checked in float64
CHECK_TILES, CHECK_SIDE = 4, 2048


def _xp(backend: str) -> Any:
    return np if backend == "cpu" else __import__("cupy")


def normalised64(x: Any) -> Any:
    """float64 rows centred (two passes) and divided by their norm."""
    xp = np if isinstance(x, np.ndarray) else __import__("cupy")
    z = x.astype(np.float64)
    z -= z.mean(axis=1, keepdims=True)
    z /= xp.sqrt((z * z).sum(axis=1, keepdims=True))
    return z


def reference(x: Any) -> Any:
    """The float64 coefficients of the rows of ``x`` (clipped, diagonal 1)."""
    xp = np if isinstance(x, np.ndarray) else __import__("cupy")
    z = normalised64(x)
    r = z @ z.T
    xp.clip(r, -1, 1, out=r)
    xp.fill_diagonal(r, 1.0)
    return r


def max_abs_error(got: Any, ref: Any, upper_only: bool = False) -> float:
    """max |got - ref| (over the upper triangle if ``upper_only``); inf if ``got`` has NaN."""
    xp = np if isinstance(ref, np.ndarray) else __import__("cupy")
    d = xp.abs(xp.asarray(got).astype(np.float64) - ref)
    if upper_only:
        d = xp.triu(d)
    worst = float(xp.max(d))
    return math.inf if math.isnan(worst) else worst


def _ceiling(ceilings: dict, key: str) -> float | None:
    v = ceilings.get(key)
    return float(v) if v else None


def _record(family: str, name: str, provider: str, backend: str, params: dict,
            samples: dict | None, p: CorrProblem, nbytes: int, ceilings: dict, err: float | None,
            bound: float, failure: str | None = None, **extra: Any) -> dict:
    if failure is None and (err is None or not err <= bound):
        failure = f"max abs error {err:.3g} above the bound {bound:.3g}"
    phases = {k: summarize(v) for k, v in (samples or {}).items()}
    rec = make_result(family=family, variant=name, provider=provider, backend=backend,
                      params=params, phases=phases, bytes_moved=nbytes, ceilings=ceilings,
                      verified=failure is None, error=failure)
    flops = corr_flops(p)
    k = phases.get("kernel")
    tflops = flops / (k["median"] * 1e-3) / 1e12 if k and failure is None else None
    key = extra.pop("ceiling_key", "dgemm_gflops" if p.precision == "float64" else
                    "sgemm_gflops")
    peak = _ceiling(ceilings, key)
    rec.update(flops=flops, tflops=tflops, ceiling_key=key,
               pct_of_ceiling=100.0 * tflops * 1e3 / peak if tflops and peak else None,
               max_abs_error=None if err is None or math.isinf(err) else err,
               error_bound=bound, x_cupy=None, **extra)
    return rec


def _time(call: Callable[[], Any], backend: str, s: Settings) -> dict:
    def run(rec: Any) -> None:
        with rec.phase("kernel"):
            call()

    return time_runs(run, warmup=s.warmup, runs=s.runs, cuda=backend == "cuda",
                     max_seconds=s.max_seconds)


def _measure(call: Callable[[], Any], check: Callable[[Any], float], backend: str,
             s: Settings) -> tuple[dict | None, float | None, str | None]:
    """(samples, max abs error, failure) of one target; a raising target is a failure."""
    try:
        err = check(call())
        return _time(call, backend, s), err, None
    except Exception as exc:  # noqa: BLE001  (a failing target is a record, not a crash)
        return None, None, f"{type(exc).__name__}: {exc}"


def _params(m: int, n: int, precision: str, name: str, s: Settings, **extra: Any) -> dict:
    return {"size": m, "m": m, "n": n, "dtype": "float32", "precision": precision,
            "variant": name, "data": "random_walk", "mode": "call", "runs": s.runs,
            "warmup": s.warmup, **extra}


def _direct_rows(m: int, n: int, x: Any, s: Settings, notes: list[str]) -> int:
    """Rows pairwise_direct runs on: all M, or fewer where all would take > DIRECT_BUDGET_S
    (estimated from one call at DIRECT_PROBE_M rows, scaled by the pair count)."""
    if m <= DIRECT_PROBE_M:
        return m
    probe = x[:DIRECT_PROBE_M]
    corrcoef(probe, variant="pairwise_direct")  # compile
    t = min(_time(lambda: corrcoef(probe, variant="pairwise_direct"), "cuda",
                  Settings(runs=1, warmup=0, max_seconds=None))["kernel"]) * 1e-3
    est = t * (m / DIRECT_PROBE_M) ** 2
    if est <= DIRECT_BUDGET_S:
        return m
    rows = max(DIRECT_PROBE_M, int(DIRECT_PROBE_M * math.sqrt(DIRECT_BUDGET_S / t)) // 1024 * 1024)
    notes.append(f"pairwise_direct at M = {m} would take about {est:.0f} s per call: measured "
                 f"at M = {rows} (same N, the top-left block of the same reference)")
    return rows


def corr_rows(x: Any, backend: str, names: list[str], precisions: list[str],
              providers: list[Provider], s: Settings, ceilings: dict, notes: list[str],
              progress: Callable[[dict], None]) -> list[dict]:
    """The corrcoef records of one (M, N) config."""
    m, n = (int(v) for v in x.shape)
    ref = reference(x)
    out = []
    for name in names:
        v = _registry.get("corrcoef", name)
        for prec in precisions if name not in ("numpy", "pairwise_direct") else ["float64"]:
            p = CorrProblem(m, n, np.dtype(np.float32), prec, backend == "cuda")
            if not v.supports(p):
                notes.append(f"{name} skipped on {p}: not supported on this device")
                continue
            rows = _direct_rows(m, n, x, s, notes) if name == "pairwise_direct" else m
            xs, sub = (x, ref) if rows == m else (x[:rows], ref[:rows, :rows])
            ps = CorrProblem(rows, n, p.dtype, prec, p.on_device)
            samples, err, fail = _measure(
                lambda xs=xs, name=name, prec=prec: corrcoef(xs, variant=name, precision=prec),
                lambda r, sub=sub: max_abs_error(r, sub), backend, s)
            rec = _record("corrcoef", name, "warplab", backend,
                          _params(rows, n, prec, name, s), samples, ps, v.bytes_moved(ps),
                          ceilings, err, error_bound(name, prec, n), fail)
            out.append(rec)
            progress(rec)
    if providers:
        pre = Precentred(x) if backend == "cuda" else None
        for prov in providers:
            prec = "float64" if CEILING[prov.name] == "dgemm_gflops" else "float32"
            p = CorrProblem(m, n, np.dtype(np.float32), prec, backend == "cuda")
            samples, err, fail = _measure(
                lambda prov=prov: prov.run(x, pre),
                lambda r, upper=prov.name in UPPER_ONLY: max_abs_error(r, ref, upper), backend, s)
            rec = _record("corrcoef", prov.name, prov.library, backend,
                          _params(m, n, prec, prov.name, s), samples, p,
                          m * n * 4 + m * m * work_itemsize(prec), ceilings, err,
                          error_bound(prov.name, prec, n), fail, ceiling_key=CEILING[prov.name])
            out.append(rec)
            progress(rec)
        del pre
    base = next((r for r in out if r["variant"] == "cupy.corrcoef" and r["verified"]), None)
    for r in out:
        if base and r["verified"] and r["params"]["m"] == m:
            r["x_cupy"] = base["phases"]["kernel"]["median"] / r["phases"]["kernel"]["median"]
    return out


def clustered(m: int, n: int, backend: str, seed: int = 7) -> Any:
    """float32 series in clusters of ``CLUSTER_SIZE``: a shared normal factor plus noise of
    scale ``CLUSTER_NOISE`` (coefficients near 0.96 inside a cluster, near 0 across)."""
    xp = _xp(backend)
    rs = xp.random.RandomState(seed)
    k = max(1, m // CLUSTER_SIZE)
    f = rs.standard_normal((k, n)).astype(np.float32)
    noise = rs.standard_normal((m, n)).astype(np.float32)
    return f[xp.arange(m) % k] + np.float32(CLUSTER_NOISE) * noise


def check_pairs(x: Any, res: Any, thr: float, bound: float, seed: int = 3
                ) -> tuple[float, int, int]:
    """Check ``res`` on ``CHECK_TILES`` random tiles above the diagonal in float64: every pair
    with ``|r| >= thr + bound`` found, none with ``|r| < thr - bound``, values within ``bound``.
    Returns (max abs error, tiles, pairs checked); ``ValueError`` naming the first miss."""
    xp = np if isinstance(x, np.ndarray) else __import__("cupy")
    m = x.shape[0]
    side = min(CHECK_SIDE, m)
    keys = res.i * m + res.j
    rng = np.random.default_rng(seed)
    worst, checked = 0.0, 0
    for _ in range(CHECK_TILES):
        r0, c0 = sorted(int(v) for v in rng.integers(0, m - side + 1, 2))
        zr, zc = normalised64(x[r0:r0 + side]), normalised64(x[c0:c0 + side])
        ref = zr @ zc.T
        gi = xp.arange(r0, r0 + side)[:, None]
        gj = xp.arange(c0, c0 + side)[None, :]
        upper = gi < gj
        tile_keys = (gi * m + gj)
        pos = xp.searchsorted(keys, tile_keys)
        found = upper & (pos < keys.size)
        if keys.size:
            found &= keys[xp.minimum(pos, keys.size - 1)] == tile_keys
        a = xp.abs(ref)
        if bool(((a >= thr + bound) & upper & ~found).any()):
            raise InvalidValueError("a pair above the threshold is missing")
        if bool((found & (a < thr - bound)).any()):
            raise InvalidValueError("a pair below the threshold was reported")
        if bool(found.any()):
            got = res.r[pos[found]]
            worst = max(worst, float(xp.abs(got - ref[found]).max()))
        checked += int(upper.sum())
    return worst, CHECK_TILES, checked


def pairs_row(m: int, n: int, thr: float, backend: str, s: Settings, ceilings: dict,
              progress: Callable[[dict], None]) -> dict:
    """The corr_pairs record: time of the default call, pairs found, sampled verification."""
    x = clustered(m, n, backend)
    p = CorrProblem(m, n, np.dtype(np.float32), "float64", backend == "cuda")
    v = _registry.choose("corrcoef", backend, p)
    bound = error_bound(v.name, "float64", n)
    params = _params(m, n, "float64", v.name, s, threshold=thr, data="clustered",
                     clusters=max(1, m // CLUSTER_SIZE))
    found, tiles_, pairs_ = None, 0, 0

    def check(res: Any) -> float:
        nonlocal found, tiles_, pairs_
        found = int(res.i.size)
        err, tiles_, pairs_ = check_pairs(x, res, thr, bound)
        return err

    samples, err, fail = _measure(lambda: corr_pairs(x, threshold=thr), check, backend,
                                  Settings(runs=min(s.runs, 3), warmup=1, max_seconds=None))
    nbytes = m * n * (4 + 2 * work_itemsize("float64")) + 24 * (found or 0)
    rec = _record("corr_pairs", v.name, "warplab", backend, params, samples, p, nbytes,
                  ceilings, err, bound, fail, pairs_found=found, checked_tiles=tiles_,
                  checked_pairs=pairs_)
    progress(rec)
    return rec


def run_corr(*, campaign: str = "quick", backend: str, json_path: Path | None,
             shapes: list[tuple[int, int]] | None = None, variant_names: list[str] | None = None,
             precisions: list[str] | None = None, with_comparators: bool = True,
             with_pairs: bool = True, settings: Settings | None = None,
             progress: Callable[[int, int, dict], None] | None = None) -> dict:
    """Run a corr campaign (or explicit ``(M, N)`` shapes); write ``json_path`` if given and
    return the results document."""
    c = CORR_CAMPAIGNS[campaign]
    s = settings or Settings(runs=c.runs, warmup=c.warmup)
    precisions = list(precisions or PRECISIONS)
    for prec in precisions:
        if prec not in PRECISIONS:
            raise InvalidValueError(f"unknown precision {prec!r}; valid: {', '.join(PRECISIONS)}")
    names = list(variant_names or [v.name for v in _registry.variants("corrcoef", backend)])
    for name in names:
        if _registry.get("corrcoef", name).backend != backend:
            valid = ", ".join(v.name for v in _registry.variants("corrcoef", backend))
            raise InvalidValueError(f"corrcoef variant {name!r} does not run on the {backend} "
                             f"backend (valid there: {valid})")
    notes: list[str] = []
    cpu = backend == "cpu"
    shapes = list(shapes or (CPU_SHAPES if cpu else c.shapes))
    for m, n in shapes:
        if m < 2 or n < 2:
            raise InvalidValueError(f"corr shapes need M >= 2 and N >= 2, got M={m} N={n}")
    if cpu:
        notes.append("cpu backend: NumPy in float64 whatever the precision")
    providers: list[Provider] = []
    if with_comparators and cpu:
        providers = list(NUMPY_PROVIDERS)
        notes.append(cpu_note("CuPy, torch, cuBLAS", "np.corrcoef (float64)"))
    elif with_comparators:
        providers, skipped = available(CORR_PROVIDERS)
        notes += skipped
    ceilings = measure_all(backend)
    records: list[dict] = []

    def step(rec: dict) -> None:
        records.append(rec)
        if progress:
            progress(len(records), 0, rec)

    for m, n in shapes:
        if not cpu and 3 * m * m * 8 + m * n * 16 > 0.8 * free_device_bytes():
            notes.append(f"M = {m}, N = {n} skipped: its matrices do not fit GPU memory")
            continue
        x = random_walk(m, n, seed=0, device=backend)
        corr_rows(x, backend, names, precisions, providers, s, ceilings, notes, step)
    if with_pairs:
        m, n, thr = CPU_PAIRS if cpu else c.pairs
        pairs_row(m, n, thr, backend, s, ceilings, step)
    return finish_campaign(backend, ceilings, notes, campaign, records, json_path)

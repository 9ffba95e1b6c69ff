"""What the series campaign's parts share: record params, host- or event-timed calls,
the tolerances of sums, the walk data, device memory checks."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from warplab.lab.harness.measure import TOLERANCE, Settings, time_device_runs
from warplab.lab.harness.results import make_result
from warplab.lab.harness.stats import summarize
from warplab.lab.harness.timing import time_runs
from warplab.core.arrays import to_host
from warplab.families.series.walk import random_walk

Shape = tuple[int, int]
SEED, START, WALK_EPS = 1, 100.0, 1e-3

def shape_params(m: int, n: int, dtype: str, **extra: Any) -> dict:
    """The params every series record starts with (``size`` = M N values)."""
    return {"size": m * n, "m": m, "n": n, "shape": f"{m}x{n}", "dtype": str(dtype), **extra}


def _sync(backend: str) -> None:
    if backend == "cuda":
        import cupy

        cupy.cuda.get_current_stream().synchronize()


def timed(call: Callable[[], Any], backend: str, settings: Settings
          ) -> tuple[dict, bool | None, Any]:
    """(phase statistics, held or None on the host, the last result) of ``call``: CUDA events
    with the kernel phase held behind a blocking kernel, or the host clock."""
    out: list[Any] = [None]
    if backend == "cuda":
        def run(rec: Any, held: bool) -> None:
            with rec.phase("kernel", hold=held):
                out[0] = call()

        out[0] = call()  # compile and allocate outside any held phase
        _sync(backend)
        samples, held = time_device_runs(run, settings,
                                         between=_l2_flush() if settings.flush_l2 else None)
    else:
        def run_host(rec: Any) -> None:
            with rec.phase("kernel"):
                out[0] = call()

        samples = time_runs(run_host, warmup=settings.warmup, runs=settings.runs, cuda=False,
                            max_seconds=settings.max_seconds)
        held = None
    return {k: summarize(v) for k, v in samples.items()}, held, out[0]


_FLUSH: list[Any] = []


def _l2_flush() -> Callable[[], None]:
    """Writes a buffer of twice the L2 size (``--flush-l2``: before every timed run)."""
    if not _FLUSH:
        import cupy

        l2 = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["l2CacheSize"]
        _FLUSH.append(cupy.empty(max(1, 2 * int(l2)), dtype=np.uint8))
    return lambda: _FLUSH[0].fill(0)


def failed_record(exc: BaseException, **kw: Any) -> dict:
    rec = make_result(phases={}, verified=False, error=f"{type(exc).__name__}: {exc}", **kw)
    rec["rel_error"] = None
    return rec


def unit_roundoff(dtype: Any) -> float:
    """2^-24 for float32, 2^-53 for float64."""
    return float(np.finfo(np.dtype(dtype)).eps) / 2


def sum_tolerance(n: int, out: Any, acc: Any) -> float:
    """The bound a sum or mean of n positive values must meet: max(TOLERANCE[out], 4 n u(acc))."""
    return max(TOLERANCE[np.dtype(out)], 4 * n * unit_roundoff(acc))


def max_rel(got: np.ndarray, ref: np.ndarray) -> float:
    """max |got - ref| / |ref| (NaN when any of got is not finite)."""
    g = np.asarray(got, dtype=np.float64)
    if not np.isfinite(g).all():
        return float("nan")
    den = np.maximum(np.abs(ref), np.finfo(np.float64).tiny)
    return float(np.max(np.abs(g - ref) / den)) if g.size else 0.0


def verdict(rel: float, tol: float) -> tuple[bool, str | None]:
    ok = rel <= tol  # False for NaN
    return ok, None if ok else f"relative error {rel:.3g} above {tol:.3g}"



def walk_data(m: int, n: int, dtype: str, backend: str) -> tuple[Any, np.ndarray]:
    """(walks on the backend, their host copy): the default generator, seed ``SEED``."""
    x = random_walk(m, n, start=START, eps=WALK_EPS, seed=SEED, dtype=dtype, device=backend)
    return x, to_host(x)



def fits_device(nbytes: int, backend: str) -> bool:
    if backend != "cuda":
        return True
    import cupy

    release_memory(backend)
    return nbytes <= cupy.cuda.runtime.memGetInfo()[0] * 0.9


def release_memory(backend: str) -> None:
    if backend == "cuda":
        import cupy

        cupy.get_default_memory_pool().free_all_blocks()



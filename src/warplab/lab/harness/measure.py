"""The measurement core shared by every family's benchmark: settings, and device runs whose
kernel phase is held behind a blocking kernel when the timed call allows it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from warplab.lab.harness.timing import HeldPhaseSynchronised, time_runs

#: Largest relative error a float result may show against the float64 reference and still
#: count as verified (every family's check uses these).
TOLERANCE = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}


@dataclass
class Settings:
    """How to time: runs, warm-up, host memory kind, time budget per record, L2 flush."""

    runs: int = 20
    warmup: int = 3
    pinned: bool = False
    max_seconds: float | None = 2.0
    flush_l2: bool = False


def time_device_runs(run: Callable[[Any, bool], None], settings: Settings,
                     between: Callable[[], None] | None = None) -> tuple[dict, bool]:
    """Time ``run(rec, held)`` with CUDA events; returns (samples, held).

    ``run`` wraps its kernel phase in ``rec.phase("kernel", hold=held)``. The first attempt
    holds it; if the call synchronises inside (:class:`HeldPhaseSynchronised`), it is timed
    again unheld, as a user would see it, and ``held`` is False.
    """
    kw = dict(warmup=settings.warmup, runs=settings.runs, cuda=True,
              max_seconds=settings.max_seconds, between=between)
    try:
        return time_runs(lambda rec: run(rec, True), **kw), True
    except HeldPhaseSynchronised:
        return time_runs(lambda rec: run(rec, False), **kw), False

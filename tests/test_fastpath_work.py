"""Work counters of the byte-histogram short path (no GPU): with CuPy replaced by a counting
fake (``fake_cupy``), a warm ``byte_histogram`` zeroes its counts with ``scalar.zeros`` (no
``cupy.zeros`` call). The reductions' planned path: ``test_reduce_plan.py``; the other short
paths' counters: ``test_fastpath_work_{bincount,copies,corr,histogram}.py``."""
from __future__ import annotations

import numpy as np
import pytest

import warplab
from fake_cupy import WORK, Dev, count_launch, dev, install, poison_allocations
from warplab.core import fastpath


# --- byte_histogram (the short path of cuda.device_default) -------------------------------


@pytest.fixture
def bytes_gpu(monkeypatch: pytest.MonkeyPatch):
    from types import SimpleNamespace

    from warplab.families.histogram import cuda

    g = install(monkeypatch)

    def launch(plan: object, grid: int, block: int, data: Dev, bins: Dev) -> None:
        count_launch()
        np.asarray(bins).view(np.ndarray)[...] += np.bincount(np.asarray(data), minlength=256)

    monkeypatch.setattr(cuda, "_plan", lambda *a: SimpleNamespace(full=4))
    monkeypatch.setattr(cuda, "_launch", launch)
    fastpath.clear()
    yield g
    fastpath.clear()


def test_warm_byte_histogram_zeroes_without_cupy_zeros(bytes_gpu, monkeypatch) -> None:
    x = dev(np.random.default_rng(6).integers(0, 256, 4096, dtype=np.uint8))
    warplab.byte_histogram(x)
    poison_allocations(monkeypatch)  # the memset must zero the counts
    WORK.clear()
    got = warplab.byte_histogram(x)
    assert dict(WORK) == {"empty": 1, "memset": 1, "launch": 1}  # latency2: + "zeros"
    np.testing.assert_array_equal(got, np.bincount(np.asarray(x), minlength=256))

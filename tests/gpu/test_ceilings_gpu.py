"""GPU ceilings are sane next to the datasheet (``pytest -m gpu`` on the GPU machine)."""
from __future__ import annotations

import numpy as np
import pytest

import warplab
from warplab.lab.harness import ceiling_rates, ceilings

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)
cupy = pytest.importorskip("cupy")


@pytest.fixture(scope="module")
def ceil(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Measured once for the module, into the session's cache folder (the autouse fixture's,
    which a module fixture runs before), never the user's ~/.cache."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WARPLAB_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
        return ceilings.measure_all("cuda")


def test_memory_bandwidth_near_datasheet(ceil: dict) -> None:
    sheet = ceil["datasheet_bw_gbps"]
    assert sheet and sheet > 0
    for key in ("copy_gbps", "read_gbps"):
        assert 0.3 * sheet <= ceil[key] <= 1.5 * sheet, (key, ceil[key], sheet)


@pytest.mark.parametrize("nbytes", [16, 4096 + 48, (1 << 20) + 16 * 33, (64 << 20) - 16])
def test_every_read_kernel_reads_every_word(nbytes: int) -> None:
    """Each read kernel's block sums add up to the words read (read_bandwidth raises when not)
    at sizes that are not a multiple of any chunk, and the ceiling is the fastest of them."""
    ceiling_rates.read_bandwidth.cache_clear()
    got = ceiling_rates.read_bandwidth("cuda", runs=2, nbytes=nbytes)
    by = got["read_gbps_by_method"]
    assert set(by) == {name for name, *_ in ceiling_rates.CUDA_READS}
    assert got["read_gbps"] == pytest.approx(max(by.values()))


def test_pinned_transfers_not_slower_than_pageable(ceil: dict) -> None:
    for direction in ("h2d", "d2h"):
        pinned, pageable = ceil[f"{direction}_pinned_gbps"], ceil[f"{direction}_pageable_gbps"]
        assert pinned > 1 and pageable > 0.1
        assert pinned >= 0.9 * pageable, (direction, pinned, pageable)


def test_gemm_rates(ceil: dict) -> None:
    assert ceil["sgemm_gflops"] > 1000 and ceil["dgemm_gflops"] > 100
    assert ceil["sgemm_tf32"] is False
    peak = ceil["datasheet_fp32_gflops"]
    if peak:  # TF32 would run several times above the FP32 lane peak
        assert ceil["sgemm_gflops"] <= 1.1 * peak, (ceil["sgemm_gflops"], peak)


def test_tf32_mode_is_switched_off_and_restored() -> None:
    from cupy._core import _routines_linalg as linalg

    before = linalg.get_compute_type(np.float32)
    linalg.set_compute_type(np.float32, linalg.COMPUTE_TYPE_TF32)
    try:
        got = ceiling_rates.gemm_rate("cuda", "float32", n=2048, runs=3)
        assert "TF32" in got["sgemm_method"] and got["sgemm_tf32"] is False
        assert linalg.get_compute_type(np.float32) == linalg.COMPUTE_TYPE_TF32
    finally:
        linalg.set_compute_type(np.float32, before)


def test_cached(ceil: dict) -> None:
    assert ceilings.measure_all("cuda") is ceil

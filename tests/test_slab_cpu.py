"""``core/slab.py`` with the counting fake CuPy: small results carved from one allocation per
device and stream, never handed out twice, aligned, of the right type, and only where small."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import run_in_threads
from fake_cupy import WORK, Dev, install
from warplab.core import fastpath, scalar, slab

F32 = np.dtype(np.float32)


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch):
    g = install(monkeypatch)
    fastpath.clear()
    yield g
    fastpath.clear()


def test_carves_share_one_allocation_until_it_is_full(gpu) -> None:
    per_slab = slab.SMALL_SLAB // 256
    outs = [slab.small((64,), F32) for _ in range(per_slab + 1)]  # 256 bytes each
    assert WORK["empty"] == 2  # one slab, then the next
    ptrs = [o.data.ptr for o in outs]
    assert len(set(ptrs)) == len(ptrs)
    assert all((p - ptrs[0]) % slab.SMALL_ALIGN == 0 for p in ptrs[:per_slab])  # CuPy: 256-B bases
    assert np.diff(ptrs[:per_slab]).tolist() == [256] * (per_slab - 1)
    assert all(type(o) is Dev and o.shape == (64,) and o.dtype == F32 for o in outs)


def test_sizes_round_up_to_the_alignment(gpu) -> None:
    a, b, c = slab.small(3, F32), slab.small((2, 5), np.dtype(np.int64)), slab.small(1, F32)
    assert (b.data.ptr - a.data.ptr, c.data.ptr - b.data.ptr) == (256, 256)
    assert b.shape == (2, 5) and b.flags.c_contiguous


def test_zero_d_is_a_device_scalar(gpu) -> None:
    s = slab.small((), np.dtype(np.float64))
    assert type(s) is scalar.scalar_type() and s.shape == () and s.nbytes == 8


@pytest.mark.parametrize("shape", [0, (0, 4), slab.SMALL // 4 + 1, (17, 16)])
def test_empty_and_large_are_not_carved(gpu, shape) -> None:
    assert slab.small(shape, F32) is None and WORK["empty"] == 0


def test_one_slab_per_device_and_stream(gpu) -> None:
    a = slab.small(8, F32)
    gpu.stream = 12
    b = slab.small(8, F32)
    gpu.device = 1
    c = slab.small(8, F32)
    gpu.device, gpu.stream = 0, 11
    d = slab.small(8, F32)
    assert WORK["empty"] == 3 and d.data.ptr - a.data.ptr == 256
    assert len({x.data.ptr for x in (a, b, c, d)}) == 4


def test_two_threads_never_get_one_carve(gpu) -> None:
    """Both threads take from the one slab of their (shared) stream, under its lock."""
    got: list[list] = [[], []]

    def worker(i: int) -> None:
        for _ in range(2000):
            got[i].append(slab.small(4, F32))  # kept alive: live carves never overlap

    run_in_threads(worker, 2)
    ptrs = [a.data.ptr for a in got[0] + got[1]]
    assert len(ptrs) == 4000 and len(set(ptrs)) == 4000


def test_a_kept_result_keeps_its_memory(gpu) -> None:
    a = slab.small(4, F32)
    a[...] = np.arange(4, dtype=np.float32)
    fastpath.clear()  # the slab object is gone; the carve still holds the allocation
    for _ in range(300):
        slab.small(4, F32)[...] = -1
    np.testing.assert_array_equal(a, np.arange(4, dtype=np.float32))

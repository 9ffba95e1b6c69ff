"""The cuda pipeline of ``core/streaming.py`` on the fake CuPy (no GPU): every byte arrives in
order through the pinned ring and through an array registered in place, a refused registration
falls back to staging, and every error path gives back its staging buffers and unregisters
what it registered."""
from __future__ import annotations

import fake_cupy
import numpy as np
import pytest

from warplab.core import staging, streaming


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch):
    g = fake_cupy.install(monkeypatch)
    yield g
    staging.staging_pool("cuda").clear()


def _stream(a: np.ndarray, host: str, chunk: int) -> tuple[np.ndarray, dict]:
    with streaming.collect() as stats:
        got = streaming.stream(a, lambda d, s: (s, np.array(d)),
                               lambda parts: np.concatenate([p[1] for p in parts]
                                                            or [a[:0].reshape(-1)]),
                               backend="cuda", host=host, chunk_bytes=chunk)
    return got, stats[-1]


@pytest.mark.parametrize("n", [0, 1, 4095, 4096, 5 * 4096 + 3, 100_003])
@pytest.mark.parametrize("host", ["stage", "register"])
def test_every_byte_arrives_in_order(gpu, n: int, host: str) -> None:
    a = (np.arange(n + 1, dtype=np.int64) * 7 - 3)[1:]  # an unaligned start
    got, stats = _stream(a, host, 4096)
    np.testing.assert_array_equal(got, a)
    assert stats["host"] == (host if n else "none")
    assert stats["chunks"] == len(staging.chunk_bounds(n, 512))
    assert gpu.registered == {}
    assert fake_cupy.WORK["register"] == (host == "register" and n > 0)
    assert fake_cupy.WORK["unregister"] == fake_cupy.WORK["register"]
    assert staging.staging_pool("cuda").in_use == 0


def test_refused_registration_stages(gpu) -> None:
    gpu.refuse_register = lambda address, size: True
    a = np.arange(50_000, dtype=np.int32)
    got, stats = _stream(a, "register", 8192)
    np.testing.assert_array_equal(got, a)
    assert stats["host"] == "stage" and gpu.registered == {}
    assert fake_cupy.WORK["register"] == 2  # the default flags, then read-only


@pytest.mark.parametrize("host", ["stage", "register"])
def test_an_error_mid_stream_releases_everything(gpu, host: str) -> None:
    a = np.arange(1 << 18, dtype=np.uint8)
    calls: list[int] = []

    def chunk_fn(d, start):
        calls.append(start)
        if len(calls) == 6:
            raise RuntimeError("kernel failed")
        return 0

    for _ in range(3):
        with pytest.raises(RuntimeError, match="kernel failed"):
            streaming.stream(a, chunk_fn, sum, backend="cuda", host=host, chunk_bytes=8192)
        calls.clear()
        assert gpu.registered == {}
        assert staging.staging_pool("cuda").in_use == 0


def test_non_contiguous_arrays_and_files_stage(gpu, tmp_path) -> None:
    a = np.arange(64 * 1024, dtype=np.int32).reshape(256, 256)[:, ::2]
    got, stats = _stream(a, "register", 8192)
    np.testing.assert_array_equal(got, a.reshape(-1))
    assert stats["host"] == "stage" and fake_cupy.WORK["register"] == 0
    p = tmp_path / "f.bin"
    p.write_bytes(bytes(range(256)) * 300)
    got, stats = _stream(p, "register", 8192)
    assert got.tobytes() == p.read_bytes() and stats["host"] == "stage"

"""The cuda pipeline's host side on the fake CuPy (no GPU): which chunks a hybrid stream
page-locks, that every byte still arrives in order, that every registration is undone on
success, on refusal and on error, and the registration pieces never share a page."""
from __future__ import annotations

from itertools import pairwise

import fake_cupy
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from warplab.core import pinning, staging, streaming


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch):
    g = fake_cupy.install(monkeypatch)
    staging.set_rates("cuda", 50.0, 40.0, "test")
    yield g
    staging.staging_pool("cuda").clear()


@given(n=st.integers(0, 200), share=st.sampled_from([0.0, 0.2, 1 / 3, 0.5]))
def test_chosen_chunks_are_spread_and_never_neighbours(n: int, share: float) -> None:
    bounds = staging.chunk_bounds(n * 4096, 4096)
    chosen = pinning.chosen_chunks(bounds, 1, share)
    assert 0 not in chosen
    assert not any(i + 1 in chosen for i in chosen)
    assert len(chosen) == int(n * share)


def test_chosen_chunks_skip_short_ones_and_bad_shares() -> None:
    assert pinning.chosen_chunks([(0, 10), (10, 20), (20, 30)], 1, 0.5) == set()
    with pytest.raises(ValueError):
        pinning.chosen_chunks([(0, 4096)], 1, 0.6)


@given(addr=st.integers(0, 1 << 20), n=st.integers(1, 1 << 22),
       piece=st.sampled_from([4096, 8192, 1 << 20]))
@settings(max_examples=200)
def test_pieces_cover_the_range_and_share_no_page(addr: int, n: int, piece: int) -> None:
    parts = pinning.pieces(addr, n, piece)
    assert parts[0][0] == addr and sum(p[1] for p in parts) == n
    for (a, m), (b, _) in pairwise(parts):
        assert a + m == b and b % 4096 == 0 and m <= piece
    pages = [(a // 4096, (a + m - 1) // 4096) for a, m in parts]
    assert all(p[1] < q[0] for p, q in pairwise(pages))


def test_pin_share_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert pinning.pin_share() == pinning.PIN_SHARE
    monkeypatch.setenv("WARPLAB_STREAM_PIN_SHARE", "0.25")
    assert pinning.pin_share() == 0.25
    for bad in ("x", "0.7", "-1"):
        monkeypatch.setenv("WARPLAB_STREAM_PIN_SHARE", bad)
        with pytest.raises(ValueError):
            pinning.pin_share()


def _stream(a: np.ndarray, host: str, chunk: int) -> tuple[np.ndarray, dict]:
    with streaming.collect() as stats:
        got = streaming.stream(a, lambda d, s: (s, np.array(d)),
                               lambda parts: np.concatenate([p[1] for p in parts] or [a[:0].reshape(-1)]),
                               backend="cuda", host=host, chunk_bytes=chunk)
    return got, stats[-1]


@pytest.mark.parametrize("n", [1, 4095, 4096, 5 * 4096 + 3, 40_000, 100_003])
@pytest.mark.parametrize("share", ["0.2", "0.5"])
def test_hybrid_stream_delivers_every_byte(gpu, monkeypatch, n: int, share: str) -> None:
    monkeypatch.setenv("WARPLAB_STREAM_PIN_SHARE", share)
    monkeypatch.setattr(pinning, "PIN_PIECE", 8192)
    a = (np.arange(n, dtype=np.int64) * 7 - 3)[1:]  # unaligned start: pieces cut mid-page
    got, stats = _stream(a, "hybrid", 4096)
    np.testing.assert_array_equal(got, a)
    chunks = len(staging.chunk_bounds(a.size, 4096 // 8))
    want = len(pinning.chosen_chunks(staging.chunk_bounds(a.size, 512), 8, float(share)))
    assert stats["host"] == ("hybrid" if want else "stage" if a.size else "none")
    assert (stats.get("pinned_bytes", 0) > 0) == bool(want)
    assert stats["chunks"] == chunks
    assert gpu.registered == {}
    assert fake_cupy.WORK["register"] == fake_cupy.WORK["unregister"]
    assert staging.staging_pool("cuda").in_use == 0


def test_refused_registration_copies_the_chunk_anyway(gpu, monkeypatch) -> None:
    monkeypatch.setenv("WARPLAB_STREAM_PIN_SHARE", "0.5")
    gpu.refuse_register = lambda address, size: True
    a = np.arange(50_000, dtype=np.int32)
    got, stats = _stream(a, "hybrid", 8192)
    np.testing.assert_array_equal(got, a)
    assert stats["host"] == "hybrid" and stats["pinned_bytes"] == 0
    assert gpu.registered == {}


def test_a_refused_piece_releases_the_chunk_s_other_pieces(gpu, monkeypatch) -> None:
    monkeypatch.setenv("WARPLAB_STREAM_PIN_SHARE", "0.5")
    monkeypatch.setattr(pinning, "PIN_PIECE", 4096)
    seen: list[bool] = []

    def second_piece_refused(address: int, size: int) -> bool:
        seen.append(len(seen) % 3 == 1)
        return seen[-1]

    gpu.refuse_register = second_piece_refused
    a = np.arange(1 << 16, dtype=np.uint8)
    got, _ = _stream(a, "hybrid", 16384)
    np.testing.assert_array_equal(got, a)
    assert any(seen) and gpu.registered == {}
    assert fake_cupy.WORK["unregister"] == len(seen) - sum(seen)


def test_an_error_mid_stream_unregisters_everything(gpu, monkeypatch) -> None:
    monkeypatch.setenv("WARPLAB_STREAM_PIN_SHARE", "0.5")
    a = np.arange(1 << 18, dtype=np.uint8)
    calls = []

    def chunk_fn(d, start):
        calls.append(start)
        if len(calls) == 6:
            raise RuntimeError("kernel failed")
        return 0

    for _ in range(3):
        with pytest.raises(RuntimeError, match="kernel failed"):
            streaming.stream(a, chunk_fn, sum, backend="cuda", host="hybrid", chunk_bytes=8192)
        calls.clear()
        assert gpu.registered == {}
        assert staging.staging_pool("cuda").in_use == 0


def test_non_contiguous_and_file_sources_stage(gpu, tmp_path) -> None:
    a = np.arange(64 * 1024, dtype=np.int32).reshape(256, 256)[:, ::2]
    got, stats = _stream(a, "hybrid", 8192)
    np.testing.assert_array_equal(got, a.reshape(-1))
    assert stats["host"] == "stage" and gpu.registered == {}
    p = tmp_path / "f.bin"
    p.write_bytes(bytes(range(256)) * 300)
    got, stats = _stream(p, "hybrid", 8192)
    assert got.tobytes() == p.read_bytes() and stats["host"] == "stage"


def test_register_whole_and_stage_modes_on_the_fake(gpu) -> None:
    a = np.arange(30_000, dtype=np.float32)
    for host, how in (("register", "register"), ("stage", "stage")):
        got, stats = _stream(a, host, 8192)
        np.testing.assert_array_equal(got, a)
        assert stats["host"] == how
    assert gpu.registered == {}

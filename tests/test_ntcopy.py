"""The non-temporal staging copy (``core/ntcopy.py``): built where a C compiler is, equal to
``np.copyto`` at every alignment and length around its 16-byte and 64-byte steps, and
``np.copyto`` itself wherever it is not used (off, too short, strided, overlapping)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from warplab.core import ntcopy, sources


@pytest.fixture
def built(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(ntcopy, "_STATE", {})
    monkeypatch.setattr(ntcopy, "MIN_BYTES", 0)
    if ntcopy.library() is None:
        pytest.skip(f"non-temporal copy not built here: {ntcopy.status()}")
    return tmp_path


def test_built_once_into_the_cache(built) -> None:
    libs = list(built.glob("libwarplab_ntcopy-*.so"))
    assert len(libs) == 1 and "non-temporal" in ntcopy.status()
    assert ntcopy.library() is ntcopy.library()


@given(n=st.integers(0, 700), src_off=st.integers(0, 31), dst_off=st.integers(0, 31))
@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # built: read-only
def test_equal_to_copyto_at_every_alignment(built, n: int, src_off: int, dst_off: int) -> None:
    rng = np.random.default_rng(n * 1024 + src_off * 32 + dst_off)
    src = rng.integers(0, 256, n + 64, dtype=np.uint8)
    dst = np.full(n + 64, 0xA5, np.uint8)
    ntcopy.copy(dst[dst_off:dst_off + n], src[src_off:src_off + n])
    want = np.full(n + 64, 0xA5, np.uint8)
    want[dst_off:dst_off + n] = src[src_off:src_off + n]
    np.testing.assert_array_equal(dst, want)  # the bytes, and nothing around them


def test_large_and_typed_copies(built) -> None:
    src = np.random.default_rng(0).standard_normal((3 << 20) + 5)
    dst = np.empty_like(src)
    ntcopy.copy(dst, src)
    np.testing.assert_array_equal(dst, src)


def test_what_falls_back_to_copyto(built, monkeypatch) -> None:
    calls = []
    monkeypatch.setattr(ntcopy.np, "copyto", lambda d, s: calls.append(1) or d.__setitem__(
        slice(None), s))
    a = np.arange(4096, dtype=np.int32)
    b = np.empty(2048, np.int32)
    ntcopy.copy(b, a[::2])                # strided source
    ntcopy.copy(a[1:2049], a[:2048])      # overlapping
    ntcopy.copy(b.astype(np.int64), a[:2048].astype(np.int64))
    assert len(calls) == 2
    np.testing.assert_array_equal(b, np.arange(0, 4096, 2))


def test_off_and_unbuilt_mean_copyto(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(ntcopy, "_STATE", {})
    monkeypatch.setenv("WARPLAB_NT_COPY", "0")
    assert ntcopy.library() is None and "off" in ntcopy.status()
    monkeypatch.delenv("WARPLAB_NT_COPY")
    monkeypatch.setenv("CC", "no-such-compiler-here")
    monkeypatch.setattr(ntcopy, "_STATE", {})
    monkeypatch.setenv("WARPLAB_CACHE_DIR", str(tmp_path))
    if ntcopy._wanted():
        assert ntcopy.library() is None and "no C compiler" in ntcopy.status()
    src = np.arange(1 << 19, dtype=np.float32)
    dst = np.empty_like(src)
    ntcopy.copy(dst, src)
    np.testing.assert_array_equal(dst, src)


def test_array_source_fills_through_it(built) -> None:
    a = np.random.default_rng(1).integers(0, 1 << 30, 100_003, dtype=np.int64)
    src = sources.ArraySource(a)
    dst = np.empty(50_001, np.int64)
    src.fill(dst, 7)
    np.testing.assert_array_equal(dst, a[7:50_008])

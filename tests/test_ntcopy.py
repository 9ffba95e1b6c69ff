"""The non-temporal staging copy (``core/ntcopy.py``, the extension ``warplab.core._ntcopy``
built with the package): where it is built, equal to ``np.copyto`` at every alignment and
length around its 16-byte and 64-byte steps; ``np.copyto`` itself wherever it is not used (not
built, too short, strided, overlapping, Python objects), with the same result."""
from __future__ import annotations

import importlib
import importlib.util
import platform

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from warplab.core import extensions, ntcopy, sources

BUILT = importlib.util.find_spec(ntcopy.EXTENSION) is not None


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> None:
    if ntcopy._ext is None:
        pytest.skip(f"non-temporal copy not in use here: {ntcopy.status()}")
    monkeypatch.setattr(ntcopy, "MIN_BYTES", 0)


def test_extension_imports_where_built() -> None:
    if not BUILT:
        pytest.skip(f"{ntcopy.EXTENSION} is not built here: {ntcopy.status()}")
    ext = importlib.import_module(ntcopy.EXTENSION)
    x86 = platform.machine().lower() in ("x86_64", "amd64")
    assert ext.STREAMING == (1 if x86 else 0)
    src = np.arange(1 << 12, dtype=np.uint8)
    dst = np.zeros_like(src)
    assert ext.copy(dst, src) is bool(ext.STREAMING)
    np.testing.assert_array_equal(dst, src)
    with pytest.raises(ValueError, match="bytes into"):
        ext.copy(dst[:10], src)
    with pytest.raises((TypeError, BufferError)):
        ext.copy(bytes(len(src)), src)  # read-only destination


def test_status_says_which_copy() -> None:
    if ntcopy._ext is not None:
        assert ntcopy.status() == f"non-temporal stores (the built extension {ntcopy.EXTENSION})"
    else:
        assert ntcopy.status().startswith("np.copyto (fallback): ")


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
    when = np.arange(1 << 12).astype("datetime64[ns]").reshape(64, 64)  # no buffer export
    got = np.empty_like(when)
    ntcopy.copy(got, when)
    np.testing.assert_array_equal(got, when)


def test_what_falls_back_to_copyto(built, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    monkeypatch.setattr(ntcopy.np, "copyto", lambda d, s: calls.append(1) or d.__setitem__(
        slice(None), s))
    a = np.arange(4096, dtype=np.int32)
    b = np.empty(2048, np.int32)
    ntcopy.copy(b, a[::2])                # strided source
    ntcopy.copy(a[1:2049], a[:2048])      # overlapping
    objects = np.array([object() for _ in range(8)])
    held = np.empty_like(objects)
    ntcopy.copy(held, objects)            # Python objects: references, not bytes
    ntcopy.copy(b.astype(np.int64), a[:2048].astype(np.int64))
    assert len(calls) == 3
    np.testing.assert_array_equal(b, np.arange(0, 4096, 2))
    assert all(x is y for x, y in zip(held, objects))


def test_without_the_extension_the_copy_is_copyto(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ntcopy, "_ext", None)
    monkeypatch.setattr(ntcopy, "MIN_BYTES", 0)
    assert ntcopy.status().startswith("np.copyto (fallback): ")
    src = np.arange(1 << 19, dtype=np.float32)
    dst = np.empty_like(src)
    ntcopy.copy(dst, src)
    np.testing.assert_array_equal(dst, src)


def test_why_the_extension_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    def absent(name: str) -> None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)

    monkeypatch.setattr(extensions.importlib, "import_module", absent)
    ext, why = ntcopy._import()
    assert ext is None and "is not built" in why
    monkeypatch.setattr(ntcopy, "_ext", None)
    monkeypatch.setattr(ntcopy, "_WHY", why)
    assert ntcopy.status() == f"np.copyto (fallback): {why}"
    monkeypatch.setattr(extensions.importlib, "import_module", lambda name: type("M", (), {
        "STREAMING": 0}))  # built for an architecture without SSE2
    assert ntcopy._import() == (None, "no SSE2 streaming stores on this architecture")
    monkeypatch.setenv("WARPLAB_NT_COPY", "0")  # the debugging switch, read at import
    assert ntcopy._import() == (None, "WARPLAB_NT_COPY=0")


def test_array_source_fills_through_it(built) -> None:
    a = np.random.default_rng(1).integers(0, 1 << 30, 100_003, dtype=np.int64)
    src = sources.ArraySource(a)
    dst = np.empty(50_001, np.int64)
    src.fill(dst, 7)
    np.testing.assert_array_equal(dst, a[7:50_008])

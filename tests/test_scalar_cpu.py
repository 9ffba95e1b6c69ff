"""``DeviceScalar`` (``core/scalar.py``) on the CPU, with the counting fake CuPy: the same
numbers as its base class's methods, the C read used exactly where it applies (a stand-in
reader records its calls), CuPy's own methods everywhere else, and a type that never spreads
to arrays derived from it."""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from fake_cupy import Dev, dev, install
from warplab.core import fastpath, launch, scalar


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch):
    return install(monkeypatch)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list]:
    """A stand-in for the C read: records (address, stream, kind), returns the element."""
    calls: list = []

    def read(address: int, stream: int, kind: str) -> object:
        calls.append((address, stream, kind))
        t = np.dtype(kind)
        return np.frombuffer((np.ctypeslib.as_array(
            (np.ctypeslib.ctypes.c_char * t.itemsize).from_address(address))).tobytes(),
            t)[0].item()

    monkeypatch.setattr(launch, "reader", lambda: read)
    fastpath.clear()  # the reader is looked up once per clear
    yield calls
    fastpath.clear()  # no stand-in left for later tests


VALUES = [(np.float32, 2.75), (np.float64, -1e300), (np.int64, -2**62), (np.int32, 7),
          (np.uint64, 2**64 - 1), (np.float64, 0.0), (np.bool_, True)]


@pytest.mark.parametrize("dtype, v", VALUES)
def test_reads_what_cupy_reads(gpu, reads, dtype, v) -> None:
    plain = dev(np.array(v, dtype))
    s = scalar.as_scalar(plain)
    assert type(s) is scalar.scalar_type() and isinstance(s, Dev)
    assert s.data.ptr == plain.data.ptr and s.dtype == plain.dtype  # the same memory
    for conv in (float, int, bool):
        got, want = conv(s), conv(plain)
        assert type(got) is type(want) and got == want
    item = s.item()
    assert type(item) is type(plain.item()) and item == plain.item()
    assert len(reads) == 4
    assert all(c == (plain.data.ptr, gpu.stream, np.dtype(dtype).char) for c in reads)


def test_nan_and_errors_as_cupy(gpu, reads) -> None:
    s = scalar.as_scalar(dev(np.array(np.nan)))
    assert np.isnan(float(s)) and np.isnan(s.item())
    with pytest.raises(ValueError):
        int(s)


def test_where_the_c_read_does_not_apply(gpu, reads, monkeypatch: pytest.MonkeyPatch) -> None:
    half = scalar.as_scalar(dev(np.array(1.5, np.float16)))  # a kind the C read lacks
    assert float(half) == 1.5 and not reads
    other = dev(np.array(3.0))
    other.device_id = gpu.device + 1  # on another GPU than the current one
    assert float(scalar.as_scalar(other)) == 3.0 and not reads

    def refused(address: int, stream: int, kind: str) -> None:
        reads.append("refused")
        raise RuntimeError("cuMemcpyDtoHAsync failed: CUDA_ERROR_INVALID_CONTEXT (201)")

    monkeypatch.setattr(launch, "reader", lambda: refused)
    fastpath.clear()
    s = scalar.as_scalar(dev(np.array(4.0)))
    assert float(s) == 4.0 and s.item() == 4.0 and reads == ["refused", "refused"]
    monkeypatch.setattr(launch, "reader", lambda: None)  # no C extension
    fastpath.clear()
    assert int(s) == 4


def test_derived_arrays_are_plain(gpu, reads) -> None:
    s = scalar.as_scalar(dev(np.array(2.0, np.float32)))
    x = dev(np.arange(4, dtype=np.float32))
    for derived in (s + 1, x / s, s * x, s[...], s.reshape(1), s.copy(), -s):
        assert type(derived) is Dev
    np.testing.assert_array_equal(x / s, np.arange(4) / 2)


def test_as_scalar_leaves_everything_else(gpu) -> None:
    one_d = dev(np.arange(3.0))
    host = np.array(1.0)
    s = scalar.as_scalar(dev(np.array(1.0)))
    assert scalar.as_scalar(one_d) is one_d and scalar.as_scalar(host) is host
    assert scalar.as_scalar(None) is None and scalar.as_scalar(s) is s
    assert scalar.scalar_type() is scalar.scalar_type()

"""``DeviceScalar`` (``core/scalar.py``) on the CPU, with the counting fake CuPy: the same
numbers as its base class's methods, the C read used exactly where it applies (a stand-in
reader records its calls), CuPy's own methods everywhere else, and a type that never spreads
to arrays derived from it."""
from __future__ import annotations

import sys
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


@pytest.fixture
def copies(monkeypatch: pytest.MonkeyPatch, reads: list) -> Iterator[list]:
    """A stand-in for the C ``read_into``: records (address, stream, bytes), copies them."""
    calls: list = []

    def read_into(address: int, stream: int, out: np.ndarray) -> None:
        calls.append((address, stream, out.nbytes))
        np.ctypeslib.ctypes.memmove(out.ctypes.data, address, out.nbytes)

    monkeypatch.setattr(launch, "copier", lambda: read_into)
    fastpath.clear()
    yield calls
    fastpath.clear()


@pytest.mark.parametrize("shape, dtype", [((64,), np.float32), ((3, 5), np.int64), ((), np.float64),
                                          ((7,), np.bool_), ((2, 2, 2), np.float16)])
def test_get_copies_what_cupy_copies(gpu, copies, shape, dtype) -> None:
    a = scalar.empty(shape, dtype)
    assert type(a) is (scalar.scalar_type() if shape == () else scalar.array_type())
    a[...] = np.arange(int(np.prod(shape))).reshape(shape) % 3
    got, want = a.get(), np.array(a).view(np.ndarray)
    assert type(got) is np.ndarray and got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert copies == [(a.data.ptr, gpu.stream, a.nbytes)]


def test_get_where_the_c_copy_does_not_apply(gpu, copies, monkeypatch) -> None:
    small = scalar.zeros(4, np.int32)
    host = np.empty(4, np.int32)
    assert small.get(out=host) is host and not host.any()  # arguments: CuPy's get()
    np.testing.assert_array_equal(small.get(order="F"), np.zeros(4))
    big = scalar.empty(scalar.LIMIT // 8 + 1, np.float64)  # above the limit
    big[...] = 1.5
    assert big.get().sum() == 1.5 * big.size
    mem = sys.modules["cupy"].cuda.alloc(12)
    mem.memset_async(0, 12)
    mem.device_id = gpu.device + 1  # on another GPU than the current one
    other = scalar.on(mem, (3,), np.float32)
    assert not other.get().any()
    assert not copies

    def refused(address: int, stream: int, out: np.ndarray) -> None:
        copies.append("refused")
        raise RuntimeError("cuMemcpyDtoHAsync failed: CUDA_ERROR_INVALID_CONTEXT (201)")

    monkeypatch.setattr(launch, "copier", lambda: refused)
    fastpath.clear()
    ones = scalar.empty(2, np.int8)
    ones[...] = 1
    np.testing.assert_array_equal(ones.get(), [1, 1])
    assert copies == ["refused"]


def test_results_and_halves(gpu, copies) -> None:
    r = scalar.zeros(6, np.float64)
    r[...] = np.arange(6)
    lo, hi = scalar.halves(r, 2)
    assert type(lo) is type(hi) is scalar.array_type()
    np.testing.assert_array_equal(lo.get(), [0, 1])
    np.testing.assert_array_equal(hi.get(), [2, 3, 4, 5])
    hi[0] = -1  # the same memory
    assert r[2] == -1
    for derived in (r[1:], r + 1, r.reshape(2, 3), r.copy(), r.view(np.int64), r.T):
        assert type(derived) is Dev  # the type never spreads
    assert scalar.array_type() in scalar.RESULT_TYPES and scalar.scalar_type() in scalar.RESULT_TYPES
    assert issubclass(scalar.scalar_type(), scalar.array_type())


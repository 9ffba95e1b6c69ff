"""``copy_batched``'s few-buffer launch made by the C reader of the pairs (``core/devicepairs.c``
``device_pairs`` with a launch; no GPU: ``fake_cupy`` arrays, and launch.c's ``launch_1d``
replaced by a ctypes callback under the capsule's name that records each launch and runs the
table kernel's model). The reader launches exactly the batches ``plan.decide`` gives
``args_table`` (at most the count and byte bounds, at most the table's rows), with the
table's rows, the count, the kernel's handle, block and the caller's stream; anything else,
and a launch the driver refuses, comes back as the five-argument form's tuple (or None) for
the planned path, which then copies or raises."""
from __future__ import annotations

import ctypes
import sys

import numpy as np
import pytest
from fake_cupy import WORK
from test_fastpath_work_copies import _buffers, _same, gpu  # noqa: F401  # the fixture

import warplab
from warplab.families.memcpy import table_cuda, transfer

_LAUNCH_1D = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint,
                              ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p))
_NAME = b"warplab.core._launch.launch_1d"  # kept alive: the capsule holds its address
ROWS = table_cuda.MAX_BUFFERS
KERNEL, BLOCK = 0x1234, table_cuda.DEFINES["MEMCPY_TABLE_BLOCK"]


def _capsule(address: int, name: bytes = _NAME) -> object:
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
    return new(address, name, None)


class _Driver:
    """``launch_1d``: each launch recorded as (kernel, grid, block, stream, count, table rows
    of the first ``count`` buffers); the table kernel's bytes copied when ``rc`` is 0, the
    driver's refusal ``rc`` returned otherwise."""

    def __init__(self, rc: int = 0) -> None:
        self.rc, self.calls = rc, []
        self.fn = _LAUNCH_1D(self._launch)
        self.capsule = _capsule(ctypes.cast(self.fn, ctypes.c_void_p).value)

    def _launch(self, kernel, grid, block, stream, params) -> int:
        t = np.frombuffer(ctypes.string_at(params[0], 3 * 8 * ROWS), np.uint64).reshape(3, ROWS)
        n = ctypes.cast(params[1], ctypes.POINTER(ctypes.c_int))[0]
        self.calls.append((kernel, grid, block, stream, n, t[:, :n].tolist(),
                           bool(t[:, n:].any())))
        if self.rc == 0:
            for s, d, z in zip(*t[:, :n]):
                ctypes.memmove(int(d), int(s), int(z))
        return self.rc

    def launch(self, max_bytes: int = table_cuda.MAX_BYTES) -> tuple:
        return (self.capsule, max_bytes, KERNEL, BLOCK)


def _reader() -> None:
    if transfer._ext is None:
        pytest.skip(f"the C helper is not built: {transfer._WHY}")


def _pairs(srcs: list, dsts: list, *launch) -> object:
    return transfer._ext.device_pairs(sys.modules["cupy"].ndarray, dsts, srcs, 0, ROWS, *launch)


@pytest.mark.parametrize("sizes", [[64, 1000, 0, 3], [5] * ROWS, [table_cuda.MAX_BYTES] * 2,
                                   [0], [1]])
def test_the_reader_launches_what_the_table_takes(gpu, sizes: list[int]) -> None:
    _reader()
    drv = _Driver()
    srcs, dsts = _buffers(sizes)
    assert _pairs(srcs, dsts, drv.launch(), ROWS, 77) is True
    want = [[a.data.ptr for a in srcs], [a.data.ptr for a in dsts], sizes]
    assert drv.calls == [(KERNEL, len(sizes), BLOCK, 77, len(sizes), want, False)]
    _same(srcs, dsts)


@pytest.mark.parametrize("sizes,count,max_bytes", [
    ([5] * (ROWS + 1), ROWS + 8, table_cuda.MAX_BYTES),   # more buffers than the table's rows
    ([5] * 4, 3, table_cuda.MAX_BYTES),                   # more than the count bound
    ([64, 65], ROWS, 64),                                 # a buffer above the byte bound
    ([64, 64], ROWS, table_cuda.MAX_BYTES)])              # the driver refuses (rc below)
def test_what_the_reader_does_not_launch_comes_back_as_the_table(gpu, sizes, count,
                                                                  max_bytes) -> None:
    _reader()
    refuse = max_bytes == table_cuda.MAX_BYTES and count == ROWS
    drv = _Driver(rc=201 if refuse else 0)
    srcs, dsts = _buffers(sizes)
    got = _pairs(srcs, dsts, drv.launch(max_bytes), count, 77)
    assert got == _pairs(srcs, dsts) and isinstance(got, tuple)
    assert len(drv.calls) == (1 if refuse else 0)
    for d in dsts:
        assert (np.asarray(d) == 0xA5).all()  # nothing written


def test_the_reader_declines_and_refuses_as_without_a_launch(gpu) -> None:
    _reader()
    drv = _Driver()
    srcs, dsts = _buffers([64, 64])
    assert _pairs(srcs, [dsts[0], srcs[1]], drv.launch(), ROWS, 77) is None  # dst on a source
    assert _pairs(srcs, [dsts[0]], drv.launch(), ROWS, 77) is None          # lengths
    assert drv.calls == []
    with pytest.raises(ValueError):  # a capsule of another name
        _pairs(srcs, dsts, (_capsule(1, b"other"), 64, KERNEL, BLOCK), ROWS, 77)
    with pytest.raises(TypeError):
        _pairs(srcs, dsts, (drv.capsule, 64), ROWS, 77)
    assert drv.calls == []
    kept = object()  # items after the four are the caller's (what keeps the kernel loaded)
    assert _pairs(srcs, dsts, (*drv.launch(), kept), ROWS, 77) is True
    assert len(drv.calls) == 1


def test_a_warm_copy_batched_is_the_readers_launch_on_the_current_stream(gpu) -> None:
    """After the plan has prepared the launch on the device (here: put by hand, as
    ``table_cuda.prepared`` does where launches go from C), a batch the table takes is the
    reader's one launch; a ``variant``, another device or a refused launch take the plan."""
    _reader()
    drv = _Driver()
    srcs, dsts = _buffers([1024] * 8)
    warplab.copy_batched(srcs, dsts)  # plans (the fake launches from Python)
    table_cuda.IN_READER.put(0, drv.launch())
    for d in dsts:
        d[...] = 0xA5
    WORK.clear()
    with warplab.record_variants() as ran:
        warplab.copy_batched(srcs, dsts)
    assert [r.variant for r in ran] == ["args_table"] and "launch" not in WORK
    assert [c[:5] for c in drv.calls] == [(KERNEL, 8, BLOCK, gpu.stream, 8)]
    _same(srcs, dsts)
    for kw in ({"variant": "size_classes_tuned"}, {"device": "cuda"}):
        warplab.copy_batched(srcs, dsts, **kw)
        assert len(drv.calls) == 1
    drv.rc = 201  # a host thread with no current context: the plan's launch copies
    for d in dsts:
        d[...] = 0xA5
    with warplab.record_variants() as ran:
        warplab.copy_batched(srcs, dsts)
    assert [r.variant for r in ran] == ["args_table"] and len(drv.calls) == 2
    _same(srcs, dsts)
    gpu.device = 1  # no launch prepared on that device: the plan
    warplab.copy_batched(*_buffers([16] * 2))
    assert len(drv.calls) == 2

"""A counting stand-in for CuPy (no GPU): "device" arrays are NumPy memory of type
:class:`Dev`, and every call that costs host time on a real GPU is counted in
:data:`WORK` (allocations, memsets, host<->device and device copies, synchronisations, memory
queries, kernel launches), so a test can assert how much Python-level work a warm call does.

Counted names, each what one CuPy call does on a real GPU: ``empty`` (an allocation:
``empty``, ``cuda.alloc``, and the allocation inside ``zeros`` and ``Dev.copy``), ``zeros`` (the call to
``cupy.zeros`` itself, which CuPy implements as ``empty`` + one memset: both counted too),
``memset`` (``MemoryPointer.memset_async``, ``runtime.memsetAsync``), ``copy_kernel`` (CuPy's
elementwise copy kernel: ``Dev.copy``), ``d2d`` (``cudaMemcpyAsync`` device to device:
``copy_from_device_async``, ``runtime.memcpyAsync``), ``h2d`` (``asarray``/``array`` of host
data, ``memcpyAsync`` host to device), ``d2h`` (``get``/``asnumpy``, ``copy_to_host_async``,
``memcpyAsync`` device to host), ``sync`` (a stream's or an event's ``synchronize``),
``event`` (a new ``cupy.cuda.Event``), ``record`` (``Event.record``), ``wait`` (a stream's
``wait_event``), ``register``/``unregister`` (``cudaHostRegister``/``Unregister``; the
:class:`Gpu` keeps the registered ranges), ``pinned`` (a page-locked allocation), ``memGetInfo``, ``launch`` (kernels built by the tests call :func:`count_launch`), ``ufunc``
(CuPy's elementwise and reduction kernels: ``clip``, ``arange``, ``nonzero``, ``flatnonzero``,
``Dev.all``),
``linspace`` (``numpy.linspace``, patched by :func:`install`).
"""
from __future__ import annotations

import collections
import ctypes
import sys
import types
import weakref
from types import SimpleNamespace
from typing import Any

import numpy as np

WORK: collections.Counter = collections.Counter()


_GPU: list["Gpu"] = []  # the installed fake's device and stream
_POISON = [False]  # fresh allocations hold 0xA5 bytes (poison_allocations)


class PooledMemory:
    """CuPy's ``cuda.memory.PooledMemory``: one object per allocation, shared by the arrays
    (views) on it (``MemoryPointer.mem``)."""


class Memory:
    """CuPy's ``cuda.memory.Memory`` (a ``cudaMalloc`` outside the pool): not made here."""


_BLOCKS: dict[int, tuple[Any, PooledMemory]] = {}  # id(root array): (its weakref, its block)


def _block_of(arr: np.ndarray) -> PooledMemory:
    """The allocation object of an array's memory: that of the array that owns it (the end of
    the ``base`` chain), the same object for every view of it."""
    root = arr
    while isinstance(root.base, np.ndarray):
        root = root.base
    entry = _BLOCKS.get(id(root))
    if entry is None or entry[0]() is not root:
        entry = _BLOCKS[id(root)] = (weakref.ref(root), PooledMemory())
    return entry[1]


class _Pointer:
    """CuPy's ``MemoryPointer`` of a fake array: its address, device and allocation
    (``mem``), memsets and copies (counted, and done on the host memory that stands for the
    device's)."""

    def __init__(self, arr: np.ndarray, offset: int = 0) -> None:
        self.arr = arr  # keeps the memory alive, as CuPy's pointer keeps its allocation
        self.mem = _block_of(arr)
        self.ptr = arr.__array_interface__["data"][0] + offset
        self.device_id = getattr(arr, "device_id", None)
        if self.device_id is None:
            self.device_id = _GPU[-1].device if _GPU else 0

    def __add__(self, offset: int) -> "_Pointer":
        base = self.arr.__array_interface__["data"][0]
        p = _Pointer(self.arr, self.ptr - base + offset)
        p.device_id, p.mem = self.device_id, self.mem
        return p

    def memset_async(self, value: int, size: int, stream: Any = None) -> None:
        WORK["memset"] += 1
        ctypes.memset(self.ptr, value, size)

    def copy_from_device_async(self, src: "_Pointer", size: int, stream: Any = None) -> None:
        WORK["d2d"] += 1
        ctypes.memmove(self.ptr, src.ptr, size)

    def copy_from_device(self, src: "_Pointer", size: int) -> None:
        WORK["d2d"] += 1
        ctypes.memmove(self.ptr, src.ptr, size)

    def copy_to_host_async(self, dst: int, size: int, stream: Any = None) -> None:
        WORK["d2h"] += 1
        ctypes.memmove(dst, self.ptr, size)


class Dev(np.ndarray):
    """NumPy memory that warplab takes for a CuPy array (``type(x) is cupy.ndarray``). A
    ``device_id`` attribute set on one puts it on another GPU. ``Dev(shape, dtype, memptr)``
    is CuPy's constructor on a pointer: an array on that memory."""

    def __new__(cls, shape: Any, dtype: Any = float, memptr: "_Pointer | None" = None) -> "Dev":
        if memptr is None:  # an allocation from the pool (``cupy.empty`` is this)
            WORK["empty"] += 1
            a = np.empty(shape, dtype).view(cls)
            if _POISON[0]:
                a.reshape(-1).view(np.uint8)[...] = 0xA5
            return a
        dt = np.dtype(dtype)
        n = int(np.prod(shape, dtype=np.int64))
        owner = memptr.arr
        if owner.flags.c_contiguous:  # a view of the allocation: NumPy keeps it alive
            flat = owner.reshape(-1).view(np.uint8)
            offset = memptr.ptr - flat.__array_interface__["data"][0]
            a = np.ndarray(shape, dt, buffer=flat, offset=offset).view(cls)
        else:
            raw = (ctypes.c_char * max(1, n * dt.itemsize)).from_address(memptr.ptr)
            a = np.frombuffer(raw, dt, n).reshape(shape).view(cls)
        a._memptr = memptr  # the allocation lives while the array does
        return a

    @property
    def data(self) -> _Pointer:  # type: ignore[override]  # CuPy's MemoryPointer
        p = _Pointer(self)
        on = getattr(self, "_memptr", None)  # an array on a pointer: the pointer's device
        if on is not None:                     # and allocation
            p.device_id, p.mem = on.device_id, on.mem
        return p

    @property
    def _c_contiguous(self) -> bool:
        return bool(self.flags.c_contiguous)

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": self.dtype.str, "version": 3,
                "strides": self.strides, "data": (self.__array_interface__["data"][0], False)}

    def get(self, stream: Any = None, order: str = "C", out: Any = None,
            blocking: bool = True) -> np.ndarray:
        WORK["d2h"] += 1
        if out is not None:
            out[...] = np.asarray(self)
            return out
        return np.array(self, order=order).view(np.ndarray)

    def copy(self, order: str = "C") -> "Dev":  # type: ignore[override]
        WORK["empty"] += 1
        WORK["copy_kernel"] += 1
        return np.array(self, order=order).view(Dev)

    def all(self, *a: Any, **k: Any) -> Any:  # type: ignore[override]  # a reduction kernel
        WORK["ufunc"] += 1
        return np.asarray(super().all(*a, **k)).view(Dev)

    def __bool__(self) -> bool:  # a 0-d device value read on the host
        WORK["d2h"] += 1
        WORK["sync"] += 1
        return bool(np.asarray(self).view(np.ndarray))


def dev(a: Any, dtype: Any = None) -> Dev:
    """A "device" copy of host data (not counted: the tests' inputs)."""
    return np.array(a, dtype=dtype).view(Dev)


def count_launch() -> None:
    WORK["launch"] += 1


class _Stream:
    def __init__(self, ptr: int = 12, non_blocking: bool = False) -> None:
        self.ptr = ptr

    def synchronize(self) -> None:
        WORK["sync"] += 1

    def wait_event(self, event: Any) -> None:
        WORK["wait"] += 1


class CUDARuntimeError(RuntimeError):
    """CuPy's ``cupy.cuda.runtime.CUDARuntimeError``."""


def _host_register(gpu: "Gpu", address: int, size: int, flags: int) -> None:
    """``cudaHostRegister``: refused when ``gpu.refuse_register`` says so or when a page of the
    range is registered already (as the driver does)."""
    WORK["register"] += 1
    first, last = address // 4096, (address + max(1, size) - 1) // 4096
    if gpu.refuse_register(address, size) or any(
            first <= b and a <= last for a, b in gpu.registered.values()):
        raise CUDARuntimeError("cudaErrorHostMemoryAlreadyRegistered")
    gpu.registered[address] = (first, last)


def _host_unregister(gpu: "Gpu", address: int) -> None:
    WORK["unregister"] += 1
    if gpu.registered.pop(address, None) is None:
        raise CUDARuntimeError("cudaErrorHostMemoryNotRegistered")


def _no_pointer(address: int) -> Any:  # plain host memory: CUDA does not know it
    raise CUDARuntimeError("cudaErrorInvalidValue")


class _Event:
    def __init__(self, block: bool = False, disable_timing: bool = False) -> None:
        WORK["event"] += 1

    def record(self, stream: Any = None) -> None:
        WORK["record"] += 1

    def synchronize(self) -> None:
        WORK["sync"] += 1


def _memcpy_async(dst: int, src: int, size: int, kind: int, stream: int) -> None:
    WORK[{1: "h2d", 2: "d2h"}.get(kind, "d2d")] += 1
    ctypes.memmove(dst, src, size)


def _memset_async(ptr: int, value: int, size: int, stream: int) -> None:
    WORK["memset"] += 1
    ctypes.memset(ptr, value, size)


def _pinned(size: int) -> bytearray:
    WORK["pinned"] += 1
    return bytearray(size)


class Gpu:
    """The device and stream the fake reports (tests switch them)."""

    def __init__(self) -> None:
        self.device, self.stream = 0, 11
        self.registered: dict[int, tuple[int, int]] = {}  # address -> (first, last page)
        self.refuse_register = lambda address, size: False

    def module(self) -> types.ModuleType:
        m = types.ModuleType("cupy")
        m.ndarray = Dev

        def empty(shape: Any, dtype: Any = float) -> Dev:
            return Dev(shape, dtype)

        def zeros(shape: Any, dtype: Any = float) -> Dev:  # CuPy: empty + memset_async
            WORK["zeros"] += 1
            a = empty(shape, dtype)
            a.data.memset_async(0, a.nbytes)
            return a

        def asarray(a: Any, dtype: Any = None) -> Dev:
            if isinstance(a, Dev) and (dtype is None or np.dtype(dtype) == a.dtype):
                return a
            WORK["h2d"] += 1
            return np.array(a, dtype=dtype).view(Dev)

        def asnumpy(a: Any) -> np.ndarray:
            WORK["d2h"] += 1
            return np.array(a).view(np.ndarray)

        m.empty, m.zeros, m.asarray, m.array, m.asnumpy = empty, zeros, asarray, asarray, asnumpy
        m.ascontiguousarray = lambda a, dtype=None: np.ascontiguousarray(a, dtype).view(Dev)
        m.may_share_memory = lambda a, b: np.may_share_memory(a, b)

        def ufunc(fn: Any) -> Any:  # CuPy's elementwise kernels (one launch each)
            def run(*a: Any, **k: Any) -> Any:
                WORK["ufunc"] += 1
                r = fn(*a, **k)
                return r.view(Dev) if isinstance(r, np.ndarray) else r
            return run

        m.clip, m.arange, m.nonzero = ufunc(np.clip), ufunc(np.arange), ufunc(np.nonzero)
        m.flatnonzero = ufunc(np.flatnonzero)
        m.concatenate = lambda xs, axis=0: np.concatenate([np.asarray(x) for x in xs],
                                                         axis=axis).view(Dev)
        m.lib = SimpleNamespace(stride_tricks=SimpleNamespace(
            as_strided=lambda x, shape, strides: np.lib.stride_tricks.as_strided(
                x, shape, strides).view(Dev)))

        def mem_get_info() -> tuple[int, int]:
            WORK["memGetInfo"] += 1
            return 1 << 34, 1 << 35

        m.cuda = SimpleNamespace(
            runtime=SimpleNamespace(getDevice=lambda: self.device, memGetInfo=mem_get_info,
                                    getDeviceProperties=lambda d: {
                                        "multiProcessorCount": 4, "major": 9, "minor": 0,
                                        "sharedMemPerBlock": 48 << 10,
                                        "sharedMemPerBlockOptin": 227 << 10},
                                    memcpyAsync=_memcpy_async, memsetAsync=_memset_async,
                                    hostRegister=lambda a, n, f: _host_register(self, a, n, f),
                                    hostUnregister=lambda a: _host_unregister(self, a),
                                    pointerGetAttributes=_no_pointer,
                                    CUDARuntimeError=CUDARuntimeError,
                                    memcpyHostToDevice=1, memcpyDeviceToHost=2,
                                    memcpyDeviceToDevice=3, memcpyDefault=4),
            Device=lambda *a: SimpleNamespace(id=self.device, compute_capability="90"),
            get_current_stream=lambda: _Stream(self.stream), Stream=_Stream,
            get_elapsed_time=lambda start, stop: 0.0,
            alloc_pinned_memory=_pinned, Event=_Event,
            alloc=lambda size: m.empty(size, np.uint8).data,  # memory.alloc: a pointer
            memory=SimpleNamespace(PooledMemory=PooledMemory, Memory=Memory))
        m.get_default_memory_pool = lambda: SimpleNamespace(free_bytes=lambda: 0)
        return m


def install(monkeypatch: Any) -> Gpu:
    """Put a counting fake CuPy (and ``cupyx.empty_pinned``) in ``sys.modules`` (and count
    ``numpy.linspace``); returns the :class:`Gpu` whose device and stream the fake reports."""
    g = Gpu()
    monkeypatch.setitem(sys.modules, "cupy", g.module())
    monkeypatch.setattr(sys.modules[__name__], "_GPU", [g])

    def empty_pinned(shape: Any, dtype: Any = float) -> np.ndarray:
        WORK["pinned"] += 1
        return np.empty(shape, dtype)

    x = types.ModuleType("cupyx")
    x.empty_pinned = empty_pinned
    monkeypatch.setitem(sys.modules, "cupyx", x)
    linspace = np.linspace

    def counted(*a: Any, **k: Any) -> Any:
        WORK["linspace"] += 1
        return linspace(*a, **k)

    monkeypatch.setattr(np, "linspace", counted)
    WORK.clear()
    return g


def poison_allocations(monkeypatch: Any) -> None:
    """Fresh fake allocations (``cupy.empty``, ``ndarray(shape, dtype)``, ``cuda.alloc``) hold
    0xA5 bytes, as stale device memory would: a result that needs zeroing is then wrong
    unless something zeroed it."""
    monkeypatch.setattr(sys.modules[__name__], "_POISON", [True])

"""A counting stand-in for CuPy (no GPU): "device" arrays are NumPy memory of type
:class:`Dev`, and every call that costs host time on a real GPU is counted in
:data:`WORK` (allocations, host<->device copies, synchronisations, memory queries, kernel
launches), so a test can assert how much Python-level work a warm call does.

Counted names: ``empty``, ``zeros``, ``h2d`` (``asarray``/``array`` of host data), ``d2d``
(``asarray`` of a device array is free; ``Dev.copy``), ``d2h`` (``get``/``asnumpy``), ``sync``
(a stream's ``synchronize``), ``memGetInfo``, ``launch`` (kernels built by the tests call
:func:`count_launch`), ``linspace`` (``numpy.linspace``, patched by :func:`install`).
"""
from __future__ import annotations

import collections
import sys
import types
from types import SimpleNamespace
from typing import Any

import numpy as np

WORK: collections.Counter = collections.Counter()


class Dev(np.ndarray):
    """NumPy memory that warplab takes for a CuPy array (``type(x) is cupy.ndarray``)."""

    @property
    def data(self) -> SimpleNamespace:  # type: ignore[override]  # CuPy's MemoryPointer
        return SimpleNamespace(ptr=self.__array_interface__["data"][0])

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": self.dtype.str, "version": 3,
                "strides": self.strides, "data": (self.__array_interface__["data"][0], False)}

    def get(self) -> np.ndarray:
        WORK["d2h"] += 1
        return np.array(self).view(np.ndarray)

    def copy(self, order: str = "C") -> "Dev":  # type: ignore[override]
        WORK["d2d"] += 1
        return np.array(self, order=order).view(Dev)


def dev(a: Any, dtype: Any = None) -> Dev:
    """A "device" copy of host data (not counted: the tests' inputs)."""
    return np.array(a, dtype=dtype).view(Dev)


def count_launch() -> None:
    WORK["launch"] += 1


class _Stream:
    def __init__(self, ptr: int) -> None:
        self.ptr = ptr

    def synchronize(self) -> None:
        WORK["sync"] += 1


class Gpu:
    """The device and stream the fake reports (tests switch them)."""

    def __init__(self) -> None:
        self.device, self.stream = 0, 11

    def module(self) -> types.ModuleType:
        m = types.ModuleType("cupy")
        m.ndarray = Dev

        def empty(shape: Any, dtype: Any = float) -> Dev:
            WORK["empty"] += 1
            return np.empty(shape, dtype).view(Dev)

        def zeros(shape: Any, dtype: Any = float) -> Dev:
            WORK["zeros"] += 1
            return np.zeros(shape, dtype).view(Dev)

        def asarray(a: Any, dtype: Any = None) -> Dev:
            if type(a) is Dev and (dtype is None or np.dtype(dtype) == a.dtype):
                return a
            WORK["h2d"] += 1
            return np.array(a, dtype=dtype).view(Dev)

        def asnumpy(a: Any) -> np.ndarray:
            WORK["d2h"] += 1
            return np.array(a).view(np.ndarray)

        m.empty, m.zeros, m.asarray, m.array, m.asnumpy = empty, zeros, asarray, asarray, asnumpy
        m.ascontiguousarray = lambda a: np.ascontiguousarray(a).view(Dev)
        m.concatenate = lambda xs: np.concatenate([np.asarray(x) for x in xs]).view(Dev)
        m.lib = SimpleNamespace(stride_tricks=SimpleNamespace(
            as_strided=lambda x, shape, strides: np.lib.stride_tricks.as_strided(
                x, shape, strides).view(Dev)))

        def mem_get_info() -> tuple[int, int]:
            WORK["memGetInfo"] += 1
            return 1 << 34, 1 << 35

        m.cuda = SimpleNamespace(
            runtime=SimpleNamespace(getDevice=lambda: self.device, memGetInfo=mem_get_info,
                                    getDeviceProperties=lambda d: {"multiProcessorCount": 4}),
            Device=lambda *a: SimpleNamespace(id=self.device),
            get_current_stream=lambda: _Stream(self.stream))
        return m


def install(monkeypatch: Any) -> Gpu:
    """Put a counting fake CuPy in ``sys.modules`` (and count ``numpy.linspace``); returns the
    :class:`Gpu` whose device and stream the fake reports."""
    g = Gpu()
    monkeypatch.setitem(sys.modules, "cupy", g.module())
    linspace = np.linspace

    def counted(*a: Any, **k: Any) -> Any:
        WORK["linspace"] += 1
        return linspace(*a, **k)

    monkeypatch.setattr(np, "linspace", counted)
    WORK.clear()
    return g

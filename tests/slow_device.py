"""A fake CuPy whose device is slow: every operation on a "device" array (:class:`Dev`, NumPy
memory) computes at once but counts as queued device work that stays unfinished until the
device is synchronised, as a real GPU's kernels finish after the call that launched them
returns (this device is slow without end: no amount of waiting finishes its work, so a check
cannot pass by luck on a loaded host). ``Dev.device.synchronize()`` finishes every piece of
work queued (``cudaDeviceSynchronize``); reading a value on the host (``get``, ``bool``,
``float``) does too. :func:`unfinished` counts the work not finished yet, so a test can ask
whether something that reported "done" really was.

What counts as work: NumPy ufuncs and functions on ``Dev`` arrays (arithmetic, reductions,
``concatenate``, ``where``...), ``astype`` copies, the module's functions (``cupy.zeros``,
``cupy.sum``...), and the warplab functions :func:`install` replaces (computed by the NumPy
backend, their results ``Dev``). Views (indexing, ``reshape``) are not work.
"""
from __future__ import annotations

import threading
import types
from typing import Any

import numpy as np

_LOCK = threading.Lock()
_COUNTS = {"queued": 0, "finished": 0}  # pieces of work queued, and finished by a sync


def queue_work() -> None:
    """Queue one piece of device work (unfinished until the next synchronisation)."""
    with _LOCK:
        _COUNTS["queued"] += 1


def unfinished() -> int:
    """How many queued pieces of work have not finished yet."""
    with _LOCK:
        return _COUNTS["queued"] - _COUNTS["finished"]


def queued() -> int:
    """How many pieces of work were queued since :func:`reset`."""
    with _LOCK:
        return _COUNTS["queued"]


def reset() -> None:
    with _LOCK:
        _COUNTS.update(queued=0, finished=0)


def synchronize() -> None:
    """Finish every piece of work queued so far."""
    with _LOCK:
        _COUNTS["finished"] = _COUNTS["queued"]


class _Device:
    id = 0

    def synchronize(self) -> None:
        synchronize()


def host(a: Any) -> Any:
    """``a`` with every Dev in it (lists, tuples, dicts) as a NumPy view of the same memory."""
    if isinstance(a, Dev):
        return a.view(np.ndarray)
    if isinstance(a, (list, tuple)):
        return type(a)(host(x) for x in a)
    if isinstance(a, dict):
        return {k: host(v) for k, v in a.items()}
    return a


def on_device(r: Any) -> Any:
    """Results as Dev arrays (0-d for NumPy scalars, as CuPy's reductions give)."""
    if isinstance(r, np.ndarray):
        return r.view(Dev)
    if isinstance(r, np.generic):
        return np.asarray(r).view(Dev)
    if isinstance(r, tuple) and not hasattr(r, "_fields"):
        return tuple(on_device(x) for x in r)
    if isinstance(r, tuple):  # a named tuple (CorrPairs)
        return type(r)(*(on_device(x) for x in r))
    if isinstance(r, list):
        return [on_device(x) for x in r]
    return r


def kernel(fn: Any) -> Any:
    """``fn`` as a device operation: run on host views, the result a Dev, one piece of work
    queued."""
    def run(*args: Any, **kwargs: Any) -> Any:
        out = kwargs.get("out")
        r = fn(*host(args), **host(kwargs))
        queue_work()
        if isinstance(out, tuple):  # a ufunc's out=: the arrays given
            return out[0] if len(out) == 1 else out
        return out if out is not None else on_device(r)
    return run


class Dev(np.ndarray):
    """A "device" array: NumPy memory that the fake ``cupy.ndarray`` is."""

    @property
    def device(self) -> _Device:
        return _Device()

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return kernel(getattr(ufunc, method))(*inputs, **kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return kernel(func)(*args, **kwargs)

    def astype(self, dtype: Any, order: Any = "K", casting: Any = "unsafe",  # type: ignore[override]
               subok: bool = True, copy: bool = True) -> Any:
        if not copy and np.dtype(dtype) == self.dtype:
            return self
        return kernel(np.ndarray.astype)(self, dtype, order, casting)

    def get(self) -> np.ndarray:
        synchronize()
        return self.view(np.ndarray).copy()

    def __bool__(self) -> bool:
        synchronize()
        return bool(self.view(np.ndarray))

    def __float__(self) -> float:
        synchronize()
        return float(self.view(np.ndarray))

    def __int__(self) -> int:
        synchronize()
        return int(self.view(np.ndarray))


def dev(a: Any) -> Dev:
    """Host data as a Dev array (no work: the test's input)."""
    return np.array(a).view(Dev)


def module() -> types.ModuleType:
    """The fake ``cupy``: ``ndarray`` is :class:`Dev`, every other NumPy function a kernel."""
    m = types.ModuleType("cupy")
    m.ndarray = Dev  # type: ignore[attr-defined]

    def attr(name: str) -> Any:
        value = getattr(np, name)
        return kernel(value) if callable(value) and not isinstance(value, type) else value

    def asnumpy(a: Any) -> np.ndarray:  # a device-to-host copy waits for the device
        synchronize()
        return np.array(host(a))

    m.__getattr__ = attr  # type: ignore[attr-defined]  # PEP 562
    m.asnumpy = asnumpy  # type: ignore[attr-defined]
    return m


#: warplab's functions that warplab.dask calls on chunks (replaced by install()).
WARPLAB_CALLS = ("sum", "min", "max", "mean", "var", "series_stats", "byte_histogram",
                 "histogram", "bincount")


def install(monkeypatch: Any) -> None:
    """The fake as ``cupy``, and warplab's chunk functions as device operations on Dev input
    (the NumPy backend computes them; host input runs as before)."""
    import sys

    import warplab

    monkeypatch.setitem(sys.modules, "cupy", module())
    for name in WARPLAB_CALLS:
        real = getattr(warplab, name)

        def call(*args: Any, _real: Any = real, **kwargs: Any) -> Any:
            if not any(isinstance(a, Dev) for a in (*args, *kwargs.values())):
                return _real(*args, **kwargs)
            return kernel(_real)(*args, **{**kwargs, "device": "cpu"})

        monkeypatch.setattr(warplab, name, call)
    reset()

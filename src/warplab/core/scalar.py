"""0-d device results that the host reads at the cost of one copy: :class:`DeviceScalar`.

``float(warplab.sum(x))`` is the call people make most. CuPy's ``float()`` of a 0-d array is
``float(a.get())``: a new NumPy array, a switch to the array's device and back, and a
synchronous ``cudaMemcpy`` into pageable memory, about 6 us more than the copy itself on the
session-11 H100 host (benchmarks/NOTES.md). The whole-array reductions (``sum``, ``mean``,
``min``, ``max``, ``reduce`` with ``axis=None``) therefore return their 0-d device results as a
``DeviceScalar``: a ``cupy.ndarray`` subclass (CuPy supports subclassing) that differs from
its base in four methods only. ``float()``, ``int()``, ``bool()`` and ``item()`` read the
element by the C extension's ``read`` (``core/launch.c``): one ``cuMemcpyDtoHAsync`` on the
current stream and one synchronisation of that stream, the same ordering CuPy's read has.
They give exactly what CuPy's give (Python numbers of NumPy's ``item()``), and fall back to
CuPy's own methods where the C read does not apply: no C extension (``WARPLAB_C_LAUNCH=0``),
an element kind it does not know, an array on another device than the current one, or a
driver error (a host thread with no current context; an earlier kernel's fault, which CuPy's
read then raises).

The type does not spread: any array CuPy derives from a ``DeviceScalar`` (``x / s``,
``s + 1``, a view, a copy) is a plain ``cupy.ndarray`` (``__array_finalize__`` gives it the
base class back). ``isinstance(s, cupy.ndarray)`` holds; ``type(s) is cupy.ndarray`` does not,
and neither does a test of the type's module name (``warplab.core.scalar``): recognise CuPy
arrays with ``isinstance`` (as warplab's own code does).
"""
from __future__ import annotations

import sys
from typing import Any

from . import fastpath, launch

#: NumPy type characters the C read converts (core/launch.c).
KINDS = frozenset("bBhHiIlLqQfd?")

#: The C read (False where there is none), looked up once: ``launch.reader()`` reads the
#: environment (``WARPLAB_C_LAUNCH``), about 0.5-1 us; ``fastpath.clear()`` forgets it.
_READER = fastpath.PlanCache("scalar.reader", maxsize=1)

_TYPE: dict[int, type] = {}  # id(cupy.ndarray) -> its DeviceScalar subclass


def scalar_type() -> type:
    """The ``DeviceScalar`` class of the imported CuPy (built on first use)."""
    base = sys.modules["cupy"].ndarray
    t = _TYPE.get(id(base))
    if t is None:
        t = _TYPE.setdefault(id(base), _make(base))
    return t


def _read(a: Any) -> Any:
    """The element of 0-d ``a`` as a Python number by the C read; None where it does not
    apply (the caller then uses CuPy's method)."""
    fn = _READER.get(0)
    if fn is None:
        fn = _READER.put(0, launch.reader() or False)
    if not fn or a.ndim != 0 or a.dtype.char not in KINDS:
        return None
    cuda = sys.modules["cupy"].cuda
    data = a.data
    if data.device_id != cuda.runtime.getDevice():
        return None
    try:
        return fn(data.ptr, cuda.get_current_stream().ptr, a.dtype.char)
    except RuntimeError:
        return None


def _make(base: type) -> type:
    class DeviceScalar(base):  # type: ignore[misc, valid-type]
        """A 0-d ``cupy.ndarray`` whose ``float()``, ``int()``, ``bool()`` and ``item()``
        read the element through ``core/launch.c`` (module ``warplab.core.scalar``)."""

        __slots__ = ()

        def __array_finalize__(self, obj: Any) -> None:
            if isinstance(obj, DeviceScalar):  # derived from one: a plain array
                self.__class__ = base

        def item(self) -> Any:
            v = _read(self)
            return base.item(self) if v is None else v

        def __float__(self) -> float:
            v = _read(self)
            return base.__float__(self) if v is None else float(v)

        def __int__(self) -> int:
            v = _read(self)
            return base.__int__(self) if v is None else int(v)

        def __bool__(self) -> bool:
            v = _read(self)
            return base.__bool__(self) if v is None else bool(v)

    DeviceScalar.__module__ = __name__
    DeviceScalar.__qualname__ = "DeviceScalar"  # found by name: this module's __getattr__
    return DeviceScalar


def __getattr__(name: str) -> Any:
    """``warplab.core.scalar.DeviceScalar``: the class of the imported CuPy (CuPy imported
    here if it is not yet)."""
    if name == "DeviceScalar":
        import cupy  # noqa: F401  # the class subclasses its ndarray

        return scalar_type()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def as_scalar(r: Any) -> Any:
    """``r`` as a ``DeviceScalar`` when it is a plain 0-d CuPy array (the same memory, no
    copy); anything else unchanged."""
    cupy = sys.modules.get("cupy")
    if cupy is None or type(r) is not cupy.ndarray or r.ndim != 0:
        return r
    return scalar_type()((), r.dtype, r.data)

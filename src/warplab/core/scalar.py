"""Device results that the host reads at the cost of one copy: :class:`DeviceScalar` (0-d)
and :class:`DeviceArray` (small arrays), and the allocation helpers that make them.

``float(warplab.sum(x))`` is the call people make most. CuPy's ``float()`` of a 0-d array is
``float(a.get())``, and ``get()`` makes a NumPy array, switches to the array's device and back
and copies with a synchronous ``cudaMemcpy`` into pageable memory: about 6 us more than the
copy itself on an H100 host (benchmarks/NOTES.md), for a 64-element result as for
a scalar. So warplab's results on device input are CuPy arrays of two subclasses (CuPy
supports subclassing) that differ from their base in a few methods only:

* :class:`DeviceArray` (what :func:`empty`, :func:`zeros` and :func:`on` make): ``get()`` with
  no arguments (and ``cupy.asnumpy(a)``) of a C-contiguous array of at most :data:`LIMIT`
  bytes on the current device copies by the C extension's ``read_into`` (``core/readback.c``,
  built with the package): one ``cuMemcpyDtoHAsync`` on the current stream into the host
  thread's page-locked staging buffer, one synchronisation of that stream (the same ordering
  CuPy's ``get()`` has), one ``memcpy`` into a new NumPy array of the same shape and dtype.
* :class:`DeviceScalar` (0-d; the whole-array reductions' results): a ``DeviceArray`` whose
  ``float()``, ``int()``, ``bool()`` and ``item()`` read the element by ``read``: exactly what
  CuPy's give (Python numbers of NumPy's ``item()``).

Where the C copy does not apply, the methods are CuPy's own: no C extension (not built, or
``WARPLAB_C_LAUNCH=0``), ``get()`` with arguments or of a larger array, an element kind
``read`` does not know, an array on another device than the current one, or a
driver error (a host thread with no current context; an earlier kernel's fault, which CuPy's
read then raises).

The types do not spread: any array CuPy derives from one (``x / s``, ``s + 1``, a view, a
slice, a copy) is a plain ``cupy.ndarray`` (``__array_finalize__`` gives it the base class
back). ``isinstance(s, cupy.ndarray)`` holds; ``type(s) is cupy.ndarray`` does not, and
neither does a test of the type's module name (``warplab.core.scalar``): recognise CuPy arrays
with ``isinstance`` (as warplab's own code does). The short paths, which take exactly CuPy's
arrays, take these too: ``type(a) is cupy.ndarray or type(a) in RESULT_TYPES``.
"""
from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np

from warplab.core import fastpath, launch

#: NumPy type characters the C read converts (core/readback.c).
KINDS = frozenset("bBhHiIlLqQfd?")

#: The largest array ``get()`` copies through the staging buffer (the buffer stays allocated,
#: page-locked, for the host thread's life); larger arrays take CuPy's ``get()``.
LIMIT = 1 << 16

#: The C functions (``read``, ``read_into``), or False where there are none, looked up once:
#: ``launch.reader()`` asks the extension whether its driver is open, a few lookups and a C
#: call; ``fastpath.clear()`` forgets them.
_READER = fastpath.PlanCache("scalar.reader", maxsize=1)

#: The classes of this module, for every CuPy they were made for (the short paths' type test).
RESULT_TYPES: set[type] = set()

_TYPES: dict[int, tuple[type, type]] = {}  # id(cupy.ndarray) -> (DeviceArray, DeviceScalar)
_LAST: list = [(None, None)]  # (the last CuPy's ndarray, its types): one lookup fewer
_LOCK = threading.Lock()


def _types() -> tuple[type, type]:
    base = sys.modules["cupy"].ndarray
    last, types = _LAST[0]
    if last is base:
        return types
    t = _TYPES.get(id(base))
    if t is None:
        with _LOCK:
            t = _TYPES.get(id(base))
            if t is None:
                t = _TYPES[id(base)] = _make(base)
                RESULT_TYPES.update(t)
    _LAST[0] = (base, t)
    return t


def array_type() -> type:
    """The ``DeviceArray`` class of the imported CuPy (built on first use)."""
    return _types()[0]


def scalar_type() -> type:
    """The ``DeviceScalar`` class of the imported CuPy (built on first use)."""
    return _types()[1]


def _functions() -> Any:
    fns = _READER.get(0)
    if fns is None:
        read = launch.reader()
        fns = _READER.put(0, (read, launch.copier()) if read is not None else False)
    return fns


def _source(a: Any) -> tuple[int, int] | None:
    """(device address, current stream handle) of ``a`` for the C read and copy; None where
    ``a`` is on another device than the current one (CuPy's methods switch to it)."""
    cuda = sys.modules["cupy"].cuda
    data = a.data
    if data.device_id != cuda.runtime.getDevice():
        return None
    return data.ptr, cuda.get_current_stream().ptr


def _read(a: Any) -> Any:
    """The element of 0-d ``a`` as a Python number by the C read; None where it does not
    apply (the caller then uses CuPy's method)."""
    fns = _functions()
    if not fns or a.ndim != 0 or a.dtype.char not in KINDS:
        return None
    src = _source(a)
    if src is None:
        return None
    try:
        return fns[0](*src, a.dtype.char)
    except RuntimeError:
        return None


def _get(a: Any) -> Any:
    """A NumPy copy of ``a`` by the C copy; None where it does not apply (the caller then
    uses CuPy's ``get()``)."""
    fns = _functions()
    n = a.nbytes
    if not fns or fns[1] is None or not n or n > LIMIT or not a._c_contiguous:
        return None
    src = _source(a)
    if src is None:
        return None
    host = np.empty(a.shape, a.dtype)
    try:
        fns[1](*src, host)
    except RuntimeError:
        return None
    return host


def _make(base: Any) -> tuple[type, type]:
    class DeviceArray(base):
        """A ``cupy.ndarray`` whose ``get()`` copies through ``core/readback.c`` (module
        ``warplab.core.scalar``)."""

        __slots__ = ()

        def __array_finalize__(self, obj: Any) -> None:
            if isinstance(obj, DeviceArray):  # derived from one: a plain array
                self.__class__ = base

        def get(self, stream: Any = None, order: str = "C", out: Any = None,
                blocking: bool = True) -> Any:
            if stream is None and order == "C" and out is None and blocking is True:
                h = _get(self)
                if h is not None:
                    return h
                return base.get(self)
            return base.get(self, stream=stream, order=order, out=out, blocking=blocking)

    class DeviceScalar(DeviceArray):
        """A 0-d ``cupy.ndarray`` whose ``float()``, ``int()``, ``bool()`` and ``item()``
        read the element through ``core/readback.c`` (module ``warplab.core.scalar``)."""

        __slots__ = ()

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

    for cls in (DeviceArray, DeviceScalar):
        cls.__module__ = __name__
        cls.__qualname__ = cls.__name__  # found by name: this module's __getattr__
    return DeviceArray, DeviceScalar


def __getattr__(name: str) -> Any:
    """``warplab.core.scalar.DeviceScalar`` and ``DeviceArray``: the classes of the imported
    CuPy (CuPy imported here if it is not yet)."""
    if name in ("DeviceScalar", "DeviceArray"):
        import cupy  # noqa: F401  # the classes subclass its ndarray

        return scalar_type() if name == "DeviceScalar" else array_type()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def result_type(shape: Any) -> type:
    """The class of a result of ``shape`` as :func:`empty` makes it (``DeviceScalar`` for
    ``()``, else ``DeviceArray``) for the imported CuPy: a plan keeps it."""
    t = _types()
    return t[1] if shape == () else t[0]


def empty(shape: Any, dtype: Any) -> Any:
    """A new C-contiguous device array from CuPy's memory pool (what ``cupy.empty`` does): a
    ``DeviceScalar`` of shape ``()``, else a ``DeviceArray``. Every result the families
    allocate on the device comes from here or :func:`zeros` / :func:`on`."""
    t = _types()
    return (t[1] if shape == () else t[0])(shape, dtype)


def zeros(shape: Any, dtype: Any) -> Any:
    """:func:`empty` and one ``cudaMemsetAsync`` on the current stream: what ``cupy.zeros``
    does (no fill kernel), without its Python frame."""
    a = empty(shape, dtype)
    a.data.memset_async(0, a.nbytes)
    return a


def on(memptr: Any, shape: Any, dtype: Any) -> Any:
    """A result on existing device memory (a CuPy ``MemoryPointer``, which the array keeps
    alive): one allocation for several results (``histogram``'s counts and edges)."""
    t = _types()
    return (t[1] if shape == () else t[0])(shape, dtype, memptr)


class Slab:
    """Results carved from one device allocation of ``size`` bytes, each rounded up to a
    multiple of ``step`` (16 or more: the base of every result stays 16-byte aligned): one
    memory-pool call per slab instead of one per result. Memory is never reused: every result
    holds a reference to its slab's allocation, which goes back to CuPy's pool when the last
    of its results is gone (so a result kept alive keeps ``size`` bytes). Thread-safe."""

    __slots__ = ("_lock", "_mem", "_next", "size", "step")

    def __init__(self, size: int, step: int) -> None:
        self.size, self.step = size, step
        self._mem: Any = None
        self._next = size
        self._lock = threading.Lock()  # two threads on one plan share its slab

    def carve(self, nbytes: int) -> Any:
        """The memory of a new result of ``nbytes`` bytes (at most ``size``): a CuPy
        ``MemoryPointer`` for :func:`on` or a result class (:func:`result_type`)."""
        n = -(-nbytes // self.step) * self.step
        with self._lock:
            if self._next + n > self.size:
                self._mem, self._next = sys.modules["cupy"].cuda.alloc(self.size), 0
            mem = self._mem + self._next
            self._next += n
        return mem


#: Per device and stream: the slab of small array results (:func:`small_results`).
_SLABS = fastpath.PlanCache("scalar.slabs", maxsize=64)
#: Array results of at most this many bytes come from a slab of ``SLAB_BYTES`` (256-byte
#: steps): the memory pool's allocation is ~3 us of host time on the H200 hosts, most of a
#: small call's own cost beside the launch (benchmarks/NOTES.md).
SMALL_BYTES, SLAB_BYTES = 2048, 64 << 10


def small_results() -> Slab:
    """The slab of small results of the current device and stream (a plan, whose key holds
    both, keeps it and makes a result of at most :data:`SMALL_BYTES` as
    ``result_type(shape)(shape, dtype, slab.carve(nbytes))``). Per stream, as CuPy's pool:
    a slab goes back to the pool of the stream it was allocated on, which reuses it in that
    stream's order only, so every result in it must be written on that stream."""
    key = (sys.modules["cupy"].cuda.runtime.getDevice(), fastpath.current_stream()[1])
    slab = _SLABS.get(key)
    if slab is None:
        slab = _SLABS.put(key, Slab(SLAB_BYTES, 256))
    return slab


def halves(a: Any, m: int) -> tuple[Any, Any]:
    """``a[:m]`` and ``a[m:]`` of a 1-D C-contiguous device array as two results on its
    memory (CuPy's slices would be plain arrays): ``series_stats``' means and norms."""
    data = a.data
    return on(data, (m,), a.dtype), on(data + m * a.itemsize, (a.size - m,), a.dtype)


def as_scalar(r: Any) -> Any:
    """``r`` as a ``DeviceScalar`` when it is a plain 0-d CuPy array (the same memory, no
    copy); anything else unchanged."""
    cupy = sys.modules.get("cupy")
    if cupy is None or type(r) is not cupy.ndarray or r.ndim != 0:
        return r
    return scalar_type()((), r.dtype, r.data)

"""Kernel launches of the small-call paths from C: the extension module
``warplab.core._launch`` (``launch.c``), built with the package.

A public call on small device input spends more host time in CuPy's launch (its Cython
argument packing: 6.5 us for an empty kernel on the H100 host, ``benchmarks/NOTES.md``) than
the driver's ``cuLaunchKernel`` itself. The extension's
``launch(function, grid, block, shared, stream, format, *args)`` packs the arguments by a
format string (``a`` an array's address, ``Q``/``q``/``I``/``i`` integers, ``f``/``d``
floats, ``b`` a buffer's bytes) and calls the driver. The short paths' launch records hold a
:class:`Prepared` launch (the kernel's handle, block, shared memory and format, all decided
once), so a warm call passes only its arguments.

The extension's ``read(address, stream, kind)`` copies one element of a device array to the
host on a stream and returns it as a Python number: what the 0-d results' ``float()`` use
(``core/scalar.py``); its ``read_into(address, stream, out)`` copies the bytes of a small
device array into a NumPy array: what their ``get()`` uses.

The extension is built when the package is (``setup.py``: ``pip install .`` or ``pip install
-e .``; a tree run with ``PYTHONPATH=src`` builds it in place first, as
``benchmarks/gpu_check.sh`` does) and opens ``libcuda.so.1`` on first use. Where it was not
built (no C compiler or Python headers when the package was built), where there is no
``libcuda``, or with ``WARPLAB_C_LAUNCH=0`` in the environment when warplab is imported (a
debugging switch), :func:`function` is None and the records launch through CuPy, with the
same results; :func:`status` says which path is in use and why.

The driver's errors arrive as the extension's ``DriverError``, a ``RuntimeError`` whose
``code`` is the ``CUresult``: a launch from a host thread with no current context
(:data:`CUDA_ERROR_INVALID_CONTEXT`) goes through CuPy once; anything else raises.
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from warplab.core.errors import InvalidTypeError
from warplab.core.extensions import load

#: The extension's import name.
EXTENSION = "warplab.core._launch"


def _import() -> tuple[ModuleType | None, str]:
    """The extension (None where it is off or absent) and, where it is None, why."""
    return load(EXTENSION, "WARPLAB_C_LAUNCH")


#: The extension module, or None where the records launch through CuPy; read once, at import
#: (tests replace it to take the CuPy path).
_ext, _WHY = _import()


def _module() -> Any:
    """The extension once its driver is open, else None."""
    ext = _ext
    return ext if ext is not None and ext.driver() is None else None


def function() -> Callable[..., None] | None:
    """The C ``launch`` function, or None where the records launch through CuPy."""
    mod = _module()
    return None if mod is None else mod.launch


def after_function() -> Callable[..., None] | None:
    """The C ``launch_after`` (``launch``'s arguments; the launch may overlap the stream's
    previous kernel, whose end the kernel awaits itself: ``wait_prior_grids`` in
    ``core/warplab.cuh``) where the current device has compute capability 9.0 or later and the
    driver ``cuLaunchKernelEx``; else None."""
    mod = _module()
    if mod is None or not mod.can_launch_after():
        return None
    cupy = sys.modules["cupy"]
    return mod.launch_after if int(cupy.cuda.Device().compute_capability) >= 90 else None


def launch_1d() -> Any:
    """The C launch other extensions call (a capsule: ``core/devicepairs.c``'s ``device_pairs``
    launches ``copy_batched``'s few-buffer kernel through it); None where there is no C."""
    mod = _module()
    return None if mod is None else getattr(mod, "launch_1d", None)


def reader() -> Callable[[int, int, str], Any] | None:
    """The C ``read(address, stream, kind)``: one element at a device address as a Python
    number, after the stream's work (``core/scalar.py``); None where there is no C."""
    mod = _module()
    return None if mod is None else mod.read


def copier() -> Callable[[int, int, Any], None] | None:
    """The C ``read_into(address, stream, out)``: ``out.nbytes`` bytes at a device address
    into the NumPy array ``out``, after the stream's work (``core/scalar.py``: the small
    results' ``get()``); None where there is no C."""
    mod = _module()
    return None if mod is None else mod.read_into


def status() -> str:
    """How small calls launch, and why, in words (for notes and stats): ``"C launch:
    cuLaunchKernel from the built extension ..."`` or ``"CuPy's launch (fallback): <why>"``."""
    ext = _ext
    if ext is None:
        return f"CuPy's launch (fallback): {_WHY or f'the extension {EXTENSION} is not in use'}"
    missing = ext.driver()
    if missing is not None:
        return f"CuPy's launch (fallback): the extension {EXTENSION} is built, but {missing}"
    return f"C launch: cuLaunchKernel from the built extension {EXTENSION}"


#: NumPy scalar types and the format letter of their kernel parameter.
_LETTERS = {np.dtype(np.uint64): "Q", np.dtype(np.int64): "q", np.dtype(np.uint32): "I",
            np.dtype(np.int32): "i", np.dtype(np.float32): "f", np.dtype(np.float64): "d"}


class _ArraySlot:
    """Stands for an array argument in a sample (:class:`Prepared`) built before the call's
    arrays exist."""

    @property
    def __cuda_array_interface__(self) -> dict:
        return {}


#: An array in a sample of arguments.
ARRAY = _ArraySlot()


def format_of(args: tuple) -> bytes:
    """The format string of a kernel's arguments as CuPy takes them: arrays (anything with
    ``__cuda_array_interface__``) ``a``; NumPy scalars by dtype (other dtypes and NumPy arrays
    ``b``: their bytes); Python ints ``q`` and floats ``d`` (what CuPy makes of them)."""
    out = []
    for a in args:
        if hasattr(a, "__cuda_array_interface__"):
            out.append("a")
        elif isinstance(a, np.generic):
            out.append(_LETTERS.get(a.dtype, "b"))
        elif isinstance(a, np.ndarray):
            out.append("b")
        elif isinstance(a, bool):
            raise InvalidTypeError("pass a bool kernel argument as a NumPy scalar (np.bool_)")
        elif isinstance(a, int):
            out.append("q")
        elif isinstance(a, float):
            out.append("d")
        else:
            raise InvalidTypeError(f"no kernel parameter for {type(a).__name__}")
    return "".join(out).encode()


def _cupy_launch(kernel: Any, grid: Any, block: Any, shared: int, stream: int,
                 fmt: bytes, *args: Any) -> None:
    """The C function's signature on CuPy's launch (current stream): where there is no C."""
    grid = grid if isinstance(grid, tuple) else (grid,)
    block = block if isinstance(block, tuple) else (block,)
    if shared:
        kernel(grid, block, args, shared_mem=shared)
    else:
        kernel(grid, block, args)


#: The ``CUresult`` of a launch from a host thread with no current context.
CUDA_ERROR_INVALID_CONTEXT = 201


def _stream() -> int:
    """The current CuPy stream's handle."""
    return sys.modules["cupy"].cuda.get_current_stream().ptr


class Prepared:
    """A kernel launch with everything but the arguments (and the grid, for :meth:`at`)
    decided: the kernel's handle (or the CuPy kernel where there is no C launch), block,
    dynamic shared memory and the arguments' format, taken from ``sample`` (arguments of the
    types every call passes: arrays where arrays go, NumPy scalars or Python numbers).

    ``overlap``: the kernel calls ``wait_prior_grids()`` (``core/warplab.cuh``) before its
    first memory access, so it may be launched with programmatic stream serialization
    (:func:`after_function`; where there is none, the plain launch): its blocks are scheduled
    while the stream's previous kernel drains, which hides the launch's gap between two
    kernels of a stream (sm_90 and later).

    ``p(*args)`` launches on ``grid`` on the current CuPy stream; ``p.at(grid, *args)`` on
    another grid, ``p.on(grid, block, *args)`` with another block too, ``p.on_stream(stream,
    grid, *args)`` on a stream handle the caller has read already. Four spelled-out methods,
    not one helper: each saves a Python frame on the small-call path. Raises what the launch
    raises (the extension's ``DriverError``, a ``RuntimeError`` with the ``CUresult`` as
    ``code``; CuPy's errors)."""

    __slots__ = ("block", "c", "call", "format", "grid", "kernel", "shared", "token")

    def __init__(self, kernel: Any, grid: Any, block: Any, sample: tuple, shared: int = 0,
                 overlap: bool = False) -> None:
        fn = (overlap and after_function()) or function()
        self.format = format_of(sample)
        self.grid, self.block, self.shared, self.kernel = grid, block, shared, kernel
        self.c = fn is not None
        if fn is None:
            self.call, self.token = _cupy_launch, kernel
        else:
            fn_obj = getattr(kernel, "kernel", kernel)  # a RawKernel's compiled Function
            self.call, self.token = fn, int(fn_obj.ptr)

    def __call__(self, *args: Any) -> None:
        try:
            self.call(self.token, self.grid, self.block, self.shared,
                      _stream() if self.c else 0, self.format, *args)
        except RuntimeError as e:
            self._no_context(e, self.grid, self.block, args)

    def at(self, grid: Any, *args: Any) -> None:
        try:
            self.call(self.token, grid, self.block, self.shared,
                      _stream() if self.c else 0, self.format, *args)
        except RuntimeError as e:
            self._no_context(e, grid, self.block, args)

    def on(self, grid: Any, block: Any, *args: Any) -> None:
        try:
            self.call(self.token, grid, block, self.shared,
                      _stream() if self.c else 0, self.format, *args)
        except RuntimeError as e:
            self._no_context(e, grid, block, args)

    def on_stream(self, stream: int, grid: Any, *args: Any) -> None:
        """:meth:`at` on the stream of handle ``stream`` (the current one: a caller that has
        read it already passes it; CuPy's launch, where there is no C, takes the current)."""
        try:
            self.call(self.token, grid, self.block, self.shared, stream, self.format, *args)
        except RuntimeError as e:
            self._no_context(e, grid, self.block, args)

    def _no_context(self, e: RuntimeError, grid: Any, block: Any, args: tuple) -> None:
        """A thread whose CUDA context is not current yet (a new host thread that has made no
        runtime call; the driver's code :data:`CUDA_ERROR_INVALID_CONTEXT`): this one launch
        goes through CuPy, which makes the device's primary context current; the thread's
        later launches go from C. Anything else raises."""
        if not self.c or getattr(e, "code", None) != CUDA_ERROR_INVALID_CONTEXT:
            raise e
        _cupy_launch(self.kernel, grid, block, self.shared, 0, self.format, *args)


def by_args(kernel: Any, grid: Any, block: Any, shared: int = 0) -> Callable[[tuple], None]:
    """``launch(args)``: a :class:`Prepared` launch whose format is taken from the first
    call's arguments (for launch records whose calls all pass arguments of the same types)."""
    box: list[Prepared] = []

    def launch_args(args: tuple) -> None:
        if not box:
            box.append(Prepared(kernel, grid, block, args, shared))
        box[0](*args)

    return launch_args

"""The package's exceptions: one hierarchy, so that a caller (and the CLI) can tell a mistake in
what was asked for from a device problem and from a bug without reading messages.

=============================  ==================================================================
``WarplabError``               base of every exception warplab raises on purpose
``UsageError``                 what the caller asked for is wrong (arguments, files, options)
``InvalidValueError``          a bad value, shape, name or combination (also a ``ValueError``)
``InvalidTypeError``           a wrong type or dtype (also a ``TypeError``)
``DeviceUnavailableError``     the cuda backend was asked for and no GPU or CuPy is usable
``DeviceOutOfMemoryError``     the GPU ran out of memory (also a ``MemoryError``)
``HostOutOfMemoryError``       a result would not fit host memory (also a ``MemoryError``)
``KernelCompileError``         NVRTC could not compile a kernel: a bug, never the caller's
=============================  ==================================================================

``InvalidValueError`` and ``InvalidTypeError`` subclass the built-in exceptions NumPy raises in
the same situations, so ``except ValueError`` keeps working and NumPy's own tests apply.
"""
from __future__ import annotations


class WarplabError(Exception):
    """Base class of the exceptions warplab raises on purpose."""


class UsageError(WarplabError):
    """What the caller asked for is wrong; the message says what and what is valid."""


class InvalidValueError(UsageError, ValueError):
    """A bad value, shape, name or combination of arguments (NumPy would raise ``ValueError``)."""


class InvalidTypeError(UsageError, TypeError):
    """A wrong type or dtype (NumPy would raise ``TypeError``)."""


class DeviceUnavailableError(WarplabError, RuntimeError):
    """The cuda backend was asked for but no usable GPU (or CuPy) is present."""


class DeviceOutOfMemoryError(WarplabError, MemoryError):
    """The GPU ran out of memory (CuPy's ``OutOfMemoryError`` or a driver's out-of-memory code,
    translated by :func:`warplab.core.device.device_errors`), or a result that warplab
    accumulates on the GPU would not fit there; the message says what was asked and what to
    change. ``call`` and ``origin``: the public call that converted it and the original error
    (None for warplab's own)."""

    call: str | None = None
    origin: BaseException | None = None


class HostOutOfMemoryError(WarplabError, MemoryError):
    """A result would not fit the host's available memory (checked before it is assembled);
    the message says how large it is and what to change. NumPy's own failed allocations stay
    NumPy's ``MemoryError``."""


class KernelCompileError(WarplabError, RuntimeError):
    """NVRTC could not compile a kernel (a bug in warplab or an unsupported toolkit); the
    message carries the compiler log."""

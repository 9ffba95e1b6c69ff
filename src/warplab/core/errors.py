"""The package's exceptions.

User mistakes raise the built-in ``TypeError`` (wrong dtype) and ``ValueError`` (bad values,
shapes, names). Problems with the device raise subclasses of :class:`WarplabError`.
"""
from __future__ import annotations


class WarplabError(RuntimeError):
    """Base class of warplab's own errors (device problems, not user mistakes)."""


class DeviceUnavailableError(WarplabError):
    """The cuda backend was asked for but no usable GPU (or CuPy) is present."""


class DeviceOutOfMemoryError(WarplabError, MemoryError):
    """The GPU ran out of memory (CuPy's ``OutOfMemoryError``, translated by
    :func:`warplab.core.device.device_errors`)."""


class KernelCompileError(WarplabError):
    """NVRTC could not compile a kernel (a bug in warplab or an unsupported toolkit); the
    message carries the compiler log."""

"""warplab: GPU parallel primitives for Python, from the classic kernels to the fastest, with a
measurement lab that times every run properly.

Public API::

    warplab.histogram(data, bins="bytes", *, variant=None, out=None, accumulate=False)
    warplab.bincount(x, minlength=0)
    warplab.sum(a) / min / max / mean, warplab.reduce(a, op)
    warplab.matmul(a, b, *, variant=None, out=None)
    warplab.variants("histogram")      # registered strategies, preferred first
    warplab.backend()                  # "cuda" or "cpu"
"""
from __future__ import annotations

from . import _registry
from ._device import cuda_available, resolve_backend
from .errors import (DeviceOutOfMemoryError, DeviceUnavailableError, VerificationError,
                     WarplabError)
from .histogram import bincount, histogram
from .matmul import matmul
from .reduce import max, mean, min, reduce, sum  # noqa: A004 (NumPy's names, on purpose)

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "histogram",
    "bincount",
    "sum",
    "min",
    "max",
    "mean",
    "reduce",
    "matmul",
    "variants",
    "backend",
    "cuda_available",
    "WarplabError",
    "DeviceUnavailableError",
    "DeviceOutOfMemoryError",
    "VerificationError",
]


def variants(family: str, backend: str | None = None) -> list[str]:
    """Names of the registered variants of ``family`` in preference order (optionally of one
    backend). The first one of a backend is its default."""
    return [v.name for v in _registry.variants(family, backend)]


def backend(device: str | None = None) -> str:
    """The backend a call with ``device=`` would use (``"cuda"`` or ``"cpu"``)."""
    return resolve_backend(device)

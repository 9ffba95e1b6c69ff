"""warplab: GPU parallel primitives for Python, from the classic kernels to the fastest, with a
measurement lab that times every run properly.

Public API::

    warplab.histogram(a, bins=10, range=None, density=None, weights=None)   # NumPy's
    warplab.bincount(x, weights=None, minlength=0)                          # NumPy's
    warplab.byte_histogram(data, bins="bytes", *, variant=None, out=None, accumulate=False)
    warplab.sum(a, axis=None, dtype=None, keepdims=False) / min / max / mean / var / std
    warplab.reduce(a, op, axis=None, ...)
    warplab.random_walk(m, n, *, start=100.0, eps=1e-3, seed=0, dtype="float32")
    warplab.series_stats(x)            # per-series mean and centred norm, one pass
    warplab.corrcoef(x, y=None, rowvar=True, *, dtype=None, precision=None, out=None)  # NumPy's
    warplab.corr_pairs(x, *, threshold=None, top_k=None)   # strong pairs, no M x M matrix
    warplab.matmul(a, b, *, variant=None, out=None)
    warplab.copy_batched(srcs, dsts, *, variant=None)  # srcs[i] -> dsts[i], one launch
    warplab.memcpy_batched(src_ptrs, dst_ptrs, sizes)  # CUB's pointer form, device arrays
    warplab.concatenate(arrays, axis=0)                 # NumPy's, one batched copy
    warplab.split(ary, indices_or_sections, axis=0, *, copy=False)  # NumPy's; copy=True
    warplab.variants("histogram")      # registered strategies, preferred first
    warplab.record_variants()          # which variants the calls in a with-block ran
    warplab.backend()                  # "cuda" or "cpu"

The functions live in one folder per family (``warplab/families/<family>/``); see
``docs/architecture.md``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from warplab.core import registry as _registry
from warplab.core.device import cuda_available, resolve_backend
from warplab.core.errors import (
    DeviceOutOfMemoryError,
    DeviceUnavailableError,
    HostOutOfMemoryError,
    InvalidTypeError,
    InvalidValueError,
    KernelCompileError,
    UsageError,
    WarplabError,
)
from warplab.core.registry import Ran, record_variants
from warplab.core.sources import FileRange

#: Each family's public names (its package's ``__all__``), imported on first use: a script
#: that counts bytes does not pay for matmul's or corr's modules.
_FAMILY_NAMES = {
    "histogram": ("bincount", "byte_histogram", "histogram"),
    "reduce": ("max", "mean", "min", "reduce", "std", "sum", "var"),
    "matmul": ("matmul",),
    "series": ("random_walk", "series_stats"),
    "memcpy": ("concatenate", "copy_batched", "memcpy_batched", "split"),
    "corr": ("corr_pairs", "corrcoef"),
}
_FAMILY_OF = {name: fam for fam, names in _FAMILY_NAMES.items() for name in names}

if TYPE_CHECKING:  # the checkers see the functions' own signatures (names in __all__)
    from warplab.families.corr import corr_pairs, corrcoef  # noqa: F401
    from warplab.families.histogram import bincount, byte_histogram, histogram  # noqa: F401
    from warplab.families.matmul import matmul  # noqa: F401
    from warplab.families.memcpy import (  # noqa: F401
        concatenate,
        copy_batched,
        memcpy_batched,
        split,
    )
    from warplab.families.reduce import (  # noqa: F401
        max,  # noqa: A004
        mean,
        min,  # noqa: A004
        reduce,
        std,
        sum,  # noqa: A004
        var,
    )
    from warplab.families.series import random_walk, series_stats  # noqa: F401

__version__ = "0.1.0"

__all__ = [
    "__version__",
    *_FAMILY_OF,
    "variants",
    "FileRange",
    "record_variants",
    "Ran",
    "backend",
    "cuda_available",
    "WarplabError",
    "UsageError",
    "InvalidValueError",
    "InvalidTypeError",
    "DeviceUnavailableError",
    "DeviceOutOfMemoryError",
    "HostOutOfMemoryError",
    "KernelCompileError",
]


def variants(family: str, backend: str | None = None) -> list[str]:
    """Names of the registered variants of ``family`` in preference order (optionally of one
    backend). The first one of a backend is its default."""
    return [v.name for v in _registry.variants(family, backend)]


def backend(device: str | None = None) -> str:
    """The backend a call with ``device=`` would use (``"cuda"`` or ``"cpu"``)."""
    return resolve_backend(device)


def __getattr__(name: str) -> Any:
    """A family's function, its package imported on first use (PEP 562)."""
    fam = _FAMILY_OF.get(name)
    if fam is None:
        raise AttributeError(f"module 'warplab' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"warplab.families.{fam}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

"""The staging copy of host arrays with non-temporal (streaming) stores: the extension module
``warplab.core._ntcopy`` (``ntcopy.c``), built with the package.

Streaming a pageable array to the GPU copies it into pinned buffers that only the DMA engine
reads afterwards. glibc's ``memcpy`` (and so ``np.copyto``) writes through the caches below its
non-temporal threshold, about three quarters of the L3 (225 MiB on the H100 machine, whose
staging pieces are 16 MiB): each written line is first read for ownership, and the source is
evicted by the destination. ``ntcopy.c`` writes whole lines straight to memory with SSE2
streaming stores (measured on the H100 machine with glibc's own switch forced low, the fills of
a 4 GiB stream took 100-125 ms instead of 165-205: ``benchmarks/NOTES.md``).

The extension is built when the package is (``setup.py``; a tree run with ``PYTHONPATH=src``
builds it in place first) and releases the GIL during the copy, so threads copy pieces side by
side. Where it was not built (no C compiler or Python headers when the package was built), on
an architecture without SSE2 streaming stores (the module's ``STREAMING`` is 0), or with
``WARPLAB_NT_COPY=0`` in the environment when warplab is imported (a debugging switch),
:func:`copy` is ``np.copyto``, with the same result; :func:`status` says which and why.
"""
from __future__ import annotations

from types import ModuleType

import numpy as np

from warplab.core.extensions import load

#: The extension's import name.
EXTENSION = "warplab.core._ntcopy"
#: Copies shorter than this go through ``np.copyto`` (the call's own cost dominates).
MIN_BYTES = 1 << 20


def _import() -> tuple[ModuleType | None, str]:
    """The extension (None where it is off, absent or has no streaming stores) and, where it
    is None, why."""
    ext, why = load(EXTENSION, "WARPLAB_NT_COPY")
    if ext is not None and not ext.STREAMING:
        return None, "no SSE2 streaming stores on this architecture"
    return ext, why


#: The extension module, or None where copies are ``np.copyto``; read once, at import (tests
#: replace it to take the NumPy path).
_ext, _WHY = _import()


def status() -> str:
    """How staging copies are made, and why, in words (for notes and stats)."""
    if _ext is not None:
        return f"non-temporal stores (the built extension {EXTENSION})"
    return f"np.copyto (fallback): {_WHY or f'the extension {EXTENSION} is not in use'}"


def copy(dst: np.ndarray, src: np.ndarray) -> None:
    """``np.copyto(dst, src)`` for arrays of one shape and dtype; C-contiguous, disjoint
    copies of at least :data:`MIN_BYTES` without Python objects use streaming stores where
    the extension is built (it copies the bytes, seen as ``uint8``, so any such dtype goes)."""
    ext = _ext if dst.nbytes >= MIN_BYTES else None
    if (ext is None or src.dtype != dst.dtype or src.shape != dst.shape or dst.dtype.hasobject
            or not (dst.flags.c_contiguous and src.flags.c_contiguous)
            or np.may_share_memory(dst, src)):
        np.copyto(dst, src)
        return
    ext.copy(dst.reshape(-1).view(np.uint8), src.reshape(-1).view(np.uint8))

"""The staging copy of host arrays with non-temporal (streaming) stores, where a C compiler is.

Streaming a pageable array to the GPU copies it into pinned buffers that only the DMA engine
reads afterwards. glibc's ``memcpy`` (and so ``np.copyto``) writes through the caches below its
non-temporal threshold, about three quarters of the L3 (225 MiB on the H100 machine, whose
staging pieces are 16 MiB): each written line is first read for ownership, and the source is
evicted by the destination. ``ntcopy.c`` writes whole lines straight to memory with SSE2
streaming stores (measured on the H100 machine with glibc's own switch forced low, the fills of
a 4 GiB stream took 100-125 ms instead of 165-205: ``benchmarks/NOTES.md``).

The C file is compiled once per machine with ``$CC`` (default ``cc``) into the user's cache
folder (``WARPLAB_CACHE_DIR``, else ``$XDG_CACHE_HOME/warplab``, else ``~/.cache/warplab``;
the file name carries a hash of the source, so an edited source builds anew) and loaded with
ctypes, which releases the GIL during the call. No compiler, another architecture, a failed
build or ``WARPLAB_NT_COPY=0``: :func:`copy` is ``np.copyto``, with the same result.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import numpy as np

from warplab.core.device import cache_dir

SOURCE = Path(__file__).with_name("ntcopy.c")
#: Copies shorter than this go through ``np.copyto`` (the call's own cost dominates).
MIN_BYTES = 1 << 20
_LOCK = threading.Lock()
_STATE: dict[str, object] = {}


def _wanted() -> bool:
    return (os.environ.get("WARPLAB_NT_COPY", "1").strip().lower() not in ("0", "off", "no")
            and platform.machine().lower() in ("x86_64", "amd64"))


def _build() -> ctypes.CDLL | None:
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        _STATE["why"] = "no C compiler"
        return None
    text = SOURCE.read_bytes()
    tag = hashlib.sha256(text + cc.encode() + platform.machine().encode()).hexdigest()[:16]
    lib = cache_dir() / f"libwarplab_ntcopy-{tag}.so"
    try:
        if not lib.exists():
            lib.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(suffix=".so", dir=lib.parent)
            os.close(fd)
            try:
                subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", tmp, str(SOURCE)],
                               check=True, capture_output=True, timeout=60)
                os.replace(tmp, lib)  # atomic: concurrent builds leave one whole file
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        dll = ctypes.CDLL(str(lib))
    except (OSError, subprocess.SubprocessError) as e:
        _STATE["why"] = f"build failed: {e}"
        return None
    fn = dll.warplab_nt_copy
    fn.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
    fn.restype = ctypes.c_int
    _STATE["why"] = f"built: {lib}"
    return dll


def library() -> ctypes.CDLL | None:
    """The loaded library (built on first use), or None where it is not used."""
    if not _wanted():
        return None
    with _LOCK:
        if "lib" not in _STATE:
            _STATE["lib"] = _build()
        return _STATE["lib"]  # type: ignore[return-value]


def status() -> str:
    """How staging copies are made, in words (for notes and stats)."""
    if not _wanted():
        return "np.copyto (non-temporal copy off: WARPLAB_NT_COPY=0 or not x86-64)"
    lib = library()
    return ("non-temporal stores (ntcopy.c)" if lib is not None
            else f"np.copyto ({_STATE.get('why', 'unavailable')})")


def copy(dst: np.ndarray, src: np.ndarray) -> None:
    """``np.copyto(dst, src)`` for arrays of one shape and dtype; C-contiguous, disjoint
    copies of at least :data:`MIN_BYTES` use streaming stores where the library is built."""
    n = dst.nbytes
    lib = library() if n >= MIN_BYTES else None
    if (lib is None or src.dtype != dst.dtype or src.shape != dst.shape
            or not (dst.flags.c_contiguous and src.flags.c_contiguous)
            or np.may_share_memory(dst, src)):
        np.copyto(dst, src)
        return
    lib.warplab_nt_copy(dst.ctypes.data, src.ctypes.data, n)

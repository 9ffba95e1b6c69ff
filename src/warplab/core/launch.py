"""Kernel launches of the small-call paths from C (``launch.c``), where a C compiler and the
Python headers are.

A public call on small device input spends more host time in CuPy's launch (its Cython
argument packing: 6.5 us for an empty kernel on the session-10 H100 host) than the driver's
``cuLaunchKernel`` itself. ``launch.c`` is a CPython extension with one function,
``launch(function, grid, block, shared, stream, format, *args)``, that packs Python ints and
floats by a format string (``p`` pointer, ``q``/``Q`` 64-bit, ``i``/``I`` 32-bit, ``f``/``d``
floats) and calls the driver. The launch records of the short paths hold the kernel's handle
and the format, so a warm call passes only addresses and sizes.

The extension is compiled once per machine and Python version with ``$CC`` (default ``cc``)
into the cache folder (``device.cache_dir()``; the file name carries a hash of the source,
the compiler and the interpreter's ABI) and imported from there. No compiler, no Python
headers, no ``libcuda``, a failed build, or ``WARPLAB_C_LAUNCH=0``: :func:`function` is None
and the records launch through CuPy, with the same results.
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .device import cache_dir

SOURCE = Path(__file__).with_name("launch.c")
MODULE = "_warplab_launch"
_LOCK = threading.Lock()
_STATE: dict[str, Any] = {}


def _wanted() -> bool:
    return os.environ.get("WARPLAB_C_LAUNCH", "1").strip().lower() not in ("0", "off", "no")


def _compile(cc: str, include: str, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=out.parent)
    os.close(fd)
    try:
        subprocess.run([cc, "-O2", "-shared", "-fPIC", f"-I{include}", "-o", tmp, str(SOURCE),
                        "-ldl"], check=True, capture_output=True, timeout=120)
        os.replace(tmp, out)  # atomic: concurrent builds leave one whole file
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _build() -> Callable[..., None] | None:
    cc = shutil.which(os.environ.get("CC", "cc"))
    include = sysconfig.get_paths().get("include") or ""
    if cc is None:
        _STATE["why"] = "no C compiler"
        return None
    if not os.path.exists(os.path.join(include, "Python.h")):
        _STATE["why"] = f"no Python headers ({include or 'no include path'})"
        return None
    abi = sysconfig.get_config_var("SOABI") or sys.version
    tag = hashlib.sha256(SOURCE.read_bytes() + cc.encode() + abi.encode()).hexdigest()[:16]
    path = cache_dir() / f"{MODULE}-{tag}.so"
    try:
        if not path.exists():
            _compile(cc, include, path)
        loader = importlib.machinery.ExtensionFileLoader(MODULE, str(path))
        spec = importlib.util.spec_from_file_location(MODULE, str(path), loader=loader)
        if spec is None:
            raise ImportError(f"cannot load {path}")
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
    except (OSError, ImportError, subprocess.SubprocessError) as e:
        detail = getattr(e, "stderr", b"") or b""
        _STATE["why"] = f"build or import failed: {e} {detail.decode(errors='replace')[:300]}"
        return None
    _STATE["why"] = f"built: {path}"
    return mod.launch


def function() -> Callable[..., None] | None:
    """The C ``launch`` function (built and imported on first use), or None where the
    records launch through CuPy."""
    if not _wanted():
        return None
    fn = _STATE.get("fn", False)
    if fn is not False:
        return fn
    with _LOCK:
        if "fn" not in _STATE:
            _STATE["fn"] = _build()
        return _STATE["fn"]


def status() -> str:
    """How small calls launch, in words (for notes and stats)."""
    if not _wanted():
        return "CuPy's launch (WARPLAB_C_LAUNCH=0)"
    return ("cuLaunchKernel from C (launch.c)" if function() is not None
            else f"CuPy's launch ({_STATE.get('why', 'unavailable')})")

"""Build and load the CUB comparator (``cub/batched_cub.cu``): nvcc compiles it into a shared
library in the warplab cache folder, named by the source's hash and the GPU's architecture,
once per machine; ctypes loads it. Without nvcc the comparator is skipped with a note."""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from warplab.core.device import cache_dir

SOURCE = Path(__file__).with_name("cub") / "batched_cub.cu"


def nvcc() -> str | None:
    """The nvcc to build with: ``$NVCC``, ``nvcc`` on PATH, or the usual install paths."""
    for c in (os.environ.get("NVCC"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc",
              "/usr/local/bin/nvcc"):
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return c
    return None


def probe() -> str | None:
    """None when the helper can be built here, else why not."""
    if nvcc() is None:
        return "nvcc not found (set NVCC=...): CUB's DeviceMemcpy::Batched needs a C++ build"
    return None


@functools.cache
def library(arch: str) -> Any:
    """The loaded helper for ``arch`` (e.g. ``"sm_90"``), built on first use (about 15 s)."""
    tool = nvcc()
    if tool is None:
        raise RuntimeError(probe())
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    out = cache_dir() / f"batched_cub-{digest}-{arch}.so"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        cmd = [tool, "-O3", "-std=c++17", f"-arch={arch}", "-shared", "-Xcompiler", "-fPIC",
               "-o", str(tmp), str(SOURCE)]
        done = subprocess.run(cmd, check=False, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"nvcc could not build {SOURCE.name}: {done.stderr.strip()}")
        tmp.replace(out)
    lib = ctypes.CDLL(str(out))
    for name in ("warplab_cub_memcpy_batched", "warplab_memcpy_batch_async"):
        fn = getattr(lib, name)
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                       ctypes.c_void_p]
        fn.restype = ctypes.c_int
    return lib


def _lib() -> Any:
    import cupy

    return library(f"sm_{cupy.cuda.Device().compute_capability}")


def cub_memcpy_batched(src: Any, dst: Any, sizes: Any, n: int) -> None:
    """CUB's batched copy of device uint64 arrays (addresses, sizes) on CuPy's current
    stream."""
    import cupy

    err = _lib().warplab_cub_memcpy_batched(src.data.ptr, dst.data.ptr, sizes.data.ptr, n,
                                            cupy.cuda.get_current_stream().ptr)
    if err:
        raise RuntimeError(f"cub::DeviceMemcpy::Batched failed: cudaError {err}")


def runtime_memcpy_batch(h_src: Any, h_dst: Any, h_sizes: Any, n: int) -> None:
    """``cudaMemcpyBatchAsync`` with host uint64 arrays on CuPy's current stream (which must
    not be the legacy default stream)."""
    import cupy

    err = _lib().warplab_memcpy_batch_async(h_src.ctypes.data, h_dst.ctypes.data,
                                            h_sizes.ctypes.data, n,
                                            cupy.cuda.get_current_stream().ptr)
    if err:
        raise RuntimeError(f"cudaMemcpyBatchAsync failed: cudaError {err}")

"""Compile ``.cu`` sources with NVRTC through ``cupy.RawModule`` and cache the modules.

Every family keeps its kernels beside its Python (``families/<family>/<family>.cu``) and asks
for them here by path. Modules are cached per (source path, source hash, options, expressions,
device) for the process; CuPy's own on-disk cache keeps the compiled binaries between
processes, so a source is compiled once per machine. A source may include headers (``.cuh``)
of its own folder: the folder is then on the include path and their hash in the options, as
the shared header's is. Compile-time constants (block sizes,
tile shapes) are passed as ``-D`` options by the family's launch plans, which hold the only
copy of each value.
"""
from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from warplab.core import fastpath
from warplab.core.errors import InvalidValueError, KernelCompileError

_CORE = Path(__file__).resolve().parent
HEADER = _CORE / "warplab.cuh"  # the shared helpers every family's .cu may include
BASE_OPTIONS = ("-std=c++17", f"-I{_CORE}")
_KERNELS = fastpath.PlanCache("kernels", maxsize=4096)
_DEFINES = fastpath.PlanCache("defines")


@functools.lru_cache(maxsize=1)
def _header_digest() -> str:
    """Hash of the shared header: part of every module's options, so that CuPy's on-disk
    cache (keyed by source and options) never serves a kernel built with an older header."""
    return hashlib.sha256(HEADER.read_bytes()).hexdigest()[:16]


@functools.cache
def local_headers(folder: Path) -> tuple[str, ...]:
    """Options for the headers (``*.cuh``) beside a source: its folder on the include path and
    a hash of their text (so that CuPy's on-disk cache never serves a kernel built with older
    ones); none when the folder has no header."""
    heads = sorted(folder.glob("*.cuh"))
    if not heads:
        return ()
    digest = hashlib.sha256(b"".join(h.name.encode() + h.read_bytes() for h in heads))
    return (f"-I{folder}", f"-DWARPLAB_LOCAL_HASH=0x{digest.hexdigest()[:16]}ULL")


@functools.cache
def _source(path: Path) -> tuple[str, str]:
    text = path.read_text()
    return text, hashlib.sha256(text.encode()).hexdigest()[:16]


@functools.cache
def _module(path: Path, digest: str, options: tuple[str, ...], names: tuple[str, ...],
            device_id: int) -> Any:
    import cupy

    text, _ = _source(path)
    mod = cupy.RawModule(code=text, options=BASE_OPTIONS + options,
                         name_expressions=list(names) or None)
    try:
        mod.compile()
    except cupy.cuda.compiler.CompileException as exc:
        raise KernelCompileError(f"NVRTC could not compile {path.name} with "
                                 f"{' '.join(BASE_OPTIONS + options)}:\n{exc}") from exc
    return mod


def get_kernel(source: Path, expression: str, *, all_expressions: Sequence[str] = (),
               options: Sequence[str] = ()) -> Any:
    """Return the compiled kernel ``expression`` (e.g. ``"hist_global<0>"``) of the CUDA
    source file ``source``, compiled with ``options`` (``-D`` constants) added to
    ``BASE_OPTIONS``.

    ``all_expressions`` lists every template instantiation the module should hold, so that one
    NVRTC compilation serves all of them; ``expression`` must be among them when given.

    Performance: after the first call per (source, expression, options, expressions, device)
    one dict lookup (cache ``kernels`` of :mod:`~warplab.core.fastpath`): no source is read
    or hashed and CuPy's ``get_function`` (a new kernel object and a driver lookup) is not
    called again.
    """
    import cupy

    key = (source, expression, tuple(options), tuple(all_expressions),
           cupy.cuda.runtime.getDevice())
    kernel = _KERNELS.get(key)
    if kernel is None:
        kernel = _KERNELS.put(key, _build_kernel(*key))
    return kernel


def _build_kernel(source: Path, expression: str, options: tuple[str, ...],
                  all_expressions: tuple[str, ...], device_id: int) -> Any:
    _, digest = _source(source)
    names = all_expressions or (expression,)
    if expression not in names:
        raise InvalidValueError(f"{expression!r} is not among the module's expressions")
    opts = options + local_headers(source.resolve().parent) + (
        f"-DWARPLAB_HEADER_HASH=0x{_header_digest()}ULL",)
    return _module(source, digest, opts, names, device_id).get_function(expression)


def occupancy_blocks_per_sm(kernel: Any, block: int, dynamic_smem: int) -> int:
    """Resident blocks per SM for ``kernel`` at this block size and dynamic shared memory.

    Computed from the kernel's registers and static shared memory and the device's limits
    (threads, registers allocated per warp in units of 256, shared memory with 1 KiB reserved
    per block, at most 32 blocks), as the CUDA occupancy calculator does.
    """
    import cupy

    p = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    warps = (block + 31) // 32
    by_threads = p["maxThreadsPerMultiProcessor"] // block
    regs_per_warp = ((max(1, int(kernel.num_regs)) * 32 + 255) // 256) * 256
    by_regs = p["regsPerMultiprocessor"] // (regs_per_warp * warps)
    smem = int(kernel.shared_size_bytes) + dynamic_smem + 1024
    by_smem = p["sharedMemPerMultiprocessor"] // smem
    return max(1, min(by_threads, by_regs, by_smem, 32))


def defines(values: Mapping[str, int]) -> tuple[str, ...]:
    """``-D`` options for a source's compile-time constants (``{"WARPLAB_X": 8}`` ->
    ``("-DWARPLAB_X=8",)``). A family's launch plan holds each constant once, in a ``DEFINES``
    dict, and compiles its kernels with these options; the ``.cu`` refuses to compile without
    them. Cached per the dict's items (launch plans call this per launch)."""
    key = tuple(values.items())
    opts = _DEFINES.get(key)
    if opts is None:
        opts = _DEFINES.put(key, tuple(f"-D{k}={int(v)}" for k, v in sorted(values.items())))
    return opts

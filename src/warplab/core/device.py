"""Backend choice: ``cuda`` when a GPU and CuPy are usable, else ``cpu``; and the machine's
cache folder (:func:`cache_dir`).

Override per call with ``device="cpu" | "cuda"`` or for the process with the environment
variable ``WARPLAB_DEVICE``.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from warplab.core.errors import (
    DeviceOutOfMemoryError,
    DeviceUnavailableError,
    InvalidValueError,
    WarplabError,
)

F = TypeVar("F", bound=Callable[..., Any])

BACKENDS = ("cuda", "cpu")


def cache_dir() -> Path:
    """Where warplab keeps what it measures or builds once per machine (ceilings, helper
    libraries): ``$WARPLAB_CACHE_DIR``, else ``$XDG_CACHE_HOME/warplab``, else
    ``~/.cache/warplab``."""
    if os.environ.get("WARPLAB_CACHE_DIR"):
        return Path(os.environ["WARPLAB_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "warplab"


@functools.lru_cache(maxsize=1)
def cuda_status() -> tuple[bool, str]:
    """Return ``(usable, reason)`` for the cuda backend (cached for the process)."""
    try:
        import cupy
    except Exception as exc:  # ImportError, or a broken CUDA install
        return False, f"CuPy is not importable ({type(exc).__name__}: {exc})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return False, f"no CUDA device ({type(exc).__name__}: {exc})"
    if count < 1:
        return False, "no CUDA device"
    return True, f"{count} CUDA device(s)"


def cuda_available() -> bool:
    """True when the cuda backend can run."""
    return cuda_status()[0]


#: What a CUDA library or the runtime says when it could not allocate device memory: cuBLAS,
#: cuSOLVER, cuSPARSE, cuTENSOR (``*_STATUS_ALLOC_FAILED``), cuFFT (``CUFFT_ALLOC_FAILED``),
#: cuRAND (``CURAND_STATUS_ALLOCATION_FAILED``), the runtime (``cudaErrorMemoryAllocation``)
#: and the driver (``CUDA_ERROR_OUT_OF_MEMORY``, also from warplab's C launch path).
OOM_CODES = ("ALLOC_FAILED", "ALLOCATION_FAILED", "cudaErrorMemoryAllocation",
             "CUDA_ERROR_OUT_OF_MEMORY")
_CUPY_ASKED = re.compile(r"allocating ([\d,]+) bytes")


def gb(nbytes: float) -> str:
    """``nbytes`` for a message: ``"34.4 GB"``, ``"2.1 MB"`` below 0.1 GB, ``"4,096 bytes"``
    below 0.1 MB."""
    if nbytes >= 1e8:
        return f"{nbytes / 1e9:.1f} GB"
    if nbytes >= 1e5:
        return f"{nbytes / 1e6:.1f} MB"
    return f"{int(nbytes):,} bytes"


def _free_device() -> str | None:
    """Free GPU memory plus what CuPy's pool holds unused, and the pool's limit where one is
    set, for a message (None when the device cannot be asked)."""
    try:
        import cupy

        free, _ = cupy.cuda.runtime.memGetInfo()
        pool: Any = getattr(cupy.cuda.get_allocator(), "__self__", None)  # the pool in use
        if not hasattr(pool, "get_limit"):
            pool = cupy.get_default_memory_pool()
        limit = int(pool.get_limit())
        text = gb(int(free + pool.free_bytes()))
    except Exception:
        return None
    return f"{text} (CuPy's pool limit: {gb(limit)})" if limit else text


def _through_cupy(exc: BaseException) -> bool:
    """The exception passed through CuPy's code (its Cython modules add their frames to the
    traceback): the failing call ran on the device."""
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        where = f"{frame.f_globals.get('__name__', '')} {frame.f_code.co_filename}"
        if "cupy" in where:
            return True
        tb = tb.tb_next
    return False


def device_oom(exc: BaseException, call: str) -> DeviceOutOfMemoryError | None:
    """``exc`` as :class:`~warplab.core.errors.DeviceOutOfMemoryError` when it says the GPU
    ran out of memory, else None. ``call``: the public function's name (``"corr_pairs"``).

    Recognised: CuPy's ``OutOfMemoryError`` (its message has the bytes asked); Thrust's
    ``std::bad_alloc``, which CuPy's Thrust bindings raise as a plain ``MemoryError`` (told
    from a host one by its message and by its traceback passing through CuPy); the
    allocation failures of the CUDA libraries, the runtime and the driver (:data:`OOM_CODES`).
    A host ``MemoryError`` (NumPy's ``Unable to allocate ...``) and warplab's own errors are
    not device errors (None). Where the bytes asked are not known, the message gives the
    free device memory instead. An error converted by a public call that ``call`` called
    (``corr_pairs`` running ``gram``) is converted again from its origin, naming ``call``.
    The error's ``call`` and ``origin`` attributes hold the call's name and ``exc``."""
    if isinstance(exc, DeviceOutOfMemoryError) and exc.origin is not None \
            and exc.call != call:
        return device_oom(exc.origin, call)
    if isinstance(exc, WarplabError):
        return None
    text, kind = str(exc), type(exc)
    head = f"GPU out of memory in warplab.{call}"
    if isinstance(exc, MemoryError) and kind.__module__.startswith("cupy"):
        asked = _CUPY_ASKED.search(text)
        what = f" ({gb(int(asked.group(1).replace(',', '')))} asked)" if asked else ""
        return _converted(f"{head}{what}: {text}", call, exc)
    if kind is MemoryError and "bad_alloc" in text and _through_cupy(exc):
        what = "a Thrust algorithm (sort, scan) could not allocate its temporary storage"
    elif isinstance(exc, (RuntimeError, MemoryError)) and not kind.__module__.startswith(
            "numpy") and any(code in text for code in OOM_CODES):
        what = "a CUDA library could not allocate device memory"
    else:
        return None
    free = _free_device()
    room = "" if free is None else f"; free GPU memory now: {free}"
    return _converted(f"{head}: {what} ({kind.__name__}: {text}){room}", call, exc)


def _converted(message: str, call: str, origin: BaseException) -> DeviceOutOfMemoryError:
    err = DeviceOutOfMemoryError(message)
    err.call, err.origin = call, origin
    return err


#: The wrapper :func:`device_errors` generates: ``{params}`` are the wrapped function's
#: parameters, ``{args}`` passes each on; the namespace's own names end in ``_dev_``.
_WRAPPER = """\
def {name}({params}):
    try:
        return fn_dev_({args})
    except (MemoryError, RuntimeError) as exc_dev_:
        err_dev_ = oom_dev_(exc_dev_, name_dev_)
        if err_dev_ is None:
            raise
        raise err_dev_ from err_dev_.origin
"""
_STARS: dict[Any, str] = {inspect.Parameter.VAR_POSITIONAL: "*",
                          inspect.Parameter.VAR_KEYWORD: "**"}


def device_errors(fn: F) -> F:
    """Decorator for public functions: an out-of-memory error of the GPU (CuPy's, Thrust's,
    a CUDA library's or the driver's: :func:`device_oom`) becomes
    :class:`~warplab.core.errors.DeviceOutOfMemoryError` naming the call (the outermost
    public call, where one calls another; the original chained as its cause); everything
    else, host ``MemoryError`` included, passes unchanged.

    Costs one extra Python call frame and no more: the wrapper is generated with ``fn``'s
    parameters and defaults and passes each on by position or name, so a call packs no
    ``*args`` tuple or ``**kwargs`` dict (0.1-0.2 us less than such a wrapper, the part
    of a call whose NumPy equivalent takes 1-2 us).
    """
    ns: dict[str, Any] = {"fn_dev_": fn, "oom_dev_": device_oom, "name_dev_": fn.__name__}
    kind = inspect.Parameter
    params: list[str] = []
    args: list[str] = []
    before = None  # the kind of the parameter before
    for p in inspect.signature(fn, follow_wrapped=False).parameters.values():
        if before is kind.POSITIONAL_ONLY and p.kind is not before:
            params.append("/")
        if p.kind is kind.KEYWORD_ONLY and before in (None, kind.POSITIONAL_ONLY,
                                                     kind.POSITIONAL_OR_KEYWORD):
            params.append("*")
        star = _STARS.get(p.kind, "")
        default = ""
        if p.default is not p.empty:
            ns[f"{p.name}_default_dev_"] = p.default
            default = f"={p.name}_default_dev_"
        params.append(star + p.name + default)
        args.append(f"{p.name}={p.name}" if p.kind is kind.KEYWORD_ONLY else star + p.name)
        before = p.kind
    if before is kind.POSITIONAL_ONLY:
        params.append("/")
    name = fn.__name__ if fn.__name__.isidentifier() else "wrapper"
    src = _WRAPPER.format(name=name, params=", ".join(params), args=", ".join(args))
    exec(compile(src, f"<device_errors {fn.__module__}.{fn.__qualname__}>", "exec"), ns)
    return functools.update_wrapper(ns[name], fn)  # type: ignore[return-value]


def host_memory_available() -> int | None:
    """Bytes of host memory available to new allocations: ``MemAvailable`` of
    ``/proc/meminfo`` (Linux), else the free physical pages (``os.sysconf``); None when
    neither can be read."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def resolve_backend(device: str | None = None) -> str:
    """Return the backend to use for a call.

    Args:
        device: ``"cuda"``, ``"cpu"``, ``"gpu"`` (alias of cuda) or ``None`` for automatic choice
            (``WARPLAB_DEVICE`` if set, else cuda when usable).

    Raises:
        ValueError: an unknown device name.
        DeviceUnavailableError: cuda was asked for explicitly but cannot run.
    """
    explicit = device is not None
    name = device if explicit else os.environ.get("WARPLAB_DEVICE") or None
    if name is None:
        return "cuda" if cuda_available() else "cpu"
    name = name.strip().lower()
    if name == "gpu":
        name = "cuda"
    if name not in BACKENDS:
        src = "device=" if explicit else "WARPLAB_DEVICE="
        raise InvalidValueError(f"unknown {src}{name!r}; valid: {', '.join(BACKENDS)}")
    if name == "cuda" and not cuda_available():
        raise DeviceUnavailableError(f"cuda backend requested but unusable: {cuda_status()[1]}")
    return name


def device_properties() -> dict[str, Any]:
    """deviceQuery-style facts of the current CUDA device (requires the cuda backend)."""
    if not cuda_available():
        raise DeviceUnavailableError(cuda_status()[1])
    import cupy

    dev = cupy.cuda.Device()
    p = cupy.cuda.runtime.getDeviceProperties(dev.id)
    name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
    free, total = cupy.cuda.runtime.memGetInfo()
    def ver(v: int) -> str:
        return f"{v // 1000}.{(v % 1000) // 10}"
    mem_clock_khz = p.get("memoryClockRate") or _attr(dev, "MemoryClockRate")
    bus_bits = p.get("memoryBusWidth") or _attr(dev, "GlobalMemoryBusWidth")
    sm_clock_khz = p.get("clockRate") or _attr(dev, "ClockRate")
    props: dict[str, Any] = {
        "backend": "cuda",
        "name": name,
        "id": dev.id,
        "cc": f"{p['major']}.{p['minor']}",
        "sms": int(p["multiProcessorCount"]),
        "memory_bytes": int(total),
        "memory_free_bytes": int(free),
        "sm_clock_mhz": (sm_clock_khz or 0) / 1000 or None,
        "memory_clock_mhz": (mem_clock_khz or 0) / 1000 or None,
        "memory_bus_bits": bus_bits or None,
        "l2_bytes": int(p.get("l2CacheSize", 0)) or None,
        "shared_per_block_bytes": int(p.get("sharedMemPerBlock", 0)),
        "shared_per_block_optin_bytes": int(p.get("sharedMemPerBlockOptin", 0)),
        "shared_per_sm_bytes": int(p.get("sharedMemPerMultiprocessor", 0)),
        "regs_per_block": int(p.get("regsPerBlock", 0)),
        "warp_size": int(p.get("warpSize", 32)),
        "max_threads_per_sm": int(p.get("maxThreadsPerMultiProcessor", 0)),
        "max_threads_per_block": int(p.get("maxThreadsPerBlock", 0)),
        "async_engines": int(p.get("asyncEngineCount", 0)),
        "ecc": bool(p.get("ECCEnabled", 0)),
        "driver": ver(cupy.cuda.runtime.driverGetVersion()),
        "runtime": ver(cupy.cuda.runtime.runtimeGetVersion()),
    }
    if props["memory_clock_mhz"] and props["memory_bus_bits"]:
        # DDR: two transfers per clock.
        props["datasheet_bw_gbps"] = (2 * props["memory_clock_mhz"] * 1e6
                                      * props["memory_bus_bits"] / 8 / 1e9)
    return props


def _attr(dev: Any, name: str) -> int | None:
    try:
        return int(dev.attributes[name])
    except Exception:
        return None


def cpu_properties() -> dict[str, Any]:
    """What the cpu backend runs on."""
    import platform

    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem: int | None = None
    with contextlib.suppress(ValueError, OSError, AttributeError):
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {"backend": "cpu", "name": name, "cores": os.cpu_count(), "memory_bytes": mem,
            "cc": None, "sms": None}

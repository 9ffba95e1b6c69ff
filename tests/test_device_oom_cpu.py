"""``device_errors`` / ``device_oom`` without a GPU: each kind of device out-of-memory error
(CuPy's, Thrust's ``std::bad_alloc`` through CuPy's bindings, cuBLAS / cuSOLVER / cuRAND,
the runtime's and the driver's codes) becomes ``DeviceOutOfMemoryError`` naming the public call
and the bytes asked or the free device memory; a host ``MemoryError`` (NumPy's), other
CUDA errors and warplab's own errors pass unchanged."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import warplab
from warplab.core import device
from warplab.core.device import device_errors, device_oom, gb
from warplab.core.errors import DeviceOutOfMemoryError, WarplabError


def _kind(name: str, module: str, base: type = RuntimeError) -> type:
    return type(name, (base,), {"__module__": module})


def _through_cupy(exc: BaseException) -> Callable[[], None]:
    """A function that raises ``exc`` from a frame of a CuPy module (as CuPy's Cython code
    adds its frames to a traceback)."""
    ns: dict = {"__name__": "cupy._core._routines_sorting"}
    exec(compile("def argsort(exc):\n    raise exc\n", "cupy/_core/_routines_sorting.pyx",
                 "exec"), ns)
    return lambda: ns["argsort"](exc)


@device_errors
def corr_pairs(fn: Callable[[], None]) -> None:  # a public call by that name
    fn()


def _raise(exc: BaseException) -> Callable[[], None]:
    def fn() -> None:
        raise exc
    return fn


@pytest.fixture(autouse=True)
def free_5gb(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device, "_free_device", lambda: gb(5_000_000_000))


def test_cupy_oom_names_the_call_and_the_bytes() -> None:
    oom = _kind("OutOfMemoryError", "cupy.cuda.memory", MemoryError)
    exc = oom("Out of memory allocating 8,589,934,592 bytes (allocated so far: 1,024 bytes).")
    with pytest.raises(DeviceOutOfMemoryError) as info:
        corr_pairs(_raise(exc))
    msg = str(info.value)
    assert msg.startswith("GPU out of memory in warplab.corr_pairs (8.6 GB asked)")
    assert "8,589,934,592 bytes" in msg and info.value.__cause__ is exc
    assert isinstance(info.value, MemoryError) and isinstance(info.value, WarplabError)


def test_thrust_bad_alloc_through_cupy() -> None:
    exc = MemoryError("std::bad_alloc")
    with pytest.raises(DeviceOutOfMemoryError) as info:
        corr_pairs(_through_cupy(exc))
    msg = str(info.value)
    assert "warplab.corr_pairs" in msg and "Thrust" in msg and "std::bad_alloc" in msg
    assert "free GPU memory now: 5.0 GB" in msg and info.value.__cause__ is exc


def test_bad_alloc_elsewhere_and_numpy_host_oom_stay_host_errors() -> None:
    plain = MemoryError("std::bad_alloc")
    with pytest.raises(MemoryError) as info:
        corr_pairs(_raise(plain))  # not through CuPy: not known to be the device's
    assert info.value is plain
    with pytest.raises(MemoryError) as host:
        corr_pairs(lambda: np.empty(1 << 62, np.uint8))  # NumPy's _ArrayMemoryError
    assert not isinstance(host.value, WarplabError)
    assert type(host.value).__module__.startswith("numpy")
    assert "Unable to allocate" in str(host.value)
    numpy_like = _kind("_ArrayMemoryError", "numpy._core._exceptions", MemoryError)(
        "Unable to allocate 4.00 EiB for an array: cudaErrorMemoryAllocation")
    assert device_oom(numpy_like, "f") is None
    with pytest.raises(MemoryError) as through:  # NumPy's, even inside a CuPy frame
        corr_pairs(_through_cupy(numpy_like))
    assert through.value is numpy_like


@pytest.mark.parametrize("kind, module, text", [
    ("CUBLASError", "cupy_backends.cuda.libs.cublas", "CUBLAS_STATUS_ALLOC_FAILED"),
    ("CUSOLVERError", "cupy_backends.cuda.libs.cusolver", "CUSOLVER_STATUS_ALLOC_FAILED"),
    ("CURANDError", "cupy_backends.cuda.libs.curand", "CURAND_STATUS_ALLOCATION_FAILED"),
    ("CUDARuntimeError", "cupy_backends.cuda.api.runtime",
     "cudaErrorMemoryAllocation: out of memory"),
    ("CUDADriverError", "cupy_backends.cuda.api.driver",
     "CUDA_ERROR_OUT_OF_MEMORY: out of memory"),
    ("DriverError", "warplab.core._launch", "cuLaunchKernel failed: CUDA_ERROR_OUT_OF_MEMORY (2)"),
])
def test_library_and_runtime_codes(kind: str, module: str, text: str) -> None:
    exc = _kind(kind, module)(text)
    with pytest.raises(DeviceOutOfMemoryError) as info:
        corr_pairs(_raise(exc))
    msg = str(info.value)
    assert msg.startswith("GPU out of memory in warplab.corr_pairs: a CUDA library")
    assert f"{kind}: {text}" in msg and "free GPU memory now: 5.0 GB" in msg


def test_free_memory_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device, "_free_device", lambda: None)
    err = device_oom(_kind("CUBLASError", "cupy_backends.cuda.libs.cublas")(
        "CUBLAS_STATUS_ALLOC_FAILED"), "corrcoef")
    assert err is not None and "free GPU memory" not in str(err)
    assert str(err).startswith("GPU out of memory in warplab.corrcoef")


def test_other_errors_pass_unchanged() -> None:
    for exc in (_kind("CUBLASError", "cupy_backends.cuda.libs.cublas")(
                    "CUBLAS_STATUS_INVALID_VALUE"),
                RuntimeError("something else"),
                DeviceOutOfMemoryError("warplab.corr_pairs: the pairs do not fit GPU memory"),
                warplab.HostOutOfMemoryError("warplab.corr_pairs: ... host memory")):
        with pytest.raises(type(exc)) as info:
            corr_pairs(_raise(exc))
        assert info.value is exc
    with pytest.raises(ValueError):
        corr_pairs(_raise(ValueError("cudaErrorMemoryAllocation")))  # not a device error type


def test_public_calls_convert(monkeypatch: pytest.MonkeyPatch) -> None:
    from warplab.families.corr import pairs
    from warplab.families.reduce import plan

    def thrust(*a: object, **k: object) -> None:
        _through_cupy(MemoryError("std::bad_alloc"))()

    monkeypatch.setattr(pairs, "strips_above", thrust)
    with pytest.raises(DeviceOutOfMemoryError, match=r"in warplab\.corr_pairs: a Thrust"):
        warplab.corr_pairs(np.random.default_rng(0).standard_normal((4, 8)), threshold=0.5)
    monkeypatch.setattr(plan, "build", lambda *a, **k: _raise(
        _kind("CUBLASError", "cupy_backends.cuda.libs.cublas")("CUBLAS_STATUS_ALLOC_FAILED"))())
    with pytest.raises(DeviceOutOfMemoryError, match=r"in warplab\.reduce: a CUDA library"):
        warplab.sum(np.arange(7.0, 14.0).reshape(7, 1), axis=0, keepdims=True)


def test_gb() -> None:
    assert gb(34_359_738_368) == "34.4 GB" and gb(2_097_152) == "2.1 MB"
    assert gb(4096) == "4,096 bytes"


def test_nested_public_calls_name_the_outer_one() -> None:
    exc = _kind("OutOfMemoryError", "cupy.cuda.memory", MemoryError)(
        "Out of memory allocating 18,000,384 bytes (allocated so far: 0 bytes).")

    @device_errors
    def gram() -> None:  # a public call that another public call runs
        raise exc

    with pytest.raises(DeviceOutOfMemoryError) as inner:
        gram()
    assert "in warplab.gram (18.0 MB asked)" in str(inner.value)
    with pytest.raises(DeviceOutOfMemoryError) as outer:
        corr_pairs(gram)
    assert str(outer.value).startswith("GPU out of memory in warplab.corr_pairs (18.0 MB")
    assert outer.value.__cause__ is exc and outer.value.origin is exc
    assert outer.value.call == "corr_pairs"
    thrust = MemoryError("std::bad_alloc")

    @device_errors
    def gram2() -> None:
        _through_cupy(thrust)()

    with pytest.raises(DeviceOutOfMemoryError, match=r"in warplab\.corr_pairs: a Thrust") as t:
        corr_pairs(gram2)
    assert t.value.__cause__ is thrust


def test_free_device_message(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    from types import SimpleNamespace

    limit = [0]
    pool = SimpleNamespace(free_bytes=lambda: 10**9, get_limit=lambda: limit[0])
    fake = SimpleNamespace(
        cuda=SimpleNamespace(runtime=SimpleNamespace(memGetInfo=lambda: (4 * 10**9, 8 * 10**9)),
                             get_allocator=lambda: print),  # not a pool's method
        get_default_memory_pool=lambda: pool)
    monkeypatch.undo()  # the real _free_device
    monkeypatch.setitem(sys.modules, "cupy", fake)
    assert device._free_device() == "5.0 GB"
    limit[0] = 2 * 10**9
    assert device._free_device() == "5.0 GB (CuPy's pool limit: 2.0 GB)"
    other = SimpleNamespace(free_bytes=lambda: 0, get_limit=lambda: 10**8)
    fake.cuda.get_allocator = lambda: SimpleNamespace(__self__=other)  # another pool in use
    assert device._free_device() == "4.0 GB (CuPy's pool limit: 0.1 GB)"
    monkeypatch.setitem(sys.modules, "cupy", SimpleNamespace())
    assert device._free_device() is None


def test_the_wrapper_has_the_functions_parameters_and_defaults() -> None:
    """``device_errors``'s generated wrapper passes every kind of parameter on unchanged,
    the defaults the same objects."""
    marker = object()

    @device_errors
    def f(a, b=2, /, c=marker, *args, d, e=None, **kw):  # type: ignore[no-untyped-def]
        return a, b, c, args, d, e, kw

    assert f(1, d=4) == (1, 2, marker, (), 4, None, {})
    assert f(1, 2, 3, 5, 6, d=4, e=7, z=8) == (1, 2, 3, (5, 6), 4, 7, {"z": 8})
    assert f.__name__ == "f" and f.__wrapped__.__defaults__ == (2, marker)
    assert f(1, b=9, d=4) == f.__wrapped__(1, b=9, d=4)  # b positional-only: into **kw
    with pytest.raises(TypeError):
        f(1)  # d is required

    @device_errors
    def g(*, k=1):  # type: ignore[no-untyped-def]
        return k

    assert g() == 1 and g(k=2) == 2
    assert warplab.byte_histogram.__wrapped__.__name__ == "byte_histogram"

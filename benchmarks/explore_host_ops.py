"""Host microseconds of the CuPy operations the small-call paths are made of (GPU machine; not
part of the API). Issue 15, branch latency3: checks the premises of its predictions
(benchmarks/NOTES.md, helper notes latency3) and measures what a direct driver launch would save.

Each row: the operation repeated N times back to back on the current stream (no
synchronisation inside), host time per operation, median of 5 rounds:

- allocation and zeroing: ``cupy.empty``, ``cupy.zeros`` (empty + memset), ``scalar.zeros``
  (warplab's results), ``cupy.empty`` + ``runtime.memsetAsync`` on the stream's handle;
- a device copy of 65 float64: ``ndarray.copy()`` (CuPy's elementwise copy kernel);
- attribute reads: ``a.flags.c_contiguous``, ``a._c_contiguous``, ``a.data.ptr``, a CuPy
  slice ``ws[1:9]``, ``cupy.cuda.Device().id``, ``runtime.getDevice()``, ``memGetInfo``;
- events: a new ``cupy.cuda.Event`` + ``record``, and ``record`` of a kept one;
- launches of an empty kernel with 3 arguments (an array, a uint64, an array): CuPy's
  ``RawKernel`` call, and ``cuda.bindings.driver.cuLaunchKernel`` with a prepacked argument
  array (only the array's address rewritten per call); skipped when cuda-python is missing.

Usage: PYTHONPATH=src python3 benchmarks/explore_host_ops.py
"""
from __future__ import annotations

import ctypes
from typing import Callable

import cupy
import numpy as np
from host_timing import per_call

from warplab.core import scalar

N, ROUNDS = 2000, 5
SRC = 'extern "C" __global__ void empty3(const float* x, unsigned long long n, float* y) {}'


def host_us(fn: Callable[[], object]) -> float:
    """Host microseconds per call (median of ROUNDS rounds of N calls), then a sync."""
    return per_call(fn, calls=N, rounds=ROUNDS, warm=50)


def driver_launch(kernel: cupy.RawKernel, x: cupy.ndarray, y: cupy.ndarray
                  ) -> Callable[[], object] | str:
    """A cuLaunchKernel closure with prepacked parameters, or why there is none."""
    try:
        from cuda.bindings import driver
    except ImportError as exc:
        return f"cuda-python not importable ({exc})"
    try:
        func = driver.CUfunction(kernel.kernel.ptr)
        stream = driver.CUstream(cupy.cuda.get_current_stream().ptr)
    except Exception as exc:  # noqa: BLE001  (CuPy or cuda-python versions differ)
        return f"no CUfunction handle ({type(exc).__name__}: {exc})"
    store = (ctypes.c_uint64 * 3)(x.data.ptr, x.size, y.data.ptr)
    params = (ctypes.c_void_p * 3)(*(ctypes.addressof(store) + 8 * i for i in range(3)))
    addr = ctypes.addressof(params)

    def launch() -> None:
        store[0] = x.data.ptr  # the one argument a call changes
        err, = driver.cuLaunchKernel(func, 1, 1, 1, 32, 1, 1, 0, stream, addr, 0)
        if err != driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"cuLaunchKernel: {err}")

    return launch


def main() -> None:
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        x, y = cupy.ones(1024, cupy.float32), cupy.empty(1024, cupy.float32)
        edges = cupy.linspace(0, 1, 65)
        ws = cupy.empty(64, cupy.uint64)
        kernel = cupy.RawKernel(SRC, "empty3")
        n = np.uint64(x.size)
        kept = cupy.cuda.Event(block=False, disable_timing=True)
        rt = cupy.cuda.runtime

        def empty_memset() -> None:
            a = cupy.empty(64, np.int64)
            rt.memsetAsync(a.data.ptr, 0, a.nbytes, cupy.cuda.get_current_stream().ptr)

        def new_event() -> None:
            cupy.cuda.Event(block=False, disable_timing=True).record()

        rows: list[tuple[str, Callable[[], object] | str]] = [
            ("cupy.empty(64, int64)", lambda: cupy.empty(64, np.int64)),
            ("cupy.zeros(64, int64)", lambda: cupy.zeros(64, np.int64)),
            ("scalar.zeros(64, int64)", lambda: scalar.zeros(64, np.int64)),
            ("cupy.empty + runtime.memsetAsync", empty_memset),
            ("edges.copy() (65 float64)", edges.copy),
            ("x.flags.c_contiguous", lambda: x.flags.c_contiguous),
            ("x._c_contiguous", lambda: x._c_contiguous),
            ("x.data.ptr", lambda: x.data.ptr),
            ("ws[1:9] (a CuPy view)", lambda: ws[1:9]),
            ("cupy.cuda.Device().id", lambda: cupy.cuda.Device().id),
            ("runtime.getDevice()", rt.getDevice),
            ("runtime.memGetInfo()", rt.memGetInfo),
            ("new Event + record", new_event),
            ("kept Event record", kept.record),
            ("RawKernel(x, n, y) launch", lambda: kernel((1,), (32,), (x, n, y))),
            ("cuLaunchKernel, prepacked", driver_launch(kernel, x, y)),
        ]
        print(f"{'operation':36s} host us per call")
        for name, fn in rows:
            if isinstance(fn, str):
                print(f"{name:36s} skipped: {fn}")
                continue
            try:
                print(f"{name:36s} {host_us(fn):8.2f}")
            except Exception as exc:  # noqa: BLE001  (a row that cannot run says why)
                print(f"{name:36s} failed: {type(exc).__name__}: {exc}")


if __name__ == "__main__":
    main()

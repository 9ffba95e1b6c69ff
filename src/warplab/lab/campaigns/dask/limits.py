"""What bounds a record of the Dask campaign, measured by the campaign itself, and the rule
that no record is above its ceiling.

* Device peaks (:func:`device_peaks`, run in this process and on every worker): cuBLAS GEMM
  of the precision a workload runs (float64: DGEMM, on Hopper's FP64 tensor cores; float32
  and tf32: cuBLAS with TF32 tensor cores, the most a 3xTF32 or TF32 product can reach) and
  the host-to-device pinned copy rate; next to the datasheet figure where there is one (the
  FP64 tensor-core peak from the SM count and clock: 66.9 TFLOP/s on an H100 SXM). Where the
  call's engine (:func:`corr_engine`: the registry's choice for the workload's shape, the
  same the workers make) is ``int8_slices`` (the default from 1,024 series of 4,096 values,
  any precision), it runs int8 GEMMs, ``s (s + 1) / 2`` of them per product at ``s`` slices:
  its ceiling in the FLOP/s the records count is the int8 datasheet peak over that many, at
  the precision's nominal ``s`` (float64: 5, so 15). A FLOP/s ceiling is the sum over the
  workers' devices of the largest of measured and datasheet (or, for the int8 slices, that
  int8 figure), so an engine that beats cuBLAS is not rejected.
* Host reads (:func:`host_read_gbps`, :func:`page_cache_read_gbps`): a large host array and
  the page-cached files read by as many threads as the host has cores.
* Cold files: :func:`evict` drops the files from the page cache (``fsync``, then
  ``posix_fadvise(POSIX_FADV_DONTNEED)``) and :func:`resident_share` says how much of them is
  still cached (``mincore``), so a record says whether the eviction worked.

:func:`judge` marks a record failed (verified False, the error naming the ceiling) where its
rate exceeds its ceiling by more than :data:`MARGIN` (the ceilings are medians of a few
runs). :data:`LATE_MS`: a device synchronisation after ``wait()`` that takes longer means a
task returned before its GPU work was done; the record is flagged.
"""
from __future__ import annotations

import ctypes
import mmap
import os
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

MARGIN = 1.05
LATE_MS = 5.0
#: Which cuBLAS rate and datasheet key bound a Gram product of each precision.
GEMM_OF = {"float64": ("dgemm", "datasheet_fp64_tensor_gflops"),
           "float32": ("tf32gemm", None), "tf32": ("tf32gemm", None)}


def _tf32_gemm_gflops(n: int = 8192, runs: int = 10) -> float:
    """cuBLAS float32 GEMM with TF32 tensor cores (CuPy's compute type set to TF32 for it)."""
    import cupy
    from cupy._core import _routines_linalg as linalg

    a, b = (cupy.random.random((n, n), dtype=np.float32) for _ in range(2))
    c = cupy.empty((n, n), np.float32)
    before = linalg.get_compute_type(np.float32)
    linalg.set_compute_type(np.float32, linalg.COMPUTE_TYPE_TF32)
    try:
        ms = []
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        for i in range(runs + 2):
            start.record()
            cupy.matmul(a, b, out=c)
            stop.record()
            stop.synchronize()
            if i >= 2:
                ms.append(cupy.cuda.get_elapsed_time(start, stop))
    finally:
        linalg.set_compute_type(np.float32, before)
    del a, b, c
    cupy.get_default_memory_pool().free_all_blocks()
    return 2 * n ** 3 / (statistics.median(ms) * 1e-3) / 1e9


def device_peaks(backend: str, precisions: tuple[str, ...]) -> dict[str, Any]:
    """This process's device: measured GEMM GFLOP/s for ``precisions``, the datasheet peaks,
    and the pinned H2D GB/s (None on the cpu backend). Runs on the workers by
    ``client.run`` too, so each worker measures its own GPU."""
    from warplab.core.device import cpu_properties, device_properties
    from warplab.lab.harness import ceiling_rates as hr, ceilings as hc

    if backend != "cuda":
        g = hr.gemm_rate("cpu", "float64")["dgemm_gflops"]
        return {"device": cpu_properties().get("name"), "dgemm_gflops": g, "tf32gemm_gflops": g,
                "h2d_pinned_gbps": None}
    props = device_properties()
    out: dict[str, Any] = {"device": props.get("name"), **hc.datasheet(props)}
    if "float64" in precisions:
        out["dgemm_gflops"] = hr.gemm_rate("cuda", "float64")["dgemm_gflops"]
    if {"float32", "tf32"} & set(precisions):
        out["tf32gemm_gflops"] = _tf32_gemm_gflops()
    out["h2d_pinned_gbps"] = hr.host_transfer("cuda", "h2d", True)["h2d_pinned_gbps"]
    import cupy

    cupy.get_default_memory_pool().free_all_blocks()
    return out


def slices_products(precision: str) -> int:
    """int8 GEMMs of ``int8_slices`` per Gram product of ``precision`` at its nominal s."""
    from warplab.families.corr.slices import NOMINAL_SLICES

    s = NOMINAL_SLICES[precision]
    return s * (s + 1) // 2


def corr_engine(m: int, n: int, precision: str, backend: str) -> str:
    """The name of the ``corrcoef`` engine that runs ``m`` series of ``n`` float32 values at
    ``precision`` on ``backend`` here: what every worker's replica and the direct call pick."""
    from warplab.core import registry
    from warplab.families.corr.spec import CorrProblem

    problem = CorrProblem(m, n, np.dtype(np.float32), precision, backend == "cuda")
    return registry.choose("corrcoef", backend, problem).name


def flop_ceiling(peaks: list[dict], precision: str, backend: str, engine: str = ""
                 ) -> tuple[float | None, str]:
    """(TFLOP/s, how it is made) of a Gram product of ``precision`` by ``engine`` on the
    devices ``peaks`` (one dict per worker): per device the larger of the measured GEMM and
    its datasheet peak, or for ``int8_slices`` the int8 datasheet peak over
    :func:`slices_products`."""
    name, sheet = GEMM_OF[precision]
    measured = [p.get(f"{name}_gflops") or 0.0 for p in peaks]
    if not measured or not all(measured):
        return None, f"no {name} rate measured"
    if backend != "cuda":
        return max(measured) / 1e3, \
            f"host np.matmul float64, {max(measured):.0f} GFLOP/s (shared)"
    if engine == "int8_slices":
        prods = slices_products(precision)
        int8 = [(p.get("datasheet_int8_tensor_gops") or 0.0) / prods for p in peaks]
        if all(int8):
            return sum(int8) / 1e3, (f"{len(int8)} x int8 datasheet {max(int8) * prods:.0f} "
                                     f"GOP/s / {prods} (int8 slices) GFLOP/s")
    sheet_v = [(p.get(sheet) or 0.0) if sheet else 0.0 for p in peaks]
    per = [max(a, b) for a, b in zip(measured, sheet_v)]
    how = (f"{len(per)} x max(measured {name} {min(measured):.0f}, datasheet "
           f"{max(sheet_v):.0f}) GFLOP/s" if sheet else
           f"{len(per)} x measured {name} {min(measured):.0f} GFLOP/s")
    return sum(per) / 1e3, how


def byte_ceiling(peaks: list[dict], page_cache_gbps: float | None, backend: str
                 ) -> tuple[float | None, str]:
    """(GB/s, how) for reading files into the workers: the lower of the workers' summed
    pinned H2D rates (cuda) and the host's page-cache read rate."""
    bounds = []
    h2d = [float(p.get("h2d_pinned_gbps") or 0.0) for p in peaks]
    if backend == "cuda" and h2d and all(h2d):
        bounds.append((sum(h2d), f"{len(h2d)} x H2D pinned {min(h2d):.1f} GB/s"))
    if page_cache_gbps:
        bounds.append((page_cache_gbps, f"host page-cache read {page_cache_gbps:.1f} GB/s"))
    if not bounds:
        return None, "no ceiling measured"
    return min(bounds)


def judge(record: dict, rate: float | None, unit: str, ceiling: float | None, how: str) -> None:
    """Attach ``ceiling`` to ``record``; a rate above it (beyond MARGIN) fails the record."""
    record["ceiling"] = {"value": ceiling, "unit": unit, "by": how, "margin": MARGIN}
    record["pct_of_ceiling"] = 100.0 * rate / ceiling if rate and ceiling else None
    if rate and ceiling and rate > ceiling * MARGIN:
        record["verified"] = False
        record["error"] = (f"rate {rate:,.4g} {unit} exceeds its ceiling {ceiling:,.4g} {unit} "
                           f"({how}): not a result (a task reported done before its work "
                           f"had finished, or the work counted is not the work done)")
        for key in ("tflops", "e2e_gbps", "gbps", "pct_of_copy_bw"):
            if key in record:
                record[key] = None


def host_read_gbps(nbytes: int, threads: int, runs: int = 3) -> float:
    """Bytes per second of ``threads`` threads each summing a slice of one host array of
    ``nbytes`` (NumPy's reductions release the GIL), median of ``runs``."""
    a = np.ones(max(threads, nbytes // 8), np.uint64)
    parts = np.array_split(a, threads)
    ms = []
    with ThreadPoolExecutor(threads) as ex:
        for i in range(runs + 1):
            t0 = time.perf_counter()
            list(ex.map(np.add.reduce, parts))
            if i:
                ms.append(time.perf_counter() - t0)
    return a.nbytes / statistics.median(ms) / 1e9


def _read_range(path: str, offset: int, length: int, buf: bytearray) -> int:
    got = 0
    fd = os.open(path, os.O_RDONLY)
    try:
        view = memoryview(buf)
        while got < length:
            n = os.preadv(fd, [view[:min(len(buf), length - got)]], offset + got)
            if n <= 0:
                break
            got += n
    finally:
        os.close(fd)
    return got


def page_cache_read_gbps(paths: list[str], threads: int, runs: int = 3,
                         chunk: int = 64 << 20) -> float:
    """Bytes per second of ``threads`` threads reading the files with ``preadv`` in ranges of
    ``chunk`` bytes (the files are in the page cache after the first pass), median."""
    ranges = [(p, off, min(chunk, os.path.getsize(p) - off)) for p in paths
              for off in range(0, os.path.getsize(p), chunk)]
    local = threading.local()  # one buffer per thread

    def read(job: tuple[str, int, int]) -> int:
        if not hasattr(local, "buf"):
            local.buf = bytearray(chunk)
        return _read_range(job[0], job[1], job[2], local.buf)

    total = sum(r[2] for r in ranges)
    ms = []
    with ThreadPoolExecutor(threads) as ex:
        for i in range(runs + 1):
            t0 = time.perf_counter()
            list(ex.map(read, ranges))
            if i:
                ms.append(time.perf_counter() - t0)
    return total / statistics.median(ms) / 1e9


def resident_share(paths: list[str]) -> float | None:
    """The share of the files' pages in the page cache (``mincore``), or None where it cannot
    be asked (no libc)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    page = mmap.PAGESIZE
    resident = pages = 0
    for p in paths:
        size = os.path.getsize(p)
        if size == 0:
            continue
        fd = os.open(p, os.O_RDONLY)
        try:
            addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
            if addr in (None, ctypes.c_void_p(-1).value):
                return None
            try:
                n = -(-size // page)
                vec = (ctypes.c_ubyte * n)()
                if libc.mincore(addr, size, vec) != 0:
                    return None
                resident += int((np.ctypeslib.as_array(vec) & 1).sum())
                pages += n
            finally:
                libc.munmap(addr, size)
        finally:
            os.close(fd)
    return resident / pages if pages else None

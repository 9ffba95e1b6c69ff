"""The timed measurements behind the device's ceilings (:mod:`warplab.lab.harness.ceilings`
gathers them per device, stores them and sets them next to the datasheet numbers).

One function per ceiling, each cached per process and backend, each returning flat keys
``<name>_<unit>`` (the median rate), ``<name>_ms`` (timing statistics), ``<name>_method``:

- ``copy_gbps``: a large device-to-device copy (``cudaMemcpyAsync``), bytes read + written.
- ``read_gbps``: read-only, the fastest of the read kernels of harness/ceilings.cu over 1 GiB
  (16-byte loads, one word written per block; a grid stride or one chunk per block); bytes read.
- ``h2d_pinned_gbps``, ``h2d_pageable_gbps``, ``d2h_pinned_gbps``, ``d2h_pageable_gbps``:
  256 MiB ``cudaMemcpyAsync`` between host and device, pinned or pageable host memory.
- ``sgemm_gflops``, ``dgemm_gflops``: cuBLAS through ``cupy.matmul`` at N = 8192, 2 N^3 flops per
  call, float32 in full FP32 arithmetic (CuPy's TF32 mode off; ``sgemm_tf32`` records it).

On the cpu backend: copy (``np.copyto``), read (the fastest of :data:`CPU_READS` over 64 MiB,
more than the caches hold, one thread as NumPy's reductions run: ``np.sum`` of float32 alone is
held back by its pairwise float loop, 8.4 GB/s on a 2-core EPYC where the same bytes summed as
int64 read at 10.0) and ``np.matmul`` at N = 1024 (the cpu matmul campaign's largest product);
the host-transfer ceilings are None. Inputs that stay in the caches between runs can pass the
read ceiling (the report says so where they do).
"""
from __future__ import annotations

import contextlib
import functools
import os
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from warplab.core.errors import InvalidValueError
from warplab.lab.harness.stats import summarize
from warplab.lab.harness.timing import time_runs

TRANSFER_BYTES = 256 << 20
GEMM_N = {"cuda": 8192, "cpu": 1024}
#: The cpu read ceiling's candidates: one pass over the same buffer each, one thread, no temporary.
CPU_READS: tuple[tuple[str, Callable[[np.ndarray], Any]], ...] = (
    ("np.sum of float32", np.sum),
    ("np.max of float32", np.max),
    ("np.sum of the bytes as int64", lambda x: np.sum(x.view(np.int64))),
    ("np.bitwise_or.reduce of the bytes as uint64",
     lambda x: np.bitwise_or.reduce(x.view(np.uint64))),
)
#: How ``read_method`` starts on the cpu backend (a stored ceiling measured otherwise is stale).
CPU_READ_METHOD = "fastest of NumPy reductions"


def _timed(body: Callable[[], None], *, cuda: bool, warmup: int, runs: int,
           hold: bool = False) -> dict:
    """Timing statistics (ms) of ``body`` as one phase: CUDA events or the host clock."""
    def run(rec: Any) -> None:
        with rec.phase("kernel", hold=hold):
            body()

    return summarize(time_runs(run, warmup=warmup, runs=runs, cuda=cuda)["kernel"])


def _rate(name: str, unit: str, amount: float, st: dict, method: str, **extra: Any) -> dict:
    """``{name_unit: amount / median / 1e9, name_ms, name_method, **extra}``."""
    return {f"{name}_{unit}": amount / (st["median"] * 1e-3) / 1e9, f"{name}_ms": st,
            f"{name}_method": method, **extra}


def _device_buffer_bytes(fraction: int) -> int:
    """1 GiB, or 1/``fraction`` of the free device memory if that is less; a multiple of 16."""
    import cupy

    return min(1 << 30, cupy.cuda.runtime.memGetInfo()[0] // fraction) & ~15


@functools.lru_cache(maxsize=4)
def copy_bandwidth(backend: str, nbytes: int | None = None, runs: int = 20) -> dict:
    """Copy ceiling: bytes read + written per second, median of ``runs`` copies."""
    if backend == "cuda":
        import cupy

        n = nbytes or _device_buffer_bytes(4)
        src, dst = cupy.empty(n, np.uint8), cupy.empty(n, np.uint8)
        src.fill(1)
        st = _timed(lambda: dst.data.copy_from_device_async(src.data, n), cuda=True,
                    warmup=3, runs=runs)
        method = "cudaMemcpyAsync device-to-device, bytes read + written"
    else:
        n = nbytes or (256 << 20)
        h_src, h_dst = np.ones(n, np.uint8), np.empty(n, np.uint8)
        st = _timed(lambda: np.copyto(h_dst, h_src), cuda=False, warmup=1, runs=max(3, runs // 4))
        method = "np.copyto host-to-host, bytes read + written"
    return _rate("copy", "gbps", 2 * n, st, method, copy_bytes=n)


#: The cuda read kernels (harness/ceilings.cu), each (kernel, blocks per SM, threads per block,
#: one contiguous chunk per block); the read ceiling is the fastest of them.
CUDA_READS = (("read_words", 8, 256, False), ("read_chunks4", 4, 512, True),
              ("read_chunks8", 4, 512, True))


@functools.lru_cache(maxsize=16)
def read_bandwidth(backend: str, runs: int = 20, nbytes: int | None = None) -> dict:
    """Read-only ceiling: bytes read per second, the fastest of :data:`CUDA_READS` (see
    harness/ceilings.cu: ``read_words`` a grid-stride loop, ``read_chunks*`` one contiguous
    chunk per block with streaming loads), over 1 GiB (cuda; less if memory is short) or
    ``nbytes`` (rounded down to 16 bytes); ``read_gbps_by_method`` keeps every kernel's.

    The 1 GiB figure is the stored ``read_gbps``. A read of fewer bytes pays the same fixed
    cost (the grid's ramp-up and tail, ~3 us on the H100) over a shorter time: on the H100
    ``read_words`` reaches 3068 GB/s over 1 GiB, 2982 over 256 MiB and 2844 over 128 MiB
    (benchmarks/explore_rows_short.py). Campaigns whose inputs are smaller than 1 GiB record
    the ceiling at their own size next to it (``read_gbps_same_bytes``)."""
    if backend != "cuda":
        return _cpu_read(nbytes or (64 << 20), max(3, runs // 4))
    import cupy

    from warplab.core.loader import get_kernel

    n = (nbytes & ~15) if nbytes else _device_buffer_bytes(4)
    d_words = cupy.ones(n // 4, np.uint32)
    sms = int(cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["multiProcessorCount"])
    timed, how = {}, {}
    for name, per_sm, block, chunked in CUDA_READS:
        blocks = per_sm * sms
        d_sums = cupy.zeros(blocks, np.uint32)
        kernel = get_kernel(Path(__file__).with_name("ceilings.cu"), name)
        chunk = -(-(n // 16) // blocks)
        chunk = -(-chunk // 32) * 32  # whole 512-byte segments per warp instruction
        args = ((d_words, np.uint64(n // 16), np.uint64(chunk), d_sums) if chunked
                else (d_words, np.uint64(n // 16), d_sums))
        timed[name] = _timed(lambda k=kernel, b=blocks, t=block, a=args: k((b,), (t,), a),
                             cuda=True, warmup=3, runs=runs, hold=True)
        total = int(d_sums.sum(dtype=np.uint64).get()) % (1 << 32)
        if total != (n // 4) % (1 << 32):
            raise RuntimeError(f"{name} summed {total}, expected {(n // 4) % (1 << 32)}")
        how[name] = (f"{name} kernel ({blocks} blocks of {block}"
                     f"{', one contiguous chunk each' if chunked else ', grid stride'})")
    name, st = min(timed.items(), key=lambda kv: kv[1]["median"])
    return _rate("read", "gbps", n, st, f"{how[name]}, 16-byte loads, one word written per "
                 "block, the fastest of " + ", ".join(timed) + "; bytes read", read_bytes=n,
                 read_gbps_by_method={k: n / (v["median"] * 1e-3) / 1e9
                                      for k, v in timed.items()})


def _cpu_read(nbytes: int, runs: int) -> dict:
    """The cpu read ceiling over ``nbytes`` (rounded down to 8): the fastest of
    :data:`CPU_READS`, each timed ``runs`` times; ``read_gbps_by_method`` keeps every one's."""
    n = nbytes & ~7
    h_x = np.ones(n // 4, np.float32)
    timed = {name: _timed(lambda f=f: f(h_x), cuda=False, warmup=1, runs=runs)
             for name, f in CPU_READS}
    name, st = min(timed.items(), key=lambda kv: kv[1]["median"])
    return _rate("read", "gbps", n, st, f"{CPU_READ_METHOD} ({name}; one thread, as NumPy's "
                 f"reductions run), bytes read", read_bytes=n, read_gbps_by_method={
                     k: n / (v["median"] * 1e-3) / 1e9 for k, v in timed.items()})


@functools.lru_cache(maxsize=16)
def host_transfer(backend: str, direction: str, pinned: bool, nbytes: int = TRANSFER_BYTES,
                  runs: int = 10) -> dict:
    """Host-device ceiling for ``direction`` ``"h2d"`` or ``"d2h"``: bytes per second of one
    ``cudaMemcpyAsync`` of ``nbytes``; None on the cpu backend (there is no device)."""
    if direction not in ("h2d", "d2h"):
        raise InvalidValueError(f"direction must be 'h2d' or 'd2h', not {direction!r}")
    name = f"{direction}_{'pinned' if pinned else 'pageable'}"
    if backend != "cuda":
        return {f"{name}_gbps": None, f"{name}_method": "needs the cuda backend"}
    import cupy
    import cupyx

    h_buf = cupyx.empty_pinned(nbytes, np.uint8) if pinned else np.empty(nbytes, np.uint8)
    h_buf.fill(1)  # touches every page before the timing
    d_buf = cupy.empty(nbytes, np.uint8)
    h_ptr = h_buf.ctypes.data
    if direction == "h2d":
        def body() -> None:
            d_buf.data.copy_from_host_async(h_ptr, nbytes)
    else:
        def body() -> None:
            d_buf.data.copy_to_host_async(h_ptr, nbytes)
    st = _timed(body, cuda=True, warmup=2, runs=runs)
    host = "pinned" if pinned else "pageable"
    return _rate(name, "gbps", nbytes, st, f"cudaMemcpyAsync {direction.upper()}, {host} host "
                 f"memory, {nbytes >> 20} MiB", **{f"{name}_bytes": nbytes})


@contextlib.contextmanager
def _fp32_matmul() -> Iterator[str | None]:
    """Run CuPy's float32 matmul with its default (full FP32) compute type inside the block.

    Yields the compute type that was set before (e.g. ``"TF32"`` under ``CUPY_TF32=1``) when it
    was not the default; it is switched to the default and restored afterwards."""
    from cupy._core import _routines_linalg as linalg

    before = linalg.get_compute_type(np.float32)
    changed = before != linalg.COMPUTE_TYPE_DEFAULT
    if changed:
        linalg.set_compute_type(np.float32, linalg.COMPUTE_TYPE_DEFAULT)
    try:
        yield linalg.compute_type_to_str(before) if changed else None
    finally:
        if changed:
            linalg.set_compute_type(np.float32, before)


@functools.lru_cache(maxsize=8)
def gemm_rate(backend: str, dtype: str, n: int | None = None, runs: int = 10) -> dict:
    """Matrix-multiply ceiling for ``dtype`` ``"float32"`` (``sgemm_*``) or ``"float64"``
    (``dgemm_*``): 2 n^3 flops per ``n x n`` product, median of ``runs``."""
    name = {"float32": "sgemm", "float64": "dgemm"}[dtype]
    n = n or GEMM_N.get(backend, 512)
    flops = 2 * n ** 3
    if backend != "cuda":
        rng = np.random.default_rng(0)
        h_a, h_b = (rng.random((n, n)).astype(dtype) for _ in range(2))
        h_c = np.empty((n, n), dtype)
        st = _timed(lambda: np.matmul(h_a, h_b, out=h_c), cuda=False, warmup=1, runs=5)
        return _rate(name, "gflops", flops, st, f"np.matmul {dtype}, N={n}, 2N^3 flops",
                     **{f"{name}_n": n})
    import cupy

    free = cupy.cuda.runtime.memGetInfo()[0]
    while n > 1024 and 3 * n * n * np.dtype(dtype).itemsize > free // 2:
        n //= 2
    flops = 2 * n ** 3
    d_a, d_b = (cupy.random.random((n, n)).astype(dtype) for _ in range(2))
    d_c = cupy.empty((n, n), dtype)
    with _fp32_matmul() if dtype == "float32" else contextlib.nullcontext() as overridden:
        st = _timed(lambda: cupy.matmul(d_a, d_b, out=d_c), cuda=True, warmup=2, runs=runs)
    compute = "FP32 arithmetic, TF32 off" if dtype == "float32" else "FP64"
    method = f"cuBLAS via cupy.matmul {dtype}, N={n}, 2N^3 flops, {compute}"
    extra: dict[str, Any] = {f"{name}_n": n}
    if dtype == "float32":
        extra["sgemm_tf32"] = False
        extra["sgemm_cupy_tf32_env"] = os.environ.get("CUPY_TF32")
        if overridden:
            method += f" (CuPy's float32 compute type was {overridden}: default for this run)"
    return _rate(name, "gflops", flops, st, method, **extra)

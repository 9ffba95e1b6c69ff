"""Launches that overlap the stream's previous kernel (``Prepared(overlap=True)``: programmatic
stream serialization, sm_90 and later) on the GPU (``pytest -m gpu``): a kernel so launched
sees every write of the kernel before it, whether that one was launched the plain way and
runs long or was itself overlapped; the library's overlapped calls (the axis reductions, the
batched copy's warp and BLEV kernels) read what a slow kernel queued before them wrote."""
from __future__ import annotations

import numpy as np
import pytest

import warplab
from warplab.core import launch

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)
cupy = pytest.importorskip("cupy")

SRC = r"""
template <class T> __device__ void fill(T* x, unsigned long long n, double v, long long cycles) {
    const long long t0 = clock64();
    while (clock64() - t0 < cycles) { }
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
         i < n; i += (unsigned long long)gridDim.x * blockDim.x) x[i] = (T)v;
}
extern "C" __global__ void slow_fill_f(float* x, unsigned long long n, double v, long long c) {
    fill(x, n, v, c);
}
extern "C" __global__ void slow_fill_d(double* x, unsigned long long n, double v, long long c) {
    fill(x, n, v, c);
}
extern "C" __global__ void add_one(float* x, unsigned long long n) {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
         i < n; i += (unsigned long long)gridDim.x * blockDim.x) x[i] += 1.0f;
}
"""
#: ~2 ms of spinning at 2 GHz before the fill. The slow kernel never lets dependents in early,
#: so an overlapped kernel after it is placed as its blocks exit and waits for their writes;
#: the chain of overlapped kernels (each letting the next in at its start) is where a kernel
#: that did not wait would read its predecessor's input before the predecessor wrote it.
SPIN = np.int64(4_000_000)


def _module() -> object:
    return cupy.RawModule(code=SRC)


def _slow_fill(x: object, v: float) -> None:
    """Fill ``x`` (float32 or float64) with ``v`` after ~2 ms of spinning (a plain launch)."""
    name = "slow_fill_d" if x.dtype == np.float64 else "slow_fill_f"
    _module().get_function(name)((64,), (256,), (x, np.uint64(x.size), np.float64(v), SPIN))


def test_overlapped_chain_sees_every_earlier_write() -> None:
    add = _module().get_function("add_one")
    x = cupy.empty(1 << 20, np.float32)
    go = launch.Prepared(add, (132,), (256,), (x, np.uint64(x.size)), overlap=True)
    for _ in range(3):
        _slow_fill(x, 0.0)
        for _ in range(40):
            go(x, np.uint64(x.size))
        got = cupy.asnumpy(x)
        assert (got == 40.0).all(), np.unique(got)[:8]


def test_in_use_where_the_driver_and_device_allow() -> None:
    if launch.function() is None:
        pytest.skip(f"no C launch: {launch.status()}")
    cc = int(cupy.cuda.Device().compute_capability)
    fn = launch.after_function()
    assert (fn is not None) == (cc >= 90), (cc, fn)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(4096, 33), (1024, 256), (64, 5000), (8, 1 << 16)])
@pytest.mark.parametrize("axis", [0, 1])
def test_reductions_after_a_slow_producer(dtype: type, shape: tuple, axis: int) -> None:
    x = cupy.empty(shape, dtype)
    for v in (1.0, 3.0):
        _slow_fill(x, v)
        got = cupy.asnumpy(warplab.mean(x, axis=axis))
        assert (got == v).all(), (v, np.unique(got)[:8])
        _slow_fill(x, 2 * v)
        got = cupy.asnumpy(warplab.sum(x, axis=axis))
        assert (got == 2 * v * shape[axis]).all(), (v, np.unique(got)[:8])


@pytest.mark.parametrize("size", [100, 4096, 100_000])
def test_memcpy_batched_after_a_slow_producer(size: int) -> None:
    count = 64
    src = cupy.empty(size * count // 4 + 1, np.float32)
    dst = cupy.zeros_like(src)
    base_s, base_d = src.data.ptr, dst.data.ptr
    offs = cupy.arange(count, dtype=cupy.uint64) * size
    sp, dp = offs + base_s, offs + base_d
    sizes = cupy.full(count, size, cupy.int64)
    for v in (1.0, 2.0):
        _slow_fill(src, v)  # the copy's kernels follow it directly on the stream
        warplab.memcpy_batched(sp, dp, sizes)
        _slow_fill(src, -v)  # after the copy: must not reach the destination
        got = cupy.asnumpy(dst)[: size * count // 4]
        assert (got == v).all(), (v, np.unique(got)[:8])

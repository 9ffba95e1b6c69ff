// Benchmark helper: CUB's DeviceMemcpy::Batched behind a C function, loaded with ctypes by
// lab/campaigns/memcpy/cub_helper.py (built there with nvcc into a cached shared library). Its
// temporary storage is allocated once and kept (grown when a larger batch needs more), so a
// timed call is CUB's two kernels and nothing else.
#include <cstdint>
#include <cub/device/device_memcpy.cuh>
#include <cuda_runtime.h>

namespace {
void* temp = nullptr;
size_t temp_bytes = 0;
}  // namespace

// Copy sizes[i] bytes from src[i] to dst[i] (device arrays of n entries) on `stream`;
// returns the cudaError_t of the call (0 on success).
extern "C" int warplab_cub_memcpy_batched(const uint64_t* src, const uint64_t* dst,
                                          const uint64_t* sizes, int64_t n, void* stream) {
    if (n == 0) return 0;
    void* const* in = reinterpret_cast<void* const*>(src);
    void* const* out = reinterpret_cast<void* const*>(dst);
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    size_t need = 0;
    cudaError_t e = cub::DeviceMemcpy::Batched(nullptr, need, in, out, sizes, n, s);
    if (e != cudaSuccess) return static_cast<int>(e);
    if (need > temp_bytes) {
        if (temp) cudaFree(temp);
        temp = nullptr;
        temp_bytes = 0;
        e = cudaMalloc(&temp, need);
        if (e != cudaSuccess) return static_cast<int>(e);
        temp_bytes = need;
    }
    return static_cast<int>(cub::DeviceMemcpy::Batched(temp, need, in, out, sizes, n, s));
}

// The runtime's own batch (CUDA 13): cudaMemcpyBatchAsync with host arrays of addresses and
// sizes, stream-ordered source access. Not available on the legacy default stream. Returns
// the cudaError_t (-1 where the toolkit lacks it).
extern "C" int warplab_memcpy_batch_async(const uint64_t* h_src, const uint64_t* h_dst,
                                          const uint64_t* h_sizes, int64_t n, void* stream) {
#if CUDART_VERSION >= 13000
    if (n == 0) return 0;
    cudaMemcpyAttributes attr = {};
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    size_t first = 0;
    return static_cast<int>(cudaMemcpyBatchAsync(
        reinterpret_cast<void* const*>(h_dst), reinterpret_cast<const void* const*>(h_src),
        reinterpret_cast<const size_t*>(h_sizes), static_cast<size_t>(n), &attr, &first, 1,
        static_cast<cudaStream_t>(stream)));
#else
    (void)h_src; (void)h_dst; (void)h_sizes; (void)n; (void)stream;
    return -1;
#endif
}

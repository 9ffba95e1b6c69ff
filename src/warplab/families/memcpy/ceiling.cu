// The scatter ceiling of a batched copy (memcpy family, ceiling_cuda.py): per buffer the
// descriptor (source, destination, size: the arrays every variant reads) and, for a positive
// size, the source's first and last byte stored at the destination's first and last byte.
// Up to 33 bytes a buffer spans at most two 32-byte sectors, and these two bytes touch every
// sector a correct copy must read and write; above that a subset. Not a copy: the bytes
// between the two ends are left as they were.
//
// A thread takes PER_THREAD buffers of a chunk of BLOCK * PER_THREAD (stride BLOCK, so every
// descriptor load is coalesced over the warp), issues all their loads, then all their stores;
// the grid is resident (blocks at full occupancy on every SM) and strides over the chunks.
#include "warplab.cuh"

#if !defined(WARPLAB_MEMCPY_UNROLL) || !defined(MEMCPY_CEILING_THREADS_PER_SM)
#error "ceiling.cu needs -DWARPLAB_MEMCPY_UNROLL and -DMEMCPY_CEILING_THREADS_PER_SM (ceiling_cuda.py)"
#endif
#include "memcpy_copy.cuh"
// Full occupancy on sm_80 and sm_90 (MEMCPY_CEILING_THREADS_PER_SM); elsewhere (sm_75: 1024
// threads an SM, sm_86/89: 1536) ask only for what every one of them holds.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ != 800 && __CUDA_ARCH__ != 900
#define CEILING_SM_THREADS 1024
#else
#define CEILING_SM_THREADS MEMCPY_CEILING_THREADS_PER_SM
#endif

template <int BLOCK, int PER_THREAD>
__global__ void __launch_bounds__(BLOCK, CEILING_SM_THREADS / BLOCK)
memcpy_scatter_touch(const u64* __restrict__ src, const u64* __restrict__ dst,
                     const u64* __restrict__ sizes, u64 n) {
    const u64 chunk = (u64)BLOCK * PER_THREAD;
    for (u64 base = (u64)blockIdx.x * chunk + threadIdx.x; base < n;
         base += (u64)gridDim.x * chunk) {
        u8* d[PER_THREAD];
        u64 len[PER_THREAD];
        u32 ends[PER_THREAD];  // the first byte, and the last one shifted by 8
#pragma unroll
        for (int j = 0; j < PER_THREAD; ++j) {
            const u64 i = base + (u64)j * BLOCK;
            const bool in = i < n;
            const u8* s = in ? (const u8*)src[i] : nullptr;
            d[j] = in ? (u8*)dst[i] : nullptr;
            len[j] = in ? size_of(sizes, i) : 0;
            ends[j] = len[j] ? (u32)s[0] | ((u32)s[len[j] - 1] << 8) : 0;
        }
#pragma unroll
        for (int j = 0; j < PER_THREAD; ++j) {
            if (len[j]) d[j][0] = (u8)ends[j];
            if (len[j] > 1) d[j][len[j] - 1] = (u8)(ends[j] >> 8);
        }
    }
}

template __global__ void memcpy_scatter_touch<256, 1>(const u64*, const u64*, const u64*, u64);
template __global__ void memcpy_scatter_touch<256, 2>(const u64*, const u64*, const u64*, u64);
template __global__ void memcpy_scatter_touch<256, 4>(const u64*, const u64*, const u64*, u64);
template __global__ void memcpy_scatter_touch<512, 1>(const u64*, const u64*, const u64*, u64);
template __global__ void memcpy_scatter_touch<512, 2>(const u64*, const u64*, const u64*, u64);
template __global__ void memcpy_scatter_touch<512, 4>(const u64*, const u64*, const u64*, u64);

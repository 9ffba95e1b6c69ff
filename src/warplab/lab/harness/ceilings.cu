// Kernels of the measured ceilings (bench/ceilings.py).
//
// read_words: the read-only bandwidth ceiling. Every thread sums the 32-bit lanes of 16-byte
// words (uint4) over a grid-stride loop with four independent loads in flight per iteration;
// each block writes one 32-bit sum, so the bytes moved are the bytes read (plus 4 per block).
// The sums let the host check that every word was read (a buffer of ones sums to its length).

#include "warplab.cuh"  // u64, ld_stream (core/warplab.cuh)

__device__ __forceinline__ unsigned int lane_sum(uint4 v) { return v.x + v.y + v.z + v.w; }

// The block's sum of every thread's ``acc`` into block_sums[blockIdx.x] (a warp shuffle tree,
// then the first warp over the warps' sums).
__device__ __forceinline__ void store_block_sum(unsigned int acc,
                                                unsigned int* __restrict__ block_sums) {
    __shared__ unsigned int warp_sums[32];
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x < 32) {
        acc = threadIdx.x < (blockDim.x >> 5) ? warp_sums[threadIdx.x] : 0u;
        for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
        if (threadIdx.x == 0) block_sums[blockIdx.x] = acc;
    }
}

extern "C" __global__ void read_words(const uint4* __restrict__ src, u64 n16,
                                      unsigned int* __restrict__ block_sums) {
    const u64 stride = (u64)gridDim.x * blockDim.x;
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int acc = 0;
    for (; i + 3 * stride < n16; i += 4 * stride) {
        const uint4 a = __ldg(src + i), b = __ldg(src + i + stride);
        const uint4 c = __ldg(src + i + 2 * stride), d = __ldg(src + i + 3 * stride);
        acc += lane_sum(a) + lane_sum(b) + lane_sum(c) + lane_sum(d);
    }
    for (; i < n16; i += stride) acc += lane_sum(__ldg(src + i));

    store_block_sum(acc, block_sums);
}

// read_chunks: the same read with each block walking one contiguous chunk of ``chunk`` words
// (the last block's shorter), U independent streaming loads (ld_stream: no L1, the L2::256B
// prefetch hint) in flight per thread, the pattern of the split per-row reductions and of
// CUB's long reductions. On the H100 it reads as fast as read_words (within 0.2%); the read
// ceiling is the fastest of the three kernels.
template <int U>
__device__ __forceinline__ void read_chunk(const uint4* __restrict__ src, u64 n16, u64 chunk,
                                           unsigned int* __restrict__ block_sums) {
    const u64 begin = (u64)blockIdx.x * chunk;
    const u64 end = begin + chunk < n16 ? begin + chunk : n16;
    const u64 nt = blockDim.x;
    u64 i = begin + threadIdx.x;
    unsigned int acc = 0;
    for (; i + (U - 1) * nt < end; i += U * nt) {
        uint4 q[U];
#pragma unroll
        for (int j = 0; j < U; ++j) q[j] = ld_stream(src + i + j * nt);
#pragma unroll
        for (int j = 0; j < U; ++j) acc += lane_sum(q[j]);
    }
    for (; i < end; i += nt) acc += lane_sum(ld_stream(src + i));

    store_block_sum(acc, block_sums);
}

extern "C" __global__ void read_chunks4(const uint4* __restrict__ src, u64 n16, u64 chunk,
                                        unsigned int* __restrict__ block_sums) {
    read_chunk<4>(src, n16, chunk, block_sums);
}

extern "C" __global__ void read_chunks8(const uint4* __restrict__ src, u64 n16, u64 chunk,
                                        unsigned int* __restrict__ block_sums) {
    read_chunk<8>(src, n16, chunk, block_sums);
}

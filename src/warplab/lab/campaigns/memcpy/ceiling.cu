// The scatter ceiling of a batched copy (memcpy family, ceiling_cuda.py): per buffer the
// descriptor (source, destination, size: the arrays every variant reads) and, for a positive
// size, each 32-byte sector holding one of its ends touched once on each side: the source's
// first byte loaded and stored at the destination's first byte, and the last byte likewise
// only where the last byte lies in another sector than the first on the source or on the
// destination side (touch_pieces). Up to 33 bytes a buffer spans at most two sectors a side,
// so this touches every sector a correct copy must read and write; above that a subset. Not
// a copy: every other byte is left as it was.
//
// Two shapes of thread work:
// - memcpy_scatter_touch<BLOCK, PER_THREAD>: a thread takes PER_THREAD buffers of a chunk of
//   BLOCK * PER_THREAD (stride BLOCK: descriptor loads coalesced over the warp), issues all
//   their loads, then all their stores; a buffer's two pieces are two instructions.
// - memcpy_scatter_touch_warp<BLOCK>: a warp takes 32 buffers, lists their pieces (one or
//   two each) in lane order and moves them as at most two rounds of 32 lanes, all loads
//   before any store: a buffer's two pieces sit in neighbouring lanes of one instruction
//   (unless split by the round), so two pieces in one sector are one request, as the warp
//   byte stream of the copies does it.
// Byte accesses: the request count is one per sector and instruction whatever the width, so
// a wider word would not lower it. The grid is resident (blocks at full occupancy on every
// SM) and strides over the chunks.
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

// Pieces of a buffer of len bytes: 0 when empty; 1 (the first byte) when its first and last
// byte share a 32-byte sector on both sides; else 2 (the first and the last byte).
__device__ __forceinline__ u32 touch_pieces(u64 s, u64 d, u64 len) {
    if (len == 0) return 0;
    const u64 apart = (s ^ (s + len - 1)) | (d ^ (d + len - 1));
    return (apart >> 5) ? 2 : 1;
}

template <int BLOCK, int PER_THREAD>
__global__ void __launch_bounds__(BLOCK, CEILING_SM_THREADS / BLOCK)
memcpy_scatter_touch(const u64* __restrict__ src, const u64* __restrict__ dst,
                     const u64* __restrict__ sizes, u64 n) {
    const u64 chunk = (u64)BLOCK * PER_THREAD;
    for (u64 base = (u64)blockIdx.x * chunk + threadIdx.x; base < n;
         base += (u64)gridDim.x * chunk) {
        u8* d[PER_THREAD];
        u64 len[PER_THREAD];
        u32 cnt[PER_THREAD];
        u32 ends[PER_THREAD];  // the first byte, and the last one shifted by 8
        bool sc[PER_THREAD];   // the warp's destinations scattered (load policies 8, 64)
#pragma unroll
        for (int j = 0; j < PER_THREAD; ++j) {
            const u64 i = base + (u64)j * BLOCK;
            const bool in = i < n;
            const u8* s = in ? (const u8*)ld_desc(src + i) : nullptr;
            d[j] = in ? (u8*)ld_desc(dst + i) : nullptr;
            len[j] = in ? size_of(sizes, i) : 0;
            cnt[j] = touch_pieces((u64)s, (u64)d[j], len[j]);
            sc[j] = scattered_dst((u64)d[j], len[j], in, threadIdx.x & 31);
            ends[j] = cnt[j] ? (u32)ld_tiny(s, sc[j]) : 0;
            if (cnt[j] == 2) ends[j] |= (u32)ld_tiny(s + len[j] - 1, sc[j]) << 8;
        }
#pragma unroll
        for (int j = 0; j < PER_THREAD; ++j) {
            if (cnt[j]) st_tiny(d[j], (u8)ends[j], sc[j]);
            if (cnt[j] == 2) st_tiny(d[j] + len[j] - 1, (u8)(ends[j] >> 8), sc[j]);
        }
    }
}

template <int BLOCK>
__global__ void __launch_bounds__(BLOCK, CEILING_SM_THREADS / BLOCK)
memcpy_scatter_touch_warp(const u64* __restrict__ src, const u64* __restrict__ dst,
                          const u64* __restrict__ sizes, u64 n) {
    __shared__ u8 s_owner[BLOCK / 32][64];  // the lane (buffer) of each piece
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (u64 base = (u64)blockIdx.x * BLOCK + (threadIdx.x & ~31u); base < n;
         base += (u64)gridDim.x * BLOCK) {  // the same for every lane of the warp
        const u64 i = base + lane;
        const bool in = i < n;
        const u64 sp = in ? ld_desc(src + i) : 0, dp = in ? ld_desc(dst + i) : 0;
        const u64 len = in ? size_of(sizes, i) : 0;
        const u32 cnt = touch_pieces(sp, dp, len);
        const bool sc = scattered_dst(dp, len, in, lane);
        u32 incl = cnt;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const u32 x = __shfl_up_sync(FULL_MASK, incl, o);
            if (lane >= (u32)o) incl += x;
        }
        const u32 start = incl - cnt, total = __shfl_sync(FULL_MASK, incl, 31);
        if (cnt) s_owner[warp][start] = (u8)lane;
        if (cnt == 2) s_owner[warp][start + 1] = (u8)lane;
        __syncwarp();
        u8 v[2];
        u64 at[2];  // the piece's destination address
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const u32 j = lane + 32u * r;
            const u32 owner = s_owner[warp][j < total ? j : 0];
            const u64 o_sp = __shfl_sync(FULL_MASK, sp, owner);
            const u64 o_dp = __shfl_sync(FULL_MASK, dp, owner);
            const u64 o_len = __shfl_sync(FULL_MASK, len, owner);
            const u32 o_start = __shfl_sync(FULL_MASK, start, owner);
            const u64 off = j == o_start ? 0 : o_len - 1;
            at[r] = o_dp + off;
            if (j < total) v[r] = ld_tiny((const u8*)(o_sp + off), sc);
        }
#pragma unroll
        for (int r = 0; r < 2; ++r)
            if (lane + 32u * r < total) st_tiny((u8*)at[r], v[r], sc);
        __syncwarp();  // s_owner is written again by the next round of buffers
    }
}

template __global__ void memcpy_scatter_touch<256, 1>(const u64*, const u64*, const u64*, u64);
template __global__ void memcpy_scatter_touch<256, 2>(const u64*, const u64*, const u64*, u64);
template __global__ void memcpy_scatter_touch<512, 1>(const u64*, const u64*, const u64*, u64);
template __global__ void memcpy_scatter_touch<512, 2>(const u64*, const u64*, const u64*, u64);
template __global__ void memcpy_scatter_touch_warp<256>(const u64*, const u64*, const u64*, u64);
template __global__ void memcpy_scatter_touch_warp<512>(const u64*, const u64*, const u64*, u64);

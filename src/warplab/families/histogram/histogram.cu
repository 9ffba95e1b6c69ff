// warplab byte-histogram kernels. Compiled at run time by NVRTC (cupy.RawModule, -std=c++17);
// CI compiles this file with nvcc for sm_90.
//
// Mapping ids (template argument MAP): 0 bytes (identity, 256 bins), 1 ascii128 ((c-1) & 0x7f),
// 2 letters (A/a..Z/z -> 1..26, else 0), 3 user lookup table (lut[c]).
// Output bins are 64-bit counters (int64 on the host, added to as unsigned long long), so that
// more than 2^32 equal bytes count correctly; per-block shared counters are 32-bit.

typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned char u8;

template <int MAP>
__device__ __forceinline__ u32 map_byte(u32 c, const u8* __restrict__ lut) {
    if constexpr (MAP == 0) {
        return c;
    } else if constexpr (MAP == 1) {
        return (c - 1u) & 0x7fu;
    } else if constexpr (MAP == 2) {
        u32 l = ((c & 0xdfu) - 64u) & 0xffu;  // letters fold to 1..26 whatever their case
        return l <= 26u ? l : 0u;
    } else {
        return lut[c];
    }
}

// ---------------------------------------------------------------------------------------------
// The histogram report's four kernels, same algorithms and launch shapes (block 256; the stride
// kernels on a fixed grid of 1024 blocks), with 64-bit indices and 64-bit global bins.
// ---------------------------------------------------------------------------------------------

// "global": one byte per thread, one global atomic per byte. Grid: ceil(n / 256) blocks.
template <int MAP>
__global__ void hist_global(const u8* __restrict__ in, u64 n, u64* bins, u32 nbins,
                            const u8* __restrict__ lut) {
    u64 idx = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n) return;
    atomicAdd(&bins[map_byte<MAP>(in[idx], lut)], 1ull);
}

// The report's grid-stride loop: thread idx visits idx, idx + stride, ... The last stride is
// peeled off so that the main loop needs no bounds check.
template <class Count>
__device__ __forceinline__ void for_each_strided(const u8* __restrict__ in, u64 n, Count count) {
    const u64 idx = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 stride = (u64)blockDim.x * gridDim.x;
    const u64 base_limit = n >= stride ? n - stride : 0;
    u64 base = 0;
    for (; base < base_limit; base += stride) count(in[base + idx]);
    if (base + idx < n) count(in[base + idx]);
}

// "global_stride": fixed grid, the grid strides over the input, global atomics.
template <int MAP>
__global__ void hist_global_stride(const u8* __restrict__ in, u64 n, u64* bins, u32 nbins,
                                   const u8* __restrict__ lut) {
    for_each_strided(in, n, [&](u32 c) { atomicAdd(&bins[map_byte<MAP>(c, lut)], 1ull); });
}

// "private": one byte per thread, one shared-memory histogram per block, merged into the
// global bins at the end (every bin, zero or not, as in the report).
template <int MAP>
__global__ void hist_private(const u8* __restrict__ in, u64 n, u64* bins, u32 nbins,
                             const u8* __restrict__ lut) {
    __shared__ u32 s_bins[256];
    u64 idx = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    for (u32 t = threadIdx.x; t < nbins; t += blockDim.x) s_bins[t] = 0;
    __syncthreads();
    if (idx < n) atomicAdd(&s_bins[map_byte<MAP>(in[idx], lut)], 1u);
    __syncthreads();
    for (u32 t = threadIdx.x; t < nbins; t += blockDim.x) atomicAdd(&bins[t], (u64)s_bins[t]);
}

// "private_stride": fixed grid striding over the input, shared-memory bins per block.
template <int MAP>
__global__ void hist_private_stride(const u8* __restrict__ in, u64 n, u64* bins, u32 nbins,
                                    const u8* __restrict__ lut) {
    __shared__ u32 s_bins[256];
    for (u32 t = threadIdx.x; t < nbins; t += blockDim.x) s_bins[t] = 0;
    __syncthreads();
    for_each_strided(in, n, [&](u32 c) { atomicAdd(&s_bins[map_byte<MAP>(c, lut)], 1u); });
    __syncthreads();
    for (u32 t = threadIdx.x; t < nbins; t += blockDim.x) atomicAdd(&bins[t], (u64)s_bins[t]);
}

// ---------------------------------------------------------------------------------------------
// Privatized kernels with 16-byte loads on a persistent grid (sized from the SM count on the
// host). They count raw bytes (256 counters per copy) and apply the mapping only when the
// block's counts are merged, so every mapping costs the same.
//
// LAYOUT 0 ("warp"): one 256-bin copy per warp, hist[warp * 256 + byte]. Lanes of a warp that
//   see the same byte hit the same word: constant input serialises 32 atomics per instruction.
// LAYOUT 1 ("lane"): one copy per lane index, shared by the warps of the block:
//   hist[byte * 32 + lane]. Lane l always lands in bank l, so a warp's 32 atomics never share a
//   bank or an address, whatever the data. (A skewed stride of 33 would only move the conflicts:
//   lanes l1, l2 would collide whenever byte1 + l1 == byte2 + l2 mod 32.) The merge reads each
//   byte's 32 counters in rotated order, so that it is conflict-free too.
// RUNS: a thread whose 16 loaded bytes are all equal adds 16 with one atomic.
// ---------------------------------------------------------------------------------------------

// Block size, loads in flight per thread and the counter stride of the lane-private layout come
// from the launch plan (cuda.py DEFINES, the only copy); tuning runs pass others
// (benchmarks/explore_histogram.py).
#ifndef WARPLAB_VEC_BLOCK
#error "WARPLAB_VEC_BLOCK is passed by the launch plan (-DWARPLAB_VEC_BLOCK=..., cuda.py DEFINES)"
#endif
#ifndef WARPLAB_VEC_UNROLL
#error "WARPLAB_VEC_UNROLL is passed by the launch plan (-DWARPLAB_VEC_UNROLL=..., cuda.py DEFINES)"
#endif
constexpr int VEC_BLOCK = WARPLAB_VEC_BLOCK;
constexpr int VEC_UNROLL = WARPLAB_VEC_UNROLL;
#ifndef WARPLAB_HIST_LANE_STRIDE
#error "WARPLAB_HIST_LANE_STRIDE is passed by the launch plan (-DWARPLAB_HIST_LANE_STRIDE=..., cuda.py DEFINES)"
#endif
constexpr int LANE_STRIDE = WARPLAB_HIST_LANE_STRIDE;  // one counter per lane: lane l hits bank l

template <int LAYOUT>
__host__ __device__ constexpr int vec_shared_words() {
    return LAYOUT == 1 ? 256 * LANE_STRIDE : (VEC_BLOCK / 32) * 256;
}

template <int LAYOUT>
__device__ __forceinline__ void count_byte(u32* copy, u32 byte, u32 inc) {
    atomicAdd(copy + byte * (LAYOUT == 1 ? LANE_STRIDE : 1), inc);
}

template <int LAYOUT>
__device__ __forceinline__ void count_word(u32* copy, u32 w) {
#pragma unroll
    for (int k = 0; k < 4; ++k) count_byte<LAYOUT>(copy, __byte_perm(w, 0, 0x4440 + k), 1u);
}

template <int LAYOUT, bool RUNS>
__device__ __forceinline__ void count_vec(u32* copy, uint4 v) {
    if (RUNS && v.x == v.y && v.x == v.z && v.x == v.w && v.x == (v.x & 0xffu) * 0x01010101u) {
        count_byte<LAYOUT>(copy, v.x & 0xffu, 16u);
        return;
    }
    count_word<LAYOUT>(copy, v.x);
    count_word<LAYOUT>(copy, v.y);
    count_word<LAYOUT>(copy, v.z);
    count_word<LAYOUT>(copy, v.w);
}

template <int LAYOUT, bool RUNS, int MAP>
__global__ void __launch_bounds__(VEC_BLOCK)
hist_privatized_vec(const u8* __restrict__ in, u64 n, u64* bins, u32 nbins,
                    const u8* __restrict__ lut) {
    extern __shared__ u32 s_hist[];
    constexpr int words = vec_shared_words<LAYOUT>();
    const u32 tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
    for (u32 i = tid; i < (u32)words; i += VEC_BLOCK) s_hist[i] = 0;
    __syncthreads();
    u32* copy = LAYOUT == 1 ? s_hist + lane : s_hist + warp * 256;

    // Bytes before the first 16-byte boundary, then 16-byte vectors, then the tail.
    u64 head = (16u - ((unsigned long long)in & 15u)) & 15u;
    if (head > n) head = n;
    const u64 nvec = (n - head) >> 4;
    const uint4* __restrict__ vin = reinterpret_cast<const uint4*>(in + head);
    const u64 gtid = (u64)blockIdx.x * VEC_BLOCK + tid;
    const u64 gstride = (u64)gridDim.x * VEC_BLOCK;

    u64 i = gtid;
    for (; i + (VEC_UNROLL - 1) * gstride < nvec; i += VEC_UNROLL * gstride) {
        uint4 r[VEC_UNROLL];
#pragma unroll
        for (int u = 0; u < VEC_UNROLL; ++u) r[u] = __ldcs(vin + i + u * gstride);
#pragma unroll
        for (int u = 0; u < VEC_UNROLL; ++u) count_vec<LAYOUT, RUNS>(copy, r[u]);
    }
    for (; i < nvec; i += gstride) count_vec<LAYOUT, RUNS>(copy, __ldcs(vin + i));
    const u64 tail = head + nvec * 16;
    if (gtid < head) count_byte<LAYOUT>(copy, in[gtid], 1u);
    if (gtid < n - tail) count_byte<LAYOUT>(copy, in[tail + gtid], 1u);
    __syncthreads();

    // Merge the copies per byte, fold bytes into mapped bins in shared memory, then one global
    // atomic per non-empty bin and block.
    __shared__ u32 s_byte[256];
    __shared__ u32 s_mapped[256];
    for (u32 b = tid; b < 256; b += VEC_BLOCK) {
        u32 s = 0;
        if constexpr (LAYOUT == 1) {
#pragma unroll 8
            for (int j = 0; j < 32; ++j) s += s_hist[b * LANE_STRIDE + ((j + b) & 31u)];
        } else {
#pragma unroll
            for (int w = 0; w < VEC_BLOCK / 32; ++w) s += s_hist[w * 256 + b];
        }
        s_byte[b] = s;
        s_mapped[b] = 0;
    }
    __syncthreads();
    if constexpr (MAP == 0) {
        for (u32 b = tid; b < 256; b += VEC_BLOCK)
            if (s_byte[b]) atomicAdd(&bins[b], (u64)s_byte[b]);
    } else {
        for (u32 b = tid; b < 256; b += VEC_BLOCK)
            if (s_byte[b]) atomicAdd(&s_mapped[map_byte<MAP>(b, lut)], s_byte[b]);
        __syncthreads();
        for (u32 t = tid; t < nbins; t += VEC_BLOCK)
            if (s_mapped[t]) atomicAdd(&bins[t], (u64)s_mapped[t]);
    }
}

// Explicit instantiations so that nvcc (the CI compile check) builds every kernel; NVRTC builds
// the ones the host names through name_expressions.
#define WARPLAB_HIST_INSTANTIATE(MAP)                                                          \
    template __global__ void hist_global<MAP>(const u8*, u64, u64*, u32, const u8*);          \
    template __global__ void hist_global_stride<MAP>(const u8*, u64, u64*, u32, const u8*);   \
    template __global__ void hist_private<MAP>(const u8*, u64, u64*, u32, const u8*);         \
    template __global__ void hist_private_stride<MAP>(const u8*, u64, u64*, u32, const u8*);  \
    template __global__ void hist_privatized_vec<0, false, MAP>(const u8*, u64, u64*, u32,    \
                                                                const u8*);                   \
    template __global__ void hist_privatized_vec<1, false, MAP>(const u8*, u64, u64*, u32,    \
                                                                const u8*);                   \
    template __global__ void hist_privatized_vec<1, true, MAP>(const u8*, u64, u64*, u32,     \
                                                               const u8*);
#ifdef WARPLAB_NVCC_CHECK
WARPLAB_HIST_INSTANTIATE(0)
WARPLAB_HIST_INSTANTIATE(1)
WARPLAB_HIST_INSTANTIATE(2)
WARPLAB_HIST_INSTANTIATE(3)
#endif

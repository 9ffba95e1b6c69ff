// Destination windows (the warp_tiers_windows variant, windows.py): before the copy, the
// descriptors of a batch of tiny buffers with scattered destinations are grouped by the
// window of the destination range their destination falls into, so the copy (the warp
// kernel through its header, memcpy_warp_classes_via) writes one L2-sized window at a time:
// a destination sector's partial writes meet in L2 instead of going to DRAM several times
// partly written (H100, benchmarks/NOTES.md). Two kernels before the copy:
//
// memcpy_windows_count: every block judges the batch from the same sample (SAMPLE pairs of
//   neighbouring buffers spread over it; so every block reaches the same verdict): group when
//   at least half the pairs lie far apart in the destination (more than 2^FAR_LOG2 bytes
//   between their destinations, either way: destinations shuffled within a few MiB are written
//   fastest as they are), the sampled buffers hold at most MEAN_MAX bytes on average and the
//   sampled destinations span 2^SPAN_MIN_LOG2 to 2^SPAN_MAX_LOG2 bytes; up to 2^WIDE_LOG2
//   bytes (windows twice as wide) only where the sources are scattered too (half the pairs'
//   sources more than 2^FAR_LOG2 bytes apart) or the mean is at most TINY_MEAN_MAX bytes: the
//   wider windows cost consecutive sources their order more than they save for larger
//   buffers; over a wider span the windows are too wide to help (benchmarks/NOTES.md); below
//   2^NARROW_LOG2 bytes only where the sources are scattered or the mean is above
//   TINY_MEAN_MAX: a span that nearly fits the L2 holds the tiny buffers' sectors well enough
//   that grouping (48 descriptor bytes a buffer) costs consecutive sources more than it saves.
//   Block 0 writes the header: hdr[0..2] the arrays the copy reads (the batch's own, or the
//   grouped copies at `grouped`), hdr[3] the window shift + 1 (0: not grouped), hdr[4] the
//   lowest sampled destination. When grouping, the blocks count the destinations per window into
//   tally[0..BINS) and the last block to finish turns the counts into each window's first
//   slot (exclusive scan).
// memcpy_windows_group: when the header says so, tiles of TILE buffers are grouped by window
//   in shared memory (ranks by shared atomics, one global atomic per window per tile reserving
//   its run in the window's slots) and written out array by array, each window's run
//   contiguous; the last block zeroes tally for the stream's next call.
//
// A window's bin: (d - lo) >> shift, 0 below lo, BINS - 1 at or above lo + BINS << shift.
// Buffers are grouped whatever their size (BLEV buffers too: the copy's queue holds indices
// into the arrays it reads, memcpy_size_classes_blev_via); the order within a window is any.
// The counts are 32-bit: the launch plan groups at most spec.WINDOWS_MAX_COUNT (2^27) buffers.
// Each kernel of the path (these two, the copy's two) may be launched to overlap the one
// before it (programmatic dependent launch, windows.py): it waits for that kernel's end
// before its first memory access and lets the next one place its blocks at once.
#pragma once

#define WINDOWS_THREADS 256
#define WINDOWS_SAMPLE 256  // one pair per thread of a block
#define WINDOWS_COUNT_PER 8 // loads in flight per thread of the count loop
#define WINDOWS_MIN_SHIFT 16

// Exclusive scan of BINS (32 or 64) counters by one warp, BINS / 32 a lane, from `from` into
// `to` (may be the same): in global memory read through L2 (G), else in shared memory.
template <int BINS, bool G>
__device__ __forceinline__ void windows_scan(const u32* from, u32* to, u32 lane) {
    static_assert(BINS == 32 || BINS == 64, "32 or 64 windows");
    constexpr int PL = BINS / 32;
    u32 v[PL], s = 0;
#pragma unroll
    for (int j = 0; j < PL; ++j) {
        if constexpr (G) v[j] = __ldcg(from + PL * lane + j);
        else v[j] = from[PL * lane + j];
        s += v[j];
    }
    u32 incl = s;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const u32 x = __shfl_up_sync(FULL_MASK, incl, o);
        if (lane >= (u32)o) incl += x;
    }
    u32 e = incl - s;
#pragma unroll
    for (int j = 0; j < PL; ++j) {
        to[PL * lane + j] = e;
        e += v[j];
    }
}

__device__ __forceinline__ u32 window_of(u64 d, u64 lo, u32 shift, u32 bins) {
    const u64 w = d < lo ? 0 : (d - lo) >> shift;
    return w < bins ? (u32)w : bins - 1;
}

// Sums of a u32 and a u64 and the min and max of two u64 over the block (shuffles, then the
// warps' results through shared memory); every thread gets the results.
__device__ __forceinline__ void windows_verdict_reduce(u32& far, u64& bytes, u64& lo, u64& hi) {
    __shared__ u32 s_far[WINDOWS_THREADS / 32];
    __shared__ u64 s_bytes[WINDOWS_THREADS / 32], s_lo[WINDOWS_THREADS / 32],
        s_hi[WINDOWS_THREADS / 32];
    for (int o = 16; o > 0; o >>= 1) {
        far += __shfl_xor_sync(FULL_MASK, far, o);
        bytes += __shfl_xor_sync(FULL_MASK, bytes, o);
        const u64 l = __shfl_xor_sync(FULL_MASK, lo, o), h = __shfl_xor_sync(FULL_MASK, hi, o);
        lo = l < lo ? l : lo;
        hi = h > hi ? h : hi;
    }
    const u32 warp = threadIdx.x >> 5;
    if ((threadIdx.x & 31) == 0) {
        s_far[warp] = far;
        s_bytes[warp] = bytes;
        s_lo[warp] = lo;
        s_hi[warp] = hi;
    }
    __syncthreads();
    far = 0;
    bytes = 0;
    lo = ~0ull;
    hi = 0;
#pragma unroll
    for (int w = 0; w < WINDOWS_THREADS / 32; ++w) {
        far += s_far[w];
        bytes += s_bytes[w];
        lo = s_lo[w] < lo ? s_lo[w] : lo;
        hi = s_hi[w] > hi ? s_hi[w] : hi;
    }
}

// n >= 2. grouped: room for 3 n entries (sources, destinations, sizes).
template <int BINS, int MEAN_MAX, int SPAN_MIN_LOG2, int SPAN_MAX_LOG2, int FAR_LOG2,
          int WIDE_LOG2, int TINY_MEAN_MAX, int NARROW_LOG2>
__global__ void __launch_bounds__(WINDOWS_THREADS)
memcpy_windows_count(const u64* __restrict__ src, const u64* __restrict__ dst,
                     const u64* __restrict__ sizes, u64 n, u64* __restrict__ hdr,
                     u32* __restrict__ tally, u64* __restrict__ grouped) {
    __shared__ u32 h[BINS];
    const u32 t = threadIdx.x;
    wait_prior_grids();  // launched to overlap the stream's previous kernel (windows.py)
    allow_dependents();  // the group kernel's blocks wait for this grid's end in their own
    // the verdict: pair t of the sample is buffers i and i + 1
    const u64 q = (n - 1) / WINDOWS_SAMPLE, r = (n - 1) % WINDOWS_SAMPLE;
    const u64 i = q * t + r * t / WINDOWS_SAMPLE;  // (n - 1) t / SAMPLE without overflow
    const u64 d0 = dst[i], d1 = dst[i + 1], s0 = src[i], s1 = src[i + 1];
    const i64 z = (i64)sizes[i];
    const u64 size = z < 0 ? 0 : (u64)z;
    // far pairs: the destinations' count in the low 16 bits, the sources' in the high
    u32 far = ((d1 > d0 ? d1 - d0 : d0 - d1) > (1ull << FAR_LOG2) ? 1u : 0u) |
              ((s1 > s0 ? s1 - s0 : s0 - s1) > (1ull << FAR_LOG2) ? 1u << 16 : 0u);
    u64 bytes = size < (1ull << 32) ? size : (1ull << 32), lo = d0, hi = d0 + size;
    windows_verdict_reduce(far, bytes, lo, hi);
    const u64 span = hi - lo;
    const bool src_far = 2 * (far >> 16) >= WINDOWS_SAMPLE;
    const bool tiny = bytes <= (u64)TINY_MEAN_MAX * WINDOWS_SAMPLE;
    const bool group = 2 * (far & 0xffffu) >= WINDOWS_SAMPLE &&
                       bytes <= (u64)MEAN_MAX * WINDOWS_SAMPLE && span >= (1ull << SPAN_MIN_LOG2) &&
                       (span >= (1ull << NARROW_LOG2) || src_far || !tiny) &&
                       (span <= (1ull << SPAN_MAX_LOG2) ||
                        (span <= (1ull << WIDE_LOG2) && (src_far || tiny)));
    // windows of 2^shift bytes, BINS of them over the sampled span
    const u32 bits = 64 - __clzll(span > 1 ? span - 1 : 1);
    constexpr u32 LOG2_BINS = BINS == 64 ? 6 : 5;
    const u32 shift = bits > LOG2_BINS + WINDOWS_MIN_SHIFT ? bits - LOG2_BINS : WINDOWS_MIN_SHIFT;
    if (blockIdx.x == 0 && t == 0) {
        hdr[0] = group ? (u64)grouped : (u64)src;
        hdr[1] = group ? (u64)(grouped + n) : (u64)dst;
        hdr[2] = group ? (u64)(grouped + 2 * n) : (u64)sizes;
        hdr[3] = group ? shift + 1 : 0;
        hdr[4] = lo;
    }
    if (!group) return;
    if (t < BINS) h[t] = 0;
    __syncthreads();
    const u64 stride = (u64)gridDim.x * WINDOWS_THREADS;
    u64 k = (u64)blockIdx.x * WINDOWS_THREADS + t;
    for (; k + (WINDOWS_COUNT_PER - 1) * stride < n; k += WINDOWS_COUNT_PER * stride) {
        u64 d[WINDOWS_COUNT_PER];  // every load in flight before the first atomic
#pragma unroll
        for (int j = 0; j < WINDOWS_COUNT_PER; ++j) d[j] = dst[k + j * stride];
#pragma unroll
        for (int j = 0; j < WINDOWS_COUNT_PER; ++j)
            atomicAdd(&h[window_of(d[j], lo, shift, BINS)], 1u);
    }
    for (; k < n; k += stride) atomicAdd(&h[window_of(dst[k], lo, shift, BINS)], 1u);
    __syncthreads();
    if (t < BINS && h[t]) atomicAdd(&tally[t], h[t]);
    __shared__ bool last;
    __syncthreads();
    if (t == 0) {
        __threadfence();
        last = atomicAdd(&tally[BINS], 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last || t >= 32) return;
    __threadfence();
    windows_scan<BINS, true>(tally, tally, t);
    if (t == 0) tally[BINS] = 0;
}

template <int BINS, int PER, int MINB>
__global__ void __launch_bounds__(WINDOWS_THREADS, MINB)
memcpy_windows_group(const u64* __restrict__ src, const u64* __restrict__ dst,
                     const u64* __restrict__ sizes, u64 n, const u64* __restrict__ hdr,
                     u32* __restrict__ tally, u64* __restrict__ grouped) {
    constexpr int TILE = WINDOWS_THREADS * PER;
    wait_prior_grids();  // the count kernel's header and tally (windows.py)
    allow_dependents();
    const u64 f = hdr[3];
    if (f == 0) return;
    const u32 shift = (u32)f - 1, t = threadIdx.x;
    const u64 lo = hdr[4];
    __shared__ u32 h[BINS], start[BINS], base[BINS];
    __shared__ u64 stage[TILE];
    __shared__ u8 bin_at[TILE];
    const u64* const in[3] = {src, dst, sizes};
    for (u64 t0 = (u64)blockIdx.x * TILE; t0 < n; t0 += (u64)gridDim.x * TILE) {
        if (t < BINS) h[t] = 0;
        __syncthreads();
        u64 v[3][PER];
        u32 bk[PER], rk[PER];
#pragma unroll
        for (int k = 0; k < PER; ++k) {
            const u64 i = t0 + (u64)k * WINDOWS_THREADS + t;
            if (i < n) {
#pragma unroll
                for (int a = 0; a < 3; ++a) v[a][k] = in[a][i];
                bk[k] = window_of(v[1][k], lo, shift, BINS);
                rk[k] = atomicAdd(&h[bk[k]], 1u);
            }
        }
        __syncthreads();
        if (t < 32) windows_scan<BINS, false>(h, start, t);  // the tile's runs, in window order
        if (t < BINS && h[t]) base[t] = atomicAdd(&tally[t], h[t]);
        __syncthreads();
        const u32 count = n - t0 < (u64)TILE ? (u32)(n - t0) : TILE;
#pragma unroll
        for (int k = 0; k < PER; ++k)
            if (t0 + (u64)k * WINDOWS_THREADS + t < n) bin_at[start[bk[k]] + rk[k]] = (u8)bk[k];
#pragma unroll
        for (int a = 0; a < 3; ++a) {
#pragma unroll
            for (int k = 0; k < PER; ++k)
                if (t0 + (u64)k * WINDOWS_THREADS + t < n) stage[start[bk[k]] + rk[k]] = v[a][k];
            __syncthreads();
            for (u32 j = t; j < count; j += WINDOWS_THREADS) {
                const u32 b = bin_at[j];
                grouped[(u64)a * n + base[b] + (j - start[b])] = stage[j];
            }
            __syncthreads();
        }
    }
    __shared__ bool last;
    if (t == 0) {
        __threadfence();
        last = atomicAdd(&tally[BINS + 1], 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (last && t < BINS + 2) tally[t] = 0;
}

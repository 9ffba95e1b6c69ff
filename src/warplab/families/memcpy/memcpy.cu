// Batched memcpy kernels: N buffers of varying size copied in one launch (two for the
// size_classes design). Every kernel reads three uint64 arrays: source addresses, destination
// addresses and sizes (bytes; read as signed 64-bit, a negative size copies nothing).
// Launch plans in cuda.py; -D constants from its DEFINES.
#include "warplab.cuh"

#if !defined(WARPLAB_MEMCPY_UNROLL) || !defined(WARPLAB_MEMCPY_BLEV_THREADS) || \
    !defined(WARPLAB_MEMCPY_WARP_THREADS) || !defined(WARPLAB_MEMCPY_WARP_TRIGGER) || \
    !defined(WARPLAB_MEMCPY_WARP_SHUFFLE)
#error "compile with the -D constants of families/memcpy/cuda.py (DEFINES)"
#endif
#include "memcpy_copy.cuh"

// One block per buffer (grid-stride over buffers).
extern "C" __global__ void memcpy_block_per_buffer(const u64* __restrict__ src,
                                                   const u64* __restrict__ dst,
                                                   const u64* __restrict__ sizes, u64 n) {
    for (u64 b = blockIdx.x; b < n; b += gridDim.x)
        copy_bytes<false>((u8*)dst[b], (const u8*)src[b], size_of(sizes, b), threadIdx.x,
                          blockDim.x);
}

// One warp per buffer (grid-stride over buffers), the plain copy_bytes: with the one-trip
// form this baseline copied 1-8 B buffers 18% slower (H200, benchmarks/NOTES.md).
extern "C" __global__ void memcpy_warp_per_buffer(const u64* __restrict__ src,
                                                  const u64* __restrict__ dst,
                                                  const u64* __restrict__ sizes, u64 n) {
    const u64 warps = ((u64)gridDim.x * blockDim.x) >> 5;
    const u32 lane = threadIdx.x & 31;
    for (u64 b = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; b < n; b += warps)
        copy_bytes<false>((u8*)dst[b], (const u8*)src[b], size_of(sizes, b), lane, 32);
}

// Exclusive block-wide prefix sum of two 64-bit values per thread (warp shuffles, then the
// warp totals); `a` and `k` become the sums of the threads before this one, the totals are
// returned through ta / tk.
template <int T>
__device__ __forceinline__ void block_scan2(u64& a, u64& k, u64& ta, u64& tk) {
    __shared__ u64 wa[T / 32], wk[T / 32];
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    u64 ia = a, ik = k;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const u64 x = __shfl_up_sync(FULL_MASK, ia, o), y = __shfl_up_sync(FULL_MASK, ik, o);
        if (lane >= (u32)o) {
            ia += x;
            ik += y;
        }
    }
    if (lane == 31) {
        wa[warp] = ia;
        wk[warp] = ik;
    }
    __syncthreads();
    u64 pa = 0, pk = 0;
    ta = 0;
    tk = 0;
#pragma unroll
    for (int w = 0; w < T / 32; ++w) {
        if ((u32)w < warp) {
            pa += wa[w];
            pk += wk[w];
        }
        ta += wa[w];
        tk += wk[w];
    }
    a = pa + ia - a;
    k = pk + ik - k;
    __syncthreads();
}

// CUB's DeviceBatchMemcpy design, first kernel: one tile of T x B buffers per block (thread t
// holds buffers t*B .. t*B+B-1 of the tile). A 3-bin histogram of size classes and its
// prefix sum partition the tile stably; TLEV buffers (<= TLEV_MAX bytes) are copied a byte
// per thread by run-length decoding the tile's TLEV byte stream (neighbouring threads copy
// neighbouring bytes), WLEV buffers (<= WLEV_MAX) a warp each, BLEV buffers are appended to
// a global queue with their first CHUNK-sized piece in one global chunk space (one packed
// 64-bit atomic per tile reserves the tile's slots and chunks together, so first chunks grow
// with the slot).
template <int T, int B, int TLEV_MAX, int WLEV_MAX, int CHUNK>
__global__ void __launch_bounds__(T)
memcpy_size_classes_tiles(const u64* __restrict__ src, const u64* __restrict__ dst,
                          const u64* __restrict__ sizes, u64 n, u64* __restrict__ counter,
                          u32* __restrict__ queue_id, u64* __restrict__ queue_first) {
    constexpr int TILE = T * B;
    static_assert(TILE * TLEV_MAX < 65536, "TLEV bytes of a tile must fit 16 bits");
    static_assert(T % 32 == 0 && TLEV_MAX < WLEV_MAX, "bad size classes");
    __shared__ u32 s_tlev_end[TILE];   // inclusive end of each TLEV buffer in the byte stream
    __shared__ u64 s_tlev_src[TILE], s_tlev_dst[TILE];
    __shared__ u32 s_wlev_id[TILE];
    __shared__ u64 s_base;
    const u64 tile0 = (u64)blockIdx.x * TILE;
    u64 size[B];
    u32 cls[B];
    u64 counts = 0, chunks = 0;  // counts: TLEV | WLEV << 16 | BLEV << 32 | TLEV bytes << 48
#pragma unroll
    for (int j = 0; j < B; ++j) {
        const u64 i = tile0 + (u64)threadIdx.x * B + j;
        size[j] = i < n ? size_of(sizes, i) : 0;
        cls[j] = i >= n ? 3 : size[j] <= TLEV_MAX ? 0 : size[j] <= WLEV_MAX ? 1 : 2;
        if (cls[j] == 0) counts += 1 + (size[j] << 48);
        else if (cls[j] == 1) counts += 1ull << 16;
        else if (cls[j] == 2) {
            counts += 1ull << 32;
            chunks += (size[j] + CHUNK - 1) / CHUNK;
        }
    }
    u64 total, total_chunks;
    block_scan2<T>(counts, chunks, total, total_chunks);
    const u32 n_tlev = (u32)(total & 0xffff), n_wlev = (u32)((total >> 16) & 0xffff);
    const u32 n_blev = (u32)((total >> 32) & 0xffff), tlev_bytes = (u32)(total >> 48);
    if (threadIdx.x == 0)
        s_base = n_blev ? atomicAdd((unsigned long long*)counter,
                                    ((unsigned long long)n_blev << CHUNK_BITS) | total_chunks)
                        : 0;
    __syncthreads();
    u32 ot = (u32)(counts & 0xffff), ow = (u32)((counts >> 16) & 0xffff);
    u32 ob = (u32)((counts >> 32) & 0xffff), bt = (u32)(counts >> 48);
    u64 first = (s_base & ((1ull << CHUNK_BITS) - 1)) + chunks;
    const u64 slot0 = s_base >> CHUNK_BITS;
#pragma unroll
    for (int j = 0; j < B; ++j) {
        const u64 i = tile0 + (u64)threadIdx.x * B + j;
        if (cls[j] == 0) {
            bt += (u32)size[j];
            s_tlev_end[ot] = bt;
            s_tlev_src[ot] = src[i];
            s_tlev_dst[ot] = dst[i];
            ++ot;
        } else if (cls[j] == 1) {
            s_wlev_id[ow++] = (u32)(i - tile0);
        } else if (cls[j] == 2) {
            queue_id[slot0 + ob] = (u32)i;
            queue_first[slot0 + ob] = first;
            first += (size[j] + CHUNK - 1) / CHUNK;
            ++ob;
        }
    }
    __syncthreads();
    // TLEV: byte j of the stream belongs to the first buffer whose end exceeds j.
    for (u32 j = threadIdx.x; j < tlev_bytes; j += T) {
        u32 lo = 0, hi = n_tlev - 1;
        while (lo < hi) {
            const u32 mid = (lo + hi) >> 1;
            if (s_tlev_end[mid] > j) hi = mid;
            else lo = mid + 1;
        }
        const u32 start = lo ? s_tlev_end[lo - 1] : 0;
        ((u8*)s_tlev_dst[lo])[j - start] = ((const u8*)s_tlev_src[lo])[j - start];
    }
    // WLEV: a warp per buffer.
    const u32 lane = threadIdx.x & 31;
    for (u32 w = threadIdx.x >> 5; w < n_wlev; w += T / 32) {
        const u64 i = tile0 + s_wlev_id[w];
        copy_bytes<true>((u8*)dst[i], (const u8*)src[i], size_of(sizes, i), lane, 32);
    }
}

// Second kernel: a persistent grid walks the global chunk space; chunk g belongs to the last
// queue slot whose first chunk is <= g (binary search), and the block copies its CHUNK bytes.
// counter[0] is the first kernel's count (queued buffers, chunks), counter[1] the blocks
// finished here: the last one zeroes both, so the stream's next call finds the queue empty
// (the counter is the stream's, cuda.py _Queue; every block reads counter[0] before it counts
// itself finished). Where nothing was queued (counter[0] is 0, and so is counter[1]) there is
// nothing to zero: every block returns at once instead of taking its turn at one atomic.
template <int CHUNK>
__device__ __forceinline__ void blev_body(const u64* __restrict__ src, const u64* __restrict__ dst,
                                          const u64* __restrict__ sizes,
                                          u64* __restrict__ counter,
                                          const u32* __restrict__ queue_id,
                                          const u64* __restrict__ queue_first) {
    const u64 c = *counter;
    if (c == 0) return;
    const u64 n_queued = c >> CHUNK_BITS, n_chunks = c & ((1ull << CHUNK_BITS) - 1);
    for (u64 g = blockIdx.x; g < n_chunks; g += gridDim.x) {
        u64 lo = 0, hi = n_queued - 1;
        while (lo < hi) {
            const u64 mid = (lo + hi + 1) >> 1;
            if (queue_first[mid] <= g) lo = mid;
            else hi = mid - 1;
        }
        const u64 i = queue_id[lo];
        const u64 off = (g - queue_first[lo]) * (u64)CHUNK;
        const u64 size = size_of(sizes, i);
        const u64 len = size - off < (u64)CHUNK ? size - off : (u64)CHUNK;
        copy_bytes<false>((u8*)dst[i] + off, (const u8*)src[i] + off, len, threadIdx.x,
                          blockDim.x);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        if (atomicAdd((unsigned long long*)(counter + 1), 1ull) == gridDim.x - 1) {
            counter[0] = 0;
            counter[1] = 0;
        }
    }
}

template <int CHUNK>
__global__ void __launch_bounds__(WARPLAB_MEMCPY_BLEV_THREADS)
memcpy_size_classes_blev(const u64* __restrict__ src, const u64* __restrict__ dst,
                         const u64* __restrict__ sizes, u64* __restrict__ counter,
                         const u32* __restrict__ queue_id,
                         const u64* __restrict__ queue_first) {
    wait_prior_grids();
    allow_dependents();
    blev_body<CHUNK>(src, dst, sizes, counter, queue_id, queue_first);
}

// The same behind a header (hdr[0..2]: the arrays' addresses; memcpy_warp_classes_via).
template <int CHUNK>
__global__ void __launch_bounds__(WARPLAB_MEMCPY_BLEV_THREADS)
memcpy_size_classes_blev_via(const u64* __restrict__ hdr, u64* __restrict__ counter,
                             const u32* __restrict__ queue_id,
                             const u64* __restrict__ queue_first) {
    wait_prior_grids();  // launched to overlap the warp kernel (windows.py)
    allow_dependents();
    blev_body<CHUNK>((const u64*)__ldg(hdr), (const u64*)__ldg(hdr + 1),
                     (const u64*)__ldg(hdr + 2), counter, queue_id, queue_first);
}

#include "memcpy_warp.cuh"
#include "memcpy_windows.cuh"


#ifdef WARPLAB_NVCC_CHECK  // the instantiations cuda.py asks NVRTC for, for the nvcc check
template __global__ void memcpy_size_classes_tiles<128, 4, 32, 1024, 8192>(
    const u64*, const u64*, const u64*, u64, u64*, u32*, u64*);
template __global__ void memcpy_size_classes_tiles<256, 1, 32, 8192, 32768>(
    const u64*, const u64*, const u64*, u64, u64*, u32*, u64*);
template __global__ void memcpy_size_classes_blev<8192>(const u64*, const u64*, const u64*,
                                                        u64*, const u32*, const u64*);
template __global__ void memcpy_size_classes_blev<32768>(const u64*, const u64*, const u64*,
                                                         u64*, const u32*, const u64*);
#define WARP_CLASSES_INST(TM, G, SM, G2, S2, WM, C, MB, ST, Z, W)                            \
    template __global__ void memcpy_warp_classes<TM, G, SM, G2, S2, WM, C, MB, ST, Z, W>(    \
        const u64*, const u64*, const u64*, u64, u64*, u32*, u64*, u32);
WARP_CLASSES_INST(16, 8, 256, 32, 256, 8192, 32768, 4, 0, 0, 0)   // WARP_CLASSES
WARP_CLASSES_INST(16, 8, 256, 32, 256, 8192, 32768, 4, 1, 0, 0)   // WARP_CLASSES_STREAM
WARP_CLASSES_INST(16, 8, 256, 32, 1024, 8192, 32768, 4, 3, 0, 0)  // WARP_TIERS
WARP_CLASSES_INST(16, 8, 256, 32, 1024, 8192, 32768, 4, 4, 3, 7)  // WARP_TIERS_WORDS
WARP_CLASSES_INST(16, 8, 256, 32, 1024, 8192, 32768, 5, 4, 3, 7)  // WARP_CLASSES_SWEEP
WARP_CLASSES_INST(16, 8, 256, 32, 1024, 8192, 32768, 6, 4, 3, 7)
WARP_CLASSES_INST(16, 8, 256, 32, 1024, 8192, 32768, 8, 4, 3, 7)
WARP_CLASSES_INST(16, 8, 256, 32, 1024, 8192, 32768, 4, 4, 3, 0)
WARP_CLASSES_INST(16, 8, 256, 32, 1024, 8192, 32768, 4, 4, 3, 1)
WARP_CLASSES_INST(16, 8, 256, 32, 1024, 8192, 32768, 4, 4, 3, 2)
WARP_CLASSES_INST(16, 8, 256, 32, 1024, 8192, 32768, 4, 4, 3, 3)
template __global__ void memcpy_warp_classes_via<16, 8, 256, 32, 1024, 8192, 32768, 4, 4, 3, 7>(
    const u64*, u64, u64*, u32*, u64*, u64);  // warp_tiers_windows
template __global__ void memcpy_size_classes_blev_via<32768>(const u64*, u64*, const u32*,
                                                             const u64*);
#define WINDOWS_INST(B, P, MB)                                                               \
    template __global__ void memcpy_windows_count<B, 48, 25, 28, 22, 29, 8, 26>(               \
        const u64*, const u64*, const u64*, u64, u64*, u32*, u64*);                              \
    template __global__ void memcpy_windows_group<B, P, MB>(const u64*, const u64*, const u64*,  \
                                                            u64, const u64*, u32*, u64*);
WINDOWS_INST(64, 4, 4)  // spec.WINDOWS
WINDOWS_INST(32, 4, 4)  // spec.WINDOWS_SWEEP
template __global__ void memcpy_windows_group<64, 8, 2>(const u64*, const u64*, const u64*, u64,
                                                        const u64*, u32*, u64*);
template __global__ void memcpy_windows_count<64, 48, 25, 28, 22, 29, 8, 25>(
    const u64*, const u64*, const u64*, u64, u64*, u32*, u64*);  // no narrow band
#endif

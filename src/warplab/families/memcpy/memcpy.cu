// Batched memcpy kernels: N buffers of varying size copied in one launch (two for the
// size_classes design). Every kernel reads three uint64 arrays: source addresses, destination
// addresses and sizes (bytes; read as signed 64-bit, a negative size copies nothing).
// Launch plans in cuda.py; -D constants from its DEFINES.
#include "warplab.cuh"

#if !defined(WARPLAB_MEMCPY_UNROLL) || !defined(WARPLAB_MEMCPY_BLEV_THREADS) || \
    !defined(WARPLAB_MEMCPY_WARP_THREADS)
#error "compile with the -D constants of families/memcpy/cuda.py (DEFINES)"
#endif

typedef unsigned char u8;
#define FULL_MASK 0xffffffffu
#define CHUNK_BITS 32  // BLEV counter: queued buffers in the top 32 bits, chunks below

__device__ __forceinline__ u64 size_of(const u64* sizes, u64 i) {
    i64 s = (i64)sizes[i];
    return s > 0 ? (u64)s : 0;
}

// Where a copy's 16-byte chunks come from: 16-byte loads when the source is 16-byte aligned
// where the destination is, else aligned 8-byte loads shifted by the source's misalignment
// (mis bytes; loads never leave an aligned word holding a source byte).
struct ChunkSource {
    const ulonglong2* s16;
    const u64* s8;
    u64 mis;
    u32 lo, hi;
    bool aligned;
};

__device__ __forceinline__ ulonglong2 load_chunk(const ChunkSource& s, u64 i) {
    if (s.aligned) return __ldg(s.s16 + i);
    ulonglong2 v;
    const u64 a0 = __ldg(s.s8 + 2 * i), a1 = __ldg(s.s8 + 2 * i + 1);
    if (s.mis == 0) {  // 8- but not 16-byte aligned
        v.x = a0;
        v.y = a1;
    } else {
        const u64 a2 = __ldg(s.s8 + 2 * i + 2);
        v.x = (a0 >> s.lo) | (a1 << s.hi);
        v.y = (a1 >> s.lo) | (a2 << s.hi);
    }
    return v;
}

__device__ __forceinline__ ChunkSource chunk_source(const u8* src) {
    ChunkSource cs;
    cs.aligned = ((u64)src & 15) == 0;
    cs.mis = (u64)src & 7;
    cs.s16 = reinterpret_cast<const ulonglong2*>(src);
    cs.s8 = reinterpret_cast<const u64*>(src - cs.mis);
    cs.lo = (u32)(8 * cs.mis);
    cs.hi = 64 - cs.lo;
    return cs;
}

// Copy n bytes from src to dst with the `lanes` threads numbered `lane` (a warp, a block...).
// Bytes up to dst's first 16-byte boundary are copied one by one, then 16-byte stores of
// chunks from load_chunk, UNROLL loads issued before their stores, then the tail below 16
// bytes one by one.
__device__ __forceinline__ void copy_bytes(u8* __restrict__ dst, const u8* __restrict__ src,
                                           u64 n, u32 lane, u32 lanes) {
    constexpr int U = WARPLAB_MEMCPY_UNROLL;
    u64 head = (16 - ((u64)dst & 15)) & 15;
    if (head > n) head = n;
    for (u64 i = lane; i < head; i += lanes) dst[i] = src[i];
    dst += head;
    src += head;
    n -= head;
    const u64 chunks = n >> 4;
    ulonglong2* d16 = reinterpret_cast<ulonglong2*>(dst);
    const ChunkSource cs = chunk_source(src);
    u64 i = lane;
    for (; i + (u64)(U - 1) * lanes < chunks; i += (u64)U * lanes) {
        ulonglong2 v[U];
#pragma unroll
        for (int k = 0; k < U; ++k) v[k] = load_chunk(cs, i + (u64)k * lanes);
#pragma unroll
        for (int k = 0; k < U; ++k) d16[i + (u64)k * lanes] = v[k];
    }
    for (; i < chunks; i += lanes) d16[i] = load_chunk(cs, i);
    for (u64 j = (chunks << 4) + lane; j < n; j += lanes) dst[j] = src[j];
}

// One block per buffer (grid-stride over buffers).
extern "C" __global__ void memcpy_block_per_buffer(const u64* __restrict__ src,
                                                   const u64* __restrict__ dst,
                                                   const u64* __restrict__ sizes, u64 n) {
    for (u64 b = blockIdx.x; b < n; b += gridDim.x)
        copy_bytes((u8*)dst[b], (const u8*)src[b], size_of(sizes, b), threadIdx.x, blockDim.x);
}

// One warp per buffer (grid-stride over buffers).
extern "C" __global__ void memcpy_warp_per_buffer(const u64* __restrict__ src,
                                                  const u64* __restrict__ dst,
                                                  const u64* __restrict__ sizes, u64 n) {
    const u64 warps = ((u64)gridDim.x * blockDim.x) >> 5;
    const u32 lane = threadIdx.x & 31;
    for (u64 b = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; b < n; b += warps)
        copy_bytes((u8*)dst[b], (const u8*)src[b], size_of(sizes, b), lane, 32);
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

// The batch-memcpy PR's design, first kernel: one tile of T x B buffers per block (thread t
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
        copy_bytes((u8*)dst[i], (const u8*)src[i], size_of(sizes, i), lane, 32);
    }
}

// Second kernel: a persistent grid walks the global chunk space; chunk g belongs to the last
// queue slot whose first chunk is <= g (binary search), and the block copies its CHUNK bytes.
template <int CHUNK>
__global__ void __launch_bounds__(WARPLAB_MEMCPY_BLEV_THREADS)
memcpy_size_classes_blev(const u64* __restrict__ src, const u64* __restrict__ dst,
                         const u64* __restrict__ sizes, const u64* __restrict__ counter,
                         const u32* __restrict__ queue_id,
                         const u64* __restrict__ queue_first) {
    const u64 c = *counter;
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
        copy_bytes((u8*)dst[i] + off, (const u8*)src[i] + off, len, threadIdx.x, blockDim.x);
    }
}

// ---- warp_classes: size classes decided per warp by ballots, no block-wide partition ----
// A warp takes 32 buffers (one per lane: the three metadata arrays read coalesced, 8 bytes a
// lane each), then: buffers <= TMAX bytes are copied by their own lane with the widest words
// both addresses allow; buffers <= SUB_MAX by groups of G lanes (list in shared memory);
// buffers <= WLEV_MAX by the whole warp, one after another (metadata by shuffle); larger ones
// go to the BLEV queue of the size_classes design (one packed atomic per warp that has any).
// No __syncthreads, no histogram, no byte-stream decode.

// Copy n <= MAXN bytes with W-byte words (both addresses W-aligned), then the tail in
// 4-, 2- and 1-byte pieces (aligned: the tail starts at a multiple of W); every load is
// issued before the first store.
template <int W> struct WordOf { typedef u32 T; };
template <> struct WordOf<8> { typedef u64 T; };

template <int W, int MAXN>
__device__ __forceinline__ void thread_copy_words(u8* __restrict__ d, const u8* __restrict__ s,
                                                  u32 n) {
    typedef typename WordOf<W>::T Word;
    constexpr int K = MAXN / W;
    Word v[K];
#pragma unroll
    for (int k = 0; k < K; ++k)
        if ((u32)(k + 1) * W <= n) v[k] = __ldg(reinterpret_cast<const Word*>(s) + k);
    const u32 o4 = n & ~(u32)(W - 1);
    const u32 o2 = o4 + (W > 4 && (n & 4) ? 4 : 0), o1 = o2 + ((n & 2) ? 2 : 0);
    u32 t4 = 0;
    unsigned short t2 = 0;
    u8 t1 = 0;
    if (W > 4 && (n & 4)) t4 = __ldg(reinterpret_cast<const u32*>(s + o4));
    if (n & 2) t2 = __ldg(reinterpret_cast<const unsigned short*>(s + o2));
    if (n & 1) t1 = __ldg(s + o1);
#pragma unroll
    for (int k = 0; k < K; ++k)
        if ((u32)(k + 1) * W <= n) reinterpret_cast<Word*>(d)[k] = v[k];
    if (W > 4 && (n & 4)) *reinterpret_cast<u32*>(d + o4) = t4;
    if (n & 2) *reinterpret_cast<unsigned short*>(d + o2) = t2;
    if (n & 1) d[o1] = t1;
}

// One thread copies n <= MAXN (<= 16) bytes: one 16-byte move when both addresses are
// 16-byte aligned and n is 16, else 8- or 4-byte words where both are so aligned, else bytes
// (all loads first).
template <int MAXN>
__device__ __forceinline__ void thread_copy(u8* __restrict__ d, const u8* __restrict__ s,
                                            u32 n) {
    static_assert(MAXN <= 16, "thread-level buffers are at most 16 bytes");
    const u32 a = (u32)((u64)d | (u64)s);
    if (MAXN == 16 && n == 16 && (a & 15) == 0) {
        *reinterpret_cast<ulonglong2*>(d) = __ldg(reinterpret_cast<const ulonglong2*>(s));
    } else if ((a & 7) == 0) {
        thread_copy_words<8, MAXN>(d, s, n);
    } else if ((a & 3) == 0) {
        thread_copy_words<4, MAXN>(d, s, n);
    } else {
        u8 v[MAXN];
#pragma unroll
        for (int k = 0; k < MAXN; ++k)
            if ((u32)k < n) v[k] = __ldg(s + k);
#pragma unroll
        for (int k = 0; k < MAXN; ++k)
            if ((u32)k < n) d[k] = v[k];
    }
}

// G lanes (g = 0..G-1) copy n <= MAXN bytes: 16-byte stores from d's first 16-byte boundary
// (chunks from load_chunk: 16-byte or shifted 8-byte loads), at most K per lane, and the edge
// bytes before the boundary and after the last chunk; every load before the first store.
template <int G, int MAXN>
__device__ __forceinline__ void group_copy(u8* __restrict__ d, const u8* __restrict__ s,
                                           u32 n, u32 g) {
    constexpr int K = (MAXN / 16 + G - 1) / G;
    constexpr int E = (30 + G - 1) / G;  // edge bytes per lane: head + tail < 32
    u32 head = (16 - ((u32)(u64)d & 15)) & 15;
    if (head > n) head = n;
    const u32 chunks = (n - head) >> 4, body_end = head + (chunks << 4);
    const u32 edges = head + (n - body_end);
    const ChunkSource cs = chunk_source(s + head);
    ulonglong2 v[K];
#pragma unroll
    for (int k = 0; k < K; ++k)
        if (g + (u32)k * G < chunks) v[k] = load_chunk(cs, g + (u64)k * G);
    u8 e[E];
#pragma unroll
    for (int k = 0; k < E; ++k) {
        const u32 j = g + (u32)k * G, at = j < head ? j : j - head + body_end;
        if (j < edges) e[k] = __ldg(s + at);
    }
    ulonglong2* d16 = reinterpret_cast<ulonglong2*>(d + head);
#pragma unroll
    for (int k = 0; k < K; ++k)
        if (g + (u32)k * G < chunks) d16[g + k * G] = v[k];
#pragma unroll
    for (int k = 0; k < E; ++k) {
        const u32 j = g + (u32)k * G, at = j < head ? j : j - head + body_end;
        if (j < edges) d[at] = e[k];
    }
}

__device__ __forceinline__ u64 shfl64(u64 x, u32 lane) {
    return __shfl_sync(FULL_MASK, x, lane);
}

// Thread-level buffers copied as one byte stream of the warp: their bytes back to back in lane
// order, lane l taking stream bytes l, l + 32, ... (at most TMAX each), so the bytes of a
// buffer that one store instruction writes are neighbours (one or two 32-byte sectors per
// buffer and instruction; a lane copying its own buffer byte by byte costs one per byte when
// destinations are scattered). s_src / s_dst: each streamed lane's addresses less its start
// in the stream; s_owner: the lane of each stream byte. Loads before stores, R rounds at a
// time (registers).
template <int TMAX>
__device__ __forceinline__ void stream_copy(const u64* s_src, const u64* s_dst,
                                            const u8* s_owner, u32 total, u32 lane) {
    constexpr int R = TMAX < 8 ? TMAX : 8;
#pragma unroll
    for (int k0 = 0; k0 < TMAX; k0 += R) {
        if (32u * k0 >= total) break;
        u8 v[R];
#pragma unroll
        for (int k = 0; k < R; ++k) {
            const u32 j = lane + 32u * (k0 + k);
            if (j < total) v[k] = __ldg(reinterpret_cast<const u8*>(s_src[s_owner[j]] + j));
        }
#pragma unroll
        for (int k = 0; k < R; ++k) {
            const u32 j = lane + 32u * (k0 + k);
            if (j < total) *reinterpret_cast<u8*>(s_dst[s_owner[j]] + j) = v[k];
        }
    }
}

// The first kernel of warp_classes (the second is memcpy_size_classes_blev<CHUNK>): a
// grid-stride loop of warps over groups of 32 buffers; blocks of WARPLAB_MEMCPY_WARP_THREADS,
// registers capped so that MINB blocks fit an SM (occupancy: small copies are latency-bound).
// STREAM: thread-level buffers that thread_copy would copy byte by byte (an address not 4-byte
// aligned) go through the warp's byte stream instead (1), or all of them do (2), or none (0).
template <int TMAX, int G, int SUB_MAX, int WLEV_MAX, int CHUNK, int MINB, int STREAM>
__global__ void __launch_bounds__(WARPLAB_MEMCPY_WARP_THREADS, MINB)
memcpy_warp_classes(const u64* __restrict__ src, const u64* __restrict__ dst,
                    const u64* __restrict__ sizes, u64 n, u64* __restrict__ counter,
                    u32* __restrict__ queue_id, u64* __restrict__ queue_first) {
    static_assert(TMAX <= 16 && TMAX < SUB_MAX && SUB_MAX <= WLEV_MAX, "bad size classes");
    static_assert(G >= 2 && G <= 32 && 32 % G == 0, "G lanes must divide a warp");
    static_assert(STREAM >= 0 && STREAM <= 2, "STREAM is 0, 1 or 2");
    constexpr int WARPS = WARPLAB_MEMCPY_WARP_THREADS / 32;
    __shared__ u64 s_src[WARPS][32], s_dst[WARPS][32];
    __shared__ u32 s_size[WARPS][32];
    __shared__ u8 s_list[WARPS][32];
    __shared__ u8 s_owner[WARPS][STREAM ? 32 * TMAX : 1];
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u32 lt = (1u << lane) - 1;  // lanes below this one
    const u64 stride = ((u64)gridDim.x * blockDim.x) & ~31ull;
    for (u64 base = ((u64)blockIdx.x * blockDim.x + threadIdx.x) & ~31ull; base < n;
         base += stride) {
        const u64 i = base + lane;
        const bool live = i < n;
        const u64 size = live ? size_of(sizes, i) : 0;
        const u64 sp = live ? src[i] : 0, dp = live ? dst[i] : 0;
        // BLEV: queue slots and first chunks, reserved for the warp by one packed atomic.
        const u32 big = __ballot_sync(FULL_MASK, size > (u64)WLEV_MAX);
        if (big) {
            const u64 mine = size > (u64)WLEV_MAX ? (size + CHUNK - 1) / CHUNK : 0;
            u64 incl = mine;
#pragma unroll
            for (int o = 1; o < 32; o <<= 1) {
                const u64 x = __shfl_up_sync(FULL_MASK, incl, o);
                if (lane >= (u32)o) incl += x;
            }
            u64 old = 0;
            if (lane == 31)
                old = atomicAdd((unsigned long long*)counter,
                                ((unsigned long long)__popc(big) << CHUNK_BITS) | incl);
            old = shfl64(old, 31);
            if (mine) {
                const u64 slot = (old >> CHUNK_BITS) + __popc(big & lt);
                queue_id[slot] = (u32)i;
                queue_first[slot] = (old & ((1ull << CHUNK_BITS) - 1)) + incl - mine;
            }
        }
        // Thread level: the lane's own buffer, or the warp's byte stream.
        const bool tiny = size > 0 && size <= (u64)TMAX;
        const bool streamed = STREAM && tiny && (STREAM == 2 || ((sp | dp) & 3) != 0);
        if (tiny && !streamed) thread_copy<TMAX>((u8*)dp, (const u8*)sp, (u32)size);
        // The rest through shared memory (registers stay free for the copies): every lane's
        // buffer at its lane (streamed ones less their stream start), the list of sub-warp
        // buffers' lanes by rank, the stream's owner lanes.
        const bool sub = size > (u64)TMAX && size <= (u64)SUB_MAX;
        const u32 subs = __ballot_sync(FULL_MASK, sub);
        u32 wl = __ballot_sync(FULL_MASK, size > (u64)SUB_MAX && size <= (u64)WLEV_MAX);
        const u32 strm = STREAM ? __ballot_sync(FULL_MASK, streamed) : 0;
        if (subs | wl | strm) {
            u32 start = 0, total = 0;
            if (strm) {  // the stream: an exclusive scan of the streamed sizes
                const u32 len = streamed ? (u32)size : 0;
                u32 incl = len;
#pragma unroll
                for (int o = 1; o < 32; o <<= 1) {
                    const u32 x = __shfl_up_sync(FULL_MASK, incl, o);
                    if (lane >= (u32)o) incl += x;
                }
                start = streamed ? incl - len : 0;  // the others keep their own addresses
                total = __shfl_sync(FULL_MASK, incl, 31);
#pragma unroll
                for (int k = 0; k < TMAX; ++k)
                    if ((u32)k < len) s_owner[warp][start + k] = (u8)lane;
            }
            s_src[warp][lane] = sp - start;
            s_dst[warp][lane] = dp - start;
            s_size[warp][lane] = (u32)size;
            if (sub) s_list[warp][__popc(subs & lt)] = (u8)lane;
            __syncwarp();
            if (STREAM && strm)
                stream_copy<TMAX>(s_src[warp], s_dst[warp], s_owner[warp], total, lane);
            // Sub-warp level: groups of G lanes over the list.
            const u32 n_sub = __popc(subs);
            for (u32 r = lane / G; r < n_sub; r += 32 / G) {
                const u32 b = s_list[warp][r];
                group_copy<G, SUB_MAX>((u8*)s_dst[warp][b], (const u8*)s_src[warp][b],
                                       s_size[warp][b], lane % G);
            }
            // Warp level: the whole warp per buffer, in lane order.
            while (wl) {
                const u32 b = __ffs(wl) - 1;
                wl &= wl - 1;
                copy_bytes((u8*)s_dst[warp][b], (const u8*)s_src[warp][b], s_size[warp][b],
                           lane, 32);
            }
            __syncwarp();
        }
    }
}

#ifdef WARPLAB_NVCC_CHECK  // the instantiations cuda.py asks NVRTC for, for the nvcc check
template __global__ void memcpy_size_classes_tiles<128, 4, 32, 1024, 8192>(
    const u64*, const u64*, const u64*, u64, u64*, u32*, u64*);
template __global__ void memcpy_size_classes_tiles<256, 1, 32, 8192, 32768>(
    const u64*, const u64*, const u64*, u64, u64*, u32*, u64*);
template __global__ void memcpy_size_classes_blev<8192>(const u64*, const u64*, const u64*,
                                                        const u64*, const u32*, const u64*);
template __global__ void memcpy_size_classes_blev<32768>(const u64*, const u64*, const u64*,
                                                         const u64*, const u32*, const u64*);
#define WARP_CLASSES_INST(TM, G, SM, WM, C, MB, ST)                                          \
    template __global__ void memcpy_warp_classes<TM, G, SM, WM, C, MB, ST>(                  \
        const u64*, const u64*, const u64*, u64, u64*, u32*, u64*);
WARP_CLASSES_INST(16, 8, 256, 8192, 32768, 4, 0)
WARP_CLASSES_INST(16, 8, 256, 8192, 32768, 4, 1)
WARP_CLASSES_INST(16, 8, 256, 8192, 32768, 4, 2)
WARP_CLASSES_INST(16, 16, 256, 8192, 32768, 4, 1)
WARP_CLASSES_INST(16, 8, 256, 8192, 32768, 3, 1)
WARP_CLASSES_INST(16, 16, 1024, 8192, 32768, 4, 0)
WARP_CLASSES_INST(16, 16, 1024, 8192, 32768, 4, 1)
WARP_CLASSES_INST(16, 32, 1024, 8192, 32768, 4, 0)
#endif

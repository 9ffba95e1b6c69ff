// The copy helpers every batched-copy kernel shares (memcpy.cu, memcpy_warp.cuh): sizes read
// as signed 64-bit, 16-byte chunks from aligned or shifted 8-byte loads, and copy_bytes (any
// number of threads over one buffer). Needs warplab.cuh and WARPLAB_MEMCPY_UNROLL.
#pragma once
#include "warplab.cuh"

typedef unsigned char u8;
#define FULL_MASK 0xffffffffu
#define CHUNK_BITS 32  // BLEV counter: queued buffers in the top 32 bits, chunks below
#ifndef WARPLAB_MEMCPY_LOADS
#error "the batched copies need -DWARPLAB_MEMCPY_LOADS (cuda.py DEFINES)"
#endif

// The cache policy of the copies' loads (WARPLAB_MEMCPY_LOADS: cuda.py DEFINES for the base
// module, 0; spec.WARP_TIERS_WORDS.loads for the default copy's, 2): source bytes through the
// read-only path (__ldg) and descriptors (addresses, sizes) as plain loads, or, by bit,
// evict-first (__ldcs, ld.global.cs: read once, so they need not hold L2 lines that scattered
// partial-sector stores could use): 1 the source bytes of every copy, 2 the descriptors, 4 the
// source bytes of the thread-level copies only (buffers of up to 16 bytes, the warp's byte
// stream, the scatter ceiling's touches), 8 those of the thread-level copies of warps whose
// destinations are scattered (scattered_dst); 16, 32, 64 and 128: L2 eviction hints (below).
// The default copy uses 2; the others are measured on the H100 and not taken
// (benchmarks/NOTES.md).

// L2 eviction hints (load policy bits 16, 32, 64 and 128; sm_80 and later, plain before):
// 16 source bytes loaded L2 evict-first through the read-only path with L1 caching as usual
// (where bits 1, 4 and 8 leave __ldg), 32 the thread-level copies' stores L2 evict-last (a
// partially written sector kept in L2 until its other bytes arrive needs no read from DRAM),
// 64 both for the thread-level copies of warps whose destinations are scattered
// (scattered_dst) and evict-normal elsewhere: the policy is a register, chosen per warp; 128
// the loads of 64 alone (one load instruction where bit 8 selects between two; stores
// plain: a line stored evict-last outlives its kernel, benchmarks/NOTES.md).
#if (WARPLAB_MEMCPY_LOADS & 240) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define WARPLAB_MEMCPY_HINTS (WARPLAB_MEMCPY_LOADS & 240)
#else
#define WARPLAB_MEMCPY_HINTS 0
#endif
#if WARPLAB_MEMCPY_HINTS
__device__ __forceinline__ u64 l2_first() {
    u64 p;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
    return p;
}
__device__ __forceinline__ u64 l2_last() {
    u64 p;
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
    return p;
}
__device__ __forceinline__ u64 l2_normal() {
    u64 p;
    asm("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(p));
    return p;
}
__device__ __forceinline__ u8 ld_pol(const u8* a, u64 pol) {
    u32 v;
    asm("ld.global.nc.L2::cache_hint.u8 %0, [%1], %2;" : "=r"(v) : "l"(a), "l"(pol));
    return (u8)v;
}
__device__ __forceinline__ unsigned short ld_pol(const unsigned short* a, u64 pol) {
    unsigned short v;
    asm("ld.global.nc.L2::cache_hint.u16 %0, [%1], %2;" : "=h"(v) : "l"(a), "l"(pol));
    return v;
}
__device__ __forceinline__ u32 ld_pol(const u32* a, u64 pol) {
    u32 v;
    asm("ld.global.nc.L2::cache_hint.u32 %0, [%1], %2;" : "=r"(v) : "l"(a), "l"(pol));
    return v;
}
__device__ __forceinline__ u64 ld_pol(const u64* a, u64 pol) {
    u64 v;
    asm("ld.global.nc.L2::cache_hint.u64 %0, [%1], %2;" : "=l"(v) : "l"(a), "l"(pol));
    return v;
}
__device__ __forceinline__ ulonglong2 ld_pol(const ulonglong2* a, u64 pol) {
    ulonglong2 v;
    asm("ld.global.nc.L2::cache_hint.v2.u64 {%0, %1}, [%2], %3;"
        : "=l"(v.x), "=l"(v.y) : "l"(a), "l"(pol));
    return v;
}
__device__ __forceinline__ void st_pol(u8* a, u8 v, u64 pol) {
    asm volatile("st.global.L2::cache_hint.u8 [%0], %1, %2;" :: "l"(a), "r"((u32)v), "l"(pol));
}
__device__ __forceinline__ void st_pol(unsigned short* a, unsigned short v, u64 pol) {
    asm volatile("st.global.L2::cache_hint.u16 [%0], %1, %2;" :: "l"(a), "h"(v), "l"(pol));
}
__device__ __forceinline__ void st_pol(u32* a, u32 v, u64 pol) {
    asm volatile("st.global.L2::cache_hint.u32 [%0], %1, %2;" :: "l"(a), "r"(v), "l"(pol));
}
__device__ __forceinline__ void st_pol(u64* a, u64 v, u64 pol) {
    asm volatile("st.global.L2::cache_hint.u64 [%0], %1, %2;" :: "l"(a), "l"(v), "l"(pol));
}
__device__ __forceinline__ void st_pol(ulonglong2* a, ulonglong2 v, u64 pol) {
    asm volatile("st.global.L2::cache_hint.v2.u64 [%0], {%1, %2}, %3;"
                 :: "l"(a), "l"(v.x), "l"(v.y), "l"(pol));
}
#endif

// __ldg, or (policy bit 16) an L2 evict-first load through the read-only path.
template <typename T>
__device__ __forceinline__ T ld_ro(const T* p) {
#if WARPLAB_MEMCPY_HINTS & 16
    return ld_pol(p, l2_first());
#else
    return __ldg(p);
#endif
}

// A store of the thread-level copies: plain, or L2 evict-last (policy bit 32; bit 64: where
// the warp's destinations are scattered, else evict-normal).
template <typename T>
__device__ __forceinline__ void st_tiny(T* p, T v, bool scattered) {
#if WARPLAB_MEMCPY_HINTS & 32
    st_pol(p, v, l2_last());
#elif WARPLAB_MEMCPY_HINTS & 64
    st_pol(p, v, scattered ? l2_last() : l2_normal());
#else
    *p = v;
#endif
}

// Loads by policy: ld_bytes (group, warp and block copies), ld_desc (descriptors), ld_tiny
// (thread-level copies; scattered: the warp's destinations are, see scattered_dst).
template <typename T>
__device__ __forceinline__ T ld_bytes(const T* p) {
#if WARPLAB_MEMCPY_LOADS & 1
    return __ldcs(p);
#else
    return ld_ro(p);
#endif
}
template <typename T>
__device__ __forceinline__ T ld_desc(const T* p) {
#if WARPLAB_MEMCPY_LOADS & 2
    return __ldcs(p);
#else
    return *p;
#endif
}
template <typename T>
__device__ __forceinline__ T ld_tiny(const T* p, bool scattered) {
#if WARPLAB_MEMCPY_LOADS & 5
    return __ldcs(p);
#elif WARPLAB_MEMCPY_LOADS & 8
    return scattered ? __ldcs(p) : ld_ro(p);
#elif WARPLAB_MEMCPY_HINTS & 192
    return ld_pol(p, scattered ? l2_first() : l2_normal());
#else
    return ld_ro(p);
#endif
}

// Whether a warp's buffers lie scattered on the side of addresses p: fewer than half of the
// lanes in `active` find the next lane's buffer starting within a sector after their own end.
// Every lane in `active` calls it (a shuffle and a ballot: the scatter ceiling's
// thread-per-buffer kernel leaves lanes behind at the end of its batch).
__device__ __forceinline__ bool scattered(u64 p, u64 size, bool live, u32 lane, u32 active) {
    const u64 next = __shfl_down_sync(active, p, 1);
    const bool last = lane == 31 || !((active >> (lane + 1)) & 1);
    const bool near = last || !live || (next >= p && next - p <= size + 32);
    return 2 * __popc(__ballot_sync(active, near)) < __popc(active);
}

// Whether a warp's destinations are scattered, for the load policy (bits 8, 64, 128; false
// without).
__device__ __forceinline__ bool scattered_dst(u64 dp, u64 size, bool live, u32 lane) {
#if WARPLAB_MEMCPY_LOADS & 200
    return scattered(dp, size, live, lane, __activemask());
#else
    return false;
#endif
}

__device__ __forceinline__ u64 size_of(const u64* sizes, u64 i) {
    i64 s = (i64)ld_desc(sizes + i);
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
    if (s.aligned) return ld_bytes(s.s16 + i);
    ulonglong2 v;
    const u64 a0 = ld_bytes(s.s8 + 2 * i), a1 = ld_bytes(s.s8 + 2 * i + 1);
    if (s.mis == 0) {  // 8- but not 16-byte aligned
        v.x = a0;
        v.y = a1;
    } else {
        const u64 a2 = ld_bytes(s.s8 + 2 * i + 2);
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

// The full rounds of a copy's 16-byte chunks, from this lane's chunk i on: UNROLL chunks a
// lane a round (chunks `lanes` apart), every load of a round issued before its stores; returns
// the lane's first chunk after them.
__device__ __forceinline__ u64 full_rounds(ulonglong2* __restrict__ d16, const ChunkSource& cs,
                                           u64 chunks, u64 i, u32 lanes) {
    constexpr int U = WARPLAB_MEMCPY_UNROLL;
    for (; i + (u64)(U - 1) * lanes < chunks; i += (u64)U * lanes) {
        ulonglong2 v[U];
#pragma unroll
        for (int k = 0; k < U; ++k) v[k] = load_chunk(cs, i + (u64)k * lanes);
#pragma unroll
        for (int k = 0; k < U; ++k) d16[i + (u64)k * lanes] = v[k];
    }
    return i;
}

// The bytes of a copy before dst's first 16-byte boundary (head) and after its last 16-byte
// chunk (from body_end): at most 30, one a lane of 32 or more. Loaded before a copy's rounds
// (load_edge), stored after them (store), so they cost no round trip of their own.
struct EdgeByte {
    u64 at;  // this lane's byte
    bool edge;
    u8 e;
    __device__ __forceinline__ void store(u8* __restrict__ dst) const {
        if (edge) dst[at] = e;
    }
};

__device__ __forceinline__ EdgeByte load_edge(const u8* __restrict__ src, u64 n, u64 head,
                                              u64 body_end, u32 lane) {
    EdgeByte b;
    b.at = lane < head ? lane : lane - head + body_end;
    b.edge = b.at < n;  // head + tail < 31 <= lanes
    b.e = 0;
    if (b.edge) b.e = ld_bytes(src + b.at);
    return b;
}

// Copy n bytes from src to dst with the `lanes` (>= 32) threads numbered `lane` (a warp, a
// block...): 16-byte stores of chunks from load_chunk on dst's 16-byte grid in full rounds.
// ONE_TRIP: the edge bytes (EdgeByte) loaded before the first round and stored after the
// last, and the chunks left after the full rounds in one predicated round, so a buffer of up
// to UNROLL x lanes chunks costs one memory round trip (the warp-level copies, the table
// kernels). Else (the BLEV kernel's pieces, whose 8 blocks per SM need at most 32 registers,
// and the block-per-buffer and warp-per-buffer baselines) the head bytes, the leftover
// chunks one at a time and the tail bytes each wait for their loads: up to UNROLL + 2 round
// trips, fewer registers.
template <bool ONE_TRIP>
__device__ __forceinline__ void copy_bytes(u8* __restrict__ dst, const u8* __restrict__ src,
                                           u64 n, u32 lane, u32 lanes) {
    u64 head = (16 - ((u64)dst & 15)) & 15;
    if (head > n) head = n;
    if constexpr (!ONE_TRIP) {
        for (u64 i = lane; i < head; i += lanes) dst[i] = src[i];
        dst += head;
        src += head;
        n -= head;
        const u64 chunks = n >> 4;
        ulonglong2* d16 = reinterpret_cast<ulonglong2*>(dst);
        const ChunkSource cs = chunk_source(src);
        for (u64 i = full_rounds(d16, cs, chunks, lane, lanes); i < chunks; i += lanes)
            d16[i] = load_chunk(cs, i);
        for (u64 j = (chunks << 4) + lane; j < n; j += lanes) dst[j] = src[j];
    } else {
        constexpr int U = WARPLAB_MEMCPY_UNROLL;
        const u64 chunks = (n - head) >> 4;
        const EdgeByte eb = load_edge(src, n, head, head + (chunks << 4), lane);
        ulonglong2* d16 = reinterpret_cast<ulonglong2*>(dst + head);
        const ChunkSource cs = chunk_source(src + head);
        const u64 i = full_rounds(d16, cs, chunks, lane, lanes);
        if (i < chunks) {  // fewer than U chunks left for this lane: one predicated round
            ulonglong2 v[U];
#pragma unroll
            for (int k = 0; k < U; ++k) {
                v[k] = make_ulonglong2(0, 0);
                if (i + (u64)k * lanes < chunks) v[k] = load_chunk(cs, i + (u64)k * lanes);
            }
#pragma unroll
            for (int k = 0; k < U; ++k)
                if (i + (u64)k * lanes < chunks) d16[i + (u64)k * lanes] = v[k];
        }
        eb.store(dst);
    }
}

// The 16 bytes from byte m (1..15) of the 32 in a (low) and b (high).
__device__ __forceinline__ ulonglong2 shifted16(ulonglong2 a, ulonglong2 b, u32 m) {
    const u64 x0 = m < 8 ? a.x : a.y, x1 = m < 8 ? a.y : b.x, x2 = m < 8 ? b.x : b.y;
    const u32 s = 8 * (m & 7);
    if (s == 0) return make_ulonglong2(x0, x1);  // m == 8
    return make_ulonglong2((x0 >> s) | (x1 << (64 - s)), (x1 >> s) | (x2 << (64 - s)));
}

// Lane `lane`'s 8 or 16 bytes (the whole warp takes part).
__device__ __forceinline__ u64 shfl64(u64 x, u32 lane) {
    return __shfl_sync(FULL_MASK, x, lane);
}
__device__ __forceinline__ ulonglong2 shfl16(ulonglong2 v, u32 lane) {
    return make_ulonglong2(shfl64(v.x, lane), shfl64(v.y, lane));
}

// copy_bytes<true> for a whole warp (every lane calls it with the same buffer): where the
// source is not 16-byte aligned where the destination is, each chunk from one aligned 16-byte
// load and the next lane's (a shuffle), shifted, instead of three shifted 8-byte loads. Every
// lane takes the same rounds (the shuffles): a round loads 32 x U aligned words and stores
// the 32 x U - 1 chunks whose two words it holds (lane 31's last chunk needs the next round's
// first word: it is the next round's first chunk), its loads predicated. A load never leaves
// an aligned 16-byte word that holds a source byte (word j holds one for j <= chunks).
template <int U>
__device__ __forceinline__ void warp_copy_bytes(u8* __restrict__ dst, const u8* __restrict__ src,
                                                u64 n, u32 lane) {
    u64 head = (16 - ((u64)dst & 15)) & 15;
    if (head > n) head = n;
    const u32 m = (u32)((u64)(src + head) & 15);
    if (m == 0) {
        copy_bytes<true>(dst, src, n, lane, 32);
        return;
    }
    const u64 chunks = (n - head) >> 4;
    const EdgeByte eb = load_edge(src, n, head, head + (chunks << 4), lane);
    ulonglong2* d16 = reinterpret_cast<ulonglong2*>(dst + head);
    const ulonglong2* s16 = reinterpret_cast<const ulonglong2*>(src + head - m);
    const u32 next = (lane + 1) & 31;
    for (u64 base = 0; base < chunks; base += 32 * U - 1) {
        ulonglong2 w[U];
#pragma unroll
        for (int k = 0; k < U; ++k) {
            const u64 j = base + lane + 32 * (u64)k;
            w[k] = make_ulonglong2(0, 0);
            if (j <= chunks) w[k] = ld_bytes(s16 + j);
        }
        ulonglong2 r = shfl16(w[0], next);  // the next lane's word (lane 31: lane 0's)
#pragma unroll
        for (int k = 0; k < U; ++k) {
            const ulonglong2 r1 = k + 1 < U ? shfl16(w[k + 1], next) : r;
            const u64 i = base + lane + 32 * (u64)k;
            if (i < chunks && (k + 1 < U || lane != 31))
                d16[i] = shifted16(w[k], lane == 31 ? r1 : r, m);
            r = r1;
        }
    }
    eb.store(dst);
}

// The copies of one lane, a group of lanes and the whole warp that the warp_classes kernel
// (memcpy_warp.cuh) runs on its buffers of each size class.
#pragma once
#include "memcpy_copy.cuh"

// Z: zero a register array before its predicated loads (the default, warp_tiers_words, zeroes
// all of them; the sweep's shapes fewer or none: spec.WarpClasses.zeroed). A load
// whose predicate is false leaves its register's old value, and the store under the same
// predicate does not tell ptxas that value is dead: the array stays live across the warp's
// loop and, at the 64-register cap, is spilled (a spill store right behind each load waits for
// that load). Zeroed, the array starts anew each pass. No effect on the copied bytes.
// sc (the thread-level copies' last argument): the warp's destinations are scattered
// (scattered_dst, memcpy_copy.cuh); only load policy bit 8 reads it (ld_tiny).
template <bool Z, typename T, int N>
__device__ __forceinline__ void zero_if(T (&a)[N]) {
    if constexpr (Z) {
#pragma unroll
        for (int k = 0; k < N; ++k) a[k] = T{};
    }
}

// The warp loop's copy of one buffer by the whole warp: copy_bytes<true>, or with
// WARPLAB_MEMCPY_WARP_SHUFFLE = U > 0 (cuda.py DEFINES) warp_copy_bytes<U> (a misaligned
// source's chunks from one aligned 16-byte load and a shuffle, rounds of U words a lane).
__device__ __forceinline__ void warp_loop_copy(u8* __restrict__ d, const u8* __restrict__ s,
                                               u64 n, u32 lane) {
    if constexpr (WARPLAB_MEMCPY_WARP_SHUFFLE > 0)
        warp_copy_bytes<WARPLAB_MEMCPY_WARP_SHUFFLE>(d, s, n, lane);
    else
        copy_bytes<true>(d, s, n, lane, 32);
}

// Copy n <= MAXN bytes with W-byte words (both addresses W-aligned), then the tail in
// 4-, 2- and 1-byte pieces (aligned: the tail starts at a multiple of W); every load is
// issued before the first store.
template <int W> struct WordOf { typedef u32 T; };
template <> struct WordOf<8> { typedef u64 T; };

template <int W, int MAXN, bool Z>
__device__ __forceinline__ void thread_copy_words(u8* __restrict__ d, const u8* __restrict__ s,
                                                  u32 n, bool sc) {
    typedef typename WordOf<W>::T Word;
    constexpr int K = MAXN / W;
    Word v[K];
    zero_if<Z>(v);
#pragma unroll
    for (int k = 0; k < K; ++k)
        if ((u32)(k + 1) * W <= n) v[k] = ld_tiny(reinterpret_cast<const Word*>(s) + k, sc);
    const u32 o4 = n & ~(u32)(W - 1);
    const u32 o2 = o4 + (W > 4 && (n & 4) ? 4 : 0), o1 = o2 + ((n & 2) ? 2 : 0);
    u32 t4 = 0;
    unsigned short t2 = 0;
    u8 t1 = 0;
    if (W > 4 && (n & 4)) t4 = ld_tiny(reinterpret_cast<const u32*>(s + o4), sc);
    if (n & 2) t2 = ld_tiny(reinterpret_cast<const unsigned short*>(s + o2), sc);
    if (n & 1) t1 = ld_tiny(s + o1, sc);
#pragma unroll
    for (int k = 0; k < K; ++k)
        if ((u32)(k + 1) * W <= n) st_tiny(reinterpret_cast<Word*>(d) + k, v[k], sc);
    if (W > 4 && (n & 4)) st_tiny(reinterpret_cast<u32*>(d + o4), t4, sc);
    if (n & 2) st_tiny(reinterpret_cast<unsigned short*>(d + o2), t2, sc);
    if (n & 1) st_tiny(d + o1, t1, sc);
}

// One aligned move of n = 1, 2, 4, 8 or 16 bytes (both addresses n-aligned).
__device__ __forceinline__ void one_move(u8* __restrict__ d, const u8* __restrict__ s, u32 n,
                                         bool sc) {
    if (n == 16)
        st_tiny(reinterpret_cast<ulonglong2*>(d),
                ld_tiny(reinterpret_cast<const ulonglong2*>(s), sc), sc);
    else if (n == 8)
        st_tiny(reinterpret_cast<u64*>(d), ld_tiny(reinterpret_cast<const u64*>(s), sc), sc);
    else if (n == 4)
        st_tiny(reinterpret_cast<u32*>(d), ld_tiny(reinterpret_cast<const u32*>(s), sc), sc);
    else if (n == 2)
        st_tiny(reinterpret_cast<unsigned short*>(d),
                ld_tiny(reinterpret_cast<const unsigned short*>(s), sc), sc);
    else
        st_tiny(d, ld_tiny(s, sc), sc);
}

// One thread copies n <= MAXN (<= 16) bytes, both addresses 4-byte aligned: one 16-byte move
// when both are 16-byte aligned and n is 16, else 8- or 4-byte words (all loads first).
template <int MAXN, bool Z>
__device__ __forceinline__ void word_copy(u8* __restrict__ d, const u8* __restrict__ s, u32 n,
                                          bool sc) {
    static_assert(MAXN <= 16, "thread-level buffers are at most 16 bytes");
    const u32 a = (u32)((u64)d | (u64)s);
    if (MAXN == 16 && n == 16 && (a & 15) == 0)
        st_tiny(reinterpret_cast<ulonglong2*>(d),
                ld_tiny(reinterpret_cast<const ulonglong2*>(s), sc), sc);
    else if ((a & 7) == 0)
        thread_copy_words<8, MAXN, Z>(d, s, n, sc);
    else
        thread_copy_words<4, MAXN, Z>(d, s, n, sc);
}

// One thread copies n <= MAXN (<= 16) bytes: word_copy where both addresses are 4-byte
// aligned, else bytes (all loads first).
template <int MAXN, bool Z>
__device__ __forceinline__ void thread_copy(u8* __restrict__ d, const u8* __restrict__ s,
                                            u32 n, bool sc) {
    if ((((u32)(u64)d | (u32)(u64)s) & 3) == 0) {
        word_copy<MAXN, Z>(d, s, n, sc);
    } else {
        u8 v[MAXN];
        zero_if<Z>(v);
#pragma unroll
        for (int k = 0; k < MAXN; ++k)
            if ((u32)k < n) v[k] = ld_tiny(s + k, sc);
#pragma unroll
        for (int k = 0; k < MAXN; ++k)
            if ((u32)k < n) st_tiny(d + k, v[k], sc);
    }
}

// One lane copies n <= MAXN (<= 16) bytes at any alignment by itself: the aligned 8-byte
// source words that hold its bytes (at most 3; a word holding a source byte never leaves that
// byte's page), all loaded first, shifted into the buffer's byte order as 4-byte words, then
// stored byte by byte, each store predicated on the size (no branch: the lanes of a warp
// never diverge here). Where the warp's destinations are neighbours (WORDS bit 4,
// memcpy_warp.cuh) it replaces the byte stream's load per byte, warp scan and shared-memory
// owner lookups with one to three loads a lane, issued as soon as the descriptors arrive.
template <int MAXN, bool Z>
__device__ __forceinline__ void lane_shifted_copy(u8* __restrict__ d, const u8* __restrict__ s,
                                                  u32 n, bool sc) {
    static_assert(MAXN <= 16, "thread-level buffers are at most 16 bytes");
    constexpr int KW = (MAXN + 14) / 8;  // 8-byte words holding MAXN bytes at any offset
    constexpr int KV = (MAXN + 3) / 4;   // 4-byte words of the buffer
    const u32 r = (u32)(u64)s & 7u;
    const u64* sw = reinterpret_cast<const u64*>(s - r);
    const u32 last = (r + n - 1) >> 3;   // the last word holding a source byte
    u64 w[KW];
    zero_if<Z>(w);
#pragma unroll
    for (int k = 0; k < KW; ++k)
        if ((u32)k <= last) w[k] = ld_tiny(sw + k, sc);
    u32 a[2 * KW + 2];  // the words as 4-byte halves, from the first one holding byte r
#pragma unroll
    for (int k = 0; k < KW; ++k) {
        a[2 * k] = (u32)w[k];
        a[2 * k + 1] = (u32)(w[k] >> 32);
    }
    a[2 * KW] = a[2 * KW + 1] = 0;
    const bool up = r >= 4;
    const u32 sh = 8 * (r & 3);
    u32 v[KV];
#pragma unroll
    for (int k = 0; k < KV; ++k)
        v[k] = __funnelshift_r(up ? a[k + 1] : a[k], up ? a[k + 2] : a[k + 1], sh);
#pragma unroll
    for (int k = 0; k < MAXN; ++k)
        if ((u32)k < n) st_tiny(d + k, (u8)(v[k >> 2] >> (8 * (k & 3))), sc);
}

// G lanes (g = 0..G-1) copy n bytes (16 < n <= GW) at any alignment as 4-byte words of the
// destination in neighbouring lanes (group_copy spends up to three 8-byte loads per 16-byte
// chunk and a byte load and store per edge byte, each its own instruction touching the same
// sectors): the h < 4 bytes before d's first 4-byte boundary and the t < 4 after its last
// whole word byte by byte (one instruction: at most 6 bytes, G >= 8 lanes), each destination
// word funnel-shifted from the two aligned source words that hold its bytes (lane g loads
// source words g, g + G, g + 2G; the next lane's by a shuffle). Loads never leave an aligned
// word holding a source byte; every load before the first store. `on`: whether this group has
// a buffer (the caller's loop runs the same passes on every lane, for the shuffles).
template <int G, int GW, bool Z>
__device__ __forceinline__ void group_words(u8* __restrict__ d, const u8* __restrict__ s,
                                            u32 n, u32 g, bool on) {
    static_assert(G >= 8, "the head and tail bytes (at most 6) take one instruction");
    constexpr int K = (GW / 4 + G - 1) / G;      // destination words a lane
    constexpr int KS = (GW / 4 + 1 + G - 1) / G;  // source words a lane
    static_assert(KS > K, "lane G - 1 takes its next word from the next pass");
    const u32 h = (4u - ((u32)(u64)d & 3u)) & 3u;  // n > 16 > h
    const u32 words = on ? (n - h) >> 2 : 0, t = (n - h) & 3u;
    const u8* sb = s + h;
    const u32 sh = (u32)(u64)sb & 3u;
    const u32* sa = reinterpret_cast<const u32*>(sb - sh);
    const u32 need = words + (sh != 0 && words ? 1 : 0);  // source words holding body bytes
    u32 a[KS];
    zero_if<Z>(a);
#pragma unroll
    for (int k = 0; k < KS; ++k)
        if (g + (u32)k * G < need) a[k] = ld_bytes(sa + g + k * G);
    const bool edge = on && g < h + t;
    const u32 at = g < h ? g : 4 * words + g;  // head byte g, or tail byte g - h after the body
    u8 e = 0;
    if (edge) e = ld_bytes(s + at);
    u32 v[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const u32 next = __shfl_down_sync(FULL_MASK, a[k], 1, G);
        const u32 first = __shfl_sync(FULL_MASK, a[k + 1], 0, G);
        v[k] = __funnelshift_r(a[k], g == G - 1 ? first : next, 8 * sh);
    }
    u32* dw = reinterpret_cast<u32*>(d + h);
#pragma unroll
    for (int k = 0; k < K; ++k)
        if (g + (u32)k * G < words) dw[g + k * G] = v[k];
    if (edge) d[at] = e;
}

template <int G, int MAXN, bool Z>
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
    zero_if<Z>(v);
#pragma unroll
    for (int k = 0; k < K; ++k)
        if (g + (u32)k * G < chunks) v[k] = load_chunk(cs, g + (u64)k * G);
    u8 e[E];
    zero_if<Z>(e);
#pragma unroll
    for (int k = 0; k < E; ++k) {
        const u32 j = g + (u32)k * G, at = j < head ? j : j - head + body_end;
        if (j < edges) e[k] = ld_bytes(s + at);
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

// Thread-level buffers copied as one stream of the warp's elements (T: bytes, or 4-byte
// words): their elements back to back in lane order, lane l taking stream elements l, l + 32,
// ... (at most MAXE each), so the elements of a buffer that one store instruction writes are
// neighbours (one or two 32-byte sectors per buffer and instruction; a lane copying its own
// buffer piece by piece costs one per piece when destinations are scattered). s_src / s_dst:
// each streamed lane's addresses less its start in the stream (in bytes); s_owner: the lane
// of each stream element, from the front (BACK false) or from the back of its OWN entries.
// Loads before stores, R rounds at a time (registers).
template <typename T, int MAXE, bool Z, bool BACK = false, int OWN = 0>
__device__ __forceinline__ void stream_copy(const u64* s_src, const u64* s_dst,
                                            const u8* s_owner, u32 total, u32 lane, bool sc) {
    constexpr int R = MAXE < 8 ? MAXE : 8;
#pragma unroll
    for (int k0 = 0; k0 < MAXE; k0 += R) {
        if (32u * k0 >= total) break;
        T v[R];
        zero_if<Z>(v);
#pragma unroll
        for (int k = 0; k < R; ++k) {
            const u32 j = lane + 32u * (k0 + k);
            if (j < total)
                v[k] = ld_tiny(reinterpret_cast<const T*>(
                                   s_src[s_owner[BACK ? OWN - 1 - j : j]] + sizeof(T) * j), sc);
        }
#pragma unroll
        for (int k = 0; k < R; ++k) {
            const u32 j = lane + 32u * (k0 + k);
            if (j < total)
                st_tiny(reinterpret_cast<T*>(s_dst[s_owner[BACK ? OWN - 1 - j : j]] +
                                             sizeof(T) * j), v[k], sc);
        }
    }
}

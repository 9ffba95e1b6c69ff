// The warp_classes kernel of the batched copy (launch plans in cuda.py, instantiations that
// NVRTC compiles listed there, and in memcpy.cu for the nvcc check).
#pragma once
#include "memcpy_copy.cuh"

// ---- warp_classes: size classes decided per warp by ballots, no block-wide partition ----
// A warp takes 32 buffers (one per lane: the three metadata arrays read coalesced, 8 bytes a
// lane each), then: buffers <= TMAX bytes are copied by their own lane with the widest words
// both addresses allow, or as the warp's byte stream (STREAM); buffers <= SUB_MAX by groups of
// G lanes, buffers <= SUB2_MAX by groups of G2 lanes (lists in shared memory); buffers
// <= WLEV_MAX by the whole warp, one after another; larger ones go to the BLEV queue of the
// size_classes design (one packed atomic per warp that has any). No __syncthreads, no
// histogram.

#include "memcpy_lanes.cuh"

// Blocks per SM a register cap may ask for: MINB, at most what the architecture keeps
// resident (threads per SM: 1024 on sm_75, 1536 on sm_86/89, 2048 on sm_80 and sm_90; ptxas
// rejects a larger request). NVRTC compiles for the device in use.
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 800)
#define WARPLAB_MEMCPY_SM_THREADS 1024
#elif defined(__CUDA_ARCH__) && \
    (__CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 870 || __CUDA_ARCH__ == 890)
#define WARPLAB_MEMCPY_SM_THREADS 1536
#else
#define WARPLAB_MEMCPY_SM_THREADS 2048
#endif
#define WARPLAB_MEMCPY_MINB(b) \
    ((b) * WARPLAB_MEMCPY_WARP_THREADS <= WARPLAB_MEMCPY_SM_THREADS \
         ? (b) : WARPLAB_MEMCPY_SM_THREADS / WARPLAB_MEMCPY_WARP_THREADS)

// The first kernel of warp_classes (the second is memcpy_size_classes_blev<CHUNK>): a
// grid-stride loop of warps over groups of 32 buffers; blocks of WARPLAB_MEMCPY_WARP_THREADS,
// registers capped so that MINB blocks fit an SM (occupancy: small copies are latency-bound).
// STREAM: thread-level buffers that thread_copy would copy byte by byte (an address not 4-byte
// aligned) go through the warp's byte stream instead (1), or all of them do (2), or all but
// those one aligned move copies (3: n = 1, 2, 4, 8 or 16 with both addresses n-aligned; no
// thread_copy), or those neither one aligned move nor 4-byte words copy (4: both addresses
// 4-byte aligned -> word_copy, else one_move where it applies, else the stream; no
// thread_copy), or none (0). Buffers of SUB_MAX + 1 .. SUB2_MAX bytes: groups of G2 lanes
// (none when SUB2_MAX == SUB_MAX). ZERO: which register arrays are zeroed before their
// predicated loads (zero_if): 1 the stream's bytes, 2 the lane's words and bytes and the
// groups' chunks and edge bytes, 3 both, 0 none. WORDS (bits; 0 none): 1 the G-lane groups'
// buffers of at most 8 G bytes (not both addresses multiples of 16) are copied as 4-byte
// words of the destination in neighbouring lanes (group_words), a list and loop of their own
// before group_copy's; 2 (STREAM 4 only) in warps whose destinations are scattered
// (scattered, memcpy_copy.cuh), the thread-level buffers that word_copy would copy in two or
// more words (size and addresses multiples of 4, no single aligned move) go through a stream
// of the warp's 4-byte words instead of their own lane; 4 (STREAM 4 only) in warps whose
// destinations are not scattered, the thread-level buffers the byte stream would take are
// copied by their own lane from aligned 8-byte source words (lane_shifted_copy). The body is
// warp_classes_body; the kernels are memcpy_warp_classes (the three arrays as arguments) and
// memcpy_warp_classes_via (their addresses read from a header that memcpy_windows_count
// wrote: the batch's own arrays or their copies grouped by destination window,
// memcpy_windows.cuh).
// How a kernel's warps take their groups of 32 buffers (warp_classes_body's Passes): a
// grid-stride loop (GridStride: 2^parts_log2 neighbouring warps per group, in one pass when the
// grid covers the batch), or runs of blocks' own (Runs: one warp per group; block b takes
// `passes` consecutive groups of THREADS buffers from b * passes * THREADS on, a pass each, so
// blocks still start in the batch's order while each lives `passes` times as long: fewer
// blocks to launch and retire).
//
// The parts of a group: where a batch has fewer groups than the GPU holds warps (a few
// thousand buffers of 1-8 KiB: 64 MiB of 4 KiB buffers is 512 groups), a warp that copies its
// group's 32 buffers one after another keeps too few bytes in flight and the copy is bound by
// latency. With P = 2^parts_log2 parts, P warps share a group: all read its descriptors, part p
// copies every P-th buffer of each list of the sub-warp groups and warp-level buffers, and part
// 0 alone the thread-level buffers, the streams and the BLEV queue (the host picks P from the
// group count: cuda.py parts_log2).
struct GridStride {
    u64 stride;
    u32 parts_log2, part;
    __device__ __forceinline__ u64 first(u64) {
        const u64 w = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;  // the grid's warp
        part = (u32)w & ((1u << parts_log2) - 1);
        stride = (((u64)gridDim.x * blockDim.x) >> (5 + parts_log2)) << 5;
        return (w >> parts_log2) << 5;
    }
    __device__ __forceinline__ bool more(u64 base, u64 n) const { return base < n; }
    __device__ __forceinline__ u64 next(u64 base) const { return base + stride; }
};

struct Runs {
    u64 passes, end;
    static constexpr u32 parts_log2 = 0, part = 0;
    __device__ __forceinline__ u64 first(u64 n) {
        const u64 start = (u64)blockIdx.x * passes * blockDim.x;
        end = start + passes * blockDim.x < n ? start + passes * blockDim.x : n;
        return start + (threadIdx.x & ~31u);
    }
    __device__ __forceinline__ bool more(u64 base, u64) const { return base < end; }
    __device__ __forceinline__ u64 next(u64 base) const { return base + blockDim.x; }
};

template <int TMAX, int G, int SUB_MAX, int G2, int SUB2_MAX, int WLEV_MAX, int CHUNK,
          int STREAM, int ZERO, int WORDS, typename Passes>
__device__ __forceinline__ void
warp_classes_body(const u64* __restrict__ src, const u64* __restrict__ dst,
                  const u64* __restrict__ sizes, u64 n, u64* __restrict__ counter,
                  u32* __restrict__ queue_id, u64* __restrict__ queue_first, Passes passes) {
    static_assert(TMAX <= 16 && TMAX < SUB_MAX && SUB_MAX <= SUB2_MAX && SUB2_MAX <= WLEV_MAX,
                  "bad size classes");
    static_assert(G >= 2 && G <= 32 && 32 % G == 0, "G lanes must divide a warp");
    static_assert(G2 >= 2 && G2 <= 32 && 32 % G2 == 0, "G2 lanes must divide a warp");
    static_assert(STREAM >= 0 && STREAM <= 4, "STREAM is 0, 1, 2, 3 or 4");
    static_assert(ZERO >= 0 && ZERO <= 3, "ZERO is 0, 1, 2 or 3");
    static_assert(WORDS >= 0 && WORDS <= 7 && (STREAM == 4 || !(WORDS & 6)),
                  "WORDS is 0 to 7; its word stream and shifted lanes need STREAM 4");
    constexpr bool ZS = (ZERO & 1) != 0, ZL = (ZERO & 2) != 0, WS = (WORDS & 2) != 0;
    constexpr bool LS = (WORDS & 4) != 0;
    constexpr int GW = 8 * G, OWN = 32 * TMAX;
    constexpr int WARPS = WARPLAB_MEMCPY_WARP_THREADS / 32;
    __shared__ u64 s_src[WARPS][32], s_dst[WARPS][32];
    __shared__ u32 s_size[WARPS][32];
    __shared__ u8 s_list[WARPS][32];
    __shared__ u8 s_owner[WARPS][STREAM ? OWN : 1];  // bytes from the front, words the back
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u32 lt = (1u << lane) - 1;  // lanes below this one
    const u64 base0 = passes.first(n);
    // this warp's part of its group (GridStride's parts; 0 of 1 for Runs)
    const u32 part = passes.part, parts = 1u << passes.parts_log2;
    const bool lead = part == 0;  // thread-level buffers, streams and the BLEV queue
    for (u64 base = base0; passes.more(base, n); base = passes.next(base)) {
        const u64 i = base + lane;
        const bool live = i < n;
        const u64 size = live ? size_of(sizes, i) : 0;
        const u64 sp = live ? ld_desc(src + i) : 0, dp = live ? ld_desc(dst + i) : 0;
        const bool sc = scattered_dst(dp, size, live, lane);
        // WORDS 2 and 4: whether this warp's destinations are scattered (sc where the load
        // policy has asked already)
        const bool dsc = !(WORDS & 6) ? false
                         : (WARPLAB_MEMCPY_LOADS & 200) ? sc
                                                       : scattered(dp, size, live, lane, FULL_MASK);
        // BLEV: queue slots and first chunks, reserved for the warp by one packed atomic.
        const u32 big = __ballot_sync(FULL_MASK, lead && size > (u64)WLEV_MAX);
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
        // Thread level: the lane's own buffer, or the warp's byte stream (or word stream).
        const bool tiny = lead && size > 0 && size <= (u64)TMAX;
        bool streamed = false, wstreamed = false;
        if constexpr (STREAM == 3) {  // one aligned move: n a power of two dividing both
            streamed = tiny && ((size & (size - 1)) | ((sp | dp) & (size - 1))) != 0;
            if (tiny && !streamed) one_move((u8*)dp, (const u8*)sp, (u32)size, sc);
        } else if constexpr (STREAM == 4) {  // 4-byte words, else one aligned move, else stream
            const bool words = ((sp | dp) & 3) == 0;
            const bool move = ((size & (size - 1)) | ((sp | dp) & (size - 1))) == 0;
            const bool shifted = LS && !dsc && tiny && !words && !move;
            streamed = tiny && !words && !move && !shifted;
            wstreamed = WS && dsc && tiny && words && !move && (size & 3) == 0;
            if (tiny && words && !wstreamed)
                word_copy<TMAX, ZL>((u8*)dp, (const u8*)sp, (u32)size, sc);
            else if (tiny && move) one_move((u8*)dp, (const u8*)sp, (u32)size, sc);
            else if (shifted) lane_shifted_copy<TMAX, ZL>((u8*)dp, (const u8*)sp, (u32)size, sc);
        } else {
            streamed = STREAM && tiny && (STREAM == 2 || ((sp | dp) & 3) != 0);
            if (tiny && !streamed) thread_copy<TMAX, ZL>((u8*)dp, (const u8*)sp, (u32)size, sc);
        }
        // The rest through shared memory (registers stay free for the copies): every lane's
        // buffer at its lane (streamed ones less their stream start), the lanes of the G-lane
        // groups' buffers by rank from the front of s_list, of the G2-lane groups' from the
        // back, the stream's owner lanes.
        bool sub = size > (u64)TMAX && size <= (u64)SUB_MAX, wsub = false;
        if constexpr ((WORDS & 1) != 0) {  // group_words' buffers leave group_copy's list
            const u32 a = (u32)sp | (u32)dp;
            wsub = sub && size <= (u64)GW && (a & 15) != 0;
            sub = sub && !wsub;
        }
        const bool sub2 = SUB2_MAX > SUB_MAX && size > (u64)SUB_MAX && size <= (u64)SUB2_MAX;
        const u32 subs = __ballot_sync(FULL_MASK, sub);
        const u32 subs2 = SUB2_MAX > SUB_MAX ? __ballot_sync(FULL_MASK, sub2) : 0;
        u32 wl = __ballot_sync(FULL_MASK, size > (u64)SUB2_MAX && size <= (u64)WLEV_MAX);
        const u32 strm = STREAM ? __ballot_sync(FULL_MASK, streamed) : 0;
        const u32 wstrm = WS ? __ballot_sync(FULL_MASK, wstreamed) : 0;
        const u32 wsubs = (WORDS & 1) ? __ballot_sync(FULL_MASK, wsub) : 0;
        if (subs | subs2 | wl | strm | wstrm | wsubs) {
            u32 start = 0, total = 0, wtotal = 0;
            if constexpr (STREAM != 0) if (strm | wstrm) {
                // An exclusive scan of the streamed sizes: bytes in the low 16 bits, words
                // (WS) in the high 16 (at most 32 TMAX bytes and 8 TMAX words a warp).
                const u32 len = streamed ? (u32)size : 0, wlen = wstreamed ? (u32)size >> 2 : 0;
                const u32 mine = len | (wlen << 16);
                u32 incl = mine;
#pragma unroll
                for (int o = 1; o < 32; o <<= 1) {
                    const u32 x = __shfl_up_sync(FULL_MASK, incl, o);
                    if (lane >= (u32)o) incl += x;
                }
                const u32 first = incl - mine, last = __shfl_sync(FULL_MASK, incl, 31);
                // the others keep their own addresses; a word stream's starts are in bytes
                if constexpr (WS) {
                    total = last & 0xffffu;
                    wtotal = last >> 16;
                    start = streamed ? first & 0xffffu : wstreamed ? 4 * (first >> 16) : 0;
                } else {
                    total = last;
                    start = streamed ? first : 0;
                }
#pragma unroll
                for (int k = 0; k < TMAX; ++k)
                    if ((u32)k < len) s_owner[warp][start + k] = (u8)lane;
                if constexpr (WS) {
#pragma unroll
                    for (int k = 0; k < TMAX / 4; ++k)
                        if ((u32)k < wlen) s_owner[warp][OWN - 1 - (first >> 16) - k] = (u8)lane;
                }
            }
            s_src[warp][lane] = sp - start;
            s_dst[warp][lane] = dp - start;
            s_size[warp][lane] = (u32)size;
            if (sub) s_list[warp][__popc(subs & lt)] = (u8)lane;
            if (wsub) s_list[warp][__popc(subs) + __popc(wsubs & lt)] = (u8)lane;  // after them
            if (sub2) s_list[warp][31 - __popc(subs2 & lt)] = (u8)lane;
            __syncwarp();
            if (STREAM && strm)
                stream_copy<u8, TMAX, ZS>(s_src[warp], s_dst[warp], s_owner[warp], total, lane,
                                          sc);
            if (WS && wstrm)
                stream_copy<u32, TMAX / 4, ZS, true, OWN>(s_src[warp], s_dst[warp],
                                                          s_owner[warp], wtotal, lane, sc);
            // Sub-warp level: groups of G lanes over the list, group_words' buffers first.
            // Part p of P takes every P-th round of each list (P = 1: all of them).
            const u32 n_sub = __popc(subs);
            if constexpr ((WORDS & 1) != 0) {
                const u32 n_w = n_sub + __popc(wsubs);
                for (u32 r0 = n_sub + part * (32 / G); r0 < n_w; r0 += parts * (32 / G)) {
                    // every lane: the shuffles
                    const u32 r = r0 + lane / G;
                    const bool on = r < n_w;
                    const u32 b = s_list[warp][on ? r : r0];
                    group_words<G, GW, ZL>((u8*)s_dst[warp][b], (const u8*)s_src[warp][b],
                                           s_size[warp][b], lane % G, on);
                }
            }
            for (u32 r = lane / G + part * (32 / G); r < n_sub; r += parts * (32 / G)) {
                const u32 b = s_list[warp][r];
                group_copy<G, SUB_MAX, ZL>((u8*)s_dst[warp][b], (const u8*)s_src[warp][b],
                                           s_size[warp][b], lane % G);
            }
            if constexpr (SUB2_MAX > SUB_MAX) {  // the second tier: groups of G2 lanes
                const u32 n_sub2 = __popc(subs2);
                for (u32 r = lane / G2 + part * (32 / G2); r < n_sub2;
                     r += parts * (32 / G2)) {
                    const u32 b = s_list[warp][31 - r];
                    group_copy<G2, SUB2_MAX, ZL>((u8*)s_dst[warp][b],
                                                 (const u8*)s_src[warp][b], s_size[warp][b],
                                                 lane % G2);
                }
            }
            // Warp level: the whole warp per buffer, in lane order (part p: every P-th).
            for (u32 k = 0; wl; ++k) {
                const u32 b = __ffs(wl) - 1;
                wl &= wl - 1;
                if ((k & (parts - 1)) == part)
                    warp_loop_copy((u8*)s_dst[warp][b], (const u8*)s_src[warp][b],
                                   s_size[warp][b], lane);
            }
            __syncwarp();
        }
    }
}

#define WARP_CLASSES_ARGS TMAX, G, SUB_MAX, G2, SUB2_MAX, WLEV_MAX, CHUNK, STREAM, ZERO, WORDS
template <int TMAX, int G, int SUB_MAX, int G2, int SUB2_MAX, int WLEV_MAX, int CHUNK, int MINB,
          int STREAM, int ZERO, int WORDS>
__global__ void __launch_bounds__(WARPLAB_MEMCPY_WARP_THREADS, WARPLAB_MEMCPY_MINB(MINB))
memcpy_warp_classes(const u64* __restrict__ src, const u64* __restrict__ dst,
                    const u64* __restrict__ sizes, u64 n, u64* __restrict__ counter,
                    u32* __restrict__ queue_id, u64* __restrict__ queue_first, u32 parts_log2) {
    wait_prior_grids();  // launched to overlap the stream's previous kernel (cuda.py OVERLAP)
    if (WARPLAB_MEMCPY_WARP_TRIGGER) allow_dependents();  // the BLEV kernel placed early
    warp_classes_body<WARP_CLASSES_ARGS>(src, dst, sizes, n, counter, queue_id, queue_first,
                                         GridStride{0, parts_log2, 0});
}

// hdr[0..2]: the addresses of the source, destination and size arrays to copy; each block
// takes `passes` consecutive groups of the block's threads in buffers (Runs).
template <int TMAX, int G, int SUB_MAX, int G2, int SUB2_MAX, int WLEV_MAX, int CHUNK, int MINB,
          int STREAM, int ZERO, int WORDS>
__global__ void __launch_bounds__(WARPLAB_MEMCPY_WARP_THREADS, WARPLAB_MEMCPY_MINB(MINB))
memcpy_warp_classes_via(const u64* __restrict__ hdr, u64 n, u64* __restrict__ counter,
                        u32* __restrict__ queue_id, u64* __restrict__ queue_first, u64 passes) {
    wait_prior_grids();  // launched to overlap the group kernel (windows.py)
    if (WARPLAB_MEMCPY_WARP_TRIGGER) allow_dependents();
    warp_classes_body<WARP_CLASSES_ARGS>((const u64*)__ldg(hdr), (const u64*)__ldg(hdr + 1),
                                         (const u64*)__ldg(hdr + 2), n, counter, queue_id,
                                         queue_first, Runs{passes, 0});
}
#undef WARP_CLASSES_ARGS

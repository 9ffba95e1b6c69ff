// Diagnostic kernels for benchmarks/explore_memcpy_probe.py (session 18): where does the
// layout-probed kernel's default body lose 2-4% against the default kernel? Each one is the
// default's body (memcpy_warp.cuh, warp_classes_copy with WARP_TIERS_WORDS' constants) with
// one difference. Not part of the package.
#include "memcpy.cu"

#define WTW 16, 8, 256, 32, 1024, 8192, 32768, 4, 4, 3, 3
#define ARGS7                                                                             \
    const u64 *__restrict__ src, const u64 *__restrict__ dst,                             \
        const u64 *__restrict__ sizes, u64 n, u64 *__restrict__ counter,                  \
        u32 *__restrict__ queue_id, u64 *__restrict__ queue_first
#define PASS7 src, dst, sizes, n, counter, queue_id, queue_first
#define LISTS                       \
    constexpr int TMAX = 16, STREAM = 4; \
    WARP_LISTS_DECLARE
#define BOUNDS __global__ void __launch_bounds__(WARPLAB_MEMCPY_WARP_THREADS, 4)

// Both bodies, the verdict a kernel parameter (no load before the branch).
extern "C" BOUNDS probe_by_value(ARGS7, u32 v) {
    LISTS;
    if (v) {
        asm volatile("" ::: "memory");
        warp_classes_copy<WTW>(PASS7, WARP_LISTS, Tiny<1>{});
        return;
    }
    asm volatile("" ::: "memory");
    warp_classes_copy<WTW>(PASS7, WARP_LISTS, ByPolicy{});
}

// The default's body alone behind a load of the verdict word (no second body).
extern "C" BOUNDS probe_load_only(ARGS7, const u32* __restrict__ verdict) {
    LISTS;
    if (__ldg(verdict) == 7u) return;
    warp_classes_copy<WTW>(PASS7, WARP_LISTS, ByPolicy{});
}

// The default's body alone behind the barrier (no load, no second body).
extern "C" BOUNDS probe_barrier_only(ARGS7) {
    LISTS;
    asm volatile("" ::: "memory");
    warp_classes_copy<WTW>(PASS7, WARP_LISTS, ByPolicy{});
}

// Both bodies, the verdict in constant memory (set by the host before the launches).
__constant__ u32 c_verdict;
extern "C" BOUNDS probe_by_constant(ARGS7) {
    LISTS;
    if (c_verdict) {
        asm volatile("" ::: "memory");
        warp_classes_copy<WTW>(PASS7, WARP_LISTS, Tiny<1>{});
        return;
    }
    asm volatile("" ::: "memory");
    warp_classes_copy<WTW>(PASS7, WARP_LISTS, ByPolicy{});
}

// The evict-first body alone (what the verdict 1 path would be as a kernel of its own).
extern "C" BOUNDS probe_tiny_only(ARGS7) {
    LISTS;
    warp_classes_copy<WTW>(PASS7, WARP_LISTS, Tiny<1>{});
}

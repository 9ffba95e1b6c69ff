// warplab random walks: M series of N values (step 1 of the Pearson report). Compiled at run
// time by NVRTC (cupy.RawModule, -std=c++17) with the -D constants of walk_cuda.py (DEFINES);
// CI compiles this file with nvcc for sm_75 and sm_90.
//
// Series j: x[0] = start, x[i] = x[i-1] * d_i with d_i = 1 + v_i * eps / 2^31, where v_i is
// word i % 4 of Philox4x32-10(counter (i / 4, j) as four 32-bit words, key = the 64-bit seed),
// read as a signed 32-bit integer: v / 2^31 is s * u, a random sign times u uniform in [0, 1].
// d_i is rounded with explicit intrinsics (no FMA contraction) so that NumPy computes the same
// d_i bit for bit; the running product is float64 in every kernel and is rounded to the output
// type only when stored. walk.py holds the NumPy reference of the same arithmetic.

typedef unsigned long long u64;
typedef unsigned int u32;

#ifndef WARPLAB_WALK_K
#error "WARPLAB_WALK_K is passed by the launch plan (-DWARPLAB_WALK_K=..., walk_cuda.py DEFINES)"
#endif
#ifndef WARPLAB_WALK_WARPS
#error "WARPLAB_WALK_WARPS is passed by the launch plan (-DWARPLAB_WALK_WARPS=..., walk_cuda.py DEFINES)"
#endif
#ifndef WARPLAB_WALK_MINB
#error "WARPLAB_WALK_MINB is passed by the launch plan (-DWARPLAB_WALK_MINB=..., walk_cuda.py DEFINES)"
#endif

constexpr int K = WARPLAB_WALK_K;         // consecutive elements per lane in a tile
constexpr int WARPS = WARPLAB_WALK_WARPS; // warps per block of the scan kernels
constexpr int TILE = 32 * K;              // elements of one warp-wide tile
constexpr u32 FULL = 0xffffffffu;
static_assert(K % 4 == 0, "a lane consumes whole Philox blocks of 4 words");

// ---------------------------------------------------------------------------------------------
// Philox4x32-10 (Salmon et al., SC'11; the generator of cuRAND's PHILOX4_32_10).
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ uint4 philox4x32_10(u64 block, u64 series, u32 k0, u32 k1) {
    u32 c0 = (u32)block, c1 = (u32)(block >> 32), c2 = (u32)series, c3 = (u32)(series >> 32);
#pragma unroll
    for (int r = 0; r < 10; ++r) {
        const u32 lo0 = 0xD2511F53u * c0, hi0 = __umulhi(0xD2511F53u, c0);
        const u32 lo1 = 0xCD9E8D57u * c2, hi1 = __umulhi(0xCD9E8D57u, c2);
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return make_uint4(c0, c1, c2, c3);
}

// d = 1 + v * (eps / 2^31), both operations rounded to nearest (NumPy: 1.0 + v * eps_s).
__device__ __forceinline__ double step_factor(u32 word, double eps_s) {
    return __dadd_rn(1.0, __dmul_rn((double)(int)word, eps_s));
}

// ---------------------------------------------------------------------------------------------
// The report's K1: one thread generates a whole series sequentially (thread j writes
// out[j * n ... j * n + n - 1]). 64-bit indices. Launched with blocks of 1024 (the report's
// first version) or 32 (its faster second launch); grid ceil(m / block).
// ---------------------------------------------------------------------------------------------
template <class T>
__global__ void __launch_bounds__(1024)
walk_thread_per_series(T* __restrict__ out, u64 m, u64 n, u32 k0, u32 k1, double eps_s,
                       double start) {
    const u64 j = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= m) return;
    T* __restrict__ row = out + j * n;
    double x = start;
    row[0] = (T)x;
    for (u64 b = 0; 4 * b < n; ++b) {
        const uint4 r = philox4x32_10(b, j, k0, k1);
        const u32 w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const u64 i = 4 * b + k;
            if (i == 0 || i >= n) continue;  // element 0 is start: its word is unused
            x = __dmul_rn(x, step_factor(w[k], eps_s));
            row[i] = (T)x;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// warp_scan. A series is cut into tiles of w * K consecutive elements, processed by a group of
// w lanes (w a power of two; lane l of the group owns elements l*K .. l*K+K-1 of the tile):
//   1. each lane computes its K factors (two Philox calls for K = 8) and their running product;
//   2. an inclusive product scan of the lane totals over the group (log2 w shuffle steps);
//   3. value = (carry * product of the lanes before) * lane's running product, staged in
//      shared memory and written back with coalesced stores;
//   4. carry = carry * tile total.
// Short series (n <= TILE) pack 32 / w series into one warp (w = the next power of two of
// ceil(n / K)); long ones use whole warps and may be split into segments: pass 1
// (walk_seg_totals) computes every segment's product without writing, pass 2 (walk_seg_scan)
// turns them into each segment's carry-in, pass 3 (walk_scan_write) writes.
// ---------------------------------------------------------------------------------------------

// Raw factors of the lane's K elements i0 .. i0+K-1 of series j (i0 a multiple of 4); 1.0 at
// and past `end`; element 0 of a series is `start` itself.
__device__ __forceinline__ void lane_factors(double (&p)[K], u64 j, u64 i0, u64 end, u32 k0,
                                             u32 k1, double eps_s, double start) {
#pragma unroll
    for (int b = 0; b < K / 4; ++b) {
        const u64 i = i0 + 4 * b;
        uint4 r = make_uint4(0u, 0u, 0u, 0u);
        if (i < end) r = philox4x32_10(i >> 2, j, k0, k1);
        const u32 w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
        for (int k = 0; k < 4; ++k) p[4 * b + k] = i + k < end ? step_factor(w[k], eps_s) : 1.0;
    }
    if (i0 == 0 && end > 0) p[0] = start;
}

// Steps 1-2 of a tile: p becomes the lane's running product; returns carry * (product of the
// totals of the group's lanes before this one); tile_total = the product of the whole tile
// (the inclusive scan value of the group's last lane). Every lane of the warp must call it.
__device__ __forceinline__ double scan_tile(double (&p)[K], u32 l, u32 w, double carry,
                                            double& tile_total) {
#pragma unroll
    for (int k = 1; k < K; ++k) p[k] = __dmul_rn(p[k - 1], p[k]);
    double incl = p[K - 1];
    for (u32 off = 1; off < w; off <<= 1) {
        const double y = __shfl_up_sync(FULL, incl, off, w);
        if (l >= off) incl = __dmul_rn(y, incl);
    }
    double excl = __shfl_up_sync(FULL, incl, 1, w);
    if (l == 0) excl = 1.0;
    tile_total = __shfl_sync(FULL, incl, w - 1, w);
    return __dmul_rn(carry, excl);
}

// Shared-memory staging index: one pad word per 32 floats / 16 doubles, so that both the
// lane-consecutive writes (stride K) and the coalesced reads are free of bank conflicts.
template <class T>
__device__ __forceinline__ u32 staged(u32 q) {
    return q + (q >> (sizeof(T) == 4 ? 5 : 4));
}

// Pass 3: one task = (series j0 .. j0+G-1, segment s) per warp, tasks in a warp-stride loop.
// prefix[j * nseg + s] is segment s's carry-in (read only when nseg > 1).
template <class T>
__global__ void __launch_bounds__(WARPS * 32, WARPLAB_WALK_MINB)
walk_scan_write(T* __restrict__ out, u64 m, u64 n, u32 k0, u32 k1, double eps_s, double start,
                u32 log2w, u64 seg_len, u64 nseg, const double* __restrict__ prefix,
                u64 ntasks) {
    __shared__ T stage[WARPS][TILE + TILE / (sizeof(T) == 4 ? 32 : 16)];
    const u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const u32 w = 1u << log2w, g = lane >> log2w, l = lane & (w - 1u), G = 32u >> log2w;
    T* st = stage[warp];
    for (u64 t = (u64)blockIdx.x * WARPS + warp; t < ntasks; t += (u64)gridDim.x * WARPS) {
        const u64 j0 = nseg == 1 ? t * G : t / nseg;
        const u64 s = nseg == 1 ? 0 : t % nseg;
        const u64 j = j0 + g;
        const u32 live = (u32)min((u64)G, m - j0);  // groups of this task with a series
        const u64 a0 = s * seg_len;
        const u64 end = min(n, a0 + seg_len);
        const u64 lane_end = j < m ? end : 0;
        double carry = nseg == 1 ? 1.0 : prefix[j0 * nseg + s];
        for (u64 a = a0; a < end; a += (u64)w * K) {
            double p[K];
            lane_factors(p, j, a + l * K, lane_end, k0, k1, eps_s, start);
            double tile_total;
            const double pre = scan_tile(p, l, w, carry, tile_total);
            const u32 len = (u32)min(end - a, (u64)w * K);  // elements per group in this tile
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const u32 e = l * K + k;
                if (g < live && e < len) st[staged<T>(g * len + e)] = (T)__dmul_rn(pre, p[k]);
            }
            __syncwarp();
            T* __restrict__ dst = out + j0 * n + a;
            const u32 count = live * len;
            for (u32 q = lane; q < count; q += 32) dst[q] = st[staged<T>(q)];
            __syncwarp();
            carry = __dmul_rn(carry, tile_total);
        }
    }
}

// Pass 1 (long series cut into nseg > 1 segments of seg_len, a multiple of TILE): the product
// of every segment but the last, as pass 3 would carry it (carry = carry * tile total from
// 1.0). Task t = (series t / (nseg-1), segment t % (nseg-1)); stored at prefix[j*nseg + s + 1],
// and prefix[j*nseg] = 1.0, so that pass 2 is an inclusive scan.
__global__ void __launch_bounds__(WARPS * 32, WARPLAB_WALK_MINB)
walk_seg_totals(double* __restrict__ prefix, u64 n, u32 k0, u32 k1, double eps_s,
                double start, u64 seg_len, u64 nseg, u64 ntasks) {
    const u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    for (u64 t = (u64)blockIdx.x * WARPS + warp; t < ntasks; t += (u64)gridDim.x * WARPS) {
        const u64 j = t / (nseg - 1), s = t % (nseg - 1);
        const u64 a0 = s * seg_len;
        const u64 end = min(n, a0 + seg_len);  // == a0 + seg_len: never the last segment
        double carry = 1.0;
        for (u64 a = a0; a < end; a += TILE) {
            double p[K];
            lane_factors(p, j, a + lane * K, end, k0, k1, eps_s, start);
            double tile_total;
            scan_tile(p, lane, 32u, 1.0, tile_total);
            carry = __dmul_rn(carry, tile_total);
        }
        if (lane == 0) {
            prefix[j * nseg + s + 1] = carry;
            if (s == 0) prefix[j * nseg] = 1.0;
        }
    }
}

// Pass 2: per series (one warp each), the inclusive product scan of its nseg values in place,
// with the same tile scan (whole warps, K values per lane, carried across tiles).
__global__ void __launch_bounds__(WARPS * 32, WARPLAB_WALK_MINB)
walk_seg_scan(double* __restrict__ prefix, u64 m, u64 nseg) {
    const u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    for (u64 j = (u64)blockIdx.x * WARPS + warp; j < m; j += (u64)gridDim.x * WARPS) {
        double* __restrict__ v = prefix + j * nseg;
        double carry = 1.0;
        for (u64 a = 0; a < nseg; a += TILE) {
            double p[K];
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const u64 e = a + lane * K + k;
                p[k] = e < nseg ? v[e] : 1.0;
            }
            double tile_total;
            const double pre = scan_tile(p, lane, 32u, carry, tile_total);
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const u64 e = a + lane * K + k;
                if (e < nseg) v[e] = __dmul_rn(pre, p[k]);
            }
            carry = __dmul_rn(carry, tile_total);
        }
    }
}

// Explicit instantiations for the nvcc compile check (NVRTC instantiates what the host names).
#ifdef WARPLAB_NVCC_CHECK
#define WARPLAB_WALK_INSTANTIATE(T)                                                            \
    template __global__ void walk_thread_per_series<T>(T*, u64, u64, u32, u32, double, double); \
    template __global__ void walk_scan_write<T>(T*, u64, u64, u32, u32, double, double, u32,    \
                                                u64, u64, const double*, u64);
WARPLAB_WALK_INSTANTIATE(float)
WARPLAB_WALK_INSTANTIATE(double)
#endif

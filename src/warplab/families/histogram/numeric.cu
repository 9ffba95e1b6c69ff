// warplab numeric histograms: NumPy's histogram with evenly spaced bins (hist_even), with an
// edges array (hist_edges), weighted bincount (bincount_w) and the min/max pass that a range
// from the data needs (minmax_partials). Compiled at run time by NVRTC (cupy.RawModule,
// -std=c++17); CI compiles this file with nvcc for sm_75 and sm_90 (-DWARPLAB_NVCC_CHECK).
// Here the types, the launch constants and the binning kernels; their scalar helpers, element
// loop and accumulators in numeric_ops.cuh, the min/max pass in numeric_minmax.cuh.
//
// Every constant of NumPy's arithmetic comes from the host plan (numeric.py: EvenPlan), passed
// as raw bits in 64-bit words (from_bits) so that every dtype travels the same way.
//
// Types: D the data, E the edges (the data is cast to E), P NumPy's index arithmetic, T the
// comparison dtype of edges arrays, W the weights (NoWeights: plain counts). float16 is the
// struct f16 (IEEE binary16 bits); its arithmetic goes through float32 with one rounding to
// float16 per operation, as NumPy's float16 loops do (float32 has more than 2 * 11 + 2
// significand bits, so each operation is correctly rounded to float16).
//
// Accumulation (template LAYOUT): 0 lane-private shared copies (counter bin * 32 + lane, no two
// lanes of a warp on one bank), 1 `copies` shared copies chosen by warp, 2 global atomics only.
// Shared counters are 32-bit (the host sizes the grid so a block sees fewer than 2^31
// elements), sums are float64; a block merges its copies with one global atomic per non-empty
// bin. Output bins: 64-bit counts (unsigned long long) or float64 sums.

typedef signed char i8;
typedef unsigned char u8;
typedef short i16;
typedef unsigned short u16;
typedef int i32;
typedef unsigned int u32;
typedef long long i64;
typedef unsigned long long u64;
typedef float f32;
typedef double f64;
typedef bool b8;
struct f16 {
    u16 bits;
};
struct NoWeights {};

#ifndef WARPLAB_NUM_BLOCK
#error "WARPLAB_NUM_BLOCK is passed by the launch plan (-DWARPLAB_NUM_BLOCK=..., config.py: LaunchConfig.options)"
#endif
#ifndef WARPLAB_NUM_UNROLL
#error "WARPLAB_NUM_UNROLL is passed by the launch plan (-DWARPLAB_NUM_UNROLL=..., config.py: LaunchConfig.options)"
#endif
#ifndef WARPLAB_NUM_PREFETCH
#error "WARPLAB_NUM_PREFETCH is passed by the launch plan (-DWARPLAB_NUM_PREFETCH=..., config.py: LaunchConfig.options)"
#endif
constexpr int NUM_BLOCK = WARPLAB_NUM_BLOCK;    // threads per block of every kernel here
constexpr int NUM_UNROLL = WARPLAB_NUM_UNROLL;  // 16-byte loads in flight per thread
// 1: the element loops load the next UNROLL vectors before working on the current ones
// (twice the registers, loads in flight while the bins are counted); 0: load, then count.
constexpr bool NUM_PREFETCH = WARPLAB_NUM_PREFETCH != 0;

#include "numeric_ops.cuh"

// ---------------------------------------------------------------------- evenly spaced bins

// NumPy's index (numpy/lib/_histograms_impl.py, histogram's fast path) of one value; -1 when
// NumPy drops it (outside [lo, hi] in the data's dtype, or NaN).
template <class D, class E, class P>
__device__ __forceinline__ int even_bin(D v, D lo, D hi, E first, P denom, P rdenom, bool pow2,
                                        P n_p, int nbins, const E* edges) {
    if (!(ge(v, lo) && le(v, hi))) return -1;
    const E xe = To<E>::from(v);                            // tmp_a.astype(bin_edges.dtype)
    const P s = To<P>::from(sub_rn(xe, first));             // _unsigned_subtract(tmp_a, first)
    const P q = pow2 ? mul_rn(s, rdenom) : div_rn(s, denom);  // / norm_denom
    int idx = trunc_int(mul_rn(q, n_p));                    // * norm_numerator, astype(intp)
    if (idx == nbins) idx -= 1;                             // indices == n_equal_bins
    if (lt(xe, edges[idx])) idx -= 1;                       // decrement
    if (idx != nbins - 1 && !lt(xe, edges[idx + 1])) idx += 1;  // increment
    return idx;
}

// ------------------------------------------------------------- evenly spaced bins, one FMA

__device__ __forceinline__ float to_f32(f16 v) { return h2f(v); }
template <class T> __device__ __forceinline__ float to_f32(T v) { return (float)v; }

// The body of hist_even (FAST false) and hist_even_fast (FAST true: scale, offset, delta used);
// STORE: the one-block forms (*_one_block), whose output nobody zeroed: the block zeroes it
// before counting under global atomics (LAYOUT 2), else stores the merged bins.
template <class D, class E, class P, class W, int LAYOUT, bool ESMEM, bool FAST,
          bool STORE = false>
__device__ __forceinline__ void even_body(const D* __restrict__ x, u64 n, const W* __restrict__ w,
                                          const E* __restrict__ edges_g, u32 nbins, u32 copies,
                                          u64 lo_b, u64 hi_b, u64 first_b, u64 denom_b,
                                          u64 rdenom_b, int pow2, u64 n_b, float scale,
                                          float offset, float delta,
                                          typename Acc<W>::out_t* __restrict__ out) {
    typedef typename Acc<W>::shared_t A;
    extern __shared__ __align__(16) unsigned char smem[];
    if constexpr (STORE && LAYOUT == 2) {
        for (u32 b = threadIdx.x; b < nbins; b += NUM_BLOCK) out[b] = 0;  // before block_setup's sync
    }
    const E* edges = block_setup<A, LAYOUT, ESMEM>(smem, nbins, copies, edges_g, nbins + 1);
    A* mine = acc_slot<A, LAYOUT>(reinterpret_cast<A*>(smem), nbins, copies);
    const D lo = from_bits<D>(lo_b), hi = from_bits<D>(hi_b);
    const E first = from_bits<E>(first_b);
    const P denom = from_bits<P>(denom_b), rdenom = from_bits<P>(rdenom_b), n_p = from_bits<P>(n_b);
    const float top = __fsub_rn((float)nbins, delta);
    constexpr float MAGIC = 12582912.0f;  // 1.5 * 2^23: t + MAGIC rounds t to an integer
    for_each_elem(x, n, [&](D v, u64 i) {
        int b = -1;
        if constexpr (FAST) {
            const float t = __fmaf_rn(to_f32(v), scale, offset);
            const float tb = __fadd_rn(t, MAGIC);
            const float d = __fsub_rn(t, __fsub_rn(tb, MAGIC));  // t - nearest integer, exact
            if (t > delta && t < top && fabsf(d) > delta && !lt(v, lo) && !lt(hi, v)) {
                b = (__float_as_int(tb) - 0x4B400000) - (d < 0.0f ? 1 : 0);
            } else {
                b = even_bin(v, lo, hi, first, denom, rdenom, pow2 != 0, n_p, (int)nbins, edges);
            }
        } else {
            b = even_bin(v, lo, hi, first, denom, rdenom, pow2 != 0, n_p, (int)nbins, edges);
        }
        if (b >= 0) acc_add<A, LAYOUT>(mine, out, b, Acc<W>::inc(w, i));
    });
    __syncthreads();
    acc_merge<A, LAYOUT, typename Acc<W>::out_t, STORE>(reinterpret_cast<const A*>(smem), nbins,
                                                        copies, out);
}

template <class D, class E, class P, class W, int LAYOUT, bool ESMEM>
__global__ void __launch_bounds__(NUM_BLOCK)
hist_even(const D* __restrict__ x, u64 n, const W* __restrict__ w, const E* __restrict__ edges_g,
          u32 nbins, u32 copies, u64 lo_b, u64 hi_b, u64 first_b, u64 denom_b, u64 rdenom_b,
          int pow2, u64 n_b, typename Acc<W>::out_t* __restrict__ out) {
    even_body<D, E, P, W, LAYOUT, ESMEM, false>(x, n, w, edges_g, nbins, copies, lo_b, hi_b,
                                                first_b, denom_b, rdenom_b, pow2, n_b, 0.0f,
                                                0.0f, 0.0f, out);
}

// hist_even's result with less work per element: t = value * scale + offset in float32 (one
// FMA), its nearest integer from the 1.5 * 2^23 trick (no conversion instruction). The host
// (numeric.py: fast_constants) proved |t - p| <= err_t for every kept value, p the exact
// position (x - first) / denom * nbins, and delta = err_t + max(NumPy's own error on p, the
// largest distance of an edge's position from its integer). So when t lies in
// (delta, nbins - delta) and more than delta from every integer, NumPy's index, both edge
// corrections included, is floor(t); every other value (a fraction ~2 * delta of them, and NaN,
// inf, values outside the range) takes NumPy's arithmetic (even_bin). Counts bit for bit.
template <class D, class E, class P, class W, int LAYOUT, bool ESMEM>
__global__ void __launch_bounds__(NUM_BLOCK)
hist_even_fast(const D* __restrict__ x, u64 n, const W* __restrict__ w,
               const E* __restrict__ edges_g, u32 nbins, u32 copies, u64 lo_b, u64 hi_b,
               u64 first_b, u64 denom_b, u64 rdenom_b, int pow2, u64 n_b, float scale,
               float offset, float delta, typename Acc<W>::out_t* __restrict__ out) {
    even_body<D, E, P, W, LAYOUT, ESMEM, true>(x, n, w, edges_g, nbins, copies, lo_b, hi_b,
                                               first_b, denom_b, rdenom_b, pow2, n_b, scale,
                                               offset, delta, out);
}

// The one-block forms of hist_even and hist_even_fast, launched on a grid of exactly one block
// (the host takes them only where the persistent grid would be one block): out needs no
// zeroing beforehand (every bin is stored) and edges_out receives the nbins + 1 edges of the
// table, so that a small call's results need one allocation and this one launch, no memset
// and no copy.
template <class E>
__device__ __forceinline__ void copy_edges(const E* __restrict__ edges_g, u32 nedges,
                                           E* __restrict__ edges_out) {
    for (u32 i = threadIdx.x; i < nedges; i += NUM_BLOCK) edges_out[i] = edges_g[i];
}

template <class D, class E, class P, class W, int LAYOUT, bool ESMEM>
__global__ void __launch_bounds__(NUM_BLOCK)
hist_even_one_block(const D* __restrict__ x, u64 n, const W* __restrict__ w,
                    const E* __restrict__ edges_g, u32 nbins, u32 copies, u64 lo_b, u64 hi_b,
                    u64 first_b, u64 denom_b, u64 rdenom_b, int pow2, u64 n_b,
                    typename Acc<W>::out_t* __restrict__ out, E* __restrict__ edges_out) {
    even_body<D, E, P, W, LAYOUT, ESMEM, false, true>(x, n, w, edges_g, nbins, copies, lo_b,
                                                      hi_b, first_b, denom_b, rdenom_b, pow2,
                                                      n_b, 0.0f, 0.0f, 0.0f, out);
    copy_edges(edges_g, nbins + 1, edges_out);
}

template <class D, class E, class P, class W, int LAYOUT, bool ESMEM>
__global__ void __launch_bounds__(NUM_BLOCK)
hist_even_fast_one_block(const D* __restrict__ x, u64 n, const W* __restrict__ w,
                         const E* __restrict__ edges_g, u32 nbins, u32 copies, u64 lo_b,
                         u64 hi_b, u64 first_b, u64 denom_b, u64 rdenom_b, int pow2, u64 n_b,
                         float scale, float offset, float delta,
                         typename Acc<W>::out_t* __restrict__ out, E* __restrict__ edges_out) {
    even_body<D, E, P, W, LAYOUT, ESMEM, true, true>(x, n, w, edges_g, nbins, copies, lo_b,
                                                     hi_b, first_b, denom_b, rdenom_b, pow2,
                                                     n_b, scale, offset, delta, out);
    copy_edges(edges_g, nbins + 1, edges_out);
}

// ------------------------------------------------------------------------------ edges arrays

// NumPy's searchsorted-based bins: the last j with edges[j] <= t (the last bin closed), -1 for
// NaN and values outside [edges[0], edges[nbins]]. The host refuses NaN edges.
template <class T>
__device__ __forceinline__ int edges_bin(T t, const T* edges, u32 nbins) {
    if (is_nan(t) || lt(t, edges[0]) || lt(edges[nbins], t)) return -1;
    u32 lo = 0, hi = nbins + 1;  // edges[lo] <= t < edges[hi] (hi == nbins + 1: past the end)
    while (hi - lo > 1) {
        const u32 mid = (lo + hi) >> 1;
        if (lt(t, edges[mid])) hi = mid; else lo = mid;
    }
    return (int)(lo < nbins ? lo : nbins - 1);
}

template <class D, class T, class W, int LAYOUT, bool ESMEM>
__global__ void __launch_bounds__(NUM_BLOCK)
hist_edges(const D* __restrict__ x, u64 n, const W* __restrict__ w, const T* __restrict__ edges_g,
           u32 nbins, u32 copies, typename Acc<W>::out_t* __restrict__ out) {
    typedef typename Acc<W>::shared_t A;
    extern __shared__ __align__(16) unsigned char smem[];
    const T* edges = block_setup<A, LAYOUT, ESMEM>(smem, nbins, copies, edges_g, nbins + 1);
    A* mine = acc_slot<A, LAYOUT>(reinterpret_cast<A*>(smem), nbins, copies);
    for_each_elem(x, n, [&](D v, u64 i) {
        const int b = edges_bin(To<T>::from(v), edges, nbins);
        if (b >= 0) acc_add<A, LAYOUT>(mine, out, b, Acc<W>::inc(w, i));
    });
    __syncthreads();
    acc_merge<A, LAYOUT>(reinterpret_cast<const A*>(smem), nbins, copies, out);
}

// --------------------------------------------------------------------------- weighted bincount

// out[x[i]] += w[i] in float64; the host checked 0 <= x < nbins. Privatised (LAYOUT 0/1: nbins
// fits the shared budget) or global atomics (LAYOUT 2: nbins up to 2^64).
template <class I, class W, int LAYOUT>
__global__ void __launch_bounds__(NUM_BLOCK)
bincount_w(const I* __restrict__ x, u64 n, const W* __restrict__ w, u64 nbins, u32 copies,
           double* __restrict__ out) {
    extern __shared__ __align__(16) unsigned char smem[];
    const u32 sbins = LAYOUT == 2 ? 0u : (u32)nbins;
    block_setup<double, LAYOUT, false, double>(smem, sbins, copies, nullptr, 0);
    double* mine = acc_slot<double, LAYOUT>(reinterpret_cast<double*>(smem), sbins, copies);
    for_each_elem(x, n, [&](I v, u64 i) {
        const double wv = to_f64(w[i]);
        if constexpr (LAYOUT == 2) {
            atomicAdd(out + (u64)v, wv);
        } else {
            acc_add<double, LAYOUT>(mine, out, (int)v, wv);
        }
    });
    __syncthreads();
    acc_merge<double, LAYOUT>(reinterpret_cast<const double*>(smem), sbins, copies, out);
}

// (x, weights) pairs read together: x in 16-byte vectors, the weights of the same elements in
// one vector of V * sizeof(W) bytes (16-byte pieces; smaller ones in one load), UNROLL pairs in
// flight; x and w start 16-byte aligned (the host checks), the last n % V elements one by one.
template <int B> struct alignas(B < 16 ? B : 16) Raw { unsigned char b[B]; };

template <class I, class W, int LAYOUT>
__global__ void __launch_bounds__(NUM_BLOCK)
bincount_wvec(const I* __restrict__ x, u64 n, const W* __restrict__ w, u64 nbins, u32 copies,
              double* __restrict__ out) {
    extern __shared__ __align__(16) unsigned char smem[];
    constexpr u32 V = 16 / sizeof(I);
    typedef Raw<V * sizeof(W)> WV;
    const u32 sbins = LAYOUT == 2 ? 0u : (u32)nbins;
    block_setup<double, LAYOUT, false, double>(smem, sbins, copies, nullptr, 0);
    double* mine = acc_slot<double, LAYOUT>(reinterpret_cast<double*>(smem), sbins, copies);
    auto add = [&](I v, W wv) {
        if constexpr (LAYOUT == 2) {
            atomicAdd(out + (u64)v, to_f64(wv));
        } else {
            acc_add<double, LAYOUT>(mine, out, (int)v, to_f64(wv));
        }
    };
    const u64 gtid = (u64)blockIdx.x * NUM_BLOCK + threadIdx.x;
    const u64 gstride = (u64)gridDim.x * NUM_BLOCK;
    const u64 nvec = n / V;
    const uint4* __restrict__ vx = reinterpret_cast<const uint4*>(x);
    const WV* __restrict__ vw = reinterpret_cast<const WV*>(w);
    u64 i = gtid;
    for (; i + (NUM_UNROLL - 1) * gstride < nvec; i += (u64)NUM_UNROLL * gstride) {
        uint4 rx[NUM_UNROLL];
        WV rw[NUM_UNROLL];
#pragma unroll
        for (int u = 0; u < NUM_UNROLL; ++u) {
            rx[u] = __ldcs(vx + i + u * gstride);
            rw[u] = vw[i + u * gstride];
        }
#pragma unroll
        for (int u = 0; u < NUM_UNROLL; ++u) {
            const I* e = reinterpret_cast<const I*>(&rx[u]);
            const W* f = reinterpret_cast<const W*>(&rw[u]);
#pragma unroll
            for (u32 k = 0; k < V; ++k) add(e[k], f[k]);
        }
    }
    for (; i < nvec; i += gstride) {
        const uint4 rx = __ldcs(vx + i);
        const WV rw = vw[i];
        const I* e = reinterpret_cast<const I*>(&rx);
        const W* f = reinterpret_cast<const W*>(&rw);
#pragma unroll
        for (u32 k = 0; k < V; ++k) add(e[k], f[k]);
    }
    const u64 tail = nvec * V;
    if (gtid < n - tail) add(x[tail + gtid], w[tail + gtid]);
    __syncthreads();
    acc_merge<double, LAYOUT>(reinterpret_cast<const double*>(smem), sbins, copies, out);
}

#include "numeric_minmax.cuh"

#ifdef WARPLAB_NVCC_CHECK
#define WARPLAB_EVEN(D, E, P, W)                                                              \
    template __global__ void hist_even<D, E, P, W, 0, true>(const D*, u64, const W*, const E*, \
        u32, u32, u64, u64, u64, u64, u64, int, u64, Acc<W>::out_t*);                          \
    template __global__ void hist_even<D, E, P, W, 1, true>(const D*, u64, const W*, const E*, \
        u32, u32, u64, u64, u64, u64, u64, int, u64, Acc<W>::out_t*);                          \
    template __global__ void hist_even<D, E, P, W, 2, false>(const D*, u64, const W*,          \
        const E*, u32, u32, u64, u64, u64, u64, u64, int, u64, Acc<W>::out_t*);
#define WARPLAB_EDGES(D, T, W)                                                                 \
    template __global__ void hist_edges<D, T, W, 0, true>(const D*, u64, const W*, const T*,   \
        u32, u32, Acc<W>::out_t*);                                                             \
    template __global__ void hist_edges<D, T, W, 1, false>(const D*, u64, const W*, const T*,  \
        u32, u32, Acc<W>::out_t*);                                                             \
    template __global__ void hist_edges<D, T, W, 2, true>(const D*, u64, const W*, const T*,   \
        u32, u32, Acc<W>::out_t*);
#define WARPLAB_BINCOUNT(I, W)                                                                 \
    template __global__ void bincount_w<I, W, 0>(const I*, u64, const W*, u64, u32, double*);  \
    template __global__ void bincount_w<I, W, 1>(const I*, u64, const W*, u64, u32, double*);  \
    template __global__ void bincount_w<I, W, 2>(const I*, u64, const W*, u64, u32, double*);  \
    template __global__ void bincount_wvec<I, W, 0>(const I*, u64, const W*, u64, u32, double*); \
    template __global__ void bincount_wvec<I, W, 1>(const I*, u64, const W*, u64, u32, double*); \
    template __global__ void bincount_wvec<I, W, 2>(const I*, u64, const W*, u64, u32, double*);
WARPLAB_EVEN(f32, f32, f32, NoWeights)
template __global__ void hist_even_fast<f32, f32, f64, NoWeights, 0, true>(const f32*, u64,
    const NoWeights*, const f32*, u32, u32, u64, u64, u64, u64, u64, int, u64, float, float,
    float, u64*);
template __global__ void hist_even_fast<f32, f32, f32, NoWeights, 1, true>(const f32*, u64,
    const NoWeights*, const f32*, u32, u32, u64, u64, u64, u64, u64, int, u64, float, float,
    float, u64*);
template __global__ void hist_even_fast<f16, f16, f32, f64, 0, true>(const f16*, u64,
    const f64*, const f16*, u32, u32, u64, u64, u64, u64, u64, int, u64, float, float, float,
    double*);
template __global__ void hist_even_fast<i64, f64, f64, NoWeights, 2, false>(const i64*, u64,
    const NoWeights*, const f64*, u32, u32, u64, u64, u64, u64, u64, int, u64, float, float,
    float, u64*);
template __global__ void hist_even_one_block<f32, f32, f64, NoWeights, 0, true>(const f32*, u64,
    const NoWeights*, const f32*, u32, u32, u64, u64, u64, u64, u64, int, u64, u64*, f32*);
template __global__ void hist_even_one_block<f16, f16, f32, NoWeights, 1, false>(const f16*, u64,
    const NoWeights*, const f16*, u32, u32, u64, u64, u64, u64, u64, int, u64, u64*, f16*);
template __global__ void hist_even_one_block<i64, f64, f64, NoWeights, 2, true>(const i64*, u64,
    const NoWeights*, const f64*, u32, u32, u64, u64, u64, u64, u64, int, u64, u64*, f64*);
template __global__ void hist_even_fast_one_block<f32, f32, f32, NoWeights, 0, true>(const f32*,
    u64, const NoWeights*, const f32*, u32, u32, u64, u64, u64, u64, u64, int, u64, float, float,
    float, u64*, f32*);
template __global__ void hist_even_fast_one_block<f64, f64, f64, NoWeights, 1, false>(
    const f64*, u64, const NoWeights*, const f64*, u32, u32, u64, u64, u64, u64, u64, int, u64,
    float, float, float, u64*, f64*);
template __global__ void hist_even_fast_one_block<u16, f32, f64, f32, 2, false>(const u16*, u64,
    const f32*, const f32*, u32, u32, u64, u64, u64, u64, u64, int, u64, float, float, float,
    double*, f32*);
WARPLAB_EVEN(f32, f32, f64, NoWeights)
WARPLAB_EVEN(f64, f64, f64, NoWeights)
WARPLAB_EVEN(f16, f16, f16, NoWeights)
WARPLAB_EVEN(f16, f16, f32, NoWeights)
WARPLAB_EVEN(f16, f16, f64, NoWeights)
WARPLAB_EVEN(i8, f16, f16, NoWeights)
WARPLAB_EVEN(u8, f32, f32, NoWeights)
WARPLAB_EVEN(i16, f64, f64, NoWeights)
WARPLAB_EVEN(u16, f32, f64, NoWeights)
WARPLAB_EVEN(i32, f64, f64, NoWeights)
WARPLAB_EVEN(u32, f64, f64, NoWeights)
WARPLAB_EVEN(i64, f64, f64, NoWeights)
WARPLAB_EVEN(u64, f64, f64, NoWeights)
WARPLAB_EVEN(f32, f32, f32, f64)
WARPLAB_EVEN(f32, f32, f32, f32)
WARPLAB_EVEN(f64, f64, f64, b8)
WARPLAB_EVEN(i64, f64, f64, i64)
WARPLAB_EVEN(u8, f64, f64, f16)
WARPLAB_EDGES(f32, f64, NoWeights)
WARPLAB_EDGES(f64, f64, NoWeights)
WARPLAB_EDGES(f16, f16, NoWeights)
WARPLAB_EDGES(i64, i64, NoWeights)
WARPLAB_EDGES(u64, f64, NoWeights)
WARPLAB_EDGES(i32, f32, NoWeights)
WARPLAB_EDGES(f32, f64, f64)
WARPLAB_EDGES(u16, i64, u32)
WARPLAB_BINCOUNT(i64, f64)
WARPLAB_BINCOUNT(i32, f32)
WARPLAB_BINCOUNT(u8, b8)
WARPLAB_BINCOUNT(u64, i64)
WARPLAB_BINCOUNT(i16, f16)
template __global__ void minmax_partials<i8>(const i8*, u64, i8*, i8*, u32*);
template __global__ void minmax_partials<u8>(const u8*, u64, u8*, u8*, u32*);
template __global__ void minmax_partials<i16>(const i16*, u64, i16*, i16*, u32*);
template __global__ void minmax_partials<u16>(const u16*, u64, u16*, u16*, u32*);
template __global__ void minmax_partials<i32>(const i32*, u64, i32*, i32*, u32*);
template __global__ void minmax_partials<u32>(const u32*, u64, u32*, u32*, u32*);
template __global__ void minmax_partials<i64>(const i64*, u64, i64*, i64*, u32*);
template __global__ void minmax_partials<u64>(const u64*, u64, u64*, u64*, u32*);
template __global__ void minmax_partials<f16>(const f16*, u64, f16*, f16*, u32*);
template __global__ void minmax_partials<f32>(const f32*, u64, f32*, f32*, u32*);
template __global__ void minmax_partials<f64>(const f64*, u64, f64*, f64*, u32*);
template __global__ void minmax_atomic<i8>(const i8*, u64, u64*);
template __global__ void minmax_atomic<u8>(const u8*, u64, u64*);
template __global__ void minmax_atomic<i16>(const i16*, u64, u64*);
template __global__ void minmax_atomic<u16>(const u16*, u64, u64*);
template __global__ void minmax_atomic<i32>(const i32*, u64, u64*);
template __global__ void minmax_atomic<u32>(const u32*, u64, u64*);
template __global__ void minmax_atomic<i64>(const i64*, u64, u64*);
template __global__ void minmax_atomic<u64>(const u64*, u64, u64*);
template __global__ void minmax_atomic<f16>(const f16*, u64, u64*);
template __global__ void minmax_atomic<f32>(const f32*, u64, u64*);
template __global__ void minmax_atomic<f64>(const f64*, u64, u64*);
#endif

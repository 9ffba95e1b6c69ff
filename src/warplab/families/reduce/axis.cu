// warplab axis reductions: sum / mean / min / max / var / std / series stats along one axis of a
// 2-D view. Compiled by NVRTC (cupy.RawModule, -std=c++17); launch plans in axis_cuda.py and
// axis_cuda_k2.py, which pass every launch constant below as a -D option. The kernels are in
// the headers included after the shared constants, op policies and load helpers: axis_rows.cuh
// (rows_adaptive), axis_cols.cuh (columns), axis_k2.cuh (the Pearson report's K2).
//
// Layouts (axis.py plan_2d): "rows" reduces each row of a (rows x cols) view whose rows are
// contiguous and ld elements apart; "cols" reduces each column of an (nred x ncols) view whose
// rows are contiguous and ld elements apart.
//
// Template arguments: T input element (int, long long, float, double: the host converts the
// other dtypes first), A accumulator, R result, OP the op policy. Accumulators: double for
// floating sums and means, long long for integer sums, T for min/max, Mom (shifted moments) for
// var / std / stats. 64-bit indices throughout.

#include "warplab.cuh"  // u64, i64, u32, Lim<A>, is_nan (core/warplab.cuh)

// --- launch constants: the launch plans hold them; defaults only for the nvcc compile check ---
#ifndef WARPLAB_AXIS_BLOCK
#ifdef WARPLAB_NVCC_CHECK
#define WARPLAB_AXIS_BLOCK 256
#else
#error "WARPLAB_AXIS_BLOCK is passed by the launch plan (-DWARPLAB_AXIS_BLOCK=..., axis_cuda.py DEFINES)"
#endif
#endif
#ifndef WARPLAB_AXIS_UNROLL
#ifdef WARPLAB_NVCC_CHECK
#define WARPLAB_AXIS_UNROLL 4
#else
#error "WARPLAB_AXIS_UNROLL is passed by the launch plan (-DWARPLAB_AXIS_UNROLL=..., axis_cuda.py DEFINES)"
#endif
#endif
#ifndef WARPLAB_AXIS_COLS_BLOCK
#ifdef WARPLAB_NVCC_CHECK
#define WARPLAB_AXIS_COLS_BLOCK 256
#else
#error "WARPLAB_AXIS_COLS_BLOCK is passed by the launch plan (-DWARPLAB_AXIS_COLS_BLOCK=..., axis_cuda.py DEFINES)"
#endif
#endif
#ifndef WARPLAB_K2_BLOCK
#ifdef WARPLAB_NVCC_CHECK
#define WARPLAB_K2_BLOCK 1024
#else
#error "WARPLAB_K2_BLOCK is passed by the launch plan (-DWARPLAB_K2_BLOCK=..., axis_cuda.py DEFINES)"
#endif
#endif
#ifndef WARPLAB_AXIS_SPLIT_UNROLL
#ifdef WARPLAB_NVCC_CHECK
#define WARPLAB_AXIS_SPLIT_UNROLL 4
#else
#error "WARPLAB_AXIS_SPLIT_UNROLL is passed by the launch plan (-DWARPLAB_AXIS_SPLIT_UNROLL=..., axis_cuda.py DEFINES)"
#endif
#endif
#ifndef WARPLAB_AXIS_GROUP_STREAM
#ifdef WARPLAB_NVCC_CHECK
#define WARPLAB_AXIS_GROUP_STREAM 0
#else
#error "WARPLAB_AXIS_GROUP_STREAM is passed by the launch plan (-DWARPLAB_AXIS_GROUP_STREAM=..., axis_cuda.py DEFINES)"
#endif
#endif
#ifndef WARPLAB_AXIS_SPLIT_STREAM
#ifdef WARPLAB_NVCC_CHECK
#define WARPLAB_AXIS_SPLIT_STREAM 0
#else
#error "WARPLAB_AXIS_SPLIT_STREAM is passed by the launch plan (-DWARPLAB_AXIS_SPLIT_STREAM=..., axis_cuda.py DEFINES)"
#endif
#endif
#ifndef WARPLAB_AXIS_COLS_STREAM
#ifdef WARPLAB_NVCC_CHECK
#define WARPLAB_AXIS_COLS_STREAM 0
#else
#error "WARPLAB_AXIS_COLS_STREAM is passed by the launch plan (-DWARPLAB_AXIS_COLS_STREAM=..., axis_cuda.py DEFINES)"
#endif
#endif
#ifndef WARPLAB_AXIS_STAGE_UNROLL
#ifdef WARPLAB_NVCC_CHECK
#define WARPLAB_AXIS_STAGE_UNROLL 4
#else
#error "WARPLAB_AXIS_STAGE_UNROLL is passed by the launch plan (-DWARPLAB_AXIS_STAGE_UNROLL=..., axis_cuda.py DEFINES)"
#endif
#endif
#ifndef WARPLAB_AXIS_STAGE_HOIST
#ifdef WARPLAB_NVCC_CHECK
#define WARPLAB_AXIS_STAGE_HOIST 0
#else
#error "WARPLAB_AXIS_STAGE_HOIST is passed by the launch plan (-DWARPLAB_AXIS_STAGE_HOIST=..., axis_cuda.py DEFINES)"
#endif
#endif
#ifndef WARPLAB_AXIS_COLS_UNROLL
#ifdef WARPLAB_NVCC_CHECK
#define WARPLAB_AXIS_COLS_UNROLL 8
#else
#error "WARPLAB_AXIS_COLS_UNROLL is passed by the launch plan (-DWARPLAB_AXIS_COLS_UNROLL=..., axis_cuda.py DEFINES)"
#endif
#endif
#ifndef WARPLAB_AXIS_COLS_FIN_BYTES
#ifdef WARPLAB_NVCC_CHECK
#define WARPLAB_AXIS_COLS_FIN_BYTES 128
#else
#error "WARPLAB_AXIS_COLS_FIN_BYTES is passed by the launch plan (-DWARPLAB_AXIS_COLS_FIN_BYTES=..., axis_cuda.py DEFINES)"
#endif
#endif
#ifndef WARPLAB_AXIS_TRIGGER
#ifdef WARPLAB_NVCC_CHECK
#define WARPLAB_AXIS_TRIGGER 7
#else
#error "WARPLAB_AXIS_TRIGGER is passed by the launch plan (-DWARPLAB_AXIS_TRIGGER=..., axis_cuda.py DEFINES)"
#endif
#endif
constexpr u32 BS = WARPLAB_AXIS_BLOCK;         // rows kernels: threads per block
[[maybe_unused]] constexpr int UNR = WARPLAB_AXIS_UNROLL;  // independent loads in flight per thread
constexpr int SPLIT_UNR = WARPLAB_AXIS_SPLIT_UNROLL;    // the same, in the split kernel
constexpr int STAGE_UNR = WARPLAB_AXIS_STAGE_UNROLL;    // 16-byte words a thread stages per tile
                                                        // (the staged kernel's default U)
// the staged kernel's boundary words (those holding bytes outside the tile) loaded element by
// element with the tile's other loads (1), or after them (0)
constexpr bool STAGE_HOIST = WARPLAB_AXIS_STAGE_HOIST != 0;
// Which kernels let the stream's next overlapped launch schedule its blocks as soon as each
// of their blocks has started (allow_dependents, core/warplab.cuh; bits: 1 packed, 2 staged,
// 4 group, 8 split, 16 columns); the others let it when their blocks have exited. Every axis
// kernel waits for the previous kernel first (wait_prior_grids).
template <int BIT>
__device__ __forceinline__ void axis_start() {
    wait_prior_grids();
    if constexpr ((WARPLAB_AXIS_TRIGGER & BIT) != 0) allow_dependents();
}
// 16-byte loads with the L2::256B prefetch hint (ld_stream) instead of __ldg, per kernel:
constexpr bool GROUP_STREAM = WARPLAB_AXIS_GROUP_STREAM != 0;
constexpr bool SPLIT_STREAM = WARPLAB_AXIS_SPLIT_STREAM != 0;
constexpr bool COLS_STREAM = WARPLAB_AXIS_COLS_STREAM != 0;
constexpr u32 CBS = WARPLAB_AXIS_COLS_BLOCK;   // columns kernel: threads per block
constexpr int COLS_UNR = WARPLAB_AXIS_COLS_UNROLL;      // its loads in flight per thread
constexpr int COLS_FIN_BYTES = WARPLAB_AXIS_COLS_FIN_BYTES;  // its finish's bytes in flight
constexpr u32 K2B = WARPLAB_K2_BLOCK;          // the Pearson report's K2 block (1024)
constexpr unsigned FULL = 0xffffffffu;
static_assert(BS % 32 == 0 && CBS % 32 == 0 && K2B % 32 == 0 && K2B <= 1024, "block sizes");

// =============================================================================================
// Accumulators and op policies
// =============================================================================================

struct Mom {  // shifted moments of one slice: s1 = sum(x - k), s2 = sum((x - k)^2), k = slice[0]
    double s1, s2;
};


// Every policy: SHIFT (reads slice[0] as the shift k), identity<A>(), add(acc, x, k),
// combine(a, b), store(out, i, acc, n, k, ddof, out2) writing the slice's result(s).
struct OpSum {
    static constexpr bool SHIFT = false;
    template <class A> __device__ static A identity() { return A(0); }
    template <class A, class T> __device__ static A add(A a, T x, double) { return a + A(x); }
    template <class A> __device__ static A combine(A a, A b) { return a + b; }
    template <class A, class R>
    __device__ static void store(R* out, u64 i, A a, u64, double, double, u64) { out[i] = R(a); }
};
struct OpMean : OpSum {  // as NumPy: the sum divided by the count
    template <class A, class R>
    __device__ static void store(R* out, u64 i, A a, u64 n, double, double, u64) {
        out[i] = R(double(a) / double(n));
    }
};
struct OpMin {  // NaN propagates, as NumPy's minimum
    static constexpr bool SHIFT = false;
    template <class A> __device__ static A identity() { return Lim<A>::highest(); }
    template <class A> __device__ static A combine(A a, A b) {
        return is_nan(a) ? a : (is_nan(b) ? b : (b < a ? b : a));
    }
    template <class A, class T> __device__ static A add(A a, T x, double) { return combine(a, A(x)); }
    template <class A, class R>
    __device__ static void store(R* out, u64 i, A a, u64, double, double, u64) { out[i] = R(a); }
};
struct OpMax {
    static constexpr bool SHIFT = false;
    template <class A> __device__ static A identity() { return Lim<A>::lowest(); }
    template <class A> __device__ static A combine(A a, A b) {
        return is_nan(a) ? a : (is_nan(b) ? b : (b > a ? b : a));
    }
    template <class A, class T> __device__ static A add(A a, T x, double) { return combine(a, A(x)); }
    template <class A, class R>
    __device__ static void store(R* out, u64 i, A a, u64, double, double, u64) { out[i] = R(a); }
};
// Shifted moments: one pass, plain additions (exact merging across lanes and blocks, no
// per-element division as Welford needs). The sum of squared deviations is s2 - s1^2 / n, whose
// rounding error is about eps64 * n * (1 + (mean - k)^2 / var): k = slice[0] is a data value, so
// (mean - k)^2 / var stays small for any data that is not dominated by one outlier.
struct OpMoments {
    static constexpr bool SHIFT = true;
    template <class A> __device__ static A identity() { return A{0.0, 0.0}; }
    template <class T> __device__ static Mom add(Mom a, T x, double k) {
        const double d = double(x) - k;
        return Mom{a.s1 + d, fma(d, d, a.s2)};
    }
    __device__ static Mom combine(Mom a, Mom b) { return Mom{a.s1 + b.s1, a.s2 + b.s2}; }
    __device__ static double m2(Mom a, u64 n) {  // sum of squared deviations, >= 0 (NaN stays)
        const double m = a.s2 - a.s1 * a.s1 / double(n);
        return m < 0.0 ? 0.0 : m;
    }
};
struct OpVar : OpMoments {
    template <class A, class R>
    __device__ static void store(R* out, u64 i, A a, u64 n, double, double ddof, u64) {
        out[i] = R(m2(a, n) / (double(n) - ddof));
    }
};
struct OpStd : OpMoments {
    template <class A, class R>
    __device__ static void store(R* out, u64 i, A a, u64 n, double, double ddof, u64) {
        out[i] = R(sqrt(m2(a, n) / (double(n) - ddof)));
    }
};
struct OpStats : OpMoments {  // series_stats: mean at out[i], centred norm at out[out2 + i]
    template <class A, class R>
    __device__ static void store(R* out, u64 i, A a, u64 n, double k, double, u64 out2) {
        out[i] = R(k + a.s1 / double(n));
        out[out2 + i] = R(sqrt(m2(a, n)));
    }
};

// --- shuffles, loads, block reduction ---
template <class A> __device__ __forceinline__ A shfl_xor(A v, int m) { return __shfl_xor_sync(FULL, v, m); }
__device__ __forceinline__ Mom shfl_xor(Mom v, int m) {
    return Mom{__shfl_xor_sync(FULL, v.s1, m), __shfl_xor_sync(FULL, v.s2, m)};
}
// Partials written by other blocks: loaded from L2 (never a stale L1 line).
template <class A> __device__ __forceinline__ A load_cg(const A* p) { return __ldcg(p); }
__device__ __forceinline__ Mom load_cg(const Mom* p) {
    return Mom{__ldcg(&p->s1), __ldcg(&p->s2)};
}

template <class T> __device__ __forceinline__ double shift_of(const T* slice) { return double(__ldg(slice)); }

template <class A, class OP>
__device__ __forceinline__ A warp_all(A x) {  // butterfly: every lane ends with the warp's value
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) x = OP::combine(x, shfl_xor(x, m));
    return x;
}

// Block-wide reduction, the result valid in thread 0. Callers separate two uses of ``wsum``
// with a __syncthreads().
template <u32 B, class A, class OP>
__device__ __forceinline__ A block_reduce(A x, A* wsum) {
    x = warp_all<A, OP>(x);
    if ((threadIdx.x & 31u) == 0) wsum[threadIdx.x >> 5] = x;
    __syncthreads();
    if (threadIdx.x < 32) {
        x = threadIdx.x < B / 32 ? wsum[threadIdx.x] : OP::template identity<A>();
        x = warp_all<A, OP>(x);
    }
    return x;
}

template <class T, int PER> union Pack {
    uint4 u;
    T v[PER];
};

// A 16-byte read-only load: with STREAM the L2::256B prefetch hint (ld_stream), else __ldg.
template <bool STREAM> __device__ __forceinline__ uint4 ld16(const uint4* p) {
    if constexpr (STREAM) return ld_stream(p);
    else return __ldg(p);
}

// Thread ``t`` of ``nt`` accumulates elements [begin, end) of a contiguous slice. VEC: a scalar
// head up to the first 16-byte boundary, then 16-byte read-only loads (U in flight per
// thread, one accumulator each; the last, partial round's loads predicated rather than issued
// one at a time), then a scalar tail: any start address, any length.
template <class T, class A, class OP, bool VEC, int U, bool STREAM>
__device__ __forceinline__ A range_acc(const T* __restrict__ p, u64 begin, u64 end, u64 t, u64 nt,
                                       double k) {
    A acc[U];
#pragma unroll
    for (int j = 0; j < U; ++j) acc[j] = OP::template identity<A>();
    if (VEC) {
        constexpr int PER = 16 / sizeof(T);
        u64 head = ((16u - ((u64)(p + begin) & 15u)) & 15u) / sizeof(T);
        if (head > end - begin) head = end - begin;
        const u64 vb = begin + head;
        const u64 nvec = (end - vb) / PER;
        const uint4* __restrict__ v = reinterpret_cast<const uint4*>(p + vb);
        u64 i = t;
        for (; i + (U - 1) * nt < nvec; i += U * nt) {  // whole rounds: U loads in flight
            Pack<T, PER> q[U];
#pragma unroll
            for (int j = 0; j < U; ++j) q[j].u = ld16<STREAM>(v + i + j * nt);
#pragma unroll
            for (int j = 0; j < U; ++j)
#pragma unroll
                for (int e = 0; e < PER; ++e) acc[j] = OP::add(acc[j], q[j].v[e], k);
        }
        if (i < nvec) {  // the last, partial round: its (at most U - 1) loads predicated
            Pack<T, PER> q[U];
#pragma unroll
            for (int j = 0; j < U; ++j)
                q[j].u = i + j * nt < nvec ? ld16<STREAM>(v + i + j * nt) : make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
            for (int j = 0; j < U; ++j)
                if (i + j * nt < nvec)
#pragma unroll
                    for (int e = 0; e < PER; ++e) acc[j] = OP::add(acc[j], q[j].v[e], k);
        }
        for (u64 j = t; j < head; j += nt) acc[0] = OP::add(acc[0], __ldg(p + begin + j), k);
        const u64 tb = vb + nvec * PER;
        for (u64 j = tb + t; j < end; j += nt) acc[0] = OP::add(acc[0], __ldg(p + j), k);
    } else {
        u64 i = begin + t;
        for (; i + (U - 1) * nt < end; i += U * nt) {
            T q[U];
#pragma unroll
            for (int j = 0; j < U; ++j) q[j] = __ldg(p + i + j * nt);
#pragma unroll
            for (int j = 0; j < U; ++j) acc[j] = OP::add(acc[j], q[j], k);
        }
        if (i < end) {
            T q[U];
#pragma unroll
            for (int j = 0; j < U; ++j) q[j] = i + j * nt < end ? __ldg(p + i + j * nt) : T(0);
#pragma unroll
            for (int j = 0; j < U; ++j)
                if (i + j * nt < end) acc[j] = OP::add(acc[j], q[j], k);
        }
    }
#pragma unroll
    for (int j = 1; j < U; ++j) acc[0] = OP::combine(acc[0], acc[j]);
    return acc[0];
}

// A split row's finish (the GPU lecture's global sync, one counter per row): thread 0 leaves
// the block's partial x of row r (split s of S) and draws the row's ticket (atomicInc wraps the
// counter back to 0 for the next launch); true in every thread of the block that drew the last
// one, which may then read the row's S partials. `last`: the block's shared flag.
template <class A>
__device__ __forceinline__ bool last_of_row(A* partials, u32* tickets, u64 r, u32 s, u32 S, A x,
                                            bool& last) {
    if (threadIdx.x == 0) {
        partials[r * S + s] = x;
        __threadfence();
        last = atomicInc(tickets + r, S - 1) == S - 1;
    }
    __syncthreads();
    if (!last) return false;
    __threadfence();
    return true;
}

#include "axis_rows.cuh"
#include "axis_cols.cuh"
#include "axis_k2.cuh"

// =============================================================================================
// Explicit instantiations for the nvcc compile check (NVRTC instantiates what the host names).
// =============================================================================================
#ifdef WARPLAB_NVCC_CHECK
#define AXIS_ROWS(T, A, R, OP, G)                                                              \
    template __global__ void axis_rows_group<T, A, R, OP, G, true>(const T*, u64, u64, u64,    \
                                                                    R*, double, u64);         \
    template __global__ void axis_rows_group<T, A, R, OP, G, false>(const T*, u64, u64, u64,   \
                                                                     R*, double, u64);
// Group sizes 1 (no shuffles) and 32 (a warp per row) only: G is a constant of the same code,
// and every instantiation the launch plans name is also checked through NVRTC.
#define AXIS_ALL(T, A, R, OP)                                                                  \
    AXIS_ROWS(T, A, R, OP, 1) AXIS_ROWS(T, A, R, OP, 32)                                       \
    template __global__ void axis_rows_staged<T, A, R, OP, 1>(const T*, u64, u64, u64, R*,     \
                                                              double, u64);                    \
    template __global__ void axis_rows_staged<T, A, R, OP, 32>(const T*, u64, u64, u64, R*,    \
                                                               double, u64);                   \
    template __global__ void axis_rows_staged<T, A, R, OP, 1, 8>(const T*, u64, u64, u64, R*,  \
                                                                 double, u64);                 \
    template __global__ void axis_rows_split<T, A, R, OP, true>(                               \
        const T*, u64, u64, u64, u32, u64, A*, u32*, R*, double, u64);                         \
    template __global__ void axis_rows_split<T, A, R, OP, false>(                              \
        const T*, u64, u64, u64, u32, u64, A*, u32*, R*, double, u64);                         \
    template __global__ void axis_cols<T, A, R, OP, true, false>(                              \
        const T*, u64, u64, u64, u32, u32, u64, A*, u32*, R*, double, u64);                    \
    template __global__ void axis_cols<T, A, R, OP, true, true>(                               \
        const T*, u64, u64, u64, u32, u32, u64, A*, u32*, R*, double, u64);                    \
    template __global__ void axis_cols<T, A, R, OP, false, false>(                             \
        const T*, u64, u64, u64, u32, u32, u64, A*, u32*, R*, double, u64);
#define AXIS_TYPE(T, SUMA, SUMR, MR)                                                           \
    AXIS_ALL(T, SUMA, SUMR, OpSum) AXIS_ALL(T, double, MR, OpMean) AXIS_ALL(T, T, T, OpMin)    \
    AXIS_ALL(T, T, T, OpMax) AXIS_ALL(T, Mom, MR, OpVar) AXIS_ALL(T, Mom, MR, OpStd)           \
    AXIS_ALL(T, Mom, MR, OpStats)
AXIS_TYPE(int, i64, i64, double)
AXIS_TYPE(i64, i64, i64, double)
AXIS_TYPE(float, double, float, float)
AXIS_TYPE(double, double, double, double)
#define K2_MEAN(T, M)                                                                          \
    template __global__ void k2_finish<T, M>(T*, u64, u32, u64, T*);                           \
    template __global__ void k2_shared<T, M>(const T*, u64, u64, T*);                          \
    K2_B(T, M, 32) K2_B(T, M, 64) K2_B(T, M, 128) K2_B(T, M, 256) K2_B(T, M, 512)              \
    K2_B(T, M, 1024)
#define K2_B(T, M, B)                                                                          \
    template __global__ void k2_shared_unrolled<T, M, B>(const T*, u64, u64, T*);              \
    template __global__ void k2_multiblock<T, M, B>(const T*, u64, u64, u32, u64, T*, u32*, T*);
#define K2_TYPE(T) template __global__ void k2_prereduce<T>(T*, u64); K2_MEAN(T, true) K2_MEAN(T, false)
K2_TYPE(float)
K2_TYPE(double)
#endif

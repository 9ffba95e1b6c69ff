// warplab axis reductions: sum / mean / min / max / var / std / series stats along one axis of a
// 2-D view. Compiled by NVRTC (cupy.RawModule, -std=c++17); launch plans in axis_cuda.py and
// axis_cuda_k2.py, which pass every launch constant below as a -D option.
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
#define WARPLAB_AXIS_COLS_UNROLL 4
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

// =============================================================================================
// rows_adaptive, short and medium rows: a group of G lanes (G = 1..32, a power of two) per row.
// The warps walk the rows 32/G at a time (a warp-uniform loop, so the group's xor shuffles
// always see the whole warp; the plan launches a warp per step, so each walks once); lane 0 of
// each group stores the row's result.
// =============================================================================================
template <class T, class A, class R, class OP, int G, bool VEC>
__global__ void __launch_bounds__(BS)
axis_rows_group(const T* __restrict__ in, u64 rows, u64 cols, u64 ld, R* __restrict__ out,
                double ddof, u64 out2) {
    axis_start<4>();  // launched to overlap the stream's previous kernel
    static_assert(G >= 1 && G <= 32 && (G & (G - 1)) == 0, "G: a power of two up to 32");
    constexpr u32 GPW = 32 / G;  // rows per warp and step
    const u32 lane = threadIdx.x & 31u;
    const u32 sub = lane & (G - 1);
    const u64 warp = ((u64)blockIdx.x * BS + threadIdx.x) >> 5;
    const u64 step = ((u64)gridDim.x * BS >> 5) * GPW;
    for (u64 r0 = warp * GPW; r0 < rows; r0 += step) {
        const u64 r = r0 + lane / G;
        A acc = OP::template identity<A>();
        double k = 0.0;
        if (r < rows) {
            const T* row = in + r * ld;
            if (OP::SHIFT) k = shift_of(row);
            acc = range_acc<T, A, OP, VEC, UNR, GROUP_STREAM>(row, 0, cols, sub, G, k);
        }
#pragma unroll
        for (int m = G / 2; m > 0; m >>= 1) acc = OP::combine(acc, shfl_xor(acc, m));
        if (r < rows && sub == 0) OP::store(out, r, acc, cols, k, ddof, out2);
    }
}

// =============================================================================================
// rows_adaptive, packed short rows: every row is exactly L 16-byte words (L = 1..16, a power of
// two) and the rows lie back to back (ld == cols, 16-byte aligned base), so together they are
// one run of words. A warp step takes UNR * 32 consecutive words: load j of lane l is word
// w0 + 32 j + l, so every warp instruction reads one whole 512-byte segment (the group kernel's
// G lanes per row read 16 rows' words at a stride instead). The L lanes holding a row's words
// combine by xor shuffles and the first of them stores the row's result.
// =============================================================================================
template <class T, class A, class R, class OP, int L>
__global__ void __launch_bounds__(BS)
axis_rows_packed(const T* __restrict__ in, u64 rows, u64 cols, R* __restrict__ out, double ddof,
                 u64 out2) {
    axis_start<1>();  // launched to overlap the stream's previous kernel
    static_assert(L >= 1 && L <= 16 && (L & (L - 1)) == 0, "L: a power of two up to 16");
    constexpr int PER = 16 / sizeof(T);
    const u32 lane = threadIdx.x & 31u;
    const u64 words = rows * L;
    const uint4* __restrict__ v = reinterpret_cast<const uint4*>(in);
    const u64 warp = ((u64)blockIdx.x * BS + threadIdx.x) >> 5;
    const u64 step = ((u64)gridDim.x * BS >> 5) * (32u * UNR);
    for (u64 w0 = warp * (32u * UNR); w0 < words; w0 += step) {
        Pack<T, PER> q[UNR];
#pragma unroll
        for (int j = 0; j < UNR; ++j) {
            const u64 w = w0 + 32u * j + lane;
            q[j].u = w < words ? ld_stream(v + w) : make_uint4(0u, 0u, 0u, 0u);
        }
#pragma unroll
        for (int j = 0; j < UNR; ++j) {
            const u64 w = w0 + 32u * j + lane;  // words is a multiple of L: a row's L lanes
            const u64 r = w / L;                // are all in range or all out
            A acc = OP::template identity<A>();
            double k = 0.0;
            if (w < words) {
                if (OP::SHIFT) k = shift_of(in + r * cols);
#pragma unroll
                for (int e = 0; e < PER; ++e) acc = OP::add(acc, q[j].v[e], k);
            }
#pragma unroll
            for (int m = L / 2; m > 0; m >>= 1) acc = OP::combine(acc, shfl_xor(acc, m));
            if (w < words && (lane & (L - 1)) == 0) OP::store(out, r, acc, cols, k, ddof, out2);
        }
    }
}

// =============================================================================================
// rows_adaptive, short rows back to back that are no packed case (rows of 33 floats, of 100
// doubles, a base off the 16-byte grid): block b stages tile b, rows [b * RT, (b + 1) * RT),
// into shared memory as the 16-byte words that hold them, every warp instruction one 512-byte
// segment (as the packed kernel); then G lanes per row reduce the tile's rows from shared
// memory and the first lane of each group stores. The first and last word of a tile, where
// they hold bytes outside the tile, are read element by element (no byte outside the array is
// read). RT: the most whole rows whose words fit the tile of BS * U words (host plan: 16 KiB
// at U = 4, 32 KiB at U = 8 for rows under 512 bytes).
// =============================================================================================
template <class T, class A, class R, class OP, int G, int U = STAGE_UNR>
__global__ void __launch_bounds__(BS)
axis_rows_staged(const T* __restrict__ in, u64 rows, u64 cols, u64 RT, R* __restrict__ out,
                 double ddof, u64 out2) {
    axis_start<2>();  // launched to overlap the stream's previous kernel
    static_assert(G >= 1 && G <= 32 && (G & (G - 1)) == 0, "G: a power of two up to 32");
    constexpr u32 PER = 16 / sizeof(T);
    static_assert(U >= 1 && U <= 8, "U: 16-byte words a thread stages, up to 8 (32 KiB)");
    __shared__ uint4 tile[BS * U];
    T* st = reinterpret_cast<T*>(tile);
    const u32 sub = threadIdx.x & (G - 1);
    const u64 tiles = (rows + RT - 1) / RT;
    for (u64 b = blockIdx.x; b < tiles; b += gridDim.x) {
        const u64 r0 = b * RT;
        const u64 nr = rows - r0 < RT ? rows - r0 : RT;
        const T* first = in + r0 * cols;
        const u64 ne = nr * cols;
        const u32 lead = (u32)(((u64)first & 15u) / sizeof(T));  // elements before `first`
        const u64 nw = (lead + ne + PER - 1) / PER;                 // words holding the tile
        const bool tail_whole = (lead + ne) % PER == 0;
        const uint4* __restrict__ src = reinterpret_cast<const uint4*>(first - lead);
        uint4 q[U];
#pragma unroll
        for (int j = 0; j < U; ++j) {
            const u64 w = threadIdx.x + (u64)j * BS;
            const bool whole = w < nw && (w > 0 || lead == 0) && (w + 1 < nw || tail_whole);
            q[j] = whole ? ld_stream(src + w) : make_uint4(0u, 0u, 0u, 0u);
            if constexpr (STAGE_HOIST) {  // a boundary word: its elements inside the tile now
                if (!whole && w < nw) {    // (zeros elsewhere: outside the rows read below)
                    Pack<T, PER> p;
                    p.u = q[j];
#pragma unroll
                    for (u32 e = 0; e < PER; ++e) {
                        const i64 idx = (i64)(w * PER + e) - (i64)lead;
                        if (idx >= 0 && idx < (i64)ne) p.v[e] = first[idx];
                    }
                    q[j] = p.u;
                }
            }
        }
#pragma unroll
        for (int j = 0; j < U; ++j) {
            const u64 w = threadIdx.x + (u64)j * BS;
            if (w >= nw) continue;
            if (STAGE_HOIST || ((w > 0 || lead == 0) && (w + 1 < nw || tail_whole))) {
                tile[w] = q[j];
            } else {  // a word that holds bytes outside the tile: its elements inside it
#pragma unroll
                for (u32 e = 0; e < PER; ++e) {
                    const i64 idx = (i64)(w * PER + e) - (i64)lead;
                    if (idx >= 0 && idx < (i64)ne) st[w * PER + e] = first[idx];
                }
            }
        }
        __syncthreads();
        for (u64 i0 = 0; i0 < nr; i0 += BS / G) {  // uniform in the block: whole groups shuffle
            const u64 i = i0 + threadIdx.x / G;
            A acc = OP::template identity<A>();
            double k = 0.0;
            if (i < nr) {
                const T* row = st + lead + i * cols;
                if (OP::SHIFT) k = double(row[0]);
                for (u64 j = sub; j < cols; j += G) acc = OP::add(acc, row[j], k);
            }
#pragma unroll
            for (int m = G / 2; m > 0; m >>= 1) acc = OP::combine(acc, shfl_xor(acc, m));
            if (i < nr && sub == 0) OP::store(out, r0 + i, acc, cols, k, ddof, out2);
        }
        __syncthreads();  // the tile is reused
    }
}

// =============================================================================================
// rows_adaptive, long rows (or too few rows for the group kernel): S blocks per row (grid
// rows * S; S = 1, a block per row, when the rows alone fill the GPU), block s reads elements
// [s * chunk, (s + 1) * chunk) of its row; with S > 1 each block leaves a partial, and the
// block that draws a row's last ticket (atomicInc wraps the row's counter back to 0) combines
// the row's S partials and stores the result: one launch, every SM busy.
// =============================================================================================
template <class T, class A, class R, class OP, bool VEC>
__global__ void __launch_bounds__(BS)
axis_rows_split(const T* __restrict__ in, u64 rows, u64 cols, u64 ld, u32 S, u64 chunk,
                A* partials, u32* tickets, R* __restrict__ out, double ddof, u64 out2) {
    axis_start<8>();  // launched to overlap the stream's previous kernel
    __shared__ A wsum[BS / 32];
    __shared__ bool last;
    const u64 r = blockIdx.x / S;
    const u32 s = blockIdx.x % S;
    const T* row = in + r * ld;
    const double k = OP::SHIFT ? shift_of(row) : 0.0;
    u64 begin = (u64)s * chunk;
    if (begin > cols) begin = cols;
    const u64 end = cols - begin < chunk ? cols : begin + chunk;
    A x = range_acc<T, A, OP, VEC, SPLIT_UNR, SPLIT_STREAM>(row, begin, end, threadIdx.x, BS, k);
    x = block_reduce<BS, A, OP>(x, wsum);
    if (S == 1) {
        if (threadIdx.x == 0) OP::store(out, r, x, cols, k, ddof, out2);
        return;
    }
    if (threadIdx.x == 0) {  // the GPU lecture's global sync, one counter per row
        partials[r * S + s] = x;
        __threadfence();
        last = atomicInc(tickets + r, S - 1) == S - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    A y = OP::template identity<A>();
    for (u32 j = threadIdx.x; j < S; j += BS) y = OP::combine(y, load_cg(partials + r * S + j));
    __syncthreads();  // wsum is reused
    y = block_reduce<BS, A, OP>(y, wsum);
    if (threadIdx.x == 0) OP::store(out, r, y, cols, k, ddof, out2);
}

// The columns kernel's row lanes combined: the head row lane's threads (rl == 0) end with the
// combination over rl of their PER columns' values. Row lanes of one warp (CG < 32) by
// butterflies over the lane bits above CG; then the warps' values by a tree in shared memory,
// all PER columns a step. Every thread of the block takes part.
template <class A, class OP, int PER>
__device__ __forceinline__ void cols_lanes(A (&acc)[PER], A (*sm)[CBS], u32 rl, u32 RL, u32 CG) {
    u32 lw = 1;  // row lanes per warp
    for (u32 m = CG; m < 32; m <<= 1, lw <<= 1)
#pragma unroll
        for (int e = 0; e < PER; ++e) acc[e] = OP::combine(acc[e], shfl_xor(acc[e], m));
    const u32 RW = RL / lw;  // row-lane groups in different warps
    if (RW == 1) return;
    const u32 rw = rl / lw, slot = rw * CG + (threadIdx.x & (CG - 1));
    const bool rep = rl % lw == 0;  // the group's representative
    if (rep)
#pragma unroll
        for (int e = 0; e < PER; ++e) sm[e][slot] = acc[e];
    __syncthreads();
    for (u32 st = RW / 2; st > 0; st >>= 1) {
        if (rep && rw < st)
#pragma unroll
            for (int e = 0; e < PER; ++e)
                sm[e][slot] = OP::combine(sm[e][slot], sm[e][slot + st * CG]);
        __syncthreads();
    }
#pragma unroll
    for (int e = 0; e < PER; ++e) acc[e] = sm[e][slot];
    __syncthreads();
}

// =============================================================================================
// columns: reduce each column of an (nred x ncols) view. A block is CG column threads (a power
// of two up to CBS) x CBS / CG row lanes: thread (rl, cg) owns PER adjacent columns (16-byte
// loads when VEC: the host checks the base and ld * sizeof(T) are 16-byte multiples) and walks
// every (CBS / CG)-th row of the block's row range with COLS_UNR loads in flight, so a warp
// always reads whole 32-byte sectors, however few the columns. The row lanes are then combined
// (cols_lanes). Grid (column blocks, S): with S > 1 each row range leaves partials, and the last
// block of a column block (one ticket each) combines the S partials of its columns, every
// thread of it taking part (row lane rl takes partials rl, rl + RL, ..., COLS_FIN_BYTES of them
// in flight). The 16-byte loads carry the L2::256B prefetch hint with COLS_STREAM (off in the
// library: axis_plan.COLS_STREAM).
// =============================================================================================
template <class T, class A, class R, class OP, bool VEC>
__global__ void __launch_bounds__(CBS)
axis_cols(const T* __restrict__ in, u64 nred, u64 ncols, u64 ld, u32 CG, u32 S, u64 chunk,
          A* partials, u32* tickets, R* __restrict__ out, double ddof, u64 out2) {
    axis_start<16>();  // launched to overlap the stream's previous kernel
    constexpr int PER = VEC ? 16 / sizeof(T) : 1;
    __shared__ A sm[PER][CBS];
    __shared__ bool last;
    const u32 cg = threadIdx.x & (CG - 1), rl = threadIdx.x / CG, RL = CBS / CG;
    const u64 c0 = ((u64)blockIdx.x * CG + cg) * PER;
    const int nc = c0 >= ncols ? 0 : (ncols - c0 >= (u64)PER ? PER : (int)(ncols - c0));
    u64 begin = (u64)blockIdx.y * chunk;
    if (begin > nred) begin = nred;
    const u64 end = nred - begin < chunk ? nred : begin + chunk;
    A acc[PER];
    double k[PER];
#pragma unroll
    for (int e = 0; e < PER; ++e) {
        acc[e] = OP::template identity<A>();
        k[e] = (OP::SHIFT && e < nc) ? shift_of(in + c0 + e) : 0.0;
    }
    if (nc == PER) {
        u64 i = begin + rl;
        for (; i + (COLS_UNR - 1) * (u64)RL < end; i += COLS_UNR * (u64)RL) {
            Pack<T, PER> q[COLS_UNR];
#pragma unroll
            for (int j = 0; j < COLS_UNR; ++j) {
                const T* p = in + (i + (u64)j * RL) * ld + c0;
                if (VEC) q[j].u = ld16<COLS_STREAM>(reinterpret_cast<const uint4*>(p));
                else q[j].v[0] = __ldg(p);
            }
#pragma unroll
            for (int j = 0; j < COLS_UNR; ++j)
#pragma unroll
                for (int e = 0; e < PER; ++e) acc[e] = OP::add(acc[e], q[j].v[e], k[e]);
        }
        for (; i < end; i += RL) {
            Pack<T, PER> q;
            const T* p = in + i * ld + c0;
            if (VEC) q.u = ld16<COLS_STREAM>(reinterpret_cast<const uint4*>(p));
            else q.v[0] = __ldg(p);
#pragma unroll
            for (int e = 0; e < PER; ++e) acc[e] = OP::add(acc[e], q.v[e], k[e]);
        }
    } else {  // the last, partial column group (fewer than PER columns): scalar loads
        for (u64 i = begin + rl; i < end; i += RL)
#pragma unroll
            for (int e = 0; e < PER; ++e)
                if (e < nc) acc[e] = OP::add(acc[e], __ldg(in + i * ld + c0 + e), k[e]);
    }
    if (RL > 1) cols_lanes<A, OP, PER>(acc, sm, rl, RL, CG);
    const bool head = rl == 0;  // the row lane that holds its columns' results
    if (S == 1) {
#pragma unroll
        for (int e = 0; e < PER; ++e)
            if (head && e < nc) OP::store(out, c0 + e, acc[e], nred, k[e], ddof, out2);
        return;
    }
#pragma unroll
    for (int e = 0; e < PER; ++e)
        if (head && e < nc) partials[(u64)blockIdx.y * ncols + c0 + e] = acc[e];
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicInc(tickets + blockIdx.x, S - 1) == S - 1;
    __syncthreads();
    if (!last) return;  // the whole last block combines: row lane rl takes partials rl, rl + RL..
    __threadfence();
    // The finish is L2 round trips: FIN splits of all PER columns in flight per thread
    // (COLS_FIN_BYTES of partials), ceil(S / (FIN * RL)) round trips in all.
    constexpr int FIN_ = COLS_FIN_BYTES / (PER * (int)sizeof(A));
    constexpr int FIN = FIN_ > 1 ? FIN_ : 1;
#pragma unroll
    for (int e = 0; e < PER; ++e) acc[e] = OP::template identity<A>();
    for (u32 j = rl; j < S; j += FIN * RL) {
        A y[FIN][PER];
#pragma unroll
        for (int f = 0; f < FIN; ++f)
#pragma unroll
            for (int e = 0; e < PER; ++e)
                y[f][e] = e < nc && j + f * RL < S
                              ? load_cg(partials + (u64)(j + f * RL) * ncols + c0 + e)
                              : OP::template identity<A>();
#pragma unroll
        for (int f = 0; f < FIN; ++f)
#pragma unroll
            for (int e = 0; e < PER; ++e) acc[e] = OP::combine(acc[e], y[f][e]);
    }
    if (RL > 1) cols_lanes<A, OP, PER>(acc, sm, rl, RL, CG);
#pragma unroll
    for (int e = 0; e < PER; ++e)
        if (head && e < nc) OP::store(out, c0 + e, acc[e], nred, k[e], ddof, out2);
}

// =============================================================================================
// The Pearson report's K2 family (section 4): one series per block, sums in the input type T.
// MEAN: the block's sum divided by the series length n (in T, as the report's float kernels).
// =============================================================================================

// K2 basic, part 1: in place on a scratch copy of the series padded with zeros to P = 2^k
// elements. While more values are left than threads, thread t adds element t of chunk c + s
// into element t of chunk c (chunks of blockDim values, s = blockDim, 2 blockDim, ...): every
// element is touched by one thread only, so no barrier is needed between the halvings. Leaves
// blockDim values at the front of each series.
template <class T>
__global__ void k2_prereduce(T* data, u64 P) {
    T* d = data + (u64)blockIdx.x * P;
    const u64 t = threadIdx.x, bd = blockDim.x;
    for (u64 s = bd; s < P; s *= 2)
        for (u64 c = 0; c < P; c += 2 * s) d[c + t] += d[c + s + t];
}

// K2 basic, part 2: the report's child kernel (launched here from the host: NVRTC modules cannot
// use dynamic parallelism): interleaved pairs in global memory over the first ``left`` values,
// left / 2 threads, a barrier per level.
template <class T, bool MEAN>
__global__ void k2_finish(T* data, u64 P, u32 left, u64 n, T* out) {
    T* d = data + (u64)blockIdx.x * P;
    const u32 t = threadIdx.x;
    for (u32 s = left / 2; s > 0; s >>= 1) {
        if (t < s) d[t] += d[t + s];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = MEAN ? d[0] / T(n) : d[0];
}

// K2 shared ("Intense"): each thread sums its strided elements, then an interleaved tree in
// shared memory with a barrier at every level (blockDim a power of two, at most K2B).
template <class T, bool MEAN>
__global__ void k2_shared(const T* __restrict__ in, u64 cols, u64 ld, T* out) {
    __shared__ T s[K2B];
    const u32 t = threadIdx.x;
    const T* row = in + (u64)blockIdx.x * ld;
    T acc = T(0);
    for (u64 i = t; i < cols; i += blockDim.x) acc += row[i];
    s[t] = acc;
    __syncthreads();
    for (u32 st = blockDim.x / 2; st > 0; st >>= 1) {
        if (t < st) s[t] += s[t + st];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = MEAN ? s[0] / T(cols) : s[0];
}

// The unrolled tree of "Intense Optimized": block size B a compile-time constant (32..1024),
// the levels above one warp unrolled, the last warp with shuffles. (The report's last warp used
// volatile shared memory without barriers: a race since Volta's independent thread scheduling.)
// Returns the block's sum in thread 0.
template <u32 B, class T>
__device__ __forceinline__ T k2_block_sum(T acc, T* s) {
    static_assert(B >= 32 && B <= 1024 && (B & (B - 1)) == 0, "B: a power of two, 32..1024");
    const u32 t = threadIdx.x;
    s[t] = acc;
    __syncthreads();
    if (B >= 1024) { if (t < 512) s[t] += s[t + 512]; __syncthreads(); }
    if (B >= 512) { if (t < 256) s[t] += s[t + 256]; __syncthreads(); }
    if (B >= 256) { if (t < 128) s[t] += s[t + 128]; __syncthreads(); }
    if (B >= 128) { if (t < 64) s[t] += s[t + 64]; __syncthreads(); }
    T v = T(0);
    if (t < 32) {
        v = s[t] + (B >= 64 ? s[t + 32] : T(0));
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(FULL, v, off);
    }
    return v;
}

template <class T, bool MEAN, u32 B>
__global__ void __launch_bounds__(B)
k2_shared_unrolled(const T* __restrict__ in, u64 cols, u64 ld, T* out) {
    __shared__ T s[B];
    const u32 t = threadIdx.x;
    const T* row = in + (u64)blockIdx.x * ld;
    T acc = T(0);
    for (u64 i = t; i < cols; i += B) acc += row[i];
    acc = k2_block_sum<B, T>(acc, s);
    if (t == 0) out[blockIdx.x] = MEAN ? acc / T(cols) : acc;
}

// K2 multi-block (the report's appendix 4.6): NB blocks per series (grid rows * NB), block b
// sums elements [b * chunk, (b + 1) * chunk) of its series; partials in T and a last-block
// finish through one ticket per series.
template <class T, bool MEAN, u32 B>
__global__ void __launch_bounds__(B)
k2_multiblock(const T* __restrict__ in, u64 cols, u64 ld, u32 NB, u64 chunk, T* partials,
              u32* tickets, T* out) {
    __shared__ T s[B];
    __shared__ bool last;
    const u32 t = threadIdx.x;
    const u64 r = blockIdx.x / NB;
    const u32 b = blockIdx.x % NB;
    const T* row = in + r * ld;
    u64 begin = (u64)b * chunk;
    if (begin > cols) begin = cols;
    const u64 end = cols - begin < chunk ? cols : begin + chunk;
    T acc = T(0);
    for (u64 i = begin + t; i < end; i += B) acc += row[i];
    acc = k2_block_sum<B, T>(acc, s);
    if (NB == 1) {
        if (t == 0) out[r] = MEAN ? acc / T(cols) : acc;
        return;
    }
    if (t == 0) {
        partials[r * NB + b] = acc;
        __threadfence();
        last = atomicInc(tickets + r, NB - 1) == NB - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    T y = T(0);
    for (u32 j = t; j < NB; j += B) y += __ldcg(partials + r * NB + j);
    __syncthreads();  // s is reused
    y = k2_block_sum<B, T>(y, s);
    if (t == 0) out[r] = MEAN ? y / T(cols) : y;
}

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
    template __global__ void axis_cols<T, A, R, OP, true>(                                     \
        const T*, u64, u64, u64, u32, u32, u64, A*, u32*, R*, double, u64);                    \
    template __global__ void axis_cols<T, A, R, OP, false>(                                    \
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

// warplab gram: C = A B^T on tensor cores (inline PTX mma.sync, sm_80+). A is Ma x N, B is Mb x N,
// both row-major (a row is one series, k runs along it), C is Ma x Mb row-major. Compiled by
// NVRTC (cupy.RawModule, -std=c++17); launch plans in gram_cuda.py pass every constant below.
//
// Modes (template MODE):
//   0 "float64": FP64 DMMA, float64 accumulators: m8n8k4 (sm_80+), or m16n8k8 / m16n8k16 (sm_90+,
//     F64_MMA_M = 16; the shape comes from the launch plan's configuration). float32 input is
//     widened when its fragments are read from shared memory (products of float32 values are
//     exact in float64).
//   1 "float32": 3xTF32: x = hi + lo, hi = tf32(x), lo = tf32(x - hi); per 8-deep k step the
//     products lo*hi + hi*lo + hi*hi go through m16n8k8 into a fresh float32 accumulator, which
//     is then added into a float64 sum (so the tensor core never accumulates more than 24 terms).
//   2 "tf32": one m16n8k8 TF32 pass, float32 accumulators over the whole k range.
//
// Block: THREADS = 32 WARPS_M WARPS_N threads (per mode, Shape below) compute a TILE x TILE
// tile of C; each warp a (TILE / WARPS_M) x (TILE / WARPS_N) warp tile made of MT x NT mma
// tiles. k advances in slices
// of BK staged through shared memory by cp.async in a STAGES-deep ring (one barrier per slice);
// slices past N or rows past Ma / Mb are zero-filled by cp.async's src-size operand.
// Shared memory holds both tiles as [row][k] with rows padded by PAD elements (see the bank
// notes at the fragment loads): the "col" operand of mma.sync is B^T, i.e. B's rows, so A and
// B tiles have the same layout and the same loader.
//
// k pairing (TF32 modes, float64 with m16n8kK): a dot product does not care in which order its
// k terms come, as long as A and B agree. So lane t feeds the mma's k columns t and t + 4 from
// the adjacent stored columns 2t and 2t + 1 of the 8-deep step, in A and in B alike, and reads
// each pair with one 8-byte (float) or 16-byte (double) shared-memory load instead of two;
// m16n8k16 does the same for its columns t + 8, t + 12 (stored 8 + 2t, 9 + 2t).
//
// SYM (C = A A^T): the grid covers only tiles (bi, bj) with bi <= bj; the epilogue writes each
// element with i <= j to C[i][j] and C[j][i], so the result is exactly symmetric.
//
// PTX ISA fragment layouts relied on (lane = %laneid, g = lane >> 2, t = lane & 3):
//   m8n8k4 .f64:   A (8x4, row):  a0 = A[g][t]
//                  B (4x8, col):  b0 = B[t][g]              (= Bt[g][t] with B = Bt^T)
//                  C (8x8):       c_i = C[g][2t + i], i = 0, 1
//   m16n8kK .f64 (K = 8, 16; sm_90): A (16xK): a_i = A[g + 8 (i % 2)][t + 4 (i / 2)], i < K/2
//                  B (Kx8, col):  b_i = B[t + 4 i][g], i < K/4
//                  C (16x8):      as m16n8k8 .tf32 below
//   m16n8k8 .tf32: A (16x8, row): a_i = A[g + 8 (i % 2)][t + 4 (i / 2)], i = 0..3
//                  B (8x8, col):  b_i = B[t + 4 i][g], i = 0, 1
//                  C (16x8):      c_i = C[g + 8 (i / 2)][2t + (i % 2)], i = 0..3
// tests/test_gram_cpu.py models these index formulas and checks that every product of a block
// tile is formed exactly once and every element of C written once.

#include "warplab.cuh"  // i64

#if !defined(WARPLAB_GRAM_TILE) || !defined(WARPLAB_GRAM_WARPS_M) || !defined(WARPLAB_GRAM_WARPS_N)
#error "WARPLAB_GRAM_TILE / WARPS_M / WARPS_N are passed by the launch plan (gram_cuda.py DEFINES)"
#endif
#if !defined(WARPLAB_GRAM_F32_WARPS_M) || !defined(WARPLAB_GRAM_F32_WARPS_N)
#error "WARPLAB_GRAM_F32_WARPS_M / N are passed by the launch plan (gram_cuda.py DEFINES)"
#endif
#if !defined(WARPLAB_GRAM_F64_BK) || !defined(WARPLAB_GRAM_TF32_BK)
#error "WARPLAB_GRAM_F64_BK / TF32_BK are passed by the launch plan (gram_cuda.py DEFINES)"
#endif
#if !defined(WARPLAB_GRAM_F64_PAD) || !defined(WARPLAB_GRAM_TF32_PAD)
#error "WARPLAB_GRAM_F64_PAD / TF32_PAD are passed by the launch plan (gram_cuda.py DEFINES)"
#endif
#ifndef WARPLAB_GRAM_GROUP
#error "WARPLAB_GRAM_GROUP is passed by the launch plan (gram_cuda.py DEFINES)"
#endif
#if !defined(WARPLAB_GRAM_F64_MMA_M) || !defined(WARPLAB_GRAM_F64_MMA_K)
#error "WARPLAB_GRAM_F64_MMA_M / K are passed by the launch plan (gram_cuda.py DEFINES)"
#endif
#ifndef WARPLAB_GRAM_MIN_BLOCKS
#error "WARPLAB_GRAM_MIN_BLOCKS is passed by the launch plan (gram_cuda.py DEFINES)"
#endif

constexpr int TILE = WARPLAB_GRAM_TILE;        // block tile edge (rows of A = rows of B)
constexpr int GROUP = WARPLAB_GRAM_GROUP;      // tile rows per group of the (a, b) block order
constexpr int MIN_BLOCKS = WARPLAB_GRAM_MIN_BLOCKS;  // __launch_bounds__: blocks per SM
static_assert(TILE % 64 == 0 && GROUP > 0 && MIN_BLOCKS > 0, "launch constants out of range");

template <int MODE> struct Shape;  // the mma instruction and slice depth of each mode
// M x N x K: the mma instruction; BK: k-slice depth; PAD: elements of padding per shared-memory
// row; WARPS_M x WARPS_N: the warps of a block over its C tile;
// Out: the element type of C; Acc: the accumulator registers (mode 1: the float64 sums of the
// promoted float32 partials, so mode 1 uses more, smaller warp tiles to stay within 128
// registers a thread).
template <> struct Shape<0> {
    static constexpr int M = WARPLAB_GRAM_F64_MMA_M, N = 8, K = WARPLAB_GRAM_F64_MMA_K;
    static constexpr int BK = WARPLAB_GRAM_F64_BK, PAD = WARPLAB_GRAM_F64_PAD;
    static_assert((M == 8 && K == 4) || (M == 16 && (K == 8 || K == 16)),
                  "DMMA shapes: m8n8k4, m16n8k8, m16n8k16");
    static constexpr int WARPS_M = WARPLAB_GRAM_WARPS_M, WARPS_N = WARPLAB_GRAM_WARPS_N;
    typedef double Out;
    typedef double Acc;
};
struct ShapeTF32 {
    static constexpr int M = 16, N = 8, K = 8, BK = WARPLAB_GRAM_TF32_BK;
    static constexpr int PAD = WARPLAB_GRAM_TF32_PAD;
    typedef float Out;
};
template <> struct Shape<1> : ShapeTF32 {
    static constexpr int WARPS_M = WARPLAB_GRAM_F32_WARPS_M, WARPS_N = WARPLAB_GRAM_F32_WARPS_N;
    typedef double Acc;
};
template <> struct Shape<2> : ShapeTF32 {
    static constexpr int WARPS_M = WARPLAB_GRAM_WARPS_M, WARPS_N = WARPLAB_GRAM_WARPS_N;
    typedef float Acc;
};

#include "gram_mma.cuh"  // cp.async, mma.sync, fragments, block_tile (sm_80+)

// C = A B^T (SYM: A A^T, B == A). T: the input element type (float or double; modes 1 and 2 take
// float). VEC: 16-byte cp.async (N a multiple of 16 / sizeof(T), A and B 16-byte aligned), else
// one cp.async per element. Dynamic shared memory: STAGES * 2 * TILE * (BK + PAD) * sizeof(T).
template <int MODE, class T, int STAGES, bool VEC, bool SYM>
__global__ void __launch_bounds__(32 * Shape<MODE>::WARPS_M * Shape<MODE>::WARPS_N, MIN_BLOCKS)
gram_mma(const T* __restrict__ A, const T* __restrict__ B,
         typename Shape<MODE>::Out* __restrict__ C, int Ma, int Mb, int N) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    typedef Shape<MODE> S;
    constexpr int WARPS_M = S::WARPS_M, WARPS_N = S::WARPS_N, THREADS = 32 * WARPS_M * WARPS_N;
    constexpr int BK = S::BK, LDS = BK + S::PAD;              // slice depth, row stride
    constexpr int WM = TILE / WARPS_M, WN = TILE / WARPS_N;   // warp tile
    constexpr int MT = WM / S::M, NT = WN / S::N;             // mma tiles per warp
    constexpr int CH = VEC ? 16 / (int)sizeof(T) : 1;         // elements per cp.async
    constexpr int COPIES = TILE * BK / CH / THREADS;          // per thread, per operand
    static_assert(MODE == 0 || sizeof(T) == 4, "TF32 modes take float input");
    static_assert(MT * S::M == WM && NT * S::N == WN, "warp tile must split into mma tiles");
    static_assert(BK % S::K == 0 && BK % CH == 0, "slice depth must split into steps and copies");
    static_assert(COPIES * CH * THREADS == TILE * BK, "a slice must split evenly over threads");
    static_assert((LDS * sizeof(T)) % 16 == 0, "shared rows must stay 16-byte aligned");
    static_assert(STAGES >= 2, "the ring needs two stages");

    extern __shared__ __align__(16) unsigned char smem_raw[];
    T* As = reinterpret_cast<T*>(smem_raw);                   // [STAGES][TILE][LDS]
    T* Bs = As + STAGES * TILE * LDS;                         // [STAGES][TILE][LDS]

    const int tiles_m = (Ma + TILE - 1) / TILE, tiles_n = (Mb + TILE - 1) / TILE;
    int bi, bj;
    block_tile<SYM>(tiles_m, tiles_n, bi, bj);
    const int row0 = bi * TILE, col0 = bj * TILE;

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, t = lane & 3;
    const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;

    // Slice kt of both tiles into ring stage `stage`: copy p of thread tid is chunk
    // idx = tid + p THREADS, row idx / (BK / CH), k offset (idx % (BK / CH)) CH.
    auto load_slice = [&](int stage, int kt) {
        const int k0 = kt * BK;
#pragma unroll
        for (int p = 0; p < COPIES; ++p) {
            const int idx = tid + p * THREADS;
            const int r = idx / (BK / CH), c = (idx % (BK / CH)) * CH;
            const bool k_ok = k0 + c < N;  // VEC: N % CH == 0, so a chunk is all in or all out
            const int ra = row0 + r, rb = col0 + r;
            const bool a_ok = k_ok && ra < Ma, b_ok = k_ok && rb < Mb;
            T* da = As + (stage * TILE + r) * LDS + c;
            T* db = Bs + (stage * TILE + r) * LDS + c;
            cp_async<CH * sizeof(T)>(da, a_ok ? A + (i64)ra * N + k0 + c : A, a_ok);
            cp_async<CH * sizeof(T)>(db, b_ok ? B + (i64)rb * N + k0 + c : B, b_ok);
        }
    };

    // Accumulators: mode 0 float64 (2 per m8n8 tile, 4 per m16n8), mode 1 the float64 sums of
    // the promoted float32 partials (4 per tile), mode 2 float32 (4 per tile).
    typedef typename S::Acc Acc;
    constexpr int PER = S::M * S::N / 32;
    Acc acc[MT][NT][PER];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < PER; ++e) acc[i][j][e] = Acc(0);

    // One slice from ring stage `stage`. Fragment reads, banks of 4 bytes (no conflicts):
    //   mode 0 m8n8k4, row g, column t, LDS = 20: 4-byte T hits banks (20g + t) mod 32, 32
    //     distinct; 8-byte T is served per half-warp (g < 4, g >= 4): bank pairs (20g + t) mod
    //     16 = 4g + t, 16 distinct;
    //   mode 0 m16n8kK, rows g (+ 8), columns 2t, 2t + 1 (+ 8p), LDS = 24: float pairs as the
    //     TF32 modes, bank pairs (24g + 2t) / 2 mod 16 = 12g + t, 16 distinct per half-warp;
    //     double pairs (16 bytes) are served per quarter-warp (two rows): 16-byte slots
    //     (12g + t) mod 8 = 4 (g % 2) + t, 8 distinct;
    //   TF32 modes, row g (+ 8), the column pair 2t, 2t + 1 as one 8-byte load, LDS = 40: per
    //     half-warp bank pairs (40g + 2t) / 2 mod 16 = 4g + t, 16 distinct.
    auto compute_slice = [&](int stage) {
        const T* as = As + (stage * TILE + wm0) * LDS;
        const T* bs = Bs + (stage * TILE + wn0) * LDS;
#pragma unroll
        for (int ks = 0; ks < BK; ks += S::K) {
            if constexpr (MODE == 0 && S::M == 16) {  // all of B, then A one row tile at a time
                double b[NT][S::K / 4];
#pragma unroll
                for (int j = 0; j < NT; ++j)
                    f64_b_fragment<S::K, LDS>(bs + j * 8 * LDS, ks, g, t, b[j]);
#pragma unroll
                for (int i = 0; i < MT; ++i) {
                    double a[S::K / 2];
                    f64_a_fragment<S::K, LDS>(as + i * 16 * LDS, ks, g, t, a);
#pragma unroll
                    for (int j = 0; j < NT; ++j) mma_f64_16<S::K>(acc[i][j], a, b[j]);
                }
            } else if constexpr (MODE == 0) {
                double a[MT], b[NT];
#pragma unroll
                for (int i = 0; i < MT; ++i) a[i] = (double)as[(i * 8 + g) * LDS + ks + t];
#pragma unroll
                for (int j = 0; j < NT; ++j) b[j] = (double)bs[(j * 8 + g) * LDS + ks + t];
#pragma unroll
                for (int i = 0; i < MT; ++i)
#pragma unroll
                    for (int j = 0; j < NT; ++j) mma_f64(acc[i][j], a[i], b[j]);
            } else if constexpr (MODE == 2) {
                float x[MT][4], y[NT][2];
                tf32_fragments<MT, NT, LDS>(as, bs, ks, g, t, x, y);
                unsigned a[MT][4], b[NT][2];
#pragma unroll
                for (int i = 0; i < MT; ++i)
#pragma unroll
                    for (int e = 0; e < 4; ++e) a[i][e] = to_tf32(x[i][e]);
#pragma unroll
                for (int j = 0; j < NT; ++j)
#pragma unroll
                    for (int e = 0; e < 2; ++e) b[j][e] = to_tf32(y[j][e]);
#pragma unroll
                for (int i = 0; i < MT; ++i)
#pragma unroll
                    for (int j = 0; j < NT; ++j) mma_tf32(acc[i][j], a[i], b[j]);
            } else {  // MODE 1: 3xTF32, promoted to float64 after every k step
                float x[MT][4], y[NT][2];
                tf32_fragments<MT, NT, LDS>(as, bs, ks, g, t, x, y);
                unsigned bh[NT][2], bl[NT][2];
#pragma unroll
                for (int j = 0; j < NT; ++j)
#pragma unroll
                    for (int e = 0; e < 2; ++e) {
                        bh[j][e] = to_tf32(y[j][e]);
                        bl[j][e] = to_tf32(y[j][e] - __uint_as_float(bh[j][e]));
                    }
#pragma unroll
                for (int i = 0; i < MT; ++i) {
                    unsigned ah[4], al[4];
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        ah[e] = to_tf32(x[i][e]);
                        al[e] = to_tf32(x[i][e] - __uint_as_float(ah[e]));
                    }
#pragma unroll
                    for (int j = 0; j < NT; ++j) {
                        float c[4] = {0.f, 0.f, 0.f, 0.f};
                        mma_tf32(c, al, bh[j]);  // the small products first
                        mma_tf32(c, ah, bl[j]);
                        mma_tf32(c, ah, bh[j]);
#pragma unroll
                        for (int e = 0; e < 4; ++e) acc[i][j][e] += (double)c[e];
                    }
                }
            }
        }
    };

    // The ring: slices 0 .. STAGES-2 in flight before the loop; at slice kt wait until it has
    // landed (at most STAGES-2 younger groups pending), one barrier (everyone is done with the
    // stage computed at kt-1), refill that stage with slice kt+STAGES-1, compute slice kt.
    const int slices = (N + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < slices) load_slice(s, s);
        cp_async_commit();
    }
    for (int kt = 0; kt < slices; ++kt) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        const int next = kt + STAGES - 1;
        if (next < slices) load_slice(next % STAGES, next);
        cp_async_commit();
        compute_slice(kt % STAGES);
    }
    cp_async_wait<0>();

    // Epilogue: element e of mma tile (i, j) sits at row g (+ 8) and column 2t (+ 1) of the tile.
    typedef typename Shape<MODE>::Out Out;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < PER; ++e) {
                const int gi = row0 + wm0 + i * S::M + g + 8 * (e / 2);
                const int gj = col0 + wn0 + j * S::N + 2 * t + (e % 2);
                if (gi >= Ma || gj >= Mb) continue;
                const Out v = (Out)acc[i][j][e];
                if constexpr (SYM) {
                    if (gi > gj) continue;
                    C[(i64)gi * Mb + gj] = v;
                    if (gi != gj) C[(i64)gj * Mb + gi] = v;
                } else {
                    C[(i64)gi * Mb + gj] = v;
                }
            }
#elif defined(__CUDA_ARCH__)
    __trap();  // the host refuses devices below sm_80 before launching
#endif
}

// Explicit instantiations for the nvcc compile check (NVRTC instantiates what the host names).
#ifdef WARPLAB_NVCC_CHECK
#define WARPLAB_GRAM(MODE, T, ST, V, SY)                                                       \
    template __global__ void gram_mma<MODE, T, ST, V, SY>(                                   \
        const T*, const T*, typename Shape<MODE>::Out*, int, int, int);
#define WARPLAB_GRAM_ALL(MODE, T)                                                              \
    WARPLAB_GRAM(MODE, T, 3, true, true) WARPLAB_GRAM(MODE, T, 3, false, false)               \
    WARPLAB_GRAM(MODE, T, 2, true, false) WARPLAB_GRAM(MODE, T, 2, false, true)
WARPLAB_GRAM(0, double, 4, true, true)  // the 4-deep rings of some configurations
WARPLAB_GRAM(2, float, 4, true, true)
WARPLAB_GRAM_ALL(0, double)
WARPLAB_GRAM_ALL(0, float)
WARPLAB_GRAM_ALL(1, float)
WARPLAB_GRAM_ALL(2, float)
#endif

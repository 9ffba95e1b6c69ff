// warplab matmul: C = A B for row-major A (M x K), B (K x N), C (M x N). Compiled by NVRTC
// (cupy.RawModule, -std=c++17). T is float or double; every kernel handles any M, N, K: loads
// past an edge read zeros, stores past an edge are skipped. Offsets are 64-bit; the host keeps
// each of M, N, K below 2^31.

typedef long long i64;

// =============================================================================================
// The GPU lecture's two kernels (blocks of 16 x 16 threads, one thread per element of C, a 2-D
// grid: x runs along the columns of C, y along the rows).
// =============================================================================================

constexpr int LECTURE_TILE = 16;

// Lecture kernel #1: every thread reads its row of A and its column of B from global memory.
template <class T>
__global__ void matmul_naive(const T* __restrict__ A, const T* __restrict__ B,
                             T* __restrict__ C, int M, int N, int K) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x;  // column of C
    const int y = blockIdx.y * blockDim.y + threadIdx.y;  // row of C
    if (x >= N || y >= M) return;
    const T* a = A + (i64)y * K;
    T tmp = 0;
    for (int k = 0; k < K; ++k) tmp += a[k] * B[(i64)k * N + x];
    C[(i64)y * N + x] = tmp;
}

// Lecture kernel #2: the block stages 16 x 16 tiles of A and B in shared memory and every thread
// reads them 16 times from there (zero-filled past the edges, so any size works).
template <class T>
__global__ void matmul_tiled_smem16(const T* __restrict__ A, const T* __restrict__ B,
                                    T* __restrict__ C, int M, int N, int K) {
    __shared__ T As[LECTURE_TILE][LECTURE_TILE];
    __shared__ T Bs[LECTURE_TILE][LECTURE_TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * LECTURE_TILE + ty, col = blockIdx.x * LECTURE_TILE + tx;
    T csub = 0;
    for (int b = 0; b < K; b += LECTURE_TILE) {
        As[ty][tx] = (row < M && b + tx < K) ? A[(i64)row * K + b + tx] : T(0);
        Bs[ty][tx] = (b + ty < K && col < N) ? B[(i64)(b + ty) * N + col] : T(0);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < LECTURE_TILE; ++k) csub += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[(i64)row * N + col] = csub;
}

// =============================================================================================
// Register tiling. A block of THREADS = 32 * WARPS_M * WARPS_N threads computes a BM x BN tile of
// C, stepping through K in slices of BK:
//   * each thread owns TM x TN = (4 SUB_M) x (4 SUB_N) accumulators: SUB_M x SUB_N sub-tiles of
//     4 x 4, spaced a warp's lane span apart. The 32 lanes of a warp form a 4 x 8 grid, so one
//     16-byte shared-memory read per operand and sub-tile serves a whole warp in one wavefront
//     (A: 4 distinct addresses broadcast to 8 lanes each, B: 8 consecutive 16-byte words);
//   * per k step a thread reads TM + TN values from shared memory and issues TM * TN FMAs;
//   * the A slice is stored transposed (As[k][m]) so that a thread's TM values of one k are
//     contiguous; its rows are padded by 16 bytes so the transposing stores do not collide;
//   * global loads are 16-byte vectors (VEC: K and N multiples of 4, pointers 16-byte aligned;
//     else four checked scalar loads) of the next slice, issued into registers before the current
//     slice is computed and stored into the other shared-memory buffer after it (double
//     buffering, one __syncthreads per slice);
//   * blocks walk the tiles of C in groups of GROUP_M tile rows, so that the B panels a wave of
//     blocks reads are shared in L2.
// =============================================================================================

template <class T> struct Vec4;  // four consecutive elements, moved with 16-byte accesses

template <> struct Vec4<float> {
    float v[4];
    __device__ __forceinline__ static Vec4 load(const float* p) {
        const float4 x = *reinterpret_cast<const float4*>(p);
        return {{x.x, x.y, x.z, x.w}};
    }
    __device__ __forceinline__ void store(float* p) const {
        *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
    }
};

template <> struct Vec4<double> {
    double v[4];
    __device__ __forceinline__ static Vec4 load(const double* p) {
        const double2 x = reinterpret_cast<const double2*>(p)[0];
        const double2 y = reinterpret_cast<const double2*>(p)[1];
        return {{x.x, x.y, y.x, y.y}};
    }
    __device__ __forceinline__ void store(double* p) const {
        reinterpret_cast<double2*>(p)[0] = make_double2(v[0], v[1]);
        reinterpret_cast<double2*>(p)[1] = make_double2(v[2], v[3]);
    }
};

// Four elements p[0..3] of which the first `avail` exist (zeros for the rest). VEC: all four or
// none exist and p is 16-byte aligned.
template <class T, bool VEC>
__device__ __forceinline__ Vec4<T> load4(const T* p, int avail) {
    if constexpr (VEC) {
        return avail > 0 ? Vec4<T>::load(p) : Vec4<T>{{T(0), T(0), T(0), T(0)}};
    } else {
        Vec4<T> r;
#pragma unroll
        for (int j = 0; j < 4; ++j) r.v[j] = j < avail ? p[j] : T(0);
        return r;
    }
}

#if !defined(WARPLAB_MATMUL_LANES_M) || !defined(WARPLAB_MATMUL_LANES_N)
#error "WARPLAB_MATMUL_LANES_M/N are passed by the launch plan (cuda.py DEFINES)"
#endif
// a warp's lanes as a LANES_M x LANES_N grid over its C tile
constexpr int LANES_M = WARPLAB_MATMUL_LANES_M, LANES_N = WARPLAB_MATMUL_LANES_N;
#ifndef WARPLAB_MATMUL_GROUP_M
#error "WARPLAB_MATMUL_GROUP_M is passed by the launch plan (-DWARPLAB_MATMUL_GROUP_M=..., cuda.py DEFINES)"
#endif
constexpr int GROUP_M = WARPLAB_MATMUL_GROUP_M;  // tile rows per group of the block order

template <class T, int BK, int WARPS_M, int WARPS_N, int SUB_M, int SUB_N, int MIN_BLOCKS,
          bool VEC>
__global__ void __launch_bounds__(32 * WARPS_M * WARPS_N, MIN_BLOCKS)
matmul_regtile(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,
               int M, int N, int K) {
    constexpr int THREADS = 32 * WARPS_M * WARPS_N;
    constexpr int TM = 4 * SUB_M, TN = 4 * SUB_N;            // thread tile
    constexpr int WM = LANES_M * TM, WN = LANES_N * TN;      // warp tile
    constexpr int BM = WARPS_M * WM, BN = WARPS_N * WN;      // block tile
    constexpr int PAD = 16 / sizeof(T);                      // 16 bytes per row of As
    constexpr int A_VECS = BM * BK / 4 / THREADS;            // 4-element loads per thread
    constexpr int B_VECS = BK * BN / 4 / THREADS;
    static_assert(BK % 4 == 0, "BK must be a multiple of 4");
    static_assert(A_VECS * 4 * THREADS == BM * BK, "A slice must split evenly over threads");
    static_assert(B_VECS * 4 * THREADS == BK * BN, "B slice must split evenly over threads");

    __shared__ __align__(16) T As[2][BK][BM + PAD];
    __shared__ __align__(16) T Bs[2][BK][BN];

    // Grouped tile order: GROUP_M consecutive tile rows share each B column panel.
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int per_group = GROUP_M * tiles_n;
    const int first_m = (blockIdx.x / per_group) * GROUP_M;
    const int rows_here = min(tiles_m - first_m, GROUP_M);
    const int in_group = blockIdx.x % per_group;
    const int bm0 = (first_m + in_group % rows_here) * BM;
    const int bn0 = (in_group / rows_here) * BN;

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int tm0 = (warp / WARPS_N) * WM + (lane / LANES_N) * 4;  // first row in the tile
    const int tn0 = (warp % WARPS_N) * WN + (lane % LANES_N) * 4;  // first column

    // What this thread loads of every slice: A_VECS runs of 4 along k (kept as pointers that
    // advance by BK, the elements left in their row, and their transposed place in As) and
    // B_VECS runs of 4 along n (pointers advancing by BK rows, rows and columns left, place).
    const T* a_src[A_VECS];
    int a_left[A_VECS], a_dst[A_VECS];
#pragma unroll
    for (int p = 0; p < A_VECS; ++p) {
        const int idx = tid + p * THREADS, row = idx / (BK / 4), k = (idx % (BK / 4)) * 4;
        a_left[p] = bm0 + row < M ? K - k : 0;
        a_src[p] = A + (i64)min(bm0 + row, M - 1) * K + k;
        a_dst[p] = k * (BM + PAD) + row;
    }
    const T* b_src[B_VECS];
    int b_rows[B_VECS], b_cols[B_VECS], b_dst[B_VECS];
#pragma unroll
    for (int p = 0; p < B_VECS; ++p) {
        const int idx = tid + p * THREADS, k = idx / (BN / 4), n = (idx % (BN / 4)) * 4;
        b_rows[p] = K - k;
        b_cols[p] = N - (bn0 + n);
        b_src[p] = B + (i64)k * N + min(bn0 + n, N - 1);
        b_dst[p] = k * BN + n;
    }
    const i64 b_step = (i64)BK * N;

    Vec4<T> ra[A_VECS], rb[B_VECS];
    auto load_slice = [&](int k0) {  // the slice starting at k0; pointers then move to the next
#pragma unroll
        for (int p = 0; p < A_VECS; ++p) {
            ra[p] = load4<T, VEC>(a_src[p], a_left[p] - k0);
            a_src[p] += BK;
        }
#pragma unroll
        for (int p = 0; p < B_VECS; ++p) {
            rb[p] = load4<T, VEC>(b_src[p], b_rows[p] > k0 ? b_cols[p] : 0);
            b_src[p] += b_step;
        }
    };
    auto store_slice = [&](int buf) {
        T* as = &As[buf][0][0];
#pragma unroll
        for (int p = 0; p < A_VECS; ++p)
#pragma unroll
            for (int j = 0; j < 4; ++j) as[a_dst[p] + j * (BM + PAD)] = ra[p].v[j];
#pragma unroll
        for (int p = 0; p < B_VECS; ++p) rb[p].store(&Bs[buf][0][0] + b_dst[p]);
    };

    T acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = T(0);

    const int slices = (K + BK - 1) / BK;
    load_slice(0);
    store_slice(0);
    __syncthreads();
    for (int s = 0; s < slices; ++s) {
        const int cur = s & 1;
        // The next slice (zeros past the end) is in flight while this one computes; loading
        // it unconditionally keeps the compiler from sinking the loads below the FMAs.
        load_slice((s + 1) * BK);
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            T a[TM], b[TN];
#pragma unroll
            for (int u = 0; u < SUB_M; ++u) {
                const Vec4<T> v = Vec4<T>::load(&As[cur][k][tm0 + u * LANES_M * 4]);
#pragma unroll
                for (int i = 0; i < 4; ++i) a[u * 4 + i] = v.v[i];
            }
#pragma unroll
            for (int u = 0; u < SUB_N; ++u) {
                const Vec4<T> v = Vec4<T>::load(&Bs[cur][k][tn0 + u * LANES_N * 4]);
#pragma unroll
                for (int j = 0; j < 4; ++j) b[u * 4 + j] = v.v[j];
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
        }
        store_slice(cur ^ 1);
        __syncthreads();
    }

#pragma unroll
    for (int u = 0; u < SUB_M; ++u)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int row = bm0 + tm0 + u * LANES_M * 4 + i;
            if (row >= M) continue;
            T* c = C + (i64)row * N;
#pragma unroll
            for (int w = 0; w < SUB_N; ++w) {
                const int col = bn0 + tn0 + w * LANES_N * 4;
                const T* r = &acc[u * 4 + i][w * 4];
                if constexpr (VEC) {
                    if (col < N) Vec4<T>{{r[0], r[1], r[2], r[3]}}.store(c + col);
                } else {
#pragma unroll
                    for (int j = 0; j < 4; ++j)
                        if (col + j < N) c[col + j] = r[j];
                }
            }
        }
}

#ifdef WARPLAB_NVCC_CHECK
#define WARPLAB_LECTURE(T)                                                                     \
    template __global__ void matmul_naive<T>(const T*, const T*, T*, int, int, int);           \
    template __global__ void matmul_tiled_smem16<T>(const T*, const T*, T*, int, int, int);
WARPLAB_LECTURE(float)
WARPLAB_LECTURE(double)
#define WARPLAB_REGTILE(T, BK, WM, WN, SM, SN, MB, V)                                          \
    template __global__ void matmul_regtile<T, BK, WM, WN, SM, SN, MB, V>(                     \
        const T*, const T*, T*, int, int, int);
WARPLAB_REGTILE(float, 16, 2, 2, 2, 2, 3, true)   // regtile_64x128_8x8
WARPLAB_REGTILE(float, 16, 2, 2, 2, 2, 3, false)
WARPLAB_REGTILE(float, 16, 4, 2, 1, 1, 2, true)   // regtile_64x64_4x4
WARPLAB_REGTILE(float, 16, 4, 2, 1, 1, 2, false)
WARPLAB_REGTILE(double, 16, 4, 2, 1, 1, 2, true)
WARPLAB_REGTILE(double, 16, 4, 2, 1, 1, 2, false)
#endif

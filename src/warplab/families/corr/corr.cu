// Pearson correlation kernels (corr family): row normalisation, the report's one-thread-per-pair
// coefficient, the GPU lecture's shared-memory tiles on normalised rows and the finishing of a
// coefficient block. Launch constants come in as -D options from cuda.py (DEFINES); the
// tensor-core Gram products are gram.cu's.
#include "warplab.cuh"

#if !defined(CORR_NORM_BLOCK) || !defined(CORR_TILE) || !defined(CORR_PAIR_BLOCK)
#error "corr.cu needs -DCORR_NORM_BLOCK, -DCORR_TILE and -DCORR_PAIR_BLOCK (see cuda.py)"
#endif

#include "corr_finish.cuh"

struct BlockSum {
    __device__ static double op(double a, double b) { return a + b; }
};
struct BlockMax {  // of values >= 0 (or NaN-free): 0 is the identity
    __device__ static double op(double a, double b) { return fmax(a, b); }
};

// OP over v of the whole block (every thread gets it): warp shuffles, one word per warp in
// scratch (33 doubles), the first warp combines. CORR_NORM_BLOCK is a multiple of 32.
template <class OP>
__device__ double block_reduce(double v, double* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int o = 16; o > 0; o >>= 1) v = OP::op(v, __shfl_down_sync(0xffffffffu, v, o));
    __syncthreads();  // scratch may still be read by a previous call
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < CORR_NORM_BLOCK / 32 ? scratch[lane] : 0.0;
        for (int o = 16; o > 0; o >>= 1) v = OP::op(v, __shfl_down_sync(0xffffffffu, v, o));
        if (lane == 0) scratch[32] = v;
    }
    __syncthreads();
    return scratch[32];
}

// One block per row (grid-stride over rows): z = (x - mean) / sqrt(sum (x - mean)^2) in
// float64, stored as TOut. Sums run over d = x - x[0] (exact for float32 input), so a constant
// row centres to exact zeros; a row whose norm is 0 or not finite gets NaN and valid = false.
// extent (may be null): per row max |z| and |z|_1 of the stored values (0, 0 for an invalid
// row), what the int8 slices' a-priori bound needs, for free in the storing pass.
template <class TIn, class TOut>
__global__ void __launch_bounds__(CORR_NORM_BLOCK)
corr_normalise_rows(const TIn* __restrict__ x, TOut* __restrict__ z, bool* __restrict__ valid,
                    double* __restrict__ extent, i64 m, i64 n) {
    __shared__ double scratch[33];
    for (i64 row = blockIdx.x; row < m; row += gridDim.x) {
        const TIn* xr = x + row * n;
        TOut* zr = z + row * n;
        const double x0 = (double)xr[0];
        double s = 0.0;
        for (i64 k = threadIdx.x; k < n; k += CORR_NORM_BLOCK) s += (double)xr[k] - x0;
        const double mean_d = block_reduce<BlockSum>(s, scratch) / (double)n;
        double q = 0.0;
        for (i64 k = threadIdx.x; k < n; k += CORR_NORM_BLOCK) {
            const double c = ((double)xr[k] - x0) - mean_d;
            q += c * c;
        }
        const double norm = sqrt(block_reduce<BlockSum>(q, scratch));
        const bool ok = norm - norm == 0.0 && norm > 0.0;  // finite and non-zero
        const double inv = ok ? 1.0 / norm : corr_nan();
        double mx = 0.0, l1 = 0.0;
        for (i64 k = threadIdx.x; k < n; k += CORR_NORM_BLOCK) {
            const TOut v = (TOut)((((double)xr[k] - x0) - mean_d) * inv);
            zr[k] = v;
            mx = fmax(mx, fabs((double)v));
            l1 += fabs((double)v);
        }
        if (threadIdx.x == 0) valid[row] = ok;
        if (extent != nullptr) {  // uniform over the block: the barriers are not split
            const double row_l1 = block_reduce<BlockSum>(l1, scratch);
            const double row_max = block_reduce<BlockMax>(mx, scratch);
            if (threadIdx.x == 0) {
                extent[2 * row] = ok ? row_max : 0.0;
                extent[2 * row + 1] = ok ? row_l1 : 0.0;
            }
        }
    }
}

// The Pearson report's steps 3-5 literally: one thread per pair (i, j), i < j, of the block of
// rows r0 .. r0+rows-1 and columns c0 .. c0+cols-1 (2-D grid of CORR_PAIR_BLOCK^2 threads, rows
// on grid y). The numerator sum (x_ik - mean_i)(x_jk - mean_j) from the precomputed means, then
// divided by the two centred norms. Pairs with i >= j are left to the caller (symmetry).
__global__ void __launch_bounds__(CORR_PAIR_BLOCK * CORR_PAIR_BLOCK)
corr_pairwise_direct(const double* __restrict__ x, const double* __restrict__ mean,
                     const double* __restrict__ norm, double* __restrict__ out, i64 n,
                     int r0, int rows, int c0, int cols) {
    const int bi = blockIdx.y * CORR_PAIR_BLOCK + threadIdx.y;
    const int bj = blockIdx.x * CORR_PAIR_BLOCK + threadIdx.x;
    if (bi >= rows || bj >= cols) return;
    const i64 i = (i64)r0 + bi, j = (i64)c0 + bj;
    if (i >= j) return;
    const double* xi = x + i * n;
    const double* xj = x + j * n;
    const double mi = mean[i], mj = mean[j];
    double s = 0.0;
    for (i64 k = 0; k < n; ++k) s += (xi[k] - mi) * (xj[k] - mj);
    out[(i64)bi * cols + bj] = s / (norm[i] * norm[j]);
}

// The GPU lecture's shared-memory tiles on normalised rows: c[i][j] = sum_k a[i][k] * b[j][k]
// for a (rows x n) and b (cols x n), both row-major (b's rows loaded along k, coalesced).
// CORR_TILE x CORR_TILE threads per tile of c; accumulation in T (double for precision float64,
// float otherwise). symmetric != 0 (a == b): tiles below the diagonal return at once and the
// caller mirrors the upper triangle.
template <class T>
__global__ void __launch_bounds__(CORR_TILE * CORR_TILE)
corr_tiled_smem(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int rows,
                int cols, i64 n, int symmetric) {
    if (symmetric && blockIdx.y > blockIdx.x) return;  // whole block: no barrier is split
    __shared__ T as[CORR_TILE][CORR_TILE + 1];
    __shared__ T bs[CORR_TILE][CORR_TILE + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row0 = blockIdx.y * CORR_TILE, col0 = blockIdx.x * CORR_TILE;
    const int ra = row0 + ty;   // row of a this thread loads
    const int rb = col0 + ty;   // row of b this thread loads
    T acc = 0;
    for (i64 k0 = 0; k0 < n; k0 += CORR_TILE) {
        const i64 k = k0 + tx;
        as[ty][tx] = (ra < rows && k < n) ? a[(i64)ra * n + k] : (T)0;
        bs[ty][tx] = (rb < cols && k < n) ? b[(i64)rb * n + k] : (T)0;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < CORR_TILE; ++kk) acc += as[ty][kk] * bs[tx][kk];
        __syncthreads();
    }
    const int i = row0 + ty, j = col0 + tx;
    if (i < rows && j < cols) c[(i64)i * cols + j] = acc;
}

// The finishing of a block b of coefficients (rows x cols at (r0, c0) of the matrix; element
// (i, j) at b[i * srow + j * scol]), in place, as tiles.finish did with CuPy operations: the
// rule of corr_finish.cuh per element. Rows on grid y, columns on grid x, both grid-stride.
template <class T>
__global__ void __launch_bounds__(CORR_NORM_BLOCK)
corr_finish(T* __restrict__ b, const bool* __restrict__ valid, i64 rows, i64 cols, i64 srow,
            i64 scol, i64 r0, i64 c0) {
    for (i64 i = blockIdx.y; i < rows; i += gridDim.y) {
        const i64 gi = r0 + i;
        const bool row_ok = valid[gi];
        for (i64 j = (i64)blockIdx.x * CORR_NORM_BLOCK + threadIdx.x; j < cols;
             j += (i64)gridDim.x * CORR_NORM_BLOCK) {
            const i64 gj = c0 + j;
            T* p = b + i * srow + j * scol;
            const T v = *p;
            *p = corr_finished(v, row_ok && valid[gj], gi == gj);
        }
    }
}

#ifdef WARPLAB_NVCC_CHECK
template __global__ void corr_finish<float>(float*, const bool*, i64, i64, i64, i64, i64, i64);
template __global__ void corr_finish<double>(double*, const bool*, i64, i64, i64, i64, i64, i64);
#define CORR_NORMALISE_INSTANCE(TI, TO) \
    template __global__ void corr_normalise_rows<TI, TO>(const TI*, TO*, bool*, double*, i64, i64);
CORR_NORMALISE_INSTANCE(float, float)
CORR_NORMALISE_INSTANCE(float, double)
CORR_NORMALISE_INSTANCE(double, float)
CORR_NORMALISE_INSTANCE(double, double)
template __global__ void corr_tiled_smem<float>(const float*, const float*, float*, int, int, i64,
                                                int);
template __global__ void corr_tiled_smem<double>(const double*, const double*, double*, int, int,
                                                 i64, int);
#endif

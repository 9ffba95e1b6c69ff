// corrcoef of a small matrix in one launch (corr family, small.py): one block normalises every
// series into shared memory, forms each coefficient from two normalised rows and finishes it
// (NaN for invalid series, 1 on the diagonal, clipped to [-1, 1]), and reports whether every
// series was valid through a word the host reads after its synchronisation. Launch constants
// come in as -D options from small.py (DEFINES).
#include "warplab.cuh"
#include "corr_finish.cuh"

#if !defined(CORR_SMALL_BLOCK) || !defined(CORR_SMALL_MAX_M) || !defined(CORR_SMALL_ELEMS)
#error "small.cu needs -DCORR_SMALL_BLOCK, -DCORR_SMALL_MAX_M and -DCORR_SMALL_ELEMS (small.py)"
#endif

__device__ __forceinline__ double small_warp_sum(double v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;  // every lane holds the sum
}

// x: m series of n values, element (i, k) at x[i * srow + k * scol] (any layout, strides in
// elements); r: the m x m float64 result, C order; all_valid (may be null): 1 when every
// series is valid, else 0, written by thread 0 (host memory the device can address, or device
// memory). Needs m <= CORR_SMALL_MAX_M and m * n <= CORR_SMALL_ELEMS; one block.
// The arithmetic is corr_normalise_rows' (sums of d = x - x[0] in float64, so a constant series
// centres to exact zeros; norm 0 or not finite: invalid), then corr_finish.cuh's rule; each
// coefficient sums z_i[k] z_j[k] in k order, so r[i][j] and r[j][i] are the same bits.
template <class T>
__global__ void __launch_bounds__(CORR_SMALL_BLOCK)
corr_small(const T* __restrict__ x, double* __restrict__ r, int* __restrict__ all_valid, int m,
           int n, i64 srow, i64 scol) {
    __shared__ double z[CORR_SMALL_ELEMS + CORR_SMALL_MAX_M];
    __shared__ int ok[CORR_SMALL_MAX_M];
    const int ld = n | 1;  // an odd row stride: lanes reading rows j, j + 1, ... hit other banks
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int i = warp; i < m; i += CORR_SMALL_BLOCK / 32) {
        const T* xi = x + (i64)i * srow;
        const double x0 = (double)xi[0];
        double s = 0.0;
        for (int k = lane; k < n; k += 32) s += (double)xi[(i64)k * scol] - x0;
        const double mean_d = small_warp_sum(s) / (double)n;
        double q = 0.0;
        for (int k = lane; k < n; k += 32) {
            const double c = ((double)xi[(i64)k * scol] - x0) - mean_d;
            q += c * c;
        }
        const double norm = sqrt(small_warp_sum(q));
        const bool valid = norm - norm == 0.0 && norm > 0.0;  // finite and non-zero
        const double inv = valid ? 1.0 / norm : 0.0;
        for (int k = lane; k < n; k += 32)
            z[i * ld + k] = (((double)xi[(i64)k * scol] - x0) - mean_d) * inv;
        if (lane == 0) ok[i] = valid;
    }
    __syncthreads();
    for (int e = threadIdx.x; e < m * m; e += CORR_SMALL_BLOCK) {
        const int i = e / m, j = e - i * m;
        const bool valid = ok[i] && ok[j];
        double acc = 0.0;
        if (valid && i != j) {
            const double* zi = z + i * ld;
            const double* zj = z + j * ld;
            for (int k = 0; k < n; ++k) acc = fma(zi[k], zj[k], acc);
        }
        r[e] = corr_finished(acc, valid, i == j);
    }
    if (threadIdx.x == 0 && all_valid != nullptr) {
        int every = 1;
        for (int i = 0; i < m; ++i) every &= ok[i];
        *all_valid = every;
    }
}

#ifdef WARPLAB_NVCC_CHECK
template __global__ void corr_small<float>(const float*, double*, int*, int, int, i64, i64);
template __global__ void corr_small<double>(const double*, double*, int*, int, int, i64, i64);
#endif

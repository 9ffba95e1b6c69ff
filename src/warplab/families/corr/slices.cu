// int8 slices of normalised rows (the Ozaki scheme, corrcoef variant int8_slices): the per-row
// statistics that choose the number of slices, the split into int8 digits, and the combine of
// cuBLAS's exact int32 level products into float64 coefficients. The arithmetic is the one of
// slices.py (split_digits, row_stats, combine), operation for operation; launch constants come
// in as -D options from slices_cuda.py (DEFINES).
#include "warplab.cuh"

#if !defined(SLICES_STATS_BLOCK) || !defined(SLICES_SPLIT_BLOCK) || !defined(SLICES_SPLIT_VEC) || \
    !defined(SLICES_COMBINE_TILE) || !defined(SLICES_COMBINE_ROWS) || !defined(SLICES_DIGITS) || \
    !defined(SLICES_STATS)
#error "slices.cu needs the -D constants of slices_cuda.py (DEFINES)"
#endif
#if SLICES_DIGITS != 8 || SLICES_STATS != 2 * SLICES_DIGITS + 2 || SLICES_SPLIT_VEC != 8
#error "slices.cu: 8 digits of 8 bits (Y = rint(y 2^56)), 18 statistics, 8 values per thread"
#endif

#define SLICES_WARPS (SLICES_STATS_BLOCK / 32)

// Y = rint(z / c 2^56): |z / c| <= 127 (1 + 2u), so |Y| < 2^63.
__device__ __forceinline__ i64 slices_fixed(double z, double c) {
    return __double2ll_rn((z / c) * 0x1p56);
}

// The balanced base-256 digits of y (top first): d[0] in [-127, 127], d[1..7] in [-128, 127].
// With tail != nullptr also T(r) = (Y - H_r 256^(8-r)) 2^-56 for r = 1..7 (H_r: the top r
// digits), the value of the digits after r.
__device__ __forceinline__ void slices_digits(i64 y, int d[SLICES_DIGITS], double* tail) {
    i64 h = y;
#pragma unroll
    for (int t = SLICES_DIGITS - 1; t >= 1; --t) {
        const i64 low = ((h + 128) & 255) - 128;
        d[t] = (int)low;
        h = (h - low) >> 8;  // h - low is a multiple of 256: the shift divides exactly
        if (tail) tail[t - 1] = (double)(y - h * ((i64)1 << (8 * (SLICES_DIGITS - t)))) * 0x1p-56;
    }
    d[0] = (int)h;
}

// Sum of NV values over the block, in place in v (every thread gets the sums).
template <int NV>
__device__ void slices_block_sum(double* v, double (*scratch)[NV], double* shared_out) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int i = 0; i < NV; ++i)
        for (int o = 16; o > 0; o >>= 1) v[i] += __shfl_down_sync(0xffffffffu, v[i], o);
    __syncthreads();  // scratch and shared_out may still be read by a previous call
    if (lane == 0)
#pragma unroll
        for (int i = 0; i < NV; ++i) scratch[warp][i] = v[i];
    __syncthreads();
    if (threadIdx.x < NV) {
        double s = 0.0;
        for (int w = 0; w < SLICES_WARPS; ++w) s += scratch[w][threadIdx.x];
        shared_out[threadIdx.x] = s;
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < NV; ++i) v[i] = shared_out[i];
}

// One block per row (grid-stride): c = max|z| / 127 (0 for an invalid row), then per value the
// 8 digits and 7 tails; writes stats[row] = c |D_t|_2 (t = 1..8), c |T(r)|_2 (r = 1..8; T(8) =
// 0), c, |z|_1 (slices.row_stats). Two passes over the row, the second mostly from cache; one
// when extent (the normalisation's per-row max |z| and |z|_1) is given.
__global__ void __launch_bounds__(SLICES_STATS_BLOCK)
slices_row_stats(const double* __restrict__ z, const bool* __restrict__ valid,
                 const double* __restrict__ extent, double* __restrict__ stats, i64 m, i64 n) {
    __shared__ double scratch[SLICES_WARPS][2 * SLICES_DIGITS];
    __shared__ double sums[2 * SLICES_DIGITS];
    for (i64 row = blockIdx.x; row < m; row += gridDim.x) {
        const double* zr = z + row * n;
        double v[2 * SLICES_DIGITS];
#pragma unroll
        for (int i = 0; i < 2 * SLICES_DIGITS; ++i) v[i] = 0.0;
        double mx = 0.0, l1 = 0.0;
        if (extent != nullptr) {  // the normalisation's max |z| and |z|_1 (uniform branch)
            mx = extent[2 * row];
            l1 = extent[2 * row + 1];
        } else {
            for (i64 k = threadIdx.x; k < n; k += SLICES_STATS_BLOCK) {
                const double a = fabs(zr[k]);
                v[0] = fmax(v[0], a);
                v[1] += a;
            }
            for (int o = 16; o > 0; o >>= 1)
                v[0] = fmax(v[0], __shfl_down_sync(0xffffffffu, v[0], o));
            // the max through the sum helper: max over warps of the warp maxima (v[0] >= 0)
            __syncthreads();
            if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5][0] = v[0];
            __syncthreads();
            for (int w = 0; w < SLICES_WARPS; ++w) mx = fmax(mx, scratch[w][0]);
            v[0] = 0.0;
            slices_block_sum<2 * SLICES_DIGITS>(v, scratch, sums);
            l1 = v[1];
        }
        const bool ok = valid[row] && mx > 0.0 && mx - mx == 0.0;
        const double c = ok ? mx / 127.0 : 0.0;
#pragma unroll
        for (int i = 0; i < 2 * SLICES_DIGITS; ++i) v[i] = 0.0;
        if (ok) {
            for (i64 k = threadIdx.x; k < n; k += SLICES_STATS_BLOCK) {
                int d[SLICES_DIGITS];
                double tail[SLICES_DIGITS - 1];
                slices_digits(slices_fixed(zr[k], c), d, tail);
#pragma unroll
                for (int t = 0; t < SLICES_DIGITS; ++t) v[t] += (double)(d[t] * d[t]);
#pragma unroll
                for (int r = 0; r < SLICES_DIGITS - 1; ++r) v[SLICES_DIGITS + r] += tail[r] * tail[r];
            }
        }
        slices_block_sum<2 * SLICES_DIGITS>(v, scratch, sums);
        if (threadIdx.x == 0) {
            double* out = stats + row * SLICES_STATS;
            for (int i = 0; i < 2 * SLICES_DIGITS; ++i) out[i] = c * sqrt(v[i]);
            out[2 * SLICES_DIGITS] = c;
            out[2 * SLICES_DIGITS + 1] = ok ? l1 : 0.0;
        }
    }
}

// What one read-back brings to the host (one block): out[j] = max over the m rows of a[row][j]
// (j < cols, values >= 0: statistics or the normalisation's extent), out[cols] = 1 when every
// valid[row], else 0.
__global__ void __launch_bounds__(SLICES_STATS_BLOCK)
slices_column_max(const double* __restrict__ a, const bool* __restrict__ valid,
                  double* __restrict__ out, i64 m, int cols) {
    __shared__ double scratch[SLICES_WARPS][2 * SLICES_DIGITS];
    for (int j0 = 0; j0 <= cols; j0 += 2 * SLICES_DIGITS) {  // the flag is one more column
        double v[2 * SLICES_DIGITS];
#pragma unroll
        for (int i = 0; i < 2 * SLICES_DIGITS; ++i) v[i] = 0.0;
        for (i64 row = threadIdx.x; row < m; row += SLICES_STATS_BLOCK) {
#pragma unroll
            for (int i = 0; i < 2 * SLICES_DIGITS; ++i) {
                const int j = j0 + i;
                if (j < cols) v[i] = fmax(v[i], a[row * cols + j]);
                else if (j == cols) v[i] = fmax(v[i], valid[row] ? 0.0 : 1.0);  // any invalid
            }
        }
        // block max through warp shuffles and the scratch rows
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
        for (int i = 0; i < 2 * SLICES_DIGITS; ++i)
            for (int o = 16; o > 0; o >>= 1)
                v[i] = fmax(v[i], __shfl_down_sync(0xffffffffu, v[i], o));
        __syncthreads();
        if (lane == 0)
#pragma unroll
            for (int i = 0; i < 2 * SLICES_DIGITS; ++i) scratch[warp][i] = v[i];
        __syncthreads();
        if (threadIdx.x < 2 * SLICES_DIGITS) {
            double mx = 0.0;
            for (int w = 0; w < SLICES_WARPS; ++w) mx = fmax(mx, scratch[w][threadIdx.x]);
            const int j = j0 + (int)threadIdx.x;
            if (j < cols) out[j] = mx;
            else if (j == cols) out[j] = mx > 0.0 ? 0.0 : 1.0;
        }
    }
}

// The slices: thread (row, g) splits the 8 values k = 8g .. 8g+7 of the padded row (zeros for
// k >= n, rows >= m and rows with c == 0) and stores the first s digits of each as 8 bytes per
// slice: f[row][chunk][t][k'] (slice t = 0..s-1) and r[row][chunk][s-1-t][k'], k = chunk kc + k',
// rows of ldq = nc s kc bytes. kc is a multiple of 16, so 8 values never straddle a chunk.
__global__ void __launch_bounds__(SLICES_SPLIT_BLOCK)
slices_split(const double* __restrict__ z, const double* __restrict__ c, signed char* __restrict__ f,
             signed char* __restrict__ r, i64 m, i64 n, i64 rows, int s, i64 kc, i64 nc) {
    const i64 g = (i64)blockIdx.x * SLICES_SPLIT_BLOCK + threadIdx.x;
    const i64 k0 = g * SLICES_SPLIT_VEC;
    if (k0 >= nc * kc) return;
    const i64 chunk = k0 / kc, kk = k0 - chunk * kc, ldq = nc * s * kc;
    for (i64 row = blockIdx.y; row < rows; row += gridDim.y) {
        const double cr = row < m ? c[row] : 0.0;
        u64 word[SLICES_DIGITS];
#pragma unroll
        for (int t = 0; t < SLICES_DIGITS; ++t) word[t] = 0;
        if (cr > 0.0) {
            const double* zr = z + row * n;
#pragma unroll
            for (int e = 0; e < SLICES_SPLIT_VEC; ++e) {
                const i64 k = k0 + e;
                if (k >= n) break;
                int d[SLICES_DIGITS];
                slices_digits(slices_fixed(zr[k], cr), d, nullptr);
#pragma unroll
                for (int t = 0; t < SLICES_DIGITS; ++t)
                    word[t] |= (u64)(unsigned char)(signed char)d[t] << (8 * e);
            }
        }
        const i64 base = row * ldq + chunk * s * kc + kk;
#pragma unroll
        for (int t = 0; t < SLICES_DIGITS; ++t) {
            if (t >= s) break;
            *reinterpret_cast<u64*>(f + base + (i64)t * kc) = word[t];
            *reinterpret_cast<u64*>(r + base + (i64)(s - 1 - t) * kc) = word[t];
        }
    }
}

// The combine of one panel: element (i, j) (panel row i = global row gr0 + i, column j = global
// column gc0 + j) sums level L's nc chunks in int64 (plane (L-2) nc + chunk of prod, rows of ldp
// int32), runs Horner from the deepest level, acc = acc 2^-8 + C_L, and scales by c_i c_j. It
// lands at out[(or0 + i) ldo + oc0 + j]. mirror (a diagonal block): only there when
// or0 + i <= oc0 + j, and at the transposed place when or0 + i < oc0 + j (through shared memory,
// so both stores are coalesced): every element of the block once. finish: the value clipped
// to [-1, 1] and 1 on the matrix diagonal (gr0 + i == gc0 + j), what tiles.finish does after.
__global__ void __launch_bounds__(SLICES_COMBINE_TILE * SLICES_COMBINE_ROWS)
slices_combine(const int* __restrict__ prod, const double* __restrict__ c,
               double* __restrict__ out, i64 plane, i64 ldp, int rows, int cols, int s, int nc,
               i64 gr0, i64 gc0, i64 ldo, i64 or0, i64 oc0, int mirror, int finish) {
    __shared__ double tile[SLICES_COMBINE_TILE][SLICES_COMBINE_TILE + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int i0 = blockIdx.y * SLICES_COMBINE_TILE, j0 = blockIdx.x * SLICES_COMBINE_TILE;
    // a tile wholly below the block's diagonal: its transposes are written by other tiles
    if (mirror && or0 + i0 > oc0 + j0 + SLICES_COMBINE_TILE - 1) return;
    for (int y = ty; y < SLICES_COMBINE_TILE; y += SLICES_COMBINE_ROWS) {
        const int i = i0 + y, j = j0 + tx;
        double val = 0.0;
        if (i < rows && j < cols) {
            double acc = 0.0;
            for (int level = s + 1; level >= 2; --level) {
                const int* p = prod + (i64)(level - 2) * nc * plane + (i64)i * ldp + j;
                i64 v = 0;
                for (int ch = 0; ch < nc; ++ch) v += p[(i64)ch * plane];
                acc = level == s + 1 ? (double)v : __fma_rn(acc, 0x1p-8, (double)v);
            }
            val = acc * (c[gr0 + i] * c[gc0 + j]);
            if (finish) val = gr0 + i == gc0 + j ? 1.0 : fmin(fmax(val, -1.0), 1.0);
            if (!mirror || or0 + i <= oc0 + j) out[(or0 + i) * ldo + oc0 + j] = val;
        }
        tile[y][tx] = val;
    }
    if (!mirror) return;
    __syncthreads();
    for (int y = ty; y < SLICES_COMBINE_TILE; y += SLICES_COMBINE_ROWS) {
        const int i = i0 + tx, j = j0 + y;  // element (i, j) goes to (oc0 + j, or0 + i)
        if (i < rows && j < cols && or0 + i < oc0 + j)
            out[(oc0 + j) * ldo + or0 + i] = tile[tx][y];
    }
}

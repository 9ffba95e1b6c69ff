// The PTX pieces of the Gram kernel (gram.cu, which includes this after its Shape table):
// cp.async into shared memory, TF32 rounding, the mma.sync wrappers (m8n8k4 and m16n8kK
// float64, m16n8k8 TF32), the fragment loads with the k pairing, and the block's tile of C.
// The fragment layouts they rely on are listed at the top of gram.cu; block_tile reads its
// GROUP, and i64 comes from warplab.cuh, both included before this.
#pragma once

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Copy BYTES (4, 8 or 16) from global src to shared dst without blocking; `valid` false writes
// zeros (src-size 0: nothing is read, src only needs to be a mapped address).
template <int BYTES>
__device__ __forceinline__ void cp_async(void* dst, const void* src, bool valid) {
    const int n = valid ? BYTES : 0;
    if constexpr (BYTES == 16) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                     :: "r"(smem_addr(dst)), "l"(src), "r"(n) : "memory");
    } else {
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n"
                     :: "r"(smem_addr(dst)), "l"(src), "n"(BYTES), "r"(n) : "memory");
    }
}
__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int PENDING> __device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" :: "n"(PENDING) : "memory");
}

// Round to TF32 (10 explicit mantissa bits, nearest, ties away from zero): the low 13 bits of
// the result are zero.
__device__ __forceinline__ unsigned to_tf32(float x) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
    return r;
}

// D = A B + D, m8n8k4, float64.
__device__ __forceinline__ void mma_f64(double (&c)[2], double a, double b) {
    asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};\n"
        : "+d"(c[0]), "+d"(c[1]) : "d"(a), "d"(b));
}

// D = A B + D, m16n8kK (K = 8 or 16), float64; registers as the layouts in the header. Hopper
// (sm_90) added these shapes; the host never launches them on older devices.
template <int K>
__device__ __forceinline__ void mma_f64_16(double (&c)[4], const double (&a)[K / 2],
                                           const double (&b)[K / 4]) {
#if __CUDA_ARCH__ >= 900
    if constexpr (K == 8) {
        asm("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, "
            "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
            : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3])
            : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
    } else {
        asm("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, "
            "{%4, %5, %6, %7, %8, %9, %10, %11}, {%12, %13, %14, %15}, {%0, %1, %2, %3};\n"
            : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3])
            : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]),
              "d"(a[7]), "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
    }
#else
    __trap();  // the host launches the m16n8kK shapes on sm_90+ only
#endif
}

// D = A B + D, m16n8k8, TF32 operands, float32 accumulators.
__device__ __forceinline__ void mma_tf32(float (&c)[4], const unsigned (&a)[4],
                                         const unsigned (&b)[2]) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// The float32 values of a warp's TF32 fragments for the 8-deep k step at column ks of the
// shared tiles `as` (the warp's MT x 16 rows) and `bs` (its NT x 8 rows), row stride LDS:
// x[i][e] = a_e of mma row tile i, y[j][e] = b_e of mma column tile j, with the k pairing
// (mma column t <- stored column 2t, t + 4 <- 2t + 1), each pair one 8-byte load.
template <int MT, int NT, int LDS>
__device__ __forceinline__ void tf32_fragments(const float* as, const float* bs, int ks, int g,
                                               int t, float (&x)[MT][4], float (&y)[NT][2]) {
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {  // rows g and g + 8: registers h (k = t) and h + 2 (t + 4)
            const float2 v =
                *reinterpret_cast<const float2*>(as + (i * 16 + g + 8 * h) * LDS + ks + 2 * t);
            x[i][h] = v.x;
            x[i][h + 2] = v.y;
        }
#pragma unroll
    for (int j = 0; j < NT; ++j) {  // row g of B: registers 0 (k = t) and 1 (t + 4)
        const float2 v = *reinterpret_cast<const float2*>(bs + (j * 8 + g) * LDS + ks + 2 * t);
        y[j][0] = v.x;
        y[j][1] = v.y;
    }
}

template <class T> struct Pair;  // two adjacent shared-memory elements, one load
template <> struct Pair<float> { typedef float2 V; };
template <> struct Pair<double> { typedef double2 V; };

// The float64 fragments of one m16n8kK tile (K = 8 or 16) for the k step at column ks of a
// shared tile with row stride LDS, widened from T. The k pairing: mma column t + 4c (c < K / 4)
// comes from stored column 8 (c / 2) + 2t + (c % 2), so each pair c = 2p, 2p + 1 is one load.
// A (rows g, g + 8 of `as`): a_{4p + h}, a_{4p + 2 + h} from row g + 8h; B (row g of `bs`):
// b_{2p}, b_{2p + 1}.
template <int K, int LDS, class T>
__device__ __forceinline__ void f64_a_fragment(const T* as, int ks, int g, int t,
                                               double (&x)[K / 2]) {
    typedef typename Pair<T>::V V;
#pragma unroll
    for (int p = 0; p < K / 8; ++p)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const V v = *reinterpret_cast<const V*>(as + (g + 8 * h) * LDS + ks + 8 * p + 2 * t);
            x[4 * p + h] = (double)v.x;
            x[4 * p + 2 + h] = (double)v.y;
        }
}
template <int K, int LDS, class T>
__device__ __forceinline__ void f64_b_fragment(const T* bs, int ks, int g, int t,
                                               double (&y)[K / 4]) {
    typedef typename Pair<T>::V V;
#pragma unroll
    for (int p = 0; p < K / 8; ++p) {
        const V v = *reinterpret_cast<const V*>(bs + g * LDS + ks + 8 * p + 2 * t);
        y[2 * p] = (double)v.x;
        y[2 * p + 1] = (double)v.y;
    }
}

// The tile (bi, bj) of C this block computes. SYM: block L of the T (T + 1) / 2 blocks is the
// L-th tile of the lower triangle in row order, (r, c) with c <= r, taken as (bi, bj) = (c, r).
// Otherwise GROUP consecutive tile rows share each column of B tiles (L2 reuse).
template <bool SYM>
__device__ __forceinline__ void block_tile(int tiles_m, int tiles_n, int& bi, int& bj) {
    const i64 L = blockIdx.x;
    if constexpr (SYM) {
        i64 r = (i64)((sqrt(8.0 * (double)L + 1.0) - 1.0) * 0.5);
        while (r * (r + 1) / 2 > L) --r;
        while ((r + 1) * (r + 2) / 2 <= L) ++r;
        bi = (int)(L - r * (r + 1) / 2);
        bj = (int)r;
    } else {
        const int per_group = GROUP * tiles_n;
        const int first = (int)(L / per_group) * GROUP;
        const int rows_here = min(tiles_m - first, GROUP);
        const int in_group = (int)(L % per_group);
        bi = first + in_group % rows_here;
        bj = in_group / rows_here;
    }
}

#endif  // __CUDA_ARCH__ >= 800

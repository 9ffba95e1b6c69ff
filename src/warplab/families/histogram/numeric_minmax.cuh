// The numeric histograms' min/max pass, for a range taken from the data (numeric.cu: the
// types, the launch constants, the element loop of numeric_ops.cuh).
#pragma once

// ------------------------------------------------------------------------------------ min/max

// Per block: min and max of the non-NaN values and flags (bit 0: a value seen, bit 1: a NaN
// seen). The host reduces the partials (grid of at most a few thousand) with NumPy.
template <class D>
__global__ void __launch_bounds__(NUM_BLOCK)
minmax_partials(const D* __restrict__ x, u64 n, D* __restrict__ pmin, D* __restrict__ pmax,
                u32* __restrict__ pflags) {
    __shared__ D s_min[NUM_BLOCK];
    __shared__ D s_max[NUM_BLOCK];
    __shared__ u32 s_flags[NUM_BLOCK];
    D mn = D(), mx = D();
    u32 flags = 0;
    for_each_elem(x, n, [&](D v, u64) {
        if (is_nan(v)) {
            flags |= 2u;
        } else if (!(flags & 1u)) {
            mn = v;
            mx = v;
            flags |= 1u;
        } else {
            if (lt(v, mn)) mn = v;
            if (lt(mx, v)) mx = v;
        }
    });
    const u32 t = threadIdx.x;
    s_min[t] = mn;
    s_max[t] = mx;
    s_flags[t] = flags;
    __syncthreads();
    for (u32 half = NUM_BLOCK / 2; half > 0; half >>= 1) {
        if (t < half) {
            const u32 o = t + half;
            const u32 fa = s_flags[t], fb = s_flags[o];
            if (fb & 1u) {
                if (!(fa & 1u)) {
                    s_min[t] = s_min[o];
                    s_max[t] = s_max[o];
                } else {
                    if (lt(s_min[o], s_min[t])) s_min[t] = s_min[o];
                    if (lt(s_max[t], s_max[o])) s_max[t] = s_max[o];
                }
            }
            s_flags[t] = fa | fb;
        }
        __syncthreads();
    }
    if (t == 0) {
        pmin[blockIdx.x] = s_min[0];
        pmax[blockIdx.x] = s_max[0];
        pflags[blockIdx.x] = s_flags[0];
    }
}

// One pass, one set of atomics per block: res[0] the largest complement of the order key of
// the block minima (so that zeros initialise it), res[1] the largest key of the maxima, res[2]
// bit 1 when a NaN was seen. Keys (order_key) are unsigned integers in the order of the values
// (floats: sign-magnitude bits made ordered; NaN skipped); the host decodes them.
__device__ __forceinline__ u64 order_key(f32 v) {
    const u32 b = __float_as_uint(v);
    return (u64)(b ^ ((b >> 31) ? 0xFFFFFFFFu : 0x80000000u));
}
__device__ __forceinline__ u64 order_key(f64 v) {
    const u64 b = (u64)__double_as_longlong(v);
    return b ^ ((b >> 63) ? ~0ull : 0x8000000000000000ull);
}
__device__ __forceinline__ u64 order_key(f16 v) {
    const u32 b = v.bits;
    return (u64)(b ^ ((b >> 15) ? 0xFFFFu : 0x8000u));
}
__device__ __forceinline__ u64 order_key(i8 v) { return (u64)((u8)v ^ 0x80u); }
__device__ __forceinline__ u64 order_key(i16 v) { return (u64)((u16)v ^ 0x8000u); }
__device__ __forceinline__ u64 order_key(i32 v) { return (u64)((u32)v ^ 0x80000000u); }
__device__ __forceinline__ u64 order_key(i64 v) { return (u64)v ^ 0x8000000000000000ull; }
template <class T> __device__ __forceinline__ u64 order_key(T v) { return (u64)v; }  // unsigned

// The identities of min (top) and max (bottom) of each type.
template <class T> struct Lim {  // integers
    static constexpr bool SIGNED = T(-1) < T(0);
    static __device__ __forceinline__ T top() {
        return SIGNED ? (T)((1ull << (8 * sizeof(T) - 1)) - 1) : (T)~0ull;
    }
    static __device__ __forceinline__ T bottom() { return SIGNED ? (T)(-top() - 1) : (T)0; }
};
template <> struct Lim<f32> {
    static __device__ __forceinline__ f32 top() { return __int_as_float(0x7F800000); }
    static __device__ __forceinline__ f32 bottom() { return __int_as_float((int)0xFF800000u); }
};
template <> struct Lim<f64> {
    static __device__ __forceinline__ f64 top() { return __longlong_as_double(0x7FF0000000000000ll); }
    static __device__ __forceinline__ f64 bottom() { return __longlong_as_double((i64)0xFFF0000000000000ull); }
};
template <> struct Lim<f16> {
    static __device__ __forceinline__ f16 top() { return f16{0x7C00}; }
    static __device__ __forceinline__ f16 bottom() { return f16{0xFC00}; }
};
__device__ __forceinline__ f32 vmin(f32 a, f32 b) { return fminf(a, b); }
__device__ __forceinline__ f32 vmax(f32 a, f32 b) { return fmaxf(a, b); }
__device__ __forceinline__ f64 vmin(f64 a, f64 b) { return fmin(a, b); }
__device__ __forceinline__ f64 vmax(f64 a, f64 b) { return fmax(a, b); }
template <class T> __device__ __forceinline__ T vmin(T a, T b) { return lt(a, b) ? a : b; }
template <class T> __device__ __forceinline__ T vmax(T a, T b) { return lt(a, b) ? b : a; }

template <class D>
__global__ void __launch_bounds__(NUM_BLOCK)
minmax_atomic(const D* __restrict__ x, u64 n, u64* __restrict__ res) {
    __shared__ u64 s_lo[NUM_BLOCK / 32], s_hi[NUM_BLOCK / 32];
    __shared__ u32 s_flags[NUM_BLOCK / 32];
    D mn = Lim<D>::top(), mx = Lim<D>::bottom();
    bool nan = false;
    for_each_elem(x, n, [&](D v, u64) {  // NaN: vmin/vmax keep the other operand
        mn = vmin(v, mn);
        mx = vmax(v, mx);
        nan |= is_nan(v);
    });
    u64 klo = ~order_key(mn), khi = order_key(mx);
    u32 flags = nan ? 2u : 0u;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const u64 a = __shfl_xor_sync(0xFFFFFFFFu, klo, o), b = __shfl_xor_sync(0xFFFFFFFFu, khi, o);
        klo = a > klo ? a : klo;
        khi = b > khi ? b : khi;
        flags |= __shfl_xor_sync(0xFFFFFFFFu, flags, o);
    }
    const u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    if (lane == 0) {
        s_lo[warp] = klo;
        s_hi[warp] = khi;
        s_flags[warp] = flags;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (u32 j = 1; j < NUM_BLOCK / 32; ++j) {
            klo = s_lo[j] > klo ? s_lo[j] : klo;
            khi = s_hi[j] > khi ? s_hi[j] : khi;
            flags |= s_flags[j];
        }
        atomicMax(res, klo);
        atomicMax(res + 1, khi);
        if (flags) atomicOr(res + 2, (u64)flags);
    }
}

// Explicit instantiations so that nvcc (the CI compile check) builds the kernels; NVRTC builds
// the ones the host names through name_expressions.

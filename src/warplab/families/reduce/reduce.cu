// warplab reductions: sum / min / max / mean. Compiled by NVRTC (cupy.RawModule, -std=c++17);
// the lecture's eight kernels are in reduce_lecture.cuh, included after the op policies.
//
// Template arguments: T input element, A accumulator, R result, OP one of OpSum / OpMin / OpMax /
// OpMean. The host picks (A, R) like NumPy picks result dtypes: int32 sums accumulate in int64,
// float32 sums in double (accurate: a few ulps of the float64 sum), means in double.
// Min and max propagate NaN like NumPy.

#include "warplab.cuh"  // u64, i64, u32, Lim<A>, is_nan (core/warplab.cuh)

#ifndef WARPLAB_REDUCE_BLOCK
#error "WARPLAB_REDUCE_BLOCK is passed by the launch plan (-DWARPLAB_REDUCE_BLOCK=..., cuda.py DEFINES)"
#endif
constexpr u32 DIM = WARPLAB_REDUCE_BLOCK;  // the lecture's block size


struct OpSum {
    template <class A> __device__ static A identity() { return A(0); }
    template <class A> __device__ static A apply(A a, A b) { return a + b; }
    template <class A, class R> __device__ static R finish(A a, u64) { return R(a); }
};
struct OpMean {
    template <class A> __device__ static A identity() { return A(0); }
    template <class A> __device__ static A apply(A a, A b) { return a + b; }
    template <class A, class R> __device__ static R finish(A a, u64 n) {
        return R(double(a) / double(n));  // as NumPy: the sum divided by the count
    }
};
struct OpMin {
    template <class A> __device__ static A identity() { return Lim<A>::highest(); }
    template <class A> __device__ static A apply(A a, A b) {
        return is_nan(a) ? a : (is_nan(b) ? b : (b < a ? b : a));
    }
    template <class A, class R> __device__ static R finish(A a, u64) { return R(a); }
};
struct OpMax {
    template <class A> __device__ static A identity() { return Lim<A>::lowest(); }
    template <class A> __device__ static A apply(A a, A b) {
        return is_nan(a) ? a : (is_nan(b) ? b : (b > a ? b : a));
    }
    template <class A, class R> __device__ static R finish(A a, u64) { return R(a); }
};

template <class T, class A, class OP>
__device__ __forceinline__ A load_or_identity(const T* __restrict__ in, u64 i, u64 n) {
    return i < n ? A(in[i]) : OP::template identity<A>();
}

#include "reduce_lecture.cuh"  // the lecture's eight kernels (#1-#8)

// =============================================================================================
// One launch: the GPU lecture's global synchronisation. Every block writes its partial,
// __threadfence() makes it visible device-wide, atomicInc counts finished blocks; the block
// that draws the last ticket reduces all partials and writes the result. atomicInc wraps the
// counter back to 0 on the last ticket, so the next launch starts clean.
// =============================================================================================

template <class A, class R, class OP, u32 BS>
__device__ __forceinline__ void finish_last_block(A* smem, A partial, A* partials, u32* counter,
                                                  R* result, u64 n) {
    __shared__ bool am_last;
    const u32 tid = threadIdx.x;
    if (tid == 0) {
        partials[blockIdx.x] = partial;
        __threadfence();
        am_last = atomicInc(counter, gridDim.x - 1) == gridDim.x - 1;
    }
    __syncthreads();
    if (!am_last) return;
    A acc = OP::template identity<A>();
    for (u32 i = tid; i < gridDim.x; i += BS) acc = OP::apply(acc, ((volatile A*)partials)[i]);
    smem[tid] = acc;
    __syncthreads();
    unrolled_tree<BS, A, OP>(smem, tid, BS);
    if (tid == 0) *result = OP::template finish<A, R>(smem[0], n);
}

template <class T, class A, class R, class OP>
__global__ void reduce_single_pass_fence(const T* __restrict__ in, u64 n, A* partials,
                                         u32* counter, R* result) {
    __shared__ A smem[DIM];
    const u32 tid = threadIdx.x;
    smem[tid] = load8<T, A, OP>(in, (u64)blockIdx.x * DIM * 8 + tid, DIM, n);
    __syncthreads();
    unrolled_tree<DIM, A, OP>(smem, tid, DIM);
    finish_last_block<A, R, OP, DIM>(smem, smem[0], partials, counter, result, n);
}

// =============================================================================================
// The default: a persistent grid (SMs x occupancy blocks of 512) strides over the input with
// 16-byte read-only loads, independent accumulators per thread, warp shuffles for the block,
// and a last-block finish that also reduces with shuffles: one launch, no host work. The sweep
// runs tail first: whatever wrote the input last (a kernel, an H2D copy) left its end in L2.
// Measured choices (H100, benchmarks/NOTES.md): 8 accumulators x 2 blocks of 512
// per SM; __ldg rather than evict-first __ldcs, which loses 2-4% when L2 holds dirty lines.
// =============================================================================================

#ifndef WARPLAB_REDUCE_VEC_BS
#error "WARPLAB_REDUCE_VEC_BS is passed by the launch plan (-DWARPLAB_REDUCE_VEC_BS=..., cuda.py DEFINES)"
#endif
#ifndef WARPLAB_REDUCE_VEC_ACC
#error "WARPLAB_REDUCE_VEC_ACC is passed by the launch plan (-DWARPLAB_REDUCE_VEC_ACC=..., cuda.py DEFINES)"
#endif
#ifndef WARPLAB_REDUCE_VEC_MINB
#error "WARPLAB_REDUCE_VEC_MINB is passed by the launch plan (-DWARPLAB_REDUCE_VEC_MINB=..., cuda.py DEFINES)"
#endif
#ifndef WARPLAB_REDUCE_VEC_LOAD
#error "WARPLAB_REDUCE_VEC_LOAD is passed by the launch plan (-DWARPLAB_REDUCE_VEC_LOAD=..., cuda.py DEFINES)"
#endif
#ifndef WARPLAB_REDUCE_VEC_ORDER
#error "WARPLAB_REDUCE_VEC_ORDER is passed by the launch plan (-DWARPLAB_REDUCE_VEC_ORDER=..., cuda.py DEFINES)"
#endif
constexpr u32 VEC_BS = WARPLAB_REDUCE_VEC_BS;
constexpr int VEC_ACC = WARPLAB_REDUCE_VEC_ACC;

__device__ __forceinline__ uint4 load_vec(const uint4* p) {
#if WARPLAB_REDUCE_VEC_LOAD == 0
    return __ldcs(p);
#elif WARPLAB_REDUCE_VEC_LOAD == 1
    return __ldg(p);
#else
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
#endif
}

// The 16-byte word the j-th step of the sweep reads. Tail first: data a previous kernel just
// wrote ends in L2 (its last lines), so reading the end of the input first finds them there.
__device__ __forceinline__ u64 vec_index(u64 j, u64 nvec) {
#if WARPLAB_REDUCE_VEC_ORDER == 1
    return nvec - 1 - j;
#else
    (void)nvec;
    return j;
#endif
}

template <class A, class OP>
__device__ __forceinline__ A warp_reduce(A x) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) x = OP::apply(x, __shfl_down_sync(0xffffffffu, x, off));
    return x;
}

// Block-wide reduction with shuffles; the result is valid in thread 0. ``warp_sums`` holds one
// value per warp; callers separate two uses of it with a __syncthreads().
template <u32 BS, class A, class OP>
__device__ __forceinline__ A block_reduce_shfl(A x, A* warp_sums) {
    const u32 tid = threadIdx.x;
    x = warp_reduce<A, OP>(x);
    if ((tid & 31u) == 0) warp_sums[tid >> 5] = x;
    __syncthreads();
    if (tid < 32) {
        x = tid < BS / 32 ? warp_sums[tid] : OP::template identity<A>();
        x = warp_reduce<A, OP>(x);
    }
    return x;
}

template <class T, class A, class R, class OP>
__global__ void __launch_bounds__(VEC_BS, WARPLAB_REDUCE_VEC_MINB)
reduce_persistent_vec(const T* __restrict__ in, u64 n, A* partials, u32* counter, R* result) {
    constexpr int PER = 16 / sizeof(T);  // elements per 16-byte load
    const u32 tid = threadIdx.x;
    const u64 gtid = (u64)blockIdx.x * VEC_BS + tid;
    const u64 gstride = (u64)gridDim.x * VEC_BS;
    u64 head = ((16u - ((unsigned long long)in & 15u)) & 15u) / sizeof(T);
    if (head > n) head = n;
    const u64 nvec = (n - head) / PER;
    const uint4* __restrict__ vin = reinterpret_cast<const uint4*>(in + head);

    A acc[VEC_ACC];
#pragma unroll
    for (int k = 0; k < VEC_ACC; ++k) acc[k] = OP::template identity<A>();
    union Pack { uint4 u; T v[PER]; };
    u64 i = gtid;
    for (; i + (VEC_ACC - 1) * gstride < nvec; i += VEC_ACC * gstride) {
        Pack p[VEC_ACC];
#pragma unroll
        for (int k = 0; k < VEC_ACC; ++k)
            p[k].u = load_vec(vin + vec_index(i + k * gstride, nvec));
#pragma unroll
        for (int k = 0; k < VEC_ACC; ++k)
#pragma unroll
            for (int e = 0; e < PER; ++e) acc[k] = OP::apply(acc[k], A(p[k].v[e]));
    }
    for (; i < nvec; i += gstride) {
        Pack p;
        p.u = load_vec(vin + vec_index(i, nvec));
#pragma unroll
        for (int e = 0; e < PER; ++e) acc[0] = OP::apply(acc[0], A(p.v[e]));
    }
    const u64 tail = head + nvec * PER;
    if (gtid < head) acc[0] = OP::apply(acc[0], A(in[gtid]));
    if (gtid < n - tail) acc[0] = OP::apply(acc[0], A(in[tail + gtid]));
    A x = acc[0];
#pragma unroll
    for (int k = 1; k < VEC_ACC; ++k) x = OP::apply(x, acc[k]);

    __shared__ A warp_sums[VEC_BS / 32];
    __shared__ bool am_last;
    x = block_reduce_shfl<VEC_BS, A, OP>(x, warp_sums);
    if (gridDim.x == 1) {  // small inputs: no partials, no atomics
        if (tid == 0) *result = OP::template finish<A, R>(x, n);
        return;
    }
    if (tid == 0) {  // the GPU lecture's global sync, as in finish_last_block
        partials[blockIdx.x] = x;
        __threadfence();
        am_last = atomicInc(counter, gridDim.x - 1) == gridDim.x - 1;
    }
    __syncthreads();
    if (!am_last) return;
    A y = OP::template identity<A>();
    for (u32 j = tid; j < gridDim.x; j += VEC_BS) y = OP::apply(y, ((volatile A*)partials)[j]);
    y = block_reduce_shfl<VEC_BS, A, OP>(y, warp_sums);
    if (tid == 0) *result = OP::template finish<A, R>(y, n);
}

// Explicit instantiations for the nvcc compile check (NVRTC instantiates what the host names).
#ifdef WARPLAB_NVCC_CHECK
#define WARPLAB_GMEM(A, OP) template __global__ void reduce_neighbored_gmem<A, OP>(A*, A*);
WARPLAB_GMEM(i64, OpSum) WARPLAB_GMEM(double, OpSum) WARPLAB_GMEM(double, OpMean)
WARPLAB_GMEM(int, OpMin) WARPLAB_GMEM(i64, OpMin) WARPLAB_GMEM(float, OpMin)
WARPLAB_GMEM(double, OpMin) WARPLAB_GMEM(int, OpMax) WARPLAB_GMEM(i64, OpMax)
WARPLAB_GMEM(float, OpMax) WARPLAB_GMEM(double, OpMax)
#define WARPLAB_SEEDS(T, A, OP)                                                                \
    template __global__ void reduce_neighbored_smem<T, A, OP>(const T*, A*, u64);             \
    template __global__ void reduce_neighbored_smem_nodiv<T, A, OP>(const T*, A*, u64);       \
    template __global__ void reduce_interleaved_smem<T, A, OP>(const T*, A*, u64);            \
    template __global__ void reduce_unroll2<T, A, OP>(const T*, A*, u64);                     \
    template __global__ void reduce_unroll_warp8<T, A, OP>(const T*, A*, u64);                \
    template __global__ void reduce_complete_unroll8<T, A, OP>(const T*, A*, u64);            \
    template __global__ void reduce_complete_unroll8_template<DIM, T, A, OP>(const T*, A*, u64);
#define WARPLAB_ONE_PASS(T, A, R, OP)                                                          \
    template __global__ void reduce_single_pass_fence<T, A, R, OP>(const T*, u64, A*, u32*,    \
                                                                   R*);                       \
    template __global__ void reduce_persistent_vec<T, A, R, OP>(const T*, u64, A*, u32*, R*);
#define WARPLAB_ALL(T, A, R, OP) WARPLAB_SEEDS(T, A, OP) WARPLAB_ONE_PASS(T, A, R, OP)
WARPLAB_ALL(int, i64, i64, OpSum)
WARPLAB_ALL(i64, i64, i64, OpSum)
WARPLAB_ALL(float, double, float, OpSum)
WARPLAB_ALL(double, double, double, OpSum)
WARPLAB_ALL(int, double, double, OpMean)
WARPLAB_ALL(i64, double, double, OpMean)
WARPLAB_ALL(float, double, float, OpMean)
WARPLAB_ALL(double, double, double, OpMean)
WARPLAB_ALL(int, int, int, OpMin)
WARPLAB_ALL(i64, i64, i64, OpMin)
WARPLAB_ALL(float, float, float, OpMin)
WARPLAB_ALL(double, double, double, OpMin)
WARPLAB_ALL(int, int, int, OpMax)
WARPLAB_ALL(i64, i64, i64, OpMax)
WARPLAB_ALL(float, float, float, OpMax)
WARPLAB_ALL(double, double, double, OpMax)
#endif

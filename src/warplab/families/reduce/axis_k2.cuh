// The Pearson report's K2 kernels (axis.cu: the launch constants and helpers they use;
// plans in axis_cuda_k2.py).
#pragma once

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
    if (!last_of_row(partials, tickets, r, b, NB, acc, last)) return;
    T y = T(0);
    for (u32 j = t; j < NB; j += B) y += __ldcg(partials + r * NB + j);
    __syncthreads();  // s is reused
    y = k2_block_sum<B, T>(y, s);
    if (t == 0) out[r] = MEAN ? y / T(cols) : y;
}

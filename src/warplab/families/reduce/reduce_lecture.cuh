// The parallel-reduction lecture's eight kernels of the reductions (reduce.cu: the op
// policies, load_or_identity and the launch constants they use; plans in cuda.py).
#pragma once

// =============================================================================================
// The parallel-reduction lecture's eight kernels (block DIM = 512). Each block writes one
// partial; the host finishes the partials, as the lecture did. Deviations, all for correctness
// at any size: 64-bit indices; threads past the end contribute the identity instead of
// returning before a __syncthreads(); the unrolled loads keep their sum in a register instead of
// writing it back into the input; the last-warp unrolling adds __syncwarp() (warp-synchronous
// code without it is a race under Volta's independent thread scheduling).
// =============================================================================================

// #1 neighbored pairs, in place in global memory (on a scratch copy padded with the identity).
template <class A, class OP>
__global__ void reduce_neighbored_gmem(A* g_idata, A* g_odata) {
    const u32 tid = threadIdx.x;
    A* idata = g_idata + (u64)blockIdx.x * blockDim.x;
    for (u32 stride = 1; stride < blockDim.x; stride *= 2) {
        if ((tid % (2 * stride)) == 0) idata[tid] = OP::apply(idata[tid], idata[tid + stride]);
        __syncthreads();
    }
    if (tid == 0) g_odata[blockIdx.x] = idata[0];
}

// #2 neighbored pairs in shared memory.
template <class T, class A, class OP>
__global__ void reduce_neighbored_smem(const T* __restrict__ g_idata, A* g_odata, u64 n) {
    __shared__ A smem[DIM];
    const u32 tid = threadIdx.x;
    smem[tid] = load_or_identity<T, A, OP>(g_idata, (u64)blockIdx.x * blockDim.x + tid, n);
    __syncthreads();
    for (u32 stride = 1; stride < blockDim.x; stride *= 2) {
        if ((tid % (2 * stride)) == 0) smem[tid] = OP::apply(smem[tid], smem[tid + stride]);
        __syncthreads();
    }
    if (tid == 0) g_odata[blockIdx.x] = smem[0];
}

// #3 neighbored pairs, strided index: the active threads are contiguous (less divergence).
template <class T, class A, class OP>
__global__ void reduce_neighbored_smem_nodiv(const T* __restrict__ g_idata, A* g_odata, u64 n) {
    __shared__ A smem[DIM];
    const u32 tid = threadIdx.x;
    smem[tid] = load_or_identity<T, A, OP>(g_idata, (u64)blockIdx.x * blockDim.x + tid, n);
    __syncthreads();
    for (u32 stride = 1; stride < blockDim.x; stride *= 2) {
        const u32 index = 2 * stride * tid;
        if (index < blockDim.x) smem[index] = OP::apply(smem[index], smem[index + stride]);
        __syncthreads();
    }
    if (tid == 0) g_odata[blockIdx.x] = smem[0];
}

template <class A, class OP>
__device__ __forceinline__ void tree_interleaved(A* smem, u32 tid, u32 down_to) {
    for (u32 stride = blockDim.x / 2; stride > down_to; stride >>= 1) {
        if (tid < stride) smem[tid] = OP::apply(smem[tid], smem[tid + stride]);
        __syncthreads();
    }
}

// #4 interleaved pairs: stride from blockDim/2 down.
template <class T, class A, class OP>
__global__ void reduce_interleaved_smem(const T* __restrict__ g_idata, A* g_odata, u64 n) {
    __shared__ A smem[DIM];
    const u32 tid = threadIdx.x;
    smem[tid] = load_or_identity<T, A, OP>(g_idata, (u64)blockIdx.x * blockDim.x + tid, n);
    __syncthreads();
    tree_interleaved<A, OP>(smem, tid, 0);
    if (tid == 0) g_odata[blockIdx.x] = smem[0];
}

// #5 each thread first combines two elements a block apart: half the blocks.
template <class T, class A, class OP>
__global__ void reduce_unroll2(const T* __restrict__ g_idata, A* g_odata, u64 n) {
    __shared__ A smem[DIM];
    const u32 tid = threadIdx.x;
    const u64 idx = (u64)blockIdx.x * blockDim.x * 2 + tid;
    smem[tid] = OP::apply(load_or_identity<T, A, OP>(g_idata, idx, n),
                          load_or_identity<T, A, OP>(g_idata, idx + blockDim.x, n));
    __syncthreads();
    tree_interleaved<A, OP>(smem, tid, 0);
    if (tid == 0) g_odata[blockIdx.x] = smem[0];
}

template <class T, class A, class OP>
__device__ __forceinline__ A load8(const T* __restrict__ in, u64 idx, u32 step, u64 n) {
    if (idx + 7ull * step < n) {  // the lecture's fast path: eight independent loads
        A a1 = A(in[idx]), a2 = A(in[idx + step]), a3 = A(in[idx + 2ull * step]);
        A a4 = A(in[idx + 3ull * step]), b1 = A(in[idx + 4ull * step]);
        A b2 = A(in[idx + 5ull * step]), b3 = A(in[idx + 6ull * step]);
        A b4 = A(in[idx + 7ull * step]);
        return OP::apply(OP::apply(OP::apply(a1, a2), OP::apply(a3, a4)),
                         OP::apply(OP::apply(b1, b2), OP::apply(b3, b4)));
    }
    A acc = OP::template identity<A>();
    for (int k = 0; k < 8; ++k) acc = OP::apply(acc, load_or_identity<T, A, OP>(in, idx + (u64)k * step, n));
    return acc;
}

template <class A, class OP>
__device__ __forceinline__ void last_warp(A* smem, u32 tid) {
    if (tid < 32) {
        volatile A* v = smem;
        A x = v[tid];
#pragma unroll
        for (u32 off = 32; off > 0; off >>= 1) {
            x = OP::apply(x, (A)v[tid + off]);
            __syncwarp();
            v[tid] = x;
            __syncwarp();
        }
    }
}

// #6 eight elements per thread first, then the last warp unrolled (no __syncthreads there).
template <class T, class A, class OP>
__global__ void reduce_unroll_warp8(const T* __restrict__ g_idata, A* g_odata, u64 n) {
    __shared__ A smem[DIM];
    const u32 tid = threadIdx.x;
    smem[tid] = load8<T, A, OP>(g_idata, (u64)blockIdx.x * blockDim.x * 8 + tid, blockDim.x, n);
    __syncthreads();
    tree_interleaved<A, OP>(smem, tid, 32);
    last_warp<A, OP>(smem, tid);
    if (tid == 0) g_odata[blockIdx.x] = smem[0];
}

template <u32 BS, class A, class OP>
__device__ __forceinline__ void unrolled_tree(A* smem, u32 tid, u32 bdim) {
    // BS == 0: test blockDim.x at run time (kernel #7); else the template block size (#8).
    const u32 b = BS ? BS : bdim;
    if (b >= 1024 && tid < 512) smem[tid] = OP::apply(smem[tid], smem[tid + 512]);
    __syncthreads();
    if (b >= 512 && tid < 256) smem[tid] = OP::apply(smem[tid], smem[tid + 256]);
    __syncthreads();
    if (b >= 256 && tid < 128) smem[tid] = OP::apply(smem[tid], smem[tid + 128]);
    __syncthreads();
    if (b >= 128 && tid < 64) smem[tid] = OP::apply(smem[tid], smem[tid + 64]);
    __syncthreads();
    last_warp<A, OP>(smem, tid);
}

// #7 as #6 with the block-level loop unrolled by hand (tests on blockDim.x).
template <class T, class A, class OP>
__global__ void reduce_complete_unroll8(const T* __restrict__ g_idata, A* g_odata, u64 n) {
    __shared__ A smem[DIM];
    const u32 tid = threadIdx.x;
    smem[tid] = load8<T, A, OP>(g_idata, (u64)blockIdx.x * blockDim.x * 8 + tid, blockDim.x, n);
    __syncthreads();
    unrolled_tree<0, A, OP>(smem, tid, blockDim.x);
    if (tid == 0) g_odata[blockIdx.x] = smem[0];
}

// #8 as #7 with the block size a template argument: the tests fold at compile time.
template <u32 BS, class T, class A, class OP>
__global__ void reduce_complete_unroll8_template(const T* __restrict__ g_idata, A* g_odata,
                                                 u64 n) {
    __shared__ A smem[BS];
    const u32 tid = threadIdx.x;
    smem[tid] = load8<T, A, OP>(g_idata, (u64)blockIdx.x * BS * 8 + tid, BS, n);
    __syncthreads();
    unrolled_tree<BS, A, OP>(smem, tid, BS);
    if (tid == 0) g_odata[blockIdx.x] = smem[0];
}

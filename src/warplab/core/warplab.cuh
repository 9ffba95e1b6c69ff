// warplab's shared CUDA helpers: included by the families' kernels (#include "warplab.cuh");
// the loader passes -I<this folder> and folds this file's hash into every module's options, so
// a change here recompiles every kernel that includes it.
#pragma once

typedef unsigned long long u64;
typedef long long i64;
typedef unsigned int u32;

// Identities of min / max per accumulator type: the type's extremes (+-inf for floats).
template <class A> struct Lim;
template <> struct Lim<int> {
    __device__ static int lowest() { return -2147483647 - 1; }
    __device__ static int highest() { return 2147483647; }
};
template <> struct Lim<i64> {
    __device__ static i64 lowest() { return (i64)(-9223372036854775807LL - 1); }
    __device__ static i64 highest() { return 9223372036854775807LL; }
};
template <> struct Lim<float> {
    __device__ static float lowest() { return __int_as_float(0xff800000); }   // -inf
    __device__ static float highest() { return __int_as_float(0x7f800000); }  // +inf
};
template <> struct Lim<double> {
    __device__ static double lowest() { return __longlong_as_double(0xfff0000000000000ULL); }
    __device__ static double highest() { return __longlong_as_double(0x7ff0000000000000ULL); }
};

// NaN test that works for every accumulator type (false for integers).
template <class A> __device__ __forceinline__ bool is_nan(A x) { return x != x; }

// Programmatic dependent launch (sm_90 and later). A kernel launched with the driver's
// programmatic stream serialization (core/launch.py: Prepared(..., overlap=True)) may have
// blocks resident before the stream's previous kernel has finished: wait_prior_grids() holds
// the thread until that kernel has completed and its writes are visible, so it comes before
// the kernel's first memory access (launched the plain way, the previous kernel is done and
// it returns at once). allow_dependents() lets the stream's next such launch schedule its
// blocks once every block of this grid has called it or exited; they wait in their own
// wait_prior_grids() for this grid's end.
__device__ __forceinline__ void wait_prior_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void allow_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

// A 16-byte read-only streaming load: not kept in L1, and (sm_80 and later) with the hint that
// L2 fetch the whole 256-byte block around it from DRAM. On the H100 a warp reading whole
// 512-byte segments this way reaches 98-99% of the 1 GiB read ceiling on a 128 MiB input,
// against 90% with __ldg (benchmarks/explore_rows_short.py, benchmarks/NOTES.md).
__device__ __forceinline__ uint4 ld_stream(const uint4* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
#else
    return __ldg(p);
#endif
}

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

// The finishing rule of a correlation coefficient, shared by the corr family's kernels (corr.cu's
// corr_finish, small.cu's fused kernel): NaN where the row's or the column's series is not
// valid (NumPy's 0 / 0 of a constant series: the canonical quiet NaN np.nan stores), else 1 on
// the matrix's diagonal, else clipped to [-1, 1] with cupy.clip's comparisons (NaN passes).
#pragma once
#include "warplab.cuh"

__device__ __forceinline__ double corr_nan() { return __longlong_as_double(0x7ff8000000000000ULL); }
__device__ __forceinline__ float corr_nan_of(float) { return __int_as_float(0x7fc00000); }
__device__ __forceinline__ double corr_nan_of(double) { return corr_nan(); }
// cupy.clip's result: a NaN passes with its bits (float32 compares compiled with --ftz=true
// gave 0x7fffffff for a 0x7fc00000 input on the H100: decided on the bits instead).
__device__ __forceinline__ float corr_clip(float v) {
    const int bits = __float_as_int(v);
    if ((bits & 0x7fffffff) > 0x7f800000) return __int_as_float(bits);
    return bits < 0 ? (bits > (int)0xbf800000 ? -1.0f : v) : (bits > 0x3f800000 ? 1.0f : v);
}
__device__ __forceinline__ double corr_clip(double v) {
    return v < -1.0 ? -1.0 : v > 1.0 ? 1.0 : v;
}
// The finished coefficient v of a pair whose series are both valid (valid) and which lies on
// the matrix's diagonal (diagonal) or not.
template <class T>
__device__ __forceinline__ T corr_finished(T v, bool valid, bool diagonal) {
    return !valid ? corr_nan_of(v) : diagonal ? T(1) : corr_clip(v);
}

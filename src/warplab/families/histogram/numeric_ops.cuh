// The numeric histograms' scalar helpers (float16 through float32, NumPy's comparisons and
// casts), their element loop and their accumulators (numeric.cu: the types, the launch
// constants and the kernels that use them).
#pragma once

// ------------------------------------------------------------------------------ scalar helpers

__device__ __forceinline__ float h2f(f16 h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
    return f;
}
__device__ __forceinline__ f16 f2h(float f) {
    f16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
    return h;
}

template <class T> __device__ __forceinline__ T from_bits(u64 b);
template <> __device__ __forceinline__ i8 from_bits<i8>(u64 b) { return (i8)(u8)b; }
template <> __device__ __forceinline__ u8 from_bits<u8>(u64 b) { return (u8)b; }
template <> __device__ __forceinline__ i16 from_bits<i16>(u64 b) { return (i16)(u16)b; }
template <> __device__ __forceinline__ u16 from_bits<u16>(u64 b) { return (u16)b; }
template <> __device__ __forceinline__ i32 from_bits<i32>(u64 b) { return (i32)(u32)b; }
template <> __device__ __forceinline__ u32 from_bits<u32>(u64 b) { return (u32)b; }
template <> __device__ __forceinline__ i64 from_bits<i64>(u64 b) { return (i64)b; }
template <> __device__ __forceinline__ u64 from_bits<u64>(u64 b) { return b; }
template <> __device__ __forceinline__ f16 from_bits<f16>(u64 b) { return f16{(u16)b}; }
template <> __device__ __forceinline__ f32 from_bits<f32>(u64 b) { return __int_as_float((int)(u32)b); }
template <> __device__ __forceinline__ f64 from_bits<f64>(u64 b) { return __longlong_as_double((i64)b); }

// Single precision as NumPy computes it, subnormals included. CuPy compiles every module with
// NVRTC's --ftz=true appended last (a --ftz=false of ours is overridden), so plain float
// comparisons, arithmetic and float<->double casts flush subnormals to zero: -1e-45 < 0.0 would
// be false and such a value would land in the bin above an edge at zero (seen on the H100).
// Inline PTX without .ftz keeps IEEE semantics; double precision never flushes.
__device__ __forceinline__ bool ieee_lt(f32 a, f32 b) {
    unsigned r;
    asm("{ .reg .pred p; setp.lt.f32 p, %1, %2; selp.u32 %0, 1, 0, p; }" : "=r"(r) : "f"(a), "f"(b));
    return r != 0;
}
__device__ __forceinline__ f32 ieee_sub(f32 a, f32 b) { f32 r; asm("sub.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }
__device__ __forceinline__ f32 ieee_mul(f32 a, f32 b) { f32 r; asm("mul.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }
__device__ __forceinline__ f32 ieee_div(f32 a, f32 b) { f32 r; asm("div.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }
__device__ __forceinline__ f64 f32_to_f64(f32 v) { f64 r; asm("cvt.f64.f32 %0, %1;" : "=d"(r) : "f"(v)); return r; }
__device__ __forceinline__ f32 f64_to_f32(f64 v) { f32 r; asm("cvt.rn.f32.f64 %0, %1;" : "=f"(r) : "d"(v)); return r; }

// The value a comparison sees (float16 compared as float32: exact).
__device__ __forceinline__ float cmpval(f16 v) { return h2f(v); }
template <class T> __device__ __forceinline__ T cmpval(T v) { return v; }
template <class T> __device__ __forceinline__ bool is_nan(T v) { return cmpval(v) != cmpval(v); }
template <class T> __device__ __forceinline__ bool lt(T a, T b) { return cmpval(a) < cmpval(b); }
template <> __device__ __forceinline__ bool lt<f32>(f32 a, f32 b) { return ieee_lt(a, b); }
// a >= b and a <= b with NaN false (b is never NaN here)
template <class T> __device__ __forceinline__ bool ge(T a, T b) { return !is_nan(a) && !lt(a, b); }
template <class T> __device__ __forceinline__ bool le(T a, T b) { return !is_nan(a) && !lt(b, a); }

// Casts as NumPy's astype does them: round to nearest even, one rounding.
template <class T> struct To {
    template <class D> static __device__ __forceinline__ T from(D v) { return (T)v; }
    static __device__ __forceinline__ T from(f16 v) { return (T)h2f(v); }
};
template <> struct To<f64> {
    template <class D> static __device__ __forceinline__ f64 from(D v) { return (f64)v; }
    static __device__ __forceinline__ f64 from(f32 v) { return f32_to_f64(v); }
    static __device__ __forceinline__ f64 from(f16 v) { return (f64)h2f(v); }
};
template <> struct To<f32> {
    template <class D> static __device__ __forceinline__ f32 from(D v) { return (f32)v; }
    static __device__ __forceinline__ f32 from(f64 v) { return f64_to_f32(v); }
    static __device__ __forceinline__ f32 from(f16 v) { return h2f(v); }
};
template <> struct To<f16> {
    template <class D> static __device__ __forceinline__ f16 from(D v) { return f2h((float)v); }
    static __device__ __forceinline__ f16 from(f16 v) { return v; }
};

__device__ __forceinline__ f32 sub_rn(f32 a, f32 b) { return ieee_sub(a, b); }
__device__ __forceinline__ f64 sub_rn(f64 a, f64 b) { return __dsub_rn(a, b); }
__device__ __forceinline__ f16 sub_rn(f16 a, f16 b) { return f2h(ieee_sub(h2f(a), h2f(b))); }
__device__ __forceinline__ f32 mul_rn(f32 a, f32 b) { return ieee_mul(a, b); }
__device__ __forceinline__ f64 mul_rn(f64 a, f64 b) { return __dmul_rn(a, b); }
__device__ __forceinline__ f16 mul_rn(f16 a, f16 b) { return f2h(ieee_mul(h2f(a), h2f(b))); }
__device__ __forceinline__ f32 div_rn(f32 a, f32 b) { return ieee_div(a, b); }
__device__ __forceinline__ f64 div_rn(f64 a, f64 b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ f16 div_rn(f16 a, f16 b) { return f2h(ieee_div(h2f(a), h2f(b))); }
// Truncation toward zero (NumPy's astype(np.intp)); the plan keeps f within (-1, nbins + 1).
__device__ __forceinline__ int trunc_int(f32 f) { return __float2int_rz(f); }
__device__ __forceinline__ int trunc_int(f64 f) { return __double2int_rz(f); }
__device__ __forceinline__ int trunc_int(f16 f) { return __float2int_rz(h2f(f)); }

__device__ __forceinline__ double to_f64(f16 v) { return (double)h2f(v); }
__device__ __forceinline__ double to_f64(f32 v) { return f32_to_f64(v); }
template <class T> __device__ __forceinline__ double to_f64(T v) { return (double)v; }

// ------------------------------------------------------------------------- the element loop

// f(value, index) for every element of x[0, n) on a grid-stride loop: 16-byte streaming loads
// between the first and last 16-byte boundaries (UNROLL of them in flight), scalar loads for
// the head and the tail; plain scalar loads when x is not even aligned to its element size.
template <class D, class F>
__device__ __forceinline__ void for_each_elem(const D* __restrict__ x, u64 n, F f) {
    constexpr u32 V = 16 / sizeof(D);
    const u64 gtid = (u64)blockIdx.x * NUM_BLOCK + threadIdx.x;
    const u64 gstride = (u64)gridDim.x * NUM_BLOCK;
    const u64 addr = (u64)x;
    if (addr % sizeof(D) != 0) {
        for (u64 i = gtid; i < n; i += gstride) f(x[i], i);
        return;
    }
    u64 head = ((16u - (addr & 15u)) & 15u) / sizeof(D);
    if (head > n) head = n;
    const u64 nvec = (n - head) / V;
    const uint4* __restrict__ vin = reinterpret_cast<const uint4*>(x + head);
    u64 i = gtid;
    const u64 step = (u64)NUM_UNROLL * gstride;
    auto work = [&](const uint4* r, u64 at) {
#pragma unroll
        for (int u = 0; u < NUM_UNROLL; ++u) {
            const D* e = reinterpret_cast<const D*>(&r[u]);
            const u64 base = head + (at + u * gstride) * V;
#pragma unroll
            for (u32 k = 0; k < V; ++k) f(e[k], base + k);
        }
    };
    if constexpr (NUM_PREFETCH) {
        if (i + (NUM_UNROLL - 1) * gstride < nvec) {
            uint4 cur[NUM_UNROLL];
#pragma unroll
            for (int u = 0; u < NUM_UNROLL; ++u) cur[u] = __ldcs(vin + i + u * gstride);
            for (;;) {
                const u64 nxt = i + step;
                const bool more = nxt + (NUM_UNROLL - 1) * gstride < nvec;
                uint4 r[NUM_UNROLL];
                if (more) {
#pragma unroll
                    for (int u = 0; u < NUM_UNROLL; ++u) r[u] = __ldcs(vin + nxt + u * gstride);
                }
                work(cur, i);
                i = nxt;
                if (!more) break;
#pragma unroll
                for (int u = 0; u < NUM_UNROLL; ++u) cur[u] = r[u];
            }
        }
    } else {
        for (; i + (NUM_UNROLL - 1) * gstride < nvec; i += step) {
            uint4 r[NUM_UNROLL];
#pragma unroll
            for (int u = 0; u < NUM_UNROLL; ++u) r[u] = __ldcs(vin + i + u * gstride);
            work(r, i);
        }
    }
    for (; i < nvec; i += gstride) {
        const uint4 r = __ldcs(vin + i);
        const D* e = reinterpret_cast<const D*>(&r);
        const u64 base = head + i * V;
#pragma unroll
        for (u32 k = 0; k < V; ++k) f(e[k], base + k);
    }
    const u64 tail = head + nvec * V;
    if (gtid < head) f(x[gtid], gtid);
    if (gtid < n - tail) f(x[tail + gtid], tail + gtid);
}

// ------------------------------------------------------------------- accumulators and merges

template <class W> struct Acc {  // weighted: float64 sums
    typedef double shared_t;
    typedef double out_t;
    static __device__ __forceinline__ double inc(const W* __restrict__ w, u64 i) {
        return to_f64(w[i]);
    }
};
template <> struct Acc<NoWeights> {  // counts
    typedef u32 shared_t;
    typedef u64 out_t;
    static __device__ __forceinline__ u32 inc(const NoWeights*, u64) { return 1u; }
};

__device__ __forceinline__ void merge_add(u64* out, u32 v) {
    if (v) atomicAdd(out, (u64)v);
}
__device__ __forceinline__ void merge_add(double* out, double v) {
    if (v != 0.0) atomicAdd(out, v);
}
__device__ __forceinline__ void global_add(u64* out, u32 v) { atomicAdd(out, (u64)v); }
__device__ __forceinline__ void global_add(double* out, double v) { atomicAdd(out, v); }

// Shared memory of a block: the accumulator copies, then (when the host asks) the edges, at a
// 16-byte boundary. numeric_cuda.py mirrors this size.
template <class A, int LAYOUT>
__device__ __forceinline__ u32 acc_words(u32 nbins, u32 copies) {
    return LAYOUT == 0 ? nbins * 32u : (LAYOUT == 1 ? nbins * copies : 0u);
}

template <class A, int LAYOUT>
__device__ __forceinline__ A* acc_slot(A* acc, u32 nbins, u32 copies) {
    if constexpr (LAYOUT == 0) {
        return acc + (threadIdx.x & 31u);
    } else if constexpr (LAYOUT == 1) {
        return acc + ((threadIdx.x >> 5) % copies) * nbins;
    } else {
        return acc;  // unused: global atomics
    }
}

template <class A, int LAYOUT, class O>
__device__ __forceinline__ void acc_add(A* mine, O* __restrict__ out, int bin, A v) {
    if constexpr (LAYOUT == 0) {
        atomicAdd(mine + (u32)bin * 32u, v);
    } else if constexpr (LAYOUT == 1) {
        atomicAdd(mine + bin, v);
    } else {
        global_add(out + bin, v);
    }
}

// STORE (one-block launches only): each bin's total is stored, zeros too, instead of added.
template <class A, int LAYOUT, class O, bool STORE = false>
__device__ __forceinline__ void acc_merge(const A* acc, u32 nbins, u32 copies, O* __restrict__ out) {
    if constexpr (LAYOUT == 0) {
        for (u32 b = threadIdx.x; b < nbins; b += NUM_BLOCK) {
            A s = 0;
#pragma unroll 8
            for (u32 j = 0; j < 32u; ++j) s += acc[b * 32u + ((j + b) & 31u)];  // conflict-free
            if constexpr (STORE) out[b] = (O)s; else merge_add(out + b, s);
        }
    } else if constexpr (LAYOUT == 1) {
        for (u32 b = threadIdx.x; b < nbins; b += NUM_BLOCK) {
            A s = 0;
            for (u32 c = 0; c < copies; ++c) s += acc[c * nbins + b];
            if constexpr (STORE) out[b] = (O)s; else merge_add(out + b, s);
        }
    }
}

// Zero the accumulators, copy `nedges` edges to shared memory when ESMEM; returns the edges.
template <class A, int LAYOUT, bool ESMEM, class E>
__device__ __forceinline__ const E* block_setup(unsigned char* smem, u32 nbins, u32 copies,
                                                const E* __restrict__ edges_g, u32 nedges) {
    A* acc = reinterpret_cast<A*>(smem);
    const u32 words = acc_words<A, LAYOUT>(nbins, copies);
    for (u32 i = threadIdx.x; i < words; i += NUM_BLOCK) acc[i] = 0;
    if constexpr (ESMEM) {
        E* es = reinterpret_cast<E*>(smem + ((words * sizeof(A) + 15u) & ~15u));
        for (u32 i = threadIdx.x; i < nedges; i += NUM_BLOCK) es[i] = edges_g[i];
        __syncthreads();
        return es;
    } else {
        __syncthreads();
        return edges_g;
    }
}

"""What a 1M x 32 float32 row mean can reach (GPU machine; not part of the package's API).

Session 6 measured ``rows_adaptive`` on 1M x 32 at 2.61 TB/s held (85% of the 1 GiB read
ceiling). Session 7 runs 1, 3 and 5 (NOTES "Series, session 7") used this script, growing it:

1. The read ceiling at this size: ``read_words`` (the kernel behind ``read_gbps``) over 1 GiB,
   256 MiB and the 128 MiB of this shape, and the same kernel with an L2::256B prefetch hint on
   its loads (``read_words_hint``) at two grid sizes.
2. Experimental kernels, 32 float32 columns only (SOURCE; ``NAMES`` picks the ones timed):
   ``g2<P>`` (2 lanes per row, 16 P rows per warp step: the group kernel's pattern),
   ``coal<P>`` (the warp reads whole 512-byte segments, lane l word 32 j + l, xor shuffles over
   a row's 8 lanes, the 16 results gathered into one store), ``pk<GATHER, PF>`` (the same with
   or without the gather, with or without ``ld.global.nc.L1::no_allocate.L2::256B``): the form
   that became ``axis_rows_packed`` and ``ld_stream``.
3. The public ``warplab.mean(x, axis=1)`` (held, and back to back) and ``cupy.mean``.

Timing: ``held_ms`` queues one launch behind the harness's blocking kernel (as the campaign
tables), ``per_launch_ms`` runs ``REPS`` launches back to back between two events; grids
"persistent" (8 blocks per SM), "x4" and "all" (one warp step per warp). Every kernel's result
is checked against the float64 mean.
Usage: PYTHONPATH=src python3 benchmarks/explore_rows_short.py
"""
from __future__ import annotations

import cupy
import numpy as np

import warplab
from warplab.lab.harness import ceilings

REPS, RUNS = 20, 15
SOURCE = r"""
typedef unsigned long long u64;
__device__ __forceinline__ float hsum(float4 v) { return (v.x + v.y) + (v.z + v.w); }

template <int P>
__global__ void __launch_bounds__(256) g2(const float4* __restrict__ in, u64 rows,
                                           float* __restrict__ out) {
    const unsigned lane = threadIdx.x & 31u, sub = lane & 1u;
    const u64 warp = ((u64)blockIdx.x * 256 + threadIdx.x) >> 5;
    const u64 step = ((u64)gridDim.x * 256 >> 5) * 16 * P;
    for (u64 r0 = warp * 16 * P; r0 < rows; r0 += step) {
        float4 q[P][4];
#pragma unroll
        for (int p = 0; p < P; ++p) {
            const u64 r = r0 + p * 16 + lane / 2;
#pragma unroll
            for (int j = 0; j < 4; ++j)
                q[p][j] = r < rows ? __ldg(in + r * 8 + sub + 2 * j) : make_float4(0, 0, 0, 0);
        }
#pragma unroll
        for (int p = 0; p < P; ++p) {
            float s = (hsum(q[p][0]) + hsum(q[p][1])) + (hsum(q[p][2]) + hsum(q[p][3]));
            s += __shfl_xor_sync(0xffffffffu, s, 1);
            const u64 r = r0 + p * 16 + lane / 2;
            if (r < rows && sub == 0) out[r] = s * (1.0f / 32.0f);
        }
    }
}

template <int P>
__global__ void __launch_bounds__(256) coal(const float4* __restrict__ in, u64 rows,
                                             float* __restrict__ out) {
    const unsigned lane = threadIdx.x & 31u;
    const u64 warp = ((u64)blockIdx.x * 256 + threadIdx.x) >> 5;
    const u64 step = ((u64)gridDim.x * 256 >> 5) * 16 * P;
    const u64 words = rows * 8;
    for (u64 r0 = warp * 16 * P; r0 < rows; r0 += step) {
        float4 q[4 * P];
#pragma unroll
        for (int j = 0; j < 4 * P; ++j) {
            const u64 w = r0 * 8 + 32 * j + lane;
            q[j] = w < words ? __ldg(in + w) : make_float4(0, 0, 0, 0);
        }
        float s[4 * P];
#pragma unroll
        for (int j = 0; j < 4 * P; ++j) {
            s[j] = hsum(q[j]);
            s[j] += __shfl_xor_sync(0xffffffffu, s[j], 1);
            s[j] += __shfl_xor_sync(0xffffffffu, s[j], 2);
            s[j] += __shfl_xor_sync(0xffffffffu, s[j], 4);
        }
        // row 4 j + lane / 8 of the step sits in s[j]; lane t < 16 stores row 16 h + t.
#pragma unroll
        for (int h = 0; h < P; ++h) {
            float mine = 0.0f;
#pragma unroll
            for (int jj = 0; jj < 4; ++jj) {
                const float v = __shfl_sync(0xffffffffu, s[4 * h + jj], 8 * (lane & 3u));
                if (lane / 4 == (unsigned)jj) mine = v;
            }
            const u64 r = r0 + 16 * h + lane;
            if (lane < 16 && r < rows) out[r] = mine * (1.0f / 32.0f);
        }
    }
}
template <bool GATHER, bool PF>
__global__ void __launch_bounds__(256) pk(const float4* __restrict__ in, u64 rows,
                                           float* __restrict__ out) {
    const unsigned lane = threadIdx.x & 31u;
    const u64 warp = ((u64)blockIdx.x * 256 + threadIdx.x) >> 5;
    const u64 step = ((u64)gridDim.x * 256 >> 5) * 16;
    const u64 words = rows * 8;
    for (u64 r0 = warp * 16; r0 < rows; r0 += step) {
        float4 q[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const u64 w = r0 * 8 + 32 * j + lane;
            if (PF) {
                float4 t = make_float4(0, 0, 0, 0);
                if (w < words)
                    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.f32 {%0,%1,%2,%3}, [%4];"
                                 : "=f"(t.x), "=f"(t.y), "=f"(t.z), "=f"(t.w) : "l"(in + w));
                q[j] = t;
            } else {
                q[j] = w < words ? __ldg(in + w) : make_float4(0, 0, 0, 0);
            }
        }
        float s[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            s[j] = (double)q[j].x + (double)q[j].y + (double)q[j].z + (double)q[j].w;
            s[j] += __shfl_xor_sync(0xffffffffu, s[j], 1);
            s[j] += __shfl_xor_sync(0xffffffffu, s[j], 2);
            s[j] += __shfl_xor_sync(0xffffffffu, s[j], 4);
        }
        if (GATHER) {
            float mine = 0.0f;
#pragma unroll
            for (int jj = 0; jj < 4; ++jj) {
                const float v = __shfl_sync(0xffffffffu, s[jj], 8 * (lane & 3u));
                if (lane / 4 == (unsigned)jj) mine = v;
            }
            if (lane < 16 && r0 + lane < rows) out[r0 + lane] = mine * (1.0f / 32.0f);
        } else {
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const u64 r = r0 + 4 * j + lane / 8;
                if ((lane & 7u) == 0 && r < rows) out[r] = s[j] * (1.0f / 32.0f);
            }
        }
    }
}
// read_words (bench/ceilings.cu) with the L2::256B hint on every load
__global__ void read_words_hint(const uint4* __restrict__ src, u64 n16, unsigned* __restrict__ sums) {
    const u64 stride = (u64)gridDim.x * blockDim.x;
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned acc = 0;
    for (; i + 3 * stride < n16; i += 4 * stride) {
        uint4 a, b, c, d;
        asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(a.x), "=r"(a.y), "=r"(a.z), "=r"(a.w) : "l"(src + i));
        asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(b.x), "=r"(b.y), "=r"(b.z), "=r"(b.w) : "l"(src + i + stride));
        asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(c.x), "=r"(c.y), "=r"(c.z), "=r"(c.w) : "l"(src + i + 2 * stride));
        asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(d.x), "=r"(d.y), "=r"(d.z), "=r"(d.w) : "l"(src + i + 3 * stride));
        acc += a.x + a.y + a.z + a.w + b.x + b.y + b.z + b.w + c.x + c.y + c.z + c.w + d.x + d.y + d.z + d.w;
    }
    for (; i < n16; i += stride) { uint4 a = __ldg(src + i); acc += a.x + a.y + a.z + a.w; }
    atomicAdd(sums, acc);
}
"""
NAMES = ["pk<false, false>", "pk<false, true>", "read_words_hint"]


def per_launch_ms(fn) -> float:
    for _ in range(3):
        fn()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(RUNS):
        start.record()
        for _ in range(REPS):
            fn()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) / REPS)
    return float(np.median(times))


def held_ms(fn) -> float:
    """One launch queued behind the harness's blocking kernel (as the campaign tables)."""
    from warplab.lab.harness.ceiling_rates import _timed

    return _timed(fn, cuda=True, warmup=3, runs=30, hold=True)["median"]


def read_words_gbps(nbytes: int) -> float:
    from pathlib import Path

    from warplab.core.loader import get_kernel

    words = cupy.ones(nbytes // 4, np.uint32)
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    sums = cupy.empty(8 * sms, np.uint32)
    k = get_kernel(Path(ceilings.__file__).with_name("ceilings.cu"), "read_words")
    ms = held_ms(lambda: k((8 * sms,), (256,), (words, np.uint64(nbytes // 16), sums)))
    return nbytes / ms / 1e6


def main() -> None:
    read = ceilings.measure_all("cuda")["read_gbps"]
    rows = 1 << 20
    x = cupy.random.standard_normal((rows, 32), dtype=np.float32)
    nbytes = x.nbytes + rows * 4
    ref = x.astype(np.float64).mean(axis=1)
    print(f"read ceiling (stored, 1 GiB): {read:.0f} GB/s")
    mod = cupy.RawModule(code=SOURCE, options=("-std=c++17",), name_expressions=NAMES)
    for nb in (1 << 30, 256 << 20, x.nbytes):
        print(f"read_words over {nb >> 20:5d} MiB: {read_words_gbps(nb):6.0f} GB/s (held)")
        words, sums = cupy.ones(nb // 4, np.uint32), cupy.zeros(1, np.uint32)
        sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
        k = mod.get_function("read_words_hint")
        for blocks in (8 * sms, 16 * sms):
            ms = held_ms(lambda k=k, b=blocks: k((b,), (256,), (words, np.uint64(nb // 16), sums)))
            print(f"read_words_hint over {nb >> 20:5d} MiB, {blocks} blocks: "
                  f"{nb / ms / 1e6:6.0f} GB/s (held)")
    same = read_words_gbps(x.nbytes)
    warplab.mean(x, axis=1)
    hms = held_ms(lambda: warplab.mean(x, axis=1))
    print(f"warplab.mean(x, axis=1) held: {hms * 1e3:6.1f} us {nbytes / hms / 1e6:6.0f} GB/s "
          f"{100 * nbytes / hms / 1e6 / read:5.1f}% of 1 GiB read")
    ms = per_launch_ms(lambda: warplab.mean(x, axis=1))
    print(f"warplab.mean(x, axis=1) back to back: {ms * 1e3:6.1f} us {nbytes / ms / 1e6:6.0f} GB/s "
          f"{100 * nbytes / ms / 1e6 / read:5.1f}% of 1 GiB read, "
          f"{100 * nbytes / ms / 1e6 / same:5.1f}% of same-size read")
    cms = per_launch_ms(lambda: cupy.mean(x, axis=1))
    print(f"cupy.mean back to back: {cms * 1e3:6.1f} us {nbytes / cms / 1e6:6.0f} GB/s")
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    out = cupy.empty(rows, np.float32)
    for name in NAMES[:2]:
        k = mod.get_function(name)
        for label, grid in (("persistent", 8 * sms), ("x4", 32 * sms), ("all", 8192)):
            out.fill(np.nan)
            launch = (lambda k=k, g=grid: k((g,), (256,), (x, np.uint64(rows), out)))
            for how, ms in (("b2b", per_launch_ms(launch)), ("held", held_ms(launch))):
                err = float(cupy.abs(out.astype(np.float64) - ref).max())
                gbps = nbytes / ms / 1e6
                print(f"  {name:17s} {label:10s} {how:4s}: {ms * 1e3:6.1f} us {gbps:6.0f} GB/s "
                      f"{100 * gbps / read:5.1f}% of read, {100 * gbps / same:5.1f}% same-size, "
                      f"{gbps / (nbytes / cms / 1e6):4.2f}x cupy  err {err:.1e}")


if __name__ == "__main__":
    main()

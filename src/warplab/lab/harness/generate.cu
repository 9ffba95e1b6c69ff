// Synthetic inputs generated on the GPU, identical to warplab.lab.harness.data's host generators.
//
// Lehmer / Park-Miller "minimal standard" generator: s_{k+1} = 48271 * s_k mod (2^31 - 1),
// byte_k = 1 + (s_{k+1} mod 128), i.e. bytes 1..128. Each thread jumps ahead to its first
// element (s_0 * a^(k+1) mod m, square-and-multiply) and then steps sequentially.

typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned char u8;

constexpr u64 LEHMER_M = 0x7fffffffull;
constexpr u64 LEHMER_A = 48271ull;

__device__ __forceinline__ u64 mod_mersenne31(u64 x) {  // x < 2^62
    x = (x & LEHMER_M) + (x >> 31);
    x = (x & LEHMER_M) + (x >> 31);
    return x >= LEHMER_M ? x - LEHMER_M : x;
}

__device__ u64 pow_mod(u64 base, u64 e) {
    u64 r = 1;
    while (e) {
        if (e & 1) r = mod_mersenne31(r * base);
        base = mod_mersenne31(base * base);
        e >>= 1;
    }
    return r;
}

// Thread t writes bytes [t * per_thread, min(n, (t + 1) * per_thread)).
__global__ void lehmer_bytes(u8* out, u64 n, u32 seed, u32 per_thread) {
    u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 start = t * per_thread;
    if (start >= n) return;
    u64 end = start + per_thread < n ? start + per_thread : n;
    u64 s = mod_mersenne31((u64)seed * pow_mod(LEHMER_A, start + 1));
    for (u64 k = start; k < end; ++k) {
        out[k] = (u8)(1u + (u32)(s & 127u));
        s = mod_mersenne31(s * LEHMER_A);
    }
}

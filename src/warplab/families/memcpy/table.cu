// Batched copies of a few buffers in one launch (memcpy family, table_cuda.py), each byte range
// copied by the family's copy_bytes (memcpy_copy.cuh: 16-byte stores, aligned or shifted 8-byte
// loads):
// - memcpy_table: small buffers whose addresses travel in the launch itself: the table of at
//   most MEMCPY_TABLE_MAX (source, destination, size) triples is a kernel parameter passed by
//   value, so no host-to-device copy precedes the launch; one block per buffer.
// - memcpy_table_walk: at most MEMCPY_TABLE_MAX buffers of any size whose table is in device
//   memory (memcpy_batched's pointer form); every block walks the table.
#include "warplab.cuh"

#if !defined(MEMCPY_TABLE_MAX) || !defined(MEMCPY_TABLE_BLOCK) || !defined(MEMCPY_TABLE_CHUNK) \
    || !defined(WARPLAB_MEMCPY_UNROLL)
#error "table.cu needs -DMEMCPY_TABLE_MAX, _BLOCK, _CHUNK, -DWARPLAB_MEMCPY_UNROLL (table_cuda.py)"
#endif
#include "memcpy_copy.cuh"

struct CopyTable {
    u64 src[MEMCPY_TABLE_MAX];
    u64 dst[MEMCPY_TABLE_MAX];
    u64 size[MEMCPY_TABLE_MAX];
};

__global__ void __launch_bounds__(MEMCPY_TABLE_BLOCK)
memcpy_table(const CopyTable t, int count) {
    const int b = blockIdx.x;
    if (b >= count) return;
    copy_bytes<true>((u8*)t.dst[b], (const u8*)t.src[b], t.size[b], threadIdx.x,
                     MEMCPY_TABLE_BLOCK);
}

// memcpy_table_walk: memcpy_batched's pointer form for at most MEMCPY_TABLE_MAX buffers, the
// table in device memory. The sizes are not known on the host, so every block walks the whole
// table and copies its share: the buffers' MEMCPY_TABLE_CHUNK-byte chunks, numbered across the
// batch, are dealt round-robin over the grid (one launch, whatever the sizes: a single large
// buffer is spread over every block). A block's first chunk of each buffer follows from the
// previous buffer's by a subtraction (a 64-bit division only for buffers of at least a grid's
// chunks: a 64-bit remainder is a dependent chain of some 60 instructions, and every block
// walks every row). Sizes are read as signed 64-bit: a negative size copies nothing, as in
// the other kernels.
__global__ void __launch_bounds__(MEMCPY_TABLE_BLOCK)
memcpy_table_walk(const u64* __restrict__ src, const u64* __restrict__ dst,
                  const long long* __restrict__ size, int count) {
    constexpr u64 CHUNK = MEMCPY_TABLE_CHUNK;
    // every warp reads the table itself, lane i row i, and takes row i by shuffles: no
    // shared memory and no barrier between the table's loads and a warp's first copy
    static_assert(MEMCPY_TABLE_MAX <= 32 && MEMCPY_TABLE_BLOCK % 32 == 0,
                  "a lane per table row, whole warps");
    const int lane = threadIdx.x & 31;
    u64 r_src = 0, r_dst = 0;
    long long r_size = 0;
    if (lane < count) {
        r_src = src[lane];
        r_dst = dst[lane];
        r_size = size[lane];
    }
    const unsigned grid = gridDim.x;
    unsigned first = blockIdx.x;  // this block's first chunk of buffer i: (block - chunks
                                  // before buffer i) mod grid
    for (int i = 0; i < count; ++i) {
        const long long n = __shfl_sync(0xffffffffu, r_size, i);
        if (n <= 0) continue;
        const u64 chunks = ((u64)n + CHUNK - 1) / CHUNK;
        const u64 d = __shfl_sync(0xffffffffu, r_dst, i);
        const u64 s = __shfl_sync(0xffffffffu, r_src, i);
        for (u64 c = first; c < chunks; c += grid) {
            const u64 off = c * CHUNK;
            const u64 len = (u64)n - off < CHUNK ? (u64)n - off : CHUNK;
            copy_bytes<true>((u8*)d + off, (const u8*)s + off, len, threadIdx.x,
                             MEMCPY_TABLE_BLOCK);
        }
        const unsigned step = chunks < grid ? (unsigned)chunks : (unsigned)(chunks % grid);
        first = first >= step ? first - step : first + grid - step;
    }
}

// Batched copy of a few small buffers whose addresses travel in the launch itself (memcpy
// family, table_cuda.py): the table of at most MEMCPY_TABLE_MAX (source, destination, size)
// triples is a kernel parameter passed by value, so no host-to-device copy precedes the launch.
// One block per buffer, copied by the family's copy_bytes (memcpy_copy.cuh: 16-byte stores,
// aligned or shifted 8-byte loads).
#include "warplab.cuh"

#if !defined(MEMCPY_TABLE_MAX) || !defined(MEMCPY_TABLE_BLOCK) || !defined(WARPLAB_MEMCPY_UNROLL)
#error "table.cu needs -DMEMCPY_TABLE_MAX, -DMEMCPY_TABLE_BLOCK, -DWARPLAB_MEMCPY_UNROLL (table_cuda.py)"
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
    copy_bytes((u8*)t.dst[b], (const u8*)t.src[b], t.size[b], threadIdx.x, MEMCPY_TABLE_BLOCK);
}

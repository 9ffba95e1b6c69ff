// Batched copy of a few small buffers whose addresses travel in the launch itself (memcpy
// family, table_cuda.py): the table of at most MEMCPY_TABLE_MAX (source, destination, size)
// triples is a kernel parameter passed by value, so no host-to-device copy precedes the launch.
// One block per buffer; 16-, 8- or 4-byte moves where both addresses allow, the rest by bytes.
#include "warplab.cuh"

#if !defined(MEMCPY_TABLE_MAX) || !defined(MEMCPY_TABLE_BLOCK)
#error "table.cu needs -DMEMCPY_TABLE_MAX and -DMEMCPY_TABLE_BLOCK (see table_cuda.py)"
#endif

struct CopyTable {
    u64 src[MEMCPY_TABLE_MAX];
    u64 dst[MEMCPY_TABLE_MAX];
    u64 size[MEMCPY_TABLE_MAX];
};

// Copies the first n / sizeof(W) words of W, returns the bytes copied.
template <class W>
__device__ __forceinline__ u64 table_words(const unsigned char* s, unsigned char* d, u64 n) {
    const u64 words = n / sizeof(W);
    const W* sw = reinterpret_cast<const W*>(s);
    W* dw = reinterpret_cast<W*>(d);
    for (u64 i = threadIdx.x; i < words; i += MEMCPY_TABLE_BLOCK) dw[i] = sw[i];
    return words * sizeof(W);
}

__global__ void __launch_bounds__(MEMCPY_TABLE_BLOCK)
memcpy_table(const CopyTable t, int count) {
    const int b = blockIdx.x;
    if (b >= count) return;
    const unsigned char* s = reinterpret_cast<const unsigned char*>(t.src[b]);
    unsigned char* d = reinterpret_cast<unsigned char*>(t.dst[b]);
    const u64 n = t.size[b];
    const u64 both = t.src[b] | t.dst[b];
    u64 done = 0;
    if ((both & 15) == 0) done = table_words<uint4>(s, d, n);
    else if ((both & 7) == 0) done = table_words<u64>(s, d, n);
    else if ((both & 3) == 0) done = table_words<u32>(s, d, n);
    for (u64 i = done + threadIdx.x; i < n; i += MEMCPY_TABLE_BLOCK) d[i] = s[i];
}

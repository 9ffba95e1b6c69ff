/* warplab's staging copy with non-temporal stores (core/ntcopy.py builds and loads this).
 *
 * A pageable array is copied into a pinned staging buffer and then read once by the GPU's DMA:
 * the copy's destination is never read by the CPU again, so writing it through the caches
 * (glibc's memcpy below its non-temporal threshold, about 3/4 of the L3: 225 MiB on the H100
 * machine) costs a read for ownership per line and evicts the source. Streaming stores write
 * whole lines straight to memory. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Copy n bytes from src to dst (no overlap); returns 1 when streaming stores were used. */
int warplab_nt_copy(void *dst, const void *src, size_t n) {
#if defined(__SSE2__)
    unsigned char *d = (unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;
    if (n < head + 64) {
        memcpy(d, s, n);
        return 0;
    }
    memcpy(d, s, head);
    d += head; s += head; n -= head;
    size_t blocks = n / 64;
    for (size_t i = 0; i < blocks; ++i, d += 64, s += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(s + 0));
        __m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(s + 48));
        _mm_stream_si128((__m128i *)(d + 0), a);
        _mm_stream_si128((__m128i *)(d + 16), b);
        _mm_stream_si128((__m128i *)(d + 32), c);
        _mm_stream_si128((__m128i *)(d + 48), e);
    }
    _mm_sfence();
    memcpy(d, s, n - blocks * 64);
    return 1;
#else
    memcpy(dst, src, n);
    return 0;
#endif
}

/* warplab's staging copy with non-temporal stores: the extension module warplab.core._ntcopy,
 * built with the package (setup.py) and used by core/ntcopy.py.
 *
 * A pageable array is copied into a pinned staging buffer and then read once by the GPU's DMA:
 * the copy's destination is never read by the CPU again, so writing it through the caches
 * (glibc's memcpy below its non-temporal threshold, about 3/4 of the L3: 225 MiB on the H100
 * machine) costs a read for ownership per line and evicts the source. Streaming stores write
 * whole lines straight to memory.
 *
 * copy(dst, src) -> bool
 *   The bytes of src (a C-contiguous buffer) into dst (a writable C-contiguous buffer of the
 *   same size; the caller keeps them disjoint), without the GIL, so that threads copy pieces
 *   side by side. True when streaming stores were used.
 * STREAMING
 *   1 where the compiler targets SSE2 (x86-64), else 0: copy is then a plain memcpy and
 *   core/ntcopy.py uses np.copyto instead.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#define STREAMING 1
#else
#define STREAMING 0
#endif

/* Copy n bytes from src to dst (no overlap); returns 1 when streaming stores were used. */
static int nt_copy(void *dst, const void *src, size_t n) {
#if STREAMING
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

static PyObject *copy(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "copy(dst, src)");
        return NULL;
    }
    Py_buffer dst, src;
    if (PyObject_GetBuffer(args[0], &dst, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) != 0)
        return NULL;
    if (PyObject_GetBuffer(args[1], &src, PyBUF_C_CONTIGUOUS) != 0) {
        PyBuffer_Release(&dst);
        return NULL;
    }
    int streamed = 0;
    if (dst.len != src.len) {
        PyErr_Format(PyExc_ValueError, "copy: %zd bytes into %zd", src.len, dst.len);
    } else {
        Py_BEGIN_ALLOW_THREADS
        streamed = nt_copy(dst.buf, src.buf, (size_t)dst.len);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    if (PyErr_Occurred()) return NULL;
    return PyBool_FromLong(streamed);
}

static PyMethodDef methods[] = {
    {"copy", (PyCFunction)(void (*)(void))copy, METH_FASTCALL,
     "copy(dst, src): src's bytes into dst (same size, disjoint) with streaming stores"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "warplab.core._ntcopy", NULL, -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__ntcopy(void) {
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "STREAMING", STREAMING) != 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

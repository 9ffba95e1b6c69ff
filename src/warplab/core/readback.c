/* warplab's device-to-host reads for small results: the functions read and read_into of the
 * extension module warplab.core._launch (setup.py; launch.c holds the module, the driver and
 * the launches, launch_driver.h what the two share). Used by core/scalar.py.
 *
 * Both raise RuntimeError until driver() (launch.c) has found libcuda's functions.
 *
 * read(address, stream, kind) -> int, float or bool
 *   One element at a device address, as NumPy's item() makes it: kind is the NumPy type
 *   character (b B h H i I l L q Q f d ?). One cuMemcpyDtoHAsync on the stream into this
 *   host thread's page-locked staging word (allocated on its first read, portable across
 *   contexts, freed when the thread exits) and one cuStreamSynchronize, without the GIL.
 *   What the 0-d results' float()/int()/item() use (core/scalar.py): CuPy's get() allocates
 *   a NumPy array, switches devices and copies with a synchronous cudaMemcpy into pageable
 *   memory (a copy into pageable memory costs ~6 us more than into pinned on the H100 host,
 *   benchmarks/NOTES.md).
 *
 * read_into(address, stream, out) -> None
 *   The bytes of a device array into out (a writable C-contiguous buffer: a new NumPy array),
 *   as many as out holds: one cuMemcpyDtoHAsync on the stream into the same staging buffer
 *   (grown to the largest read so far, a power of two of at least 256 bytes), one
 *   cuStreamSynchronize without the GIL, one memcpy into out. What the small results' get()
 *   uses (core/scalar.py: DeviceArray); the caller bounds the size. Both raise DriverError
 *   when the driver refuses a copy.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "launch_driver.h"

#define CU_MEMHOSTALLOC_PORTABLE 1

static pthread_key_t staging_key;

/* A host thread's page-locked staging buffer (the thread-specific value of staging_key). */
typedef struct {
    size_t size;
    void *host;
} staging;

static void free_staging(void *p) {
    staging *st = p;
    if (st == NULL) return;
    if (st->host != NULL && warplab_cu_host_free != NULL) warplab_cu_host_free(st->host);
    free(st);
}

/* This thread's staging buffer of at least n bytes (allocated on first use, portable across
 * contexts, grown to a power of two >= 256); NULL with a Python error set. */
static void *staged(size_t n) {
    if (warplab_cu_copy == NULL || warplab_cu_sync == NULL || warplab_cu_host_alloc == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "read: libcuda is not open (call driver()) or lacks "
                        "cuMemcpyDtoHAsync_v2, cuStreamSynchronize or cuMemHostAlloc");
        return NULL;
    }
    staging *st = pthread_getspecific(staging_key);
    if (st == NULL) {
        st = calloc(1, sizeof *st);
        if (st == NULL || pthread_setspecific(staging_key, st) != 0) {
            free(st);
            PyErr_SetString(PyExc_RuntimeError, "read: no thread-local staging buffer");
            return NULL;
        }
    }
    if (st->size < n) {
        size_t size = 256;
        while (size < n) size <<= 1;
        void *p = NULL;
        int rc = warplab_cu_host_alloc(&p, size, CU_MEMHOSTALLOC_PORTABLE);
        if (rc != 0) {
            warplab_driver_error("cuMemHostAlloc", rc);
            return NULL;
        }
        if (st->host != NULL) warplab_cu_host_free(st->host);
        st->host = p;
        st->size = size;
    }
    return st->host;
}

/* n bytes at a device address into this thread's staging buffer, after the stream's work;
 * the buffer, or NULL with a Python error set. */
static void *fetch(uint64_t address, void *stream, size_t n) {
    void *host = staged(n);
    if (host == NULL) return NULL;
    const char *failed = NULL;
    int rc = 0;
    Py_BEGIN_ALLOW_THREADS
    rc = warplab_cu_copy(host, address, n, stream);
    if (rc != 0) failed = "cuMemcpyDtoHAsync";
    else if ((rc = warplab_cu_sync(stream)) != 0) failed = "cuStreamSynchronize";
    Py_END_ALLOW_THREADS
    if (failed != NULL) {
        warplab_driver_error(failed, rc);
        return NULL;
    }
    return host;
}

/* The device address and the stream handle of a read's first two arguments; 0 on success. */
static int source(PyObject *const *args, uint64_t *address, void **stream) {
    *address = PyLong_AsUnsignedLongLong(args[0]);
    if (PyErr_Occurred()) return -1;
    *stream = PyLong_AsVoidPtr(args[1]);
    return *stream == NULL && PyErr_Occurred() ? -1 : 0;
}

PyObject *warplab_read_element(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3 || !PyUnicode_Check(args[2]) || PyUnicode_GET_LENGTH(args[2]) != 1) {
        PyErr_SetString(PyExc_TypeError, "read(address, stream, kind: one character)");
        return NULL;
    }
    uint64_t address;
    void *stream;
    if (source(args, &address, &stream)) return NULL;
    Py_UCS4 kind = PyUnicode_READ_CHAR(args[2], 0);
    size_t size;
    switch (kind) {
    case 'b': case 'B': case '?': size = 1; break;
    case 'h': case 'H': size = 2; break;
    case 'i': case 'I': case 'f': size = 4; break;
    case 'l': case 'L': case 'q': case 'Q': case 'd': size = 8; break;
    default:
        PyErr_Format(PyExc_TypeError, "read: no element of kind '%c'", (int)kind);
        return NULL;
    }
    typedef union { int8_t b; uint8_t B; int16_t h; uint16_t H; int32_t i; uint32_t I;
                    int64_t q; uint64_t Q; float f; double d; } element;
    element *got = fetch(address, stream, size);
    if (got == NULL) return NULL;
    element v = *got;
    switch (kind) {
    case 'b': return PyLong_FromLong(v.b);
    case 'B': return PyLong_FromLong(v.B);
    case '?': return PyBool_FromLong(v.B);
    case 'h': return PyLong_FromLong(v.h);
    case 'H': return PyLong_FromLong(v.H);
    case 'i': return PyLong_FromLong(v.i);
    case 'I': return PyLong_FromUnsignedLong(v.I);
    case 'f': return PyFloat_FromDouble(v.f);
    case 'd': return PyFloat_FromDouble(v.d);
    case 'l': case 'q': return PyLong_FromLongLong(v.q);
    default: return PyLong_FromUnsignedLongLong(v.Q);
    }
}

PyObject *warplab_read_into(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "read_into(address, stream, out)");
        return NULL;
    }
    uint64_t address;
    void *stream;
    if (source(args, &address, &stream)) return NULL;
    Py_buffer out;
    if (PyObject_GetBuffer(args[2], &out, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) != 0) return NULL;
    void *got = out.len > 0 ? fetch(address, stream, (size_t)out.len) : NULL;
    if (got != NULL) memcpy(out.buf, got, (size_t)out.len);
    PyBuffer_Release(&out);
    if (got == NULL && PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

int warplab_readback_init(void) {
    if (pthread_key_create(&staging_key, free_staging) != 0) {
        PyErr_SetString(PyExc_ImportError, "pthread_key_create failed");
        return -1;
    }
    return 0;
}

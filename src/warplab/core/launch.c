/* warplab's kernel launch for small calls: one cuLaunchKernel from C.
 *
 * Built with the package as the extension module warplab.core._launch (setup.py); used by
 * core/launch.py and core/scalar.py.
 *
 * CuPy's RawKernel call packs its arguments in Cython (a few microseconds for a kernel of
 * five arguments); launching through ctypes or cuda.bindings from Python costs more still
 * (benchmarks/NOTES.md). Here a prepared launch passes the kernel's handle, the grid, the
 * block, the dynamic shared memory, the stream and the arguments as Python ints and floats
 * with a format string, and one C function packs them and calls the driver.
 *
 * driver() -> None or str
 *   Opens libcuda.so.1 (dlopen, on the first call; it is loaded already wherever CuPy has
 *   run) and returns None when the driver's functions are there, else why not (the answer
 *   of the first call, kept). launch, read and read_into raise RuntimeError until it is None.
 *
 * launch(function, grid, block, shared, stream, format, *args) -> None
 *   function  CUfunction handle (int: CuPy's Function.ptr)
 *   grid      int or tuple of up to three ints; block likewise
 *   shared    dynamic shared memory in bytes
 *   stream    CUstream handle (int: CuPy's Stream.ptr; 0 legacy, 2 per-thread default)
 *   format    bytes, one letter per argument: a (an address: an int, or an array's
 *             .data.ptr, CuPy's), p or Q (uint64), q (int64), i (int32), I (uint32) from
 *             ints or NumPy integers, f (float32), d (float64) from floats, b (the bytes of
 *             any buffer: a NumPy scalar or a structured record, passed as one parameter)
 * Raises TypeError / OverflowError for bad arguments and DriverError (a RuntimeError whose
 * .code is the driver's CUresult; the message names the call, the error's name and code)
 * when the driver refuses the launch.
 *
 * launch_after(function, grid, block, shared, stream, format, *args) -> None
 *   launch's arguments; one cuLaunchKernelEx with programmatic stream serialization
 *   (programmatic dependent launch, sm_90 and later): the kernel's blocks may be scheduled
 *   before the stream's previous kernel has finished, so the kernel must wait for it
 *   (griddepcontrol.wait, core/warplab.cuh wait_prior_grids) before its first memory access.
 *   Where the driver refuses that launch for any reason but a missing context, the plain
 *   cuLaunchKernel follows, and its error is the one raised. can_launch_after() says whether
 *   the driver has cuLaunchKernelEx (CUDA 12.0 and later).
 *
 * launch_1d (a capsule, not a function): the C function hostcopy.c's device_pairs launches
 *   copy_batched's few-buffer kernel through (int launch_1d(function, grid, block, stream,
 *   params): one cuLaunchKernel of a one-dimensional grid without dynamic shared memory; the
 *   CUresult, -1 while libcuda is not open).
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
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGS 32

typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                         unsigned, void *, void **, void **);
/* cuLaunchKernelEx's CUlaunchAttribute and CUlaunchConfig (cuda.h), the fields used here. */
typedef struct {
    int id;
    char pad[4];
    union {
        char bytes[64];
        int value;
        void *align;
    } value;
} launch_attribute;
typedef struct {
    unsigned grid_x, grid_y, grid_z, block_x, block_y, block_z, shared;
    void *stream;
    launch_attribute *attrs;
    unsigned num_attrs;
} launch_config;
typedef int (*launch_ex_fn)(const launch_config *, void *, void **, void **);
#define CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION 6
#define CUDA_ERROR_INVALID_CONTEXT 201
typedef int (*name_fn)(int, const char **);
typedef int (*copy_fn)(void *, uint64_t, size_t, void *);
typedef int (*sync_fn)(void *);
typedef int (*host_alloc_fn)(void **, size_t, unsigned);
typedef int (*host_free_fn)(void *);

static launch_fn cu_launch;
static launch_ex_fn cu_launch_ex;
static name_fn cu_error_name;
static copy_fn cu_copy;
static sync_fn cu_sync;
static host_alloc_fn cu_host_alloc;
static host_free_fn cu_host_free;
static pthread_key_t staging_key;
static PyObject *DriverError;
/* NULL before driver()'s first call; then "" when libcuda's functions are there, else why
 * not. */
static const char *driver_missing;
static char driver_reason[512];

#define CU_MEMHOSTALLOC_PORTABLE 1

static PyObject *driver_error(const char *what, int rc);

/* A host thread's page-locked staging buffer (the thread-specific value of staging_key). */
typedef struct {
    size_t size;
    void *host;
} staging;

static void free_staging(void *p) {
    staging *st = p;
    if (st == NULL) return;
    if (st->host != NULL && cu_host_free != NULL) cu_host_free(st->host);
    free(st);
}

/* This thread's staging buffer of at least n bytes (allocated on first use, portable across
 * contexts, grown to a power of two >= 256); NULL with a Python error set. */
static void *staged(size_t n) {
    if (cu_copy == NULL || cu_sync == NULL || cu_host_alloc == NULL) {
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
        int rc = cu_host_alloc(&p, size, CU_MEMHOSTALLOC_PORTABLE);
        if (rc != 0) {
            driver_error("cuMemHostAlloc", rc);
            return NULL;
        }
        if (st->host != NULL) cu_host_free(st->host);
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
    rc = cu_copy(host, address, n, stream);
    if (rc != 0) failed = "cuMemcpyDtoHAsync";
    else if ((rc = cu_sync(stream)) != 0) failed = "cuStreamSynchronize";
    Py_END_ALLOW_THREADS
    if (failed != NULL) {
        driver_error(failed, rc);
        return NULL;
    }
    return host;
}

typedef union {
    void *p;
    int64_t q;
    uint64_t Q;
    int32_t i;
    uint32_t I;
    float f;
    double d;
} slot;

/* An int or a tuple of up to three positive ints into dims[3]; 0 on success. */
static int dims_of(PyObject *o, unsigned dims[3], const char *what) {
    dims[0] = dims[1] = dims[2] = 1;
    if (PyLong_Check(o)) {
        unsigned long v = PyLong_AsUnsignedLong(o);
        if (v == (unsigned long)-1 && PyErr_Occurred()) return -1;
        dims[0] = (unsigned)v;
        return 0;
    }
    if (!PyTuple_Check(o) || PyTuple_GET_SIZE(o) < 1 || PyTuple_GET_SIZE(o) > 3) {
        PyErr_Format(PyExc_TypeError, "%s must be an int or a tuple of 1 to 3 ints", what);
        return -1;
    }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(o); k++) {
        unsigned long v = PyLong_AsUnsignedLong(PyTuple_GET_ITEM(o, k));
        if (v == (unsigned long)-1 && PyErr_Occurred()) return -1;
        dims[k] = (unsigned)v;
    }
    return 0;
}

static PyObject *str_data, *str_ptr;

/* o as a Python int (numpy integers through __index__); a new reference or NULL. */
static PyObject *as_int(PyObject *o) {
    if (PyLong_Check(o)) {
        Py_INCREF(o);
        return o;
    }
    return PyNumber_Index(o);
}

/* The device address of an int or of an array with .data.ptr (CuPy's). */
static int address(PyObject *o, slot *s) {
    PyObject *data = NULL, *ptr = NULL;
    if (PyLong_Check(o)) {
        s->Q = PyLong_AsUnsignedLongLong(o);
    } else if ((data = PyObject_GetAttr(o, str_data)) && (ptr = PyObject_GetAttr(data, str_ptr))) {
        s->Q = PyLong_AsUnsignedLongLong(ptr);
    }
    Py_XDECREF(ptr);
    Py_XDECREF(data);
    return PyErr_Occurred() ? -1 : 0;
}

static int pack(char kind, PyObject *o, slot *s) {
    if (kind == 'a') return address(o, s);
    if (kind == 'f' || kind == 'd') {
        double v = PyFloat_AsDouble(o);
        if (kind == 'f') s->f = (float)v; else s->d = v;
        return PyErr_Occurred() ? -1 : 0;
    }
    PyObject *n = as_int(o);
    if (n == NULL) return -1;
    switch (kind) {
    case 'p':
    case 'Q': s->Q = PyLong_AsUnsignedLongLong(n); break;
    case 'q': s->q = PyLong_AsLongLong(n); break;
    case 'i': {
        long long v = PyLong_AsLongLong(n);
        if (!PyErr_Occurred() && (v < INT32_MIN || v > INT32_MAX))
            PyErr_SetString(PyExc_OverflowError, "an int32 argument is out of range");
        s->i = (int32_t)v;
        break;
    }
    case 'I': {
        unsigned long long v = PyLong_AsUnsignedLongLong(n);
        if (!PyErr_Occurred() && v > UINT32_MAX)
            PyErr_SetString(PyExc_OverflowError, "a uint32 argument is out of range");
        s->I = (uint32_t)v;
        break;
    }
    default:
        PyErr_Format(PyExc_TypeError, "unknown argument format letter '%c'", kind);
    }
    Py_DECREF(n);
    return PyErr_Occurred() ? -1 : 0;
}

/* DriverError "<what> failed: <name> (<rc>)" whose .code is rc; NULL. */
static PyObject *driver_error(const char *what, int rc) {
    const char *name = "unknown";
    if (cu_error_name) cu_error_name(rc, &name);
    PyObject *exc = PyObject_CallFunction(DriverError, "N",
                                          PyUnicode_FromFormat("%s failed: %s (%d)", what,
                                                               name, rc));
    if (exc == NULL) return NULL;
    PyObject *code = PyLong_FromLong(rc);
    if (code == NULL || PyObject_SetAttrString(exc, "code", code) != 0) {
        Py_XDECREF(code);
        Py_DECREF(exc);
        return NULL;
    }
    Py_DECREF(code);
    PyErr_SetObject(DriverError, exc);
    Py_DECREF(exc);
    return NULL;
}

/* launch and launch_after: after != 0 launches with programmatic stream serialization. */
static PyObject *launch_with(PyObject *const *args, Py_ssize_t nargs, int after) {
    const char *name = after ? "launch_after" : "launch";
    if (nargs < 6) {
        PyErr_Format(PyExc_TypeError,
                     "%s(function, grid, block, shared, stream, format, *args)", name);
        return NULL;
    }
    if (after ? cu_launch_ex == NULL : cu_launch == NULL) {
        PyErr_Format(PyExc_RuntimeError, "%s: libcuda is not open (call driver())%s", name,
                     after ? " or has no cuLaunchKernelEx" : "");
        return NULL;
    }
    void *function = PyLong_AsVoidPtr(args[0]);
    if (function == NULL) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a null kernel handle");
        return NULL;
    }
    unsigned grid[3], block[3];
    if (dims_of(args[1], grid, "grid") || dims_of(args[2], block, "block")) return NULL;
    unsigned long shared = PyLong_AsUnsignedLong(args[3]);
    if (shared == (unsigned long)-1 && PyErr_Occurred()) return NULL;
    void *stream = PyLong_AsVoidPtr(args[4]);
    if (stream == NULL && PyErr_Occurred()) return NULL;
    if (!PyBytes_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError, "format must be bytes");
        return NULL;
    }
    const char *format = PyBytes_AS_STRING(args[5]);
    Py_ssize_t count = nargs - 6;
    if (PyBytes_GET_SIZE(args[5]) != count || count > MAX_ARGS) {
        PyErr_Format(PyExc_TypeError, "format has %zd letters for %zd arguments (at most %d)",
                     PyBytes_GET_SIZE(args[5]), count, MAX_ARGS);
        return NULL;
    }
    slot values[MAX_ARGS];
    void *params[MAX_ARGS];
    Py_buffer views[MAX_ARGS];
    Py_ssize_t held = 0, k = 0;
    int rc = 0;
    for (; k < count; k++) {
        if (format[k] == 'b') {  /* a blob: the bytes of a buffer (a struct parameter) */
            if (PyObject_GetBuffer(args[6 + k], &views[held], PyBUF_SIMPLE)) break;
            params[k] = views[held++].buf;
        } else {
            if (pack(format[k], args[6 + k], &values[k])) break;
            params[k] = &values[k];
        }
    }
    if (k == count && after) {
        launch_attribute attr;
        memset(&attr, 0, sizeof attr);
        attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attr.value.value = 1;
        launch_config config = {grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                (unsigned)shared, stream, &attr, 1};
        rc = cu_launch_ex(&config, function, params, NULL);
        /* a driver or device that refuses the attribute (not a missing context): the plain
         * launch, whose error, if any, is the one raised */
        if (rc != 0 && rc != CUDA_ERROR_INVALID_CONTEXT) {
            after = 0;
            rc = cu_launch(function, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                           (unsigned)shared, stream, params, NULL);
        }
    } else if (k == count) {
        rc = cu_launch(function, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                       (unsigned)shared, stream, params, NULL);
    }
    while (held > 0) PyBuffer_Release(&views[--held]);
    if (k < count) return NULL;
    if (rc != 0) return driver_error(after ? "cuLaunchKernelEx" : "cuLaunchKernel", rc);
    Py_RETURN_NONE;
}

/* What hostcopy.c's device_pairs launches through (the capsule launch_1d): one cuLaunchKernel
 * of a one-dimensional grid without dynamic shared memory; the CUresult, -1 when libcuda is
 * not open. */
static int launch_1d(void *function, unsigned grid, unsigned block, void *stream,
                     void **params) {
    if (cu_launch == NULL) return -1;
    return cu_launch(function, grid, 1, 1, block, 1, 1, 0, stream, params, NULL);
}

static PyObject *launch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    return launch_with(args, nargs, 0);
}

static PyObject *launch_after(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    return launch_with(args, nargs, 1);
}

static PyObject *can_launch_after(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyBool_FromLong(cu_launch_ex != NULL);
}

/* The device address and the stream handle of a read's first two arguments; 0 on success. */
static int source(PyObject *const *args, uint64_t *address, void **stream) {
    *address = PyLong_AsUnsignedLongLong(args[0]);
    if (PyErr_Occurred()) return -1;
    *stream = PyLong_AsVoidPtr(args[1]);
    return *stream == NULL && PyErr_Occurred() ? -1 : 0;
}

static PyObject *read_element(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
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

static PyObject *read_into(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
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

/* Opens libcuda.so.1 and looks its functions up, once; None when they are there, else the
 * reason (kept: later calls answer the same without another dlopen). */
static PyObject *driver(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    if (driver_missing == NULL) {
        void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (lib == NULL) {
            const char *why = dlerror();
            snprintf(driver_reason, sizeof driver_reason, "no CUDA driver (%s)",
                     why ? why : "unknown");
            driver_missing = driver_reason;
        } else {
            launch_fn l = (launch_fn)dlsym(lib, "cuLaunchKernel");
            cu_launch_ex = (launch_ex_fn)dlsym(lib, "cuLaunchKernelEx");
            cu_error_name = (name_fn)dlsym(lib, "cuGetErrorName");
            cu_copy = (copy_fn)dlsym(lib, "cuMemcpyDtoHAsync_v2");
            cu_sync = (sync_fn)dlsym(lib, "cuStreamSynchronize");
            cu_host_alloc = (host_alloc_fn)dlsym(lib, "cuMemHostAlloc");
            cu_host_free = (host_free_fn)dlsym(lib, "cuMemFreeHost");
            driver_missing = l == NULL ? "libcuda.so.1 has no cuLaunchKernel" : "";
            cu_launch = l;
        }
    }
    if (driver_missing[0] == '\0') Py_RETURN_NONE;
    return PyUnicode_FromString(driver_missing);
}

static PyMethodDef methods[] = {
    {"driver", driver, METH_NOARGS,
     "driver(): None once libcuda.so.1 is open with its functions, else why not"},
    {"launch", (PyCFunction)(void (*)(void))launch, METH_FASTCALL,
     "launch(function, grid, block, shared, stream, format, *args): one cuLaunchKernel"},
    {"launch_after", (PyCFunction)(void (*)(void))launch_after, METH_FASTCALL,
     "launch_after(function, grid, block, shared, stream, format, *args): one "
     "cuLaunchKernelEx with programmatic stream serialization"},
    {"can_launch_after", can_launch_after, METH_NOARGS,
     "can_launch_after(): whether the open libcuda has cuLaunchKernelEx"},
    {"read", (PyCFunction)(void (*)(void))read_element, METH_FASTCALL,
     "read(address, stream, kind): one element at a device address, synchronising stream"},
    {"read_into", (PyCFunction)(void (*)(void))read_into, METH_FASTCALL,
     "read_into(address, stream, out): out's size in bytes from a device address"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "warplab.core._launch", NULL, -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__launch(void) {
    if (pthread_key_create(&staging_key, free_staging) != 0) {
        PyErr_SetString(PyExc_ImportError, "pthread_key_create failed");
        return NULL;
    }
    str_data = PyUnicode_InternFromString("data");
    str_ptr = PyUnicode_InternFromString("ptr");
    if (str_data == NULL || str_ptr == NULL) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    DriverError = PyErr_NewExceptionWithDoc(
        "warplab.core._launch.DriverError",
        "A CUDA driver call failed; .code is its CUresult (201: no current context).",
        PyExc_RuntimeError, NULL);
    if (DriverError == NULL) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(DriverError);
    if (PyModule_AddObject(m, "DriverError", DriverError) != 0) {
        Py_DECREF(DriverError);
        Py_DECREF(m);
        return NULL;
    }
    PyObject *api = PyCapsule_New((void *)launch_1d, "warplab.core._launch.launch_1d", NULL);
    if (api == NULL || PyModule_AddObject(m, "launch_1d", api) != 0) {
        Py_XDECREF(api);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

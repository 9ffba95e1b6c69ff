/* warplab's kernel launch for small calls: one cuLaunchKernel from C.
 *
 * Built with the package as the extension module warplab.core._launch (setup.py) from this
 * file (the driver, the launches, the module) and readback.c (the device-to-host reads read
 * and read_into); launch_driver.h is what the two share. Used by core/launch.py and
 * core/scalar.py.
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
 * launch_1d (a capsule, not a function): the C function devicepairs.c's device_pairs launches
 *   copy_batched's few-buffer kernel through (int launch_1d(function, grid, block, stream,
 *   params): one cuLaunchKernel of a one-dimensional grid without dynamic shared memory; the
 *   CUresult, -1 while libcuda is not open).
 *
 * read(address, stream, kind) and read_into(address, stream, out): readback.c.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "launch_driver.h"

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

static launch_fn cu_launch;
static launch_ex_fn cu_launch_ex;
static name_fn cu_error_name;
/* the copy functions readback.c calls (launch_driver.h) */
copy_fn warplab_cu_copy;
sync_fn warplab_cu_sync;
host_alloc_fn warplab_cu_host_alloc;
host_free_fn warplab_cu_host_free;
static PyObject *DriverError;
/* NULL before driver()'s first call; then "" when libcuda's functions are there, else why
 * not. */
static const char *driver_missing;
static char driver_reason[512];

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

/* DriverError "<what> failed: <name> (<rc>)" whose .code is rc; NULL (launch_driver.h). */
PyObject *warplab_driver_error(const char *what, int rc) {
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
    if (rc != 0)
        return warplab_driver_error(after ? "cuLaunchKernelEx" : "cuLaunchKernel", rc);
    Py_RETURN_NONE;
}

/* What devicepairs.c's device_pairs launches through (the capsule launch_1d): one cuLaunchKernel
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
            warplab_cu_copy = (copy_fn)dlsym(lib, "cuMemcpyDtoHAsync_v2");
            warplab_cu_sync = (sync_fn)dlsym(lib, "cuStreamSynchronize");
            warplab_cu_host_alloc = (host_alloc_fn)dlsym(lib, "cuMemHostAlloc");
            warplab_cu_host_free = (host_free_fn)dlsym(lib, "cuMemFreeHost");
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
    {"read", (PyCFunction)(void (*)(void))warplab_read_element, METH_FASTCALL,
     "read(address, stream, kind): one element at a device address, synchronising stream"},
    {"read_into", (PyCFunction)(void (*)(void))warplab_read_into, METH_FASTCALL,
     "read_into(address, stream, out): out's size in bytes from a device address"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "warplab.core._launch", NULL, -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__launch(void) {
    if (warplab_readback_init() != 0) return NULL;
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

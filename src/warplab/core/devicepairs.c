/* copy_batched's device pairs read and checked in C: device_pairs of the extension module
 * warplab.core._hostcopy (setup.py; hostcopy.c holds the module, copy_pairs and the overlap
 * test of the spans, hostcopy_pairs.h what the two share). Used by
 * families/memcpy/transfer.py.
 *
 * device_pairs(ndarray, dsts, srcs, device, rows) -> (table, largest, total, device) or None
 *   copy_batched's device pairs read and checked in one call (families/memcpy/transfer.py):
 *   every element an exact `ndarray` (CuPy's type, passed), C-contiguous (`_c_contiguous`),
 *   its memory (`data`) on `device` (`data.device_id`), each pair of equal byte sizes
 *   (`size` x `dtype.itemsize`, CuPy's `nbytes`, the itemsize kept for the last dtype seen), and
 *   no destination overlapping another destination or a source (the same interval test as
 *   copy_pairs). The attributes are read through their types' getset descriptors, looked up
 *   once per type (read_attr): half the time of PyObject_GetAttr and `nbytes` on 8 pairs of
 *   CuPy arrays (benchmarks/NOTES.md). Then the address table: `table` is bytes of three rows
 *   of max(n, rows) uint64 (source addresses, destination addresses, sizes; zeros after the
 *   n-th), the launch parameter of the few-buffer kernel as it is (families/memcpy/table.cu);
 *   `largest` and `total` the largest and summed byte sizes. None, with no exception, for any other
 *   call (an attribute missing or of another type included): the caller's general path then
 *   reads the arrays again and raises what it raises.
 * device_pairs(ndarray, dsts, srcs, device, rows, launch, count, stream) -> True, the tuple
 *   above, or None
 *   The same read, and where the pairs are taken, at most `count` buffers (and `rows`) none
 *   above `launch`'s byte bound, the few-buffer kernel launched on them here: one
 *   cuLaunchKernel through launch.c (`launch` is (capsule launch_1d of warplab.core._launch,
 *   byte bound, kernel handle, block threads, and anything after them: the caller's, such as
 *   the object that keeps the kernel's module loaded); grid n, parameters the table and int32
 *   n, on the stream handle `stream`), then True. A batch the launch does not take, or a launch
 *   the driver refuses (a host thread with no current context among them), returns the tuple
 *   as the five-argument form does, so that the caller's planned path runs it and raises what
 *   it raises.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "hostcopy_pairs.h"

/* launch.c's launch_1d (the capsule LAUNCH_1D): cuLaunchKernel of a one-dimensional grid
 * without dynamic shared memory; the driver's CUresult, -1 when libcuda is not open. */
typedef int (*launch_1d_fn)(void *function, unsigned grid, unsigned block, void *stream,
                            void **params);
#define LAUNCH_1D "warplab.core._launch.launch_1d"

/* The names device_pairs reads, interned once (module init). */
static PyObject *s_c_contiguous, *s_size, *s_dtype, *s_itemsize, *s_data, *s_ptr, *s_device_id;

/* An attribute read through its type's getset descriptor: `get` (with `closure`) is the C
 * getter that PyObject_GetAttr ends in for an object of exactly `type` (a type with the
 * generic attribute lookup; a getset descriptor is a data descriptor, so no instance dict
 * shadows it), looked up once per type and again whenever the type's version tag moves (the
 * type was changed). `type` NULL: not resolved. */
typedef struct {
    PyTypeObject *type;
    unsigned int tag;
    getter get;
    void *closure;
} Attr;

static Attr a_contiguous, a_size, a_dtype, a_itemsize, a_data, a_ptr, a_device_id;

/* `o.name` through `*at` when `o`'s type is the one resolved (or resolvable) and the
 * attribute is a getset descriptor with a getter; PyObject_GetAttr otherwise. New reference;
 * NULL with an exception set when the read fails. */
static PyObject *read_attr(PyObject *o, PyObject *name, Attr *at) {
    PyTypeObject *t = Py_TYPE(o);
    if (at->type != t || at->tag != t->tp_version_tag || at->tag == 0) {
        at->type = NULL;
        PyObject *d = t->tp_getattro == PyObject_GenericGetAttr
                      ? PyObject_GetAttr((PyObject *)t, name) : NULL;  /* the descriptor */
        if (d == NULL) {
            PyErr_Clear();
        } else {
            if (Py_IS_TYPE(d, &PyGetSetDescr_Type) && t->tp_version_tag != 0
                    && ((PyGetSetDescrObject *)d)->d_getset->get != NULL) {
                at->get = ((PyGetSetDescrObject *)d)->d_getset->get;
                at->closure = ((PyGetSetDescrObject *)d)->d_getset->closure;
                at->tag = t->tp_version_tag;
                at->type = t;
            }
            Py_DECREF(d);
        }
        if (at->type == NULL) return PyObject_GetAttr(o, name);
    }
    return at->get(o, at->closure);
}

/* `o.name` (read_attr) as an unsigned 64-bit integer; 0 (no exception) when it is missing or
 * not a non-negative int. */
static int u64_attr(PyObject *o, PyObject *name, Attr *at, uint64_t *out) {
    PyObject *v = read_attr(o, name, at);
    if (v == NULL) {
        PyErr_Clear();
        return 0;
    }
    int ok = PyLong_Check(v);
    if (ok) {
        *out = PyLong_AsUnsignedLongLong(v);
        if (*out == (uint64_t)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            ok = 0;
        }
    }
    Py_DECREF(v);
    return ok;
}

/* The last dtype seen (a strong reference) and its itemsize: CuPy's `nbytes` reads the
 * dtype's itemsize through Python on every call, a dtype changes between calls seldom. */
static PyObject *last_dtype;
static uint64_t last_itemsize;

/* `a.size * a.dtype.itemsize` (CuPy's `nbytes`); 0 (no exception) when an attribute is
 * missing or not a non-negative int. */
static int array_nbytes(PyObject *a, uint64_t *nbytes) {
    uint64_t size = 0;
    if (!u64_attr(a, s_size, &a_size, &size)) return 0;
    PyObject *dt = read_attr(a, s_dtype, &a_dtype);
    if (dt == NULL) {
        PyErr_Clear();
        return 0;
    }
    if (dt != last_dtype) {
        uint64_t item = 0;
        if (!u64_attr(dt, s_itemsize, &a_itemsize, &item)) {
            Py_DECREF(dt);
            return 0;
        }
        Py_XSETREF(last_dtype, dt);  /* takes the reference */
        last_itemsize = item;
    } else {
        Py_DECREF(dt);
    }
    *nbytes = size * last_itemsize;
    return 1;
}

/* The address and byte size of a CuPy array `a` that is C-contiguous with its memory on
 * `device`; 0 (no exception) otherwise. */
static int device_array(PyObject *a, uint64_t device, uint64_t *ptr, uint64_t *nbytes) {
    PyObject *c = read_attr(a, s_c_contiguous, &a_contiguous);
    if (c == NULL) {
        PyErr_Clear();
        return 0;
    }
    int ok = c == Py_True;
    Py_DECREF(c);
    if (!ok || !array_nbytes(a, nbytes)) return 0;
    PyObject *data = read_attr(a, s_data, &a_data);
    if (data == NULL) {
        PyErr_Clear();
        return 0;
    }
    uint64_t on = 0;
    ok = u64_attr(data, s_device_id, &a_device_id, &on) && on == device
         && u64_attr(data, s_ptr, &a_ptr, ptr);
    Py_DECREF(data);
    return ok;
}

/* device_pairs' optional launch: its arguments read (0 with an exception set when they are
 * malformed). */
typedef struct {
    launch_1d_fn fn;
    uint64_t max_bytes, max_count;
    void *function, *stream;
    unsigned block;
} TableLaunch;

static int table_launch(PyObject *const *args, TableLaunch *go) {
    PyObject *t = args[0];
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) < 4) {
        PyErr_SetString(PyExc_TypeError, "launch: (launch_1d, max_bytes, function, block, ...)");
        return 0;
    }
    go->fn = (launch_1d_fn)PyCapsule_GetPointer(PyTuple_GET_ITEM(t, 0), LAUNCH_1D);
    if (go->fn == NULL) return 0;
    go->max_bytes = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(t, 1));
    go->function = PyLong_AsVoidPtr(PyTuple_GET_ITEM(t, 2));
    go->block = (unsigned)PyLong_AsUnsignedLong(PyTuple_GET_ITEM(t, 3));
    go->max_count = PyLong_AsUnsignedLongLong(args[1]);
    go->stream = PyLong_AsVoidPtr(args[2]);
    return !PyErr_Occurred();
}

PyObject *warplab_device_pairs(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if ((nargs != 5 && nargs != 8) || !PyType_Check(args[0]) || !PyList_Check(args[1])
            || !PyList_Check(args[2]) || !PyLong_Check(args[3]) || !PyLong_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError,
                        "device_pairs(ndarray, dsts: list, srcs: list, device: int, rows: int"
                        "[, launch, count, stream])");
        return NULL;
    }
    TableLaunch go = {0};
    if (nargs == 8 && !table_launch(args + 5, &go)) return NULL;
    PyTypeObject *nd = (PyTypeObject *)args[0];
    PyObject *dsts = args[1], *srcs = args[2];
    uint64_t device = PyLong_AsUnsignedLongLong(args[3]);
    Py_ssize_t rows = PyLong_AsSsize_t(args[4]);
    if (PyErr_Occurred()) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(dsts);
    if (n == 0 || n != PyList_GET_SIZE(srcs)) Py_RETURN_NONE;
    for (Py_ssize_t i = 0; i < n; ++i)
        if (Py_TYPE(PyList_GET_ITEM(dsts, i)) != nd || Py_TYPE(PyList_GET_ITEM(srcs, i)) != nd)
            Py_RETURN_NONE;
    const int fits = nargs == 8 && n <= rows; /* the kernel's table is `rows` long */
    if (rows < n) rows = n;
    PyObject *table = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(3 * sizeof(uint64_t)) * rows);
    Span *spans = PyMem_Malloc(sizeof(Span) * (size_t)(2 * n + 1)); /* destinations, sources */
    if (table == NULL || spans == NULL) {
        Py_XDECREF(table);
        PyMem_Free(spans);
        return table == NULL ? NULL : PyErr_NoMemory();
    }
    uint64_t *src = (uint64_t *)PyBytes_AS_STRING(table), *dst = src + rows, *size = dst + rows;
    memset(src, 0, 3 * sizeof(uint64_t) * (size_t)rows);
    uint64_t largest = 0, total = 0, bytes = 0;
    Py_ssize_t nd_ = 0, ns = 0;
    int ok = 1;
    for (Py_ssize_t i = 0; i < n && ok; ++i) {
        ok = device_array(PyList_GET_ITEM(srcs, i), device, &src[i], &size[i])
             && device_array(PyList_GET_ITEM(dsts, i), device, &dst[i], &bytes)
             && bytes == size[i];
        if (ok && bytes > 0) {
            spans[nd_].start = (uintptr_t)dst[i];
            spans[nd_++].end = (uintptr_t)(dst[i] + bytes);
            if (bytes > largest) largest = bytes;
            total += bytes;
        }
    }
    if (ok) {
        Span *s = spans + nd_;
        for (Py_ssize_t i = 0; i < n; ++i)
            if (size[i] > 0) {
                s[ns].start = (uintptr_t)src[i];
                s[ns++].end = (uintptr_t)(src[i] + size[i]);
            }
        ok = warplab_spans_apart(spans, nd_, s, ns);
    }
    PyMem_Free(spans);
    if (!ok) {
        Py_DECREF(table);
        Py_RETURN_NONE;
    }
    if (fits && (uint64_t)n <= go.max_count && largest <= go.max_bytes) {
        int count = (int)n;
        void *params[2] = {src, &count};
        if (go.fn(go.function, (unsigned)n, go.block, go.stream, params) == 0) {
            Py_DECREF(table);
            Py_RETURN_TRUE;
        }
    }
    return Py_BuildValue("(NKKO)", table, (unsigned long long)largest, (unsigned long long)total,
                         args[3]);
}

int warplab_device_pairs_init(void) {
    if ((s_c_contiguous = PyUnicode_InternFromString("_c_contiguous")) == NULL
            || (s_size = PyUnicode_InternFromString("size")) == NULL
            || (s_dtype = PyUnicode_InternFromString("dtype")) == NULL
            || (s_itemsize = PyUnicode_InternFromString("itemsize")) == NULL
            || (s_data = PyUnicode_InternFromString("data")) == NULL
            || (s_ptr = PyUnicode_InternFromString("ptr")) == NULL
            || (s_device_id = PyUnicode_InternFromString("device_id")) == NULL)
        return -1;
    return 0;
}

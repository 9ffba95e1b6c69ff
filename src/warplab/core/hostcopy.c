/* copy_batched's pairs read and checked in C: the extension module warplab.core._hostcopy,
 * built with the package (setup.py) from this file (the module, the NumPy pairs and the
 * overlap test of the spans) and devicepairs.c (the CuPy pairs: device_pairs);
 * hostcopy_pairs.h is what the two share. Used by families/memcpy/host.py (NumPy arrays:
 * checked, then copied) and families/memcpy/transfer.py (CuPy arrays: checked, then the
 * address table of the launch).
 *
 * NumPy's own loop (np.copyto per pair) checks each pair in C; the same checks made in Python
 * over lists cost as much as the copies of small arrays, and on the device the reads of a few
 * attributes of each array cost more than the launch (benchmarks/NOTES.md). Here every pair is
 * checked first and then every pair copied (or its addresses packed), so that nothing is
 * written when a pair is refused.
 *
 * copy_pairs(ndarray, dsts, srcs) -> bool
 *   dsts, srcs: lists of equal length. True when every element is an exact `ndarray` (the
 *   type passed), every destination a writable C-contiguous buffer and every source a
 *   C-contiguous buffer of the same number of bytes, none of Python objects (a buffer format
 *   with 'O'), and no destination overlaps another destination or a source; then the bytes
 *   of each source are copied into its destination (without the GIL from 1 MiB in all) and
 *   True is returned. False, with nothing written and no exception, for any other call: the
 *   caller's general path then runs it and raises what it raises. Holds every pair's two
 *   buffer views (about 160 bytes a pair) until the copies are done.
 * device_pairs(ndarray, dsts, srcs, device, rows[, launch, count, stream]): devicepairs.c.
 * exact(ndarray, arrays) -> bool
 *   True when every element of the list or tuple `arrays` is of exactly the type passed (the
 *   check before NumPy's functions are called without their dispatch).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hostcopy_pairs.h"

/* From this many bytes in all the copies run without the GIL. */
#define NOGIL_BYTES (1 << 20)

static int by_start(const void *a, const void *b) {
    uintptr_t x = ((const Span *)a)->start, y = ((const Span *)b)->start;
    return (x > y) - (x < y);
}

/* 1 when [s, e) overlaps a span of the sorted, pairwise disjoint spans[0..n). */
static int hits(const Span *spans, Py_ssize_t n, uintptr_t s, uintptr_t e) {
    Py_ssize_t lo = 0, hi = n; /* the first span that ends after s */
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (spans[mid].end <= s) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && spans[lo].start < e;
}

/* Take the buffer of `obj` (flags: PyBUF_FORMAT | PyBUF_C_CONTIGUOUS, plus `extra`); 0 and
 * no exception when it is refused or holds Python objects. */
static int take(PyObject *obj, Py_buffer *view, int extra) {
    if (PyObject_GetBuffer(obj, view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS | extra) != 0) {
        PyErr_Clear();
        return 0;
    }
    if (view->format != NULL && strchr(view->format, 'O') != NULL) {
        PyBuffer_Release(view);
        return 0;
    }
    return 1;
}

/* 1 when the destination spans dst[0..nd) are pairwise disjoint (sorted here) and no source
 * span src[0..ns) meets one; the callers leave empty spans out (hostcopy_pairs.h). */
int warplab_spans_apart(Span *dst, Py_ssize_t nd, const Span *src, Py_ssize_t ns) {
    if (nd > 1) {
        qsort(dst, (size_t)nd, sizeof(Span), by_start);
        for (Py_ssize_t i = 1; i < nd; ++i)
            if (dst[i].start < dst[i - 1].end) return 0;
    }
    for (Py_ssize_t i = 0; i < ns; ++i)
        if (hits(dst, nd, src[i].start, src[i].end)) return 0;
    return 1;
}

static PyObject *copy_pairs(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3 || !PyType_Check(args[0]) || !PyList_Check(args[1]) || !PyList_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "copy_pairs(ndarray, dsts: list, srcs: list)");
        return NULL;
    }
    PyTypeObject *nd = (PyTypeObject *)args[0];
    PyObject *dsts = args[1], *srcs = args[2];
    Py_ssize_t n = PyList_GET_SIZE(dsts);
    if (n != PyList_GET_SIZE(srcs)) Py_RETURN_FALSE;
    for (Py_ssize_t i = 0; i < n; ++i)
        if (Py_TYPE(PyList_GET_ITEM(dsts, i)) != nd || Py_TYPE(PyList_GET_ITEM(srcs, i)) != nd)
            Py_RETURN_FALSE;
    Py_buffer *views = PyMem_Malloc(sizeof(Py_buffer) * (size_t)(2 * n + 1));
    Span *spans = PyMem_Malloc(sizeof(Span) * (size_t)(2 * n + 1)); /* destinations, sources */
    if (views == NULL || spans == NULL) {
        PyMem_Free(views);
        PyMem_Free(spans);
        return PyErr_NoMemory();
    }
    Py_buffer *dv = views, *sv = views + n;
    Py_ssize_t taken = 0, ns = 0; /* buffers taken (pairs); non-empty destination spans */
    size_t total = 0;
    int ok = 1;
    for (; taken < n; ++taken) {
        if (!take(PyList_GET_ITEM(dsts, taken), &dv[taken], PyBUF_WRITABLE)) { ok = 0; break; }
        if (!take(PyList_GET_ITEM(srcs, taken), &sv[taken], 0)) {
            PyBuffer_Release(&dv[taken]);
            ok = 0;
            break;
        }
        if (dv[taken].len != sv[taken].len) { ++taken; ok = 0; break; }
        if (dv[taken].len > 0) {
            uintptr_t s = (uintptr_t)dv[taken].buf;
            spans[ns].start = s;
            spans[ns].end = s + (uintptr_t)dv[taken].len;
            ++ns;
            total += (size_t)dv[taken].len;
        }
    }
    if (ok) {
        Span *src = spans + ns;
        Py_ssize_t nsrc = 0;
        for (Py_ssize_t i = 0; i < n; ++i)
            if (sv[i].len > 0) {
                src[nsrc].start = (uintptr_t)sv[i].buf;
                src[nsrc].end = src[nsrc].start + (uintptr_t)sv[i].len;
                ++nsrc;
            }
        ok = warplab_spans_apart(spans, ns, src, nsrc);
    }
    if (ok) {
        if (total >= NOGIL_BYTES) {
            Py_BEGIN_ALLOW_THREADS
            for (Py_ssize_t i = 0; i < n; ++i) memcpy(dv[i].buf, sv[i].buf, (size_t)dv[i].len);
            Py_END_ALLOW_THREADS
        } else {
            for (Py_ssize_t i = 0; i < n; ++i) memcpy(dv[i].buf, sv[i].buf, (size_t)dv[i].len);
        }
    }
    for (Py_ssize_t i = 0; i < taken; ++i) {
        PyBuffer_Release(&dv[i]);
        PyBuffer_Release(&sv[i]);
    }
    PyMem_Free(views);
    PyMem_Free(spans);
    return PyBool_FromLong(ok);
}

static PyObject *exact(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2 || !PyType_Check(args[0])
            || !(PyList_Check(args[1]) || PyTuple_Check(args[1]))) {
        PyErr_SetString(PyExc_TypeError, "exact(ndarray, arrays: list or tuple)");
        return NULL;
    }
    PyObject *const *items = PySequence_Fast_ITEMS(args[1]);
    Py_ssize_t n = PySequence_Fast_GET_SIZE(args[1]);
    for (Py_ssize_t i = 0; i < n; ++i)
        if (Py_TYPE(items[i]) != (PyTypeObject *)args[0]) Py_RETURN_FALSE;
    Py_RETURN_TRUE;
}

static PyMethodDef methods[] = {
    {"copy_pairs", (PyCFunction)(void (*)(void))copy_pairs, METH_FASTCALL,
     "copy_pairs(ndarray, dsts, srcs): every pair checked, then copied; False (nothing "
     "written) for a call it does not take"},
    {"device_pairs", (PyCFunction)(void (*)(void))warplab_device_pairs, METH_FASTCALL,
     "device_pairs(ndarray, dsts, srcs, device, rows[, launch, count, stream]): copy_batched's "
     "device pairs checked and their address table (or, with launch, the few-buffer kernel "
     "launched on them: True), or None for a call it does not take"},
    {"exact", (PyCFunction)(void (*)(void))exact, METH_FASTCALL,
     "exact(ndarray, arrays): every element of the list or tuple of exactly that type"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "warplab.core._hostcopy", NULL, -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__hostcopy(void) {
    if (warplab_device_pairs_init() != 0) return NULL;
    return PyModule_Create(&module);
}

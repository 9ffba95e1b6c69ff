/* What the two C files of the extension module warplab.core._hostcopy share: hostcopy.c (the
 * module, copy_pairs, the overlap test of the spans) and devicepairs.c (device_pairs).
 * Internal to the module: every function here is WARPLAB_HIDDEN.
 *
 * Include after <Python.h> (with PY_SSIZE_T_CLEAN defined before it). */
#ifndef WARPLAB_HOSTCOPY_PAIRS_H
#define WARPLAB_HOSTCOPY_PAIRS_H

#include <Python.h>
#include <stdint.h>

#include "hidden.h"

typedef struct {
    uintptr_t start, end; /* [start, end) */
} Span;

/* hostcopy.c: 1 when the destination spans dst[0..nd) are pairwise disjoint (sorted here) and
 * no source span src[0..ns) meets one; the callers leave empty spans out. */
WARPLAB_HIDDEN int warplab_spans_apart(Span *dst, Py_ssize_t nd, const Span *src,
                                       Py_ssize_t ns);

/* devicepairs.c: the module's device_pairs (METH_FASTCALL). */
WARPLAB_HIDDEN PyObject *warplab_device_pairs(PyObject *self, PyObject *const *args,
                                              Py_ssize_t nargs);

/* devicepairs.c: the names device_pairs reads, interned (module init); 0, or -1 with an
 * exception set. */
WARPLAB_HIDDEN int warplab_device_pairs_init(void);

#endif

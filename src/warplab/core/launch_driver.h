/* What the two C files of the extension module warplab.core._launch share: launch.c (the
 * driver, the launches, the module) and readback.c (the device-to-host reads). Internal to the
 * module: every name here is WARPLAB_HIDDEN.
 *
 * launch.c defines these: its driver() opens libcuda.so.1 and looks the copy functions up
 * (NULL until then, and where libcuda lacks them), and warplab_driver_error raises its
 * DriverError. readback.c defines the reads and their thread-local staging buffer.
 *
 * Include after <Python.h> (with PY_SSIZE_T_CLEAN defined before it). */
#ifndef WARPLAB_LAUNCH_DRIVER_H
#define WARPLAB_LAUNCH_DRIVER_H

#include <Python.h>
#include <stddef.h>
#include <stdint.h>

#include "hidden.h"

/* cuMemcpyDtoHAsync_v2, cuStreamSynchronize, cuMemHostAlloc, cuMemFreeHost */
typedef int (*copy_fn)(void *, uint64_t, size_t, void *);
typedef int (*sync_fn)(void *);
typedef int (*host_alloc_fn)(void **, size_t, unsigned);
typedef int (*host_free_fn)(void *);

/* launch.c: the driver's functions the reads call, set by driver(). */
extern WARPLAB_HIDDEN copy_fn warplab_cu_copy;
extern WARPLAB_HIDDEN sync_fn warplab_cu_sync;
extern WARPLAB_HIDDEN host_alloc_fn warplab_cu_host_alloc;
extern WARPLAB_HIDDEN host_free_fn warplab_cu_host_free;

/* launch.c: DriverError "<what> failed: <name> (<rc>)" whose .code is rc; NULL. */
WARPLAB_HIDDEN PyObject *warplab_driver_error(const char *what, int rc);

/* readback.c: the module's read and read_into (METH_FASTCALL). */
WARPLAB_HIDDEN PyObject *warplab_read_element(PyObject *self, PyObject *const *args,
                                              Py_ssize_t nargs);
WARPLAB_HIDDEN PyObject *warplab_read_into(PyObject *self, PyObject *const *args,
                                           Py_ssize_t nargs);

/* readback.c: the thread-local key of the staging buffers (module init); 0, or -1 with an
 * ImportError set. */
WARPLAB_HIDDEN int warplab_readback_init(void);

#endif

"""Matmul comparator: cuBLAS through ``cupy.matmul`` (FP32 arithmetic, not TF32), timed in the
same run as warplab's kernels; on the cpu backend NumPy's own ``np.matmul`` (its BLAS)."""
from __future__ import annotations

from typing import Any

import numpy as np

from warplab.lab.harness.comparators import Provider, numpy_provider, probe_module as _probe_module


def _cublas_matmul(a: Any, b: Any, c: Any) -> Any:
    import cupy

    return cupy.matmul(a, b, out=c)


def _probe_fp32_cublas() -> str | None:
    """None when ``cupy.matmul`` runs float32 in full FP32 arithmetic (CuPy's default: TF32
    only under ``CUPY_TF32=1``), else why this is no FP32 comparison."""
    why = _probe_module("cupy")
    if why is not None:
        return why
    from cupy._core import _routines_linalg as linalg

    if linalg.get_compute_type(np.float32) != linalg.COMPUTE_TYPE_DEFAULT:
        return "CuPy runs float32 products in TF32 here (CUPY_TF32=1): not an FP32 comparison"
    return None


MATMUL_PROVIDERS = (
    # run(a, b, c): c = a @ b through cuBLAS (SGEMM / DGEMM)
    Provider("cublas", "cupy", _probe_fp32_cublas, _cublas_matmul),
)

#: The cpu backend's comparator: run(a, b, c) writes ``np.matmul(a, b)`` into c.
NUMPY_PROVIDERS = (numpy_provider("numpy.matmul", lambda a, b, c: np.matmul(a, b, out=c)),)

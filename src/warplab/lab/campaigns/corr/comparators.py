"""Correlation comparators, timed in the same run as warplab's variants, each skipped with a
note when its library is absent:

- ``cupy.corrcoef`` (CuPy computes float32 input in float64: centring, cuBLAS DGEMM, division),
- ``torch.corrcoef`` (float32 in, float32 arithmetic),
- "just call BLAS": cuBLAS DSYRK (float64, upper triangle only) and SGEMM (float32, full FP32
  arithmetic) on rows centred and normalised beforehand, outside the timed call: the ceiling of
  the approach that hands the product to the vendor library.

A provider's ``run(d_x, pre)`` takes the (M, N) float32 device series and the pre-centred rows
``pre`` (a :class:`Precentred`) and returns the M x M result on the device. ``UPPER_ONLY``
names the providers whose result holds the upper triangle only (the error check mirrors it).

On the cpu backend the comparator is NumPy's own ``np.corrcoef`` on the same host series
(float64 arithmetic; :data:`NUMPY_PROVIDERS`, ``run(x, None)``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from warplab.lab.harness.comparators import Provider, numpy_provider, probe_module
from warplab.lab.campaigns.matmul.comparators import _probe_fp32_cublas

#: comparator -> the measured ceiling its arithmetic runs against (``meta.ceilings`` key)
CEILING = {"cupy.corrcoef": "dgemm_gflops", "torch.corrcoef": "sgemm_gflops",
           "cublas_dsyrk": "dgemm_gflops", "cublas_sgemm": "sgemm_gflops",
           "numpy.corrcoef": "dgemm_gflops"}
UPPER_ONLY = frozenset({"cublas_dsyrk"})


class Precentred:
    """Rows centred and divided by their norm once per config (float64 and float32), and the
    output buffers of the BLAS comparators."""

    def __init__(self, d_x: Any) -> None:
        import cupy

        x = d_x.astype(np.float64)
        x -= x.mean(axis=1, keepdims=True)
        x /= cupy.sqrt((x * x).sum(axis=1, keepdims=True))
        self.z64, self.z32 = x, x.astype(np.float32)
        m = x.shape[0]
        self.c64 = cupy.zeros((m, m), np.float64)
        self.c32 = cupy.empty((m, m), np.float32)


def _cupy_corrcoef(d_x: Any, pre: Precentred) -> Any:
    import cupy

    return cupy.corrcoef(d_x)


def _torch_corrcoef(d_x: Any, pre: Precentred) -> Any:
    import cupy
    import torch

    return cupy.from_dlpack(torch.corrcoef(torch.from_dlpack(d_x)))


def _dsyrk(d_x: Any, pre: Precentred) -> Any:
    from cupy import cublas

    return cublas.syrk("N", pre.z64, out=pre.c64, lower=False)


def _sgemm(d_x: Any, pre: Precentred) -> Any:
    import cupy

    return cupy.matmul(pre.z32, pre.z32.T, out=pre.c32)


def _probe_syrk() -> str | None:
    why = probe_module("cupy")
    if why is None:
        from cupy import cublas

        if not hasattr(cublas, "syrk"):
            return "cupy.cublas.syrk missing in this CuPy"
    return why


CORR_PROVIDERS = (
    Provider("cupy.corrcoef", "cupy", lambda: probe_module("cupy"), _cupy_corrcoef),
    Provider("torch.corrcoef", "torch", lambda: probe_module("torch"), _torch_corrcoef),
    Provider("cublas_dsyrk", "cupy", _probe_syrk, _dsyrk),
    Provider("cublas_sgemm", "cupy", _probe_fp32_cublas, _sgemm),
)

#: The cpu backend's comparator: ``np.corrcoef`` (float32 input computed in float64).
NUMPY_PROVIDERS = (numpy_provider("numpy.corrcoef", lambda x, pre: np.corrcoef(x)),)

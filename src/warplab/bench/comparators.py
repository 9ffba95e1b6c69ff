"""Comparator providers: what people use today, timed in the same run as warplab's kernels.

Each provider computes the same function as ``warplab.histogram(d_data, mapping)``: the 256
byte counts from its own library call, then (for mappings other than ``bytes``) a fold of the
256 counts into the mapping's bins, which is what a user of that library would write. The fold
is one tiny matrix product (two small kernels, no synchronisation) and is timed with the rest. Providers that cannot be imported are skipped
with a note, never an error.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .._mapping import Mapping


@dataclass(frozen=True)
class Provider:
    """A comparator: ``run(d_data, mapping) -> int64 device counts`` on the current stream."""

    name: str
    library: str
    probe: Callable[[], str | None]  # None when usable, else why not
    run: Callable[[Any, Mapping], Any]


def _fold(counts256: Any, mapping: Mapping) -> Any:
    """256 counts -> the mapping's bins as a 256 x nbins 0/1 matrix product (cuBLAS, no host
    synchronisation; float64 is exact for counts below 2^53)."""
    if mapping.name == "bytes":
        return counts256.astype(np.int64, copy=False)
    fold = _fold_matrix(mapping.lut.tobytes(), mapping.nbins)
    return (counts256.astype(np.float64) @ fold).astype(np.int64)


@functools.lru_cache(maxsize=8)
def _fold_matrix(key: bytes, nbins: int) -> Any:
    import cupy

    lut = np.frombuffer(key, dtype=np.uint8)
    m = np.zeros((256, nbins), dtype=np.float64)
    m[np.arange(256), lut] = 1.0
    return cupy.asarray(m)


def _probe_module(name: str) -> str | None:
    try:
        __import__(name)
    except Exception as exc:
        return f"{name} not importable ({type(exc).__name__}: {exc})"
    return None


def _cupy_bincount(d: Any, mapping: Mapping) -> Any:
    import cupy

    return _fold(cupy.bincount(d, minlength=256), mapping)


def _cupy_histogram(d: Any, mapping: Mapping) -> Any:
    """``cupy.histogram`` with CuPy's CUB accelerator switched on (DeviceHistogram::HistogramEven)."""
    import cupy
    from cupy._core import _accelerator

    saved = _accelerator.get_routine_accelerators()
    _accelerator.set_routine_accelerators(["cub"])
    try:
        counts, _ = cupy.histogram(d, bins=256, range=(0, 256))
    finally:
        _accelerator.set_routine_accelerators(saved)
    return _fold(counts, mapping)


def _torch_bincount(d: Any, mapping: Mapping) -> Any:
    import cupy
    import torch

    t = torch.from_dlpack(d)
    return _fold(cupy.from_dlpack(torch.bincount(t, minlength=256)), mapping)


def _cccl_histogram_even(d: Any, mapping: Mapping) -> Any:
    import cupy
    import cuda.compute

    hist = cupy.zeros(256, dtype=np.int32)
    cuda.compute.histogram_even(d_samples=d, d_histogram=hist, num_output_levels=257,
                                lower_level=np.int32(0), upper_level=np.int32(256),
                                num_samples=int(d.size))
    return _fold(hist, mapping)


HISTOGRAM_PROVIDERS = (
    Provider("cupy.bincount", "cupy", lambda: _probe_module("cupy"), _cupy_bincount),
    Provider("cupy.histogram", "cupy", lambda: _probe_module("cupy"), _cupy_histogram),
    Provider("torch.bincount", "torch", lambda: _probe_module("torch"), _torch_bincount),
    Provider("cuda.compute.histogram_even", "cuda.compute",
             lambda: _probe_module("cuda.compute"), _cccl_histogram_even),
)


def _cupy_reduce(d: Any, s: Any) -> Any:
    import cupy

    return getattr(cupy, s.op)(d)


def _torch_reduce(d: Any, s: Any) -> Any:
    import cupy
    import torch

    t = torch.from_dlpack(d)
    if s.op == "mean" and not t.is_floating_point():
        t = t.to(torch.float64)  # torch.mean needs floats: what a user would write
    return cupy.from_dlpack(getattr(torch, s.op)(t))


def _cccl_reduce(d: Any, s: Any) -> Any:
    import cupy
    from cuda import compute

    kind = {"sum": compute.OpKind.PLUS, "mean": compute.OpKind.PLUS,
            "min": compute.OpKind.MINIMUM, "max": compute.OpKind.MAXIMUM}[s.op]
    acc = s.acc if s.op in ("sum", "mean") else s.dtype
    src = d if acc == s.dtype else d.astype(acc)  # cast pass for int32 -> int64 sums
    out = cupy.empty(1, dtype=acc)
    compute.reduce_into(d_in=src, d_out=out, num_items=int(d.size), op=kind,
                        h_init=np.asarray([s.identity()], dtype=acc))
    if s.op == "mean":
        return (out[0] / d.size).astype(s.out)
    return out[0].astype(s.out)


REDUCE_PROVIDERS = (
    # names are templates: "{op}" becomes sum / min / max / mean
    Provider("cupy.{op}", "cupy", lambda: _probe_module("cupy"), _cupy_reduce),
    Provider("torch.{op}", "torch", lambda: _probe_module("torch"), _torch_reduce),
    Provider("cuda.compute.reduce_into", "cuda.compute", lambda: _probe_module("cuda.compute"),
             _cccl_reduce),
)


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


def available(providers: tuple[Provider, ...] = HISTOGRAM_PROVIDERS
              ) -> tuple[list[Provider], list[str]]:
    """The usable providers and one note per skipped one."""
    ok, notes = [], []
    for p in providers:
        why = p.probe()
        if why is None:
            ok.append(p)
        else:
            notes.append(f"comparator {p.name} skipped: {why}")
    return ok, notes

"""Reduction comparators: ``cupy.<op>``, ``torch.<op>`` and ``cuda.compute.reduce_into`` on the
same device input, timed in the same run as warplab's kernels (skipped with a note when not
importable); on the cpu backend NumPy's own ``np.<op>`` on the same host input."""
from __future__ import annotations

from typing import Any

import numpy as np

from warplab.lab.harness.comparators import Provider, numpy_provider, probe_module as _probe_module


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

#: The cpu backend's comparator: ``np.sum`` / ``np.min`` / ``np.max`` / ``np.mean`` as a user
#: calls them (float32 sums and means accumulate in float32, pairwise; integer sums in int64).
NUMPY_PROVIDERS = (numpy_provider("numpy.{op}", lambda x, s: getattr(np, s.op)(x)),)

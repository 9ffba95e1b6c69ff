"""Reduction ops, dtypes and the cost model, shared by the cuda and cpu variants.

Result dtypes follow NumPy (``np.sum`` of int32 is int64, of float32 float32; ``np.mean`` of
integers float64). Accumulators: int64 for integer sums, float64 for every floating sum and
mean (a float32 sum then lands within a few ulps of the float64 sum), the input type for min
and max.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from warplab.core.errors import InvalidTypeError, InvalidValueError

OPS = ("sum", "min", "max", "mean")
#: The reduction lecture's kernels in the lecture's order, then the one-launch variants.
LECTURE_ORDER_HINT = ("neighbored_gmem", "neighbored_smem", "neighbored_smem_nodiv",
                      "interleaved_smem", "unroll2", "unroll_warp8", "complete_unroll8",
                      "complete_unroll8_template", "single_pass_fence", "persistent_vec")
DTYPES = (np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.float32), np.dtype(np.float64))
C_TYPE = {np.dtype(np.int32): "int", np.dtype(np.int64): "long long",
          np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
C_OP = {"sum": "OpSum", "min": "OpMin", "max": "OpMax", "mean": "OpMean"}


@dataclass(frozen=True, eq=False)
class ReduceSpec:
    """Everything a variant needs to know about one (op, dtype). Interned by :func:`spec`:
    compared and hashed by identity (a cheap key for per-spec launch plans)."""

    op: str
    dtype: np.dtype   # input
    acc: np.dtype     # accumulator
    out: np.dtype     # result

    @property
    def c_types(self) -> str:
        """``"T, A, R, OP"`` for the CUDA templates."""
        return f"{C_TYPE[self.dtype]}, {C_TYPE[self.acc]}, {C_TYPE[self.out]}, {C_OP[self.op]}"

    def identity(self) -> np.generic:
        """The op's identity in the accumulator type (sum 0, min +inf or the largest int...)."""
        if self.op in ("sum", "mean"):
            return self.acc.type(0)
        if self.acc.kind == "f":
            return self.acc.type(np.inf if self.op == "min" else -np.inf)
        info = np.iinfo(self.acc)
        return self.acc.type(info.max if self.op == "min" else info.min)


@functools.lru_cache(maxsize=64)
def spec(op: str, dtype: np.dtype) -> ReduceSpec:
    """The spec of ``op`` on ``dtype``; ``ValueError`` / ``TypeError`` for unsupported ones."""
    if op not in OPS:
        raise InvalidValueError(f"unknown reduction op {op!r}; valid: {', '.join(OPS)}")
    dt = np.dtype(dtype)
    if dt not in DTYPES:
        raise InvalidTypeError(
            f"reductions support int32, int64, float32 and float64, got dtype {dt}")
    if op in ("min", "max"):
        return ReduceSpec(op, dt, dt, dt)
    if op == "sum":
        acc = np.dtype(np.int64) if dt.kind == "i" else np.dtype(np.float64)
        return ReduceSpec(op, dt, acc, acc if dt.kind == "i" else dt)
    return ReduceSpec(op, dt, np.dtype(np.float64),
                      dt if dt == np.float32 else np.dtype(np.float64))


class ReduceProblem(NamedTuple):
    """What dispatch and the cost model see of one reduction (a tuple: built on every call)."""

    size: int
    op: str
    dtype: np.dtype
    on_device: bool


def reduce_bytes_moved(problem: ReduceProblem) -> int:
    """Fewest device-memory bytes of a full reduction: every element read once, one result
    written (the seed kernels move more; this is the yardstick GB/s is measured against)."""
    return problem.size * np.dtype(problem.dtype).itemsize + 8

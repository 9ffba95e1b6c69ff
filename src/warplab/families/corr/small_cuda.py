"""``fused_small``: corrcoef of a small matrix in one launch (``small.cu``), and its launch
record, the short path of ``corrcoef(x)`` on small device input.

One block normalises the M series into shared memory (float64), forms every coefficient from
two normalised rows and finishes it (NaN rows and columns for constant or non-finite series, 1
on the diagonal, clipped to [-1, 1]); thread 0 writes whether every series was valid into a
page-locked host word that the device addresses directly (unified addressing: the pointer of
``cudaHostAlloc`` memory is the same on both sides), so the one synchronisation NumPy's warning
needs reads it without a copy. The word belongs to the calling thread (a call synchronises
before it returns, so a thread never has two in flight).

``corrcoef``'s plan (``api.py``) holds this variant's :class:`Launch` (:func:`plan`) where the
kernel reads the caller's array as it is (:func:`takes`: 2-D float32/float64 on the current
device, 2 <= M <= ``MAX_M``, N >= 2, M N <= ``MAX_ELEMS``, any strides); a warm call then
allocates the result, launches once (:func:`run`) and synchronises.
"""
from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from warplab.core import registry as _registry
from warplab.core.launch import ARRAY, Prepared
from warplab.core.loader import defines, get_kernel
from warplab.core.registry import register
from warplab.core.scalar import empty
from warplab.families.corr.spec import CorrProblem, corr_flops

SOURCE = Path(__file__).with_name("small.cu")
#: Threads of the one block, most series, most elements (M N) in shared memory (float64).
DEFINES = {"CORR_SMALL_BLOCK": 256, "CORR_SMALL_MAX_M": 64, "CORR_SMALL_ELEMS": 4096}
MAX_M, MAX_ELEMS = DEFINES["CORR_SMALL_MAX_M"], DEFINES["CORR_SMALL_ELEMS"]
_C = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
_EXPRESSIONS = ("corr_small<float>", "corr_small<double>")
_F64 = np.dtype(np.float64)


def _kernel(expression: str) -> Any:
    return get_kernel(SOURCE, expression, all_expressions=_EXPRESSIONS, options=defines(DEFINES))


def fits(m: int, n: int) -> bool:
    """The fused kernel holds the problem: 2 <= M <= ``MAX_M``, N >= 2, M N <= ``MAX_ELEMS``."""
    return 2 <= m <= MAX_M and n >= 2 and m * n <= MAX_ELEMS


class _Flags(threading.local):
    """The calling thread's page-locked validity word per device (allocated once)."""

    def __init__(self) -> None:
        self.words: dict[int, tuple[np.ndarray, np.uint64]] = {}


_FLAGS = _Flags()


def _flag(device: int) -> tuple[np.ndarray, np.uint64]:
    """This thread's validity word of ``device``: an int32 NumPy view of pinned memory (which
    keeps the block alive) and its address as a kernel argument."""
    w = _FLAGS.words.get(device)
    if w is None:
        view = np.frombuffer(sys.modules["cupy"].cuda.alloc_pinned_memory(64), np.int32, 1)
        w = _FLAGS.words[device] = (view, np.uint64(view.ctypes.data))
    return w


class Launch(NamedTuple):
    """A record: M, the arguments after the flag pointer and the prepared launch
    (``core/launch.py``)."""

    m: int
    rest: tuple  # (m, n, row stride, column stride) as kernel scalars
    go: Prepared


def plan(x: Any) -> Launch:
    """The launch of ``x`` (2-D float32/float64, :func:`fits`, strides multiples of the item)."""
    item = x.dtype.itemsize
    m, n = (int(s) for s in x.shape)
    k = _kernel(f"corr_small<{_C[np.dtype(x.dtype)]}>")
    rest = (np.int32(m), np.int32(n), np.int64(x.strides[0] // item),
            np.int64(x.strides[1] // item))
    go = Prepared(k, (1,), (DEFINES["CORR_SMALL_BLOCK"],), (ARRAY, ARRAY, np.uint64(0), *rest))
    return Launch(m, rest, go)


def run(rec: Launch, x: Any, device: int) -> tuple[Any, np.ndarray]:
    """``(r, word)``: the finished M x M float64 result (launched on the current stream) and
    the validity word the launch writes (read it after synchronising the stream)."""
    r = empty((rec.m, rec.m), _F64)
    word, ptr = _flag(device)
    rec.go(x, r, ptr, *rec.rest)
    return r, word


class SmallEngine:
    """The engine of ``fused_small`` (``tiles.Engine``): the finished matrix from one launch;
    blocks are its slices (copies), already finished."""

    def __init__(self, x: Any, precision: str) -> None:
        import cupy

        if not takes(x):
            x = cupy.ascontiguousarray(x, dtype=np.float64)
        self.xp, self.m = cupy, int(x.shape[0])
        self.full, self._word = run(plan(x), x, cupy.cuda.runtime.getDevice())
        self._all_valid: bool | None = None

    @property
    def all_valid(self) -> bool:
        """Every series valid: the launch's word, read after one synchronisation."""
        if self._all_valid is None:
            self.xp.cuda.get_current_stream().synchronize()
            self._all_valid = bool(self._word[0])
        return self._all_valid

    @property
    def valid(self) -> Any:
        """Per series validity (from the finished diagonal: NaN exactly for invalid series)."""
        return ~self.xp.isnan(self.full.diagonal())

    def block(self, r0: int, r1: int, c0: int, c1: int) -> Any:
        if (r0, r1, c0, c1) == (0, self.m, 0, self.m):
            return self.full
        return self.full[r0:r1, c0:c1].copy()

    def finish_block(self, b: Any, r0: int, c0: int) -> Any:
        return b  # finished by the kernel


def _supports(p: CorrProblem) -> bool:
    return p.precision == "float64" and fits(p.m, p.n)


@register("corrcoef", "fused_small", backend="cuda", bytes_moved=lambda p: 8 * p.m * (p.n + p.m),
          flops=corr_flops, supports=_supports, rank=1)
def fused_small(x: Any, precision: str) -> SmallEngine:
    """Small problems in one launch of one block: normalise into shared memory, every
    coefficient and its finishing (float64 throughout), and the validity word (pinned host
    memory the device writes: no copy back). Precision ``float64`` only; M <= 64, M N <= 4096.
    Performance: ``corr_flops`` x 2 (both triangles, the same bits mirrored); one launch, one
    synchronisation, no temporaries.
    """
    return SmallEngine(x, precision)


#: The registered variant (``corrcoef``'s plan runs its launch on the caller's array).
VARIANT = _registry.get("corrcoef", "fused_small")


def takes(x: Any) -> bool:
    """The kernel reads ``x`` as it is: 2-D float32/float64, :func:`fits`, strides multiples
    of the item."""
    return (x.ndim == 2 and np.dtype(x.dtype) in _C and not any(s % x.itemsize for s in x.strides)
            and fits(int(x.shape[0]), int(x.shape[1])))

"""Launch plans of the CUDA reduction variants (kernels in ``reduce.cu`` beside this file).

Each variant takes a contiguous 1-D device array (the dtype of the spec) and a
:class:`~warplab.families.reduce.spec.ReduceSpec` and returns the result as a 0-d CuPy array of the
result dtype. The lecture's eight kernels leave one partial per block and finish on the host,
as the lecture did (so they synchronise); the single-pass ones finish on the device.
"""
from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

import numpy as np

from warplab.core import fastpath
from warplab.core.launch import ARRAY, Prepared
from warplab.core.loader import defines, get_kernel, occupancy_blocks_per_sm
from warplab.core.registry import register
from warplab.core.scalar import Slab, scalar_type
from warplab.families.reduce.spec import (
    C_OP,
    C_TYPE,
    DTYPES,
    LECTURE_ORDER_HINT,
    OPS,
    ReduceSpec,
    reduce_bytes_moved,
    spec,
)

DIM = 512       # the lecture's block size
VEC_BS = 512    # persistent_vec's block size
VEC_ACC = 8     # persistent_vec: 16-byte loads in flight per thread
SOURCE = Path(__file__).with_name("reduce.cu")
#: The kernels' compile-time constants: this dict is their only copy (passed as -D options;
#: benchmarks/explore_reduce.py passes variations for tuning runs).
DEFINES = {
    "WARPLAB_REDUCE_BLOCK": DIM,
    "WARPLAB_REDUCE_VEC_BS": VEC_BS,
    "WARPLAB_REDUCE_VEC_ACC": VEC_ACC,
    "WARPLAB_REDUCE_VEC_MINB": 1024 // VEC_BS,  # blocks per SM the register budget must allow
    "WARPLAB_REDUCE_VEC_LOAD": 1,   # 0 evict-first (__ldcs), 1 read-only (__ldg), 2 ld.nc + L2 256B
    "WARPLAB_REDUCE_VEC_ORDER": 1,  # 0 front to back, 1 tail first (back to front)
}
SPECS = tuple(spec(op, dt) for op in OPS for dt in DTYPES)


def _expressions(kernel: str) -> tuple[str, ...]:
    if kernel == "reduce_neighbored_gmem":
        pairs = sorted({f"{C_TYPE[s.acc]}, {C_OP[s.op]}" for s in SPECS})
        return tuple(f"{kernel}<{p}>" for p in pairs)
    if kernel in ("reduce_single_pass_fence", "reduce_persistent_vec"):
        return tuple(f"{kernel}<{s.c_types}>" for s in SPECS)
    prefix = f"{DIM}, " if kernel == "reduce_complete_unroll8_template" else ""
    return tuple(f"{kernel}<{prefix}{C_TYPE[s.dtype]}, {C_TYPE[s.acc]}, {C_OP[s.op]}>"
                 for s in SPECS)


@functools.cache
def _kernel(kernel: str, args: str) -> Any:
    exprs = _expressions(kernel)
    expr = f"{kernel}<{args}>"
    return get_kernel(SOURCE, expr, all_expressions=exprs, options=defines(DEFINES))


def _seed_args(s: ReduceSpec, kernel: str) -> str:
    if kernel == "reduce_neighbored_gmem":
        return f"{C_TYPE[s.acc]}, {C_OP[s.op]}"
    prefix = f"{DIM}, " if kernel == "reduce_complete_unroll8_template" else ""
    return f"{prefix}{C_TYPE[s.dtype]}, {C_TYPE[s.acc]}, {C_OP[s.op]}"


def finish_on_host(partials: np.ndarray, s: ReduceSpec, n: int) -> np.generic:
    """Combine per-block partials on the host, as the lecture did."""
    if s.op == "min":
        return s.out.type(partials.min())
    if s.op == "max":
        return s.out.type(partials.max())
    total = np.add.reduce(partials, dtype=s.acc)
    return s.out.type(total / n if s.op == "mean" else total)


def _seed(kernel: str, per_block: int) -> Callable[[Any, ReduceSpec], Any]:
    """A lecture kernel: grid of ceil(n / per_block) blocks of 512, partials finished on host."""

    def run(x: Any, s: ReduceSpec) -> Any:
        import cupy

        n = x.size
        grid = max(1, -(-n // per_block))
        partials = cupy.empty(grid, dtype=s.acc)
        k = _kernel(kernel, _seed_args(s, kernel))
        if kernel == "reduce_neighbored_gmem":  # in place: on a padded scratch copy
            scratch = cupy.full(grid * DIM, s.identity(), dtype=s.acc)
            scratch[:n] = x
            k((grid,), (DIM,), (scratch, partials))
        else:
            k((grid,), (DIM,), (x, partials, np.uint64(n)))
        return cupy.asarray(finish_on_host(partials.get(), s, n))

    return run


_SEED: dict[str, Any] = {"backend": "cuda", "bytes_moved": reduce_bytes_moved, "seed": True}
LECTURE_ORDER = LECTURE_ORDER_HINT[:8]
_LECTURE = {  # variant -> (kernel, elements per block)
    "neighbored_gmem": ("reduce_neighbored_gmem", DIM),
    "neighbored_smem": ("reduce_neighbored_smem", DIM),
    "neighbored_smem_nodiv": ("reduce_neighbored_smem_nodiv", DIM),
    "interleaved_smem": ("reduce_interleaved_smem", DIM),
    "unroll2": ("reduce_unroll2", 2 * DIM),
    "unroll_warp8": ("reduce_unroll_warp8", 8 * DIM),
    "complete_unroll8": ("reduce_complete_unroll8", 8 * DIM),
    "complete_unroll8_template": ("reduce_complete_unroll8_template", 8 * DIM),
}
_SUMMARY = {
    "neighbored_gmem": "Lecture #1: neighbored pairs in place in global memory.",
    "neighbored_smem": "Lecture #2: neighbored pairs in shared memory.",
    "neighbored_smem_nodiv": "Lecture #3: neighbored pairs, strided index (less divergence).",
    "interleaved_smem": "Lecture #4: interleaved pairs (stride halves from blockDim/2).",
    "unroll2": "Lecture #5: two elements per thread before the tree (half the blocks).",
    "unroll_warp8": "Lecture #6: eight elements per thread, last warp unrolled.",
    "complete_unroll8": "Lecture #7: eight per thread, tree completely unrolled.",
    "complete_unroll8_template": "Lecture #8: as #7 with the block size a template argument.",
}
for _rank, _name in enumerate(LECTURE_ORDER):
    _fn = _seed(*_LECTURE[_name])
    _fn.__doc__ = (f"{_SUMMARY[_name]}\n\nPerformance: reads n elements; one launch of 512-thread "
                   "blocks; partials copied to the host and finished there (synchronises).")
    register("reduce", _name, rank=40 + _rank, **_SEED)(_fn)


class _StreamScratch:
    """Per (device, stream): a zeroed ticket counter for the last-block finish (atomicInc wraps
    it back to zero at the end of every launch) and partials buffers, so that launches on
    different streams never share them."""

    def __init__(self) -> None:
        self._by_stream: dict[tuple[int, Hashable], dict[Any, Any]] = {}

    def get(self, dtype: np.dtype, size: int) -> tuple[Any, Any]:
        """(counter, partials of at least ``size`` elements of ``dtype``) for this stream."""
        import cupy

        key = (cupy.cuda.runtime.getDevice(), fastpath.stream_key())
        slot = self._by_stream.get(key)
        if slot is None:
            slot = self._by_stream[key] = {"counter": cupy.zeros(1, dtype=np.uint32)}
        buf = slot.get(dtype.str)
        if buf is None or buf.size < size:
            buf = slot[dtype.str] = cupy.empty(max(size, 1024), dtype=dtype)
        return slot["counter"], buf


_SCRATCH = _StreamScratch()


@register("reduce", "single_pass_fence", rank=20, **_SEED)
def single_pass_fence(x: Any, s: ReduceSpec) -> Any:
    """GPU lecture's global sync: partials, __threadfence(), atomicInc; the last block finishes.

    Performance: reads n elements; one launch of ceil(n / 4096) blocks of 512; no host work.
    """
    import cupy

    n = x.size
    grid = max(1, -(-n // (8 * DIM)))
    out = cupy.empty((), dtype=s.out)
    counter, partials = _SCRATCH.get(s.acc, grid)
    _kernel("reduce_single_pass_fence", s.c_types)(
        (grid,), (DIM,), (x, np.uint64(n), partials, counter, out))
    return out


#: 0-d results per slab of ``persistent_vec``'s plans: one memory-pool call per 512 reductions
#: (``scalar.Slab``).
RESULT_SLOTS = 512


class _VecPlan:
    """Everything a ``persistent_vec`` launch needs that does not depend on the input, built
    once per (spec, device, stream): the kernel, the full persistent grid, this stream's
    counter and partials, a slab for the results. Calling it runs the reduction of a
    C-contiguous array (the variant's body, and the run of the family's plans for
    C-contiguous device input, ``plan.py``)."""

    __slots__ = (
        "block",
        "counter",
        "full",
        "go",
        "kernel",
        "out",
        "partials",
        "per_block",
        "results",
        "scalar",
        "stream",
    )

    def __init__(self, s: ReduceSpec, device_id: int, stream: int) -> None:
        import cupy

        self.kernel = _kernel("reduce_persistent_vec", s.c_types)
        sms = cupy.cuda.runtime.getDeviceProperties(device_id)["multiProcessorCount"]
        self.full = sms * occupancy_blocks_per_sm(self.kernel, VEC_BS, 0)
        self.per_block = 16 // s.dtype.itemsize * VEC_BS  # elements of one vector per thread
        self.counter, self.partials = _SCRATCH.get(s.acc, self.full)
        self.out = s.out
        self.block = (VEC_BS,)
        self.results = Slab(8 * RESULT_SLOTS, 8)  # 0-d results, 8-byte slots
        self.scalar = scalar_type()
        self.stream = stream
        # (data, n, partials, counter, out): n a Python int (the kernel's size_t)
        self.go = Prepared(self.kernel, None, self.block, (ARRAY, 0, ARRAY, ARRAY, ARRAY))

    def __call__(self, x: Any) -> Any:
        n = x.size
        out = self.scalar((), self.out, self.results.carve(8))
        self.go.on_stream(self.stream, vec_grid(n, self.per_block, self.full), x, n,
                          self.partials, self.counter, out)
        return out


def vec_grid(n: int, per_block: int, full: int) -> int:
    """Blocks of a ``persistent_vec`` launch for ``n`` elements: one (no partials, no atomics,
    no last-block finish) while each thread has at most one round of ``VEC_ACC`` loads, i.e.
    64 KiB (H100, benchmarks/NOTES.md: 0.5-0.9 us faster than 2+ blocks there); above, one
    block per block-wide 16-byte load (``per_block`` elements) up to the persistent grid of
    ``full`` blocks."""
    return 1 if n <= VEC_ACC * per_block else min(full, -(-n // per_block))


#: (spec, device id, stream) -> plan; the spec carries op and dtype (fastpath.clear empties it)
_VEC_PLANS = fastpath.PlanCache("reduce.persistent_vec")


def vec_plan(s: ReduceSpec) -> _VecPlan:
    """The plan of ``s`` on the current device and stream: ``vec_plan(s)(x)`` reduces ``x``
    (what the family's plans keep as their run, ``plan.py``)."""
    dev = sys.modules["cupy"].cuda.runtime.getDevice()
    stream, skey = fastpath.current_stream()
    key = (s, dev, skey)
    plan = _VEC_PLANS.get(key)
    if plan is None:
        plan = _VEC_PLANS.put(key, _VecPlan(s, dev, stream))
    return plan


@register("reduce", "persistent_vec", backend="cuda", bytes_moved=reduce_bytes_moved, rank=0)
def persistent_vec(x: Any, s: ReduceSpec) -> Any:
    """Persistent grid, 16-byte read-only loads, 8 accumulators per thread, a tail-first sweep
    (the input's last-written end is read while it is still in L2), warp shuffles, last-block
    finish.

    Performance: reads n elements once (less from DRAM where the input's end is still in L2);
    one launch of at most SMs x occupancy blocks of 512 (one block, no atomics, up to 64 KiB
    of input); no host work beyond one cached plan lookup and a 0-d result taken from a
    preallocated slab.
    """
    return vec_plan(s)(x)


persistent_vec.plan = vec_plan  # type: ignore[attr-defined]  # the prepared run of a spec on this device and stream (plan.py)

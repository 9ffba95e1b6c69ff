"""Launch plans of the numeric histogram kernels (``numeric.cu`` beside this file): NumPy's
``histogram`` with evenly spaced bins (``hist_even``) and with an edges array (``hist_edges``),
weighted ``bincount`` (``bincount_w``, ``bincount_wvec``; the min/max pass of a range taken
from the data is ``minmax_cuda``'s), also ``hist_even_fast`` (the one-FMA bin of
``numeric_fast``). The registry variants that run them: ``numeric_variants.py``.

Every kernel is one pass over the data on a persistent grid (SMs x resident blocks, fewer for
small inputs) of the config's block of threads, 16-byte streaming loads (its unroll in flight
per thread, optionally prefetched one step ahead): a :class:`LaunchConfig` names them, and every
plan takes one as an argument (:data:`DEFAULT` unless a tuning sweep passes another).
Accumulation (:func:`layout_for`): per-block shared-memory copies of the bins (32-bit counts or
float64 sums) within the config's ``acc_budget`` bytes: one copy per lane index (``bin * 32 +
lane``: the 32 lanes of a warp never share a bank) while ``nbins * 32`` accumulators fit (256
bins of counts, 128 of sums), else up to one copy per warp (at least one: 8192 bins of counts,
4096 of sums); each block then adds its non-empty bins to the global int64 / float64 bins, one
atomic per bin. Beyond the budget: global atomics per element (variants ``*_global``). The edges
(``nbins + 1`` values) sit in shared memory when they fit beside the accumulators (48 KiB a
block), else they are read through L1.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from warplab.core.launch import by_args
from warplab.core.loader import get_kernel, occupancy_blocks_per_sm
from warplab.core.scalar import zeros
from warplab.families.histogram.binning import EvenPlan
from warplab.families.histogram.config import DEFAULT, LaunchConfig  # noqa: F401  (re-export)
from warplab.families.histogram.numeric import NumericJob
from warplab.families.histogram.numeric_fast import fast_constants

SOURCE = Path(__file__).with_name("numeric.cu")
MAX_BLOCK_ELEMS = 1 << 31  # 32-bit shared counters: a block sees fewer elements than this


C_TYPE = {np.dtype(k): v for k, v in (
    (np.int8, "i8"), (np.uint8, "u8"), (np.int16, "i16"), (np.uint16, "u16"),
    (np.int32, "i32"), (np.uint32, "u32"), (np.int64, "i64"), (np.uint64, "u64"),
    (np.float16, "f16"), (np.float32, "f32"), (np.float64, "f64"), (np.bool_, "b8"))}
_F64, _I64 = np.dtype(np.float64), np.dtype(np.int64)


def c_type(dtype: Any) -> str:
    """The numeric.cu name of a dtype (``NoWeights`` for None)."""
    return "NoWeights" if dtype is None else C_TYPE[np.dtype(dtype)]


@dataclass(frozen=True)
class Layout:
    """Accumulation of one launch: ``layout`` 0 lane copies, 1 warp copies (``copies``),
    2 global atomics; ``esmem``: edges in shared memory; ``smem``: dynamic shared bytes."""

    layout: int
    copies: int
    esmem: bool
    smem: int


def layout_for(nbins: int, weighted: bool, edge_itemsize: int, cfg: LaunchConfig, *,
               private: bool = True) -> Layout:
    """How a block accumulates ``nbins`` bins (mirrors ``block_setup`` in numeric.cu).

    Performance: host arithmetic only."""
    a = 8 if weighted else 4
    budget = cfg.acc_budget
    if private and nbins * 32 * a <= budget:
        layout, copies, acc = 0, 1, nbins * 32 * a
    elif private and nbins * a <= budget:
        copies = max(1, min(cfg.block // 32, budget // (nbins * a)))
        layout, acc = 1, copies * nbins * a
    else:
        layout, copies, acc = 2, 1, 0
    acc = (acc + 15) & ~15
    eb = (nbins + 1) * edge_itemsize
    esmem = edge_itemsize > 0 and acc + eb <= cfg.smem_limit
    return Layout(layout, copies, esmem, acc + (eb if esmem else 0))


def private_fits(nbins: int, weighted: bool, cfg: LaunchConfig) -> bool:
    """True when ``nbins`` bins fit the shared accumulator budget."""
    return layout_for(nbins, weighted, 0, cfg).layout != 2


def bits(value: Any, dtype: Any) -> np.uint64:
    """``value`` as ``dtype``, its bytes in a 64-bit word (how numeric.cu's from_bits reads
    every typed constant)."""
    if value is None:
        return np.uint64(0)
    raw = np.asarray(value, dtype=dtype).tobytes()
    return np.uint64(int.from_bytes(raw, "little"))


def _tf(b: bool) -> str:
    return "true" if b else "false"


@functools.cache
def _even_group(d: str, e: str, p: str, w: str, kernel: str = "hist_even") -> tuple[str, ...]:
    return tuple(f"{kernel}<{d}, {e}, {p}, {w}, {lay}, {_tf(es)}>"
                 for lay in (0, 1, 2) for es in (True, False))


@functools.cache
def _edges_group(d: str, t: str, w: str) -> tuple[str, ...]:
    return tuple(f"hist_edges<{d}, {t}, {w}, {lay}, {_tf(es)}>"
                 for lay in (0, 1, 2) for es in (True, False))


@functools.cache
def _bincount_group(i: str, w: str, kernel: str = "bincount_w") -> tuple[str, ...]:
    return tuple(f"{kernel}<{i}, {w}, {lay}>" for lay in (0, 1, 2))


def _kernel(expr: str, group: tuple[str, ...], cfg: LaunchConfig) -> Any:
    return get_kernel(SOURCE, expr, all_expressions=group, options=cfg.options)


@functools.cache
def _resident(expr: str, group: tuple[str, ...], smem: int, device_id: int,
              cfg: LaunchConfig) -> int:
    import cupy

    sms = cupy.cuda.runtime.getDeviceProperties(device_id)["multiProcessorCount"]
    return sms * occupancy_blocks_per_sm(_kernel(expr, group, cfg), cfg.block, smem)


def blocks_needed(n: int, itemsize: int, cfg: LaunchConfig) -> int:
    """Blocks that give each thread one 16-byte load of ``n`` elements: the grid for small
    inputs (``_grid``); 1 where the one-block kernel forms may run (``hist_plan``)."""
    return -(-n // (cfg.block * (16 // itemsize)))


def _grid(expr: str, group: tuple[str, ...], smem: int, n: int, itemsize: int,
          cfg: LaunchConfig) -> int:
    """Persistent grid, fewer blocks for small inputs, more when a block would see 2^31
    elements (its 32-bit shared counters)."""
    import cupy

    full = _resident(expr, group, smem, cupy.cuda.Device().id, cfg)
    return max(1, min(full, blocks_needed(n, itemsize, cfg)), -(-n // MAX_BLOCK_ELEMS))


def prepared(expr: str, group: tuple[str, ...], lay: Layout, n: int, itemsize: int,
             cfg: LaunchConfig) -> Callable[[tuple], None]:
    """The launch of ``expr`` over ``n`` elements with everything but the arguments decided
    (kernel, shared-memory opt-in, grid): ``launch(args)``. Plans keep it (``hist_plan``,
    ``bincount_plan``)."""
    k = _kernel(expr, group, cfg)
    if lay.smem > 48 * 1024:  # opt in (a config's larger budgets)
        k.max_dynamic_shared_size_bytes = lay.smem
    grid, threads = (_grid(expr, group, lay.smem, n, itemsize, cfg),), (cfg.block,)
    return by_args(k, grid, threads, lay.smem)


def _launch(expr: str, group: tuple[str, ...], lay: Layout, n: int, itemsize: int,
            cfg: LaunchConfig, args: tuple) -> None:
    prepared(expr, group, lay, n, itemsize, cfg)(args)


@functools.lru_cache(maxsize=64)
def _device_array(key: bytes, dtype: str, device_id: int) -> Any:
    import cupy

    d = cupy.asarray(np.frombuffer(key, dtype=np.dtype(dtype)))
    cupy.cuda.get_current_stream().synchronize()  # cached for every stream: copied before use
    return d


def _on_device(a: np.ndarray) -> Any:
    import cupy

    return _device_array(a.tobytes(), a.dtype.str, cupy.cuda.Device().id)


def _real_parts(d_w: Any) -> list[Any]:
    """Weights as the kernels take them: real weights as they are; complex weights as their
    real and imaginary parts (contiguous float copies), one launch each."""
    import cupy

    if d_w is None or d_w.dtype.kind != "c":
        return [d_w]
    return [cupy.ascontiguousarray(d_w.real), cupy.ascontiguousarray(d_w.imag)]


def _outputs(job: NumericJob, nbins: int) -> list[Any]:
    if job.weights is None:
        return [zeros(nbins, _I64)]
    parts = 2 if job.weights.dtype.kind == "c" else 1
    return [zeros(nbins, _F64) for _ in range(parts)]


def _combine(outs: list[Any]) -> Any:
    return outs[0] if len(outs) == 1 else outs[0] + 1j * outs[1]


def even_launch(plan: EvenPlan, lay: Layout, w_dtype: Any, fast: bool, one_block: bool = False
                ) -> tuple[str, tuple[str, ...], tuple]:
    """(kernel expression, its module's expressions, the arguments after the data, its size
    and the weights: the device edges, bins, copies and the plan's constants) of an even-bins
    launch; ``one_block``: the kernel's one-block form (``*_one_block``: a grid of one block
    that stores its bins and copies the edges out; its last two arguments the counts and the
    edges). Performance: host work, the edges table looked up (one H2D copy per new table)."""
    D, E, P = plan.dtype, plan.e_dtype, plan.p_dtype
    lo, hi = cast(tuple, plan.keep)  # a plan the kernels run: it keeps values
    consts: tuple = (bits(lo, D), bits(hi, D), bits(plan.first_e, E),
                     bits(plan.denom_p, P), bits(plan.rdenom_p, P),
                     np.int32(plan.rdenom_p is not None), bits(plan.n_p, P))
    kernel = "hist_even"
    if fast:
        kernel = "hist_even_fast"
        consts += cast(tuple, fast_constants(plan))  # the fast variant's supports= checked it
    if one_block:
        kernel += "_one_block"
    group = _even_group(c_type(D), c_type(E), c_type(P), c_type(w_dtype), kernel)
    expr = f"{kernel}<{c_type(D)}, {c_type(E)}, {c_type(P)}, {c_type(w_dtype)}, " \
           f"{lay.layout}, {_tf(lay.esmem)}>"
    return expr, group, (_on_device(plan.edges), np.uint32(plan.nbins), np.uint32(lay.copies),
                         *consts)


def bincount_launch(x_dtype: Any, w_dtype: Any, nbins: int, private: bool, vec: bool,
                    cfg: LaunchConfig) -> tuple[str, tuple[str, ...], Layout]:
    """(expression, its module group, layout) of the weighted bincount launch: ``private``
    shared-memory sums when they fit, ``vec`` the 16-byte vector kernel (both operands
    aligned)."""
    lay = layout_for(nbins, True, 0, cfg, private=private)
    kernel = "bincount_wvec" if vec else "bincount_w"
    cx, cw = c_type(x_dtype), c_type(w_dtype)
    return f"{kernel}<{cx}, {cw}, {lay.layout}>", _bincount_group(cx, cw, kernel), lay

"""Launch plans of the numeric histogram kernels (``numeric.cu`` beside this file): NumPy's
``histogram`` with evenly spaced bins (``hist_even``) and with an edges array (``hist_edges``),
weighted ``bincount`` (``bincount_w``, ``bincount_wvec``; the min/max pass of a range taken
from the data is ``minmax_cuda``'s); the variants of the registry families
``histogram_even`` (also ``hist_even_fast``: the one-FMA bin of ``numeric_fast``),
``histogram_edges`` and ``bincount`` on the cuda backend.

Every kernel is one pass over the data on a persistent grid (SMs x resident blocks, fewer for
small inputs) of ``DEFINES``' block of threads, 16-byte streaming loads (its unroll in flight
per thread, optionally prefetched one step ahead; :func:`launch_config` changes them).
Accumulation (:func:`layout_for`): per-block shared-memory copies of the bins (32-bit counts or
float64 sums) within ``ACC_BUDGET`` bytes: one copy per lane index (``bin * 32 + lane``: the 32
lanes of a warp never share a bank) while ``nbins * 32`` accumulators fit (256 bins of counts,
128 of sums), else up to one copy per warp (at least one: 8192 bins of counts, 4096 of sums);
each block then adds its non-empty bins to the global int64 / float64 bins, one atomic per bin.
Beyond the budget: global atomics per element (variants ``*_global``). The edges (``nbins + 1``
values) sit in shared memory when they fit beside the accumulators (48 KiB a block), else they
are read through L1.
"""
from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from ...core.arrays import to_host
from ...core.fastpath import zeros
from ...core.launch import by_args
from ...core.loader import defines, get_kernel, occupancy_blocks_per_sm
from ...core.registry import register
from .binning import EdgesPlan, EvenPlan
from .numeric import (BINCOUNT, EDGES, EVEN, WEIGHT_DTYPES, NumericJob, NumericProblem,
                      NumericResult, byte_lut, fold_byte_counts, numeric_bytes_moved)
from .numeric_fast import fast_constants
from .spec import MAP_LUT, Mapping, resolve

SOURCE = Path(__file__).with_name("numeric.cu")
#: The kernels' compile-time constants: this dict is their only copy (passed as -D options):
#: threads per block of every kernel, 16-byte loads in flight per thread, and whether the
#: element loops load the next vectors before counting the current ones (1) or not (0).
DEFINES = {"WARPLAB_NUM_BLOCK": 256, "WARPLAB_NUM_UNROLL": 2, "WARPLAB_NUM_PREFETCH": 0}
ACC_BUDGET = 32 * 1024   # shared bytes of accumulator copies per block
SMEM_LIMIT = 48 * 1024   # dynamic shared memory a block may use without opting in
MAX_BLOCK_ELEMS = 1 << 31  # 32-bit shared counters: a block sees fewer elements than this
#: Changes whenever :func:`launch_config` changes the constants: the short paths' launch
#: records (``numeric_short``, ``bincount_short``) have it in their keys.
EPOCH = [0]

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


def block() -> int:
    """Threads per block of every kernel (``DEFINES``)."""
    return DEFINES["WARPLAB_NUM_BLOCK"]


@contextlib.contextmanager
def launch_config(block: int | None = None, unroll: int | None = None,
                  prefetch: int | None = None, acc_budget: int | None = None) -> Iterator[None]:
    """Launch the kernels with other compile-time constants or another shared accumulator
    budget (above 48 KiB a block opts in to more shared memory) inside the ``with`` block: the
    tuning sweep's switch (``benchmarks/explore_histogram_numeric.py``). Not thread safe."""
    global ACC_BUDGET, SMEM_LIMIT
    saved = dict(DEFINES), ACC_BUDGET, SMEM_LIMIT
    EPOCH[0] += 1
    for key, v in (("WARPLAB_NUM_BLOCK", block), ("WARPLAB_NUM_UNROLL", unroll),
                   ("WARPLAB_NUM_PREFETCH", prefetch)):
        if v is not None:
            DEFINES[key] = int(v)
    if acc_budget is not None:
        ACC_BUDGET = int(acc_budget)
        SMEM_LIMIT = max(SMEM_LIMIT, ACC_BUDGET + 16 * 1024)
    try:
        yield
    finally:
        DEFINES.clear()
        DEFINES.update(saved[0])
        ACC_BUDGET, SMEM_LIMIT = saved[1], saved[2]
        EPOCH[0] += 1


def layout_for(nbins: int, weighted: bool, edge_itemsize: int, *, private: bool = True
               ) -> Layout:
    """How a block accumulates ``nbins`` bins (mirrors ``block_setup`` in numeric.cu).

    Performance: host arithmetic only."""
    a = 8 if weighted else 4
    if private and nbins * 32 * a <= ACC_BUDGET:
        layout, copies, acc = 0, 1, nbins * 32 * a
    elif private and nbins * a <= ACC_BUDGET:
        copies = max(1, min(block() // 32, ACC_BUDGET // (nbins * a)))
        layout, acc = 1, copies * nbins * a
    else:
        layout, copies, acc = 2, 1, 0
    acc = (acc + 15) & ~15
    eb = (nbins + 1) * edge_itemsize
    esmem = edge_itemsize > 0 and acc + eb <= SMEM_LIMIT
    return Layout(layout, copies, esmem, acc + (eb if esmem else 0))


def private_fits(nbins: int, weighted: bool) -> bool:
    """True when ``nbins`` bins fit the shared accumulator budget."""
    return layout_for(nbins, weighted, 0).layout != 2


def bits(value: Any, dtype: Any) -> np.uint64:
    """``value`` as ``dtype``, its bytes in a 64-bit word (how numeric.cu's from_bits reads
    every typed constant)."""
    if value is None:
        return np.uint64(0)
    raw = np.asarray(value, dtype=dtype).tobytes()
    return np.uint64(int.from_bytes(raw, "little"))


def _tf(b: bool) -> str:
    return "true" if b else "false"


@functools.lru_cache(maxsize=None)
def _even_group(d: str, e: str, p: str, w: str, kernel: str = "hist_even") -> tuple[str, ...]:
    return tuple(f"{kernel}<{d}, {e}, {p}, {w}, {lay}, {_tf(es)}>"
                 for lay in (0, 1, 2) for es in (True, False))


@functools.lru_cache(maxsize=None)
def _edges_group(d: str, t: str, w: str) -> tuple[str, ...]:
    return tuple(f"hist_edges<{d}, {t}, {w}, {lay}, {_tf(es)}>"
                 for lay in (0, 1, 2) for es in (True, False))


@functools.lru_cache(maxsize=None)
def _bincount_group(i: str, w: str, kernel: str = "bincount_w") -> tuple[str, ...]:
    return tuple(f"{kernel}<{i}, {w}, {lay}>" for lay in (0, 1, 2))


def _kernel(expr: str, group: tuple[str, ...]) -> Any:
    return get_kernel(SOURCE, expr, all_expressions=group, options=defines(DEFINES))


@functools.lru_cache(maxsize=None)
def _resident(expr: str, group: tuple[str, ...], smem: int, device_id: int,
              options: tuple[str, ...]) -> int:
    import cupy

    sms = cupy.cuda.runtime.getDeviceProperties(device_id)["multiProcessorCount"]
    return sms * occupancy_blocks_per_sm(_kernel(expr, group), block(), smem)


def blocks_needed(n: int, itemsize: int) -> int:
    """Blocks that give each thread one 16-byte load of ``n`` elements: the grid for small
    inputs (``_grid``); 1 where the one-block kernel forms may run (``numeric_short``)."""
    return -(-n // (block() * (16 // itemsize)))


def _grid(expr: str, group: tuple[str, ...], smem: int, n: int, itemsize: int) -> int:
    """Persistent grid, fewer blocks for small inputs, more when a block would see 2^31
    elements (its 32-bit shared counters)."""
    import cupy

    full = _resident(expr, group, smem, cupy.cuda.Device().id, defines(DEFINES))
    return max(1, min(full, blocks_needed(n, itemsize)), -(-n // MAX_BLOCK_ELEMS))


def prepared(expr: str, group: tuple[str, ...], lay: Layout, n: int, itemsize: int
             ) -> Callable[[tuple], None]:
    """The launch of ``expr`` over ``n`` elements with everything but the arguments decided
    (kernel, shared-memory opt-in, grid): ``launch(args)``. Short paths keep it
    (``numeric_short``)."""
    k = _kernel(expr, group)
    if lay.smem > 48 * 1024:  # opt in (launch_config's larger budgets)
        k.max_dynamic_shared_size_bytes = lay.smem
    grid, threads, smem = (_grid(expr, group, lay.smem, n, itemsize),), (block(),), lay.smem
    return by_args(k, grid, threads, smem)


def _launch(expr: str, group: tuple[str, ...], lay: Layout, n: int, itemsize: int,
            args: tuple) -> None:
    prepared(expr, group, lay, n, itemsize)(args)


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


def _weights_ok(wd: np.dtype | None) -> bool:
    return wd is None or wd in WEIGHT_DTYPES or wd in (np.dtype(np.complex64),
                                                       np.dtype(np.complex128))


# ------------------------------------------------------------------------------- even bins


def _run_even(job: NumericJob, private: bool, fast: bool = False) -> NumericResult:
    plan: EvenPlan = job.plan
    nbins = plan.nbins
    outs = _outputs(job, nbins)
    if plan.keep is None:
        return NumericResult(_combine(outs), plan.edges)
    lay = layout_for(nbins, job.weights is not None, plan.e_dtype.itemsize, private=private)
    for d_x, d_w in job.device_chunks():
        for part, out in zip(_real_parts(d_w), outs):
            expr, group, consts = even_launch(plan, lay, None if part is None else part.dtype,
                                              fast)
            args = (d_x, np.uint64(d_x.size), d_x if part is None else part, *consts, out)
            _launch(expr, group, lay, d_x.size, plan.dtype.itemsize, args)
    return NumericResult(_combine(outs), plan.edges)


def even_launch(plan: EvenPlan, lay: Layout, w_dtype: Any, fast: bool, one_block: bool = False
                ) -> tuple[str, tuple[str, ...], tuple]:
    """(kernel expression, its module's expressions, the arguments after the data, its size
    and the weights: the device edges, bins, copies and the plan's constants) of an even-bins
    launch; ``one_block``: the kernel's one-block form (``*_one_block``: a grid of one block
    that stores its bins and copies the edges out; its last two arguments the counts and the
    edges). Performance: host work, the edges table looked up (one H2D copy per new table)."""
    D, E, P = plan.dtype, plan.e_dtype, plan.p_dtype
    consts = (bits(plan.keep[0], D), bits(plan.keep[1], D), bits(plan.first_e, E),
              bits(plan.denom_p, P), bits(plan.rdenom_p, P),
              np.int32(plan.rdenom_p is not None), bits(plan.n_p, P))
    kernel = "hist_even"
    if fast:
        kernel, consts = "hist_even_fast", consts + fast_constants(plan)
    if one_block:
        kernel += "_one_block"
    group = _even_group(c_type(D), c_type(E), c_type(P), c_type(w_dtype), kernel)
    expr = f"{kernel}<{c_type(D)}, {c_type(E)}, {c_type(P)}, {c_type(w_dtype)}, " \
           f"{lay.layout}, {_tf(lay.esmem)}>"
    return expr, group, (_on_device(plan.edges), np.uint32(plan.nbins), np.uint32(lay.copies),
                         *consts)


def _even_kernel_ok(p: NumericProblem) -> bool:
    return isinstance(p.plan, EvenPlan) and p.plan.kernel_ok and _weights_ok(p.weights)


def _private_ok(p: NumericProblem) -> bool:
    return private_fits(p.nbins, p.weights is not None)


def byte_path_bytes_moved(p: NumericProblem) -> int:
    """The byte kernels' cost: every data byte read once, every 8-byte bin written once."""
    return p.size * p.dtype.itemsize + 8 * p.nbins


@register(EVEN, "bytes", backend="cuda", bytes_moved=byte_path_bytes_moved,
          supports=lambda p: p.byte_ok, rank=0)
def even_bytes(job: NumericJob) -> NumericResult:
    """1-byte data without weights: the byte-histogram kernels (family ``histogram``).

    With a given range: NumPy's bin of each of the 256 values (:func:`numeric.byte_lut`) as the
    kernels' lookup table (values NumPy drops counted in one extra bin, cut off), no host sync;
    ``bins=256, range=(0, 256)`` on uint8 is the identity (mapping ``bytes``). Otherwise
    (range from the data, more than 255 bins): the 256 byte counts, folded on the host by
    ``np.histogram`` of the values present weighted by their counts (one sync).
    Performance: reads the data once; 1 launch (+ 2 KiB D2H for the fold)."""
    return _run_bytes(job)


def _lut_mapping(lut: np.ndarray, nbins: int) -> Mapping | None:
    """The byte kernels' mapping of a 256-entry bin table (-1: dropped); None when it does
    not fit their 256 bins."""
    if nbins == 256 and np.array_equal(lut, np.arange(256)):
        return resolve("bytes")
    dropped = lut < 0
    total = nbins + (1 if dropped.any() else 0)
    if nbins < 1 or total > 256:
        return None
    table = np.where(dropped, nbins, lut).astype(np.uint8)
    table.flags.writeable = False
    return Mapping("lut", MAP_LUT, total, table)


def _run_bytes(job: NumericJob) -> NumericResult:
    dtype = job.data.dtype
    nbins = job.spec.count
    if job.spec.kind == "edges" or job.range is not None:
        lut, edges = byte_lut(dtype, job.bins, job.range)
        mapping = _lut_mapping(lut, nbins)
        if mapping is not None:
            return NumericResult(job.count_bytes(mapping)[:nbins], edges)
    counts256 = to_host(job.count_bytes(resolve("bytes")))
    hist, edges = fold_byte_counts(dtype, counts256, job.bins, job.range)
    return NumericResult(hist, edges)


@register(EVEN, "even_private", backend="cuda", bytes_moved=numeric_bytes_moved,
          supports=lambda p: _even_kernel_ok(p) and _private_ok(p), rank=10)
def even_private(job: NumericJob) -> NumericResult:
    """Evenly spaced bins, NumPy's index arithmetic, shared-memory bins per block.

    Performance: one pass over the data (and weights), no per-element search: per element a
    subtraction, a division (a multiplication when the divisor is a power of two), a
    multiplication, two edge comparisons from shared memory, one shared atomic; nbins global
    atomics per block; 1 launch per chunk (+ the min/max pass when the range comes from the
    data)."""
    return _run_even(job, private=True)


@register(EVEN, "even_fast", backend="cuda", bytes_moved=numeric_bytes_moved,
          supports=lambda p: (_even_kernel_ok(p) and _private_ok(p)
                              and fast_constants(p.plan) is not None), rank=8)
def even_fast(job: NumericJob) -> NumericResult:
    """Evenly spaced bins, each from one float32 FMA where that is provably NumPy's index
    (``numeric_fast``), NumPy's arithmetic for the values near an edge; shared-memory bins per
    block as ``even_private``.

    Performance: one pass over the data; per element an FMA, three additions, compares, one
    shared atomic (no conversion instruction, no edge read) for all but a fraction ~2 delta
    of the values (3e-4 for float32 data, 256 bins over (-4, 4)); nbins global atomics per
    block; 1 launch per chunk (+ the min/max pass when the range comes from the data)."""
    return _run_even(job, private=True, fast=True)


@register(EVEN, "even_global", backend="cuda", bytes_moved=numeric_bytes_moved,
          supports=_even_kernel_ok, rank=20)
def even_global(job: NumericJob) -> NumericResult:
    """Evenly spaced bins with one global atomic per counted element (any bin count).

    Performance: as even_private but n global atomics (L2)."""
    return _run_even(job, private=False)


def _numpy_host(job: NumericJob) -> NumericResult:
    hist, edges = np.histogram(job.host_data(), job.bins, job.range, weights=job.host_weights())
    return NumericResult(hist, edges, raw=False)


@register(EVEN, "numpy_host", backend="cuda", bytes_moved=numeric_bytes_moved, rank=90)
def even_numpy_host(job: NumericJob) -> NumericResult:
    """What the kernels do not compute as NumPy (estimator names such as ``"auto"``, complex or
    object data, plans NumPy itself would fail on): ``np.histogram`` on a host copy.

    Performance: D2H copy of the data (synchronises); NumPy's speed."""
    return _numpy_host(job)


# ------------------------------------------------------------------------------- edges arrays


def _run_edges(job: NumericJob, private: bool) -> NumericResult:
    plan: EdgesPlan = job.plan
    nbins = plan.nbins
    outs = _outputs(job, nbins)
    weighted = job.weights is not None
    D, T = plan.dtype, plan.t_dtype
    lay = layout_for(nbins, weighted, T.itemsize, private=private)
    d_edges = _on_device(plan.edges_t)
    for d_x, d_w in job.device_chunks():
        for part, out in zip(_real_parts(d_w), outs):
            w_dtype = None if part is None else part.dtype
            group = _edges_group(c_type(D), c_type(T), c_type(w_dtype))
            expr = f"hist_edges<{c_type(D)}, {c_type(T)}, {c_type(w_dtype)}, {lay.layout}, " \
                   f"{_tf(lay.esmem)}>"
            args = (d_x, np.uint64(d_x.size), d_x if part is None else part, d_edges,
                    np.uint32(nbins), np.uint32(lay.copies), out)
            _launch(expr, group, lay, d_x.size, D.itemsize, args)
    return NumericResult(_combine(outs), plan.edges)


def _edges_kernel_ok(p: NumericProblem) -> bool:
    return isinstance(p.plan, EdgesPlan) and p.plan.kernel_ok and _weights_ok(p.weights)


@register(EDGES, "bytes", backend="cuda", bytes_moved=byte_path_bytes_moved,
          supports=lambda p: p.byte_ok, rank=0)
def edges_bytes(job: NumericJob) -> NumericResult:
    """1-byte data without weights: the byte-histogram kernels with NumPy's bin of each of the
    256 values as lookup table (see ``histogram_even``'s ``bytes``)."""
    return _run_bytes(job)


@register(EDGES, "edges_private", backend="cuda", bytes_moved=numeric_bytes_moved,
          supports=lambda p: _edges_kernel_ok(p) and _private_ok(p), rank=10)
def edges_private(job: NumericJob) -> NumericResult:
    """Edges array: binary search over the edges (shared memory), shared-memory bins per block.

    Performance: one pass over the data; log2(nbins + 1) edge comparisons per element; nbins
    global atomics per block; 1 launch per chunk."""
    return _run_edges(job, private=True)


@register(EDGES, "edges_global", backend="cuda", bytes_moved=numeric_bytes_moved,
          supports=_edges_kernel_ok, rank=20)
def edges_global(job: NumericJob) -> NumericResult:
    """Edges array, binary search, one global atomic per counted element (any bin count)."""
    return _run_edges(job, private=False)


@register(EDGES, "numpy_host", backend="cuda", bytes_moved=numeric_bytes_moved, rank=90)
def edges_numpy_host(job: NumericJob) -> NumericResult:
    """What the edges kernels do not take (NaN among the edges, fewer than two edges, dtypes
    without a kernel): ``np.histogram`` on a host copy. Synchronises."""
    return _numpy_host(job)


# --------------------------------------------------------------------------- weighted bincount


def _pairs_aligned(d_x: Any, d_w: Any) -> bool:
    """x and the weights both start at a 16-byte boundary (bincount_wvec's vector loads)."""
    return all(a.__cuda_array_interface__["data"][0] % 16 == 0 for a in (d_x, d_w))


def bincount_launch(x_dtype: Any, w_dtype: Any, nbins: int, private: bool, vec: bool
                    ) -> tuple[str, tuple[str, ...], Layout]:
    """(expression, its module group, layout) of the weighted bincount launch: ``private``
    shared-memory sums when they fit, ``vec`` the 16-byte vector kernel (both operands
    aligned)."""
    lay = layout_for(nbins, True, 0, private=private)
    kernel = "bincount_wvec" if vec else "bincount_w"
    cx, cw = c_type(x_dtype), c_type(w_dtype)
    return f"{kernel}<{cx}, {cw}, {lay.layout}>", _bincount_group(cx, cw, kernel), lay


def _run_bincount(job: NumericJob, private: bool, vec: bool = False) -> NumericResult:
    nbins = int(job.plan)
    out = zeros(nbins, _F64)
    for d_x, d_w in job.device_chunks():
        if d_x.dtype == np.bool_:
            d_x = d_x.view(np.uint8)
        expr, group, lay = bincount_launch(d_x.dtype, d_w.dtype, nbins, private,
                                           vec and _pairs_aligned(d_x, d_w))
        args = (d_x, np.uint64(d_x.size), d_w, np.uint64(nbins), np.uint32(lay.copies), out)
        _launch(expr, group, lay, d_x.size, d_x.dtype.itemsize, args)
    return NumericResult(out, None)


@register(BINCOUNT, "private_sums", backend="cuda", bytes_moved=numeric_bytes_moved,
          supports=lambda p: private_fits(p.nbins, True), rank=10)
def bincount_private(job: NumericJob) -> NumericResult:
    """Weighted bincount with float64 sums per block in shared memory (up to 4096 bins), one
    global float64 atomic per non-empty bin and block.

    Performance: one pass over x and the weights (+ the max pass that sizes the result);
    1 launch per chunk."""
    return _run_bincount(job, private=True)


@register(BINCOUNT, "private_sums_vec", backend="cuda", bytes_moved=numeric_bytes_moved,
          supports=lambda p: private_fits(p.nbins, True), rank=8)
def bincount_private_vec(job: NumericJob) -> NumericResult:
    """``private_sums`` reading x and the weights together in 16-byte vectors (``UNROLL``
    pairs in flight per thread) when both start 16-byte aligned, else as ``private_sums``.

    Performance: as private_sums; no scalar weight loads."""
    return _run_bincount(job, private=True, vec=True)


@register(BINCOUNT, "global_atomics_vec", backend="cuda", bytes_moved=numeric_bytes_moved,
          rank=22)
def bincount_global_vec(job: NumericJob) -> NumericResult:
    """``global_atomics`` with x and the weights read together in 16-byte vectors.

    Performance: one global float64 atomic (L2) per element; the loads as private_sums_vec."""
    return _run_bincount(job, private=False, vec=True)


@register(BINCOUNT, "global_atomics", backend="cuda", bytes_moved=numeric_bytes_moved,
          rank=20)
def bincount_global(job: NumericJob) -> NumericResult:
    """Weighted bincount with one global float64 atomic per element (any bin count: the
    fallback beyond the shared budget, as CuPy does for every size)."""
    return _run_bincount(job, private=False)


#: (private, vec) of each cuda bincount variant's launch (the short path's records).
BINCOUNT_KINDS = {bincount_private: (True, False), bincount_private_vec: (True, True),
                  bincount_global_vec: (False, True), bincount_global: (False, False)}

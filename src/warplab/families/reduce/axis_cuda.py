"""Launch plans of the CUDA axis-reduction variants (kernels in ``axis.cu`` and its ``.cuh``):
``rows_adaptive`` (layout "rows") and ``columns`` (layout "cols"); the Pearson report's K2 seeds
live in ``axis_cuda_k2``. A variant registered here (:func:`register_cuda`) is a kernel function
``fn(x2d, job)``; ``axis_input`` holds its calling convention, the native dtypes and the 2-D
view and dtype conversion around it (``axis_input.run``).

var/std use shifted sums: each slice's first element k is subtracted, sum(x - k) and
sum((x - k)^2) accumulate in float64, var = (S2 - S1^2/n) / (n - ddof). Chosen over Welford/Chan
because the accumulators are plain sums: lanes, warps and blocks merge by addition (no per-element
division, 16-byte vector loads keep their pace, the same kernels as sum), and with k a data value
of the slice the cancellation error is about eps64 * n * (1 + (mean - k)^2 / var), far below
float32 resolution and at float64 level unless one outlier dominates the slice.
"""
from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from warplab.core import fastpath
from warplab.core.launch import ARRAY, Prepared
from warplab.core.loader import defines, get_kernel
from warplab.core.registry import register
from warplab.core.scalar import empty
from warplab.families.reduce.axis_input import _F64, _I64, C_TYPE, _ld, kernel_dtypes, run
from warplab.families.reduce.axis_plan import (  # noqa: F401
    BLOCK,
    COLS_BLOCK,
    COLS_FIN_BYTES,
    COLS_MIN_ROWS,
    COLS_STREAM,
    COLS_UNROLL,
    GROUP_STREAM,
    GROUPS,
    OVERLAP,
    PACKED_LANES,
    SPLIT_STREAM,
    SPLIT_UNROLL,
    STAGE_HOIST,
    STAGE_UNROLL,
    STAGE_WIDE_GROUPS,
    STAGE_WIDE_UNROLL,
    TRIGGER,
    UNROLL,
    ColsPlan,
    RowsPlan,
    _pow2_ceil,
    group_size,
    plan_cols,
    plan_rows,
)
from warplab.families.reduce.axis_spec import FAMILY, AxisJob, AxisProblem, Plan2D, axis_bytes_moved

SOURCE = Path(__file__).with_name("axis.cu")
K2_BLOCK = 1024   # the Pearson report's K2 block (WARPLAB_K2_BLOCK)
#: The kernels' compile-time constants: this dict is their only copy (passed as -D options).
DEFINES = {"WARPLAB_AXIS_BLOCK": BLOCK, "WARPLAB_AXIS_UNROLL": UNROLL,
           "WARPLAB_AXIS_SPLIT_UNROLL": SPLIT_UNROLL, "WARPLAB_AXIS_STAGE_UNROLL": STAGE_UNROLL,
           "WARPLAB_AXIS_STAGE_HOIST": STAGE_HOIST, "WARPLAB_AXIS_TRIGGER": TRIGGER,
           "WARPLAB_AXIS_GROUP_STREAM": GROUP_STREAM, "WARPLAB_AXIS_SPLIT_STREAM": SPLIT_STREAM,
           "WARPLAB_AXIS_COLS_STREAM": COLS_STREAM, "WARPLAB_AXIS_COLS_BLOCK": COLS_BLOCK,
           "WARPLAB_AXIS_COLS_UNROLL": COLS_UNROLL, "WARPLAB_AXIS_COLS_FIN_BYTES": COLS_FIN_BYTES,
           "WARPLAB_K2_BLOCK": K2_BLOCK}
KERNEL_OP = {"sum": "OpSum", "mean": "OpMean", "min": "OpMin", "max": "OpMax", "var": "OpVar",
             "std": "OpStd", "stats": "OpStats"}
ACC_BYTES = {"double": 8, "long long": 8, "Mom": 16}  # else the input type


def _empty(shape: Any, dtype: Any) -> Any:
    """Every output and partials buffer comes from here (tests poison it): ``DeviceArray``
    results (``core/scalar.py``)."""
    return empty(shape, dtype)


def targs(op: str, t: np.dtype) -> str:
    """``"T, A, R, OP"`` for the axis.cu templates."""
    acc, res = kernel_dtypes(op, t)
    return f"{C_TYPE[t]}, {acc}, {C_TYPE[res]}, {KERNEL_OP[op]}"


def staged_expr(args: str, group: int, words: int = STAGE_UNROLL,
                default: int = STAGE_UNROLL) -> str:
    """The staged kernel's name expression: G = ``group`` lanes per row, U = ``words``
    16-byte words a thread stages (named only where it is not the module's ``default``,
    WARPLAB_AXIS_STAGE_UNROLL)."""
    wide = "" if words == default else f", {words}"
    return f"axis_rows_staged<{args}, {group}{wide}>"


def cols_expr(args: str, vec: bool, short_walk: bool = False) -> str:
    """The columns kernel's name expression, with 16-byte loads (``vec``) or without, in its
    short-walk form (``short_walk``, 16-byte loads only: axis_plan.short_walk) or not."""
    return f"axis_cols<{args}, {str(vec).lower()}, {str(vec and short_walk).lower()}>"


@functools.cache
def _expressions(args: str) -> tuple[str, ...]:
    """One module per (T, op): every group size of the group kernel (both load paths) and of
    the staged kernel, every packed width, the split and columns kernels."""
    out = [f"axis_rows_group<{args}, {g}, {v}>" for g in GROUPS for v in ("true", "false")]
    out += [f"axis_rows_packed<{args}, {lanes}>" for lanes in PACKED_LANES]
    out += [staged_expr(args, g) for g in GROUPS]
    out += [staged_expr(args, g, STAGE_WIDE_UNROLL) for g in STAGE_WIDE_GROUPS]
    out += [f"axis_rows_split<{args}, {v}>" for v in ("true", "false")]
    out += [cols_expr(args, v, w) for v, w in ((True, False), (True, True), (False, False))]
    return tuple(out)


@functools.cache
def _kernel(expr: str, args: str, device_id: int) -> Any:
    return get_kernel(SOURCE, expr, all_expressions=_expressions(args), options=defines(DEFINES))


@functools.cache
def sm_count(device_id: int) -> int:
    """Streaming multiprocessors of a device. Performance: one device query, then cached."""
    import cupy

    return int(cupy.cuda.runtime.getDeviceProperties(device_id)["multiProcessorCount"])


class _Tickets:
    """Per (device, stream): a zeroed uint32 counter array for the last-block finishes (every
    launch leaves its counters back at 0: atomicInc wraps on the last ticket)."""

    def __init__(self) -> None:
        self._by: dict[tuple[int, Hashable], Any] = {}

    def get(self, n: int) -> Any:
        cupy = sys.modules["cupy"]
        key = (cupy.cuda.runtime.getDevice(), fastpath.stream_key())
        t = self._by.get(key)
        if t is None or t.size < n:
            t = self._by[key] = cupy.zeros(max(n, 1024), dtype=np.uint32)
        return t


TICKETS = _Tickets()


def register_cuda(name: str, *, supports: Callable[[AxisProblem], bool], rank: int = 100,
                  seed: bool = False, launch: Callable[..., Launch] | None = None
                  ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a kernel function ``fn(x2d, job)`` (a native-dtype 2-D device view) as cuda
    variant ``name`` of ``reduce_axis``: the registered callable is ``(x, plan, job)``, which
    makes the view and converts the dtype (:func:`~.axis_input.run`) before calling it.
    ``launch``: the variant's launch planned once for a 2-D view of a native dtype
    (:func:`record_launch`), the registered callable's ``launch`` attribute (the plans'
    records, ``plan_axis``)."""

    def deco(kernel_fn: Callable[..., Any]) -> Callable[..., Any]:
        def variant(x: Any, plan: Plan2D, job: AxisJob) -> Any:
            return run(kernel_fn, x, plan, job)

        variant.__doc__, variant.__name__ = kernel_fn.__doc__, kernel_fn.__name__
        if launch is not None:
            variant.launch = launch  # type: ignore[attr-defined]
        register(FAMILY, name, backend="cuda", bytes_moved=axis_bytes_moved, supports=supports,
                 rank=rank, seed=seed)(variant)
        return kernel_fn

    return deco


class Launch(NamedTuple):
    """One planned launch of an axis kernel, everything but the data and the output: ``go``
    the prepared launch (``core/launch.py``: kernel, grid and block), ``mid`` (the arguments
    between the data and the output), ``tail`` (after the output); ``partials``: None, or (C
    accumulator type, element dtype, partials, tickets) for the kernels that take a partials
    buffer and a ticket array (split rows, columns) before the output. Depends on the shape,
    the row stride, the base's 16-byte alignment, the op, the dtype and the device only, so a
    plan keeps it (``plan_axis.Record``)."""

    go: Prepared
    mid: tuple
    tail: tuple
    partials: tuple | None


def _planned(kernel: Any, grid: tuple, block: tuple, mid: tuple, tail: tuple,
             partials: tuple | None) -> Launch:
    arrays = (ARRAY,) * (1 if partials is None else 3)
    return Launch(Prepared(kernel, grid, block, (ARRAY, *mid, *arrays, *tail), overlap=OVERLAP),
                  mid, tail, partials)


def scratch(launch: Launch) -> tuple[Any, Any]:
    """New partials for ``launch`` (which takes them) and the stream's tickets."""
    assert launch.partials is not None
    acc, t, n, tickets = launch.partials
    return _partials(acc, t, n), TICKETS.get(tickets)


def launch_args(launch: Launch, x: Any, out: Any,
                partials: Callable[[Launch], tuple[Any, Any]] = scratch) -> tuple[Any, ...]:
    """The kernel arguments of ``launch`` on the device data ``x`` (its base pointer) into
    ``out``; split and columns plans take ``partials(launch)``: their partials and tickets."""
    if launch.partials is None:
        return (x, *launch.mid, out, *launch.tail)
    return (x, *launch.mid, *partials(launch), out, *launch.tail)


def fire(launch: Launch, x: Any, out: Any) -> None:
    """Launch ``launch`` on the device data ``x`` into ``out`` (one launch, no synchronisation;
    split and columns plans allocate their partials first)."""
    launch.go(*launch_args(launch, x, out))


def rows_launch(rows: int, cols: int, ld_el: int, aligned: bool, op: str, t: np.dtype,
                ddof: float, out2: int) -> Launch:
    """Plan (:func:`plan_rows`) ``rows_adaptive``'s launch on the current device: rows of
    ``cols`` elements ``ld_el`` apart, the base 16-byte ``aligned`` or not.

    Performance: host arithmetic and cached lookups; the first call per (dtype, op) compiles
    the module (NVRTC, ~1-2 s, then CuPy's disk cache)."""
    import cupy

    args = targs(op, t)
    dev = cupy.cuda.runtime.getDevice()
    p = plan_rows(rows, cols, t.itemsize, sm_count(dev),
                  contiguous=ld_el == cols or rows == 1, aligned=aligned)
    vs = "true" if p.vec else "false"
    ld, tail = np.uint64(ld_el), (np.float64(ddof), np.uint64(out2))
    shape = (np.uint64(rows), np.uint64(cols))
    if p.kernel == "packed":
        return _planned(_kernel(f"axis_rows_packed<{args}, {p.group}>", args, dev), (p.grid,),
                        (BLOCK,), shape, tail, None)
    if p.kernel == "staged":
        return _planned(_kernel(staged_expr(args, p.group, p.words), args, dev), (p.grid,),
                        (BLOCK,), (*shape, np.uint64(p.chunk)), tail, None)
    if p.kernel == "group":
        return _planned(_kernel(f"axis_rows_group<{args}, {p.group}, {vs}>", args, dev),
                        (p.grid,), (BLOCK,), (*shape, ld), tail, None)
    return _planned(_kernel(f"axis_rows_split<{args}, {vs}>", args, dev), (p.grid,), (BLOCK,),
                    (*shape, ld, np.uint32(p.splits), np.uint64(p.chunk)), tail,
                    (kernel_dtypes(op, t)[0], t, rows * p.splits if p.splits > 1 else 1,
                     rows if p.splits > 1 else 1))


def _launch_rows(x2d: Any, op: str, ddof: float, out: Any, out2: int) -> None:
    """Plan (:func:`rows_launch`) and launch ``rows_adaptive``'s kernel into ``out``.

    Performance: one launch, no synchronisation."""
    rows, cols = x2d.shape
    fire(rows_launch(rows, cols, _ld(x2d), x2d.data.ptr % 16 == 0, op, np.dtype(x2d.dtype),
                     ddof, out2), x2d, out)


def _partials(acc: str, t: np.dtype, n: int) -> Any:
    """Partials of C type ``acc`` (``Mom``: two doubles each)."""
    if acc == "Mom":
        return _empty(2 * n, _F64)
    return _empty(n, {"double": _F64, "long long": _I64}.get(acc, t))


def cols_launch(nred: int, ncols: int, ld: int, base_aligned: bool, op: str, t: np.dtype,
                ddof: float, out2: int) -> Launch:
    """Plan (:func:`plan_cols`) the ``columns`` launch on the current device (compilation as
    :func:`rows_launch`)."""
    import cupy

    args = targs(op, t)
    dev = cupy.cuda.runtime.getDevice()
    aligned = base_aligned and (ld * t.itemsize) % 16 == 0
    acc = kernel_dtypes(op, t)[0]
    p = plan_cols(nred, ncols, t.itemsize, aligned, sm_count(dev), ACC_BYTES.get(acc, t.itemsize))
    return _planned(_kernel(cols_expr(args, p.vec, p.short_walk), args, dev), (p.gx, p.splits),
                    (COLS_BLOCK,),
                    (np.uint64(nred), np.uint64(ncols), np.uint64(ld), np.uint32(p.cg),
                     np.uint32(p.splits), np.uint64(p.chunk)),
                    (np.float64(ddof), np.uint64(out2)),
                    (acc, t, ncols * p.splits if p.splits > 1 else 1,
                     p.gx if p.splits > 1 else 1))


def _launch_cols(x2d: Any, op: str, ddof: float, out: Any, out2: int) -> None:
    """Plan (:func:`cols_launch`) and launch the ``columns`` kernel into ``out``.

    Performance: one launch, no synchronisation."""
    nred, ncols = x2d.shape
    fire(cols_launch(nred, ncols, _ld(x2d), x2d.data.ptr % 16 == 0, op, np.dtype(x2d.dtype),
                     ddof, out2), x2d, out)


def record_launch(plan: Plan2D, aligned: bool, op: str, t: np.dtype, ddof: float) -> Launch:
    """The launch ``rows_adaptive`` (layout "rows") or ``columns`` ("cols") makes for the 2-D
    view ``plan`` of an array of native dtype ``t`` (its base 16-byte ``aligned`` or not), as
    :func:`rows_launch` / :func:`cols_launch` plan it: what a plan keeps and launches."""
    ld = plan.ld if plan.rows > 1 else plan.cols
    if plan.layout == "rows":
        return rows_launch(plan.rows, plan.cols, ld, aligned, op, t, ddof, plan.rows)
    return cols_launch(plan.rows, plan.cols, ld, aligned, op, t, ddof, plan.cols)


def _rows_layout(p: AxisProblem) -> bool:
    return p.layout == "rows"


def _cols_layout(p: AxisProblem) -> bool:
    return p.layout == "cols"


@register_cuda("rows_adaptive", supports=_rows_layout, rank=0, launch=record_launch)
def rows_adaptive(x2d: Any, job: AxisJob) -> Any:
    """Each row reduced by a group of 1-32 lanes, from shared memory, or by one or more blocks,
    chosen from the shape (:func:`plan_rows`).

    Every op (sum/mean accumulate in float64 for floats and int64 for integers; min/max in the
    input type with NaN propagating; var/std as shifted moments in float64). Rows back to back
    of 16-256 bytes on the 16-byte grid: L lanes per row reading whole 512-byte segments
    (packed). Other rows back to back up to 2 KiB: tiles of whole rows staged through shared
    memory by the same segments, then G lanes per row (staged). Rows under 16 KiB: G lanes per
    row from each row's first 16-byte boundary (group). Longer rows, or too few rows to fill
    the GPU: a block per row, or S blocks per row with partials and a last-block finish
    through an atomic ticket per row (split). Any row length and stride.

    Performance:
        Reads rows * cols elements once, writes one result per row; one launch (split plans
        with S > 1 also write and read rows * S partials); no host synchronisation. Grids:
        one warp step (packed, group) or one tile (staged) per 256-thread block; split rows * S
        blocks of 256, about 4 per SM when the rows are few.
    """
    rows = x2d.shape[0]
    n = 2 * rows if job.op == "stats" else rows
    out = _empty(n, job.out)
    _launch_rows(x2d, job.op, job.ddof, out, rows)
    return out


@register_cuda("columns", supports=_cols_layout, rank=0, launch=record_launch)
def columns(x2d: Any, job: AxisJob) -> Any:
    """Each column of an (nred x ncols) view reduced by the threads that own it (axis 0 of a
    C-contiguous array): 4 (float32) or 2 (float64) adjacent columns a thread with 16-byte loads
    where aligned, 4 rows in flight; a block is up to 256 column threads, and with fewer columns
    the rest of the block are row lanes combined in shared memory at the end; the rows split
    over blocks (partials and a last-block finish per column block) so the GPU fills
    (:func:`plan_cols`). Every op.

    Performance:
        Reads nred * ncols elements once (a warp reads whole 32-byte sectors: 512 contiguous
        bytes per row with many columns, several rows' worth with few), writes one result per
        column; one launch of (column blocks, S) blocks of 256; with S > 1 also writes and
        reads S * ncols partials (under ~3% of the input for float32 data, as each split holds
        at least 128 rows). No host synchronisation.
    """
    ncols = x2d.shape[1]
    out = _empty(2 * ncols if job.op == "stats" else ncols, job.out)
    _launch_cols(x2d, job.op, job.ddof, out, ncols)
    return out

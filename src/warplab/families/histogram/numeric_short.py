"""The short path of ``histogram(x, bins, range)`` on device input: the launch record.

``histogram(x, 64, (0, 1))`` on a flat CuPy array decides the same things on every call with
the same (dtype, shape, strides, bins, range, device, ``launch_config``): NumPy's edges
(``np.linspace``), the even-bins plan and its constants, the variant, the kernel, its grid, and
the edges table on the device. The first call builds a :class:`Record` of them in the
``histogram.even`` plan cache (``core/fastpath.py``). A later call makes one allocation (the
counts, then at a 256-byte offset the edges), takes the counts and the edges as two arrays on
it, and launches:

* inputs the persistent grid would give one block (``n`` at most the block's threads times
  the elements of one 16-byte load: 1,024 float32) run the kernel's one-block form
  (``hist_even_one_block`` / ``hist_even_fast_one_block``), which stores every bin (zeros too)
  and writes the nbins + 1 edges from the device table into the allocation itself;
* larger inputs fill the allocation from the record's device ``template`` (zeroed counts and
  the edges) by one device-to-device ``cudaMemcpyAsync`` before the launch, whose blocks add
  their bins atomically.

The caller gets new arrays: nothing it can see is shared with another call. No host-to-device
copy, no ``linspace``, no memset, no copy kernel per call.

What the record takes: a flat contiguous, non-empty CuPy array of a dtype the even-bins
kernels read that is not a byte dtype (those run the byte-histogram kernels) and not bool
(NumPy's warning), ``bins`` an ``int``, ``range`` a tuple or list of two ``int``/``float``
(keyed by type, value and sign, so ``-0.0`` never reuses ``0.0``'s edges), no weights, no
density, no ``variant=``/``device=``. Everything else, and every call whose checks raise,
takes the full path (which raises what it always raised).
"""
from __future__ import annotations

import math
import sys
from typing import Any, Callable, NamedTuple

import numpy as np

from warplab.core import fastpath, registry as _registry
from warplab.core.arrays import is_flat
from warplab.core.scalar import RESULT_TYPES, on
from warplab.families.histogram import numeric_cuda, numeric_variants
from warplab.families.histogram.binning import KERNEL_DTYPES, plan_even
from warplab.families.histogram.numeric import BYTE_DTYPES, EVEN, NumericProblem, even_edges, outer_edges, parse_bins

_RECORDS = fastpath.PlanCache("histogram.even")
_I64 = np.dtype(np.int64)


class Record(NamedTuple):
    """A cached call: the ``variant`` it reports, ``launch(args)``, the data's element count
    ``n`` (a kernel argument), the arguments after the data and weights (``rest``), the
    counts' ``shape`` ((nbins,)), the edges' ``e_shape`` and ``e_dtype``, the results'
    ``nbytes`` (the edges at ``offset``); ``template``: None for the one-block form, else the
    device pointer of the results' initial bytes (zeroed counts, the edges)."""

    variant: Any
    launch: Callable[[tuple], None]
    n: np.uint64
    rest: tuple
    shape: tuple
    e_shape: tuple
    e_dtype: np.dtype
    nbytes: int
    offset: int
    template: Any


def _range_key(rng: Any) -> tuple | None:
    if type(rng) is not tuple and type(rng) is not list or len(rng) != 2:
        return None
    lo, hi = rng
    tl, th = type(lo), type(hi)
    if (tl is not int and tl is not float) or (th is not int and th is not float):
        return None
    return tl, lo, math.copysign(1.0, lo), th, hi, math.copysign(1.0, hi)


def histogram(a: Any, bins: Any, range: Any) -> tuple[Any, Any] | None:  # noqa: A002
    """``(hist, edges)`` of ``histogram(a, bins, range)`` through the launch record, or None
    (the full path; module docstring).

    Performance: on a hit one allocation and one launch (one block, up to 1,024 float32
    elements); larger inputs one device-to-device ``cudaMemcpyAsync`` too (the zeroed counts
    and the nbins + 1 edges from the template); no synchronisation."""
    cupy = sys.modules.get("cupy")
    if cupy is None or (type(a) is not cupy.ndarray and type(a) not in RESULT_TYPES) \
            or type(bins) is not int:
        return None
    rk = _range_key(range)
    if rk is None:
        return None
    key = (a.dtype, a.shape, a.strides, bins, rk, cupy.cuda.runtime.getDevice(),
           numeric_cuda.EPOCH[0])
    rec = _RECORDS.record(key, lambda: _build(a, bins, range))
    if rec is None:
        return None
    _registry.ran(rec.variant)
    mem = cupy.cuda.alloc(rec.nbytes)  # the arrays' pointers keep the allocation alive
    out = on(mem, rec.shape, _I64)
    edges = on(mem + rec.offset, rec.e_shape, rec.e_dtype)
    if rec.template is None:
        rec.launch((a, rec.n, a, *rec.rest, out, edges))
    else:
        mem.copy_from_device_async(rec.template, rec.nbytes)
        rec.launch((a, rec.n, a, *rec.rest, out))
    return out, edges


def one_block(n: int, itemsize: int) -> bool:
    """True when ``numeric_cuda``'s grid over ``n`` elements is one block (each thread one
    16-byte load: ``numeric_cuda.blocks_needed``): the kernels' one-block form may run them."""
    return numeric_cuda.blocks_needed(n, itemsize) <= 1


def _build(a: Any, bins: int, rng: Any, templated: bool = False) -> Record | bool | None:
    """The record, False for calls the full path runs, None when its checks raise.
    ``templated``: the template form even where the one-block form runs (the tests and
    ``benchmarks/explore_hist1k_rows.py`` compare the two)."""
    t = np.dtype(a.dtype)
    if not a.size or not is_flat(a) or t not in KERNEL_DTYPES or t in BYTE_DTYPES \
            or t == np.bool_:
        return False
    n = int(a.size)
    try:
        spec = parse_bins(bins)
        first, last = outer_edges(tuple(rng), n, lambda: None)
        plan = plan_even(t, first, last, spec.count, even_edges(first, last, spec.count, t))
    except (TypeError, ValueError):
        return None
    problem = NumericProblem(EVEN, n, t, spec.count, None, True, 1, plan, False)
    v = _registry.choose(EVEN, "cuda", problem)
    fast = v.fn is numeric_variants.even_fast
    if not (fast or v.fn is numeric_variants.even_private) or plan.keep is None:
        return False
    single = one_block(n, t.itemsize) and not templated
    lay = numeric_cuda.layout_for(plan.nbins, False, plan.e_dtype.itemsize)
    expr, group, rest = numeric_cuda.even_launch(plan, lay, None, fast, single)
    launch = numeric_cuda.prepared(expr, group, lay, n, t.itemsize)
    d_edges = rest[0]
    offset = -(-plan.nbins * _I64.itemsize // 256) * 256
    nbytes = offset + d_edges.nbytes
    template = None
    if not single:
        cupy = sys.modules["cupy"]
        zeroed = cupy.zeros(nbytes, np.uint8)
        (zeroed.data + offset).copy_from_device(d_edges.data, d_edges.nbytes)
        cupy.cuda.get_current_stream().synchronize()  # every stream copies from it
        template = zeroed.data  # the pointer keeps the allocation alive
    return Record(v, launch, np.uint64(n), rest, (plan.nbins,), d_edges.shape, d_edges.dtype,
                  nbytes, offset, template)

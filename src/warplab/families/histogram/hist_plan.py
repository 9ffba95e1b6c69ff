"""``histogram``'s plans: what a call decides once per key and then only runs.

:func:`key` normalises a call (the data's kind, dtype, shape, strides and device, ``bins``,
``range`` with the type and sign of each end, ``density``, the weights' kind, dtype, shape and
strides, ``variant=``, ``device=``, ``WARPLAB_DEVICE`` for host data, the
:class:`~warplab.families.histogram.config.LaunchConfig`); :func:`build` is the one place the
family decides (backend, registry family, variant through :func:`decide`, NumPy's checks of
``bins``/``range``/weights, the even or edges plan of the kernels, the byte path's mapping).
Two kinds of plan:

* :class:`Record`: flat non-empty device data of a kernel dtype (not a byte dtype, not bool),
  integer ``bins``, a given range, no weights, no density, the variant ``even_fast`` or
  ``even_private``. It holds the prepared launch (kernel, grid, shared memory), the plan's
  constants and the device edges. A run makes one allocation (the counts, then at a 256-byte
  offset the edges), takes the counts and the edges as two arrays on it, and launches: inputs
  the persistent grid gives one block (``n`` at most the block's threads times the elements of
  one 16-byte load: 1,024 float32) run the kernel's one-block form, which stores every bin
  and writes the edges; larger inputs (and ``LaunchConfig(one_block=False)``) first fill the
  allocation from the record's device ``template`` (zeroed counts, the edges) by one
  device-to-device copy. No host-to-device copy, no ``linspace``, no memset, no sync.
* :class:`Planned`: everything else. A range from the data is data-dependent work: the run
  finds the min/max (one pass, one sync on device data), then NumPy's edges, the even plan and
  the variant (:func:`decide`, the same function the build calls for a given range).
"""
from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Hashable
from typing import Any, cast

import numpy as np

from warplab.core import registry as _registry
from warplab.core.arrays import flat_contiguous, is_flat, to_host
from warplab.core.errors import InvalidValueError
from warplab.core.outputs import cupy as _cupy
from warplab.core.scalar import RESULT_TYPES, on, zeros
from warplab.families.histogram import numeric_cuda, numeric_variants, streamed
from warplab.families.histogram.binning import (
    KERNEL_DTYPES,
    EdgesPlan,
    EvenPlan,
    plan_edges,
    plan_even,
)
from warplab.families.histogram.byte_plan import byte_variant, explained_input
from warplab.families.histogram.config import LaunchConfig
from warplab.families.histogram.numeric import (
    BYTE_DTYPES,
    EDGES,
    EVEN,
    Bins,
    NumericJob,
    NumericProblem,
    NumericResult,
    bool_as_uint8,
    even_edges,
    host_range,
    outer_edges,
    parse_bins,
)
from warplab.families.histogram.spec import Mapping

_I64 = np.dtype(np.int64)


def _scalar(v: Any) -> tuple | None:
    t = type(v)
    if t is int or t is float or (isinstance(v, np.generic) and v.dtype.kind in "iuf"):
        return t, v, math.copysign(1.0, v)
    return None


def _range_key(rng: Any) -> Any:
    if rng is None:
        return ()
    if (type(rng) is not tuple and type(rng) is not list) or len(rng) != 2:
        return None
    lo, hi = rng
    tl, th = type(lo), type(hi)
    if (tl is int or tl is float) and (th is int or th is float):  # the common case inline
        return tl, lo, math.copysign(1.0, lo), th, hi, math.copysign(1.0, hi)
    lo, hi = _scalar(lo), _scalar(hi)
    return None if lo is None or hi is None else lo + hi


def _bins_key(bins: Any) -> Any:
    t = type(bins)
    if t is int or t is str or isinstance(bins, np.integer):
        return t, bins
    if t is np.ndarray and bins.ndim == 1:
        return bins.dtype.str, bins.shape, bins.tobytes()
    return None


def key(a: Any, bins: Any, rng: Any, density: Any, weights: Any, variant: Any, device: Any,
        config: LaunchConfig) -> Hashable | None:
    """The plan key of a call (module docstring), or None for calls planned afresh each time
    (other input kinds, bins or ranges that are not plain numbers or a NumPy array)."""
    cupy: Any = sys.modules.get("cupy")
    on_device = cupy is not None and (type(a) is cupy.ndarray or type(a) in RESULT_TYPES)
    if not on_device and type(a) is not np.ndarray:
        return None
    bk = bins if type(bins) is int else _bins_key(bins)  # an int keys as itself
    rk = _range_key(rng)
    if bk is None or rk is None or not (density is None or type(density) is bool) \
            or not (variant is None or type(variant) is str) \
            or not (device is None or type(device) is str):
        return None
    wk: Any = None
    if weights is not None:
        tw = type(weights)
        if tw is not np.ndarray and not (cupy is not None and (tw is cupy.ndarray
                                                               or tw in RESULT_TYPES)):
            return None
        wk = (tw, weights.dtype, weights.shape, weights.strides)
    if on_device:
        return (a.dtype, a.shape, a.strides, bk, rk, density, wk, variant, device,
                cupy.cuda.runtime.getDevice(), config)
    return ("host", os.environ.get("WARPLAB_DEVICE"), a.dtype, a.shape, a.strides, bk, rk,
            density, wk, variant, device, config)


def decide(family: str, backend: str, problem: NumericProblem, variant: str | None
           ) -> _registry.Variant:
    """The variant that runs ``problem`` (dispatch, or the named one): the family's one
    decision, at build time or, for a range from the data, in the run."""
    return _registry.choose(family, backend, problem, variant)


class Record:
    """A device call's launch record (module docstring): the ``variant`` it reports, its
    ``launch(args)``, the element count ``n`` (a kernel argument), the arguments after the
    data (``rest``), the counts' ``shape``, the edges' ``e_shape`` and ``e_dtype``, the
    results' ``nbytes`` (the edges at ``offset``), ``template`` (None for the one-block form,
    else the device pointer of the results' initial bytes) and CuPy's ``alloc``."""

    __slots__ = (
        "alloc",
        "e_dtype",
        "e_shape",
        "launch",
        "n",
        "nbytes",
        "offset",
        "rest",
        "shape",
        "template",
        "variant",
    )

    def __init__(self, variant: _registry.Variant, launch: Callable[[tuple], None], n: int,
                 rest: tuple, nbins: int, d_edges: Any, single: bool) -> None:
        cupy = sys.modules["cupy"]
        self.variant, self.launch, self.n, self.rest = variant, launch, np.uint64(n), rest
        self.shape, self.e_shape, self.e_dtype = (nbins,), d_edges.shape, d_edges.dtype
        self.offset = -(-nbins * _I64.itemsize // 256) * 256
        self.nbytes = self.offset + d_edges.nbytes
        self.alloc = cupy.cuda.alloc
        self.template = None
        if not single:
            zeroed = cupy.zeros(self.nbytes, np.uint8)
            (zeroed.data + self.offset).copy_from_device(d_edges.data, d_edges.nbytes)
            cupy.cuda.get_current_stream().synchronize()  # every stream copies from it
            self.template = zeroed.data  # the pointer keeps the allocation alive

    def run(self, a: Any, weights: Any) -> tuple[Any, Any]:
        """``(hist, edges)``: one allocation, (one device copy,) one launch; no sync."""
        _registry.ran(self.variant)
        mem = self.alloc(self.nbytes)  # the arrays' pointers keep the allocation alive
        out = on(mem, self.shape, _I64)
        edges = on(mem + self.offset, self.e_shape, self.e_dtype)
        if self.template is None:
            self.launch((a, self.n, a, *self.rest, out, edges))
        else:
            mem.copy_from_device_async(self.template, self.nbytes)
            self.launch((a, self.n, a, *self.rest, out))
        return out, edges


def _record(a: Any, plan: Any, v: _registry.Variant, cfg: LaunchConfig) -> Record | None:
    """The :class:`Record` of a device call the kernels run with a given range, or None when
    its variant or plan has no record form."""
    fast = v.fn is numeric_variants.even_fast
    if not (fast or v.fn is numeric_variants.even_private) or plan.keep is None:
        return None
    t, n = np.dtype(a.dtype), int(a.size)
    single = cfg.one_block and numeric_cuda.blocks_needed(n, t.itemsize, cfg) <= 1
    lay = numeric_cuda.layout_for(plan.nbins, False, plan.e_dtype.itemsize, cfg)
    expr, group, rest = numeric_cuda.even_launch(plan, lay, None, fast, single)
    launch = numeric_cuda.prepared(expr, group, lay, n, t.itemsize, cfg)
    return Record(v, launch, n, rest, plan.nbins, rest[0], single)


class Planned:
    """Every other call's decisions: the registry ``family`` and ``backend``, the host
    ``bins``, the parsed ``spec`` and ``range``, the data's ``dtype`` as the kernels see it
    (``as_uint8``: bool data, NumPy's warning per call), the weights' dtype ``wd``, ``byte_ok``;
    ``plan``/``passes``/``variant`` when they do not depend on the data (None: a range from
    the data, decided per run); ``byte_vs``: the byte path's variant per mapping (decided on
    its first run)."""

    __slots__ = (
        "as_uint8",
        "backend",
        "bins",
        "byte_ok",
        "byte_vs",
        "cfg",
        "density",
        "dtype",
        "family",
        "name",
        "passes",
        "plan",
        "range",
        "spec",
        "variant",
        "wd",
    )
    as_uint8: bool
    backend: str
    bins: Any
    byte_ok: bool
    byte_vs: dict[tuple[int, str], _registry.Variant]
    cfg: LaunchConfig
    density: Any
    dtype: np.dtype
    family: str
    name: str | None
    passes: int
    plan: EvenPlan | EdgesPlan | None
    range: Any
    spec: Bins
    variant: Any  # a _registry.Variant, or None: decided per run (a range from the data)
    wd: np.dtype | None

    def __init__(self, **fields: Any) -> None:
        for k in self.__slots__:
            setattr(self, k, fields.get(k))
        self.byte_vs = {}

    def run(self, a: Any, weights: Any) -> tuple[Any, Any]:
        """``(hist, edges)`` of the call (NumPy's dtypes, the caller's kind of array)."""
        inp = explained_input(a)
        arr, on_device = inp.array, inp.on_device
        if self.backend == "cpu":
            _registry.ran(self.variant)
            host_w = None if weights is None else _host_array(weights)
            job = NumericJob(to_host(arr), host_w, self.bins, self.range, None, None, False)
            return finish(self.variant.fn(job), None, self.density, on_device)
        if self.as_uint8:
            arr = bool_as_uint8(arr, stacklevel=6)
        w = None
        if weights is not None:
            w = flat_contiguous(_cupy().asarray(weights) if on_device else _host_array(weights))
        arr = flat_contiguous(arr)
        plan, passes, v = self.plan, self.passes, self.variant
        if v is None:  # a range from the data: its min/max, then the plan and the variant
            n = int(arr.size)
            first, last = outer_edges(None, n, lambda: min_max(arr, on_device, self.cfg))
            edges = even_edges(first, last, self.spec.count, self.dtype)
            plan = plan_even(self.dtype, first, last, self.spec.count, edges)
            problem = NumericProblem(self.family, n, self.dtype, self.spec.count, self.wd,
                                     on_device, passes, plan, self.byte_ok, self.cfg)
            v = decide(self.family, "cuda", problem, self.name)
        _registry.ran(v)
        byte_vs = self.byte_vs

        def count_bytes(mapping: Mapping) -> Any:
            """The byte-histogram kernels on ``arr`` (device int64 counts of ``mapping``)."""
            bv = byte_vs.get((mapping.nbins, mapping.name))
            if bv is None:
                bv = byte_vs[(mapping.nbins, mapping.name)] = byte_variant(
                    int(arr.size), mapping, on_device, None, "cuda")
            _registry.ran(bv)
            bins = zeros(mapping.nbins, np.int64)
            data = arr.view(np.uint8)
            if on_device:
                bv.fn(data, bins, mapping)
                return bins
            return streamed.device_byte_counts(bv, data, mapping, bins)

        job = NumericJob(arr, w, self.bins, self.range, self.spec, plan, on_device,
                         count_bytes=count_bytes, config=self.cfg,
                         max_chunk_bytes=0 if on_device else chunk_bytes(self.cfg))
        return finish(streamed.numeric_histogram(v, job), self.wd, self.density, on_device)


def build(a: Any, bins: Any, rng: Any, density: Any, weights: Any, variant: str | None,
          device: str | None, cfg: LaunchConfig, cached: bool) -> Record | Planned:
    """The plan of a ``histogram`` call (module docstring): every check and decision that does
    not depend on the data's values, raising what the call raises. ``cached``: the plan is
    kept (a :class:`Record` is made only then: it holds device memory)."""
    inp = explained_input(a)
    arr, on_device = inp.array, inp.on_device
    if hasattr(bins, "__cuda_array_interface__"):
        bins = to_host(bins)
    family = EDGES if not isinstance(bins, str) and np.ndim(bins) == 1 else EVEN
    backend = _registry.pick_backend(family, device, variant, on_device)
    if backend == "cpu":
        wd = None if weights is None else np.dtype(_host_array(weights).dtype)
        problem = NumericProblem(family, int(arr.size), np.dtype(arr.dtype), 0, wd, on_device,
                                 config=cfg)
        return Planned(family=family, backend="cpu", bins=bins, range=host_range(rng),
                       density=density, cfg=cfg, variant=decide(family, "cpu", problem, variant))
    as_uint8 = arr.dtype == np.bool_
    dt = np.dtype(np.uint8) if as_uint8 else np.dtype(arr.dtype)
    wd = None
    if weights is not None:
        w = _cupy().asarray(weights) if on_device else _host_array(weights)
        if w.shape != arr.shape:
            raise InvalidValueError("weights should have the same shape as a.")
        wd = np.dtype(w.dtype)
    spec = parse_bins(bins)
    rng = host_range(rng)
    n = int(arr.size)
    byte_ok = dt in BYTE_DTYPES and wd is None and spec.kind != "estimator"
    plan: EvenPlan | EdgesPlan | None = None
    passes = 1
    data_range = False
    if spec.kind != "estimator" and dt in KERNEL_DTYPES and not (
            byte_ok and variant in (None, "bytes")):
        if spec.kind == "count" and rng is None and n:
            data_range, passes = True, 2
        elif spec.kind == "count":
            first, last = outer_edges(rng, n, lambda: min_max(arr, on_device, cfg))
            plan = plan_even(dt, first, last, spec.count, even_edges(first, last, spec.count, dt))
        else:
            plan = plan_edges(dt, cast(np.ndarray, spec.edges))  # set for "edges" bins
    v = None
    if not data_range:
        problem = NumericProblem(family, n, dt, spec.count, wd, on_device, passes, plan,
                                 byte_ok, cfg)
        v = decide(family, "cuda", problem, variant)
        if cached and on_device and not as_uint8 and spec.kind == "count" and wd is None \
                and not density and plan is not None and dt not in BYTE_DTYPES and n \
                and is_flat(arr) and arr is a:
            rec = _record(arr, plan, v, cfg)
            if rec is not None:
                return rec
    return Planned(family=family, backend="cuda", variant=v, bins=bins, spec=spec, range=rng,
                   density=density, as_uint8=as_uint8, dtype=dt, wd=wd, byte_ok=byte_ok,
                   plan=plan, passes=passes, name=variant, cfg=cfg)


def chunk_bytes(cfg: LaunchConfig) -> int:
    """Bytes of host data copied to the device at once."""
    return cfg.max_device_chunk or max(1 << 20, _cupy().cuda.runtime.memGetInfo()[0] // 2)


def _host_array(x: Any) -> np.ndarray:
    return to_host(x) if hasattr(x, "__cuda_array_interface__") else np.asarray(x)


def min_max(arr: Any, on_device: bool, cfg: LaunchConfig) -> tuple[Any, Any]:
    """The data's (min, max) as NumPy gives them: NumPy on the host, one kernel on device."""
    if not on_device:
        return streamed.host_min_max(arr, cfg)
    from warplab.families.histogram.minmax_cuda import device_min_max

    return device_min_max(arr, cfg)


def finish(res: NumericResult, wd: np.dtype | None, density: Any, on_device: bool
           ) -> tuple[Any, Any]:
    """NumPy's dtype and ``density`` on a variant's result, on the caller's side."""
    hist, edges = res.hist, np.array(res.edges)  # a copy: plans and tables are cached
    if res.raw and wd is not None:
        hist = hist.astype(wd)
    xp = np
    if on_device:
        xp = _cupy()
        hist, edges = xp.asarray(hist), xp.asarray(edges)
    elif not isinstance(hist, np.ndarray):
        hist = to_host(hist)
    if density:
        db = np.array(np.diff(to_host(edges)), float)
        hist = hist / xp.asarray(db) / hist.sum()
    return hist, edges

"""``bincount``'s plans: what a call decides once per key and then only runs.

:func:`key` normalises a call (x's kind, dtype, shape, strides and device, the weights' kind,
dtype, shape and strides, both 16-byte aligned, ``variant=``, ``device=``, ``WARPLAB_DEVICE``
for host data, the :class:`~warplab.families.histogram.config.LaunchConfig`); :func:`build`
makes every check NumPy makes that does not depend on the values and decides the backend and
the kind of run. The result's length depends on the data (its largest value), so the runs
read it: uint8/bool data through the byte-histogram plan (``byte_plan``), other integers with
NumPy or CuPy, weighted sums with the min/max pass and then the binning launch, whose variant
(:func:`decide`, dispatch over the bin count) and prepared launch are kept per bin count in
the plan.

A warm weighted call on flat device data: one zeroed 24-byte allocation, the min/max launch,
one read back of its three words through the pinned buffer (``fastpath.read_small``: one
copy, one synchronisation), the negative-value check, one zeroed allocation of the result
(``max(nbins, minlength)`` long) and the binning launch.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Hashable
from typing import Any, NamedTuple, cast

import numpy as np

from warplab.core import env, fastpath, registry as _registry
from warplab.core.arrays import flat_contiguous, is_flat, to_host
from warplab.core.device import resolve_backend
from warplab.core.errors import InvalidTypeError, InvalidValueError
from warplab.core.outputs import cupy as _cupy
from warplab.core.scalar import RESULT_TYPES, zeros
from warplab.families.histogram import byte_plan, minmax_cuda, numeric_cuda, numeric_variants
from warplab.families.histogram.config import DEFAULT, LaunchConfig
from warplab.families.histogram.cpu import NUMPY_BINCOUNT
from warplab.families.histogram.hist_plan import chunk_bytes, min_max
from warplab.families.histogram.numeric import (
    BINCOUNT,
    NumericJob,
    NumericProblem,
    bincount_numpy,
)

_F64, _U64 = np.dtype(np.float64), np.dtype(np.uint64)
_MAX_BINS_KEPT = 64


def key(x: Any, weights: Any, variant: Any, device: Any, config: LaunchConfig
        ) -> Hashable | None:
    """The plan key of a call (module docstring), or None for calls planned afresh each time
    (sequences, other array types). NumPy arrays with the default options and configuration
    have the shortest keys (checked first)."""
    tx = type(x)
    if tx is np.ndarray and variant is None and device is None and config is DEFAULT:
        if weights is None:
            return (env.device(), x.dtype, x.shape, x.strides)
        if type(weights) is np.ndarray:
            return (env.device(), x.dtype, x.shape, x.strides, weights.dtype,
                    weights.shape, weights.strides)
    if tx is np.ndarray and (variant is None or type(variant) is str) \
            and (device is None or type(device) is str):  # host data: the common keys first
        if weights is None:
            return ("host", env.device(), x.dtype, x.shape, x.strides, None,
                    variant, device, config)
        if type(weights) is np.ndarray:
            return ("host", env.device(), x.dtype, x.shape, x.strides,
                    (np.ndarray, weights.dtype, weights.shape, weights.strides), variant,
                    device, config)
    cupy: Any = sys.modules.get("cupy")
    dev_x = cupy is not None and (tx is cupy.ndarray or tx in RESULT_TYPES)
    if (not dev_x and tx is not np.ndarray) or not (variant is None or type(variant) is str) \
            or not (device is None or type(device) is str):
        return None
    wk: Any = None
    aligned = True
    if weights is not None:
        tw = type(weights)
        dev_w = cupy is not None and (tw is cupy.ndarray or tw in RESULT_TYPES)
        if not dev_w and tw is not np.ndarray:
            return None
        wk = (tw, weights.dtype, weights.shape, weights.strides)
        if dev_x and dev_w:
            aligned = not ((x.data.ptr | weights.data.ptr) & 15)
    if dev_x:
        return (x.dtype, x.shape, x.strides, wk, aligned, variant, device,
                cupy.cuda.runtime.getDevice(), config)
    return ("host", env.device(), x.dtype, x.shape, x.strides, wk,
            variant, device, config)


def decide(family: str, backend: str, problem: NumericProblem, variant: str | None
           ) -> _registry.Variant:
    """The variant that runs ``problem``: dispatch, or the named one."""
    return _registry.choose(family, backend, problem, variant)


def int_decoder(dtype: Any) -> tuple[int, int]:
    """``(mask, offset)`` such that an integer dtype's value is ``(key & mask) - offset`` of
    its numeric.cu order key (``minmax_cuda.from_order_key`` for integers, on Python ints)."""
    dt = np.dtype(dtype)
    width = 8 * dt.itemsize
    return (1 << width) - 1, (1 << (width - 1)) if dt.kind == "i" else 0


def _host_array(x: Any) -> np.ndarray:
    return to_host(x) if hasattr(x, "__cuda_array_interface__") else np.asarray(x)


def _input(x: Any) -> tuple[Any, bool]:
    """x as an array (an empty host sequence counts as integers, as NumPy) and on_device."""
    inp = byte_plan.explained_input(x)
    arr = inp.array
    if not inp.on_device and not isinstance(x, np.ndarray) and arr.size == 0:
        arr = arr.astype(np.intp)
    return arr, inp.on_device


class Unweighted:
    """``bincount(x)``: uint8/bool data through the byte plan ``bytes_plan``, other integers
    with NumPy (``backend`` cpu) or CuPy; ``variant_error``: the message of a ``variant=``
    that only the byte path takes (raised after the negative-value check, as always);
    ``numpy_call``: the key's calls are NumPy arrays on the cpu backend (NumPy's own call)."""

    def __init__(self, bytes_plan: Any, backend: str, variant_error: str | None,
                 numpy_call: bool = False) -> None:
        self.bytes_plan, self.backend, self.variant_error = bytes_plan, backend, variant_error
        if numpy_call:
            self.run = self._run_numpy  # type: ignore[method-assign]  # one frame per call

    def _run_numpy(self, x: np.ndarray, weights: None, minlength: int) -> Any:
        try:
            return NUMPY_BINCOUNT(x, None, minlength)
        except ValueError:  # a negative value: the general run raises warplab's message
            return Unweighted.run(self, x, weights, minlength)

    def run(self, x: Any, weights: Any, minlength: int) -> Any:
        if self.backend == "cpu" and self.variant_error is None and type(x) is np.ndarray:
            try:  # NumPy's own call; a negative value falls through to the message below
                return NUMPY_BINCOUNT(x, None, minlength)
            except ValueError:
                pass
        arr, on_device = _input(x)
        xp = _cupy() if on_device else np
        if self.bytes_plan is not None:
            counts = self.bytes_plan.run(arr.view(np.uint8), None, False)
            nz = xp.flatnonzero(counts)
            length = max(minlength, int(nz[-1]) + 1 if nz.size else 0)
            if length <= 256:
                return counts[:length]
            return xp.concatenate([counts, xp.zeros(length - 256, dtype=np.int64)])
        if arr.size and int(arr.min()) < 0:
            raise InvalidValueError(f"bincount needs non-negative values, found {int(arr.min())}")
        if self.variant_error is not None:
            raise InvalidValueError(self.variant_error)
        if self.backend == "cpu":
            res = np.bincount(to_host(arr), minlength=minlength).astype(np.int64, copy=False)
            return _cupy().asarray(res) if on_device else res
        d = _cupy().asarray(arr)
        if d.dtype == np.uint64:  # values >= 2^63 could not be counted in memory anyway
            d = d.astype(np.int64)
        res = _cupy().bincount(d, minlength=minlength).astype(np.int64, copy=False)
        return res if on_device else res.get()


class _Bins(NamedTuple):
    """The binning launch of one bin count: the ``variant``, ``launch(args)`` (None: the
    variant runs itself), the bin count and the layout's accumulator copies."""

    variant: Any
    launch: Callable[[tuple], None] | None
    nbins: np.uint64
    copies: np.uint32


class Weighted:
    """``bincount(x, weights)``: ``backend`` and the named ``variant``; ``w_error`` the
    weights' static fault (raised after the data's negative-value check, as always);
    ``minmax``: the prepared min/max launch of flat device data and weights (None: the
    general run, a job per call); ``bins``: the binning decision per bin count;
    ``numpy_call``: the key's calls are NumPy arrays (data not bool) that ``variant``, NumPy's,
    counts with NumPy's own call."""

    def __init__(self, backend: str, variant: Any, name: str | None, w_error: Exception | None,
                 cfg: LaunchConfig, minmax: Callable[[tuple], None] | None = None,
                 n: int = 0, dtype: Any = None, aligned: bool = False,
                 numpy_call: bool = False) -> None:
        self.backend, self.variant, self.name, self.w_error = backend, variant, name, w_error
        self.cfg, self.minmax, self.n, self.dtype, self.aligned = cfg, minmax, n, dtype, aligned
        self.bins: dict[int, _Bins] = {}
        if minmax is not None:
            self.mask, self.offset = int_decoder(dtype)
            self.run = self._run_record  # type: ignore[method-assign, assignment]  # one frame per call
        elif numpy_call:
            self.run = self._run_numpy  # type: ignore[method-assign]  # one frame per call

    def _run_numpy(self, x: np.ndarray, weights: np.ndarray, minlength: int) -> Any:
        _registry.ran(self.variant)
        return NUMPY_BINCOUNT(x, weights, minlength)

    def run(self, x: Any, weights: Any, minlength: int) -> Any:
        """The result of the call (the general run: a job per call)."""
        v = self.variant
        if v is not None and v.fn is bincount_numpy and type(x) is np.ndarray \
                and type(weights) is np.ndarray and x.dtype.kind != "b":
            _registry.ran(v)  # host arrays on the cpu backend: NumPy's own call
            return NUMPY_BINCOUNT(x, weights, minlength)
        arr, on_device = _input(x)
        n, dt = int(arr.size), np.dtype(arr.dtype)
        xp = _cupy() if on_device else np
        if n == 0:  # NumPy returns int64 zeros and ignores the weights
            return xp.zeros(minlength, dtype=np.int64)
        if self.backend == "cpu":
            _registry.ran(self.variant)
            if dt == np.bool_:
                arr = arr.view(np.uint8)
            job = NumericJob(to_host(arr), _host_array(weights), None, None, None, None, False,
                             minlength)
            res = self.variant.fn(job).hist
            return _cupy().asarray(res) if on_device else res
        arr = flat_contiguous(arr)
        lo, hi = min_max(arr, on_device, self.cfg)
        if int(lo) < 0:
            raise InvalidValueError(f"bincount needs non-negative values, found {int(lo)}")
        if self.w_error is not None:
            raise self.w_error
        w = flat_contiguous(_cupy().asarray(weights) if on_device else _host_array(weights))
        nbins = int(hi) + 1
        problem = NumericProblem(BINCOUNT, n, dt, nbins, np.dtype(w.dtype), on_device, 2,
                                 config=self.cfg)
        v = decide(BINCOUNT, "cuda", problem, self.name)
        _registry.ran(v)
        job = NumericJob(arr, w, None, None, None, nbins, on_device, minlength, config=self.cfg,
                         max_chunk_bytes=0 if on_device else chunk_bytes(self.cfg))
        out = v.fn(job).hist
        cp = _cupy()
        if minlength > nbins:
            out = cp.concatenate([out, cp.zeros(minlength - nbins, dtype=np.float64)])
        return out if on_device else out.get()

    def _run_record(self, x: Any, w: Any, minlength: int) -> Any:
        """Flat device data and weights: the min/max launch, one pinned read, the binning."""
        d_res = zeros(3, _U64)
        minmax = cast(Callable[[tuple], None], self.minmax)  # set where this run is installed
        minmax((x, np.uint64(self.n), d_res))
        k_lo, k_hi, _ = fastpath.read_small(d_res)[0].tolist()  # one pinned copy, one sync
        lo = (~k_lo & self.mask) - self.offset
        if lo < 0:
            raise InvalidValueError(f"bincount needs non-negative values, found {lo}")
        nbins = (k_hi & self.mask) - self.offset + 1
        b = self.bins.get(nbins)
        if b is None:
            b = self._bins(x, w, nbins)
        _registry.ran(b.variant)
        if b.launch is None:  # a variant without a prepared launch: its own run
            job = NumericJob(x, w, None, None, None, nbins, True, minlength, config=self.cfg)
            out = b.variant.fn(job).hist
            if minlength > nbins:
                out = _cupy().concatenate([out, zeros(minlength - nbins, _F64)])
            return out
        out = zeros(max(nbins, minlength), _F64)
        b.launch((x, np.uint64(self.n), w, b.nbins, b.copies, out))
        return out

    def _bins(self, x: Any, w: Any, nbins: int) -> _Bins:
        """The binning decision of ``nbins`` bins (dispatch, as the general run), kept."""
        dt, wd, n = np.dtype(x.dtype), np.dtype(w.dtype), self.n
        cfg = self.cfg
        v = decide(BINCOUNT, "cuda", NumericProblem(BINCOUNT, n, dt, nbins, wd, True, 2,
                                                    config=cfg), self.name)
        b = _Bins(v, None, np.uint64(0), np.uint32(0))
        if v.fn in numeric_variants.BINCOUNT_KINDS:
            private, vec = numeric_variants.BINCOUNT_KINDS[v.fn]
            expr, group, lay = numeric_cuda.bincount_launch(dt, wd, nbins, private,
                                                            vec and self.aligned, cfg)
            launch = numeric_cuda.prepared(expr, group, lay, n, dt.itemsize, cfg)
            b = _Bins(v, launch, np.uint64(nbins), np.uint32(lay.copies))
        if len(self.bins) >= _MAX_BINS_KEPT:
            self.bins.clear()
        self.bins[nbins] = b
        return b


def _weights_error(w: Any, n: int) -> Exception | None:
    """NumPy's fault with these weights for ``n`` elements of x, or None."""
    if not np.can_cast(w.dtype, np.float64, casting="safe"):
        return TypeError(f"Cannot cast array data from {w.dtype!r} to dtype('float64') "
                         "according to the rule 'safe'")
    if w.ndim != 1:
        return ValueError("object too deep for desired array" if w.ndim > 1
                          else "object of too small depth for desired array")
    if w.shape[0] != n:
        return ValueError("The weights and list don't have the same length.")
    return None


def build(x: Any, weights: Any, variant: str | None, device: str | None, cfg: LaunchConfig,
          cached: bool) -> Unweighted | Weighted:
    """The plan of a ``bincount`` call (module docstring), raising what the call raises
    before it reads the data."""
    arr, on_device = _input(x)
    dt = np.dtype(arr.dtype)
    if arr.ndim != 1:
        raise InvalidValueError(f"bincount needs a 1-D array, got {arr.ndim} dimensions")
    if not (np.issubdtype(dt, np.integer) or dt == np.bool_):
        raise InvalidTypeError(f"bincount needs non-negative integers, got dtype {dt}")
    if weights is None:
        if dt in (np.uint8, np.bool_):
            return Unweighted(byte_plan.build(arr.view(np.uint8), "bytes", variant, device,
                                              None, False), "", None)
        backend = resolve_backend(device) if device else ("cuda" if on_device else "cpu")
        why = None if variant is None else (
            f"variant= applies to uint8 input (or with weights) only; got dtype {dt}")
        return Unweighted(None, backend, why, cached and type(x) is np.ndarray
                          and backend == "cpu" and why is None)
    backend = _registry.pick_backend(BINCOUNT, device, variant, on_device)
    n = int(arr.size)
    if backend == "cpu" or n == 0:
        v = None
        if backend == "cpu" and n:
            problem = NumericProblem(BINCOUNT, n, dt, 0, np.dtype(_host_array(weights).dtype),
                                     on_device, config=cfg)
            v = decide(BINCOUNT, "cpu", problem, variant)
        numpy_call = cached and v is not None and v.fn is bincount_numpy \
            and type(x) is np.ndarray and type(weights) is np.ndarray and dt.kind != "b"
        return Weighted(backend, v, variant, None, cfg, numpy_call=numpy_call)
    w = _cupy().asarray(weights) if on_device else _host_array(weights)
    w_error = _weights_error(w, n)
    cupy = sys.modules.get("cupy")
    if cached and w_error is None and cfg.minmax == "atomic" and arr is x \
            and dt.kind in "iu" and dt != np.uint64 and is_flat(arr) and is_flat(w) \
            and w is weights and np.dtype(w.dtype).kind in "biuf" and cupy is not None \
            and (type(w) is cupy.ndarray or type(w) in RESULT_TYPES):
        aligned = not ((arr.data.ptr | w.data.ptr) & 15)
        return Weighted(backend, None, variant, None, cfg,
                        minmax_cuda.minmax_prepared(dt, n, cfg), n, dt, aligned)
    return Weighted(backend, None, variant, w_error, cfg)

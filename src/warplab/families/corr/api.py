"""``corrcoef``: NumPy's Pearson correlation matrix, on the GPU by the corr variants
(``cuda.py``: ``tc_gram``, ``tiled_smem``, ``pairwise_direct``) or NumPy (``cpu.py``), whole
or tile by tile into ``out`` (``tiles.py``); ``nan_policy="pairwise"`` in ``nan.py``."""
from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from warplab.core import fastpath, overrides, registry as _registry
from warplab.core.arrays import as_input, to_device, to_host
from warplab.core.device import device_errors, gb
from warplab.core.errors import InvalidTypeError, InvalidValueError
from warplab.core.scalar import RESULT_TYPES, empty
from warplab.families.corr import small_cuda, tiles
from warplab.families.corr.nan import pairwise_complete
from warplab.families.corr.spec import (
    NAN_POLICIES,
    OUT_DTYPES,
    CorrProblem,
    check_precision,
    work_itemsize,
)
from warplab.families.corr.tiles import full_matrix, warn_invalid


def series_layout(x: Any, y: Any, rowvar: bool) -> tuple[int, int, np.dtype]:
    """``(M, N, dtype)`` of what :func:`stack_series` makes of ``x`` and ``y`` (arrays), read
    from their shapes and dtypes alone. ``ValueError`` for more than 2 dimensions or ``y``
    whose series length differs; ``TypeError`` for complex, object or string data."""
    shapes, dtypes = [], []
    for name, a in (("x", x), ("y", y)):
        if a is None:
            continue
        if a.dtype.kind not in "biuf":
            raise InvalidTypeError(f"corrcoef supports real numeric data, got {name} of dtype "
                            f"{a.dtype}")
        if a.ndim > 2:
            raise InvalidValueError(f"corrcoef: {name} has more than 2 dimensions ({a.ndim}-D)")
        shape = (1, int(a.size)) if a.ndim < 2 else tuple(int(s) for s in a.shape)
        if not rowvar and shape[0] != 1:
            shape = shape[::-1]
        shapes.append(shape)
        dtypes.append(np.dtype(a.dtype))
    if len(shapes) == 2 and shapes[0][1] != shapes[1][1]:
        raise InvalidValueError(f"corrcoef: x and y must have the same number of observations, got "
                         f"{shapes[0][1]} and {shapes[1][1]} (shapes after rowvar: "
                         f"{shapes[0]} and {shapes[1]})")
    if len(shapes) == 1:
        return shapes[0][0], shapes[0][1], dtypes[0]
    return shapes[0][0] + shapes[1][0], shapes[0][1], np.result_type(*dtypes)


def stack_series(x: Any, y: Any, rowvar: bool, on_device: bool) -> Any:
    """NumPy's ``cov`` preparation: ``x`` (and ``y``) as 2-D, one series per row, stacked.

    ``ValueError`` for more than 2 dimensions or ``y`` whose series length differs;
    ``TypeError`` for complex, object or string data (:func:`series_layout`)."""
    series_layout(x, y, rowvar)
    return _stack(x, y, rowvar, on_device)


def _stack(x: Any, y: Any, rowvar: bool, on_device: bool) -> Any:
    """:func:`stack_series` of arrays :func:`series_layout` has checked."""
    xp = np if not on_device else __import__("cupy")
    move = to_device if on_device else to_host
    parts = []
    for a in (x, y):
        if a is None:
            continue
        a = move(a)
        a = a.reshape(1, -1) if a.ndim < 2 else a
        if not rowvar and a.shape[0] != 1:
            a = a.T
        parts.append(a)
    if len(parts) == 1:
        return parts[0]
    dt = np.result_type(parts[0].dtype, parts[1].dtype)
    return xp.concatenate([p.astype(dt, copy=False) for p in parts], axis=0)


def result_dtype(data_dtype: Any, dtype: Any) -> np.dtype:
    """NumPy's: float64 for every real input (``result_type(x, float64)``), else ``dtype``."""
    if dtype is None:
        return np.result_type(data_dtype, np.float64)
    dt = np.dtype(dtype)
    if dt not in OUT_DTYPES:
        raise InvalidTypeError(f"corrcoef dtype must be float16, float32 or float64, got {dt}")
    return dt


def _check_out(out: Any, m: int, dtype: np.dtype) -> None:
    if out is None:
        return
    if not hasattr(out, "shape") or not hasattr(out, "dtype"):
        raise InvalidValueError(f"out must be a NumPy or CuPy array of shape ({m}, {m}), got "
                         f"{type(out).__name__}")
    if tuple(out.shape) != (m, m) or np.dtype(out.dtype) != dtype:
        raise InvalidValueError(f"out must have shape ({m}, {m}) and dtype {dtype}, got shape "
                         f"{tuple(out.shape)} and dtype {out.dtype}")
    if not isinstance(out, np.ndarray) and not hasattr(out, "__cuda_array_interface__"):
        raise InvalidValueError("out must be a NumPy array (or memory map) or a CuPy array")


def _host_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


@device_errors
def corrcoef(x: Any, y: Any = None, rowvar: bool = True, *, dtype: Any = None,
             precision: str | None = None, variant: str | None = None, out: Any = None,
             nan_policy: str = "propagate", device: str | None = None) -> Any:
    """Pearson correlation coefficients, as ``numpy.corrcoef``.

    Args:
        x: 1-D or 2-D real data, one series per row (``rowvar=False``: per column); NumPy,
            CuPy, torch or anything with ``__cuda_array_interface__`` / DLPack. Integers and
            booleans are converted as NumPy converts them.
        y: more series, stacked under ``x`` (same number of observations).
        rowvar: False: series are columns (a single row stays one series, as NumPy).
        dtype: result dtype (float16/32/64); default float64, as NumPy.
        precision: what the products run in on the GPU: ``"float64"`` (default; float64 rows,
            error about 1e-15 sqrt(N)), ``"float32"`` (float32 rows, error below 2e-6),
            ``"tf32"`` (one TF32 tensor-core pass, error about 1e-3). The cpu backend computes
            in float64 whatever the precision.
        variant: ``warplab.variants("corrcoef")``; default ``fused_small`` for small problems
            (precision float64, M <= 64, M N <= 4096), else ``tc_gram`` on sm_80+ GPUs (from
            1024 series of 4096 values ``int8_slices``), else ``tiled_smem``; ``numpy`` on the
            cpu backend.
        out: an ``(M, M)`` array of the result dtype (any layout): CuPy, NumPy or a NumPy
            memory map (also for device input: a result larger than GPU memory is written
            tile by tile). Returned. Without it, a device result whose whole-matrix working
            set does not fit free GPU memory is allocated on the GPU and filled tile by tile
            (:func:`plan_workspace`).
        nan_policy: ``"propagate"`` (NumPy: a series holding NaN gives NaN in its row and
            column) or ``"pairwise"`` (pandas' ``DataFrame.corr``: each pair over the
            observations where both are finite; about 4x the flops, float64, whole matrix).
        device: ``"cuda"`` or ``"cpu"``; default: the input's home, else automatic.

    Returns:
        ``(M, M)`` coefficients clipped to [-1, 1] with a diagonal of 1 (M = series of x and
        y); a single series gives 1.0 (NumPy's float64 scalar for host input, a 0-d CuPy
        array for device input). A constant series (all values equal) gives NaN in its row
        and column with NumPy's ``RuntimeWarning``. NumPy for host input, CuPy for device
        input (``out`` when given).

    Raises:
        ValueError: more than 2-D, ``y`` of another series length, bad ``out``, unknown
        precision, variant or nan_policy, a device result that does not fit GPU memory
        even tile by tile (the result, the normalised rows and one smallest tile) without
        ``out=``.  TypeError: complex or non-numeric data, a non-float ``dtype``.
        DeviceOutOfMemoryError: the GPU ran out of memory all the same.

    Performance:
        ``M (M + 1) / 2 * N`` multiply-adds (upper triangle only, mirrored); one normalisation
        pass; one synchronisation (the constant-series check). Host input: one H2D copy of
        the data, one D2H copy of the result (per tile when tiled). Small device input (M <=
        64, M N <= 4096, default keywords): one allocation, one launch (``fused_small``), one
        synchronisation, through a cached launch record.
    """
    cp = sys.modules.get("cupy")
    if y is None and cp is not None and (type(x) is cp.ndarray or type(x) in RESULT_TYPES):
        key = (x.dtype, x.shape, x.strides, x.data.device_id, cp.cuda.runtime.getDevice(),
               None, rowvar, dtype, precision, variant,
               None if out is None else _out_key(out), nan_policy, device)  # _key's
    else:
        o = None if type(x) is np.ndarray and (y is None or type(y) is np.ndarray) \
            else overrides.first_kind((x, y))
        if o is not None:
            return _numpy_corrcoef(o, x, y, rowvar, dtype, precision, variant, out, nan_policy,
                                   device)
        x = as_input(x).array
        y = None if y is None else as_input(y).array
        key = _key(x, y, rowvar, dtype, precision, variant, out, nan_policy, device)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS.put(key, _plan(x, y, rowvar, dtype, precision, variant, out, nan_policy,
                                     device))
    if plan.small is not None:  # fused_small on x as it is: one launch, one synchronisation
        _registry.ran(plan.variant)
        r, word = small_cuda.run(plan.small, x if rowvar else x.T, key[4])
        sys.modules["cupy"].cuda.get_current_stream().synchronize()
        if not word[0]:
            warn_invalid(False)
        return r
    return _run(plan, x, y, rowvar, out)


def _numpy_corrcoef(o: str, x: Any, y: Any, rowvar: bool, dtype: Any, precision: str | None,
                    variant: str | None, out: Any, nan_policy: str, device: str | None) -> Any:
    """``corrcoef`` of input NumPy dispatches elsewhere (``core/overrides.py``): a masked
    array (NumPy's corrcoef ignores its mask) raises; a subclass or an ``__array_function__``
    object gets NumPy's own ``corrcoef``."""
    if o == "masked":
        raise overrides.refuse("corrcoef", x if overrides.kind(x) else y,
                               "NumPy's corrcoef ignores the mask (numpy.ma.corrcoef "
                               "honours it)")
    kwargs: dict[str, Any] = {"rowvar": rowvar}
    if dtype is not None:
        kwargs["dtype"] = dtype
    extras = {"precision": precision, "variant": variant, "out": out, "device": device,
              "nan_policy": None if nan_policy == "propagate" else nan_policy}
    return overrides.defer("corrcoef", o, np.corrcoef, (x, y), kwargs, extras)


#: ``corrcoef``'s plans (:class:`Plan`) per :func:`_key`.
_PLANS = fastpath.PlanCache("corr.plan")


class Plan(NamedTuple):
    """What a call of one key runs: the backend, the variant (None: NumPy's own edge cases,
    one series or fewer than two observations), the problem's M and N, the result dtype, the
    precision, the NaN policy, and for ``fused_small`` on the caller's device array as it is
    (float32/float64, any strides) its prepared launch."""

    variant: _registry.Variant | None
    backend: str
    on_device: bool
    m: int
    n: int
    res_dt: np.dtype
    precision: str
    pairwise: bool
    small: small_cuda.Launch | None = None


def _out_key(out: Any) -> Any:
    """What the plan's ``out`` check sees of ``out``."""
    if out is None:
        return None
    return (type(out), getattr(out, "shape", None), getattr(out, "dtype", None))


def _side(a: Any) -> Any:
    """Where array ``a`` is, as a key part: its device, or ``"host"``."""
    return a.data.device_id if hasattr(a, "__cuda_array_interface__") else "host"


def _key(x: Any, y: Any, rowvar: bool, dtype: Any, precision: str | None, variant: str | None,
         out: Any, nan_policy: str, device: str | None) -> tuple:
    """The plan key of normalised arrays (NumPy or CuPy): x's dtype, shape, strides and side;
    at index 4 the current device (device data) or ``WARPLAB_DEVICE`` (host data: it picks
    the backend); y's; every keyword (``out`` by type, shape and dtype)."""
    on_device = _side(x) != "host" or (y is not None and _side(y) != "host")
    where = (sys.modules["cupy"].cuda.runtime.getDevice() if on_device
             else ("host", os.environ.get("WARPLAB_DEVICE")))
    ykey = None if y is None else (y.dtype, y.shape, y.strides, _side(y))
    return (x.dtype, x.shape, x.strides, _side(x), where, ykey, rowvar, dtype, precision,
            variant, _out_key(out), nan_policy, device)


def _plan(x: Any, y: Any, rowvar: bool, dtype: Any, precision: str | None,
          variant: str | None, out: Any, nan_policy: str, device: str | None) -> Plan:
    """The one decision of ``corrcoef``: every check (raising what the call raises), the
    backend, the variant, and ``fused_small``'s launch where it runs on x as it is."""
    precision = check_precision(precision)
    if nan_policy not in NAN_POLICIES:
        raise InvalidValueError(
            f"unknown nan_policy {nan_policy!r}; valid: {', '.join(NAN_POLICIES)}")
    on_device = _side(x) != "host" or (y is not None and _side(y) != "host")
    m, n, data_dt = series_layout(x, y, rowvar)
    res_dt = result_dtype(data_dt, dtype)
    _check_out(out, m, res_dt)
    backend = _registry.pick_backend("corrcoef", device, variant, on_device)
    plan = Plan(None, backend, on_device, m, n, res_dt, precision, nan_policy == "pairwise")
    if m <= 1 or n < 2:  # NumPy's own edge cases (0-d results, degrees of freedom <= 0)
        return plan
    if variant == "tc_gram" and backend == "cuda":
        from warplab.families.corr.cuda import gram_ok

        ok, why = gram_ok()
        if not ok:
            raise InvalidValueError(f"corrcoef variant 'tc_gram' is not available here: {why}; use "
                             f"variant='tiled_smem'")
    v = _registry.choose("corrcoef", backend, CorrProblem(m, n, data_dt, precision, on_device),
                         variant)
    plan = plan._replace(variant=v)
    if (v is not small_cuda.VARIANT or backend != "cuda" or y is not None or out is not None
            or plan.pairwise or res_dt != np.float64 or x.ndim != 2 or _side(x) == "host"
            or x.data.device_id != sys.modules["cupy"].cuda.runtime.getDevice()):
        return plan
    xs = x if rowvar else x.T  # the call launches on this view too
    if not small_cuda.takes(xs):
        return plan
    return plan._replace(small=small_cuda.plan(xs))


def _run(plan: Plan, x: Any, y: Any, rowvar: bool, out: Any) -> Any:
    """A call that is not one ``fused_small`` launch on x as it is: stack the series, run the
    plan's variant whole or tile by tile (into ``out``)."""
    on_device, res_dt, m, n = plan.on_device, plan.res_dt, plan.m, plan.n
    xs = _stack(x, y, rowvar, on_device)
    if plan.variant is None:  # NumPy's own edge cases
        r = np.corrcoef(to_host(xs), dtype=res_dt)
        if out is None and not on_device:
            return r  # NumPy's own result: a scalar for a single series
        return _deliver(np.asarray(r, res_dt), out, on_device)
    v, backend, precision = plan.variant, plan.backend, plan.precision
    _registry.ran(v)
    data = to_host(xs) if backend == "cpu" else to_device(xs)
    if plan.pairwise:
        r = pairwise_complete(data)
        return _deliver(r.astype(res_dt, copy=False), out, on_device)
    ws = plan_workspace(m, n, res_dt, precision, backend, on_device, out)
    eng = v.fn(data, precision)
    if ws.whole:  # the validity is read after the launches: one synchronisation at the end
        r = full_matrix(eng)
        warn_invalid(eng.all_valid, 1)
        return _deliver(r.astype(res_dt, copy=False), out, on_device)
    warn_invalid(eng.all_valid, 1)
    if out is None:  # host input: a host result; device input: a CuPy result
        out = _empty(on_device, (m, m), res_dt)
    return tiles.fill_tiled(eng, out, ws.tile)


class Workspace(NamedTuple):
    """How a call computes its matrix (:func:`plan_workspace`): ``whole`` (one block), else
    tile by tile of side ``tile`` into ``out``, or, without ``out``, into a new result array
    on the input's side (a host array for host input, a CuPy array for device input)."""

    whole: bool
    tile: int = 0


#: Bytes per element of a square tile's temporaries while it is written: about four float64
#: tile-sized arrays (``tiles.device_tile``'s model).
TILE_ELEMENT_BYTES = 32
#: The smallest device tile side ``tiles.device_tile`` chooses.
MIN_DEVICE_TILE = 256


def plan_workspace(m: int, n: int, res_dt: np.dtype, precision: str, backend: str,
                   on_device: bool, out: Any,
                   free: Callable[[], int] | None = None,
                   host: Callable[[], int | None] | None = None) -> Workspace:
    """The memory plan of a corrcoef call, decided once per call against the memory free now
    (``free``: what returns the free GPU memory, ``tiles.free_device_bytes`` by default, asked
    only where the working set is not tiny; ``host``: the host's memory, ``_host_memory`` by
    default, for the cpu backend).

    - whole, when the whole-matrix working set fits: three float64 M x M temporaries (the
      block, its mirror, the cast) and the result next to the normalised rows, within
      ``tiles.DEVICE_SHARE`` of free GPU memory (``tiles.CPU_TILE_BYTES`` on the cpu backend,
      where ``out`` always means tiles);
    - else tile by tile: into ``out``, a host result (host input) or, for device input
      without ``out``, an M x M result allocated on the GPU, the tile side from the memory
      left after the result and the rows (``tiles.device_tile``).

    ``tiles.TILE_CAP`` (tests) forces tiles where ``M`` exceeds it. ``ValueError`` when a
    device result cannot fit even tile by tile (the result, the normalised rows and one
    smallest tile's temporaries above free GPU memory), or a cpu-backend result without
    ``out`` cannot fit the host's memory."""
    rows = m * n * work_itemsize(precision)
    result = m * m * res_dt.itemsize
    need = m * m * 3 * 8 + result + rows
    forced = tiles.TILE_CAP is not None and m > tiles.TILE_CAP
    if backend == "cpu":
        mem = (host or _host_memory)()
        if out is None and mem is not None and result > mem:
            raise InvalidValueError(f"corrcoef: the {m} x {m} {res_dt} result needs "
                                    f"{gb(result)}, more than this host's memory; pass "
                                    f"out=numpy.memmap(...)")
        if out is None and need <= tiles.CPU_TILE_BYTES and not forced:
            return Workspace(True)
        return Workspace(False, tiles.cpu_tile(m))
    if need <= tiles.TINY_BYTES and not forced:
        return Workspace(True)
    room = (free or tiles.free_device_bytes)()
    if need <= tiles.DEVICE_SHARE * room and not forced:
        return Workspace(True)
    if out is not None or not on_device:
        return Workspace(False, tiles.device_tile(m, n, 8, room))
    least = min(m, MIN_DEVICE_TILE)
    tiled = result + rows + TILE_ELEMENT_BYTES * least * least
    if tiled > room:
        raise InvalidValueError(
            f"corrcoef: the {m} x {m} {res_dt} result needs {gb(tiled)} of GPU memory even "
            f"tile by tile (the result {gb(result)}, the normalised rows {gb(rows)}, one "
            f"{least} x {least} tile's temporaries {gb(TILE_ELEMENT_BYTES * least * least)}; "
            f"free: {gb(room)}); pass out= a host array or numpy.memmap to write it tile by "
            f"tile")
    return Workspace(False, tiles.device_tile(m, n, 8, room - result))


def _empty(on_device: bool, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    if not on_device:
        return np.empty(shape, dtype)
    return empty(shape, dtype)


def _deliver(r: Any, out: Any, on_device: bool) -> Any:
    """``r`` as the caller's kind (CuPy for device input), or copied into ``out``."""
    if out is not None:
        if isinstance(out, np.ndarray):
            out[...] = to_host(r)
        else:
            out[...] = to_device(r)
        return out
    if on_device:
        return to_device(r)
    return to_host(r)

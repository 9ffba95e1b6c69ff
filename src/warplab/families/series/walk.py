"""Random walks: ``random_walk(m, n)``, M series of N values each (step 1 of the Pearson report:
the series whose correlations the later steps compute).

Every series starts at the same value ``start``; each next value is the previous one varied by a
random percentage of at most ``eps``: ``x[i] = x[i-1] * (1 + s*u*eps)``, ``s`` a random sign and
``u`` uniform in [0, 1].

The random numbers come from a counter-based generator, Philox4x32-10, keyed by the seed and
counted by (element index / 4, series index), so that every element's number is known without
generating the ones before it: the sequential and the parallel variants, on the GPU and in
NumPy, all draw the same numbers. Element ``i`` of series ``j`` uses word ``i % 4`` of
``Philox4x32-10(counter=(i//4 low, i//4 high, j low, j high), key=(seed low, seed high))`` read as
a signed 32-bit ``v``: ``d_i = 1 + v * (eps / 2**31)`` (``v / 2**31`` is ``s*u``), both operations
rounded to nearest in float64. ``x[0] = start`` and ``x[i] = x[i-1] * d_i`` accumulate in
float64 and are rounded to the output dtype when stored, so the sequential variants equal
``np.cumprod`` bit for bit; ``warp_scan`` multiplies in another order (a few float64 ulps).

Variants (``warplab.variants("random_walk")``): ``numpy`` (this module, the reference),
``k1_thread_per_series`` and ``k1_thread_per_series_b32`` (the report's kernel K1 and its faster
launch) and the default ``warp_scan`` (``walk_cuda.py``, kernels in ``walk.cu``).
"""
from __future__ import annotations

import math
import numbers
import operator
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from warplab.core import registry
from warplab.core.errors import InvalidTypeError, InvalidValueError
from warplab.core.registry import register

FAMILY = "random_walk"
DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
MAX_BYTES = 1 << 40            # a request above this is a mistake, not a workload
CHUNK_ELEMENTS = 1 << 19       # elements per NumPy chunk (bounds the reference's temporaries)
_MASK = 0xFFFFFFFF
# Philox4x32 constants (Salmon et al. 2011; Random123). walk.cu holds the CUDA copy; the
# known-answer tests pin both.
PHILOX_M = (0xD2511F53, 0xCD9E8D57)
PHILOX_W = (0x9E3779B9, 0xBB67AE85)
PHILOX_ROUNDS = 10


class WalkProblem(NamedTuple):
    """What dispatch and the cost model see of one call."""

    m: int
    n: int
    dtype: np.dtype


def walk_bytes_moved(problem: WalkProblem) -> int:
    """Bytes written (nothing is read): ``m * n * itemsize``; every variant's yardstick (the
    segmented ``warp_scan`` adds a few bytes per segment, left out)."""
    return problem.m * problem.n * np.dtype(problem.dtype).itemsize


@dataclass(frozen=True)
class WalkParams:
    """The values of a walk besides its shape (validated by :func:`random_walk`)."""

    seed: int
    start: float
    eps: float

    @property
    def key(self) -> tuple[int, int]:
        """The Philox key: the seed's low and high 32-bit words."""
        return self.seed & _MASK, self.seed >> 32

    @property
    def eps_scaled(self) -> float:
        """``eps / 2**31`` (exact: a power-of-two scaling), the factor of the signed word."""
        return self.eps * 2.0 ** -31


# ------------------------------------------------------------------------ the generator

def philox4x32_10(c0: Any, c1: Any, c2: Any, c3: Any, k0: int, k1: int) -> tuple[np.ndarray, ...]:
    """Philox4x32-10 of counter words ``c0..c3`` (uint32 arrays, broadcast together) under key
    ``(k0, k1)``: the four output words, vectorised with uint64 products."""
    c0, c1, c2, c3 = (np.asarray(c, dtype=np.uint32) for c in (c0, c1, c2, c3))
    m0, m1 = np.uint64(PHILOX_M[0]), np.uint64(PHILOX_M[1])
    for _ in range(PHILOX_ROUNDS):
        p0 = c0.astype(np.uint64) * m0
        p1 = c2.astype(np.uint64) * m1
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)).astype(np.uint32) ^ c1 ^ np.uint32(k0),
                          p1.astype(np.uint32),
                          (p0 >> np.uint64(32)).astype(np.uint32) ^ c3 ^ np.uint32(k1),
                          p0.astype(np.uint32))
        k0, k1 = (k0 + PHILOX_W[0]) & _MASK, (k1 + PHILOX_W[1]) & _MASK
    return c0, c1, c2, c3


def philox_words(seed: int, series: Any, index: Any) -> np.ndarray:
    """The 32-bit word that element ``index`` of series ``series`` draws (uint32, broadcast);
    element 0 of a series draws one too but does not use it."""
    j = np.asarray(series, dtype=np.uint64)
    i = np.asarray(index, dtype=np.uint64)
    b = i >> np.uint64(2)
    out = philox4x32_10(b & np.uint64(_MASK), b >> np.uint64(32), j & np.uint64(_MASK),
                        j >> np.uint64(32), seed & _MASK, seed >> 32)
    lane = (i & np.uint64(3)).astype(np.intp)
    return np.choose(lane, np.broadcast_arrays(*out)).astype(np.uint32)


def step_factors(j0: int, j1: int, c0: int, c1: int, params: WalkParams) -> np.ndarray:
    """The float64 factors ``d`` of elements ``c0 .. c1-1`` of series ``j0 .. j1-1`` (shape
    ``(j1-j0, c1-c0)``); the factor of element 0 is ``start``: ``x = cumprod(d)``."""
    b0, b1 = c0 // 4, -(-c1 // 4)
    blk = np.arange(b0, b1, dtype=np.uint64)[None, :]
    j = np.arange(j0, j1, dtype=np.uint64)[:, None]
    k0, k1 = params.key
    words = philox4x32_10(blk & np.uint64(_MASK), blk >> np.uint64(32), j & np.uint64(_MASK),
                          j >> np.uint64(32), k0, k1)
    w = np.stack(np.broadcast_arrays(*words), axis=-1).reshape(j1 - j0, 4 * (b1 - b0))
    d = w[:, c0 - 4 * b0:c1 - 4 * b0].view(np.int32).astype(np.float64)
    d *= params.eps_scaled
    d += 1.0
    if c0 == 0:
        d[:, 0] = params.start
    return d


def _chunk_shape(m: int, n: int, chunk_elements: int) -> tuple[int, int]:
    """(rows, columns) of one NumPy chunk: whole rows when a row fits, else column blocks of a
    multiple of 4 elements (whole Philox blocks)."""
    if n <= chunk_elements:
        return max(1, min(m, chunk_elements // n)), n
    return 1, max(4, chunk_elements // 4 * 4)


def reference_rows(j0: int, j1: int, n: int, params: WalkParams, *,
                   chunk_elements: int = CHUNK_ELEMENTS) -> np.ndarray:
    """Series ``j0 .. j1-1`` in float64 (before rounding to the output dtype), computed in
    chunks of at most ``chunk_elements``: the reference the GPU tests compare against."""
    out = np.empty((j1 - j0, n), dtype=np.float64)
    _walk_into(out, j0, params, chunk_elements)
    return out


def _walk_into(out: np.ndarray, j_base: int, params: WalkParams, chunk_elements: int) -> None:
    m, n = out.shape
    rows, cols = _chunk_shape(m, n, chunk_elements)
    for r0 in range(0, m, rows):
        r1 = min(m, r0 + rows)
        carry = None
        for c0 in range(0, n, cols):
            c1 = min(n, c0 + cols)
            d = step_factors(j_base + r0, j_base + r1, c0, c1, params)
            if carry is not None:  # continue the sequential product: x[c0] = x[c0-1] * d[c0]
                d[:, 0] *= carry
            x = np.cumprod(d, axis=1)
            carry = x[:, -1].copy()
            out[r0:r1, c0:c1] = x  # rounds to out's dtype (nearest even), as the GPU stores


@register(FAMILY, "numpy", backend="cpu", bytes_moved=walk_bytes_moved, rank=0)
def numpy_walk(out: np.ndarray, params: WalkParams, *,
               chunk_elements: int = CHUNK_ELEMENTS) -> np.ndarray:
    """NumPy reference: vectorised Philox and ``np.cumprod`` over chunks of rows (or of columns
    of one row), carrying the float64 product across column chunks.

    Performance: writes m*n elements; temporaries bounded by ``chunk_elements`` (about a dozen
    8-byte arrays of that size), whatever m and n.
    """
    _walk_into(out, 0, params, chunk_elements)
    return out


# ------------------------------------------------------------------------ the public function

def random_walk(m: int, n: int, *, start: float = 100.0, eps: float = 1e-3, seed: int = 0,
                dtype: Any = "float32", variant: str | None = None,
                device: str | None = None) -> Any:
    """``m`` random-walk series of ``n`` values: ``x[j, 0] = start``, ``x[j, i] = x[j, i-1] *
    (1 + s*u*eps)`` with a random sign ``s`` and ``u`` uniform in [0, 1].

    Args:
        m: number of series (int >= 1).
        n: values per series (int >= 1).
        start: the first value of every series (finite, nonzero in ``dtype``).
        eps: the largest relative step, in the open interval (0, 1).
        seed: non-negative int below 2**63; the same (seed, m, n, start, eps) gives the same
            series on every variant and backend (``warp_scan``: within a few float64 ulps).
            Series ``j`` does not depend on ``m``, and its first values not on ``n``.
        dtype: ``"float32"`` (default) or ``"float64"``; the walk accumulates in float64.
        variant: a registered variant (``warplab.variants("random_walk")``); default: fastest.
        device: ``"cuda"`` or ``"cpu"``; default automatic (``WARPLAB_DEVICE`` overrides).

    Returns:
        An ``(m, n)`` C-contiguous array of ``dtype``: CuPy on the cuda backend, NumPy on cpu.

    Raises:
        TypeError: a dtype other than float32/float64.  ValueError: m, n or seed not a
        non-negative int in range, eps or start out of range, an output above 2**40 bytes or
        above the GPU's free memory, an unknown variant or one of the other backend.
        DeviceUnavailableError: cuda asked for (by ``device`` or ``variant``) but unusable.

    Performance:
        Writes m*n*itemsize bytes and reads nothing. Default cuda variant ``warp_scan``: one
        launch, or three when fewer than 4096 long series are split into segments (the first
        recomputes the random numbers of all but the last segment); no host synchronisation.
    """
    m, n = _count("m", m), _count("n", n)
    dt = _dtype(dtype)
    params = WalkParams(_seed(seed), _start(start, dt), _eps(eps))
    nbytes = m * n * dt.itemsize
    if nbytes > MAX_BYTES:
        raise InvalidValueError(
            f"random_walk({m}, {n}) would write {nbytes} bytes ({dt}), more than "
            f"the 2**40-byte (1 TiB) limit; ask for fewer or shorter series")
    backend = registry.pick_backend(FAMILY, device, variant, False)
    v = registry.choose(FAMILY, backend, WalkProblem(m, n, dt), variant)
    if backend == "cuda":
        import cupy

        _check_device_memory(m, n, dt, nbytes)
        out = cupy.empty((m, n), dtype=dt)
    else:
        out = np.empty((m, n), dtype=dt)
    registry.ran(v)
    v.fn(out, params)
    return out


def _check_device_memory(m: int, n: int, dt: np.dtype, nbytes: int) -> None:
    import cupy

    free = cupy.cuda.runtime.memGetInfo()[0] + cupy.get_default_memory_pool().free_bytes()
    if nbytes > free:
        raise InvalidValueError(
            f"random_walk({m}, {n}) needs {nbytes / 2**30:.2f} GiB of GPU memory "
            f"for its {dt} output but only {free / 2**30:.2f} GiB is free on the "
            "device; ask for fewer or shorter series, or use device='cpu'")


def _count(name: str, value: Any) -> int:
    if isinstance(value, (bool, np.bool_)):
        raise InvalidValueError(f"{name} must be an int >= 1, got the bool {value!r}")
    try:
        v = operator.index(value)
    except TypeError:
        raise InvalidValueError(f"{name} must be an int >= 1, got {value!r} "
                         f"({type(value).__name__})") from None
    if v < 1:
        raise InvalidValueError(f"{name} must be an int >= 1, got {v}")
    return v


def _dtype(dtype: Any) -> np.dtype:
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise InvalidTypeError(
            f"random_walk supports dtype float32 and float64, got {dtype!r}") from None
    if dt not in DTYPES:
        raise InvalidTypeError(f"random_walk supports dtype float32 and float64, got {dt}")
    return dt


def _real(name: str, value: Any) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InvalidValueError(
            f"{name} must be a real number, got {value!r} ({type(value).__name__})")
    return float(value)


def _eps(eps: Any) -> float:
    e = _real("eps", eps)
    if not 0.0 < e < 1.0:  # NaN fails too
        raise InvalidValueError(f"eps must lie in the open interval (0, 1), got {e!r}")
    return e


def _start(start: Any, dt: np.dtype) -> float:
    s = _real("start", start)
    if not math.isfinite(s) or s == 0.0:
        raise InvalidValueError(f"start must be finite and nonzero, got {s!r}")
    with np.errstate(over="ignore", under="ignore"):
        stored = dt.type(s)
    if not np.isfinite(stored) or stored == 0:
        raise InvalidValueError(f"start={s!r} is {stored} in {dt}: outside the dtype's range")
    return s


def _seed(seed: Any) -> int:
    if isinstance(seed, (bool, np.bool_)):
        raise InvalidValueError(f"seed must be an int in [0, 2**63), got the bool {seed!r}")
    try:
        s = operator.index(seed)
    except TypeError:
        raise InvalidValueError(f"seed must be an int in [0, 2**63), got {seed!r} "
                         f"({type(seed).__name__})") from None
    if not 0 <= s < 1 << 63:
        raise InvalidValueError(f"seed must be an int in [0, 2**63), got {s}")
    return s



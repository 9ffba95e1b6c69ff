"""The ``int8_slices`` corrcoef variant (the Ozaki scheme): normalised rows split error-free
into int8 digits whose products run on int8 tensor cores (cuBLAS ``GemmEx``, exact int32
sums), then recombined in float64. This module holds the arithmetic as pure functions (the
split, the plan, the error bound and the choice of the number of slices) and a NumPy emulation
of the whole algorithm; ``slices_cuda.py`` launches it (kernels in ``slices.cu``).

The split. Row ``z_i`` (unit norm, float64) gets the scale ``c_i = max_k |z_ik| / 127``
(rounded; any value works, it is used consistently), so ``y_ik = fl(z_ik / c_i)`` lies in
[-127, 127] (to one ulp). ``Y_ik = rint(y_ik 2^56)`` (an int64) is written in balanced base
256, ``Y = sum_{t=1..8} D_t 256^{8-t}`` with ``D_2..D_8`` in [-128, 127] (taken from the
bottom: ``d = ((Y + 128) & 255) - 128``, ``Y = (Y - d) / 256``) and the top digit
``|D_1| <= 127(1 + 2u) + 128/255 < 128``. The first ``s`` digits are the slices:
``z_ik ~ c_i sum_{t<=s} D_ikt 256^{1-t}``. They do not depend on ``s`` (no re-rounding).

The products. ``C_L = sum_{t+u=L} D_t D_u^T`` for the levels ``L = 2 .. s+1`` (the pairs
``t + u <= s + 1``, ``s (s + 1) / 2`` of them): one int8 GEMM per level over the slices
concatenated along k. Every partial sum is bounded by ``k_L 2^14``, kept below 2^31 by cutting
k into chunks of ``kc`` (:func:`chunking`): exact. The combine sums a level's chunks in int64
(exact), runs Horner from the deepest level, ``acc = acc 2^-8 + C_L`` in float64, and returns
``acc * (c_i c_j)``: the same operations, in the same order, in NumPy (:func:`emulate`) and on
the GPU, so the two agree bit for bit.

The bound (:func:`slices_error_bound`, per coefficient, against the exact ``z_i . z_j``).
Write ``y = z_i / c_i``, ``v = z_j / c_j`` (exact), ``Yh``, ``Vh`` the s-digit values, and
``delta = y - Yh``, ``eps = v - Vh``; ``T(r) = sum_{u=r+1..8} D_u 256^{1-u}`` the tail of the
8-digit split after digit r (``|T(r)| <= (128/255) 256^{1-r}``), ``f = 2^-57 + 2^-46`` the
rounding of ``rint`` and of the division (``|y - Y 2^-56| <= f``). Then
``z_i . z_j - c_i c_j P = c_i c_j [sum (y v - Yh Vh) + Drop]`` where P is the computed sum of
the kept levels and ``Drop = sum_{t=2..s} D_t 256^{1-t} T_s(s+1-t)`` (``T_s``: the tail
truncated at digit s) the levels above s + 1. Two rigorous bounds of each part, the smaller
taken:

* representation: ``rho (c_i |z_j|_1 + c_j |z_i|_1) + N c_i c_j rho^2`` with the elementwise
  ``rho = (128/255) 256^{1-s} + f`` (1-norms); or ``2 nu E + E^2`` with
  ``E = max_i c_i (|T_i(s)|_2 + sqrt(N) f)`` (Cauchy-Schwarz, ``|z|_2 <= nu = 1 + (N+8)u``);
* dropped levels: ``N c_i c_j (s-1) 128 (128/255) 256^{1-s}`` (every digit at most 128); or
  ``sum_t 256^{1-t} max_i c_i |D_it|_2 (max_j c_j |T_j(s+1-t)|_2 + max_j c_j |T_j(s)|_2)``
  (Cauchy-Schwarz per level; ``|T_s(r)| <= |T(r)| + |T(s)|``);
* the combine: ``gamma_{s+1} (nu^2 + 2 h c |z|_1 + N h^2 c^2)``, h = 1.01 (s + 1 roundings on
  sums of magnitudes at most ``|z_ik| + h c_i``).

With maxima over the rows (``c``, ``|z|_1``, the digit and tail norms: one pass on the GPU,
:func:`row_stats`), widened by ``1 + (N+16)u`` for the rounding of those sums. The call takes
the smallest s whose bound is at most ``TARGETS[precision]``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from warplab.core.errors import InvalidValueError

#: Digits of the full split (``Y = rint(y 2^56)``: 8 digits of 8 bits, the top one signed).
DIGITS = 8
SHIFT = 8 * (DIGITS - 1)
#: ``c_i = max |z_i| / TOP``: the top digit holds at most 127 (int8).
TOP = 127.0
#: Columns of :func:`row_stats`: ``c |D_t|_2`` (8), ``c |T(r)|_2`` (8, r = 1..8), c, ``|z|_1``.
STATS = 2 * DIGITS + 2
#: Bound each precision's choice of s must meet (absolute error of every coefficient):
#: float64 2^-33 (1.2e-10, under the 1e-9 that float64 promises); float32 2^-19.5 (1.4e-6:
#: under the 2e-6 that float32 promises and within tc_gram's float32 bound 2^-19); tf32 2^-10
#: (what rounding both unit-norm rows to TF32's 11 significant bits alone can cost; tc_gram's
#: one TF32 pass is bounded by 2^-9.7 at N = 8192).
TARGETS = {"float64": 2.0**-33, "float32": 2.0**-19.5, "tf32": 2.0**-10}
#: What random walks of 8192 values choose (the cost model's s; the call chooses per data).
NOMINAL_SLICES = {"float64": 5, "float32": 3, "tf32": 2}
#: Values per series at most: a row of slices (about 8 N bytes at s = 8) stays below 2^31.
MAX_N = 2**27
U = 2.0**-53
INT32_MAX = 2**31 - 1
PRODUCT_MAX = 2**14      # |digit x digit| <= 128 * 128
ALIGN = 16               # K, leading dimensions and GEMM sizes: multiples of 16 (IMMA)
#: Rows of a panel of the int32 products (the triangle of a diagonal block in row panels).
PANEL_ROWS = 2048
#: Bytes of int32 products one panel may hold (panels shrink below PANEL_ROWS to fit).
SCRATCH_BYTES = 1 << 30
_FLOOR = 2.0**-57 + 2.0**-46   # |y - Y 2^-56|: rint, and the division z / c


def round_up(v: int, to: int = ALIGN) -> int:
    return -(-int(v) // to) * to


def row_scale(z: np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
    """``c_i = max_k |z_ik| / 127`` of every row; 0 for invalid rows (NaN, zero or inf)."""
    with np.errstate(invalid="ignore"):
        mx = np.abs(z).max(axis=1) if z.shape[1] else np.zeros(len(z))
    ok = np.isfinite(mx) & (mx > 0)
    if valid is not None:
        ok &= np.asarray(valid, bool)
    return np.where(ok, mx, 0.0) / TOP


def split_digits(z: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The 8 balanced base-256 digits of ``rint(z / c 2^56)`` per element: int8 array
    (DIGITS, M, N); rows with ``c == 0`` are zeros. As ``slices.cu`` computes them."""
    ok = c > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        y = np.where(ok[:, None], z / np.where(ok, c, 1.0)[:, None], 0.0)
    h = np.rint(y * 2.0**SHIFT).astype(np.int64)
    d = np.empty((DIGITS, *z.shape), np.int8)
    for t in range(DIGITS - 1, 0, -1):
        low = ((h + 128) & 255) - 128
        d[t] = low
        h = (h - low) // 256
    d[0] = h
    return d


def tails(digits: np.ndarray) -> np.ndarray:
    """``T(r)`` for r = 1..8 (float64, (DIGITS, M, N)): the value of digits r+1..8, in units
    of the top digit; as the GPU computes them (``(Y - H_r 256^(8-r)) 2^-56``)."""
    d = digits.astype(np.int64)
    y = np.zeros(d.shape[1:], np.int64)
    for t in range(DIGITS):
        y = y * 256 + d[t]
    out = np.zeros(d.shape, np.float64)
    h = y
    for r in range(DIGITS - 1, 0, -1):
        h = (h - d[r]) // 256
        out[r - 1] = (y - h * (1 << (8 * (DIGITS - r)))).astype(np.float64) * 2.0**-SHIFT
    return out


def row_stats(z: np.ndarray, valid: np.ndarray | None = None, rows_at_once: int = 256
              ) -> np.ndarray:
    """Per row (M, STATS): ``c |D_t|_2`` (t = 1..8), ``c |T(r)|_2`` (r = 1..8), ``c``,
    ``|z|_1``; what the GPU's stats pass computes (summed in another order). Works through
    ``rows_at_once`` rows at a time (memory)."""
    z = np.asarray(z, np.float64)
    c = row_scale(z, valid)
    out = np.zeros((len(z), STATS))
    for r0 in range(0, len(z), rows_at_once):
        rows, cr = slice(r0, r0 + rows_at_once), c[r0:r0 + rows_at_once, None]
        d = split_digits(z[rows], c[rows])
        out[rows, :DIGITS] = np.sqrt((d.astype(np.float64) ** 2).sum(axis=2)).T * cr
        out[rows, DIGITS:2 * DIGITS] = np.sqrt((tails(d) ** 2).sum(axis=2)).T * cr
        with np.errstate(invalid="ignore"):
            out[rows, -1] = np.where(c[rows] > 0, np.abs(z[rows]).sum(axis=1), 0.0)
    out[:, -2] = c
    return out


@dataclass(frozen=True)
class RowMaxima:
    """Maxima over the rows of :func:`row_stats` (what one read-back brings to the host)."""

    digit_norms: tuple[float, ...]   # max_i c_i |D_it|_2, t = 1..8
    tail_norms: tuple[float, ...]    # max_i c_i |T_i(r)|_2, r = 1..8
    c: float                         # max_i c_i
    n1: float                        # max_i |z_i|_1

    @classmethod
    def of(cls, maxima: np.ndarray) -> RowMaxima:
        """From the column maxima of :func:`row_stats` (length STATS)."""
        m = [float(v) for v in np.asarray(maxima, np.float64).ravel()]
        if len(m) != STATS:
            raise InvalidValueError(f"need {STATS} maxima, got {len(m)}")
        return cls(tuple(m[:DIGITS]), tuple(m[DIGITS:2 * DIGITS]), m[-2], m[-1])


def _gamma(k: int) -> float:
    return k * U / (1 - k * U)


def slices_error_bound(s: int, n: int, maxima: RowMaxima) -> float:
    """Bound on ``|r_ij - z_i . z_j|`` for every pair when ``s`` slices are kept (see the
    module docstring): representation + dropped levels + combine rounding."""
    if not 1 <= s <= DIGITS:
        raise InvalidValueError(f"slices must be in 1..{DIGITS}, got {s}")
    wide = 1 + (n + 16) * U          # the GPU's rounded sums and square roots
    nu = 1 + (n + 8) * U             # |z_i|_2 of a normalised row
    c, n1 = maxima.c, maxima.n1 * wide
    a = [v * wide for v in maxima.digit_norms]
    b = [v * wide for v in maxima.tail_norms]
    rho = (128 / 255) * 256.0 ** (1 - s) * (1 - 256.0 ** (s - DIGITS)) + _FLOOR
    rep_1 = 2 * rho * c * n1 + n * c * c * rho * rho
    e = b[s - 1] + c * math.sqrt(n) * _FLOOR
    rep = min(rep_1, 2 * nu * e + e * e)
    drop_1 = n * c * c * (s - 1) * (128 * 128 / 255) * 256.0 ** (1 - s)
    drop_2 = sum(256.0 ** (1 - t) * a[t - 1] * (b[s - t] + b[s - 1]) for t in range(2, s + 1))
    h = 1.01
    comb = _gamma(s + 1) * (nu * nu + 2 * h * c * n1 + n * h * h * c * c)
    return (rep + min(drop_1, drop_2) + comb) * (1 + 2.0**-40)


def apriori_maxima(c: float, n1: float) -> RowMaxima:
    """Maxima that know only ``c`` and ``|z|_1`` (the normalisation's by-products): the digit
    and tail norms unknown (infinite), so :func:`slices_error_bound` takes its a-priori terms
    (every digit at most 128, 1-norms)."""
    inf = (math.inf,) * DIGITS
    return RowMaxima(inf, inf, float(c), float(n1))


def choose_slices(precision: str, n: int, maxima: RowMaxima) -> int:
    """The smallest s in 1..8 whose bound meets ``TARGETS[precision]`` (8 when none does)."""
    target = TARGETS[precision]
    for s in range(1, DIGITS + 1):
        if slices_error_bound(s, n, maxima) <= target:
            return s
    return DIGITS


@dataclass(frozen=True)
class Choice:
    """s and the validity of every series for some rows of a call, chosen by the single
    call's rule from their maxima, for rows prepared apart from the others (``chunks.py``:
    the rows of two chunks, whose block of coefficients it bounds)."""

    s: int
    all_valid: bool
    bound: float

    @classmethod
    def of(cls, precision: str, n: int, extents: list[np.ndarray],
           digits: list[np.ndarray] | None, light: bool) -> Choice | None:
        """The choice over the rows of every part: ``extents``, per part the column maxima of
        its normalisation's extent and its validity flag (3 values); ``digits``, per part
        those of its :func:`row_stats` and the flag (STATS + 1). The a-priori bound from the
        extents first when ``light``; the digit statistics when that needs more than the
        nominal s or when not ``light`` (None when they are needed and not given)."""
        ext = np.max(np.stack([np.asarray(e, np.float64) for e in extents]), axis=0)
        valid = bool(min(float(e[2]) for e in extents) > 0)
        if light:
            maxima = apriori_maxima(ext[0] / TOP, ext[1])
            s = choose_slices(precision, n, maxima)
            if s <= NOMINAL_SLICES[precision]:
                return cls(s, valid, slices_error_bound(s, n, maxima))
        if digits is None:
            return None
        top = np.max(np.stack([np.asarray(d, np.float64) for d in digits]), axis=0)
        maxima = RowMaxima.of(top[:STATS])
        s = choose_slices(precision, n, maxima)
        return cls(s, valid, slices_error_bound(s, n, maxima))


def chunking(n: int, s: int) -> tuple[int, int]:
    """``(kc, nc)``: k cut into ``nc`` chunks of ``kc`` (a multiple of 16, ``nc kc >= n``) so
    that the deepest level's GEMM, ``s kc`` products of at most 2^14 each, stays below 2^31:
    ``s kc 2^14 <= 2^31 - 1`` (kc <= 26208 at s = 5, 131056 at s = 1)."""
    kmax = INT32_MAX // (s * PRODUCT_MAX) // ALIGN * ALIGN
    nc = max(1, -(-n // kmax))
    return round_up(-(-n // nc)), nc


@dataclass(frozen=True)
class SlicesPlan:
    """The layout of one call's slices: two int8 matrices of ``rows`` x ``ldq``, F with the
    slices of each chunk in order 1..s, R in order s..1, so that level L's operands are
    contiguous: F[chunk][0 : (L-1) kc] against R[chunk][(s-L+1) kc : s kc]."""

    m: int
    n: int
    s: int
    kc: int
    nc: int

    @classmethod
    def of(cls, m: int, n: int, s: int) -> SlicesPlan:
        kc, nc = chunking(n, s)
        return cls(m, n, s, kc, nc)

    @property
    def ldq(self) -> int:
        """Bytes per row of F and R."""
        return self.nc * self.s * self.kc

    @property
    def rows(self) -> int:
        """Rows allocated (zero past M): any 16-row-rounded GEMM window stays inside."""
        return round_up(self.m) + ALIGN

    @property
    def levels(self) -> range:
        return range(2, self.s + 2)

    @property
    def planes(self) -> int:
        """int32 products per panel: one per level and chunk."""
        return self.s * self.nc

    def level_k(self, level: int) -> int:
        return (level - 1) * self.kc

    def offsets(self, level: int, chunk: int) -> tuple[int, int]:
        """Byte offsets within a row of (F, R) of level ``level``'s operands in ``chunk``."""
        base = chunk * self.s * self.kc
        return base, base + (self.s - level + 1) * self.kc

    def int8_ops(self, rows: int, cols: int) -> int:
        """Integer multiply-adds x 2 of one panel of ``rows x cols`` (16-rounded)."""
        return 2 * round_up(rows) * round_up(cols) * self.kc * self.nc * \
            self.s * (self.s + 1) // 2


def panel_rows(cols: int, plan: SlicesPlan, width: int | None = None,
               budget: int | None = None) -> int:
    """Rows of a panel: ``width`` (PANEL_ROWS), fewer (a multiple of 16, at least 16) when
    its int32 products against ``cols`` columns would pass ``budget`` (SCRATCH_BYTES)."""
    width = PANEL_ROWS if width is None else width
    budget = SCRATCH_BYTES if budget is None else budget
    fit = budget // (4 * plan.planes * round_up(cols)) // ALIGN * ALIGN
    return max(ALIGN, min(round_up(width), fit))


def panels(r0: int, r1: int, c0: int, c1: int, width: int) -> list[tuple[int, int, int, int]]:
    """``(a, b, j0, j1)``: the row panels of block ``r0:r1 x c0:c1``, rows ``a:b`` against
    columns ``j0:j1``. A diagonal block (``r0 == c0``, ``r1 == c1``) keeps only what lies at and
    right of each panel's first row (``j0 = a``): the upper triangle, mirrored by the combine."""
    sym = r0 == c0 and r1 == c1
    return [(a, min(a + width, r1), a if sym else c0, c1) for a in range(r0, r1, width)]


def block_ops(r0: int, r1: int, c0: int, c1: int, plan: SlicesPlan,
              width: int | None = None) -> int:
    """int8 operations (2 per multiply-add) of the GEMMs of one block."""
    w = panel_rows(c1 - c0, plan, width)
    return sum(plan.int8_ops(b - a, j1 - j0) for a, b, j0, j1 in panels(r0, r1, c0, c1, w))


def level_products(digits: np.ndarray, s: int, rows: slice = slice(None),
                   cols: slice = slice(None)) -> list[np.ndarray]:
    """``C_L`` for L = 2..s+1 as exact int64 (float64 BLAS on integers below 2^53)."""
    d = digits.astype(np.float64)
    n = digits.shape[2]
    if n * s * PRODUCT_MAX >= 2**53:
        raise InvalidValueError("level sums would not be exact in float64; emulate fewer values")
    return [sum(d[t - 1, rows] @ d[level - t - 1, cols].T for t in range(1, level))
            .astype(np.int64) for level in range(2, s + 2)]


def combine(levels: list[np.ndarray], c_rows: np.ndarray, c_cols: np.ndarray) -> np.ndarray:
    """Horner from the deepest level, ``acc = acc 2^-8 + C_L``, times ``c_i c_j``: float64,
    in the GPU combine's order."""
    acc = levels[-1].astype(np.float64)
    for c_l in reversed(levels[:-1]):
        acc = acc * 2.0**-8 + c_l.astype(np.float64)
    return acc * np.multiply.outer(c_rows, c_cols)


def emulate(z: np.ndarray, valid: np.ndarray | None = None, *, precision: str = "float64",
            slices: int | None = None) -> tuple[np.ndarray, int]:
    """The algorithm in NumPy on normalised float64 rows: ``(raw M x M coefficients, s)``
    (``slices`` given, or chosen from the bound). Rows invalid or NaN give zeros (the public
    call turns them into NaN). For small inputs: the level products are dense matmuls."""
    z = np.ascontiguousarray(z, np.float64)
    stats = row_stats(z, valid)
    s = slices or choose_slices(precision, z.shape[1], RowMaxima.of(stats.max(axis=0)))
    c = stats[:, -2]
    return combine(level_products(split_digits(z, c), s), c, c), s

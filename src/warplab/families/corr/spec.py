"""The Pearson problem and its one cost model, shared by every corrcoef variant.

For M series of N values the matrix of coefficients is symmetric, so every variant computes the
upper triangle only: ``M (M + 1) / 2 * N`` multiply-adds, counted as 2 flops each for every
variant (``corr_flops``), whatever the variant really executes (``pairwise_direct`` and the
mirrored diagonal tiles do a little more). ``bytes_moved``: the compulsory traffic of a variant,
the input read once (in the dtype the variant reads), the M x M result written once, plus the
normalised copy of the input where the variant writes and reads one.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from warplab.core.errors import InvalidValueError
from warplab.families.corr.slices import NOMINAL_SLICES, TARGETS

#: ``precision=``: what the Gram products run in (see ``api.corrcoef``).
PRECISIONS = ("float64", "float32", "tf32")
NAN_POLICIES = ("propagate", "pairwise")
#: Output dtypes ``dtype=`` may ask for.
OUT_DTYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


@dataclass(frozen=True)
class CorrProblem:
    """What dispatch and the cost models see of one correlation matrix."""

    m: int
    n: int
    dtype: np.dtype          # input dtype
    precision: str
    on_device: bool

    @property
    def size(self) -> int:
        """Elements of the result (the results schema's ``params.size``)."""
        return self.m * self.m

    def __str__(self) -> str:
        return f"{self.m} series x {self.n} values {np.dtype(self.dtype).name} ({self.precision})"


def check_precision(precision: str | None) -> str:
    """``precision=`` checked (None means ``"float64"``); ``ValueError`` naming the valid ones."""
    if precision is None:
        return "float64"
    if precision not in PRECISIONS:
        raise InvalidValueError(f"unknown precision {precision!r}; valid: {', '.join(PRECISIONS)}")
    return precision


def work_itemsize(precision: str) -> int:
    """Bytes per element of the normalised rows the Gram products read."""
    return 8 if precision == "float64" else 4


def corr_flops(p: CorrProblem) -> int:
    """``M (M + 1) / 2 * N`` multiply-adds (the upper triangle with its diagonal), 2 flops each:
    the same count for every variant."""
    return p.m * (p.m + 1) // 2 * p.n * 2


def gram_bytes(p: CorrProblem) -> int:
    """Normalise-then-Gram variants (``tc_gram``, ``tiled_smem``, ``numpy``): the input read
    once, the normalised rows written and read once, the M x M float64 result written once."""
    z = p.m * p.n * work_itemsize(p.precision)
    return p.m * p.n * np.dtype(p.dtype).itemsize + 2 * z + p.m * p.m * 8


def slices_bytes(p: CorrProblem) -> int:
    """``int8_slices``: the input read once, the float64 normalised rows written once and read
    three times (statistics: two passes; split: one), the two int8 slice matrices written and
    read once at the precision's nominal s (``slices.NOMINAL_SLICES``; the call chooses s from
    the data), the M x M float64 result written once (the int32 level products, s of them,
    written and read once per element)."""
    s = NOMINAL_SLICES[p.precision]
    per_value = np.dtype(p.dtype).itemsize + 4 * 8 + 2 * 2 * s
    return p.m * p.n * per_value + p.m * p.m * (8 + 2 * 4 * s)


def direct_bytes(p: CorrProblem) -> int:
    """``pairwise_direct``: the float64 copy of the input written and read once, the means and
    norms (2 M float64), the M x M float64 result written once (the report's work split; its
    per-pair re-reads of two rows are served by the caches and not counted)."""
    return p.m * p.n * (np.dtype(p.dtype).itemsize + 16) + 16 * p.m + p.m * p.m * 8


#: The unit roundoff of float32.
U32 = 2.0**-24


def error_bound(variant: str, precision: str, n: int) -> float:
    """The stated bound on ``|r - r_exact|`` of every coefficient for series of ``n`` values
    (the GPU tests and the benchmark's verification hold each variant to it).

    - float64 arithmetic (``precision="float64"``, ``numpy``, ``pairwise_direct``, the float64
      comparators): 1e-9, far above the ``~n 2^-53`` such sums can err by.
    - ``tc_gram`` ``"float32"``: the Gram module's 3xTF32 bound ``2^-19`` on unit-norm rows plus
      ``2^-23`` for rounding the normalised rows to float32.
    - ``tc_gram`` ``"tf32"``: ``2^-10 + (n/8 + 1) 2^-22`` (inputs cut to 10 bits, n/8 chained
      float32 MMAs) plus ``2^-23``.
    - ``int8_slices`` ``"float32"`` / ``"tf32"``: the target its choice of slices meets
      (``slices.TARGETS``: 2^-22, 2^-11) plus 2^-40 for the reference's own normalisation.
    - float32 accumulation (``tiled_smem`` at ``"float32"``/``"tf32"``, torch, SGEMM):
      ``(n + 4) 2^-24``: n rounded additions of products whose magnitudes sum to at most 1
      (Cauchy-Schwarz on unit-norm rows), the products' and the rows' rounding.
    """
    if precision == "float64" or variant in ("numpy", "pairwise_direct", "cupy.corrcoef",
                                             "cublas_dsyrk"):
        return 1e-9
    if variant == "int8_slices":
        return TARGETS[precision] + 2.0**-40
    if variant == "tc_gram":
        if precision == "float32":
            return 2.0**-19 + 2 * U32
        return 2.0**-10 + (n / 8 + 1) * 2.0**-22 + 2 * U32
    return (n + 4) * U32

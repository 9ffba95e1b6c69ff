"""The float32 mean's quotient without a division (axis_plan.MEAN_RECIP): the kernels'
``mean_quotient`` (axis.cu) takes q = a * inv, where inv = 1 / n is rounded by the host, and
one Markstein step q + (a - q n) * inv by fused multiply-adds. Modelled here exactly (each FMA
as the exact value rounded once, through ``fractions``): it must give the float32 result of
the division it replaces, float32(a / n) with the quotient rounded to double first, for every
finite or infinite a and count n, and in the normal range the double quotient itself."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest


def fma(x: float, y: float, z: float) -> float:
    """x * y + z rounded once (IEEE fusedMultiplyAdd, round to nearest even)."""
    if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
        return x * y + z
    exact = Fraction(x) * Fraction(y) + Fraction(z)
    if exact == 0:  # an exact zero: -0 only as the sum of two negative zeros
        product_negative_zero = (x == 0 or y == 0) and math.copysign(1, x) * math.copysign(1, y) < 0
        return -0.0 if product_negative_zero and math.copysign(1, z) < 0 else 0.0
    return float(exact)


def mean_quotient(a: float, n: int) -> float:
    """The kernel's sequence: the double quotient it rounds to float32."""
    inv = 1.0 / n  # the host's reciprocal, correctly rounded
    q = a * inv
    if q == 0.0 or not math.isfinite(q):
        return q
    return fma(fma(-q, float(n), a), inv, q)


def cases(rng: np.random.Generator, count: int) -> list[tuple[float, int]]:
    """Random sums (log-uniform magnitudes over the whole double range, both signs, random
    mantissa bits) and counts (small, random, powers of two and their neighbours, all-ones
    mantissas, up to 2^53), with the edge values."""
    ns = [1, 2, 3, 5, 7, 10, 1000, 4097, (1 << 20), (1 << 24) + 1, (1 << 53) - 1, (1 << 53)]
    ns += [(1 << k) + d for k in range(1, 53) for d in (-1, 1)]
    ns += [int(v) for v in rng.integers(1, 1 << 40, 200)]
    out = []
    for _ in range(count):
        e = int(rng.integers(-1074, 1024))
        a = math.ldexp(float(rng.random()) + 0.5, e) * (1 if rng.random() < 0.5 else -1)
        if not math.isfinite(a):
            a = math.copysign(1.7976931348623157e308, a)
        out.append((a, ns[int(rng.integers(len(ns)))]))
    for a in (0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, -5e-324, 2.2250738585072014e-308,
              1.7976931348623157e308, -1.7976931348623157e308, 1.0, 3.0, 0.1):
        out += [(a, n) for n in ns[:12]]
    return out


@pytest.mark.parametrize("seed", range(4))
def test_float32_result_is_the_divisions(seed: int) -> None:
    for a, n in cases(np.random.default_rng(seed), 3000):
        with np.errstate(over="ignore"):  # quotients beyond float32: inf, as the cast's
            want, got = np.float32(a / n), np.float32(mean_quotient(a, n))
        assert (np.isnan(want) and np.isnan(got)) or (
            want == got and np.signbit(want) == np.signbit(got)), (a, n, want, got)


def test_double_quotient_exact_in_the_normal_range() -> None:
    """Markstein: with inv the rounded reciprocal and q within an ulp, the step is the
    correctly rounded quotient wherever nothing underflows."""
    rng = np.random.default_rng(7)
    checked = 0
    for a, n in cases(rng, 20000):
        if math.isfinite(a) and a != 0 and 1e-290 < abs(a / n) < 1e300:
            assert mean_quotient(a, n) == a / n, (a, n)
            checked += 1
    assert checked > 15000


def test_the_plain_product_is_not_enough() -> None:
    """The step matters: a * inv alone misses the double quotient for some inputs (the model
    would pass without the FMAs if this never happened)."""
    rng = np.random.default_rng(3)
    misses = sum(a * (1.0 / n) != a / n for a, n in cases(rng, 5000)
                 if math.isfinite(a) and a != 0 and 1e-290 < abs(a / n) < 1e300)
    assert misses > 0

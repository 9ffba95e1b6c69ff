"""The one-FMA bin of ``hist_even_fast`` (``numeric_fast``) against NumPy on the CPU: its rule,
applied in NumPy as the kernel applies it, gives ``np.histogram``'s index of every value,
including values a few ulps around every edge; and the min/max keys of ``minmax_atomic``."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from warplab.families.histogram import binning, numeric
from warplab.families.histogram.minmax_cuda import from_order_key
from warplab.families.histogram.numeric_fast import (even_fast_bins_reference, fast_constants,
                                                     fast_share)


def plan_for(dtype, nbins, r):
    first, last = numeric.outer_edges(r, 1, lambda: (None, None))
    edges = numeric.even_edges(first, last, nbins, np.dtype(dtype))
    return binning.plan_even(np.dtype(dtype), first, last, nbins, edges)


def near_edges(plan, dtype, k: int = 3, seed: int = 0) -> np.ndarray:
    """Every edge (cast to the data's dtype) and k ulps either side, plus random values."""
    dt = np.dtype(dtype)
    e = plan.edges.astype(np.float64)
    with np.errstate(all="ignore"):
        if dt.kind == "f":
            base = e.astype(dt)
            vals = [base]
            up, down = base.copy(), base.copy()
            for _ in range(k):
                up = np.nextafter(up, dt.type(np.inf))
                down = np.nextafter(down, dt.type(-np.inf))
                vals += [up, down]
            span = e[-1] - e[0]
            rnd = np.random.default_rng(seed).uniform(e[0] - span / 8, e[-1] + span / 8, 20000)
            vals.append(rnd.astype(dt))
            vals.append(np.array([np.nan, np.inf, -np.inf, 0.0], dt))
        else:
            info = np.iinfo(dt)
            c = np.clip(np.round(e), info.min + k, info.max - k).astype(np.int64)
            vals = [(c + j).astype(dt) for j in range(-k, k + 1)]
            vals.append(np.random.default_rng(seed).integers(
                max(info.min, int(e[0]) - 50), min(info.max, int(e[-1]) + 50), 20000).astype(dt))
    return np.concatenate(vals)


def numpy_bins(x: np.ndarray, plan) -> np.ndarray:
    """np.histogram's bin of each value, one histogram of all values at once: counts per bin
    compared, plus the reference index checked element by element."""
    return binning.even_bins_reference(x, plan)


CASES = [("float32", 256, (-4, 4)), ("float32", 256, (-4.0, 4.0)),
         ("float32", 256, (np.float32(-4), np.float32(4))), ("float32", 100, (-2.5, 7.25)),
         ("float32", 4096, (-5, 5)), ("float32", 1000, (1000.0, 1001.0)),
         ("float64", 256, (-4, 4)), ("float64", 8192, (-1e-3, 3e-3)),
         ("float16", 64, (-3, 3)), ("int32", 256, (-1000, 1000)), ("int16", 255, (-3, 3)),
         ("uint16", 7, (0, 65535)), ("int64", 256, (-(2 ** 40), 2 ** 40)),
         ("uint64", 33, (0, 10 ** 6))]


@pytest.mark.parametrize("dtype,nbins,r", CASES, ids=str)
def test_fast_rule_is_numpys_index(dtype, nbins, r) -> None:
    plan = plan_for(dtype, nbins, r)
    consts = fast_constants(plan)
    x = near_edges(plan, dtype)
    want_idx = numpy_bins(x, plan)
    want = np.histogram(x, nbins, r)[0]
    np.testing.assert_array_equal(np.bincount(want_idx[want_idx >= 0], minlength=nbins), want)
    if consts is None:
        return
    got = even_fast_bins_reference(x, plan, consts)
    np.testing.assert_array_equal(got, want_idx)
    if dtype == "float32":  # random values mostly far from edges: the FMA alone bins them
        assert fast_share(x[-20004:-4], plan, consts) > 0.5


def test_fast_constants_where_they_apply() -> None:
    consts = fast_constants(plan_for("float32", 256, (-4, 4)))
    assert consts is not None and all(isinstance(c, np.float32) for c in consts)
    scale, offset, delta = consts
    assert scale == 32 and offset == 128 and 1e-4 < delta < 3e-4
    assert fast_constants(plan_for("float16", 256, (-3, 3))) is None  # float16 arithmetic
    assert fast_constants(plan_for("float64", 256, (1e6, 1e6 + 1))) is None  # far-off range
    empty = plan_for("float32", 4, (100, 200))
    assert fast_constants(empty) is not None


@settings(max_examples=60, deadline=None)
@given(lo=st.floats(-1e4, 1e4, width=32), width=st.floats(0.5, 1e4, width=32),
       nbins=st.integers(1, 5000), seed=st.integers(0, 2 ** 16),
       dtype=st.sampled_from(["float32", "float64"]), kind=st.sampled_from(["py", "f32"]))
def test_prop_fast_rule(lo, width, nbins, seed, dtype, kind) -> None:
    r = (lo, lo + width) if kind == "py" else (np.float32(lo), np.float32(lo + width))
    try:
        plan = plan_for(dtype, nbins, r)
    except ValueError:  # NumPy's "Too many bins"
        return
    consts = fast_constants(plan)
    if consts is None or not plan.kernel_ok:
        return
    x = near_edges(plan, dtype, k=2, seed=seed)
    np.testing.assert_array_equal(even_fast_bins_reference(x, plan, consts),
                                  numpy_bins(x, plan))


def order_key(v: np.generic) -> int:
    """numeric.cu's order_key in Python (the test's own copy of the rule)."""
    dt = v.dtype
    width = 8 * dt.itemsize
    b = int.from_bytes(np.array(v).tobytes(), "little")
    sign = 1 << (width - 1)
    if dt.kind == "f":
        return b ^ ((1 << width) - 1) if b & sign else b ^ sign
    return b ^ sign if dt.kind == "i" else b


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "uint32",
                                   "int64", "uint64", "float16", "float32", "float64"])
def test_order_keys_decode_and_order(dtype) -> None:
    dt = np.dtype(dtype)
    if dt.kind == "f":
        vals = np.array([-np.inf, -3.5, -1.0, -0.0, 0.0, 1e-3, 2.0, np.finfo(dt).max, np.inf], dt)
    else:
        info = np.iinfo(dt)
        vals = np.unique(np.array([info.min, info.min + 1, 0, 1, 7, info.max], dt))
    keys = [order_key(v) for v in vals]
    assert keys == sorted(keys)
    for v, k in zip(vals, keys):
        got = from_order_key(k, dt)
        assert got.dtype == dt and got.tobytes() == v.tobytes()
        assert from_order_key(~(~k & (2 ** 64 - 1)) & (2 ** 64 - 1), dt).tobytes() == v.tobytes()

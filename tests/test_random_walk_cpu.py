"""The random-walk family on the NumPy backend: the generator, the walk, validation, dispatch,
and (in NumPy) the warp_scan kernels' order of multiplications against the reference."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import last_ran
from warplab.core import registry
from warplab.core.errors import DeviceUnavailableError
from warplab.core.device import cuda_available
from warplab.families.series import walk
from warplab.families.series import walk_cuda as wc
from warplab.families.series.walk import WalkParams, WalkProblem, random_walk

MASK = 0xFFFFFFFF


# ------------------------------------------------------------------ an independent scalar model

def philox_scalar(ctr: tuple[int, int, int, int], key: tuple[int, int]) -> tuple[int, ...]:
    """Philox4x32-10 in plain Python ints, written from the published algorithm (key bumped
    before rounds 2..10), independently of walk.py's vectorised one."""
    c = list(ctr)
    k0, k1 = key
    for r in range(10):
        if r:
            k0, k1 = (k0 + 0x9E3779B9) & MASK, (k1 + 0xBB67AE85) & MASK
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k0, p1 & MASK, (p0 >> 32) ^ c[3] ^ k1, p0 & MASK]
    return tuple(c)


def naive_walk(m: int, n: int, start: float, eps: float, seed: int) -> np.ndarray:
    """The walk element by element in Python floats (IEEE doubles: the same roundings)."""
    out = np.empty((m, n))
    for j in range(m):
        x = start
        out[j, 0] = x
        for i in range(1, n):
            word = philox_scalar((i // 4 & MASK, i // 4 >> 32, j & MASK, j >> 32),
                                 (seed & MASK, seed >> 32))[i % 4]
            v = word - (1 << 32) if word >= 1 << 31 else word
            x = x * (1.0 + v * (eps * 2.0 ** -31))
            out[j, i] = x
    return out


# Random123's known-answer vectors for Philox4x32-10: counter, key, output.
KAT = [((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
       ((MASK,) * 4, (MASK, MASK), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
       ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]


@pytest.mark.parametrize("ctr, key, want", KAT)
def test_philox_known_answers(ctr, key, want) -> None:
    assert philox_scalar(ctr, key) == want
    assert tuple(int(w) for w in walk.philox4x32_10(*ctr, *key)) == want


def test_philox_vectorised_matches_scalar() -> None:
    rng = np.random.default_rng(1)
    ctr = rng.integers(0, 1 << 32, size=(4, 50), dtype=np.uint64).astype(np.uint32)
    k0, k1 = 0x12345678, 0x9ABCDEF0
    got = np.stack(walk.philox4x32_10(*ctr, k0, k1))
    for t in range(50):
        assert tuple(int(x) for x in got[:, t]) == philox_scalar(tuple(int(c) for c in ctr[:, t]),
                                                                 (k0, k1))


# (seed, series, index) -> the element's 32-bit word: pinned so that a change of the generator
# (or of the mapping of keys to counters) fails here.
PINNED_WORDS = {(0, 0, 0): 0x6627E8D5, (0, 0, 5): 0x5CB200DB, (1, 2, 3): 0x0A0AFDDD,
                (12345, 99, 1000): 0x85B617C4,
                (2**63 - 1, 2**40 + 7, 2**33 + 6): 0x9C66DFA1, (5, 3, 2**34 + 9): 0x7200B891,
                (2**40 + 1, 2**32 + 5, 2**36 + 2): 0x01D1F41F}


@pytest.mark.parametrize("key", sorted(PINNED_WORDS))
def test_words_pinned(key) -> None:
    seed, j, i = key
    assert int(walk.philox_words(seed, j, i)) == PINNED_WORDS[key]
    b = i // 4
    assert philox_scalar((b & MASK, b >> 32, j & MASK, j >> 32),
                         (seed & MASK, seed >> 32))[i % 4] == PINNED_WORDS[key]


def test_walk_values_pinned() -> None:
    x = random_walk(2, 6, seed=7, dtype="float64", device="cpu")
    want = [["0x1.9000000000000p+6", "0x1.8fccd4c7e3333p+6", "0x1.8fe433f8ba9f7p+6",
             "0x1.8ff5bdb10c7f6p+6", "0x1.904913ffe7e1ap+6", "0x1.901f1f53e4e85p+6"],
            ["0x1.9000000000000p+6", "0x1.90232be158cccp+6", "0x1.9062ee7835a53p+6",
             "0x1.90911dd1fad15p+6", "0x1.907a032b2dfb5p+6", "0x1.905b390256a39p+6"]]
    assert [[v.hex() for v in row] for row in x.tolist()] == want
    y = random_walk(1, 5, seed=2**62 + 3, start=-2.5, eps=0.25, device="cpu")
    assert [float(v).hex() for v in y[0]] == ["-0x1.4000000000000p+1", "-0x1.26c1e00000000p+1",
                                              "-0x1.d574580000000p+0", "-0x1.0dfdee0000000p+1",
                                              "-0x1.310bd80000000p+1"]


# ------------------------------------------------------------------ the walk

@pytest.mark.parametrize("dtype", ["float32", "float64", np.float32, np.dtype(np.float64)])
@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (5, 1), (3, 31), (4, 257)])
def test_shape_dtype(shape, dtype) -> None:
    x = random_walk(*shape, dtype=dtype)
    assert isinstance(x, np.ndarray) and x.shape == shape and x.dtype == np.dtype(dtype)
    assert x.flags.c_contiguous and np.isfinite(x).all()
    assert last_ran() == "numpy"


def test_default_is_float32_and_the_cpu_backend_under_tests() -> None:
    x = random_walk(2, 3)
    assert x.dtype == np.float32 and isinstance(x, np.ndarray) and last_ran() == "numpy"


def test_equals_naive_loop_bit_for_bit() -> None:
    for m, n, start, eps, seed in [(3, 17, 100.0, 1e-3, 0), (2, 9, -0.75, 0.9, 2**63 - 1),
                                   (1, 40, 3e-5, 0.5, 42)]:
        want = naive_walk(m, n, start, eps, seed)
        got = random_walk(m, n, start=start, eps=eps, seed=seed, dtype="float64")
        np.testing.assert_array_equal(got, want)
        got32 = random_walk(m, n, start=start, eps=eps, seed=seed, dtype="float32")
        np.testing.assert_array_equal(got32, want.astype(np.float32))


def test_float32_is_the_rounded_float64_walk() -> None:
    a = random_walk(20, 300, seed=3, dtype="float64")
    np.testing.assert_array_equal(random_walk(20, 300, seed=3), a.astype(np.float32))


def test_reproducible_and_seeded() -> None:
    a = random_walk(6, 50, seed=11, dtype="float64")
    np.testing.assert_array_equal(a, random_walk(6, 50, seed=11, dtype="float64"))
    b = random_walk(6, 50, seed=12, dtype="float64")
    assert (a[:, 1:] != b[:, 1:]).all()           # every value after the first differs
    assert len({tuple(r) for r in a[:, 1:].tolist()}) == 6   # series differ from each other


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_first_value_is_start_and_steps_within_eps(dtype) -> None:
    eps = 0.01
    x = random_walk(8, 500, start=-42.5, eps=eps, seed=5, dtype=dtype)
    assert (x[:, 0] == np.dtype(dtype).type(-42.5)).all()
    r = x[:, 1:].astype(np.float64) / x[:, :-1].astype(np.float64)
    slack = 4 * float(np.finfo(dtype).eps)        # the stored values are rounded
    assert r.min() >= 1 - eps - slack and r.max() <= 1 + eps + slack
    # steps go both ways and spread over the whole interval
    assert r.min() < 1 - 0.9 * eps and r.max() > 1 + 0.9 * eps


def test_rows_do_not_depend_on_m_and_prefixes_not_on_n() -> None:
    big = random_walk(9, 70, seed=8, dtype="float64")
    np.testing.assert_array_equal(random_walk(4, 70, seed=8, dtype="float64"), big[:4])
    np.testing.assert_array_equal(random_walk(9, 13, seed=8, dtype="float64"), big[:, :13])
    p = WalkParams(8, 100.0, 1e-3)
    np.testing.assert_array_equal(walk.reference_rows(5, 9, 70, p), big[5:9])


@pytest.mark.parametrize("chunk", [1, 4, 7, 12, 64, 1000])
@pytest.mark.parametrize("shape", [(3, 1), (5, 33), (2, 1001)])
def test_chunking_changes_nothing(shape, chunk) -> None:
    p = WalkParams(21, 7.0, 0.05)
    whole = walk.numpy_walk(np.empty(shape), p, chunk_elements=1 << 30)
    got = walk.numpy_walk(np.empty(shape), p, chunk_elements=chunk)
    np.testing.assert_array_equal(got, whole)
    np.testing.assert_array_equal(walk.numpy_walk(np.empty(shape, np.float32), p,
                                                  chunk_elements=chunk), whole.astype(np.float32))


def test_chunk_shape_bounds_temporaries() -> None:
    assert walk._chunk_shape(16, 2**24 + 3, walk.CHUNK_ELEMENTS) == (1, walk.CHUNK_ELEMENTS)
    rows, cols = walk._chunk_shape(1 << 20, 32, walk.CHUNK_ELEMENTS)
    assert cols == 32 and rows * cols <= walk.CHUNK_ELEMENTS


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 6), n=st.integers(1, 40), seed=st.integers(0, 2**63 - 1),
       eps=st.floats(1e-9, 0.999), start=st.floats(-1e6, 1e6).filter(lambda s: abs(s) > 1e-6))
def test_walk_property(m, n, seed, eps, start) -> None:
    x = random_walk(m, n, start=start, eps=eps, seed=seed, dtype="float64")
    assert x.shape == (m, n) and (x[:, 0] == start).all()
    np.testing.assert_array_equal(x, naive_walk(m, n, start, eps, seed))
    r = x[:, 1:] / x[:, :-1]
    assert ((r >= 1 - eps - 1e-15) & (r <= 1 + eps + 1e-15)).all()
    np.testing.assert_array_equal(random_walk(m, n, start=start, eps=eps, seed=seed), x.astype(np.float32))


# ------------------------------------------------------------------ validation

BAD_COUNTS = [0, -1, 1.5, 2.0, True, np.bool_(True), "3", None]


@pytest.mark.parametrize("bad", BAD_COUNTS)
def test_bad_m_n(bad) -> None:
    with pytest.raises(ValueError, match="m must be an int >= 1"):
        random_walk(bad, 3)
    with pytest.raises(ValueError, match="n must be an int >= 1"):
        random_walk(3, bad)


def test_numpy_ints_accepted() -> None:
    x = random_walk(np.int64(2), np.uint8(3), seed=np.int32(4))
    assert x.shape == (2, 3)


@pytest.mark.parametrize("dtype", ["int32", np.float16, "complex64", "foo", object])
def test_bad_dtype(dtype) -> None:
    with pytest.raises(TypeError, match="float32 and float64"):
        random_walk(2, 2, dtype=dtype)


@pytest.mark.parametrize("eps", [0, 0.0, 1, 1.0, -0.1, 1.5, math.nan, math.inf, "0.1", True, None])
def test_bad_eps(eps) -> None:
    with pytest.raises(ValueError, match="eps"):
        random_walk(2, 2, eps=eps)


@pytest.mark.parametrize("start", [0, 0.0, -0.0, math.nan, math.inf, -math.inf, "1", None, False])
def test_bad_start(start) -> None:
    with pytest.raises(ValueError, match="start"):
        random_walk(2, 2, start=start)


def test_start_outside_float32() -> None:
    with pytest.raises(ValueError, match="float32"):
        random_walk(2, 2, start=1e300)
    with pytest.raises(ValueError, match="float32"):
        random_walk(2, 2, start=1e-300)
    assert random_walk(1, 1, start=1e300, dtype="float64")[0, 0] == 1e300


@pytest.mark.parametrize("seed", [-1, 2**63, 2**64, 1.0, "1", None, True])
def test_bad_seed(seed) -> None:
    with pytest.raises(ValueError, match="seed"):
        random_walk(2, 2, seed=seed)


def test_absurd_size() -> None:
    with pytest.raises(ValueError, match=r"2\*\*40-byte"):
        random_walk(2**20, 2**19, dtype="float32")   # 2 TiB
    with pytest.raises(ValueError, match=r"2\*\*40-byte"):
        random_walk(2**37 + 1, 1, dtype="float64")


def test_variant_names() -> None:
    with pytest.raises(ValueError, match="nosuch.*valid:.*warp_scan"):
        random_walk(2, 2, variant="nosuch")
    with pytest.raises(ValueError, match="runs on the cuda backend, not cpu"):
        random_walk(2, 2, variant="warp_scan", device="cpu")
    assert random_walk(2, 2, variant="numpy").shape == (2, 2) and last_ran() == "numpy"


@pytest.mark.skipif(cuda_available(), reason="checks the no-GPU errors")
def test_cuda_unavailable() -> None:
    with pytest.raises(DeviceUnavailableError):
        random_walk(2, 2, device="cuda")
    with pytest.raises(DeviceUnavailableError):
        random_walk(2, 2, variant="k1_thread_per_series")


# ------------------------------------------------------------------ registry and cost model

def test_registered_variants() -> None:
    vs = {v.name: v for v in registry.variants("random_walk")}
    assert set(vs) == {"numpy", "k1_thread_per_series", "k1_thread_per_series_b32", "warp_scan"}
    assert registry.variants("random_walk", "cpu")[0].name == "numpy"
    cuda = [v.name for v in registry.variants("random_walk", "cuda")]
    assert cuda == ["warp_scan", "k1_thread_per_series_b32", "k1_thread_per_series"]
    assert {n for n, v in vs.items() if v.seed} == {"k1_thread_per_series",
                                                     "k1_thread_per_series_b32"}
    for v in vs.values():
        assert v.summary and "Performance:" in v.fn.__doc__
        for p in (WalkProblem(3, 5, np.dtype(np.float32)), WalkProblem(7, 2, np.dtype(np.float64))):
            assert v.bytes_moved(p) == p.m * p.n * p.dtype.itemsize
            assert v.supports(p)
    assert "Performance:" in random_walk.__doc__
    assert not vs["k1_thread_per_series_b32"].supports(WalkProblem(2**37, 1, np.dtype(np.float32)))


def test_defines_are_the_cu_constants() -> None:
    text = wc.SOURCE.read_text()
    for name in wc.DEFINES:
        assert f"#ifndef {name}" in text and f"#error \"{name} is passed" in text
    assert wc.DEFINES["WARPLAB_WALK_K"] == wc.K and wc.K % 4 == 0 and wc.TILE == 32 * wc.K
    for expr in wc.EXPRESSIONS:
        assert expr.split("<")[0] in text


# ------------------------------------------------------------------ warp_scan's plan and order

@pytest.mark.parametrize("m, n", [(1, 1), (1, 8), (1, 9), (100003, 1), (3, 31), (5, 255),
                                  (5, 256), (7, 257), (7, 1023), (1000, 1025), (1048576, 32),
                                  (16, 2**24 + 3), (8192, 8192), (4095, 10**5), (1, 2**30)])
def test_scan_plan(m, n) -> None:
    p = wc.scan_plan(m, n)
    assert 0 <= p.log2w <= 5 and p.width * p.groups == 32
    if n <= wc.TILE:
        assert p.nseg == 1 and p.width * wc.K >= n and (p.width == 1 or p.width * wc.K < 2 * n)
        assert p.ntasks == -(-m // p.groups)
    else:
        assert p.width == 32 and p.seg_len % wc.TILE == 0
        assert (p.nseg - 1) * p.seg_len < n <= p.nseg * p.seg_len
        assert p.ntasks == m * p.nseg
        assert p.nseg == 1 if m >= wc.TASKS else p.ntasks <= 2 * wc.TASKS
        if m < wc.TASKS and n >= wc.TASKS * wc.TILE:
            assert p.ntasks >= wc.TASKS // 2     # few long series still fill the GPU


def _ref_and_emulation(m, n, rows, params):
    f = walk.step_factors(rows[0], rows[1], 0, n, params)
    return np.cumprod(f, axis=1), wc.emulate_warp_scan(f, wc.scan_plan(m, n))


@pytest.mark.parametrize("m, n, rows", [(1, 1, (0, 1)), (3, 31, (0, 3)), (100003, 1, (0, 40)),
                                        (7, 1023, (0, 7)), (1000, 1025, (990, 1000)),
                                        (1048576, 32, (0, 300)), (1, 100003, (0, 1)),
                                        (8192, 8192, (8190, 8192)), (3, 5000, (0, 3))])
def test_scan_order_within_tolerance(m, n, rows) -> None:
    """The kernels' order of multiplications stays within the GPU tests' tolerance of the
    sequential product (the emulation is exact NumPy float64, as the GPU's __dmul_rn)."""
    p = WalkParams(0, 100.0, 1e-3)
    ref, emu = _ref_and_emulation(m, n, rows, p)
    assert (emu[:, 0] == 100.0).all()
    assert np.abs(emu - ref).max() <= wc.scan_rtol(n, np.float64) * np.abs(ref).min()
    r32, e32 = ref.astype(np.float32).astype(np.float64), emu.astype(np.float32)
    assert (np.abs(e32 - r32) <= wc.scan_rtol(n, np.float32) * np.abs(r32)).all()


def test_scan_order_segments_and_packing() -> None:
    """A plan with many segments, and packed short series, give the same values as a plan with
    one segment up to rounding; the packed order of n <= 8 is the sequential one."""
    p = WalkParams(3, 1.0, 0.01)
    f = walk.step_factors(0, 2, 0, 20000, p)
    ref = np.cumprod(f, axis=1)
    for plan in (wc.scan_plan(2, 20000), wc.scan_plan(2, 20000, tasks=1), wc.ScanPlan(5, 3, 7168, 6)):
        emu = wc.emulate_warp_scan(f, plan)
        assert np.abs(emu / ref - 1).max() <= wc.scan_rtol(20000, np.float64)
    short = walk.step_factors(0, 50, 0, 8, p)
    np.testing.assert_array_equal(wc.emulate_warp_scan(short, wc.scan_plan(50, 8)),
                                  np.cumprod(short, axis=1))

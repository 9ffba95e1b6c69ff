"""The one-block form of ``histogram(x, bins, range)``'s plan on the GPU (``pytest -m gpu``):
``hist_even_one_block`` / ``hist_even_fast_one_block`` store every bin and write the edges
into an allocation nobody zeroed (here poisoned with 0xA5 by the allocator), and give NumPy's
results, host data's (a job per call) and the template form's
(``LaunchConfig(one_block=False)``) bit for bit: bins 1, 64 and 256, values on the edges,
outside the range, NaN and infinities, n from 1 to one above the one-block limit, every dtype
the launch record takes."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

import warplab
from warplab.core import fastpath

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)
cupy = pytest.importorskip("cupy")

from warplab.families.histogram import api, numeric_cuda  # noqa: E402

TEMPLATED = numeric_cuda.LaunchConfig(one_block=False)

DTYPES = (np.float32, np.float64, np.float16, np.int16, np.uint16, np.int32, np.int64)
RANGES = ((0, 1), (0.25, 0.75), (-0.0, 1.0), [0, 1.5], (-3, 5))


@contextlib.contextmanager
def _poisoned() -> object:
    """Every CuPy allocation inside arrives filled with 0xA5 bytes."""
    pool = cupy.get_default_memory_pool()

    def alloc(size: int) -> object:
        p = pool.malloc(size)
        p.memset(0xA5, size)
        return p

    with cupy.cuda.using_allocator(alloc):
        yield


def _data(dtype: type, n: int, bins: int, rng: tuple, seed: int) -> np.ndarray:
    """Edges themselves, values just outside the range, random values; NaN and infinities
    for floats."""
    g = np.random.default_rng(seed)
    lo, hi = float(rng[0]), float(rng[1])
    edges = np.histogram(np.zeros(0, dtype), bins, rng)[1].astype(np.float64)
    pool = np.concatenate([edges, [lo - 1, hi + 1, lo - 0.5, hi + 0.5],
                           g.uniform(lo - 0.2, hi + 0.2, 64)])
    if np.dtype(dtype).kind == "f":
        pool = np.concatenate([pool, [np.nan, np.inf, -np.inf]])
    else:
        pool = np.round(pool * 3)
        if np.dtype(dtype).kind == "u":
            pool = np.abs(pool)
    return g.choice(pool, n).astype(dtype)


def _limit(dtype: type) -> int:
    return numeric_cuda.DEFAULT.block * (16 // np.dtype(dtype).itemsize)


@pytest.mark.parametrize("dtype", DTYPES)
def test_one_block_form_same_as_numpy_full_path_and_template(dtype: type) -> None:
    lim = _limit(dtype)
    for n in (1, 31, lim - 1, lim, lim + 1):
        for bins in (1, 64, 256):
            for i, rng in enumerate(RANGES):
                h_x = _data(dtype, n, bins, rng, seed=n * 7 + bins + i)
                x = cupy.asarray(h_x)
                with np.errstate(all="ignore"):
                    want = np.histogram(h_x, bins, rng)
                fastpath.clear()
                with _poisoned():
                    full = warplab.histogram(h_x, bins, rng)  # host data: the job's launches
                    with warplab.record_variants() as ran:
                        got = [a.get() for a in warplab.histogram(x, bins, rng)]
                        templ = [a.get() for a in api.histogram_with(TEMPLATED, x, bins, rng)]
                    assert ran[-1].variant in ("even_fast", "even_private")
                where = (np.dtype(dtype).name, n, bins, rng)
                for h, e in (got, full, templ):
                    assert h.dtype == np.int64 and e.dtype == want[1].dtype, where
                    np.testing.assert_array_equal(h, want[0], err_msg=str(where))
                    np.testing.assert_array_equal(e, want[1], err_msg=str(where))
                    assert np.signbit(e[0]) == np.signbit(want[1][0]), where



@pytest.mark.parametrize("dtype", (np.float32, np.float64, np.int64))
@pytest.mark.parametrize("bins", (8192, 8193, 100_000))
def test_many_bins_through_the_record(dtype: type, bins: int) -> None:
    """Bin counts past the shared accumulators (more than 8,192 four-byte counters: the
    global-atomics layout, or the full path): the results are NumPy's whichever form runs,
    in allocations nobody zeroed."""
    lim = _limit(dtype)
    for n in (1, lim):
        for rng in ((0, 1), (-3, 5)):
            h_x = _data(dtype, n, bins, rng, seed=n + bins)
            x = cupy.asarray(h_x)
            with np.errstate(all="ignore"):
                want = np.histogram(h_x, bins, rng)
            fastpath.clear()
            with _poisoned():
                for _ in range(2):  # cold, then warm through the plan
                    h, e = (a.get() for a in warplab.histogram(x, bins, rng))
                    np.testing.assert_array_equal(h, want[0], err_msg=str((dtype, bins, n)))
                    np.testing.assert_array_equal(e, want[1], err_msg=str((dtype, bins, n)))

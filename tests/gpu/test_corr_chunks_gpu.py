"""GPU tests of corrcoef by row chunks (``families/corr/chunks.py``, what
``warplab.dask.corrcoef``'s workers run): every variant's chunk engines give the single call's
finished blocks bit for bit (``pairwise_direct`` to an ulp: its row sums' order depends on the
rows' count; ``int8_slices`` where the block's rows choose the call's s, as random walks do),
constant and NaN series included, a chunk of one row and chunks of many; where one chunk's
series need more slices than the others, each block takes the s its rows need and meets the
precision's target. ``pytest -m gpu``."""
from __future__ import annotations

import numpy as np
import pytest

import warplab

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)
cupy = pytest.importorskip("cupy")

from itertools import pairwise  # noqa: E402

from warplab.core import registry  # noqa: E402
from warplab.families.corr import chunks  # noqa: E402
from warplab.families.corr.slices import TARGETS  # noqa: E402
from warplab.families.corr.spec import CorrProblem  # noqa: E402
from warplab.families.corr.tiles import finish  # noqa: E402

RNG = np.random.default_rng(41)
SHAPES = {"int8_slices": (700, 4096), "tc_gram": (700, 300), "tiled_smem": (400, 200),
          "pairwise_direct": (300, 100), "fused_small": (60, 64)}


def _chunks(x, cuts):
    return {t: x[a:b] for t, (a, b) in enumerate(pairwise(cuts))}


@pytest.mark.parametrize("variant", sorted(SHAPES))
@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("invalid", [False, True])
def test_chunk_blocks_are_the_single_calls(variant, precision, invalid):
    m, n = SHAPES[variant]
    h = np.cumsum(RNG.normal(size=(m, n)), axis=1).astype(np.float32)
    if invalid:
        h[3] = 2.5      # constant: NaN row and column
        h[m - 2, 7] = np.nan
    x = cupy.asarray(h)
    v = registry.get("corrcoef", variant)
    if not v.supports(CorrProblem(m, n, np.dtype(np.float32), precision, True)):
        pytest.skip(f"{variant} does not take {m} x {n} at {precision} here")
    with np.errstate(invalid="ignore", divide="ignore"):
        whole = v.fn(x, precision)
    cuts = [0, m // 3, m // 3 + 1, m]  # a chunk of one row
    work = chunks.Chunks(v, precision, _chunks(x, cuts))
    for i in range(3):
        for j in range(i, 3):
            got = cupy.asnumpy(work.block(i, j))
            exp = cupy.asnumpy(finish(whole.block(cuts[i], cuts[i + 1], cuts[j], cuts[j + 1]),
                                      cuts[i], cuts[j], whole))
            if variant == "pairwise_direct":
                np.testing.assert_allclose(got, exp, rtol=0, atol=1e-15, err_msg=f"{i}, {j}")
            else:
                np.testing.assert_array_equal(got, exp, err_msg=f"block {i}, {j}")
    if variant == "int8_slices":
        assert {s for (_, s) in work._engines} == {whole.slices}


def test_int8_slices_blocks_take_the_slices_their_rows_need():
    """Chunk 1 holds series the a-priori bound of the nominal s does not cover (spikes):
    its blocks take more slices than chunk 0's own block, each block meets the float64
    target against NumPy, and the blocks of the spiky rows equal the single call's."""
    m, n = 600, 4096
    h = np.cumsum(RNG.normal(size=(m, n)), axis=1)
    h[300:, ::97] += 1e4 * RNG.normal(size=(300, len(range(0, n, 97))))  # spikes
    x = cupy.asarray(h)
    v = registry.get("corrcoef", "int8_slices")
    whole = v.fn(x, "float64")
    work = chunks.Chunks(v, "float64", _chunks(x, [0, 300, 600]))
    exp = np.corrcoef(h)
    for i, j in ((0, 0), (0, 1), (1, 1)):
        got = cupy.asnumpy(work.block(i, j))
        rows, cols = slice(300 * i, 300 * i + 300), slice(300 * j, 300 * j + 300)
        assert np.abs(got - exp[rows, cols]).max() <= TARGETS["float64"] + 1e-12
        if j == 1:
            np.testing.assert_array_equal(got, cupy.asnumpy(finish(
                whole.block(rows.start, rows.stop, cols.start, cols.stop), rows.start,
                cols.start, whole)))
    used = sorted(s for (_, s) in work._engines)
    assert used[0] < used[-1] == whole.slices

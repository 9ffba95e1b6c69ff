"""GPU tests of corrcoef by panels of rows (``families/corr/panels.py``, what
``warplab.dask.corrcoef``'s workers run): every variant's panel engines give the single call's
finished blocks bit for bit, int8_slices with one choice of s from every panel's statistics;
constant and NaN series included, a panel of one row and one of many. ``pytest -m gpu``."""
from __future__ import annotations

import numpy as np
import pytest

import warplab

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)
cupy = pytest.importorskip("cupy")

from warplab.core import registry  # noqa: E402
from warplab.families.corr import panels  # noqa: E402
from warplab.families.corr.spec import CorrProblem  # noqa: E402
from warplab.families.corr.tiles import finish  # noqa: E402

RNG = np.random.default_rng(41)
SHAPES = {"int8_slices": (700, 4096), "tc_gram": (700, 300), "tiled_smem": (400, 200),
          "pairwise_direct": (300, 100), "fused_small": (60, 64)}


@pytest.mark.parametrize("variant", sorted(SHAPES))
@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("invalid", [False, True])
def test_panels_give_the_single_calls_blocks(variant, precision, invalid):
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
    cuts = [0, m // 3, m // 3 + 1, m]  # a panel of one row
    parts = list(zip(cuts, cuts[1:]))
    stats = [panels.statistics(v, x[a:b], precision) for a, b in parts]
    shared = panels.choice(v, [s for s in stats if s is not None], precision, n)
    pans = [panels.Panel(v, x[a:b], precision, shared) for a, b in parts]
    if variant == "int8_slices":
        assert shared.s == whole.slices and shared.all_valid == (not invalid)
    for i, (a, b) in enumerate(parts):
        for j, (c, d) in enumerate(parts[i:], start=i):
            got = panels.block(pans[i], None if i == j else pans[j])
            exp = finish(whole.block(a, b, c, d), a, c, whole)
            np.testing.assert_array_equal(cupy.asnumpy(got), cupy.asnumpy(exp),
                                          err_msg=f"block {i}, {j}")

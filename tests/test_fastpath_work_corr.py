"""Work counters of a small ``corrcoef`` on device input (no GPU; ``fake_cupy``, the corr.cu
kernels and the Gram kernel replaced by NumPy models): with ``variant="tc_gram"`` a warm 8 x
64 call is three allocations (normalised rows, validity flags, the Gram matrix), three
launches (normalise, Gram, finish) and one read back of the M validity flags through the
pinned buffer (one copy, one synchronisation): no free-memory query (the result is tiny), no
CuPy elementwise or reduction kernels (clip, arange, index scatters, ``valid.all()``), no
pageable read, no second shared-memory opt-in. Results and NumPy's warning as before (NaN rows
and columns for a constant series), whatever the block's layout and offset. The default call
(``fused_small``) is ``test_fastpath_work_corr_small.py``'s."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import warplab
from fake_cupy import WORK, Dev, count_launch, dev, install
from test_corr_emulated import MODELS
from warplab.core import fastpath, registry
from warplab.families.corr import cuda, gram, gram_cuda, tiles


class _GramKernel:
    """gram_mma on the host: C = A B^T in float64 (mode 0)."""

    def __init__(self) -> None:
        self.opt_ins = 0

    @property
    def max_dynamic_shared_size_bytes(self) -> int:
        return 0

    @max_dynamic_shared_size_bytes.setter
    def max_dynamic_shared_size_bytes(self, v: int) -> None:
        self.opt_ins += 1

    def __call__(self, grid: tuple, block: tuple, args: tuple, shared_mem: int = 0) -> None:
        count_launch()
        a, b, c = (np.asarray(v).view(np.ndarray) for v in args[:3])
        c[...] = a.astype(np.float64) @ b.astype(np.float64).T


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch):
    install(monkeypatch)
    kernels: dict[str, object] = {}

    def counted(expr: str) -> object:
        model = MODELS[expr.split("<")[0]]
        host = lambda a: a.view(np.ndarray) if isinstance(a, Dev) else a  # noqa: E731
        return lambda grid, block, args: (count_launch(),
                                          model(grid, block, tuple(map(host, args))))

    monkeypatch.setattr(cuda, "_kernel", counted)
    monkeypatch.setattr(cuda, "gram_ok", lambda: (True, ""))
    monkeypatch.setattr(gram, "cuda_available", lambda: True)
    monkeypatch.setattr(gram_cuda, "get_kernel", lambda src, expr, options=():
                        kernels.setdefault(expr, _GramKernel()))
    monkeypatch.setattr(registry, "cuda_available", lambda: True)
    gram_cuda._limits.cache_clear()
    fastpath.clear()
    yield kernels
    fastpath.clear()
    gram_cuda._limits.cache_clear()


def _series(m: int = 8, n: int = 64, const: tuple[int, ...] = ()) -> Dev:
    x = np.cumsum(np.random.default_rng(m).standard_normal((m, n)), axis=1).astype(np.float32)
    for i in const:
        x[i] = np.float32(0.25)
    return dev(x)


def _numpy(x: Dev) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.corrcoef(np.asarray(x).astype(np.float64))


def test_warm_corrcoef_work(gpu) -> None:
    x = _series()
    first = warplab.corrcoef(x, variant="tc_gram")
    WORK.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: every series varies
        got = warplab.corrcoef(x, variant="tc_gram")
    assert dict(WORK) == {"empty": 3, "launch": 3, "d2h": 1, "sync": 1}
    assert sum(k.opt_ins for k in gpu.values()) == 1  # the first call's only
    for r in (first, got):
        assert type(r) is Dev and r.dtype == np.float64 and r.shape == (8, 8)
        np.testing.assert_allclose(r, _numpy(x), rtol=0, atol=1e-12)
        assert (np.diag(r) == 1).all() and np.abs(r).max() <= 1


def test_constant_series_nan_and_one_warning(gpu) -> None:
    x = _series(const=(1, 6))
    with pytest.warns(RuntimeWarning, match="invalid value encountered in divide") as rec:
        got = np.asarray(warplab.corrcoef(x, variant="tc_gram"))
    assert len(rec) == 1 and rec[0].filename == __file__  # stacklevel: the caller's line
    want = _numpy(x)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(got[1]).all() and np.isnan(got[:, 6]).all()
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=0, atol=1e-12)
    assert got[np.isnan(got)].view(np.uint64).tolist() == [0x7FF8000000000000] * 28


def test_memory_query_only_beyond_tiny(gpu, monkeypatch) -> None:
    warplab.corrcoef(_series(), variant="tc_gram")
    assert WORK["memGetInfo"] == 0
    monkeypatch.setattr(tiles, "TINY_BYTES", 0)
    WORK.clear()
    warplab.corrcoef(_series(), variant="tc_gram")
    assert WORK["memGetInfo"] == 1


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", ["c", "fortran", "view"])
def test_finish_block_is_the_numpy_finish(gpu, dtype: str, layout: str) -> None:
    rng = np.random.default_rng(1)
    raw = (rng.standard_normal((9, 11)) * 1.2).astype(dtype)
    raw[2, 3], raw[4, 4] = np.nan, 7.0
    valid = np.ones(20, bool)
    valid[[5, 14]] = False
    r0, c0 = 3, 5
    eng_np = type("E", (), {"xp": np, "valid": valid, "all_valid": False})()
    want = tiles.finish(raw.copy(), r0, c0, eng_np)  # the NumPy finish of the cpu engine
    b = dev(np.asfortranarray(raw) if layout == "fortran" else raw)
    if layout == "view":
        b = dev(np.pad(raw, ((0, 0), (0, 3))))[:, :11]
    eng = cuda._Engine(20, dev(valid))
    WORK.clear()
    got = tiles.finish(b, r0, c0, eng)
    assert dict(WORK) == {"launch": 1}  # no CuPy operation, no synchronisation
    assert got is b and got.dtype == want.dtype  # in place
    np.testing.assert_array_equal(got.view(np.ndarray), want)

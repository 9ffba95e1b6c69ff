"""The small-call variants on the GPU (``pytest -m gpu``): ``corrcoef``'s ``fused_small``
(one launch, the validity word in pinned memory) against NumPy and the ``tc_gram`` and
``tiled_smem`` variants around its thresholds, for float32/float64, layouts,
constant, NaN and inf series, the one warning, threads and a non-default stream;
``copy_batched``'s ``args_table`` (the address table as the launch parameter) against the
sources' bytes for sizes and alignments at its limits, and against the ring path."""
from __future__ import annotations

import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import warplab
from warplab.core import fastpath

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)
cupy = pytest.importorskip("cupy")
from warplab.families.corr import small_cuda  # noqa: E402
from warplab.families.memcpy import api as memcpy_api  # noqa: E402
from warplab.families.memcpy import table_cuda  # noqa: E402
from warplab.families.memcpy.plan import CopyConfig  # noqa: E402


def _data(m: int, n: int, dtype, bad: bool, seed: int = 0) -> np.ndarray:
    x = np.cumsum(np.random.default_rng(seed + m * n).standard_normal((m, n)), axis=1)
    x = x.astype(dtype)
    if bad and m >= 4:
        x[m // 2] = 0.25
        x[1, n // 2] = np.nan
        x[m - 1, 0] = np.inf
    return x


def _numpy(h: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):  # NumPy's own warning for the invalid series
        return np.corrcoef(h.astype(np.float64))


def _same(got: np.ndarray, want: np.ndarray, tol: float) -> None:
    """NaN where ``want`` has it (NumPy's quiet NaN bits), else within ``tol``; float64."""
    assert got.dtype == np.float64 and got.shape == want.shape
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    if ok.any():
        assert np.abs(got[ok] - want[ok]).max() <= tol
    assert (got[np.isnan(got)].view(np.uint64) == 0x7FF8000000000000).all()


SHAPES = [(2, 2), (3, 5), (8, 64), (31, 33), (64, 64), (65, 63), (8, 512), (8, 513),
          (2, 2048), (2, 2049), (40, 102), (40, 103)]


@pytest.mark.parametrize("bad", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,n", SHAPES)
def test_corrcoef_small_against_numpy_and_full_path(m: int, n: int, dtype, bad: bool) -> None:
    h = _data(m, n, dtype, bad)
    x = cupy.asarray(h)
    small = small_cuda.fits(m, n)
    invalid = bad and m >= 4
    for _ in range(3):  # cold plan, warm plan, warm again
        with warnings.catch_warnings(record=True) as w, warplab.record_variants() as ran:
            warnings.simplefilter("always")
            got = warplab.corrcoef(x)
        assert ("fused_small" in [r.variant for r in ran]) == small
        assert len([v for v in w if "invalid value" in str(v.message)]) == int(invalid)
        _same(got.get(), _numpy(h), 1e-12)
        g = got.get()
        assert np.array_equal(np.nan_to_num(g), np.nan_to_num(g.T))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for variant in ("tc_gram", "tiled_smem"):
            full = warplab.corrcoef(x, variant=variant).get()
            _same(got.get(), full, 1e-12)
        fastpath.clear()  # a cold plan: the same launch
        _same(warplab.corrcoef(x).get(), got.get(), 0.0)


@pytest.mark.parametrize("layout", ["fortran", "padded", "reversed", "rowvar"])
def test_corrcoef_small_layouts(layout: str) -> None:
    h = _data(9, 40, np.float32, True)
    base = cupy.asarray(h)
    x = {"fortran": cupy.asfortranarray(base),
         "padded": cupy.pad(base, ((0, 0), (0, 7)))[:, :40],
         "reversed": base[::-1].copy()[::-1],
         "rowvar": cupy.ascontiguousarray(base.T)}[layout]
    kw = {"rowvar": False} if layout == "rowvar" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            _same(warplab.corrcoef(x, **kw).get(), _numpy(h), 1e-12)


def test_corrcoef_small_threads_and_streams() -> None:
    """Threads on their own streams: right results, and one warning per input with an invalid
    series. ``warnings.catch_warnings`` is process-wide (not thread-safe), so one block in this
    thread records what every thread warns, and the count is checked."""
    hs = [_data(8, 64, np.float32, i % 2 == 1, seed=i) for i in range(8)]

    def one(i: int) -> np.ndarray:
        with cupy.cuda.Stream(non_blocking=True):
            return warplab.corrcoef(cupy.asarray(hs[i])).get()

    for _ in range(3):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with ThreadPoolExecutor(4) as ex:
                out = list(ex.map(one, range(8)))
        assert len(w) == sum(i % 2 == 1 for i in range(8))
        for i, r in enumerate(out):
            _same(r, _numpy(hs[i]), 1e-12)


def _copy_case(sizes: list[int], src_off: int, dst_off: int):
    rng = np.random.default_rng(len(sizes) + src_off)
    pool = cupy.asarray(rng.integers(0, 256, sum(sizes) + 64 * len(sizes) + 64, dtype=np.uint8))
    dpool = cupy.full(pool.size, 0xA5, np.uint8)
    srcs, dsts, at = [], [], 0
    for i, n in enumerate(sizes):
        srcs.append(pool[at + src_off:at + src_off + n])
        dsts.append(dpool[at + (dst_off + i) % 17:at + (dst_off + i) % 17 + n])
        at += n + 64
    return srcs, dsts, dpool


COPY_SIZES = [[1024] * 8, [0, 1, 3, 15, 16, 17, 31, 33, 255, 256, 4097],
              [table_cuda.MAX_BYTES] * 3 + [table_cuda.MAX_BYTES - 1],
              [5] * table_cuda.MAX_BUFFERS, [5] * (table_cuda.MAX_BUFFERS + 1),
              [table_cuda.MAX_BYTES + 1, 7], [0, 0]]


@pytest.mark.parametrize("src_off,dst_off", [(0, 0), (1, 0), (4, 8), (8, 3), (16, 16)])
@pytest.mark.parametrize("sizes", COPY_SIZES, ids=lambda s: f"{len(s)}x{max(s)}")
def test_copy_batched_table(sizes: list[int], src_off: int, dst_off: int) -> None:
    table = table_cuda.fits(len(sizes), max(sizes))
    for ring in (False, True):
        srcs, dsts, dpool = _copy_case(sizes, src_off, dst_off)
        before = dpool.get()
        with warplab.record_variants() as ran:
            if ring:  # the pinned ring and the registry's variant at every size
                memcpy_api.copy_pairs(srcs, dsts, None, None, CopyConfig(table_buffers=0))
            else:
                warplab.copy_batched(srcs, dsts)
        assert ([r.variant for r in ran] == ["args_table"]) == (table and not ring)
        for s, d in zip(srcs, dsts):
            assert (s == d).all()
        # nothing outside the destinations was written
        after = dpool.get()
        mask = np.ones(after.size, bool)
        for d in dsts:
            off = d.data.ptr - dpool.data.ptr
            mask[off:off + d.nbytes] = False
        assert np.array_equal(after[mask], before[mask])


def test_copy_batched_table_overlap_error_through_warm_path() -> None:
    buf = cupy.zeros(4096, np.uint8)
    warplab.copy_batched([buf[:64]], [buf[1024:1088]])
    with pytest.raises(ValueError, match="overlaps"):
        warplab.copy_batched([buf[:1024]], [buf[512:1536]])


def _filled(count: int, n: int) -> tuple[list, list]:
    return ([cupy.empty(n, np.uint8) for _ in range(count)],
            [cupy.full(n, 0xA5, np.uint8) for _ in range(count)])


def _stream_rounds(srcs: list, dsts: list, rounds: int) -> None:
    """On a new non-blocking stream: each round writes the sources (a fill kernel), copies,
    and stacks the destinations (a copy after the copy), all queued; then checks every
    round's bytes."""
    stream = cupy.cuda.Stream(non_blocking=True)
    outs = []
    with stream:
        for k in range(rounds):
            for i, s in enumerate(srcs):
                s.fill((16 * k + i) % 256)
            with warplab.record_variants() as ran:
                warplab.copy_batched(srcs, dsts)
            assert [r.variant for r in ran] == ["args_table"]
            outs.append(cupy.stack(dsts))
    stream.synchronize()
    for k, out in enumerate(outs):
        want = (16 * k + np.arange(len(srcs))[:, None]) % 256
        assert (out.get() == np.broadcast_to(want, out.shape)).all(), k


def test_copy_batched_table_launched_by_the_reader_in_stream_order() -> None:
    """Warm few-buffer copies are the C reader's own launch where launches go from C
    (``table_cuda.IN_READER``): on a non-default stream each runs after the stream's earlier
    work and before its later work; from several new host threads at once; after the plans
    are cleared and while they are bypassed (the planned launch then)."""
    from warplab.core import launch

    srcs, dsts = _filled(8, 1000)
    warplab.copy_batched(srcs, dsts)  # plans, and prepares the reader's launch
    c = launch.function() is not None
    assert (table_cuda.IN_READER.get(cupy.cuda.runtime.getDevice()) is not None) == c
    _stream_rounds(srcs, dsts, 6)

    def thread(i: int) -> None:
        _stream_rounds(*_filled(1 + i, 4096 + i), 4)

    with ThreadPoolExecutor(4) as ex:
        list(ex.map(thread, range(8)))
    fastpath.clear()
    _stream_rounds(srcs, dsts, 2)
    with fastpath.bypassed():
        _stream_rounds(srcs, dsts, 2)

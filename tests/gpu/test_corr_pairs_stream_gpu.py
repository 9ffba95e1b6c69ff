"""GPU tests of corr_pairs' strip stream and memory plans: ``stream_above`` on every cuda
engine (strips of 1 row to the default budget, several parts per strip) in ``(i, j)`` order
with the pairs of a float64 NumPy reference and of the square tiles' way (the same engine,
tiles then one sort); device input kept on the GPU, ``out="host"``, ``out=<path>``; the
device sink's error; corrcoef tiled into a device result when the whole-matrix working set
does not fit; real out-of-memory errors (CuPy's pool, Thrust's ``std::bad_alloc``) converted;
and the 400,000 x 512 random walks that once failed (``large``)."""
from __future__ import annotations

import contextlib
import functools
import warnings

import numpy as np
import pytest
from conftest import ran_of

import warplab
from warplab.core import registry
from warplab.core.device import device_errors
from warplab.core.errors import DeviceOutOfMemoryError
from warplab.families.corr import pairs, sinks, tiles
from warplab.families.corr.api import MIN_DEVICE_TILE, TILE_ELEMENT_BYTES
from warplab.families.corr.cuda import gram_ok, slices_ok
from warplab.families.corr.spec import CorrProblem, error_bound
from warplab.families.corr.strips import PAIR_BYTES, strip_bytes_for, strips_above
from warplab.families.corr.tiles import finish, upper_tiles
from warplab.lab.campaigns.corr.bench import clustered

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)
cupy = pytest.importorskip("cupy")

VARIANTS = ("tc_gram", "tiled_smem", "pairwise_direct", "int8_slices")
M, N, THR = 1500, 64, 0.8


def _need(variant: str) -> None:
    ok, why = {"tc_gram": gram_ok, "int8_slices": slices_ok}.get(variant, lambda: (True, ""))()
    if not ok:
        pytest.skip(why)


@functools.lru_cache(maxsize=1)
def _data() -> tuple[np.ndarray, np.ndarray]:
    """Clustered series (strong pairs inside each cluster of 200), a constant one and one
    holding NaN; their float64 coefficients."""
    h = cupy.asnumpy(clustered(M, N, "cuda"))
    h[5] = np.float32(2.5)
    h[700, 3] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return h, np.corrcoef(h.astype(np.float64))


def _engine(variant: str, x):
    v = registry.choose("corrcoef", "cuda", CorrProblem(M, N, np.dtype(np.float32), "float64",
                                                        True), variant)
    return v.fn(x, "float64")


def _tiles_way(eng, thr: float, side: int) -> tuple[np.ndarray, ...]:
    """The pairs as square tiles and one global sort find them (the earlier way)."""
    found = []
    for r0, r1, c0, c1 in upper_tiles(eng.m, side):
        b = finish(eng.block(r0, r1, c0, c1), r0, c0, eng)
        hit = cupy.abs(b) >= thr
        if r0 == c0:
            hit = cupy.triu(hit, 1)
        ii, jj = cupy.nonzero(hit)
        found.append((ii + r0, jj + c0, b[ii, jj].astype(np.float64)))
    i, j, r = (cupy.concatenate(f) for f in zip(*found))
    order = cupy.argsort(i * eng.m + j)
    return tuple(cupy.asnumpy(a[order]) for a in (i, j, r))


def _check_vs_numpy(i: np.ndarray, j: np.ndarray, r: np.ndarray, ref: np.ndarray,
                    bound: float) -> None:
    keys = i * M + j
    assert (np.diff(keys) > 0).all() and (i < j).all()  # (i, j) order, no duplicates
    a = np.abs(np.triu(np.nan_to_num(ref, nan=0.0), 1))
    sure = set(np.flatnonzero(a >= THR + bound).tolist())
    maybe = set(np.flatnonzero(a >= THR - bound).tolist())
    assert sure <= set(keys.tolist()) <= maybe
    np.testing.assert_allclose(r, ref[i, j], atol=bound)
    assert not np.isin(i, [5, 700]).any() and not np.isin(j, [5, 700]).any()


@pytest.mark.parametrize("shape", ["rows1", "rows7", "capped", "default"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_stream_order_and_counts(variant: str, shape: str,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _need(variant)
    h, ref = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eng = _engine(variant, cupy.asarray(h))
    budget = {"rows1": 2 * PAIR_BYTES * M, "rows7": 2 * PAIR_BYTES * M * 7}.get(shape)
    if shape == "capped":  # strips of 200 rows, parts of 200 columns: the scatter
        monkeypatch.setattr(tiles, "TILE_CAP", 200)
    got = list(strips_above(eng, THR, 0, M, budget or strip_bytes_for(eng)))
    heights = [b - a for a, b, *_ in got]
    if shape.startswith("rows"):  # the first strip as forced, taller ones as columns fall
        assert heights[0] == int(shape[4:]) and heights == sorted(heights[:-1]) + heights[-1:]
    assert [s[0] for s in got[1:]] == [s[1] for s in got[:-1]] and got[-1][1] == M
    for a, b, i, j, r in got:
        assert all(isinstance(f, cupy.ndarray) for f in (i, j, r))
        assert i.dtype == j.dtype == np.int64 and r.dtype == np.float64
        assert bool(((i >= a) & (i < b)).all()) if i.size else True
    i, j, r = (cupy.asnumpy(cupy.concatenate([s[f] for s in got])) for f in (2, 3, 4))
    _check_vs_numpy(i, j, r, ref, error_bound(variant, "float64", N))
    ti, tj, tr = _tiles_way(eng, THR, 512)
    np.testing.assert_array_equal(i, ti)  # the same pairs as the earlier way
    np.testing.assert_array_equal(j, tj)
    np.testing.assert_allclose(r, tr, atol=1e-12)


def test_device_host_and_file_results_agree(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    h, ref = _data()
    x = cupy.asarray(h)
    monkeypatch.setattr(pairs, "strip_bytes_for", lambda eng: 2 * PAIR_BYTES * M * 50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dev = warplab.corr_pairs(x, threshold=THR)
        host = warplab.corr_pairs(x, threshold=THR, out="host")
        filed = warplab.corr_pairs(x, threshold=THR, out=tmp_path / "p.npy")
        from_host = warplab.corr_pairs(h, threshold=THR)
    assert all(isinstance(a, cupy.ndarray) for a in dev)
    assert all(type(a) is np.ndarray for a in host) and type(from_host.i) is np.ndarray
    want = [cupy.asnumpy(a) for a in dev]
    _check_vs_numpy(*want, ref, error_bound(ran_of("corrcoef"), "float64", N))
    rec = np.load(tmp_path / "p.npy", mmap_mode="r")
    for f, w, a, b, c in zip("ijr", want, host, filed, from_host):
        np.testing.assert_array_equal(a, w)
        np.testing.assert_array_equal(b, w)
        np.testing.assert_array_equal(rec[f], w)
        np.testing.assert_array_equal(c, w)
        assert isinstance(b, np.memmap) and not b.flags.writeable


def test_device_sink_refuses_with_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    h, _ = _data()
    budget = 2 * PAIR_BYTES * M * 100
    monkeypatch.setattr(pairs, "strip_bytes_for", lambda eng: budget)
    monkeypatch.setattr(tiles, "free_device_bytes", lambda: budget + 20_000 * sinks.HELD_BYTES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(DeviceOutOfMemoryError) as info:
            warplab.corr_pairs(cupy.asarray(h), threshold=0.0)
        host = warplab.corr_pairs(cupy.asarray(h), threshold=0.0, out="host")
    msg = str(info.value)
    total = (M - 2) * (M - 3) // 2  # every pair of valid series
    assert "pairs found so far" in msg and "out='host'" in msg and "top_k" in msg
    assert f"of the {M * (M - 1) // 2:,} pairs" in msg
    assert host.i.size == total


def test_corrcoef_tiled_into_a_device_result(monkeypatch: pytest.MonkeyPatch) -> None:
    m, n = 3000, 64
    h = clustered(m, n, "cuda")
    want = np.corrcoef(cupy.asnumpy(h).astype(np.float64))
    least = m * m * 8 + m * n * 8 + TILE_ELEMENT_BYTES * MIN_DEVICE_TILE ** 2
    free = least + (6 << 20)  # the whole matrix (288 MB of temporaries) does not fit
    monkeypatch.setattr(tiles, "free_device_bytes", lambda: free)
    sides = []
    fill = tiles.fill_tiled

    def recording(eng, out, t):
        sides.append((type(out), t))
        return fill(eng, out, t)

    monkeypatch.setattr(tiles, "fill_tiled", recording)
    got = warplab.corrcoef(h)
    assert isinstance(got, cupy.ndarray) and got.shape == (m, m)
    assert len(sides) == 1 and issubclass(sides[0][0], cupy.ndarray)
    assert MIN_DEVICE_TILE <= sides[0][1] < m
    err = float(np.abs(cupy.asnumpy(got) - want).max())
    assert err <= 1e-9, err
    monkeypatch.setattr(tiles, "free_device_bytes", lambda: least - 1)
    with pytest.raises(ValueError, match="even tile by tile") as info:
        warplab.corrcoef(h)
    assert f"needs {least / 1e6:.1f} MB" in str(info.value)


@device_errors
def corr_pairs_like(fn):  # a public call's wrapper around real CuPy work
    return fn()


def test_real_cupy_oom_converted() -> None:
    _, total = cupy.cuda.runtime.memGetInfo()
    with pytest.raises(DeviceOutOfMemoryError, match="in warplab.corr_pairs_like .* asked"):
        corr_pairs_like(lambda: cupy.empty(2 * total, np.uint8))


@contextlib.contextmanager
def _fresh_pool():
    """A new CuPy memory pool in use inside the block (a limit on it counts only what the
    block allocates), the default one again after it."""
    pool = cupy.cuda.MemoryPool()
    cupy.cuda.set_allocator(pool.malloc)
    try:
        yield pool
    finally:
        cupy.cuda.set_allocator(cupy.get_default_memory_pool().malloc)
        pool.set_limit(size=0)


def test_real_thrust_oom_converted() -> None:
    """CuPy's argsort runs Thrust, whose temporary storage comes from CuPy's pool: a pool
    limit just above the keys and the result makes Thrust fail with std::bad_alloc."""
    seen = []
    with _fresh_pool() as pool:
        x = cupy.random.random(1 << 24)
        cupy.cuda.Device().synchronize()
        base = pool.used_bytes()
        for extra in (160, 256, 384, 512, 768):
            pool.set_limit(size=base + (extra << 20))
            try:
                corr_pairs_like(lambda: cupy.argsort(x))
                cupy.cuda.Device().synchronize()
                seen.append("ok")
            except DeviceOutOfMemoryError as e:
                seen.append("thrust" if "Thrust" in str(e) else "cupy")
                assert isinstance(e.__cause__, MemoryError)
                assert "free GPU memory now" in str(e) or "asked" in str(e)
                assert str(e).startswith("GPU out of memory in warplab.corr_pairs_like")
            finally:
                pool.set_limit(size=0)
                pool.free_all_blocks()
        del x
    assert "thrust" in seen, seen


def test_public_call_oom_names_it() -> None:
    h, _ = _data()
    with _fresh_pool() as pool:
        x = cupy.asarray(h)
        cupy.cuda.Device().synchronize()
        pool.set_limit(size=pool.used_bytes() + (1 << 20))
        with pytest.raises(DeviceOutOfMemoryError,
                           match=r"^GPU out of memory in warplab\.corr_pairs"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                warplab.corr_pairs(x, threshold=THR)
        del x


@pytest.mark.large
def test_400k_random_walks_threshold_09() -> None:
    """400,000 float32 random walks of 512 values, threshold 0.9: once a thrust bad_alloc
    (every pair found concatenated and sorted at once); now strips, kept on the GPU."""
    x = warplab.random_walk(400_000, 512, seed=0)
    res = warplab.corr_pairs(x, threshold=0.9)
    n = int(res.i.size)
    assert n > 0 and isinstance(res.i, cupy.ndarray)
    step = max(1, n // (1 << 24))  # order on an evenly spaced sample and on the first block
    keys = res.i[::step] * 400_000 + res.j[::step]
    assert bool((cupy.diff(keys) > 0).all())
    head = res.i[: 1 << 24] * 400_000 + res.j[: 1 << 24]
    assert bool((cupy.diff(head) > 0).all())
    assert bool((cupy.abs(res.r[::step]) >= 0.9).all())

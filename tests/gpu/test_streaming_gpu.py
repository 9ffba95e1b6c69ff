"""GPU tests of streaming (``core/streaming.py``): host arrays, pinned arrays and files through
the pinned ring with chunks forced small, every family hook against its one-shot result, the
error paths (pinned staging does not grow), and a ``large`` stream of more than the GPU's free
memory. Run with ``pytest -m gpu`` (and ``-m large``) on the GPU machine."""
from __future__ import annotations

import os

import numpy as np
import pytest

import warplab
from warplab.core import staging, streaming
from warplab.core.sources import open_source

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)
cupy = pytest.importorskip("cupy")
cupyx = pytest.importorskip("cupyx")

CHUNKS = ("4096", "65536", "1000003")


@pytest.fixture(params=CHUNKS)
def small_chunks(request, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setenv("WARPLAB_STREAM_MIN", "0")
    monkeypatch.setenv("WARPLAB_STREAM_CHUNK", request.param)
    return int(request.param)


def _oneshot(monkeypatch: pytest.MonkeyPatch, fn):
    """``fn()`` with streaming off (the threshold above any test input)."""
    with monkeypatch.context() as m:
        m.setenv("WARPLAB_STREAM_MIN", str(1 << 40))
        return fn()


def _bytes(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 256, n, dtype=np.uint8) ** 2 % 251).astype(np.uint8)


@pytest.mark.parametrize("n", [1, 4095, 4096, 4097, 65535, 65537, 3 * 65536, (1 << 20) + 3])
@pytest.mark.parametrize("host", ["stage", "register", "pinned"])
def test_stream_chunks_reach_the_device_in_order(n, host, small_chunks) -> None:
    a = np.arange(n, dtype=np.int32) * 3 - 7
    if host == "pinned":
        p = cupyx.empty_pinned(a.shape, a.dtype)
        p[...] = a
        a = p
    with streaming.collect() as stats:
        got = streaming.stream(a, lambda d, s: (s, d.copy()),
                               lambda parts: cupy.concatenate([p[1] for p in parts]).get(),
                               backend="cuda", host="stage" if host == "pinned" else host)
    np.testing.assert_array_equal(got, a)
    want = {"stage": "stage", "register": "register", "pinned": "pinned"}[host]
    assert stats[-1]["host"] == want
    assert stats[-1]["chunks"] == -(-n * 4 // max(4, small_chunks // 4 * 4))


@pytest.mark.parametrize("n", [4095, 4096, 4097, (1 << 20) + 3, 5 << 20])
@pytest.mark.parametrize("bins", ["bytes", "ascii128", "letters"])
def test_byte_histogram_host_and_file(n, bins, small_chunks, tmp_path, monkeypatch) -> None:
    h = _bytes(n, n)
    want = warplab.byte_histogram(h, bins, device="cpu")
    np.testing.assert_array_equal(warplab.byte_histogram(h, bins), want)
    p = tmp_path / "d.bin"
    p.write_bytes(h.tobytes())
    np.testing.assert_array_equal(warplab.byte_histogram(p, bins), want)
    half = n // 2
    q = tmp_path / "e.bin"
    q.write_bytes(h[half:].tobytes())
    p.write_bytes(h[:half].tobytes())
    np.testing.assert_array_equal(warplab.byte_histogram([p, q], bins), want)
    with open(q, "rb") as fh:
        np.testing.assert_array_equal(warplab.byte_histogram(fh, bins),
                                      warplab.byte_histogram(h[half:], bins, device="cpu"))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "uint8"])
@pytest.mark.parametrize("rng_", [(-2.0, 3.0), None])
def test_numeric_histogram_and_bincount(dtype, rng_, small_chunks, monkeypatch) -> None:
    x = np.random.default_rng(5).normal(0, 1.5, 300_001)
    if dtype[0] in "iu":
        x = np.abs(x * 100) % 120 if dtype == "uint8" else x * 100
    x = x.astype(dtype)
    got = warplab.histogram(x, 37, rng_)
    want = _oneshot(monkeypatch, lambda: warplab.histogram(x, 37, rng_))
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[0], np.histogram(x, 37, rng_)[0])
    u = _bytes(300_001)
    np.testing.assert_array_equal(warplab.bincount(u, minlength=300), np.bincount(u, minlength=300))


OPS = ("sum", "mean", "min", "max", "var", "std")


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8", "float16"])
@pytest.mark.parametrize("op", OPS)
def test_whole_reductions(op, dtype, small_chunks, monkeypatch) -> None:
    gen = np.random.default_rng(7)
    x = gen.normal(3, 2, 200_003) * (1 if dtype.startswith("float") else 50)
    x = (np.abs(x) if dtype == "uint8" else x).astype(dtype)
    got = getattr(warplab, op)(x)
    want = _oneshot(monkeypatch, lambda: getattr(warplab, op)(x))
    assert np.dtype(type(got)) == np.dtype(type(want))
    if op in ("min", "max") or (op == "sum" and dtype[0] in "iu"):
        assert got == want
    else:
        tol = {"float16": 1e-3, "float32": 1e-5}.get(dtype, 1e-10)
        np.testing.assert_allclose(float(got), float(want), rtol=tol)
    if op in ("var", "std"):
        np.testing.assert_allclose(float(getattr(warplab, op)(x, ddof=1)),
                                   float(getattr(np, op)(x.astype(np.float64), ddof=1)),
                                   rtol=1e-3 if dtype == "float16" else 1e-5)


@pytest.mark.parametrize("keepdims", [False, True])
def test_mean_of_large_integers_does_not_wrap(keepdims, small_chunks, monkeypatch) -> None:
    """NumPy accumulates an integer mean in float64; int64 partial sums would wrap here."""
    x = np.full(200_003, 2 ** 61, np.int64)
    got = warplab.mean(x, keepdims=keepdims)
    want = np.mean(x, keepdims=keepdims)
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-12)


@pytest.mark.parametrize("shape,axis", [((301, 777), 1), ((301, 777), -1), ((33, 21, 50), (1, 2)),
                                        ((33, 21, 50), 2), ((1001, 3), 1)])
@pytest.mark.parametrize("op", OPS)
def test_axis_reductions_by_rows(shape, axis, op, small_chunks, monkeypatch) -> None:
    x = np.random.default_rng(9).normal(1, 3, shape).astype(np.float32)
    got = getattr(warplab, op)(x, axis=axis)
    want = _oneshot(monkeypatch, lambda: getattr(warplab, op)(x, axis=axis))
    assert got.shape == want.shape and got.dtype == want.dtype
    if op in ("min", "max"):
        np.testing.assert_array_equal(got, want)
    else:  # the same kernel per row, but its split over blocks depends on the row count
        np.testing.assert_allclose(got, want, rtol=1e-6)
    kd = getattr(warplab, op)(x, axis=axis, keepdims=True)
    assert kd.shape == getattr(np, op)(x, axis=axis, keepdims=True).shape


def test_series_stats_by_rows(small_chunks, monkeypatch) -> None:
    x = np.random.default_rng(11).normal(0, 1, (513, 1000)).astype(np.float32)
    got = warplab.series_stats(x)
    want = _oneshot(monkeypatch, lambda: warplab.series_stats(x))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype == np.float32
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_non_contiguous_host_array(small_chunks, monkeypatch) -> None:
    base = _bytes(3 << 20).reshape(-1, 1024)
    for a in (base[:, ::2], base[::3]):
        np.testing.assert_array_equal(
            streaming.stream(a, lambda d, s: d.copy(),
                             lambda parts: cupy.concatenate(parts).get(), backend="cuda"),
            a.reshape(-1))


def test_failing_calls_release_pinned_staging(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("WARPLAB_STREAM_CHUNK", "65536")
    pool = staging.staging_pool("cuda")
    h = _bytes(1 << 20)
    streaming.stream(h, lambda d, s: None, lambda p: None, backend="cuda")
    before = pool.allocated_bytes

    def boom(d, start):
        if start >= 5 * 65536:
            raise RuntimeError("kernel failed")

    for _ in range(30):
        with pytest.raises(RuntimeError, match="kernel failed"):
            streaming.stream(h, boom, lambda p: None, backend="cuda")
        assert pool.in_use == 0
    assert pool.allocated_bytes == before
    p = tmp_path / "shrinks"
    p.write_bytes(bytes(1 << 20))
    src = open_source(p)
    os.truncate(p, 1000)
    try:
        with pytest.raises(OSError, match="shrank"):
            streaming.stream(src, lambda d, s: None, lambda p: None, backend="cuda")
    finally:
        src.close()
    assert pool.in_use == 0 and pool.allocated_bytes == before


@pytest.mark.large
def test_stream_more_than_the_gpu_holds(tmp_path) -> None:
    """A sparse file larger than the GPU's free memory, a few marked bytes in it."""
    free = cupy.cuda.runtime.memGetInfo()[0]
    size = free + (1 << 30)
    p = tmp_path / "huge"
    marks = {0: 1, 123_456_789: 2, size // 2: 3, size - 1: 4}
    with open(p, "wb") as fh:
        fh.truncate(size)
        for off, val in marks.items():
            fh.seek(off)
            fh.write(bytes([val]))
    counts = warplab.byte_histogram(p)
    assert counts[1:5].tolist() == [1, 1, 1, 1] and counts[0] == size - 4
    assert int(counts.sum()) == size


@pytest.mark.parametrize("n", [4095, 4097, (1 << 20) + 3, 5 << 20])
def test_non_temporal_staging_copies_every_byte(n, small_chunks, monkeypatch) -> None:
    """Every staged piece through ``ntcopy`` (its size floor lowered to 0), where it is built."""
    from warplab.core import ntcopy

    monkeypatch.setattr(ntcopy, "MIN_BYTES", 0)
    a = (np.arange(n + 1, dtype=np.int64) * 2654435761 % 1000003)[1:]
    got = streaming.stream(a, lambda d, s: d.copy(),
                           lambda parts: cupy.concatenate(parts).get(), backend="cuda",
                           host="stage")
    np.testing.assert_array_equal(got, a)
    h = _bytes(n, 3)
    np.testing.assert_array_equal(cupy.asnumpy(warplab.byte_histogram(h, device="cuda")),
                                  warplab.byte_histogram(h, device="cpu"))

"""Streaming on the cpu backend (``core/streaming.py``, ``sources.py``, ``staging.py``): the
chunk arithmetic, the sources (arrays of any layout, paths, file objects, lists of paths), the
error paths (and the staging pool's accounting on them), results identical to the one-shot
path for sizes around every chunk boundary."""
from __future__ import annotations

import io
import os
import stat

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import warplab
from warplab.core import staging, streaming
from warplab.core.sources import (ArraySource, FileChangedError, FileSource, is_file_source,
                                  open_source, split)
from warplab.families.histogram.cpu import byte_counts


def _collect(data, chunk_bytes, unit=1, backend="cpu"):
    """The chunks a stream hands to its chunk function, concatenated in order."""
    seen = []

    def chunk(c, start):
        return start, np.array(c)

    parts = streaming.stream(data, chunk, list, backend=backend, unit=unit,
                             chunk_bytes=chunk_bytes)
    for start, c in parts:
        seen.append((start, c))
    return seen


# ---------------------------------------------------------------------------- chunk arithmetic


@given(size=st.integers(0, 5000), chunk=st.integers(1, 700))
def test_chunk_bounds_cover_once(size: int, chunk: int) -> None:
    b = staging.chunk_bounds(size, chunk)
    assert [x for a, z in b for x in range(a, z)] == list(range(size))
    assert all(z - a == chunk for a, z in b[:-1])


@given(start=st.integers(0, 100), length=st.integers(1, 3000), parts=st.integers(1, 20),
       unit=st.integers(1, 9))
def test_split_pieces(start: int, length: int, parts: int, unit: int) -> None:
    stop = start + length * unit
    pieces = split(start, stop, parts, unit)
    assert pieces[0][0] == start and pieces[-1][1] == stop
    assert all(a < z for a, z in pieces) and len(pieces) <= parts
    assert all(a2 == z1 for (_, z1), (a2, _) in zip(pieces, pieces[1:]))
    assert all((a - start) % unit == 0 for a, _ in pieces)


def test_plan_chunk_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WARPLAB_STREAM_CHUNK", raising=False)
    r = staging.Rates(55.0, 46.0, "test")
    big = staging.plan_chunk(4 << 30, 1, "cuda", rate=r)
    small = staging.plan_chunk(64 << 20, 1, "cuda", rate=r)
    assert staging.MIN_CHUNK <= small < big <= staging.MAX_CHUNK
    assert big & (big - 1) == 0  # a power of two
    # faster links -> shorter ramp -> larger chunks
    assert staging.plan_chunk(4 << 30, 1, "cuda", rate=staging.Rates(5.0, 5.0, "t")) <= big
    # large data: at least MIN_PIECE per worker thread (16 threads: 256 MiB), at most a
    # quarter of the data
    monkeypatch.setenv("WARPLAB_STREAM_THREADS", "16")
    assert staging.plan_chunk(4 << 30, 1, "cuda", rate=r) == 256 << 20
    assert staging.plan_chunk(512 << 20, 1, "cuda", rate=r) == 128 << 20
    monkeypatch.setenv("WARPLAB_STREAM_THREADS", "2")
    assert staging.plan_chunk(4 << 30, 1, "cuda", rate=r) >= 2 * staging.MIN_PIECE
    monkeypatch.delenv("WARPLAB_STREAM_THREADS")
    assert staging.plan_chunk(1000, 12, "cuda", rate=r) % 12 == 0
    assert staging.plan_chunk(10, 1 << 30, "cuda", rate=r) == 1 << 30  # one unit at least
    assert staging.plan_chunk(1 << 30, 3, "cpu", override=100) == 99
    monkeypatch.setenv("WARPLAB_STREAM_CHUNK", "4K")
    assert staging.plan_chunk(1 << 30, 1, "cuda", rate=r) == 4096
    monkeypatch.setenv("WARPLAB_STREAM_CHUNK", "lots")
    with pytest.raises(ValueError, match="not a size"):
        staging.plan_chunk(1 << 30, 1, "cuda", rate=r)


def test_rates_are_nominal_and_measurable_on_request() -> None:
    """The library plans from nominal rates (no measurement on a first call); a campaign
    measures them with ``measure_rates``."""
    assert staging.rates("cpu") == staging.NOMINAL["cpu"]
    assert staging.rates("cuda").h2d_gbps > 0 and "nominal" in staging.rates("cuda").source
    r = staging.measure_rates("cpu", 1 << 20)
    assert r.stage_gbps > 0 and "measured" in r.source


# ------------------------------------------------------------------------------------ sources


@pytest.mark.parametrize("chunk", [1, 7, 64, 4096, 10**6])
def test_array_chunks_in_order(chunk: int) -> None:
    a = np.arange(1000, dtype=np.int32)
    seen = _collect(a, chunk * 4)
    assert np.array_equal(np.concatenate([c for _, c in seen]), a)
    assert [s for s, _ in seen] == list(range(0, 1000, max(1, chunk)))


def test_non_contiguous_arrays_are_gathered_by_rows() -> None:
    base = np.arange(24 * 10, dtype=np.float64).reshape(24, 10)
    for a in (base[:, ::2], base.T, base[::3], base[::-1]):
        src = ArraySource(a)
        assert src.view(0, 1) is None or a.flags.c_contiguous
        seen = _collect(a, 3 * a.itemsize * (src.unit or 1))
        assert np.array_equal(np.concatenate([c for _, c in seen]), a.reshape(-1))
        assert all(s % src.unit == 0 for s, _ in seen)


def test_unit_keeps_rows_whole() -> None:
    a = np.arange(7 * 13, dtype=np.uint8)
    seen = _collect(a, 20, unit=13)
    assert all(c.size % 13 == 0 for _, c in seen)


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


def test_paths_file_objects_lists(tmp_path) -> None:
    rng = np.random.default_rng(1)
    blobs = [rng.integers(0, 256, n, dtype=np.uint8).tobytes() for n in (0, 1, 5000, 777)]
    paths = [_write(tmp_path / f"f{i}", b) for i, b in enumerate(blobs)]
    whole = np.frombuffer(b"".join(blobs), np.uint8)
    for chunk in (1, 3, 4096, 1 << 20):
        seen = _collect([str(p) for p in paths], chunk)
        got = np.concatenate([c for _, c in seen]) if seen else np.zeros(0, np.uint8)
        assert np.array_equal(got, whole)
    with open(paths[2], "rb") as fh:
        fh.read(100)  # a file object is read from its position to its end
        seen = _collect(fh, 999)
        assert np.array_equal(np.concatenate([c for _, c in seen]),
                              np.frombuffer(blobs[2][100:], np.uint8))
        assert fh.tell() == len(blobs[2])
    seen = _collect(io.BytesIO(blobs[3]), 100)
    assert np.array_equal(np.concatenate([c for _, c in seen]), np.frombuffer(blobs[3], np.uint8))


def test_direct_io_reads_the_same(tmp_path) -> None:
    data = np.random.default_rng(3).integers(0, 256, 3 * 4096 + 123, dtype=np.uint8)
    p = _write(tmp_path / "d", data.tobytes())
    src = FileSource(p, direct=True)  # falls back where the file system refuses O_DIRECT
    try:
        for chunk in (4096, 8192 + 5, 1 << 20):
            seen = _collect(src, chunk)
            assert np.array_equal(np.concatenate([c for _, c in seen]), data)
    finally:
        src.close()


def test_is_file_source() -> None:
    assert is_file_source("x") and is_file_source(["a", "b"]) and is_file_source(io.BytesIO())
    assert not is_file_source(b"abc") and not is_file_source([]) and not is_file_source([1])
    with pytest.raises(TypeError, match="cannot stream"):
        open_source(3)


# -------------------------------------------------------------------------------- bad input


def test_bad_files(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="no such file"):
        warplab.byte_histogram(tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match="str is taken as a file path"):
        warplab.byte_histogram(str(tmp_path / "missing"))
    with pytest.raises(IsADirectoryError, match="directory"):
        warplab.byte_histogram(tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="FIFO"):  # and no hang: opened non-blocking
        warplab.byte_histogram(fifo)
    p = _write(tmp_path / "secret", b"abc")
    p.chmod(0)
    try:
        if os.access(p, os.R_OK):
            pytest.skip("running as root: permissions are not enforced")
        with pytest.raises(PermissionError, match="permission"):
            warplab.byte_histogram(p)
        with pytest.raises(PermissionError):  # one bad file in a list fails the whole call
            warplab.byte_histogram([_write(tmp_path / "ok", b"x"), p])
    finally:
        p.chmod(stat.S_IRUSR | stat.S_IWUSR)
    with open(_write(tmp_path / "t", b"abc"), "r") as text:
        with pytest.raises(TypeError, match="binary"):
            warplab.byte_histogram(text)


def test_file_that_shrinks_fails_and_releases(tmp_path) -> None:
    p = _write(tmp_path / "s", bytes(200_000))
    pool = staging.staging_pool("cpu")
    src = FileSource(p)
    os.truncate(p, 50_000)  # after the size was planned
    try:
        with pytest.raises(FileChangedError, match="shrank"):
            streaming.stream(src, lambda c, s: c.sum(), sum, backend="cpu", chunk_bytes=4096)
    finally:
        src.close()
    assert pool.in_use == 0


def test_failing_calls_do_not_grow_the_pool(tmp_path) -> None:
    # every failing call gives its buffers back, and the pool holds no more than the most
    # chunks in flight at once (twice the worker count) need, however many calls fail: how
    # many are in flight when the error surfaces depends on the threads' timing
    p = _write(tmp_path / "f", bytes(range(256)) * 1000)
    pool = staging.staging_pool("cpu")

    def boom(c, start):
        if start >= 100_000:
            raise RuntimeError("chunk kernel failed")
        return c.size

    streaming.stream(p, lambda c, s: c.size, sum, backend="cpu", chunk_bytes=8192)
    before = pool.allocated_bytes
    most = 2 * staging.threads()
    for _ in range(2 * most + 10):  # one buffer kept a call would exceed the bound below
        with pytest.raises(RuntimeError, match="kernel failed"):
            streaming.stream(p, boom, sum, backend="cpu", chunk_bytes=8192)
        assert pool.in_use == 0
    assert pool.allocated_bytes <= before + most * staging._size_class(8192)


def test_no_partial_result(tmp_path) -> None:
    combined = []

    def fail_late(c, start):
        if start > 500:
            raise OSError("read failed")
        return 1

    with pytest.raises(OSError):
        streaming.stream(np.zeros(1000, np.uint8), fail_late, combined.append, backend="cpu",
                         chunk_bytes=100)
    assert combined == []  # combine never ran


def test_file_larger_than_the_pool_streams(tmp_path) -> None:
    """A sparse file many times larger than the staging in flight: only a few chunks'
    buffers are ever held."""
    p = tmp_path / "sparse"
    with open(p, "wb") as fh:
        fh.truncate(64 << 20)
        fh.seek(12345)
        fh.write(b"\x07" * 10)
    pool = staging.staging_pool("cpu")
    pool.clear()
    counts = warplab.byte_histogram(p)
    assert counts[7] == 10 and counts[0] == (64 << 20) - 10
    assert pool.allocated_bytes <= 2 * staging.threads() * (64 << 20) // (4 * staging.threads())
    assert pool.in_use == 0


def test_bad_host_mode() -> None:
    with pytest.raises(ValueError, match="host must be"):
        streaming.stream(np.zeros(3), lambda c, s: 0, sum, backend="cpu", host="pin")


# ------------------------------------------------------------ identical to the one-shot path


@pytest.fixture
def always_stream(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("WARPLAB_STREAM_MIN", "0")
    return monkeypatch


@pytest.mark.parametrize("n", [0, 1, 4095, 4096, 4097, 8191, 8192, 8193, 3 * 4096 + 1])
def test_byte_histogram_around_chunk_boundaries(n: int, always_stream, tmp_path) -> None:
    always_stream.setenv("WARPLAB_STREAM_CHUNK", "4096")
    data = np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8)
    want = byte_counts(data)
    for bins in ("bytes", "letters"):
        ref = warplab.byte_histogram(data, bins, device="cpu")
        assert ref.sum() == n
    np.testing.assert_array_equal(warplab.byte_histogram(data), want)
    p = _write(tmp_path / "d", data.tobytes())
    np.testing.assert_array_equal(warplab.byte_histogram(p), want)
    np.testing.assert_array_equal(warplab.byte_histogram(str(p)), want)
    with open(p, "rb") as fh:
        np.testing.assert_array_equal(warplab.byte_histogram(fh), want)


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(0, 3000), min_size=1, max_size=5),
       chunk=st.integers(1, 2000))
def test_list_of_files_is_one_histogram(tmp_path_factory, sizes, chunk) -> None:
    d = tmp_path_factory.mktemp("files")
    rng = np.random.default_rng(sum(sizes) + chunk)
    blobs = [rng.integers(0, 256, n, dtype=np.uint8) for n in sizes]
    paths = [_write(d / f"{i}", b.tobytes()) for i, b in enumerate(blobs)]
    os.environ["WARPLAB_STREAM_CHUNK"] = str(chunk)
    try:
        got = warplab.byte_histogram(paths, "ascii128")
    finally:
        del os.environ["WARPLAB_STREAM_CHUNK"]
    want = warplab.byte_histogram(np.concatenate(blobs), "ascii128", device="cpu")
    np.testing.assert_array_equal(got, want)


def test_accumulate_and_out_with_files(tmp_path) -> None:
    p = _write(tmp_path / "a", b"hello")
    out = np.zeros(256, np.int64)
    warplab.byte_histogram(p, out=out, accumulate=True)
    warplab.byte_histogram([p, p], out=out, accumulate=True)
    assert out[ord("l")] == 6
    with pytest.raises(ValueError, match="accumulate"):
        warplab.byte_histogram(p, accumulate=True)


def test_progress_is_observed(tmp_path) -> None:
    p = _write(tmp_path / "p", bytes(10_000))
    seen = []
    os.environ["WARPLAB_STREAM_CHUNK"] = "1000"
    try:
        with streaming.observe(lambda done, total: seen.append((done, total))):
            warplab.byte_histogram(p)
    finally:
        del os.environ["WARPLAB_STREAM_CHUNK"]
    assert seen[-1] == (10_000, 10_000) and len(seen) == 10
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_collect_phases() -> None:
    with streaming.collect() as stats:
        streaming.stream(np.zeros(10_000, np.uint8), lambda c, s: 0, sum, backend="cpu",
                         chunk_bytes=1000)
    assert stats[0]["chunks"] == 10 and stats[0]["host"] == "view" and stats[0]["wall_s"] > 0


def test_variance_combine_of_chunks() -> None:
    """The reductions' host combine (Chan's rule) on per-chunk (mean, centred norm)."""
    from warplab.families.reduce.streamed import _chan, _fold

    x = np.random.default_rng(2).normal(1e3, 2.0, 10_007)
    parts = np.array_split(x, 7)
    vals = np.array([[p.mean(), np.sqrt(((p - p.mean()) ** 2).sum())] for p in parts])
    counts = [p.size for p in parts]
    np.testing.assert_allclose(_chan(vals, counts, "var", 0.0), np.var(x), rtol=1e-12)
    np.testing.assert_allclose(_chan(vals, counts, "std", 1.0), np.std(x, ddof=1), rtol=1e-12)
    sums = np.array([[p.sum()] for p in parts])
    np.testing.assert_allclose(_fold("sum", sums, x.size, True), x.mean(), rtol=1e-12)
    assert _fold("min", np.array([[3.0], [np.nan]]), 2, False).item() != 3.0


def test_wrapped_file_objects_are_refused(tmp_path) -> None:
    """gzip/bz2 file objects report the compressed file's descriptor: reading it would count
    the compressed bytes, so they are refused; a NamedTemporaryFile is a plain file."""
    import bz2
    import gzip
    import tempfile

    import warplab

    p = tmp_path / "x.gz"
    with gzip.open(p, "wb") as f:
        f.write(bytes(range(256)) * 100)
    for opener in (gzip.open, bz2.open):
        if opener is bz2.open:
            q = tmp_path / "x.bz2"
            with bz2.open(q, "wb") as f:
                f.write(b"abc" * 100)
            p = q
        with opener(p, "rb") as f, pytest.raises(TypeError, match="file descriptor"):
            warplab.byte_histogram(f, device="cpu")
    with tempfile.NamedTemporaryFile() as t:
        t.write(b"\x01" * 1000)
        t.flush()
        t.seek(0)
        assert warplab.byte_histogram(t, device="cpu")[1] == 1000


def test_streamed_numeric_histogram_adds_chunks_into_one_total(monkeypatch) -> None:
    """The running total of the streamed numeric histogram: every chunk's counts added into
    the first chunk's array in place (its result object is frozen), nothing else kept."""
    from types import SimpleNamespace

    from warplab.families.histogram import streamed
    from warplab.families.histogram.numeric import NumericResult

    data = np.arange(10, dtype=np.float32)
    job = SimpleNamespace(on_device=False, weights=None, data=data,
                          plan=SimpleNamespace(kernel_ok=True))
    calls = []

    def fn(j):
        calls.append(j.data.copy())
        return NumericResult(np.bincount(j.data.astype(np.int64) % 3, minlength=3), None)

    def fake_stream(src, chunk, combine, backend):
        for a in range(0, src.size, 4):
            chunk(src[a:a + 4], a)
        return combine([])

    monkeypatch.setattr(streamed, "worth_streaming", lambda n: True)
    monkeypatch.setattr(streamed, "replace", lambda j, **kw: SimpleNamespace(**{**vars(j), **kw}))
    monkeypatch.setattr(streamed, "stream", fake_stream)
    got = streamed.numeric_histogram(SimpleNamespace(name="even_fast", fn=fn), job)
    assert len(calls) == 3
    np.testing.assert_array_equal(got.hist, np.bincount(np.arange(10) % 3, minlength=3))

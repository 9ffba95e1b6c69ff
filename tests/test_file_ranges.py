"""``warplab.FileRange``: byte ranges of files counted as if they were files of their own, alone
and in lists with whole files, against NumPy's ``bincount`` of the same bytes; ranges outside
the file are refused before anything is read."""
from __future__ import annotations

import numpy as np
import pytest

import warplab
from warplab import FileRange


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(5)
    data = [rng.integers(0, 256, n, dtype=np.uint8) for n in (0, 1, 4097, 100_003)]
    paths = []
    for i, d in enumerate(data):
        p = tmp_path / f"f{i}.bin"
        p.write_bytes(d.tobytes())
        paths.append(str(p))
    return paths, data


def _ref(chunks):
    return np.bincount(np.concatenate([np.zeros(0, np.uint8), *chunks]), minlength=256)


@pytest.mark.parametrize("device", ["cpu"])
def test_ranges_and_paths_count_like_numpy(files, device):
    paths, data = files
    items = [FileRange(paths[3], 17, 50_000), paths[2], FileRange(paths[3], 0, 0),
             FileRange(paths[1], 0, 1), FileRange(paths[3], 99_000, 1003)]
    chunks = [data[3][17:50_017], data[2], data[3][:0], data[1], data[3][99_000:]]
    np.testing.assert_array_equal(warplab.byte_histogram(items, device=device), _ref(chunks))
    np.testing.assert_array_equal(
        warplab.byte_histogram(FileRange(paths[2], 4000, 97), "letters", device=device),
        warplab.byte_histogram(data[2][4000:4097], "letters", device=device))


@pytest.mark.parametrize("offset,length", [(-1, 3), (0, 4098), (4097, 1), (5, -2)])
def test_a_range_outside_the_file_is_refused(files, offset, length):
    paths, _ = files
    with pytest.raises(ValueError, match="not inside the file"):
        warplab.byte_histogram([FileRange(paths[2], offset, length)], device="cpu")


def test_a_missing_file_in_a_range_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope"):
        warplab.byte_histogram([FileRange(str(tmp_path / "nope"), 0, 1)], device="cpu")


@pytest.mark.parametrize("share", [1, 2, 4097, 50_000, 10**9])
def test_file_shares_cover_the_stream_in_order(files, share):
    pytest.importorskip("dask")
    from warplab.dask.files import file_shares

    paths, data = files
    sizes = [d.size for d in data]
    shares = file_shares(paths, sizes, share)
    assert all(0 < sum(r.length for r in s) <= share for s in shares)
    assert all(sum(r.length for r in s) == share for s in shares[:-1])
    flat = [r for s in shares for r in s]
    content = {p: np.fromfile(p, np.uint8) for p in paths}  # each file read once
    stream = np.concatenate([content[r.path][r.offset:r.offset + r.length] for r in flat])
    np.testing.assert_array_equal(stream, np.concatenate(data))
    total = sum(sizes)
    assert len(shares) == -(-total // share)


def test_histogram_files_of_a_file_that_shrank(files, tmp_path):
    pytest.importorskip("dask")
    import dask

    import warplab.dask as wd

    paths, data = files
    lazy = wd.histogram_files(paths, chunk_bytes=30_000)
    with open(paths[3], "r+b") as f:
        f.truncate(10)
    with pytest.raises(ValueError, match="not inside the file"):
        dask.compute(lazy, scheduler="sync")

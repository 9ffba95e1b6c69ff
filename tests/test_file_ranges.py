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

"""``warplab.FileRange`` lists streamed through the GPU: the same counts as NumPy's ``bincount``
of the same bytes, across chunk boundaries (ranges larger than a streaming chunk)."""
from __future__ import annotations

import numpy as np
import pytest

import warplab
from warplab import FileRange

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)


def test_ranges_stream_through_the_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPLAB_STREAM_CHUNK", "1M")  # several chunks per range
    rng = np.random.default_rng(9)
    a = rng.integers(0, 256, 9_000_001, dtype=np.uint8)
    b = rng.integers(0, 7, 3_000_000, dtype=np.uint8)
    pa, pb = tmp_path / "a.bin", tmp_path / "b.bin"
    pa.write_bytes(a.tobytes())
    pb.write_bytes(b.tobytes())
    items = [FileRange(str(pa), 12345, 8_000_000), str(pb), FileRange(str(pa), 0, 1)]
    exp = np.bincount(np.concatenate([a[12345:8_012_345], b, a[:1]]), minlength=256)
    np.testing.assert_array_equal(warplab.byte_histogram(items, device="cuda"), exp)

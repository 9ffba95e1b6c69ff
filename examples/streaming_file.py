"""Histogram of a file read in chunks, accumulated into one set of bins (``accumulate=True``).

warplab.byte_histogram(path) does this by itself (memory-mapped, chunked); the loop shows
the streaming pattern for data that arrives piece by piece, which CUB and CuPy cannot accumulate.
"""
import os
import tempfile

import numpy as np

import warplab

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "sample.bin")
    rng = np.random.default_rng(0)
    with open(path, "wb") as fh:
        fh.write(rng.integers(0, 256, size=3_000_001, dtype=np.uint8).tobytes())

    bins = np.zeros(256, dtype=np.int64)
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            warplab.byte_histogram(chunk, out=bins, accumulate=True)

    whole = warplab.byte_histogram(path)  # the same in one call
    assert (bins == whole).all() and bins.sum() == 3_000_001
    print("most frequent byte:", int(bins.argmax()), "count:", int(bins.max()))

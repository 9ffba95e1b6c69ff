"""Byte histograms on the CPU with NumPy, chunked.

``np.bincount`` widens its input to 64-bit integers; on whole arrays that is an 8x copy of the
input. Counting chunk by chunk keeps that temporary at ``8 * CHUNK`` bytes and in cache.
"""
from __future__ import annotations

import numpy as np

from .._mapping import histogram_bytes_moved
from .._registry import register

CHUNK = 1 << 20


def byte_counts(data: np.ndarray, chunk: int = CHUNK) -> np.ndarray:
    """Count each of the 256 byte values of a 1-D uint8 array (int64[256]).

    Performance: reads the input once; temporaries of ``8 * chunk`` bytes.
    """
    counts = np.zeros(256, dtype=np.int64)
    n = data.shape[0]
    for start in range(0, n, chunk):
        counts += np.bincount(data[start:start + chunk], minlength=256)
    return counts


@register("histogram", "numpy_chunked", backend="cpu", bytes_moved=histogram_bytes_moved, rank=0)
def numpy_chunked(data: np.ndarray, out: np.ndarray, mapping) -> None:
    """NumPy: chunked ``np.bincount`` over the bytes, then the 256 counts folded into the bins.

    Adds into ``out`` (int64[nbins]).
    """
    out += mapping.apply_to_counts(byte_counts(data))

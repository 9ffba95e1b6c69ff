"""The matmul problem and its cost models, shared by the cuda and cpu variants.

``C = A B`` with ``A`` of ``m x k`` and ``B`` of ``k x n``: ``flops = 2 m n k`` (one multiply and
one add per term) for every variant. ``bytes_moved`` follows the GPU lecture's flop-to-word
analysis: the words each kernel *requests* from global memory, counted the way the lecture
counts them (a word shared by the threads of one request is read once; caches are ignored).
The L1 and L2 caches serve part of these requests, so a kernel can beat the bandwidth bound of
its model; the models say what the code asks of memory, which is what tiling changes:

- ``naive``: for every k, a row of 16 threads (the lecture's half-warp) reads one word of A
  (broadcast) and 16 words of B: ``m n k (1/16 + 1)`` words, plus ``m n`` written.
- tiles of ``bm x bn`` (``tiled_smem16``: 16 x 16; register tiles: 64 x 128 and 64 x 64): every
  block reads its ``bm`` rows of A and ``bn`` columns of B once: ``m k ceil(n / bn) +
  k n ceil(m / bm)`` words, plus ``m n`` written. The intensity grows with the tile:
  ``2 / (itemsize (1/bm + 1/bn))`` flop/byte for large matrices (float32: 4 for 16 x 16,
  about 21 for 64 x 128).
- ``numpy`` (and the ``cublas`` comparator): the compulsory traffic, each matrix once:
  ``m k + k n + m n`` words.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
C_TYPE = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
#: The lecture's tile (block of 16 x 16 threads); ``naive`` shares one word of A per 16 threads.
LECTURE_TILE = 16
#: Largest M, N or K the kernels index with 32-bit ints.
MAX_DIM = (1 << 31) - 1


@dataclass(frozen=True)
class MatmulProblem:
    """What dispatch and the cost models see of one ``(m x k) @ (k x n)`` product."""

    m: int
    n: int
    k: int
    dtype: np.dtype
    on_device: bool

    @property
    def size(self) -> int:
        """Elements of C (the results schema's ``params.size``)."""
        return self.m * self.n

    def __str__(self) -> str:
        return f"{self.m}x{self.k} @ {self.k}x{self.n} {np.dtype(self.dtype).name}"


def matmul_flops(p: MatmulProblem) -> int:
    """``2 m n k``: a multiply and an add per term, the same for every variant."""
    return 2 * p.m * p.n * p.k


def _words_to_bytes(p: MatmulProblem, words: int) -> int:
    return int(words) * np.dtype(p.dtype).itemsize


def naive_bytes(p: MatmulProblem) -> int:
    """The lecture's naive kernel: per k, 1 word of A per 16 threads and 1 word of B per
    thread; C written once."""
    mnk = p.m * p.n * p.k
    return _words_to_bytes(p, -(-mnk // LECTURE_TILE) + mnk + p.m * p.n)


def tiled_bytes(bm: int, bn: int) -> Callable[[MatmulProblem], int]:
    """Cost model of a ``bm x bn`` block tile: A read once per tile column, B once per tile
    row, C written once."""

    def bytes_moved(p: MatmulProblem) -> int:
        words = p.m * p.k * -(-p.n // bn) + p.k * p.n * -(-p.m // bm) + p.m * p.n
        return _words_to_bytes(p, words)

    bytes_moved.__doc__ = f"A once per {bn} columns of C, B once per {bm} rows, C written once."
    return bytes_moved


def compulsory_bytes(p: MatmulProblem) -> int:
    """Each matrix once: ``m k + k n`` read, ``m n`` written (NumPy, cuBLAS)."""
    return _words_to_bytes(p, p.m * p.k + p.k * p.n + p.m * p.n)


def intensity(p: MatmulProblem, bytes_moved: int) -> float | None:
    """Arithmetic intensity in flop/byte of ``p`` under a cost model (None when no bytes)."""
    return matmul_flops(p) / bytes_moved if bytes_moved else None

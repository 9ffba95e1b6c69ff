"""Byte-to-bin mappings of the histogram family.

Every mapping is a 256-entry lookup table ``lut`` (byte value -> bin) plus a bin count. The named
ones also have a kernel id so that the CUDA kernels can compute them without a table:

========== ===== ==== =====================================================
name        bins  id   rule
========== ===== ==== =====================================================
bytes       256   0    identity
ascii128    128   1    codes 1..128 -> bins 0..127: ``(c - 1) & 0x7f``
letters     27    2    A/a..Z/z -> 1..26, every other byte -> 0
(table)     <=256 3    ``lut[c]`` for a user table of 256 integers
========== ===== ==== =====================================================
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from warplab.core.errors import InvalidTypeError, InvalidValueError

NAMED = ("bytes", "ascii128", "letters")
MAP_LUT = 3


@dataclass(frozen=True, eq=False)
class Mapping:
    """A resolved mapping: ``name``, kernel id ``map_id``, ``nbins`` and the table ``lut``."""

    name: str
    map_id: int
    nbins: int
    lut: np.ndarray  # uint8[256]

    def apply_to_counts(self, byte_counts: np.ndarray) -> np.ndarray:
        """Fold 256 per-byte counts into this mapping's bins (int64, exact)."""
        out = np.zeros(self.nbins, dtype=np.int64)
        np.add.at(out, self.lut.astype(np.intp), np.asarray(byte_counts, dtype=np.int64))
        return out


def _letters_lut() -> np.ndarray:
    c = np.arange(256, dtype=np.int64)
    upper = c & 0xDF
    return np.where((upper >= 65) & (upper <= 90), upper - 64, 0).astype(np.uint8)


_TABLES = {
    "bytes": np.arange(256, dtype=np.uint8),
    "ascii128": ((np.arange(256) - 1) & 0x7F).astype(np.uint8),
    "letters": _letters_lut(),
}
_NBINS = {"bytes": 256, "ascii128": 128, "letters": 27}
for _t in _TABLES.values():
    _t.flags.writeable = False


def resolve(bins: Any) -> Mapping:
    """Turn the ``bins=`` argument into a :class:`Mapping`.

    Args:
        bins: ``"bytes"``, ``"ascii128"``, ``"letters"`` or a 256-entry integer lookup table
            (NumPy, CuPy or a sequence) whose values are bin indices 0..255; the bin count is
            ``max + 1``.

    Raises:
        ValueError: unknown name, a table of the wrong length, negative values or values
            beyond the 256-bin limit.
        TypeError: a table that is not of an integer dtype.
    """
    if isinstance(bins, str):
        if bins not in _TABLES:
            raise InvalidValueError(f"unknown bins {bins!r}; valid: {', '.join(NAMED)} "
                             "or a 256-entry lookup table")
        return Mapping(bins, NAMED.index(bins), _NBINS[bins], _TABLES[bins])
    table = bins.get() if hasattr(bins, "get") and hasattr(bins, "__cuda_array_interface__") \
        else bins
    arr = np.asarray(table)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.integer) or arr.dtype == bool):
        raise InvalidTypeError(f"a lookup table must hold integers, got dtype {arr.dtype}")
    if arr.ndim != 1 or arr.shape[0] != 256:
        raise InvalidValueError(f"a lookup table needs exactly 256 entries (one per byte value), "
                         f"got shape {arr.shape}")
    lo, hi = int(arr.min()), int(arr.max())
    if lo < 0:
        raise InvalidValueError(f"lookup table values must be bin indices >= 0, found {lo}")
    if hi > 255:
        raise InvalidValueError(
            f"lookup table value {hi} is beyond the bin count (at most 256 bins, indices 0..255)")
    lut = arr.astype(np.uint8)
    lut.flags.writeable = False
    return Mapping("lut", MAP_LUT, hi + 1, lut)


@dataclass(frozen=True)
class HistogramProblem:
    """What dispatch and the cost model see of one histogram call."""

    size: int          # input bytes
    nbins: int
    mapping: str       # "bytes" | "ascii128" | "letters" | "lut"
    on_device: bool    # input already on the GPU

    @property
    def bytes_moved(self) -> int:
        return histogram_bytes_moved(self)


def histogram_bytes_moved(problem: HistogramProblem) -> int:
    """Fewest device-memory bytes of a byte histogram: each input byte read once, each 64-bit
    bin written once. Atomics to the bins stay in L2 and are not counted."""
    return problem.size + 8 * problem.nbins

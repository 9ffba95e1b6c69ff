"""The NumPy backend of corrcoef: float64 normalised rows and their Gram products in tiles, the
reference every GPU variant is checked against."""
from __future__ import annotations

from typing import Any

import numpy as np

from warplab.core.registry import register
from warplab.families.corr.spec import corr_flops, gram_bytes


def normalise_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(z, valid)``: each row of ``x`` centred and divided by its centred norm, in float64.

    The mean is taken of the values minus the row's first value (exact for float32 input), so a
    constant row centres to exact zeros: its norm is 0, it is not ``valid`` and its row of ``z``
    is NaN, as is the row of a series holding NaN or inf.
    """
    x64 = np.asarray(x, dtype=np.float64)
    d = x64 - x64[:, :1]
    c = d - d.mean(axis=1, keepdims=True)
    norm = np.sqrt(np.einsum("ij,ij->i", c, c))
    valid = np.isfinite(norm) & (norm > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = c / np.where(valid, norm, np.nan)[:, None]
    return z, valid


class NumpyEngine:
    """Normalised float64 rows; blocks are their products (NumPy's BLAS)."""

    xp = np

    def __init__(self, x: np.ndarray) -> None:
        self.z, self.valid = normalise_rows(x)
        self.m = int(x.shape[0])
        self.all_valid = bool(self.valid.all())

    def block(self, r0: int, r1: int, c0: int, c1: int) -> np.ndarray:
        return self.z[r0:r1] @ self.z[c0:c1].T

    def cross(self, other: NumpyEngine) -> np.ndarray:
        """The finished coefficients of this engine's series against ``other``'s (the rows of
        another panel of the same call): clipped, NaN for invalid series."""
        b = np.clip(self.z @ other.z.T, -1, 1)
        b[~self.valid, :] = np.nan
        b[:, ~other.valid] = np.nan
        return b


@register("corrcoef", "numpy", backend="cpu", bytes_moved=gram_bytes, flops=corr_flops, rank=0)
def numpy_corrcoef(x: Any, precision: str) -> NumpyEngine:
    """NumPy: float64 centred, normalised rows times their transpose, in tiles.

    Every precision computes in float64 here. Error: a few float64 ulps times sqrt(N).
    Performance: ``corr_flops`` in float64 BLAS; one float64 copy of the input.
    """
    return NumpyEngine(np.asarray(x))

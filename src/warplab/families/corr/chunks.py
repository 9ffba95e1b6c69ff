"""corrcoef by row chunks (``warplab.dask.corrcoef``): the blocks of coefficients between some
row chunks of a call, from engines over each chunk's rows alone.

The variant is chosen once for the whole call (``registry.choose`` on all its rows). Each
chunk gets an engine of that variant over its rows: the diagonal block ``(I, I)`` is the
engine's own, the block ``(I, J)`` is the first engine's ``cross`` of the second (a variant
without ``cross``, ``fused_small`` for at most 64 series, builds the engine of both chunks for
it). Every variant prepares rows one by one, so these blocks are the single call's, except
for ``int8_slices``'s number of slices s: the single call chooses it from maxima over all its
rows. Here each block's s is chosen by the same rule from the maxima over its two chunks' rows
(``slices.Choice``), which bound exactly the coefficients of that block, so every block meets
the precision's target with no exchange between chunks. Where a block's rows choose the
call's s (data of one kind, such as random walks) the block is the single call's bit for
bit; elsewhere it can take fewer slices than the single call, within the same target.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from warplab.core.registry import Variant
from warplab.families.corr.tiles import finish

SLICES = "int8_slices"


class Chunks:
    """The engines of the row chunks ``rows`` (index: the chunk's array) of one call of
    ``variant``, each built once, when a block first needs it."""

    def __init__(self, variant: Variant, precision: str, rows: dict[int, Any]) -> None:
        self.variant, self.precision, self.rows = variant, precision, rows
        self._engines: dict[tuple[int, int], Any] = {}
        self._norm: dict[int, tuple[Any, Any, Any]] = {}
        self._extents: dict[int, Any] = {}
        self._digits: dict[int, Any] = {}
        self._choices: dict[tuple[int, ...], Any] = {}

    def prepare(self, pairs: list[tuple[int, int]]) -> None:
        """Everything that reads back to the host before the blocks of ``pairs`` are queued
        (``int8_slices``: each chunk's maxima, one read-back for all, and the digit
        statistics where a block's a-priori bound asks for them), so that queuing the blocks
        never waits for the GPU. Optional: :meth:`block` does it for its pair otherwise."""
        if self.variant.name != SLICES:
            return
        from warplab.families.corr.cuda import normalise_with_extent
        from warplab.families.corr.slices_cuda import column_maxima, read_async

        new = sorted({c for pair in pairs for c in pair} - set(self._norm))
        for c in new:
            self._norm[c] = normalise_with_extent(self.rows[c])
        if new:
            import cupy

            both = read_async(cupy.stack([column_maxima(self._norm[c][2], self._norm[c][1])
                                          for c in new]))()
            self._extents.update(zip(new, both))
        for i, j in pairs:
            self._choice(i, j)

    def block(self, i: int, j: int) -> Any:
        """The finished coefficients of chunk ``i``'s series against chunk ``j``'s (queued on
        the current stream)."""
        pick = self._choice(i, j) if self.variant.name == SLICES else None
        a = self._engine(i, pick)
        if i == j:
            return finish(a.block(0, a.m, 0, a.m), 0, 0, a)
        b = self._engine(j, pick)
        if hasattr(a, "cross"):
            return a.cross(b)
        both = self.variant.fn(a.xp.concatenate([self.rows[i], self.rows[j]]), self.precision)
        return finish(both.block(0, a.m, a.m, a.m + b.m), 0, a.m, both)

    def _engine(self, i: int, pick: Any) -> Any:
        """Chunk ``i``'s engine (``int8_slices``: split with the s of ``pick``, the choice of
        the block it is first built for, which also gives its ``bound``)."""
        s = 0 if pick is None else pick.s
        eng = self._engines.get((i, s))
        if eng is None:
            if pick is not None:
                from warplab.families.corr.cuda import SlicesEngine

                own = replace(pick, all_valid=bool(self._extents[i][2] > 0))
                eng = SlicesEngine(None, self.precision, own, normalised=self._norm[i])
            else:
                eng = self.variant.fn(self.rows[i], self.precision)
            self._engines[(i, s)] = eng
        return eng

    def _choice(self, i: int, j: int) -> Any:
        """``int8_slices``'s choice for the block of chunks ``i`` and ``j``: the single call's
        rule on their rows (the digit statistics only where the a-priori bound asks)."""
        from warplab.families.corr.slices import Choice
        from warplab.families.corr.slices_cuda import STATS_FIRST, digit_maxima

        both = tuple(sorted({i, j}))
        if both in self._choices:
            return self._choices[both]
        if any(c not in self._norm for c in both):
            self.prepare([(i, j)])
        light = self.precision not in STATS_FIRST
        n = int(self.rows[i].shape[1])
        extents = [self._extents[c] for c in both]
        choice = Choice.of(self.precision, n, extents, None, light)
        if choice is None:
            for c in both:
                if c not in self._digits:
                    self._digits[c] = digit_maxima(*self._norm[c])
            choice = Choice.of(self.precision, n, extents, [self._digits[c] for c in both],
                               light)
        self._choices[both] = choice
        return choice

"""corrcoef by panels of rows (``warplab.dask.corrcoef``): engines over some of a call's rows.

The variant is chosen once for the whole call (``registry.choose`` on all its rows). Each panel
of rows (a row chunk) gets an engine of that variant over its rows alone: its diagonal block is
the engine's own, and the block between two panels is the first engine's ``cross`` of the
second. Every engine prepares its rows one by one (normalised, and for ``int8_slices`` split
into slices), except for the one choice that depends on every row: ``int8_slices``'s number of
slices, made from each panel's statistics (:func:`statistics`, then :func:`choice`: the single
call's rule, ``slices.Choice``) and given to every panel's engine. So each block holds the
single call's coefficients. A variant without ``cross`` (``fused_small``, up to 64 series)
keeps its rows and builds the engine of both panels for each block between them.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from warplab.core.registry import Variant
from warplab.families.corr.tiles import finish

SLICES = "int8_slices"


def statistics(variant: Variant, x: Any, precision: str) -> np.ndarray | None:
    """What the rows ``x`` contribute to the call's shared choice (None: the variant makes
    none). One read-back for ``int8_slices``."""
    if variant.name != SLICES:
        return None
    from warplab.families.corr.cuda import SlicesEngine

    return SlicesEngine.statistics(x)


def choice(variant: Variant, parts: list[Any], precision: str, n: int) -> Any:
    """The call's shared choice from every non-empty panel's :func:`statistics`."""
    if variant.name != SLICES:
        return None
    from warplab.families.corr.slices import Choice
    from warplab.families.corr.slices_cuda import STATS_FIRST

    return Choice.of(precision, n, parts, precision not in STATS_FIRST)


class Panel:
    """One panel's engine; ``nbytes`` (its rows' bytes, twice) is what Dask's cost model
    sees, so it never finds a panel cheap to move."""

    def __init__(self, variant: Variant, x: Any, precision: str, shared: Any) -> None:
        self.eng: Any
        if shared is not None:
            from warplab.families.corr.cuda import SlicesEngine

            self.eng = SlicesEngine(x, precision, shared)
        else:
            self.eng = variant.fn(x, precision)
        self.variant, self.precision, self.m = variant, precision, int(x.shape[0])
        self.x = None if hasattr(self.eng, "cross") else x
        self.nbytes = 2 * int(x.nbytes)

    def __sizeof__(self) -> int:
        return self.nbytes


def block(a: Panel, b: Panel | None = None) -> Any:
    """The finished coefficients of ``a``'s rows against ``b``'s (None: against its own, the
    diagonal block)."""
    if b is None:
        return finish(a.eng.block(0, a.m, 0, a.m), 0, 0, a.eng)
    if a.x is None:
        return a.eng.cross(b.eng)
    xp = a.eng.xp
    both = a.variant.fn(xp.concatenate([a.x, b.x]), a.precision)
    return finish(both.block(0, a.m, a.m, a.m + b.m), 0, a.m, both)

"""NumPy's semantics in the memcpy family's public functions (``concatenate``, ``split``,
``copy_batched``, ``memcpy_batched``): input NumPy dispatches elsewhere (a masked array, an
ndarray subclass, an ``__array_function__`` object; ``core/overrides.py``) gets NumPy's own
``concatenate`` / ``split`` or a clear ``InvalidTypeError``; everything else goes straight to
``families/memcpy/api.py``. For plain input the wrappers add one call frame and one exact
type test per array to a warm call.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from warplab.core import overrides
from warplab.families.memcpy import api

__all__ = ["concatenate", "copy_batched", "memcpy_batched", "split"]


@functools.wraps(api.concatenate)
def concatenate(arrays: Sequence[Any], axis: int | None = 0, *, variant: str | None = None,
                device: str | None = None) -> Any:
    o = overrides.first_kind(arrays) if isinstance(arrays, (list, tuple)) else None
    if o == "masked":
        x = next(a for a in arrays if overrides.kind(a) == "masked")
        raise overrides.refuse("concatenate", x, "NumPy's concatenate drops the mask "
                               "(numpy.ma.concatenate keeps it)")
    if o is not None:
        return overrides.defer("concatenate", o, np.concatenate, (arrays,), {"axis": axis},
                               {"variant": variant, "device": device})
    return api.concatenate(arrays, axis, variant=variant, device=device)


@functools.wraps(api.split)
def split(ary: Any, indices_or_sections: Any, axis: int = 0, *, copy: bool = False,
          variant: str | None = None, device: str | None = None) -> list[Any]:
    if type(ary) is not np.ndarray:
        o = overrides.kind(ary)
        if o is not None:  # NumPy's split keeps masks and subclasses (views of the input)
            return overrides.defer("split", o, np.split, (ary, indices_or_sections),
                                   {"axis": axis},
                                   {"copy": copy, "variant": variant, "device": device})
    return api.split(ary, indices_or_sections, axis, copy=copy, variant=variant,
                     device=device)


@functools.wraps(api.copy_batched)
def copy_batched(srcs: Sequence[Any], dsts: Sequence[Any], *, variant: str | None = None,
                 device: str | None = None) -> None:
    for side in (srcs, dsts):
        if isinstance(side, (list, tuple)) and overrides.first_kind(side) is not None:
            x = next(a for a in side if a is not None and overrides.kind(a) is not None)
            raise overrides.refuse("copy_batched", x)
    return api.copy_batched(srcs, dsts, variant=variant, device=device)


@functools.wraps(api.memcpy_batched)
def memcpy_batched(src_ptrs: Any, dst_ptrs: Any, sizes: Any, *, variant: str | None = None,
                   check: bool = False) -> None:
    o = overrides.first_kind((src_ptrs, dst_ptrs, sizes))
    if o is not None:
        x = next(a for a in (src_ptrs, dst_ptrs, sizes) if overrides.kind(a) is not None)
        raise overrides.refuse("memcpy_batched", x)
    return api.memcpy_batched(src_ptrs, dst_ptrs, sizes, variant=variant, check=check)

"""The cpu backend's run of the list forms on NumPy arrays: NumPy's own copies.

Host-to-host batches need no address table: ``copy_batched`` is one ``np.copyto`` per pair
(mapped in C, no Python loop), ``concatenate`` is ``np.concatenate``, ``split(copy=True)`` is
``np.split`` and a copy per piece. The variant is still the plan's (key: the form, the
registry's generation; the cpu backend has the one ``numpy`` variant), and ``record_variants``
sees it. Each function returns None when the call is not one it takes (other array types, a
``variant=`` or ``device=``, arrays whose bytes must be reinterpreted, anything NumPy refuses,
object dtypes); the general path then runs the call and raises what it raises.

``copy_batched``'s checks are whole-list operations (``map`` over attribute getters, sets of
ids): destinations that own their memory (``base is None``) and are distinct objects cannot
overlap one another, and a source cannot overlap a destination unless it is one or a view of
one (``base`` is the owning array for NumPy views). Anything else (a view as destination, a
source whose base is not an array) goes to the general path and its address-interval test.
"""
from __future__ import annotations

from operator import attrgetter, itemgetter
from typing import Any

import numpy as np

from warplab.core import registry as _registry
from warplab.families.memcpy.cpu import numpy_copy
from warplab.families.memcpy.plan import PLANS, decide

_ND = np.ndarray
_BASE, _WRITEABLE = attrgetter("base"), attrgetter("flags.writeable")
_FACTS = attrgetter("dtype", "shape", "flags.c_contiguous")
_D, _C = itemgetter(0), itemgetter(2)
_NONE = {id(None)}


def _variant() -> _registry.Variant | None:
    """The cpu backend's variant of host batches (planned once per registry generation), or
    None when it is not NumPy's loop (a variant registered since)."""
    key = ("host", _registry.generation)
    plan = PLANS.get(key)
    if plan is None:
        plan = PLANS.put(key, decide(False, 1, 1, 1, None, None, None))
    v = plan.variant
    return v if v.fn is numpy_copy else None


def _all_arrays(arrays: list[Any]) -> bool:
    types = set(map(type, arrays))
    return len(types) == 1 and _ND in types


def copy_pairs(srcs: list[Any], dsts: list[Any]) -> bool:
    """``copy_batched`` of equal-shaped, equal-dtype C-contiguous NumPy pairs into writable
    destinations that own their memory: one ``np.copyto`` per pair. False (nothing written)
    for any other call."""
    if not (_all_arrays(srcs) and _all_arrays(dsts)):
        return False
    src_facts = list(map(_FACTS, srcs))  # one pass each: dtype, shape, C-contiguous
    if src_facts != list(map(_FACTS, dsts)) or False in map(_C, src_facts):
        return False
    if any(dt.hasobject for dt in set(map(_D, src_facts))):
        return False
    if set(map(id, map(_BASE, dsts))) != _NONE or not all(map(_WRITEABLE, dsts)):
        return False
    dst_ids = set(map(id, dsts))
    if len(dst_ids) != len(dsts) or not dst_ids.isdisjoint(map(id, srcs)):
        return False
    bases = dict(zip(map(id, map(_BASE, srcs)), map(_BASE, srcs)))  # arrays are unhashable
    bases.pop(id(None), None)
    if bases and (not _all_arrays(list(bases.values())) or not dst_ids.isdisjoint(bases)):
        return False
    v = _variant()
    if v is None:
        return False
    _registry.ran(v)
    for _ in map(np.copyto, dsts, srcs):
        pass
    return True


def concatenate(arrays: list[Any], axis: Any) -> np.ndarray | None:
    """``np.concatenate`` of NumPy arrays of plain data, or None."""
    if not _all_arrays(arrays):
        return None
    v = _variant()
    if v is None:
        return None
    try:
        out = np.concatenate(arrays, axis=axis)
    except Exception:  # NumPy refuses: the general path raises warplab's error
        return None
    if out.dtype.hasobject:
        return None
    _registry.ran(v)
    return out


def split(ary: Any, indices_or_sections: Any, axis: Any) -> list[np.ndarray] | None:
    """``np.split`` of a NumPy array of plain data, each piece copied to a C-contiguous
    array, or None."""
    if type(ary) is not _ND or ary.dtype.hasobject:
        return None
    v = _variant()
    if v is None:
        return None
    try:
        parts = np.split(ary, indices_or_sections, axis)
    except Exception:  # NumPy refuses: the general path raises warplab's error
        return None
    _registry.ran(v)
    return [p.copy(order="C") for p in parts]

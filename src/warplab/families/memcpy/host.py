"""The cpu backend's run of the list forms on NumPy arrays: NumPy's own copies.

Host-to-host batches need no address table: ``copy_batched`` is one ``np.copyto`` per pair
(mapped in C, no Python loop, no ``__array_function__`` dispatch), ``concatenate`` is
``np.concatenate``, ``split(copy=True)`` is ``np.split`` and a copy per piece. The variant is
still the plan's (key: the form, the registry's generation; the cpu backend has the one
``numpy`` variant), and ``record_variants`` sees it. Each function returns None when the call is
not one it takes (other array types, a ``variant=`` or ``device=``, arrays whose bytes must be
reinterpreted, anything NumPy refuses, object dtypes); the general path then runs the call and
raises what it raises.

``copy_batched``'s checks are whole-list operations (``map`` over attribute getters, sets of
ids, the few distinct flag words): destinations that own their memory (``OWNDATA``) and are
distinct objects cannot overlap one another, and a source cannot overlap a destination unless it
is one or a view of one (a NumPy view's ``base`` is the array that owns the memory). Anything
else (a view as destination, a source whose base is not an array owning its memory) goes to the
general path and its address-interval test.
"""
from __future__ import annotations

from operator import attrgetter, itemgetter
from typing import Any

import numpy as np

from warplab.core import registry as _registry
from warplab.families.memcpy.cpu import numpy_copy
from warplab.families.memcpy.plan import PLANS, decide

_ND = np.ndarray
#: ``np.copyto`` without the ``__array_function__`` dispatch (the pairs are exact
#: ``ndarray``s: there is nothing to dispatch to).
_COPYTO = getattr(np.copyto, "_implementation", np.copyto)
_CONCATENATE = getattr(np.concatenate, "_implementation", np.concatenate)
_BASE, _FLAGS = attrgetter("base"), attrgetter("flags.num")
_FACTS, _SHAPE = attrgetter("dtype", "size", "ndim", "flags.num"), attrgetter("shape")
_D, _DSN, _N, _F = itemgetter(0), itemgetter(0, 1, 2), itemgetter(2), itemgetter(3)
_ONE_D = {1}
#: NumPy's flag bits (``ndarray.flags.num``; the C API's ``NPY_ARRAY_*``).
_C_CONTIGUOUS, _OWNDATA, _ALIGNED, _WRITEABLE = 0x1, 0x4, 0x100, 0x400
_DST_FLAGS = _C_CONTIGUOUS | _OWNDATA | _ALIGNED | _WRITEABLE
#: The dtype kinds whose value copy is a byte copy (strings, void and structured dtypes go
#: to the general path's byte views).
_KINDS = frozenset("biufcmM")


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
    """``copy_batched`` of equal-shaped C-contiguous NumPy pairs of one numeric dtype
    (``_KINDS``: copied value for value, which is byte for byte) into aligned, writable
    destinations that own their memory: one ``np.copyto`` per pair. False (nothing written)
    for any other call."""
    if not (_all_arrays(srcs) and _all_arrays(dsts)):
        return False
    src_facts = list(map(_FACTS, srcs))  # one pass each: dtype, size, ndim, flag word
    dst_facts = list(map(_FACTS, dsts))
    if src_facts == dst_facts:  # the common case: arrays alike on both sides
        dst_flags = src_flags = set(map(_F, dst_facts))
    elif list(map(_DSN, src_facts)) == list(map(_DSN, dst_facts)):
        dst_flags, src_flags = set(map(_F, dst_facts)), set(map(_F, src_facts))
    else:
        return False
    if set(map(_N, src_facts)) != _ONE_D and list(map(_SHAPE, srcs)) != list(map(_SHAPE, dsts)):
        return False  # 1-D arrays of one size have one shape (shapes are tuples: built per read)
    if any(dt.kind not in _KINDS for dt in set(map(_D, src_facts))):
        return False
    if any(f & _DST_FLAGS != _DST_FLAGS for f in dst_flags):
        return False  # a few distinct flag words at most: checked per word, not per array
    if any(not f & _C_CONTIGUOUS for f in src_flags):
        return False
    dst_ids = set(map(id, dsts))
    if len(dst_ids) != len(dsts) or not dst_ids.isdisjoint(map(id, srcs)):
        return False
    if any(not f & _OWNDATA for f in src_flags):  # views as sources: are they of a destination?
        bases = [b for b in map(_BASE, srcs) if b is not None]
        if not _all_arrays(bases) or not dst_ids.isdisjoint(map(id, bases)) \
                or any(not f & _OWNDATA for f in set(map(_FLAGS, bases))):
            return False
    v = _variant()
    if v is None:
        return False
    _registry.ran(v)
    for _ in map(_COPYTO, dsts, srcs):
        pass
    return True


def concatenate(arrays: list[Any], axis: Any) -> np.ndarray | None:
    """``np.concatenate`` of NumPy arrays (exact ``ndarray``s: nothing to dispatch, so
    without ``__array_function__``) of plain data, or None."""
    if not _all_arrays(arrays):
        return None
    v = _variant()
    if v is None:
        return None
    try:
        out = _CONCATENATE(arrays, axis=axis)
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

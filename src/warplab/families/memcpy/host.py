"""The cpu backend's run of the list forms on NumPy arrays: NumPy's own copies.

Host-to-host batches need no address table: ``copy_batched`` is one ``np.copyto`` per pair
(mapped in C, no Python loop, no ``__array_function__`` dispatch), ``concatenate`` is
``np.concatenate``, ``split(copy=True)`` is ``np.split`` and a copy per piece. The variant is
still the plan's (key: the form, the registry's generation; the cpu backend has the one
``numpy`` variant), and ``record_variants`` sees it. Each function returns None when the call is
not one it takes (other array types, a ``variant=`` or ``device=``, arrays whose bytes must be
reinterpreted, anything NumPy refuses, object dtypes); the general path then runs the call and
raises what it raises.

``copy_batched`` runs in the C helper ``warplab.core._hostcopy`` (``core/hostcopy.c``, built
with the package): every pair checked through the buffer protocol (exact ``ndarray``s, C-
contiguous, writable destinations, equal byte sizes, no Python objects, no destination
overlapping another or a source: sorted address intervals), then every pair copied with
``memcpy``. NumPy's loop checks each pair in C; the same checks in Python cost as much as the
copies of small arrays (pairs of 128 bytes against NumPy's loop: the Python checks below 2.4x
at 10 pairs and 1.5-1.6x at 100 to 10,000, the helper 0.7x and 0.4-0.8x:
``benchmarks/NOTES.md``).

Where the helper is not built, or ``WARPLAB_HOST_COPY=0`` is set when warplab is imported, the
checks are whole-list operations in Python (``map`` over attribute getters, sets of ids, the
few distinct flag words): destinations that own their memory (``OWNDATA``) and are distinct
objects cannot overlap one another, and a source cannot overlap a destination unless it is one
or a view of one (a NumPy view's ``base`` is the array that owns the memory). Anything else (a
view as destination, a source whose base is not an array owning its memory) goes to the general
path and its address-interval test. :func:`status` says which is in use.
"""
from __future__ import annotations

from operator import attrgetter
from typing import Any

import numpy as np

from warplab.core import registry as _registry
from warplab.core.extensions import load
from warplab.families.memcpy.cpu import numpy_copy
from warplab.families.memcpy.plan import PLANS, decide

_ND = np.ndarray
#: ``np.copyto`` without the ``__array_function__`` dispatch (the pairs are exact
#: ``ndarray``s: there is nothing to dispatch to).
_COPYTO = getattr(np.copyto, "_implementation", np.copyto)
_CONCATENATE = getattr(np.concatenate, "_implementation", np.concatenate)
_DTYPE, _NDIM, _SHAPE = attrgetter("dtype"), attrgetter("ndim"), attrgetter("shape")
_FLAGS, _WORD = attrgetter("flags"), attrgetter("num")
#: NumPy's flag bits (``ndarray.flags.num``; the C API's ``NPY_ARRAY_*``).
_C_CONTIGUOUS, _OWNDATA, _ALIGNED, _WRITEABLE = 0x1, 0x4, 0x100, 0x400
_DST_FLAGS = _C_CONTIGUOUS | _OWNDATA | _ALIGNED | _WRITEABLE
#: From this many pairs on, the set of destinations' identities holds ``object.__hash__``
#: (the address rotated by 4 bits) instead of ``id`` (the address): arrays allocated one
#: after another lie at a fixed stride, their addresses fill few of the set's slots, and the
#: sources' lookups (absent keys) probe long runs: 1.0x NumPy's loop of 10,000 copies for
#: the identity checks alone, 0.45x with the rotated addresses (0.29x against 0.40x at 100
#: pairs, where ``id`` is the cheaper call).
_ROTATED_IDS_MIN = 2048
#: The dtype kinds whose value copy is a byte copy (strings, void and structured dtypes go
#: to the general path's byte views).
_KINDS = frozenset("biufcmM")
#: The C helper's import name.
EXTENSION = "warplab.core._hostcopy"
#: The helper, or None where the checks run in Python; read once, at import (tests replace it
#: to take the Python path).
_ext, _WHY = load(EXTENSION, "WARPLAB_HOST_COPY")


def status() -> str:
    """How ``copy_batched`` of NumPy arrays checks and copies, and why, in words."""
    if _ext is not None:
        return f"checked and copied in C (the built extension {EXTENSION})"
    return f"checked in Python, copied by np.copyto (fallback): {_WHY}"


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
    """Every element an exact ``ndarray``: the helper's loop, or a list of types counted in
    C (cheaper than a set)."""
    if _ext is not None:
        return bool(_ext.exact(_ND, arrays))
    return list(map(type, arrays)).count(_ND) == len(arrays)


def _words(flags: list[Any]) -> Any:
    """The distinct flag words of a non-empty list of ``ndarray.flags`` objects: the first's
    alone when all are equal to it (one count in C), else the set of words."""
    first = flags[0]
    if flags.count(first) == len(flags):
        return (first.num,)
    return set(map(_WORD, flags))


def copy_pairs(srcs: list[Any], dsts: list[Any]) -> bool:
    """``copy_batched`` of equal-shaped C-contiguous NumPy pairs of one numeric dtype
    (``_KINDS``: copied value for value, which is byte for byte) into aligned, writable
    destinations that own their memory: one ``np.copyto`` per pair. False (nothing written)
    for any other call.

    Each fact is one pass over a list in C (a ``map`` of an attribute getter), compared as a
    list or counted against its first element; a whole-list fact that implies another is
    read instead of it (equal flags objects on both sides: the sources' words are the
    destinations'; all 1-D: lengths are the shapes). With the C helper, any equal byte sizes
    and dtypes without Python objects: the bytes are copied, as the general path does."""
    if _ext is not None:
        if not dsts or type(dsts[0]) is not _ND:  # device arrays: no host plan looked up
            return False
        v = _variant()
        if v is None or not _ext.copy_pairs(_ND, dsts, srcs):
            return False
        _registry.ran(v)
        return True
    n = len(srcs)
    types = list(map(type, srcs))
    types += map(type, dsts)
    if not n or types.count(_ND) != 2 * n:
        return False
    dtypes = list(map(_DTYPE, srcs))
    if dtypes != list(map(_DTYPE, dsts)):
        return False
    ndims = list(map(_NDIM, srcs))
    ndims += map(_NDIM, dsts)
    if ndims.count(1) == 2 * n:  # 1-D arrays of one length have one shape (tuples: built per read)
        if list(map(len, srcs)) != list(map(len, dsts)):
            return False
    elif list(map(_SHAPE, srcs)) != list(map(_SHAPE, dsts)):
        return False
    dst_flags = list(map(_FLAGS, dsts))
    src_flags = list(map(_FLAGS, srcs))
    dst_words = _words(dst_flags)
    src_words = dst_words if src_flags == dst_flags else _words(src_flags)
    for f in dst_words:
        if f & _DST_FLAGS != _DST_FLAGS:
            return False
    for f in src_words:
        if not f & _C_CONTIGUOUS:
            return False
    first = dtypes[0]
    for dt in (first,) if dtypes.count(first) == n else set(dtypes):
        if dt.kind not in _KINDS:
            return False
    ident = id if n < _ROTATED_IDS_MIN else object.__hash__
    dst_ids = set(map(ident, dsts))
    if len(dst_ids) != n or not dst_ids.isdisjoint(map(ident, srcs)):
        return False
    for f in src_words:
        if not f & _OWNDATA:  # views as sources: of arrays owning their memory, no destination?
            bases = [a.base for a in srcs if not a.flags.owndata]
            if not _all_arrays(bases) or not dst_ids.isdisjoint(map(ident, bases)) \
                    or not all(b.flags.owndata for b in bases):
                return False
            break
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
        out = _CONCATENATE(arrays, axis)
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

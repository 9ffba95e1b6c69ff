"""NumPy's semantics for input NumPy would not treat as a plain array.

NumPy hands some inputs to other code: a masked array (``numpy.ma``) to its own methods, an
ndarray subclass to its overridden methods, an object with ``__array_function__`` (a Dask
array, for one) to that protocol. A warplab function with a NumPy name does what NumPy does
with such input: it calls NumPy's own function (:func:`defer`), or, where NumPy itself has no
semantics for it (NumPy's ``histogram`` of a masked array ignores the mask), raises
``InvalidTypeError`` (:func:`refuse`) rather than dropping the mask silently. Functions with
no NumPy name refuse such input too.

:func:`kind` classifies an input in one exact type check for plain NumPy arrays; the families
call it only off their fast paths (a plain ``numpy.ndarray``, a CuPy array), so a warm call
on plain input pays nothing or one type check (the memcpy family's list arguments: one per
array). A device array is recognised by its type's ``__cuda_array_interface__`` (the type's
attribute: CuPy's instance property builds a dict). ``numpy.memmap`` counts as plain: it overrides
nothing NumPy's reductions use.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from warplab.core.errors import InvalidTypeError

#: the words error messages use for each kind
_WORDS = {
    "masked": "a masked array (numpy.ma.MaskedArray)",
    "subclass": "an ndarray subclass",
    "array_function": "an object with __array_function__",
}


def kind(x: Any) -> str | None:
    """``"masked"``, ``"subclass"``, ``"array_function"`` for input NumPy dispatches elsewhere
    (see the module docstring), None for everything warplab reads as an array itself (NumPy
    and CuPy arrays, memory maps, torch tensors, sequences, bytes, paths)."""
    return _kind_of(type(x))


def _kind_of(t: type) -> str | None:
    """:func:`kind` of every instance of type ``t`` (the decision depends on the type only)."""
    if t is np.ndarray or t is np.memmap or hasattr(t, "__cuda_array_interface__"):
        return None
    if issubclass(t, np.ndarray):
        return "masked" if issubclass(t, np.ma.MaskedArray) else "subclass"
    return None if getattr(t, "__array_function__", None) is None else "array_function"


#: the kinds in the order a mixed list reports them: a mask refused before anything deferred
_RANK = {"masked": 0, "subclass": 1, "array_function": 2}


def first_kind(xs: Any) -> str | None:
    """The :func:`kind` that decides a call on the arrays ``xs`` (a list or tuple; None
    entries stand for absent arguments): ``"masked"`` if any is masked, else the first other
    kind found, None if every array is plain. A few plain NumPy arrays cost one exact type
    test each; otherwise each distinct type is classified once (a list of many arrays: one
    pass of ``type()`` in C)."""
    if len(xs) <= 8:  # a few arguments: one exact type test each
        for x in xs:
            if type(x) is not np.ndarray and x is not None:
                break
        else:
            return None
    types = set(map(type, xs))
    types.discard(np.ndarray)
    found = [k for k in map(_kind_of, types) if k is not None]
    return min(found, key=_RANK.__getitem__) if found else None


def describe(k: str) -> str:
    """The words for kind ``k`` in an error message."""
    return _WORDS[k]


def defer(public: str, k: str, fn: Callable[..., Any], args: tuple[Any, ...],
          kwargs: dict[str, Any], extras: dict[str, Any] | None = None) -> Any:
    """NumPy's ``fn(*args, **kwargs)`` for input of kind ``k`` to warplab's ``public``.

    Args:
        public: the public function's name, for the error message.
        k: what :func:`kind` said of the input.
        fn: NumPy's function of the same name.
        args, kwargs: NumPy's arguments (options at their defaults left out).
        extras: warplab's own options as given (``variant``, ``device``...): a value other
            than None or False raises, since NumPy's function takes no such option.

    Raises:
        InvalidTypeError: a warplab-only option was given.
    """
    if extras:
        given = [name for name, v in extras.items() if v is not None and v is not False]
        if given:
            opts = ", ".join(f"{n}=" for n in given)
            raise InvalidTypeError(
                f"{public}() of {describe(k)} runs NumPy's {fn.__name__}, which takes no {opts}; "
                f"pass a plain numpy.ndarray (np.asarray) to use warplab's kernels")
    return fn(*args, **kwargs)


def refuse(public: str, x: Any, reason: str = "") -> InvalidTypeError:
    """The error for input ``x`` (not plain, see :func:`kind`) that warplab's ``public``
    does not take: NumPy has no semantics for it there (``reason`` says so) or ``public``
    has no NumPy counterpart (the default reason)."""
    k = kind(x) or "array_function"
    if k == "masked":
        why = reason or "it has no masked semantics"
        return InvalidTypeError(f"{public}() does not take a masked array (numpy.ma.MaskedArray): "
                                f"{why}; pass a.compressed() (the unmasked values) or "
                                f"a.filled(value)")
    why = reason or "it has no NumPy counterpart to dispatch to"
    name = f"{type(x).__module__}.{type(x).__qualname__}"
    return InvalidTypeError(f"{public}() does not take {describe(k)} ({name}): {why}; pass a "
                            f"numpy.ndarray (np.asarray(x)) or a CuPy array")

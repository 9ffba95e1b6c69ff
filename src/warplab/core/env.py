"""Environment reads cheap enough for a warm call's path.

``os.environ.get`` encodes the name and decodes the value on every call (about a microsecond);
a call whose NumPy equivalent takes two cannot afford that. :func:`raw` looks the name up in
the process environment's own mapping (``os.environ._data`` on POSIX, the same dict
``os.environ`` reads and writes) and returns the value undecoded: fit for a plan key, which only
needs a value that changes when the variable does. Elsewhere it falls back to
``os.environ.get``.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

_DATA: Any = getattr(os.environ, "_data", None)
_POSIX = os.name == "posix" and isinstance(_DATA, dict)


def raw(name: str) -> Any:
    """The value of environment variable ``name`` as stored (bytes on POSIX), or None."""
    if _POSIX:
        return _DATA.get(name.encode())
    return os.environ.get(name)


def reader(name: str) -> Callable[[], Any]:
    """A function of no arguments that returns :func:`raw` ``(name)``, with the name encoded
    once: one C call per read (a plan key's read of ``WARPLAB_DEVICE``)."""
    if _POSIX:
        return functools.partial(_DATA.get, name.encode())
    return functools.partial(os.environ.get, name)


#: ``WARPLAB_DEVICE`` as stored: the backend override every host plan key holds.
device = reader("WARPLAB_DEVICE")


def is_set(name: str) -> bool:
    """True when environment variable ``name`` is set (to anything, empty included)."""
    return raw(name) is not None

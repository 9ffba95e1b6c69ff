"""Importing the C helpers built with the package (``setup.py``): each is optional, so an
import says why it is absent instead of failing."""
from __future__ import annotations

import importlib
import os
from types import ModuleType


def load(name: str, switch: str) -> tuple[ModuleType | None, str]:
    """The extension module ``name`` and ``""``, or None and why it is not used: the
    environment variable ``switch`` set to ``0``/``off``/``no`` (a debugging switch), the
    extension not built (no C compiler or Python headers at install time), or an import
    error."""
    if os.environ.get(switch, "1").strip().lower() in ("0", "off", "no"):
        return None, f"{switch}=0"
    try:
        return importlib.import_module(name), ""
    except ModuleNotFoundError as e:
        if e.name != name:
            raise
        return None, (f"the extension {name} is not built (no C compiler or Python headers at "
                      "install time; in a source tree, run `python3 setup.py build_ext "
                      "--inplace`)")
    except ImportError as e:
        return None, f"the extension {name} does not import: {e}"

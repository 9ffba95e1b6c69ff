"""The C helpers of the library, built with the package: ``warplab.core._launch`` (the short
paths' kernel launch, ``core/launch.c``, and small reads, ``core/readback.c``),
``warplab.core._ntcopy`` (the staging copy with streaming stores, ``core/ntcopy.c``) and
``warplab.core._hostcopy`` (``copy_batched``'s pairs: NumPy arrays in ``core/hostcopy.c``, CuPy
arrays in ``core/devicepairs.c``). Everything else about the package is in ``pyproject.toml``.

setuptools stays the build backend: it already builds the package, and ``Extension(...,
optional=True)`` lets a build without a C compiler or Python headers succeed without the
helpers, where the library then takes its Python paths (``launch.status()`` and
``ntcopy.status()`` say which is in use).

A machine that runs from the tree (``PYTHONPATH=src``) builds them beside their sources with
``python3 setup.py build_ext --inplace``, or, where the installed setuptools is too old to read
``pyproject.toml`` (before 77), with ``python3 -c "import setup; setup.build_in_place()"``.
"""
from __future__ import annotations

import os

from setuptools import Distribution, Extension, setup

CORE = "src/warplab/core/"
EXTENSIONS = [
    # Every architecture builds it; only x86-64 (SSE2) has streaming stores, and ntcopy.py
    # uses np.copyto elsewhere (the module's STREAMING is 0 there).
    Extension("warplab.core._ntcopy", [CORE + "ntcopy.c"], optional=True),
    # copy_batched's pairs: every pair checked, then copied (families/memcpy/host.py) or its
    # addresses packed (families/memcpy/transfer.py). depends: the internal headers, which
    # rebuild the module when they change and go into the sdist.
    Extension("warplab.core._hostcopy", [CORE + "hostcopy.c", CORE + "devicepairs.c"],
              depends=[CORE + "hostcopy_pairs.h", CORE + "hidden.h"], optional=True),
]
if os.name == "posix":  # dlopen and pthreads
    EXTENSIONS.append(Extension("warplab.core._launch", [CORE + "launch.c", CORE + "readback.c"],
                                depends=[CORE + "launch_driver.h", CORE + "hidden.h"],
                                libraries=["dl", "pthread"], optional=True))


def build_in_place() -> None:
    """Build the extensions from the current sources beside them under ``src/`` without
    reading ``pyproject.toml`` (any setuptools will do); a helper that fails to build is
    reported and left out, as in a package build."""
    dist = Distribution({"name": "warplab", "ext_modules": EXTENSIONS,
                         "package_dir": {"": "src"}, "script_name": "setup.py",
                         "script_args": ["build_ext", "--inplace", "--force"]})
    dist.parse_command_line()
    dist.run_commands()


if __name__ == "__main__":
    setup(ext_modules=EXTENSIONS)

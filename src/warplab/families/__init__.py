"""The library's families: one folder each, on the shared core (``warplab.core``).

Every family folder has the same parts under the same names:

========================  =====================================================================
``__init__.py``           imports ``cpu`` and ``cuda`` (registering the variants) and re-exports
                          the public functions (its ``__all__``)
``api.py``                the public functions: validate, choose backend and variant, run
``spec.py``               the problem dispatch sees, dtypes, and the cost model of every variant
``cpu.py``                the NumPy reference backend (a registered ``cpu`` variant)
``cuda.py``               the launch plans of the CUDA variants and their ``DEFINES``
``<family>.cu``           the kernels (compiled by NVRTC, ``-D`` constants from ``cuda.py``)
========================  =====================================================================

What measures a family (its campaign, comparators and CLI subcommand) lives in the lab,
``warplab.lab.campaigns.<family>``; the library never imports it. Adding a family: a folder
with these parts, its name in ``FAMILIES`` and its ``__all__`` in ``warplab/__init__.py``'s
``_FAMILY_NAMES`` (the package imports a family on the first use of one of its names); see
``docs/architecture.md``.
"""
from __future__ import annotations

FAMILIES = ("histogram", "reduce", "matmul", "series", "corr", "memcpy")

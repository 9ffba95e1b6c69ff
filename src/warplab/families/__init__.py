"""The families: one folder each, on the shared core (``warplab.core``), the harness
(``warplab.bench``) and the report (``warplab.report``).

Every family folder has the same parts under the same names:

========================  =====================================================================
``__init__.py``           imports ``cpu`` and ``cuda`` (registering the variants) and re-exports
                          the public functions (its ``__all__``)
``api.py``                the public functions: validate, choose backend and variant, run
``spec.py``               the problem dispatch sees, dtypes, and the cost model of every variant
``cpu.py``                the NumPy reference backend (a registered ``cpu`` variant)
``cuda.py``               the launch plans of the CUDA variants and their ``DEFINES``
``<family>.cu``           the kernels (compiled by NVRTC, ``-D`` constants from ``cuda.py``)
``bench.py``              the benchmark campaign: what to time, verification, records
``comparators.py``        what people use today (CuPy, torch, cuda.compute), as providers
``command.py``            the CLI subcommand and the family's part of ``warplab bench``
========================  =====================================================================

Adding a family: a folder with these parts and its name in ``FAMILIES`` (the CLI and
``warplab bench`` find it there; ``warplab/__init__.py`` re-exports its ``__all__``).
"""
from __future__ import annotations

FAMILIES = ("histogram", "reduce", "matmul", "series", "corr", "memcpy", "latency", "stream",
            "dask")

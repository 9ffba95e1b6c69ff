"""One campaign per family (``<family>/bench.py``), its comparators and its CLI subcommand
(``<family>/command.py``); ``latency``, ``stream`` and ``dask`` measure calls end to end
across families; ``numpy`` measures the cpu backend against NumPy's own calls."""
from __future__ import annotations

from warplab.families import FAMILIES

#: Every campaign, in the order ``warplab bench all`` runs them and the CLI lists them.
CAMPAIGNS = (*FAMILIES, "latency", "stream", "dask", "numpy")

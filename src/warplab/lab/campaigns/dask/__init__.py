"""Scale-out on Dask, measured: a measurement-only folder (the functions are
``warplab.dask``, outside the families: nothing here imports it, or Dask, until a campaign
runs). ``warplab dask`` and ``warplab bench dask`` run the campaign of ``bench.py``."""
from __future__ import annotations

__all__: list[str] = []

"""warplab on Dask: the same primitives over many chunks, GPUs and machines (docs/dask.md).

Every function takes a ``dask.array`` whose chunks are NumPy or CuPy arrays and returns lazy
dask arrays; ``.compute()`` gives what the single-machine warplab function gives. warplab's
own function runs on every chunk (on the GPU for CuPy chunks) and the partial results combine
by Dask's tree reduction; Dask schedules, moves data and retries. Nothing else in warplab
imports this package, so warplab works without Dask installed.

    import dask.array as da, warplab.dask as wd

    x = da.random.random((100_000, 512), chunks=(25_000, 512))
    wd.mean(x, axis=0).compute()
    wd.corr_pairs(x, threshold=0.9)              # lazy (i, j, r), no M x M matrix
    wd.histogram_files("logs/*.bin").compute()   # byte ranges read by the workers
"""
from __future__ import annotations

try:
    import dask.array  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without dask installed
    raise ImportError("warplab.dask needs Dask: pip install 'warplab[dask]' (dask[array] and "
                      "distributed)") from exc

from warplab.dask.chunking import Plan, plan, rechunk
from warplab.dask.corr import corr_pairs, corrcoef
from warplab.dask.files import histogram_files
from warplab.dask.histograms import bincount, byte_histogram, histogram
from warplab.dask.reductions import max, mean, min, series_stats, std, sum, var  # noqa: A004

__all__ = ["Plan", "bincount", "byte_histogram", "corr_pairs", "corrcoef", "histogram",
           "histogram_files", "max", "mean", "min", "plan", "rechunk", "series_stats", "std",
           "sum", "var"]

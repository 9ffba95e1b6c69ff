"""The Dask campaign's table (``lab/campaigns/dask/bench.py``).

Its records are distributed calls timed end to end (``phases.total``): per workload
(``variant``: corr_pairs_0.9, corrcoef, histogram_files..., fixed_cost), ``params.mode``
("direct": the single-machine call; "cluster" or "processes": Dask on ``params.workers``
workers, with its ``params.protocol``) and cluster type, with
the campaign's derived numbers (``e2e_gbps``, ``tflops``, ``speedup`` over one worker,
``efficiency``, ``overhead_pct`` of a one-worker cluster over the direct call). They have no
kernel phase and no size axis, so the generic figures and tables skip the family
(``groups.DASK_FAMILIES``); this one table per device lists them, latest run per
configuration.
"""
from __future__ import annotations

from warplab.lab.report.groups import DASK_FAMILIES, group_by, latest
from warplab.lab.report.load import Results, Row, num
from warplab.lab.report.tables import Table

DASK_KINDS = ("dask",)
COLUMNS = ["workload", "mode", "workers", "cluster", "shape", "median ms", "GB/s", "TFLOP/s",
           "speedup", "efficiency", "overhead %"]


def _shape(r: Row) -> str:
    m, n = r.params.get("m"), r.params.get("n")
    return f"{m} x {n}" if m is not None and n is not None else "-"


def _cell(r: Row, key: str) -> float | None:
    return num(r.extra.get(key))


def _mode(r: Row) -> str:
    """The mode with its protocol where it has one (``cluster tcp``, ``processes tcp``)."""
    proto = r.params.get("protocol")
    return str(r.params.get("mode", "-")) + (f" {proto}" if proto else "")


def dask_tables(results: Results) -> list[Table]:
    """One table per device of the dask records that verified (median end-to-end ms and the
    campaign's derived columns; "-" where a column does not apply)."""
    rows = [r for r in results.rows if r.family in DASK_FAMILIES and r.ok
            and r.variant != "host_read"]  # the host's read bandwidth: no call, no mode
    out: list[Table] = []
    by_device = group_by(rows, lambda r: r.device)
    for device, drows in sorted(by_device.items()):
        at = latest(drows, lambda r: (r.variant, _mode(r),
                                      r.params.get("workers"), str(r.params.get("cluster")),
                                      _shape(r)))
        body = []
        for r in sorted(at.values(), key=lambda r: (r.variant, _mode(r),
                                                    int(r.params.get("workers") or 0))):
            total = r.phases.get("total")
            body.append([r.variant, _mode(r),
                         r.params.get("workers", "-"), str(r.params.get("cluster") or "-"),
                         _shape(r), total["median"] if total else None,
                         _cell(r, "e2e_gbps"), _cell(r, "tflops"), _cell(r, "speedup"),
                         _cell(r, "efficiency"), _cell(r, "overhead_pct")])
        title = "dask: distributed calls end to end" + (f" ({device})" if len(by_device) > 1
                                                        else "")
        out.append(Table(title=title, columns=list(COLUMNS), rows=body, kind="dask",
                         family="dask", formats={5: ".2f", 6: ".1f", 7: ".3f", 8: ".2f",
                                                 9: ".2f", 10: ".1f"},
                         note="medians of the whole call (cluster: persist and wait); speedup "
                              "and efficiency against one worker of the same protocol; "
                              "overhead: a one-worker cluster over the direct call"))
    return out


__all__ = ["DASK_KINDS", "dask_tables"]

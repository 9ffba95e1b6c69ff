"""The NumPy-backend campaign's table (``lab/campaigns/numpy/bench.py``).

Its records are host-clock times per call of warplab's public functions on the cpu backend
(provider ``warplab``) and of NumPy's equivalent (provider ``numpy``), one pair per case (byte
histograms, bincount, batched copies, concatenate, split), timed in alternating bursts
(``phases.total``: ms per call). They have no kernel phase and the sizes of different cases
do not form a curve, so the generic figures and tables skip the family
(``groups.NUMPY_FAMILIES``); this table per device lists the pairs, latest run per case, and
:func:`summary_line` sums them up under the page's summary.
"""
from __future__ import annotations

from warplab.lab.report.groups import NUMPY_FAMILIES, group_by, latest
from warplab.lab.report.load import Results, Row
from warplab.lab.report.tables import Table

#: The goals the table is read against: warplab / NumPy per call, small and large inputs.
SMALL_GOAL, LARGE_GOAL = 1.5, 1.2
NUMPY_KINDS = ("numpy",)
COLUMNS = ["case", "warplab µs", "NumPy µs", "warplab / NumPy"]


def _median_us(r: Row) -> float | None:
    total = r.phases.get("total")
    return 1e3 * total["median"] if total and total.get("median") is not None else None


def pairs(results: Results) -> dict[str, list[tuple[str, float, float]]]:
    """Per device: ``(case, warplab µs, NumPy µs)`` of every case where both verified, in
    the campaign's order."""
    rows = [r for r in results.rows if r.family in NUMPY_FAMILIES and r.ok]
    out: dict[str, list[tuple[str, float, float]]] = {}
    for device, drows in sorted(group_by(rows, lambda r: r.device).items()):
        at = latest(drows, lambda r: (r.variant, r.provider))
        cases = list(dict.fromkeys(r.variant for r in drows))
        got = []
        for case in cases:
            ours, theirs = at.get((case, "warplab")), at.get((case, "numpy"))
            a = _median_us(ours) if ours else None
            b = _median_us(theirs) if theirs else None
            if a and b:
                got.append((case, a, b))
        if got:
            out[device] = got
    return out


def numpy_tables(results: Results) -> list[Table]:
    """One table per device: per case the two medians and their ratio."""
    by_device = pairs(results)
    out = []
    for device, got in by_device.items():
        title = "numpy: warplab's NumPy backend against NumPy, per call" + (
            f" ({device})" if len(by_device) > 1 else "")
        out.append(Table(title=title, columns=list(COLUMNS),
                         rows=[[c, a, b, a / b] for c, a, b in got], kind="numpy",
                         family="numpy", formats={1: ".2f", 2: ".2f", 3: ".2f"},
                         note=f"medians of host-clock bursts, warplab's call and NumPy's "
                              f"alternating; warplab / NumPy below 1: warplab is faster "
                              f"(goals: {SMALL_GOAL}× for small inputs, {LARGE_GOAL}× for "
                              f"large ones)"))
    return out


def summary_line(results: Results) -> str | None:
    """The line under the summary: how many cases are within 1.5× and the slowest one."""
    by_device = pairs(results)
    if not by_device:
        return None
    parts = []
    for device, got in by_device.items():
        ratios = [(a / b, c) for c, a, b in got]
        within = sum(1 for x, _ in ratios if x <= SMALL_GOAL)
        worst, case = max(ratios)
        parts.append((f"{device}: " if len(by_device) > 1 else "")
                     + f"{within} of {len(ratios)} cases within {SMALL_GOAL}× of NumPy's "
                       f"own call; slowest {case} at {worst:.2f}×")
    return ("numpy (warplab's NumPy backend against NumPy, time per call; below 1: warplab "
            "faster): " + "; ".join(parts) + ".")


__all__ = ["NUMPY_KINDS", "numpy_tables", "pairs", "summary_line"]

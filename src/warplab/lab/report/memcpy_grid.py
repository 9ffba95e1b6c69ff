"""The cases of the batched-copy campaign's grid (``lab/campaigns/memcpy/bench.py``), the
records the memcpy report reads, and the grid's row of the summary.

Its records are cells of CUB's DeviceBatchMemcpy benchmark grid: a buffer-size class (uniform
random sizes in ``[params.min, params.max]``; a fixed size where they are equal), the source and
destination layouts (``params.in`` / ``params.out``: consecutive or shuffled, C/S), the
alignment of offsets and sizes (``params.align``), at a fixed total of data. This module names
them (:func:`class_label`, :func:`layout`, :func:`case_key`: the grid's order), picks the
records a table or figure shows (:func:`kernel_rows`: verified kernel-phase records of the
variants the package registers and of the comparators; :func:`default_name`: the variant the
tables call the default), gives the device's measured copy ceiling (:func:`copy_roof`) and the
grid in one summary row (:func:`headline_pick`). :mod:`warplab.lab.report.memcpy` draws the
figures and builds the tables from them; :mod:`warplab.lab.report.memcpy_target` judges each
case against its speed target.
"""

from __future__ import annotations

from typing import Sequence

from warplab.lab.report.groups import Pick, group_by, latest
from warplab.lab.report.load import Results, Row, num
from warplab.lab.report.memcpy_target import LARGE, TARGET_LARGE_PCT, cell_ceiling, scatter_ceilings
from warplab.lab.report.roofline import device_ceilings
from warplab.lab.report.units import fmt_pct

DEFAULT = "warp_tiers_windows"   # the cuda default (rank 0 of memcpy_batched)
#: The defaults before, newest first: what older runs measured as their default.
EARLIER_DEFAULTS = ("warp_tiers_words", "warp_classes", "size_classes_tuned")
Class = tuple[int, int]


def fmt_bytes(n: int) -> str:
    """``"16 B"``, ``"1 KiB"``, ``"64 KiB"``, ``"1.5 KiB"``: binary units from 1 KiB up."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            v = n / size
            return f"{v:g} {unit}" if v == int(v) else f"{v:.3g} {unit}"
    return f"{n} B"


def class_label(lo: int, hi: int) -> str:
    """A size class: ``"16 B"`` (fixed), ``"1–8 B"``, ``"1–4 KiB"`` (one unit), ``"1 B–64 KiB"``
    (units differ: ``"1–64 KiB"`` would read as 1 KiB to 64 KiB)."""
    if lo == hi:
        return fmt_bytes(hi)
    a, b = fmt_bytes(lo), fmt_bytes(hi)
    if a.split()[-1] == b.split()[-1]:
        return f"{a.split()[0]}–{b}"
    return f"{a}–{b}"


def size_class(r: Row) -> Class:
    """``(min, max)`` buffer bytes of a record."""
    return int(num(r.params.get("min")) or 0), int(num(r.params.get("max")) or 0)


def class_key(c: Class) -> tuple[int, int]:
    """Classes ordered by their largest size, then their smallest (a range before the fixed
    size it ends at)."""
    return c[1], c[0]


def layout(r: Row) -> str:
    """``"CC"``, ``"CS"``, ``"SC"`` or ``"SS"`` from ``params.in`` / ``params.out``."""
    return "".join(str(r.params.get(k) or "?")[:1].upper() for k in ("in", "out"))


def align_of(r: Row) -> int:
    """The alignment of offsets and sizes (1 when absent)."""
    return int(num(r.params.get("align")) or 1)


def case_key(r: Row) -> tuple[int, str, int, int]:
    """``(align, layout, max, min)``: the grid's order."""
    lo, hi = size_class(r)
    return align_of(r), layout(r), hi, lo


def case_text(r: Row) -> str:
    """``"CC 1–8 B · align 1"``."""
    return f"{layout(r)} {class_label(*size_class(r))} · align {align_of(r)}"


def is_cub(r: Row) -> bool:
    """CUB's ``DeviceMemcpy::Batched`` (provider ``cub``)."""
    return r.provider.lower().startswith("cub") or r.variant.lower().startswith("cub")


def _measured(results: Results) -> list[Row]:
    """Verified kernel-phase records with a bandwidth, of every series."""
    return [r for r in results.rows if r.family == "memcpy" and r.ok and r.gbps
            and r.params.get("mode", "kernel") == "kernel"]


def kernel_rows(results: Results) -> list[Row]:
    """Verified kernel-phase records with a bandwidth, of the package's variants and the
    comparators (:func:`package_rows`)."""
    return package_rows(_measured(results))[0]


def package_rows(rows: Sequence[Row]) -> tuple[list[Row], list[str]]:
    """The records of the variants the package registers (``warplab.variants`` of
    ``memcpy_batched`` on the record's backend) and of the comparators, and the series left
    out: the kernel shapes and candidates only the explore scripts time
    (``benchmarks/explore_memcpy_*.py``: "default again", ``warp_classes[...]``) and variants
    since removed. Their records stay in the JSON files, and ``benchmarks/NOTES.md`` tells what
    they measured; a table of every variant with dozens of them is not one a reader reads."""
    from warplab.core import registry

    names = {b: {v.name for v in registry.variants("memcpy_batched", b)}
             for b in {r.backend for r in rows}}
    keep, out = [], set()
    for r in rows:
        if r.provider != "warplab" or r.variant in names[r.backend]:
            keep.append(r)
        else:
            out.add(r.series)
    return keep, sorted(out)


def default_name(rows: Sequence[Row]) -> str | None:
    """The variant the tables call the default: :data:`DEFAULT` where measured, else
    :data:`EARLIER_DEFAULTS` in order (runs from before each switch), else the only warplab
    variant (the cpu backend's ``numpy``); None when none of these."""
    names = {r.variant for r in rows if r.provider == "warplab"}
    for name in (DEFAULT, *EARLIER_DEFAULTS):
        if name in names:
            return name
    return next(iter(names)) if len(names) == 1 else None


def copy_roof(results: Results, device: str) -> float | None:
    """The device's measured copy ceiling (GB/s, read + written)."""
    v = num(device_ceilings(results.sources, device).get("copy_gbps"))
    return v if v and v > 0 else None


def _pct(r: Row | None, roof: float | None) -> float | None:
    if r is None or not r.gbps:
        return None
    return 100.0 * r.gbps / roof if roof else num(r.pct_of_copy_bw)


def _cases(rows: Sequence[Row]) -> list[tuple[tuple[int, str, int, int], dict[str, Row]]]:
    """Per grid case (in order) the newest record of every series."""
    groups = group_by(rows, case_key)
    return [(k, latest(groups[k], lambda r: r.series)) for k in sorted(groups)]


def headline_pick(results: Results, device: str, rows: Sequence[Row]) -> Pick | None:
    """The grid in one row: the case where the default does worst against CUB (without CUB:
    its lowest % of copy), the ratio's spread over the grid, and the share of the cases with
    buffers >= 1 KiB at >= 90% of the copy ceiling; its roof is that case's cell ceiling where
    a valid scatter ceiling lies below the copy ceiling (``memcpy_target``), else the copy
    ceiling."""
    rows = [r for r in rows if r.ok and r.gbps and r.params.get("mode", "kernel") == "kernel"]
    default, roof = default_name(rows), copy_roof(results, device)
    if default is None:
        return None
    pairs = []
    for _, at in _cases(rows):
        d = next((r for r in at.values() if r.variant == default), None)
        cub = next((r for r in at.values() if is_cub(r)), None)
        if d is not None:
            pairs.append((d, cub))
    if not pairs:
        return None
    ratios = [(d.gbps / c.gbps, d, c) for d, c in pairs if c is not None and c.gbps]
    if ratios:
        _, best, rival = min(ratios, key=lambda t: t[0])
        spread = (min(t[0] for t in ratios), max(t[0] for t in ratios), len(ratios))
        detail = f"worst of {len(ratios)} cases vs CUB"
    else:
        best, rival, spread = min((d for d, _ in pairs), key=lambda d: d.gbps or 0.0), None, None
        detail = f"slowest of {len(pairs)} cases (no CUB)"
    large = [d for d, _ in pairs if size_class(d)[0] >= LARGE]
    if large and roof:
        fast = sum(1 for d in large if (_pct(d, roof) or 0) >= TARGET_LARGE_PCT)
        detail += (f"; ≥ {TARGET_LARGE_PCT:.0f}% of copy in {fast} of {len(large)} cases ≥ 1 KiB "
                   f"({fmt_pct(100.0 * fast / len(large))})")
    cfg = (("align", align_of(best)), ("layout", layout(best)),
           ("min", size_class(best)[0]), ("max", size_class(best)[1]))
    scatter = scatter_ceilings(results, case_key).get((device, case_key(best)))
    cell = cell_ceiling(roof, scatter.gbps if scatter is not None else None)
    return Pick(cfg, best.size, best, rival, spread, f"{detail}, {case_text(best)}",
                ("cell ceiling", cell) if cell and roof and cell < roof else None)


__all__ = ["DEFAULT", "EARLIER_DEFAULTS", "align_of", "case_key", "case_text", "class_key",
           "class_label", "copy_roof", "default_name", "fmt_bytes", "headline_pick", "is_cub",
           "kernel_rows", "layout", "package_rows", "size_class"]

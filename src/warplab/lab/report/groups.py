"""Grouping helpers shared by figures and tables.

A *config* is the part of a record's ``params`` that selects one plot/table:
for the histogram family always ``bins`` and ``data`` (reduce: ``op``, ``dtype``, ``data``),
plus any other parameter that varies within the family (``size``, ``runs``, ``warmup``,
``held``, ``rounds``, ``checked_rows`` and ``timing`` never count, and a parameter fully
determined by the other config keys, like ``nbins`` by ``bins``, is dropped). A *series* is
one line in a plot: the variant, suffixed with the device when a family holds rows from more
than one device.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterable, NamedTuple, Protocol, Sequence, TypeVar


class Row(Protocol):
    """What grouping reads of a result row (``load.Row`` has it; this module does not import
    ``load``, which imports this one)."""

    family: str
    variant: str
    provider: str
    backend: str
    device: str
    params: dict[str, Any]
    size: int | None
    config: tuple[tuple[str, Any], ...]
    series: str

    @property
    def median(self) -> float | None: ...

    @property
    def ok(self) -> bool: ...

K = TypeVar("K", bound=Hashable)

# Measurement details, not configurations: runs, warm-up, whether the timed phase could be
# held behind a blocking kernel (a property of the call being timed), the rounds that
# interleave timed calls, how many rows of a large product were verified, and how the kernel
# phase was timed (memcpy's planned grid: "back_to_back").
EXCLUDED_KEYS = frozenset({"size", "runs", "warmup", "held", "rounds", "checked_rows",
                           "timing"})
ALWAYS_KEYS: dict[str, tuple[str, ...]] = {
    "histogram": ("bins", "data"),
    "reduce": ("op", "dtype", "data"),
}
BASELINE: dict[str, str] = {"histogram": "global", "reduce": "neighbored_gmem"}
RATIO_PAIR: tuple[str, str] = ("letters", "ascii128")  # numerator, denominator bins
CANONICAL_ORDER: dict[str, tuple[str, ...]] = {
    "histogram": ("global", "global_stride", "private", "private_stride"),
    # the reduction lecture's kernels in the lecture's order, then warplab's own two
    "reduce": ("neighbored_gmem", "neighbored_smem", "neighbored_smem_nodiv",
               "interleaved_smem", "unroll2", "unroll_warp8", "complete_unroll8",
               "complete_unroll8_template", "single_pass_fence", "persistent_vec"),
    # the Pearson report's K1 launches (block 1024, then 32), then warplab's generators
    "random_walk": ("k1_thread_per_series", "k1_thread_per_series_b32"),
    # the Pearson report's K2 steps in its order, then warplab's default for rows
    "reduce_axis": ("k2_basic", "k2_shared", "k2_shared_unrolled", "k2_multiblock",
                    "rows_adaptive"),
    # the Pearson report's steps 3-5 literally, the lecture's tiling, the tensor-core default
    "corrcoef": ("pairwise_direct", "tiled_smem", "tc_gram"),
    # one copy call per buffer, the obvious one-launch kernels, CUB's DeviceBatchMemcpy design,
    # then the default and the older defaults (memcpy_grid.EARLIER_DEFAULTS)
    "memcpy": ("loop_memcpy_async", "block_per_buffer", "warp_per_buffer", "size_classes",
               "warp_tiers_windows", "warp_tiers_words", "warp_classes", "size_classes_tuned"),
}
# Families of the series campaign (lab/campaigns/series/bench.py): their records are shapes (M x N),
# not sizes, so the per-config figures and tables above do not fit them; report/series.py
# draws their figures and builds their tables, and the generic ones skip them.
SERIES_FAMILIES = frozenset({"random_walk", "reduce_axis", "series_accuracy", "series_baseline"})
# The corr campaign (lab/campaigns/corr/bench.py): shapes (M series of N values) measured per
# precision, with an error column; report/corr.py draws and tabulates them.
CORR_FAMILIES = frozenset({"corrcoef", "corr_pairs"})
# The batched-copy campaign (lab/campaigns/memcpy/bench.py): a grid of buffer-size classes x layouts
# x alignments at a fixed total; report/memcpy.py draws and tabulates it.
MEMCPY_FAMILIES = frozenset({"memcpy"})
# The latency campaign (lab/campaigns/latency/bench.py): host-clock times of small calls per case and
# mode (call latency, host time per call) next to CuPy, PyTorch and the bare launch; no kernel
# phase, no size axis, no rate; report/latency.py draws and tabulates it.
LATENCY_FAMILIES = frozenset({"latency"})
# The streaming campaign (lab/campaigns/stream/bench.py): the end-to-end time of a public call on
# host data, split into read, H2D and kernel (per-run sums over chunks); report/stream.py.
STREAM_FAMILIES = frozenset({"stream"})
# The Dask campaign (lab/campaigns/dask/bench.py): the end-to-end time of a distributed compute()
# per workload, mode (direct, cluster) and worker count; report/dask.py tabulates it.
DASK_FAMILIES = frozenset({"dask"})
# The NumPy-backend campaign (lab/campaigns/numpy/bench.py): host-clock medians of warplab's
# public calls on the cpu backend and of NumPy's equivalent per case; report/numpy.py.
NUMPY_FAMILIES = frozenset({"numpy"})
# Families whose measurement is the end-to-end time (``phases.total``) of a call: a record with
# that and no kernel phase is well formed.
END_TO_END_FAMILIES = LATENCY_FAMILIES | STREAM_FAMILIES | DASK_FAMILIES | NUMPY_FAMILIES
# Families with a report module of their own: the generic per-size figures, glance and median
# tables skip them.
OWN_REPORT_FAMILIES = (SERIES_FAMILIES | CORR_FAMILIES | MEMCPY_FAMILIES | LATENCY_FAMILIES
                       | STREAM_FAMILIES | DASK_FAMILIES | NUMPY_FAMILIES)
# Families whose canonical order is a chain of optimisation steps: they get the step-speedup
# figure and the lecture table (each canonical kernel against the one before it).
STEP_FAMILIES = frozenset({"reduce"})
_COLORS = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
    "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39",
    "#7b4173", "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363",
)
_MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*", "<", ">")


def _hashable(v: Any) -> Any:
    if isinstance(v, (dict, list)):
        return json.dumps(v, sort_keys=True, default=str)
    return v


def _functional(rows: Sequence[Row], keys: Sequence[str], target: str) -> bool:
    seen: dict[tuple[Any, ...], Any] = {}
    for r in rows:
        k = tuple(_hashable(r.params.get(c)) for c in keys)
        v = _hashable(r.params.get(target))
        if seen.setdefault(k, v) != v:
            return False
    return True


def config_keys(family: str, rows: Sequence[Row]) -> list[str]:
    """Return the params keys that define configs for one family's rows."""
    present = {k for r in rows for k in r.params} - EXCLUDED_KEYS
    always = [k for k in ALWAYS_KEYS.get(family, ()) if k in present]
    varying = sorted(
        k for k in present - set(always)
        if len({_hashable(r.params.get(k)) for r in rows}) > 1
    )
    keys = always + varying
    for k in varying:
        others = [c for c in keys if c != k]
        if _functional(rows, others, k):
            keys.remove(k)
    return keys


def assign_configs(rows: Sequence[Row]) -> None:
    """Set ``row.config`` on every row, family by family."""
    for family, frows in group_by(rows, lambda r: r.family).items():
        keys = config_keys(family, frows)
        for r in frows:
            r.config = tuple((k, _hashable(r.params.get(k))) for k in keys)


def assign_series(rows: Sequence[Row]) -> None:
    """Set ``row.series``: the variant, plus ``[device]`` when devices differ."""
    for _, frows in group_by(rows, lambda r: r.family).items():
        multi = len({(r.device, r.backend) for r in frows}) > 1
        for r in frows:
            r.series = f"{r.variant} [{r.device}]" if multi else r.variant


def config_label(config: Iterable[tuple[str, Any]], sep: str = ", ") -> str:
    """Human label for a config, e.g. ``"bins=letters, data=uniform"``."""
    return sep.join(f"{k}={v}" for k, v in config) or "all"


def slug(text: str) -> str:
    """Filesystem-safe fragment: ``[A-Za-z0-9._-]`` only, never empty."""
    s = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")
    return s or "x"


def config_slug(config: Iterable[tuple[str, Any]]) -> str:
    """File-name fragment for a config, e.g. ``"bins-letters_data-uniform"``."""
    return "_".join(slug(f"{k}-{v}") for k, v in config) or "all"


def sort_key_config(config: tuple[tuple[str, Any], ...]) -> tuple[str, ...]:
    """Stable ordering key for configs (values compared as strings)."""
    return tuple(str(v) for _, v in config)


def group_by(items: Iterable[Any], key: Callable[[Any], K]) -> dict[K, list[Any]]:
    """Group items by ``key`` preserving first-seen order."""
    out: dict[K, list[Any]] = defaultdict(list)
    for it in items:
        out[key(it)].append(it)
    return dict(out)


def by_config(rows: Iterable[Row]) -> list[tuple[tuple[tuple[str, Any], ...], list[Row]]]:
    """Group rows by config, configs sorted."""
    groups = group_by(rows, lambda r: r.config)
    return sorted(groups.items(), key=lambda kv: sort_key_config(kv[0]))


def without(config: tuple[tuple[str, Any], ...], key: str) -> tuple[tuple[str, Any], ...]:
    """The config with one key removed."""
    return tuple((k, v) for k, v in config if k != key)


def series_sort_key(family: str, rows: Sequence[Row]) -> Callable[[str], tuple[Any, ...]]:
    """Sort key for series names: canonical kernels, other warplab, comparators."""
    canon = CANONICAL_ORDER.get(family, ())
    info = {r.series: (r.variant, r.provider, r.device) for r in rows}

    def key(series: str) -> tuple[Any, ...]:
        variant, provider, device = info.get(series, (series, "", ""))
        rank = canon.index(variant) if variant in canon else len(canon)
        return (provider != "warplab", rank, variant, device)

    return key


def ordered_series(family: str, rows: Sequence[Row]) -> list[str]:
    """Distinct series of ``rows`` in display order."""
    return sorted({r.series for r in rows}, key=series_sort_key(family, rows))


def ordered_variants(family: str, rows: Sequence[Row]) -> list[str]:
    """Distinct variants of ``rows`` in display order (devices ignored)."""
    out: list[str] = []
    by_series = {r.series: r.variant for r in rows}
    for s in ordered_series(family, rows):
        if by_series[s] not in out:
            out.append(by_series[s])
    return out


def styles_for(family: str, rows: Sequence[Row]) -> dict[str, dict[str, Any]]:
    """Consistent matplotlib style (color, marker, linestyle) per series."""
    out: dict[str, dict[str, Any]] = {}
    providers = {r.series: r.provider for r in rows}
    for i, s in enumerate(ordered_series(family, rows)):
        out[s] = {
            "color": _COLORS[i % len(_COLORS)],
            "marker": _MARKERS[i % len(_MARKERS)],
            "linestyle": "-" if providers.get(s) == "warplab" else "--",
        }
    return out


def latest(rows: Iterable[Row], key: Callable[[Row], K]) -> dict[K, Row]:
    """Index rows by ``key``; on duplicates the last row read wins."""
    return {key(r): r for r in rows}


def largest_size(rows: Iterable[Row]) -> int | None:
    """Largest ``size`` among rows, or None."""
    sizes = [r.size for r in rows if r.size is not None]
    return max(sizes) if sizes else None


def fmt_size(n: int | None) -> str:
    """``2^k`` for powers of two, else the number with thousands separators."""
    if n is None:
        return "—"
    if n > 0 and n & (n - 1) == 0:
        return f"2^{n.bit_length() - 1}"
    return f"{n:,}"


@dataclass(frozen=True)
class Step:
    """One variant's place in a family's chain of optimisation steps, at one size.

    Attributes:
        row: The (ok) row measured for the variant.
        step: ``median(previous) / median(this)`` where *previous* is the nearest
            canonical warplab variant before this one that has an ok row at the
            same size; None for the first one of the chain and for variants
            off the chain (comparators, non-canonical warplab variants).
        cumulative: ``median(baseline) / median(this)``; None without a baseline row.
        on_chain: True for canonical warplab variants (the lecture's steps).
    """

    row: Row
    step: float | None
    cumulative: float | None
    on_chain: bool

    @property
    def comparator(self) -> bool:
        """True when the row comes from another library (``provider != "warplab"``)."""
        return self.row.provider != "warplab"


def _ratio(num: float | None, den: float | None) -> float | None:
    return num / den if num and den else None


def step_speedups(family: str, rows: Sequence[Row],
                  baseline: str | None = None) -> tuple[int | None, list[Step]]:
    """Step and cumulative speedups at the largest size measured for the baseline.

    Args:
        family: Family of the rows (selects the canonical order).
        rows: Rows of one config on one device; rows that are not ok are ignored.
        baseline: Reference variant of the cumulative speedup (default: the
            family's :data:`BASELINE`).

    Returns:
        ``(size, steps)``: steps in display order (canonical chain, other
        warplab variants, comparators). ``(None, [])`` when the baseline has no
        ok row with a size.
    """
    baseline = baseline or BASELINE.get(family)
    if baseline is None:
        return None, []
    ok = [r for r in rows if r.ok and r.size is not None and r.median]
    size = largest_size(r for r in ok if r.variant == baseline)
    if size is None:
        return None, []
    at_size = [r for r in ok if r.size == size]
    at = latest(at_size, lambda r: r.variant)
    base = at[baseline].median
    canon = CANONICAL_ORDER.get(family, ())
    steps: list[Step] = []
    prev: float | None = None
    for v in ordered_variants(family, at_size):
        r = at[v]
        on_chain = r.provider == "warplab" and v in canon
        step = _ratio(prev, r.median) if on_chain else None
        if on_chain:
            prev = r.median
        steps.append(Step(r, step, _ratio(base, r.median), on_chain))
    return size, steps


class Pick(NamedTuple):
    """What a family's own report module (corr, memcpy) picks for the summary's headline row;
    ``report.summary`` turns it into a ``Headline``.

    Attributes:
        config: The configuration compared (figure configs are matched against it).
        size: The size compared at (corrcoef: M; memcpy: the case's total data).
        best: The warplab row shown, or None.
        rival: The comparator row shown, or None.
        spread: ``(lowest, highest, count)`` of the warplab / comparator ratio over every
            configuration where both ran, or None.
        where: The "compared at" text, ``"<detail>, <main>"`` (the page shows the part after
            the last ``", "`` large and the rest under it).
        roof: ``(name, rate)`` of the roof the best row is judged against, where the family
            knows a closer one than the device's (memcpy: the case's cell ceiling); None for
            the device's.
    """

    config: tuple[tuple[str, Any], ...]
    size: int | None
    best: Row | None
    rival: Row | None
    spread: tuple[float, float, int] | None
    where: str
    roof: tuple[str, float] | None = None

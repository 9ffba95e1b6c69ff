"""Numbers with units, rounded for people: rates, sizes, times, percentages, timestamps.

Every rate is stored in the results as G-units per second (``gbps``, ``gflops``); the unit shown
is chosen from the value, so 91 GFLOP/s reads ``91.0 GFLOP/s`` and 51 213 GFLOP/s reads
``51.2 TFLOP/s`` (never ``0.1 TFLOP/s``). Bandwidths stay in GB/s from 1 GB/s up (the unit of
every bandwidth axis and table of the report), MB/s below.
"""

from __future__ import annotations

import datetime as _dt
import math
from typing import Any

# prefix, factor relative to G (giga)
_PREFIXES: tuple[tuple[str, float], ...] = (("P", 1e6), ("T", 1e3), ("G", 1.0), ("M", 1e-3),
                                            ("k", 1e-6))


def sig3(x: float) -> str:
    """Three significant digits, thousands separated: ``2,990``, ``51.2``, ``9.19``, ``0.123``."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    ax = abs(x)
    if ax >= 100:
        return f"{x:,.0f}"
    if ax >= 10:
        return f"{x:.1f}"
    if ax >= 1:
        return f"{x:.2f}"
    return f"{x:.3g}"


def flops_unit(gflops: float) -> tuple[float, str]:
    """``(divisor, unit)`` for a rate given in GFLOP/s: the largest prefix with a value >= 1."""
    ax = abs(gflops)
    for prefix, factor in _PREFIXES:
        if ax >= factor:
            return factor, f"{prefix}FLOP/s"
    return _PREFIXES[-1][1], f"{_PREFIXES[-1][0]}FLOP/s"


def bandwidth_unit(gbps: float) -> tuple[float, str]:
    """``(divisor, unit)`` for a bandwidth in GB/s: GB/s from 1 GB/s up, else MB/s."""
    return (1.0, "GB/s") if abs(gbps) >= 1 else (1e-3, "MB/s")


def fmt_flops(gflops: float | None) -> str:
    """A rate in GFLOP/s as text with the unit chosen from the value (``"—"`` for None)."""
    if gflops is None:
        return "—"
    div, unit = flops_unit(gflops)
    return f"{sig3(gflops / div)} {unit}"


def fmt_bandwidth(gbps: float | None) -> str:
    """A bandwidth in GB/s as text: ``2,990 GB/s``, ``18.2 GB/s``, ``512 MB/s``."""
    if gbps is None:
        return "—"
    div, unit = bandwidth_unit(gbps)
    return f"{sig3(gbps / div)} {unit}"


def fmt_rate(value: float | None, metric: str) -> str:
    """``metric`` is ``"gflops"`` (FLOP/s) or ``"gbps"`` (bytes/s)."""
    return fmt_flops(value) if metric == "gflops" else fmt_bandwidth(value)


def time_unit(max_ms: float) -> tuple[float, str]:
    """``(multiplier from ms, unit)`` so that the largest time reads between 1 and 1000."""
    if max_ms >= 1e3:
        return 1e-3, "s"
    if max_ms >= 1:
        return 1.0, "ms"
    if max_ms >= 1e-3:
        return 1e3, "µs"
    return 1e6, "ns"


def fmt_ms(ms: float) -> str:
    """A time given in ms with its own unit: ``1 s``, ``20 ms``, ``500 µs``, ``3 ns``."""
    mult, unit = time_unit(abs(ms)) if ms else (1.0, "ms")
    return f"{ms * mult:,.4g} {unit}"


def fmt_pct(x: float | None) -> str:
    """A percentage: ``83%``, ``7.2%``, ``0.41%``."""
    if x is None:
        return "—"
    return f"{x:.0f}%" if abs(x) >= 10 else f"{x:.2g}%" if abs(x) < 1 else f"{x:.1f}%"


def fmt_ratio(x: float | None) -> str:
    """A ratio: ``1.23×``, ``12.5×``."""
    if x is None:
        return "—"
    return f"{x:.2f}×" if abs(x) < 10 else f"{x:.1f}×"


def fmt_gib(n: Any) -> str:
    """A byte count in GiB (``79.2 GiB``); other values as text."""
    if isinstance(n, bool) or not isinstance(n, (int, float)):
        return "—" if n is None else str(n)
    return f"{n / 2**30:.1f} GiB"


def parse_timestamp(s: Any) -> _dt.datetime | None:
    """An ISO-8601 timestamp (``Z`` allowed) as an aware datetime, or None."""
    if not isinstance(s, str) or not s:
        return None
    try:
        t = _dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=_dt.timezone.utc)


def fmt_timestamp(s: Any) -> str:
    """``2026-11-22 14:01 UTC`` for an ISO timestamp; anything else as given."""
    t = parse_timestamp(s)
    if t is None:
        return "—" if s is None else str(s)
    return t.astimezone(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def short_commit(c: Any) -> str:
    """A commit shortened to 10 characters (``-dirty`` kept)."""
    if not c:
        return "—"
    s = str(c)
    dirty = s.endswith("-dirty")
    core = s[:-6] if dirty else s
    return core[:10] + ("-dirty" if dirty else "")


def clock_of(rows: Any) -> str:
    """How the rows' times were taken, in words for a note: CUDA events on the GPU, the
    host's wall clock on the cpu backend (both where a table mixes them)."""
    backends = {getattr(r, "backend", None) for r in rows}
    if backends <= {"cpu"}:
        return "wall-clock (perf_counter)"
    return "CUDA events" if "cpu" not in backends else "CUDA events on cuda, wall-clock on cpu"

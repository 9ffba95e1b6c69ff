"""The grid's cells and what every memcpy measurement shares: the case, its sizes and
offsets (on the host with NumPy, or with any array module: CuPy on the device), the record
fields, and the check of a destination after one poisoned run (see ``bench``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from warplab.lab.harness.measure import Settings
from warplab.lab.harness.results import make_result
from warplab.families.memcpy.spec import MemcpyProblem, bytes_moved, data_bytes
from warplab.core.errors import InvalidValueError

GUARD = 256
POISON = 0xA5
LAYOUTS = ("consecutive", "shuffle")


@dataclass(frozen=True)
class Case:
    """One cell of the grid: sizes in [lo, hi] bytes, layouts, alignment, total data."""

    lo: int
    hi: int
    src_layout: str
    dst_layout: str
    align: int
    total: int

    @property
    def label(self) -> str:
        return (f"{self.src_layout[0].upper()}_{self.dst_layout[0].upper()}_{self.lo}_"
                f"{self.hi}_a{self.align}")


def aligned_range(lo: int, hi: int, align: int) -> tuple[int, int]:
    """The multiples of ``align`` in [lo, hi] as [a_lo, a_hi] in units of ``align``."""
    return -(-lo // align), hi // align


def buffer_count(lo: int, hi: int, align: int, total: int) -> int:
    """How many buffers a cell draws: as many of the mean size as fit in ``total`` (>= 1)."""
    a_lo, a_hi = aligned_range(lo, hi, align)
    mean = (a_lo + a_hi) / 2 * align
    return max(1, int(total // mean))


def make_sizes(lo: int, hi: int, align: int, total: int, seed: int = 1) -> np.ndarray:
    """Uniform random multiples of ``align`` in [lo, hi] (zero included when lo is 0), as
    many as fit in ``total`` bytes on average (at least one)."""
    a_lo, a_hi = check_range(lo, hi, align, total)
    rng = np.random.default_rng(seed)
    return rng.integers(a_lo, a_hi + 1, size=buffer_count(lo, hi, align, total),
                        dtype=np.int64) * align


def check_range(lo: int, hi: int, align: int, total: int) -> tuple[int, int]:
    """The multiples of ``align`` in [lo, hi] in units of ``align``; ``ValueError`` for a bad
    range or one without such a multiple."""
    if lo < 0 or hi < max(lo, 1) or align < 1 or total < 1:
        raise InvalidValueError(f"need 0 <= min <= max, max >= 1, align >= 1 and total >= 1, got "
                         f"{lo}, {hi}, {align}, {total}")
    a_lo, a_hi = aligned_range(lo, hi, align)
    if a_hi < max(a_lo, 1):
        raise InvalidValueError(f"no multiple of {align} in [{lo}, {hi}]")
    return a_lo, a_hi


def offsets(sizes: np.ndarray, layout: str, seed: int = 2) -> np.ndarray:
    """CONSECUTIVE: buffer i right after buffer i-1. SHUFFLE: the same packing in a random
    order of the buffers (so neighbouring buffers land far apart)."""
    if layout == "consecutive":
        order = np.arange(sizes.size)
    elif layout == "shuffle":
        order = np.random.default_rng(seed).permutation(sizes.size)
    else:
        raise InvalidValueError(f"unknown layout {layout!r}; valid: consecutive, shuffle")
    return pack(np, sizes, order)


def pack(xp: Any, sizes: Any, order: Any) -> Any:
    """Offsets of buffers packed one after another in the order ``order`` (array module
    ``xp``: NumPy or CuPy)."""
    s = sizes[order]
    out = xp.empty_like(sizes)
    out[order] = xp.cumsum(s) - s
    return out


def draw_sizes(xp: Any, lo: int, hi: int, align: int, total: int, seed: int = 1) -> Any:
    """:func:`make_sizes` drawn by ``xp``'s ``RandomState`` (on the GPU with CuPy: no host
    work per buffer; other draws than make_sizes', the same distribution and count)."""
    a_lo, a_hi = check_range(lo, hi, align, total)
    rs = xp.random.RandomState(seed)
    return rs.randint(a_lo, a_hi + 1, size=buffer_count(lo, hi, align, total),
                      dtype=np.int64) * align


def layout_offsets(xp: Any, sizes: Any, layout: str, seed: int) -> Any:
    """:func:`offsets` with ``xp`` (the shuffle's permutation from ``xp``'s ``RandomState``)."""
    if layout == "consecutive":
        return xp.cumsum(sizes) - sizes
    if layout != "shuffle":
        raise InvalidValueError(f"unknown layout {layout!r}; valid: consecutive, shuffle")
    return pack(xp, sizes, xp.random.RandomState(seed).permutation(int(sizes.size)))


def address(a: Any) -> int:
    """The address of an array's first byte (CuPy or NumPy)."""
    ptr = getattr(a.data, "ptr", None)
    return int(ptr) if ptr is not None else int(a.ctypes.data)


def params_of(c: Case, count: int, st: Settings, runs: int, mode: str = "kernel",
              **extra: Any) -> dict:
    """A record's params: the cell, the buffer count, the timing settings."""
    return {"size": c.total, "min": c.lo, "max": c.hi, "in": c.src_layout,
            "out": c.dst_layout, "align": c.align, "count": count, "case": c.label,
            "mode": mode, "runs": runs, "warmup": st.warmup, **extra}


def record_of(c: Case, problem: MemcpyProblem, name: str, provider: str, backend: str,
              phases: dict, ok: bool, err: str | None, ceilings: dict, params: dict) -> dict:
    """A memcpy record: the common fields plus data bytes and data GB/s."""
    rec = make_result(family="memcpy", variant=name, provider=provider, backend=backend,
                      params=params, phases=phases, bytes_moved=bytes_moved(problem),
                      ceilings=ceilings, verified=ok, error=err)
    k = phases.get("kernel")
    rec["data_bytes"] = data_bytes(problem)
    rec["data_gbps"] = (data_bytes(problem) / (k["median"] * 1e-3) / 1e9
                        if rec["gbps"] is not None and k else None)
    return rec


def sample_picks(n: int, largest: int, seed: int = 5) -> np.ndarray:
    """The buffers whose every byte the check compares: the first and last 32, 192 at random
    and the largest (``largest``: its index), sorted, each once."""
    rng = np.random.default_rng(seed)
    return np.unique(np.concatenate([np.arange(min(32, n)), np.arange(max(0, n - 32), n),
                                     rng.integers(0, n, size=min(192, n)), [largest]]))


def sample_bytes(lens: np.ndarray, src_off: np.ndarray, dst_off: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Indices into the source and destination regions (guards included) of every byte of
    the sampled buffers (their sizes and offsets, host arrays)."""
    lens = np.asarray(lens, dtype=np.int64)
    rel = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
    return (np.repeat(np.asarray(src_off), lens) + rel + GUARD,
            np.repeat(np.asarray(dst_off), lens) + rel + GUARD)


def check_destination(xp: Any, src: Any, dst: Any, data: int, sample_src: Any,
                      sample_dst: Any, src_sum: int) -> tuple[bool, str | None]:
    """The check of one poisoned run (see ``bench``'s docstring), with array module ``xp``:
    the sampled bytes, the guards (every byte of ``dst`` outside its first ``data`` bytes
    after the leading guard) and the byte sum of the region."""
    bad = int(xp.count_nonzero(dst[sample_dst] != src[sample_src]))
    if bad:
        return False, f"{bad} sampled bytes differ from their source"
    if not guards_intact(xp, dst, data):
        return False, "a guard byte outside the destination region was written"
    got = int(dst[GUARD:GUARD + data].sum(dtype=np.uint64))
    if got != src_sum:
        return False, "the destination's byte sum differs from the source's"
    return True, None


def guards_intact(xp: Any, dst: Any, data: int) -> bool:
    """Every byte of ``dst`` outside its first ``data`` bytes after the leading guard still
    holds :data:`POISON`."""
    guards = xp.concatenate([dst[:GUARD], dst[GUARD + data:]])
    return not int(xp.count_nonzero(guards != POISON))


def target_call(target: Any, batch: Any) -> tuple[Any, str, str]:
    """(call, name, provider) of a cuda variant or a comparator on ``batch``."""
    from warplab.lab.harness.comparators import Provider

    if isinstance(target, Provider):
        return (lambda: target.run(batch)), target.name, target.library
    return (lambda: target.fn(batch)), target.name, "warplab"

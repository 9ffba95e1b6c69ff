"""warplab against NumPy on host input: each case is a warplab call and NumPy's equivalent,
timed alternately in the same run.

Timing suits microsecond calls on a shared host: a burst of ``number`` calls (``number`` grown
until a burst takes at least ``burst_ms``) gives the time per call; one sample is the minimum
of ``MIN_OF`` bursts (what the call costs when nothing else runs); ``repeats`` samples per
side, the two sides interleaved burst by burst so drift of the host touches both. The record
keeps the samples and their summary; the table quotes medians and their ratio.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

import warplab
from warplab.lab.harness.campaign import finish_campaign
from warplab.lab.harness.results import make_result
from warplab.lab.harness.stats import summarize

FAMILY = "numpy"
#: Bursts per sample; the sample is their minimum.
MIN_OF = 3


class Case(NamedTuple):
    """One comparison: ``name``, the input's bytes, warplab's call and NumPy's."""

    name: str
    nbytes: int
    ours: Callable[[], Any]
    theirs: Callable[[], Any]


@dataclass(frozen=True)
class NumpyCampaign:
    repeats: int
    burst_ms: float
    large: bool


CAMPAIGNS = {"quick": NumpyCampaign(5, 1.0, False), "table": NumpyCampaign(9, 2.0, True),
             "full": NumpyCampaign(15, 5.0, True)}


def _copy_loop(srcs: list[np.ndarray], dsts: list[np.ndarray]) -> Callable[[], list]:
    def loop() -> list:
        for s, d in zip(srcs, dsts):
            np.copyto(d, s)
        return dsts
    return loop


def _copied(srcs: list[np.ndarray], dsts: list[np.ndarray]) -> Callable[[], list]:
    def call() -> list:
        warplab.copy_batched(srcs, dsts)
        return dsts
    return call


def cases(large: bool) -> list[Case]:
    """The comparisons: byte histograms of 16 B and 4 KiB, bincount of 1,000 values (and
    weighted), copy_batched and concatenate of 10 to 10,000 arrays of 16 doubles, split with
    copy; with ``large`` also a 16 MiB histogram, bincounts of 2M values, 64 arrays of
    512 KiB and a split of 4M doubles."""
    rng = np.random.default_rng(0)
    out: list[Case] = []
    hist_sizes = [16, 4096] + ([16 << 20] if large else [])
    for n in hist_sizes:
        d = rng.integers(0, 256, n, dtype=np.uint8)
        out.append(Case(f"byte_histogram {n} B", n, lambda d=d: warplab.byte_histogram(d),
                        lambda d=d: np.bincount(d, minlength=256)))
    for n in [1000] + ([1 << 21] if large else []):
        x, w = rng.integers(0, 1000, n), rng.random(n)
        out.append(Case(f"bincount {n}", x.nbytes, lambda x=x: warplab.bincount(x),
                        lambda x=x: np.bincount(x)))
        out.append(Case(f"bincount weighted {n}", x.nbytes + w.nbytes,
                        lambda x=x, w=w: warplab.bincount(x, w),
                        lambda x=x, w=w: np.bincount(x, w)))
    shapes = [(k, 16) for k in (10, 100, 1000, 10000)] + ([(64, 1 << 16)] if large else [])
    for k, m in shapes:
        srcs = [rng.random(m) for _ in range(k)]
        dsts = [np.empty(m) for _ in range(k)]
        size = k * m * 8
        out.append(Case(f"copy_batched {k}x{m * 8} B", size, _copied(srcs, dsts),
                        _copy_loop(srcs, dsts)))
        out.append(Case(f"concatenate {k}x{m * 8} B", size,
                        lambda s=srcs: warplab.concatenate(s), lambda s=srcs: np.concatenate(s)))
    for n in [1000] + ([4_000_000] if large else []):
        a = rng.random(n)
        out.append(Case(f"split copy {n}/10", a.nbytes,
                        lambda a=a: warplab.split(a, 10, copy=True),
                        lambda a=a: [p.copy() for p in np.split(a, 10)]))
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same, a, b))
    return type(a) is type(b) and a.dtype == b.dtype and np.array_equal(a, b)


def _burst(fn: Callable[[], Any], number: int) -> float:
    """Milliseconds per call over ``number`` calls."""
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) * 1e3 / number


def _number(fns: list[Callable[[], Any]], burst_ms: float) -> int:
    """Calls per burst: doubled until the slower side's burst takes ``burst_ms``."""
    number = 1
    while number < 1 << 20:
        if max(_burst(f, number) for f in fns) * number >= burst_ms:
            return number
        number *= 2
    return number


def measure(case: Case, c: NumpyCampaign) -> list[dict]:
    """The two records of a case (warplab's, NumPy's): verified against each other, timed
    alternately."""
    params: dict[str, Any] = {"case": case.name, "size": case.nbytes, "input": "host"}
    try:
        ok = _same(case.ours(), case.theirs())
        err = None if ok else "warplab's result differs from NumPy's"
        number = _number([case.ours, case.theirs], c.burst_ms)
        samples: tuple[list[float], list[float]] = ([], [])
        for _ in range(c.repeats):
            bursts: tuple[list[float], list[float]] = ([], [])
            for _ in range(MIN_OF):
                bursts[0].append(_burst(case.ours, number))
                bursts[1].append(_burst(case.theirs, number))
            samples[0].append(min(bursts[0]))
            samples[1].append(min(bursts[1]))
    except Exception as exc:  # noqa: BLE001  (a failing call is a record, never a crash)
        return [make_result(family=FAMILY, variant=case.name, provider="warplab", backend="cpu",
                            params=params, phases={}, bytes_moved=case.nbytes, ceilings={},
                            verified=False, error=f"{type(exc).__name__}: {exc}")]
    ours, theirs = summarize(samples[0]), summarize(samples[1])
    params.update(number=number, repeats=c.repeats, min_of=MIN_OF,
                  ratio=ours["median"] / theirs["median"] if theirs["median"] > 0 else None)
    return [make_result(family=FAMILY, variant=case.name, provider=p, backend="cpu",
                        params=dict(params), phases={"total": s}, bytes_moved=case.nbytes,
                        ceilings={}, verified=ok if p == "warplab" else True,
                        error=err if p == "warplab" else None)
            for p, s in (("warplab", ours), ("numpy", theirs))]


def run_numpy(*, campaign: str = "quick", json_path: Path | None,
              names: list[str] | None = None,
              progress: Callable[[int, int, dict], None] | None = None) -> dict:
    """Run the campaign on the cpu backend (the cases whose name starts with one of
    ``names``, or all); write ``json_path`` if given; the results document."""
    c = CAMPAIGNS[campaign]
    chosen = [k for k in cases(c.large)
              if not names or any(k.name.startswith(n) for n in names)]
    records: list[dict] = []
    with warplab_cpu():
        for case in chosen:
            records += measure(case, c)
            if progress:
                progress(len(records), 2 * len(chosen), records[-1])
    notes = ["warplab's calls on the cpu backend against NumPy's equivalent, interleaved "
             "bursts; ratio = warplab median / NumPy median"]
    return finish_campaign("cpu", {}, notes, campaign, records, json_path)


class warplab_cpu:  # noqa: N801  (a context manager read as a phrase)
    """``WARPLAB_DEVICE=cpu`` for the block: the campaign measures the NumPy backend."""

    def __enter__(self) -> None:
        import os

        self.old = os.environ.get("WARPLAB_DEVICE")
        os.environ["WARPLAB_DEVICE"] = "cpu"

    def __exit__(self, *exc: object) -> None:
        import os

        if self.old is None:
            os.environ.pop("WARPLAB_DEVICE", None)
        else:
            os.environ["WARPLAB_DEVICE"] = self.old


def table_lines(records: list[dict]) -> list[str]:
    """The table: one row per case, warplab's and NumPy's median (us) and their ratio;
    at most 80 columns."""
    lines = [f"{'case':<34} {'warplab us':>11} {'numpy us':>11} {'ratio':>7}",
             "-" * 66]
    by: dict[str, dict[str, dict]] = {}
    for r in records:
        by.setdefault(r["variant"], {})[r["provider"]] = r
    for name, pair in by.items():
        w, n = pair.get("warplab"), pair.get("numpy")
        if w is None or n is None or w["phases"]["total"] is None:
            lines.append(f"{name[:34]:<34} {'err':>11}")
            continue
        mark = "" if w["verified"] else "!"
        lines.append(f"{name[:34]:<34} {1e3 * w['phases']['total']['median']:>11.2f} "
                     f"{1e3 * n['phases']['total']['median']:>11.2f} "
                     f"{w['params']['ratio']:>6.2f}x{mark}")
    return lines

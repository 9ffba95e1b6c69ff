"""The latency campaign: what a small public call costs on the host, next to CuPy and PyTorch
doing the same thing and the bare launch (the floor).

Two numbers per implementation of each case (``cases.py``), both on the host clock:

* **call latency** (``params.mode = "call_latency"``): the call, then its result usable on the
  host (``float(...)`` of a scalar, ``.get()`` of an array, a stream synchronisation after a
  copy); one sample per call. The implementations of a case take turns in rounds of
  ``calls`` calls each, so that drift of the host's state touches them alike.
* **host time per call** (``"host_per_call"``): ``burst`` calls back to back without waiting
  for the device, the elapsed time divided by ``burst``; one sample per burst, the stream
  synchronised outside the timing. A call that synchronises inside (a result size that needs
  the data, e.g. ``bincount``) pays that here too, as a user's loop would.

The samples go in ``phases.total`` (milliseconds). Every implementation's result is verified
once against the case's NumPy float64 reference before it is timed (copies: into poisoned
buffers); a failing one is a record with ``verified`` False and its error, never a crash.
On the cpu backend only warplab's calls run, on NumPy input (no comparators, no floor).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from warplab.lab.harness.campaign import finish_campaign
from warplab.lab.harness.ceilings import cached_ceilings
from warplab.lab.harness.results import make_result
from warplab.lab.harness.stats import summarize
from warplab.lab.campaigns.latency.cases import Case, check, host, nbytes, poison, select, to_device
from warplab.lab.campaigns.latency.comparators import Floor, OwnFloor, comparators, to_torch
from warplab.core.errors import InvalidValueError

FLOOR_CASE = "floor"
#: The floor records' variants: CuPy's launch (alone, with a 4-byte read back), warplab's
#: launch path (alone, with a 0-d result)
CUPY_FLOORS = ("floor", "floor_d2h")
OWN_FLOORS = ("floor_launch", "floor_result")
MODES = ("call_latency", "host_per_call")
CPU_BURST = 100


@dataclass(frozen=True)
class LatencyCampaign:
    """Interleaved ``rounds`` of ``calls`` timed calls per implementation (call latency),
    ``bursts`` bursts of ``burst`` calls (host time per call), ``warmup`` untimed calls."""

    rounds: int
    calls: int
    bursts: int
    burst: int
    warmup: int


LATENCY_CAMPAIGNS = {
    "quick": LatencyCampaign(rounds=3, calls=100, bursts=3, burst=1000, warmup=20),
    "table": LatencyCampaign(rounds=6, calls=500, bursts=9, burst=1000, warmup=50),
    "full": LatencyCampaign(rounds=10, calls=500, bursts=15, burst=1000, warmup=50),
}


@dataclass
class Impl:
    """One implementation of a case: ``full()`` is the call with its result made usable on
    the host, ``call()`` the call alone; ``verify()`` -> (verified, error)."""

    variant: str
    provider: str
    code: str
    full: Callable[[], Any]
    call: Callable[[], Any]
    verify: Callable[[], tuple[bool, str | None]]


def _impl(case: Case, variant: str, provider: str, code: str, fn: Callable[[dict], Any],
          inputs: dict, ref: Any, sync: Callable[[], None]) -> Impl:
    """The timed calls of one implementation: its result read to the host (:func:`host`), or
    for a copy the stream synchronised."""
    def verify() -> tuple[bool, str | None]:
        poison(inputs)
        result = fn(inputs)
        sync()
        return check(case, host(inputs["dsts"]) if case.copies else host(result), ref)

    def copy_done() -> None:
        fn(inputs)
        sync()

    full = copy_done if case.copies else (lambda: host(fn(inputs)))
    return Impl(variant, provider, code, full, lambda: fn(inputs), verify)


def case_impls(case: Case, backend: str, with_comparators: bool
               ) -> tuple[list[Impl], int, list[str]]:
    """warplab's call on the case's data (device-resident on cuda) and, on cuda, the usable
    comparators on the same memory; plus the input bytes and the notes."""
    h_inputs = case.make(np.random.default_rng(sum(map(ord, case.name))))
    ref = case.reference(h_inputs)
    size = nbytes(h_inputs)
    if backend == "cpu":
        return [_impl(case, case.function, "warplab", case.code,
                      lambda d: case.call(d, device="cpu"), h_inputs, ref, _sync(backend))
                ], size, []
    d_inputs = to_device(h_inputs)
    sync = _sync(backend)
    # the case's call itself: one Python frame around the public call, as each comparator's
    impls = [_impl(case, case.function, "warplab", case.code, case.call, d_inputs, ref, sync)]
    comps, notes = comparators(case.name, with_comparators)
    for c in comps:
        inputs = to_torch(d_inputs) if c.library == "torch" else d_inputs
        impls.append(_impl(case, c.name, c.library, c.name, c.run, inputs, ref, sync))
    return impls, size, notes


def floor_impls() -> list[Impl]:
    """The bare launch with a synchronisation, and with a 4-byte copy to pinned memory (CuPy);
    the same kernel on warplab's launch path, alone and with a 0-d result read by ``int()``
    (what is left of a call's host time after the launch and the result object)."""
    f = Floor()
    ok = f.verified()
    own = OwnFloor(f)

    def verified() -> tuple[bool, str | None]:
        return (True, None) if ok else (False, "the 4-byte copy did not arrive")

    def read_ok() -> tuple[bool, str | None]:
        v = own.read()
        return (True, None) if v == 42 else (False, f"read {v}, not 42")

    return [Impl(CUPY_FLOORS[0], "cupy", "empty RawKernel launch; stream.synchronize()",
                 f.sync, f.launch, lambda: (True, None)),
            Impl(CUPY_FLOORS[1], "cupy", "empty launch; 4-byte memcpyAsync D2H to pinned; "
                 "stream.synchronize()", f.d2h, f.launch_d2h, verified),
            Impl(OWN_FLOORS[0], "warplab", f"empty kernel by warplab's launch ({own.path}); "
                 "stream.synchronize()", own.sync, own.launch, lambda: (True, None)),
            Impl(OWN_FLOORS[1], "warplab", "warplab's launch; a 0-d DeviceScalar on existing "
                 "memory; int() of it (the C read)", own.read, own.result, read_ok)]


def _sync(backend: str) -> Callable[[], None]:
    if backend != "cuda":
        return lambda: None
    import cupy

    return cupy.cuda.get_current_stream().synchronize


def time_call_latency(impls: list[Impl], c: LatencyCampaign) -> list[list[float]]:
    """Per implementation: one host-clock sample (ms) per call of ``full()``, in rounds."""
    out: list[list[float]] = [[] for _ in impls]
    clock = time.perf_counter
    for _ in range(c.rounds):
        for impl, samples in zip(impls, out):
            full = impl.full
            for _ in range(c.calls):
                t0 = clock()
                full()
                samples.append((clock() - t0) * 1e3)
    return out


def time_host_per_call(impls: list[Impl], c: LatencyCampaign, sync: Callable[[], None]
                       ) -> list[list[float]]:
    """Per implementation: ms per call of ``call()`` in each burst of back-to-back calls."""
    out: list[list[float]] = [[] for _ in impls]
    clock = time.perf_counter
    for _ in range(c.bursts):
        for impl, samples in zip(impls, out):
            call = impl.call
            sync()
            t0 = clock()
            for _ in range(c.burst):
                call()
            samples.append((clock() - t0) * 1e3 / c.burst)
            sync()
    return out


def _records(case: str, what: str, size: int, backend: str, impls: list[Impl],
             status: list[tuple[bool, str | None]], timings: dict[str, list[list[float]]],
             c: LatencyCampaign, ceilings: dict) -> list[dict]:
    recs = []
    for i, impl in enumerate(impls):
        ok, err = status[i]
        for mode in MODES:
            samples = timings[mode][i]
            params = {"size": size, "case": case, "mode": mode, "what": what,
                      "call": impl.code, "input": "device" if backend == "cuda" else "host",
                      "samples": len(samples), "warmup": c.warmup}
            params.update({"rounds": c.rounds, "calls": c.calls} if mode == MODES[0]
                          else {"bursts": c.bursts, "burst": c.burst})
            phases = {"total": summarize(samples)} if samples else {}
            recs.append(make_result(family="latency", variant=impl.variant,
                                    provider=impl.provider, backend=backend, params=params,
                                    phases=phases, bytes_moved=0, ceilings=ceilings,
                                    verified=ok, error=err))
    return recs


def measure_group(case: str, what: str, size: int, backend: str, impls: list[Impl],
                  c: LatencyCampaign, ceilings: dict) -> list[dict]:
    """Warm up and verify every implementation, time the ones that ran (a wrong result is
    timed too, and marked), make the records (one without samples for one that raised)."""
    status: list[tuple[bool, str | None]] = []
    ran: list[Impl] = []
    for impl in impls:
        try:
            for _ in range(c.warmup):
                impl.full()
            status.append(impl.verify())
            ran.append(impl)
        except Exception as exc:  # noqa: BLE001  (a failing call is a record, never a crash)
            status.append((False, f"{type(exc).__name__}: {exc}"))
    lat = dict(zip(map(id, ran), time_call_latency(ran, c)))
    per = dict(zip(map(id, ran), time_host_per_call(ran, c, _sync(backend))))
    timings = {MODES[0]: [lat.get(id(i), []) for i in impls],
               MODES[1]: [per.get(id(i), []) for i in impls]}
    return _records(case, what, size, backend, impls, status, timings, c, ceilings)


def run_latency(*, campaign: str = "quick", backend: str, json_path: Path | None,
                names: list[str] | None = None, with_comparators: bool = True,
                calls: int | None = None, warmup: int | None = None,
                progress: Callable[[int, int, dict], None] | None = None) -> dict:
    """Run a latency campaign (the cases named by case or function name, or all); write
    ``json_path`` if given. ``calls`` / ``warmup`` replace the campaign's."""
    c = LATENCY_CAMPAIGNS[campaign]
    if calls is not None or warmup is not None:
        if (calls is not None and calls < 1) or (warmup is not None and warmup < 0):
            raise InvalidValueError("--runs must be >= 1 and --warmup >= 0")
        c = LatencyCampaign(c.rounds, calls or c.calls, c.bursts, c.burst,
                            c.warmup if warmup is None else warmup)
    cases = select(names)
    ceilings = cached_ceilings(backend) or {}
    notes: list[str] = []
    if backend == "cpu":
        notes.append("cpu backend: warplab's calls on NumPy input only; the comparators "
                     "(CuPy, PyTorch) and the floor need the GPU")
        gpu_only = [k.name for k in cases if k.gpu_only]
        if gpu_only:
            notes.append(f"cpu backend: {', '.join(gpu_only)} skipped (device addresses)")
        cases = [k for k in cases if not k.gpu_only]
        c = LatencyCampaign(c.rounds, c.calls, c.bursts, CPU_BURST, c.warmup)
        notes.append(f"cpu backend: bursts of {CPU_BURST} calls (NumPy calls take 10-1000 us)")
    records: list[dict] = []
    per_case = 3 if backend == "cuda" and with_comparators else 1
    total = 2 * (per_case * len(cases) + (4 if backend == "cuda" else 0))  # records expected

    def add(recs: list[dict]) -> None:
        for r in recs:
            records.append(r)
            if progress:
                progress(len(records), max(total, len(records)), r)

    if backend == "cuda":
        add(measure_group(FLOOR_CASE, "empty kernel launch on the current stream", 0,
                          backend, floor_impls(), c, ceilings))
    for case in cases:
        impls, size, more = case_impls(case, backend, with_comparators)
        notes += [n for n in more if n not in notes]
        add(measure_group(case.name, case.what, size, backend, impls, c, ceilings))
    return finish_campaign(backend, ceilings, notes, campaign, records, json_path)

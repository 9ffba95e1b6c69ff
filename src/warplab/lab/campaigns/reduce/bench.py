"""Measure the reduction variants and comparators: the lecture's table, and call latency.

Kernel records: per run an H2D copy of the input, the reduction (held behind a blocking kernel
where the call allows it) and the D2H copy of the result, timed with CUDA events; the result of
the last run is checked against a float64 / int64 NumPy reference (integers exact, float32
within 1e-5 relative, float64 within 1e-12) and its relative error recorded (``rel_error``).
Call records (``params.mode = "call"``): a device-resident input, the *public* call (dispatch
included) plus a stream synchronisation timed with the host clock: what a user waits for.
On the cpu backend: the kernel phase alone, host-timed, of warplab's NumPy variant and of the
comparator there, NumPy's own ``np.<op>`` on the same input, checked against the same reference.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from warplab.core import registry as _registry
from warplab.families.reduce.spec import LECTURE_ORDER_HINT, ReduceProblem, ReduceSpec, reduce_bytes_moved, spec
from warplab.families.reduce.cpu import numpy_reduce
from warplab.lab.harness.campaign import check_variant_names, finish_campaign
from warplab.lab.harness.ceilings import measure_all
from warplab.lab.harness.comparators import Provider, campaign_targets, cpu_note
from warplab.lab.harness.measure import TOLERANCE, Settings, time_device_runs
from warplab.lab.campaigns.reduce.comparators import NUMPY_PROVIDERS, REDUCE_PROVIDERS
from warplab.lab.harness.results import make_result
from warplab.lab.harness.stats import summarize
from warplab.lab.harness.timing import time_runs
from warplab.core.errors import InvalidValueError



def make_input(dtype: str, n: int, kind: str = "random", seed: int = 1) -> np.ndarray:
    """Benchmark data: uniform [0, 1) floats (their float32 running sum drifts), integers in
    [-2^20, 2^20) (no int64 overflow), or ``equal`` values."""
    dt = np.dtype(dtype)
    if kind == "equal":
        return np.full(n, 3 if dt.kind == "i" else 0.1, dtype=dt)
    if kind != "random":
        raise InvalidValueError(f"unknown reduce data kind {kind!r}; valid: random, equal")
    rng = np.random.default_rng(seed)
    if dt.kind == "i":
        return rng.integers(-(1 << 20), 1 << 20, size=n, dtype=dt)
    return rng.random(n, dtype=np.float64 if dt == np.float64 else np.float32)


def reference(x: np.ndarray, s: ReduceSpec) -> Any:
    """float64 (or exact int64) reference of the op."""
    if s.op in ("sum", "mean") and x.dtype.kind == "f":
        return numpy_reduce(x, spec(s.op, np.float64))  # float64 result, not float32
    return numpy_reduce(x, s)


def check(got: Any, ref: Any, s: ReduceSpec) -> tuple[bool, float | None, str | None]:
    """(verified, relative error for float results, error message)."""
    g = np.asarray(got)[()]
    if s.out.kind == "f" or s.op == "mean":
        if np.isnan(ref):
            ok = bool(np.isnan(g))
            return ok, None, None if ok else f"got {g}, want nan"
        rel = abs(float(g) - float(ref)) / max(abs(float(ref)), np.finfo(np.float64).tiny)
        tol = 0.0 if s.op in ("min", "max") else TOLERANCE[np.dtype(s.out)]
        ok = rel <= tol
        return ok, rel, None if ok else f"relative error {rel:.3g} above {tol:g}"
    ok = int(g) == int(ref)
    return ok, None, None if ok else f"got {int(g)}, want {int(ref)}"


def _params(s: ReduceSpec, n: int, kind: str, st: Settings, runs: int, mode: str = "kernel",
            **extra: Any) -> dict:
    return {"size": n, "dtype": s.dtype.name, "op": s.op, "data": kind, "mode": mode,
            "pinned": st.pinned, "runs": runs, "warmup": st.warmup, **extra}


def measure_kernel(h_x: np.ndarray, d_x: Any, s: ReduceSpec, target: Any, kind: str,
                   settings: Settings, ceilings: dict, ref: Any) -> dict:
    """One kernel record for a cuda variant or a provider (``d_x`` is refilled every run)."""
    import cupy

    call, name, provider = _callable(target, s)
    bytes_moved = reduce_bytes_moved(ReduceProblem(h_x.size, s.op, s.dtype, False))
    holder: list[Any] = [None]
    h_out = np.empty((), dtype=s.out)

    def run(rec: Any, held: bool) -> None:
        with rec.phase("h2d"):
            d_x.set(h_x)
        with rec.phase("kernel", hold=held):
            holder[0] = call(d_x)
        with rec.phase("d2h"):
            h_out[()] = holder[0].get()

    kw = dict(family="reduce", variant=name, provider=provider, backend="cuda",
              bytes_moved=bytes_moved, ceilings=ceilings)
    try:
        call(d_x)  # compile and allocate outside any held phase
        cupy.cuda.get_current_stream().synchronize()
        samples, held = time_device_runs(run, settings)
    except Exception as exc:
        rec = make_result(phases={}, verified=False, error=f"{type(exc).__name__}: {exc}",
                          params=_params(s, h_x.size, kind, settings, 0), **kw)
        rec["rel_error"] = None
        return rec
    ok, rel, err = check(h_out, ref, s)
    rec = make_result(phases={k: summarize(v) for k, v in samples.items()}, verified=ok,
                      error=err, params=_params(s, h_x.size, kind, settings,
                                                len(samples["total"]), held=held), **kw)
    rec["rel_error"] = rel
    return rec


def measure_calls(d_x: Any, s: ReduceSpec, calls: list[tuple[Any, Callable[[Any], Any] | None]],
                  kind: str, settings: Settings, ceilings: dict, ref: Any,
                  rounds: int = 5) -> list[dict]:
    """Host time of a call on a device-resident input until its result is ready, one record per
    ``(target, public)`` in ``calls`` (``public`` replaces the target's own callable). The calls
    are interleaved: ``rounds`` rounds, in each of which every call is timed in turn, so drift
    of the host's state lands on all of them alike (the table compares their ratio)."""
    import cupy

    stream = cupy.cuda.get_current_stream()
    per_round = -(-max(settings.runs, 200) // rounds)
    timed = []
    for target, public in calls:
        call, name, provider = _callable(target, s)
        out: list[Any] = [None]

        def run(rec: Any, call: Callable[[Any], Any] = public or call, out: list = out) -> None:
            with rec.phase("kernel"):
                out[0] = call(d_x)
                stream.synchronize()

        timed.append((name, provider, run, out, []))
    round_medians: list[list[float]] = [[] for _ in timed]
    for r in range(rounds):
        for (_, _, run, _, samples), medians in zip(timed, round_medians):
            got = time_runs(run, warmup=max(settings.warmup, 10) if r == 0 else 0,
                            runs=per_round, cuda=False)["kernel"]
            samples += got
            medians.append(float(np.median(got)))
    records = []
    for (name, provider, _, out, samples), medians in zip(timed, round_medians):
        ok, rel, err = check(out[0].get(), ref, s)
        rec = make_result(family="reduce", variant=name, provider=provider, backend="cuda",
                          params=_params(s, d_x.size, kind, settings, len(samples), mode="call",
                                         rounds=rounds),
                          phases={"kernel": summarize(samples)},
                          bytes_moved=reduce_bytes_moved(ReduceProblem(d_x.size, s.op, s.dtype,
                                                                       True)),
                          ceilings=ceilings, verified=ok, error=err)
        rec["rel_error"] = rel
        rec["round_medians"] = medians  # ms, one per round: pair the calls round by round
        rec["gbps"] = rec["pct_of_copy_bw"] = None  # a latency, not a bandwidth
        records.append(rec)
    return records


def _callable(target: Any, s: ReduceSpec) -> tuple[Callable[[Any], Any], str, str]:
    if isinstance(target, Provider):
        return (lambda d: target.run(d, s)), target.name.format(op=s.op), target.library
    return (lambda d: target.fn(d, s)), target.name, "warplab"


def lecture_rows(records: list[dict]) -> list[dict]:
    """Kernel records of one config in the lecture's order, comparators last."""
    order = {n: i for i, n in enumerate(LECTURE_ORDER_HINT)}
    return sorted(records, key=lambda r: (r["provider"] != "warplab",
                                          order.get(r["variant"], len(order)), r["variant"]))


def targets(variant_names: list[str] | None, with_comparators: bool) -> tuple[list[Any], list[str]]:
    """cuda variants (named, or all) and the usable reduce comparators, plus skip notes."""
    return campaign_targets("reduce", "cuda", REDUCE_PROVIDERS, variant_names, with_comparators)


def measure_cpu(x: np.ndarray, s: ReduceSpec, kind: str, settings: Settings, ceilings: dict,
                ref: Any, target: Any = None) -> dict:
    """The NumPy variant (or ``target``: another cpu variant or NumPy's own call), host-timed
    (one phase: ``kernel``)."""
    call, name, provider = _callable(target or _registry.get("reduce", "numpy"), s)
    out: list[Any] = [None]

    def run(rec: Any) -> None:
        with rec.phase("kernel"):
            out[0] = call(x)

    samples = time_runs(run, warmup=settings.warmup, runs=settings.runs, cuda=False,
                        max_seconds=settings.max_seconds)
    ok, rel, err = check(out[0], ref, s)
    rec = make_result(family="reduce", variant=name, provider=provider, backend="cpu",
                      params=_params(s, x.size, kind, settings, len(samples["total"])),
                      phases={k: summarize(val) for k, val in samples.items()},
                      bytes_moved=reduce_bytes_moved(ReduceProblem(x.size, s.op, s.dtype, False)),
                      ceilings=ceilings, verified=ok, error=err)
    rec["rel_error"] = rel
    return rec


def measure_config(x: np.ndarray, ops: list[str], backend: str, tgts: list[Any], kind: str,
                   settings: Settings, ceilings: dict, call_latency: bool,
                   on_record: Callable[[dict], None]) -> None:
    """Every op x target on one input (and, if asked, the call latency of the default)."""
    if backend == "cpu":  # warplab's NumPy variant, then NumPy's own calls (``tgts``)
        for op in ops:
            s = spec(op, x.dtype)
            ref = reference(x, s)
            for t in [None, *tgts]:
                on_record(measure_cpu(x, s, kind, settings, ceilings, ref, t))
        return
    import cupy
    import cupyx

    from warplab.families.reduce.api import reduce as public_reduce

    h_x = x
    if settings.pinned:
        h_x = cupyx.empty_pinned(x.shape, dtype=x.dtype)
        h_x[...] = x
    d_x = cupy.asarray(x)
    for op in ops:
        s = spec(op, x.dtype)
        ref = reference(x, s)
        for t in tgts:
            on_record(measure_kernel(h_x, d_x, s, t, kind, settings, ceilings, ref))
        if call_latency:
            default = _registry.variants("reduce", "cuda")[0]
            calls = [(default, lambda d, op=op: public_reduce(d, op))]
            calls += [(t, None) for t in tgts
                      if isinstance(t, Provider) and t.library == "cupy"]
            for rec in measure_calls(d_x, s, calls, kind, settings, ceilings, ref):
                on_record(rec)


@dataclass(frozen=True)
class ReduceCampaign:
    configs: tuple[tuple[int, str], ...]   # (elements, dtype)
    ops: tuple[str, ...]
    call_sizes: tuple[int, ...]            # sizes that also get call-latency records
    runs: int
    warmup: int


def _grid(sizes: range, dtypes: tuple[str, ...]) -> tuple[tuple[int, str], ...]:
    return tuple((1 << k, dt) for dt in dtypes for k in sizes)


REDUCE_CAMPAIGNS = {
    "quick": ReduceCampaign(_grid(range(10, 25, 2), ("int32", "float32")), ("sum",),
                            (1 << 10, 1 << 16, 1 << 20), runs=10, warmup=2),
    "full": ReduceCampaign(_grid(range(10, 31, 2), ("int32", "float32")), ("sum",),
                           (1 << 10, 1 << 16, 1 << 20), runs=20, warmup=3),
    # the lecture's 2^24 int32, 2^28 float32 and int32; call latency at 2^10, 2^16, 2^20
    "table": ReduceCampaign(((1 << 24, "int32"), (1 << 28, "float32"), (1 << 28, "int32"),
                             (1 << 10, "int32"),
                             (1 << 16, "int32"), (1 << 20, "int32"), (1 << 10, "float32"),
                             (1 << 16, "float32"), (1 << 20, "float32")), ("sum",),
                            (1 << 10, 1 << 16, 1 << 20), runs=20, warmup=3),
}
CPU_REDUCE_MAX = 1 << 20


def run_reduce(*, campaign: str = "quick", backend: str, json_path: Path | None,
               configs: list[tuple[int, str]] | None = None, ops: list[str] | None = None,
               variant_names: list[str] | None = None, with_comparators: bool = True,
               settings: Settings | None = None, kind: str = "random",
               progress: Callable[[int, int, dict], None] | None = None) -> dict:
    """Run a reduce campaign (or explicit ``configs``); write ``json_path`` if given."""
    c = REDUCE_CAMPAIGNS[campaign]
    settings = settings or Settings(runs=c.runs, warmup=c.warmup)
    configs = list(configs or c.configs)
    ops = list(ops or c.ops)
    notes: list[str] = []
    if backend == "cpu":
        check_variant_names("reduce", variant_names, backend)
        tgts: list[Any] = list(NUMPY_PROVIDERS) if with_comparators else []
        if not configs or configs == list(c.configs):
            configs = [(n, dt) for n, dt in configs if n <= CPU_REDUCE_MAX]
            notes.append(f"cpu backend: campaign sizes capped at {CPU_REDUCE_MAX} elements")
        if with_comparators:
            notes.append(cpu_note("CuPy, torch, cuda.compute", " / ".join(f"np.{op}" for op in ops)
                                  + " (float32 sums in float32, pairwise)"))
    else:
        tgts, notes = targets(variant_names, with_comparators)
    ceilings = measure_all(backend)
    records: list[dict] = []
    cupy_n = sum(1 for t in tgts if isinstance(t, Provider) and t.library == "cupy")
    total = sum(len(ops) * (1 + len(tgts) if backend == "cpu" else
                            len(tgts) + (1 + cupy_n if n in c.call_sizes else 0))
                for n, _ in configs)

    def on_record(rec: dict) -> None:
        records.append(rec)
        if progress:
            progress(len(records), total, rec)

    for n, dtype in configs:
        x = make_input(dtype, n, kind)
        measure_config(x, ops, backend, tgts, kind, settings, ceilings,
                                    call_latency=backend == "cuda" and n in c.call_sizes,
                                    on_record=on_record)
    return finish_campaign(backend, ceilings, notes, campaign, records, json_path)

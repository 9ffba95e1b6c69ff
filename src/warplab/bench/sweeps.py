"""Measurement campaigns: which sizes, inputs, mappings, variants and comparators to time.

``quick`` is a smoke run (minutes on a GPU, seconds on the NumPy backend); ``full`` is the
histogram report's campaign (sizes 2^3..2^32 capped by memory, uniform and constant data, the
128- and 27-bin mappings, every variant and comparator); ``table`` is the 1 GiB comparison of
the closing table (uniform / const / text, bytes and ascii128).
"""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .. import _registry
from .._device import cpu_properties, device_properties
from .._mapping import resolve
from ..cpu.histogram import byte_counts
from . import comparators, data, results
from .ceilings import measure_all
from .histogram_bench import HostInput, measure_input
from .measure import Settings


@dataclass(frozen=True)
class Campaign:
    sizes: tuple[int, ...]
    data: tuple[str, ...]
    bins: tuple[str, ...]
    runs: int
    warmup: int


CAMPAIGNS = {
    "quick": Campaign(tuple(1 << k for k in (10, 14, 18, 22, 26)), ("uniform", "const"),
                      ("ascii128", "letters"), runs=10, warmup=2),
    "full": Campaign(tuple(1 << k for k in range(3, 33)), ("uniform", "const"),
                     ("ascii128", "letters"), runs=20, warmup=3),
    "table": Campaign((1 << 30,), ("uniform", "const", "text"), ("bytes", "ascii128"),
                      runs=20, warmup=3),
}
CPU_QUICK_MAX = 1 << 22  # the NumPy backend's quick campaign stops here


def targets_for(backend: str, variant_names: list[str] | None, with_comparators: bool
                ) -> tuple[list[Any], list[str]]:
    """Variants (by name, or all of the backend) and the usable comparators, plus notes."""
    if variant_names:
        vs = [_registry.get("histogram", n) for n in variant_names]
        wrong = [v.name for v in vs if v.backend != backend]
        if wrong:
            raise ValueError(f"variant(s) {', '.join(wrong)} do not run on the {backend} backend")
    else:
        vs = _registry.variants("histogram", backend)
    notes: list[str] = []
    targets: list[Any] = list(vs)
    if backend == "cuda" and with_comparators:
        provs, notes = comparators.available()
        targets += provs
    elif backend == "cpu":
        notes.append("cpu backend: comparators (CuPy, torch, cuda.compute) need the GPU")
    return targets, notes


def device_meta(backend: str) -> dict:
    return device_properties() if backend == "cuda" else cpu_properties()


def cap_sizes(sizes: tuple[int, ...], backend: str, explicit: bool
              ) -> tuple[list[int], list[str]]:
    """Drop sizes the device cannot hold (input plus comparator temporaries); on the cpu
    backend a campaign's own sizes stop at ``CPU_QUICK_MAX``, sizes asked for do not."""
    if backend == "cuda":
        import cupy

        limit = cupy.cuda.runtime.memGetInfo()[0] // 4
    else:
        limit = max(sizes) if explicit else CPU_QUICK_MAX
    kept = [s for s in sizes if s <= limit]
    dropped = [s for s in sizes if s > limit]
    if not kept:
        raise ValueError(f"no size fits: {list(sizes)} all exceed {limit} bytes on {backend}")
    notes = [f"sizes above {limit} bytes skipped on {backend}: {dropped}"] if dropped else []
    return kept, notes


def inputs(kinds: tuple[str, ...], sizes: list[int], file: str | None = None):
    """Yield HostInput per (kind, size): the largest input is generated once and its prefixes
    serve the smaller sizes; reference counts are accumulated prefix by prefix."""
    if file is not None:
        from .._arrays import map_file

        arr = map_file(file)
        yield HostInput(f"file:{Path(file).name}", arr, byte_counts(arr))
        return
    for kind in kinds:
        full = data.generate_fast(kind, max(sizes))
        counts, done = np.zeros(256, dtype=np.int64), 0
        for n in sorted(sizes):
            counts = counts + byte_counts(full[done:n])
            done = n
            yield HostInput(kind, full[:n], counts.copy())


def run_histogram(*, campaign: str = "quick", backend: str, json_path: Path | None,
                  sizes: list[int] | None = None, kinds: list[str] | None = None,
                  bins: list[str] | None = None, variant_names: list[str] | None = None,
                  with_comparators: bool = True, settings: Settings | None = None,
                  file: str | None = None, progress: Callable[[int, int, dict], None] | None = None,
                  on_input: Callable[[HostInput], None] | None = None) -> dict:
    """Run a histogram campaign; write the results to ``json_path`` (if given) and return the
    document. ``on_input`` sees every input (with its reference counts) before it is measured;
    ``progress(done, total, record)`` every record."""
    c = CAMPAIGNS[campaign]
    settings = settings or Settings(runs=c.runs, warmup=c.warmup)
    mappings = [resolve(b) for b in (bins or c.bins)]
    targets, notes = targets_for(backend, variant_names, with_comparators)
    kept, size_notes = cap_sizes(tuple(sizes or c.sizes), backend, explicit=bool(sizes))
    notes += size_notes
    kinds_t = tuple(kinds or c.data)
    ceilings = measure_all(backend)
    total = (1 if file else len(kept) * len(kinds_t)) * len(mappings) * len(targets)
    records: list[dict] = []

    def on_record(rec: dict) -> None:
        records.append(rec)
        if progress:
            progress(len(records), total, rec)

    for inp in inputs(kinds_t, kept, file):
        if on_input:
            on_input(inp)
        measure_input(inp, mappings, targets, backend, settings, ceilings, on_record)
    return finish_campaign(backend, ceilings, notes, campaign if not file else "file", records,
                           json_path)


def finish_campaign(backend: str, ceilings: dict, notes: list[str], campaign: str,
                    records: list[dict], json_path: Path | None) -> dict:
    """The campaign's results document: written to ``json_path`` if given, validated always."""
    meta = results.make_meta(device_meta(backend), ceilings, notes)
    meta["campaign"] = campaign
    doc = {"schema": results.SCHEMA, "meta": meta, "results": records}
    if json_path is not None:
        results.write(json_path, meta, records)
    else:
        results.validate(doc)
    return doc


def timestamped(root: str | Path) -> Path:
    """A new folder ``root/YYYYmmdd-HHMMSS`` for one campaign."""
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    p = Path(root) / stamp
    p.mkdir(parents=True, exist_ok=True)
    return p


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
    from . import reduce_bench

    c = REDUCE_CAMPAIGNS[campaign]
    settings = settings or Settings(runs=c.runs, warmup=c.warmup)
    configs = list(configs or c.configs)
    ops = list(ops or c.ops)
    notes: list[str] = []
    if backend == "cpu":
        wrong = [n for n in variant_names or [] if _registry.get("reduce", n).backend != "cpu"]
        if wrong:
            raise ValueError(f"variant(s) {', '.join(wrong)} run on the cuda backend, not cpu "
                             "(valid on cpu: numpy)")
        tgts: list[Any] = []
        if not configs or configs == list(c.configs):
            configs = [(n, dt) for n, dt in configs if n <= CPU_REDUCE_MAX]
            notes.append(f"cpu backend: campaign sizes capped at {CPU_REDUCE_MAX} elements")
        notes.append("cpu backend: comparators (CuPy, torch, cuda.compute) need the GPU")
    else:
        tgts, notes = reduce_bench.targets(variant_names, with_comparators)
    ceilings = measure_all(backend)
    records: list[dict] = []

    def on_record(rec: dict) -> None:
        records.append(rec)
        if progress:
            progress(len(records), 0, rec)

    for n, dtype in configs:
        x = reduce_bench.make_input(dtype, n, kind)
        reduce_bench.measure_config(x, ops, backend, tgts, kind, settings, ceilings,
                                    call_latency=backend == "cuda" and n in c.call_sizes,
                                    on_record=on_record)
    return finish_campaign(backend, ceilings, notes, campaign, records, json_path)

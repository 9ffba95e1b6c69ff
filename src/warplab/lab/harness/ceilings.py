"""Measured ceilings every figure is judged against, next to the device's datasheet numbers.

:mod:`warplab.lab.harness.ceiling_rates` times each ceiling (copy, read, host transfers, GEMMs:
the keys it returns and how each is measured); :func:`measure_all` gathers them for this
machine's device and keeps them, :func:`comparison_rows` sets them against the datasheet.

:func:`datasheet` adds what the device reports: memory clock x bus width x 2 (DDR) / 8, SM count
x clock, and FP32 / FP64 peaks from the lanes per SM. On Hopper and Ampere (cc 9.0, 8.0) cuBLAS
DGEMM runs on the FP64 tensor cores, at up to twice the FP64 lane peak: ``dgemm_gflops`` may
exceed ``datasheet_fp64_gflops``, and ``datasheet_fp64_tensor_gflops`` says by how much it can.
On the cpu backend the datasheet numbers are None. Every campaign stores :func:`measure_all` in
its results' ``meta.ceilings``; ``warplab device --measure`` prints it.

Measuring takes seconds (GEMMs at N = 8192, 256 MiB transfers), so :func:`measure_all` keeps
its answer in a JSON file per device (:func:`cache_path`: ``$WARPLAB_CACHE_DIR``, else
``$XDG_CACHE_HOME/warplab``, else ``~/.cache/warplab``) and measures only when there is none
(or, on the cpu backend, when it was measured another way: :func:`stale`);
``warplab device --measure`` measures again and rewrites it. The cached dictionary says when it
was measured (``measured_at``) and from where (``measured_by``).
"""
from __future__ import annotations

import datetime as _dt
import functools
import json
import os
import re
import socket
from pathlib import Path
from typing import Any, Callable

from warplab.core.device import cache_dir, cpu_properties, device_properties
from warplab.lab.harness.ceiling_rates import (
    CPU_READ_METHOD, GEMM_N, copy_bandwidth, gemm_rate, host_transfer, read_bandwidth,
)

# FP32 and FP64 lanes per SM (FMA units: 2 flops per lane per clock), by compute capability.
LANES_PER_SM = {"7.0": (64, 32), "7.5": (64, 2), "8.0": (64, 32), "8.6": (128, 2),
                "8.7": (128, 2), "8.9": (128, 2), "9.0": (128, 64)}
# Where cuBLAS DGEMM uses FP64 tensor cores: their rate as a multiple of the FP64 lane peak.
FP64_TENSOR_FACTOR = {"8.0": 2, "9.0": 2}
# Dense int8 tensor-core operations (2 per multiply-add) per SM per clock: NVIDIA's dense INT8
# TOPS over SMs x boost clock (T4, RTX 30/40 and L4: 2048; A100: 4096; H100: 8192).
INT8_TENSOR_OPS_PER_SM = {"7.5": 2048, "8.0": 4096, "8.6": 2048, "8.9": 2048, "9.0": 8192}


def _release_pools() -> None:
    """Hand CuPy's cached device and pinned blocks back to the driver, so that free-memory
    checks (campaign sizes, the next ceiling's buffer) see them."""
    import cupy

    cupy.get_default_memory_pool().free_all_blocks()
    cupy.get_default_pinned_memory_pool().free_all_blocks()


def datasheet(props: dict[str, Any]) -> dict[str, Any]:
    """Datasheet-style numbers from the device's reported clocks, bus and SM count.

    ``datasheet_bw_gbps`` (memory clock x bus width x 2 / 8, as ``device_properties`` computes
    it), ``datasheet_sm_gcycles`` (SMs x clock, 1e9 SM-cycles per second),
    ``datasheet_fp32_gflops`` / ``datasheet_fp64_gflops`` (SMs x clock x lanes x 2 for the FMA),
    ``datasheet_fp64_tensor_gflops`` where DGEMM can use FP64 tensor cores,
    ``datasheet_int8_tensor_gops`` (dense int8 tensor cores, ``INT8_TENSOR_OPS_PER_SM``); None
    where the device reports no clock or its lanes per SM are not in ``LANES_PER_SM``.
    """
    sms, mhz, cc = props.get("sms"), props.get("sm_clock_mhz"), props.get("cc")
    out: dict[str, Any] = {"datasheet_bw_gbps": props.get("datasheet_bw_gbps"),
                           "datasheet_sm_gcycles": None, "datasheet_fp32_gflops": None,
                           "datasheet_fp64_gflops": None, "datasheet_fp64_tensor_gflops": None,
                           "datasheet_int8_tensor_gops": None}
    if not sms or not mhz:
        return out
    out["datasheet_sm_gcycles"] = sms * mhz / 1e3
    lanes = LANES_PER_SM.get(str(cc))
    if lanes:
        out["datasheet_fp32_gflops"] = 2 * lanes[0] * out["datasheet_sm_gcycles"]
        out["datasheet_fp64_gflops"] = 2 * lanes[1] * out["datasheet_sm_gcycles"]
        out["datasheet_basis"] = (f"{sms} SMs x {mhz:g} MHz x (FP32 {lanes[0]}, FP64 "
                                  f"{lanes[1]} lanes/SM) x 2 flops/FMA")
    if str(cc) in FP64_TENSOR_FACTOR and out["datasheet_fp64_gflops"]:
        out["datasheet_fp64_tensor_gflops"] = (FP64_TENSOR_FACTOR[str(cc)]
                                               * out["datasheet_fp64_gflops"])
    if str(cc) in INT8_TENSOR_OPS_PER_SM:
        out["datasheet_int8_tensor_gops"] = (INT8_TENSOR_OPS_PER_SM[str(cc)]
                                             * out["datasheet_sm_gcycles"])
    return out


def device_key(backend: str) -> str:
    """A file-name-safe key for this machine's device of ``backend``: host, device name,
    compute capability, SMs and memory (another GPU, or the same model elsewhere, gets its own
    entry)."""
    from warplab import __version__

    props = device_properties() if backend == "cuda" else cpu_properties()
    parts = [backend, socket.gethostname(), str(props.get("name")), str(props.get("cc")),
             str(props.get("sms") or props.get("cores")), str(props.get("memory_bytes")),
             __version__]
    return re.sub(r"[^A-Za-z0-9._-]+", "-", "_".join(parts)).strip("-")


def cache_path(backend: str) -> Path:
    """The ceilings file of this machine's device of ``backend``."""
    return cache_dir() / f"ceilings-{device_key(backend)}.json"


_MEMO: dict[str, dict[str, Any]] = {}


def cached_ceilings(backend: str) -> dict[str, Any] | None:
    """The stored ceilings of this device, or None when none were measured (or the file is
    unreadable: a cache, so it is measured again, never an error)."""
    path = cache_path(backend)
    if str(path) in _MEMO:
        return _MEMO[str(path)]
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or "copy_gbps" not in doc:
        return None
    if stale(doc, backend):
        return None
    _MEMO[str(path)] = doc
    return doc


def stale(doc: dict[str, Any], backend: str) -> bool:
    """Whether stored cpu ceilings were measured another way than now (the read ceiling as
    ``np.sum`` of float32 alone, GEMMs at another N): measured again, never reused."""
    return backend == "cpu" and (doc.get("sgemm_n") != GEMM_N["cpu"] or not str(
        doc.get("read_method", "")).startswith(CPU_READ_METHOD))


def measure_all(backend: str, *, refresh: bool = False) -> dict[str, Any]:
    """Every ceiling of ``backend`` plus the datasheet numbers: the stored ones of this device,
    measured (and stored) only when none are stored or ``refresh`` is set.

    This is what campaigns store in ``meta.ceilings`` (it keeps ``copy_gbps``).
    """
    if not refresh:
        cached = cached_ceilings(backend)
        if cached is not None:
            return cached
    out = _measure_all(backend)
    out["measured_at"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    out["measured_by"] = f"warplab device --measure ({device_key(backend)})"
    path = cache_path(backend)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(out, indent=1, default=str))
        tmp.replace(path)
    except OSError:
        pass  # a read-only home: measured again next time, never an error
    _MEMO[str(path)] = out
    return out


def _measure_all(backend: str) -> dict[str, Any]:
    """Measure every ceiling of ``backend`` now (seconds on a GPU)."""
    part = functools.partial
    steps: list[Callable[[], dict]] = [
        part(copy_bandwidth, backend), part(read_bandwidth, backend),
        *(part(host_transfer, backend, direction, pinned)
          for direction in ("h2d", "d2h") for pinned in (True, False)),
        part(gemm_rate, backend, "float32"), part(gemm_rate, backend, "float64")]
    out: dict[str, Any] = {}
    for step in steps:
        out.update(step())
        if backend == "cuda":  # the step's buffers are gone: give their blocks back
            _release_pools()
    out.update(datasheet(device_properties() if backend == "cuda" else cpu_properties()))
    tensor = out.get("datasheet_fp64_tensor_gflops")
    if tensor:
        out["dgemm_note"] = ("cuBLAS DGEMM runs on the FP64 tensor cores here (up to "
                             f"{tensor:.0f} GFLOP/s): it may exceed datasheet_fp64_gflops")
    return out


# (label, measured key, datasheet key): the comparisons `warplab device --measure` prints.
COMPARISONS = (
    ("copy (read + write), GB/s", "copy_gbps", "datasheet_bw_gbps"),
    ("read, GB/s", "read_gbps", "datasheet_bw_gbps"),
    ("H2D pinned, GB/s", "h2d_pinned_gbps", None),
    ("H2D pageable, GB/s", "h2d_pageable_gbps", None),
    ("D2H pinned, GB/s", "d2h_pinned_gbps", None),
    ("D2H pageable, GB/s", "d2h_pageable_gbps", None),
    ("SGEMM, GFLOP/s", "sgemm_gflops", "datasheet_fp32_gflops"),
    ("DGEMM, GFLOP/s", "dgemm_gflops", "datasheet_fp64_gflops"),
    ("DGEMM vs FP64 tensor cores, GFLOP/s", "dgemm_gflops", "datasheet_fp64_tensor_gflops"),
)


def comparison_rows(ceilings: dict[str, Any]) -> list[tuple[str, float | None, float | None,
                                                            float | None, str]]:
    """``(label, measured, datasheet, % of datasheet, method)`` per row of ``COMPARISONS``
    (the FP64 tensor-core row only where the device has them)."""
    rows = []
    for label, key, sheet_key in COMPARISONS:
        sheet = ceilings.get(sheet_key) if sheet_key else None
        if sheet_key == "datasheet_fp64_tensor_gflops" and not sheet:
            continue
        got = ceilings.get(key)
        pct = 100.0 * got / sheet if got and sheet else None
        method = ceilings.get(key.rsplit("_", 1)[0] + "_method") or ""
        rows.append((label, got, sheet, pct, method))
    return rows

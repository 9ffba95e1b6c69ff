"""Results JSON (schema 1): the only thing reports and comparisons read.

::

    {"schema": 1,
     "meta": {"device": {...}, "versions": {...}, "commit", "hostname", "timestamp",
              "time_unit": "ms", "ceilings": {"copy_gbps", ...}, "notes": [...]},
     "results": [{"family", "variant", "provider", "backend", "params": {"size", ...},
                  "phases": {"h2d", "kernel", "d2h", "total": {min, q10, median, q90, max,
                             noise, samples} or null},
                  "bytes_moved", "gbps", "pct_of_copy_bw", "verified", "error"}]}
"""
from __future__ import annotations

import datetime as _dt
import gzip
import json
import os
import platform
import socket
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
from warplab.core.errors import InvalidValueError

SCHEMA = 1
PHASES = ("h2d", "kernel", "d2h", "total")
_STAT_KEYS = ("min", "q10", "median", "q90", "max", "noise", "samples")
_RESULT_KEYS = ("family", "variant", "provider", "backend", "params", "phases", "bytes_moved",
                "gbps", "pct_of_copy_bw", "verified", "error")


def git_commit() -> str | None:
    """``WARPLAB_COMMIT`` if set, else the commit of the checkout warplab runs from, with
    ``-dirty`` where its tracked files differ from that commit (a copied tree whose git
    metadata lags behind says so instead of naming a commit it does not hold)."""
    if os.environ.get("WARPLAB_COMMIT"):
        return os.environ["WARPLAB_COMMIT"]
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=40",
                              "--exclude=*"], cwd=Path(__file__).resolve().parent,
                             capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def versions() -> dict[str, str | None]:
    """Versions of Python, NumPy, warplab and the optional GPU libraries."""
    from warplab import __version__

    v: dict[str, str | None] = {"warplab": __version__, "python": platform.python_version(),
                                "numpy": np.__version__}
    for mod in ("cupy", "torch", "cuda.cccl"):
        try:
            m = __import__(mod, fromlist=["__version__"])
            v[mod] = getattr(m, "__version__", "unknown")
        except Exception:
            v[mod] = None
    return v


def make_meta(device: dict, ceilings: dict, notes: list[str] | None = None) -> dict:
    """The ``meta`` block of a results file."""
    return {
        "device": device,
        "versions": versions(),
        "commit": git_commit(),
        "hostname": socket.gethostname(),
        "timestamp": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "time_unit": "ms",
        "ceilings": ceilings,
        "notes": list(notes or []),
    }


def make_result(*, family: str, variant: str, provider: str, backend: str, params: dict,
                phases: dict[str, dict | None], bytes_moved: int, ceilings: dict,
                verified: bool, error: str | None = None) -> dict:
    """One result record; GB/s and % of copy bandwidth from the kernel phase's median."""
    kernel = phases.get("kernel")
    gb = None
    if kernel and verified and not error and kernel["median"] > 0:
        gb = bytes_moved / (kernel["median"] * 1e-3) / 1e9
    copy = ceilings.get("copy_gbps")
    return {
        "family": family, "variant": variant, "provider": provider, "backend": backend,
        "params": params, "phases": {p: phases.get(p) for p in PHASES},
        "bytes_moved": int(bytes_moved), "gbps": gb,
        "pct_of_copy_bw": 100.0 * gb / copy if gb and copy else None,
        "verified": bool(verified), "error": error,
    }


def validate(doc: Any) -> None:
    """Raise ``ValueError`` naming the first thing in ``doc`` that breaks schema 1."""
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise InvalidValueError(f"not a warplab results document of schema {SCHEMA}")
    meta = doc.get("meta")
    if not isinstance(meta, dict):
        raise InvalidValueError("meta missing")
    for k in ("device", "versions", "commit", "hostname", "timestamp", "ceilings", "notes"):
        if k not in meta:
            raise InvalidValueError(f"meta.{k} missing")
    if not isinstance(doc.get("results"), list):
        raise InvalidValueError("results must be a list")
    for i, r in enumerate(doc["results"]):
        try:
            _validate_record(i, r)
        except (TypeError, AttributeError, KeyError) as exc:
            raise InvalidValueError(f"results[{i}] is malformed ({type(exc).__name__}: {exc})") from None


def _validate_record(i: int, r: Any) -> None:
    if not isinstance(r, dict):
        raise InvalidValueError(f"results[{i}] is not an object")
    missing = [k for k in _RESULT_KEYS if k not in r]
    if missing:
        raise InvalidValueError(f"results[{i}] lacks {', '.join(missing)}")
    if "size" not in r["params"]:
        raise InvalidValueError(f"results[{i}].params.size missing")
    for p in PHASES:
        st = r["phases"].get(p)
        if st is None:
            continue
        if any(k not in st for k in _STAT_KEYS):
            raise InvalidValueError(f"results[{i}].phases.{p} lacks statistics")
        if not st["min"] <= st["q10"] <= st["median"] <= st["q90"] <= st["max"]:
            raise InvalidValueError(f"results[{i}].phases.{p} quantiles out of order")
    if r["verified"] and r["error"]:
        raise InvalidValueError(f"results[{i}] is verified but carries an error")
    if not r["verified"] and r["gbps"] is not None:
        raise InvalidValueError(f"results[{i}] is unverified but reports a speed")


def write(path: str | Path, meta: dict, results: list[dict]) -> Path:
    """Validate and write a results file; returns its path."""
    doc = {"schema": SCHEMA, "meta": meta, "results": results}
    validate(doc)
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(doc, indent=1))
    return p


#: File names a results folder's files match: plain JSON, or JSON compressed with gzip (how
#: the repository keeps older campaigns, benchmarks/results/README.md).
GLOBS = ("*.json", "*.json.gz")


def read_text(path: str | Path) -> str:
    """The text of a results file, decompressed where its name ends in ``.gz``."""
    p = Path(path)
    if p.name.endswith(".gz"):
        with gzip.open(p, "rt", encoding="utf-8") as f:
            return f.read()
    return p.read_text(encoding="utf-8")


def read(path: str | Path) -> dict:
    """Read and validate a results file (``.json`` or ``.json.gz``)."""
    doc = json.loads(read_text(path))
    validate(doc)
    return doc

"""Read warplab results JSON files (schema 1) and flatten records into rows.

A results file holds ``{"schema": 1, "meta": {...}, "results": [...]}``. Each
record becomes one :class:`Row`; per-phase statistics are kept (converted to
milliseconds), raw samples are dropped except where a report module needs them
(:data:`KEEP_SAMPLES`). A record needs a kernel timing, or, in the families whose measurement
is a call end to end (``groups.END_TO_END_FAMILIES``: latency, stream), a total one. Malformed
records are not discarded: they become failed rows so that they show up in the report's
failures table.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from warplab.lab.harness.results import GLOBS, SCHEMA, read_text
from warplab.lab.report.groups import END_TO_END_FAMILIES, LATENCY_FAMILIES, assign_configs, assign_series
from warplab.lab.report.units import parse_timestamp
from warplab.core.errors import InvalidValueError

PHASES: tuple[str, ...] = ("h2d", "kernel", "d2h", "total")
STATS: tuple[str, ...] = ("min", "q10", "median", "q90", "max", "noise")
_UNIT_TO_MS: dict[str, float] = {"ms": 1.0, "s": 1e3, "us": 1e-3, "µs": 1e-3, "ns": 1e-6}
# family -> phases whose raw samples are kept (latency: its ratios pair the interleaved rounds)
KEEP_SAMPLES: dict[str, tuple[str, ...]] = {f: ("total",) for f in LATENCY_FAMILIES}

Stats = dict[str, float | None]
# record keys that have their own Row attribute; every other key lands in ``Row.extra``
_ROW_KEYS = frozenset({"family", "variant", "provider", "backend", "params", "phases",
                       "bytes_moved", "gbps", "pct_of_copy_bw", "verified", "error",
                       "rel_error", "flops", "gflops"})


@dataclass(frozen=True)
class Source:
    """One loaded results file.

    Attributes:
        path: The file that was read.
        meta: Its top-level ``meta`` object (``{}`` when absent).
    """

    path: Path
    meta: dict[str, Any]

    @property
    def device(self) -> dict[str, Any]:
        """The ``meta.device`` mapping (``{}`` when absent or malformed)."""
        dev = self.meta.get("device")
        return dev if isinstance(dev, dict) else {}

    @property
    def device_name(self) -> str:
        """Device name, falling back to the backend or ``"unknown device"``."""
        name = self.device.get("name")
        return str(name) if name else str(self.device.get("backend") or "unknown device")

    @property
    def ceilings(self) -> dict[str, Any]:
        """The ``meta.ceilings`` mapping (``{}`` when absent or malformed)."""
        ceil = self.meta.get("ceilings")
        return ceil if isinstance(ceil, dict) else {}

    @property
    def copy_gbps(self) -> float | None:
        """Measured copy bandwidth ceiling in GB/s, or None."""
        return num(self.ceilings.get("copy_gbps"))


@dataclass
class Row:
    """One benchmark record, flattened.

    Attributes:
        family: Primitive family, e.g. ``"histogram"``.
        variant: Kernel / comparator identity, e.g. ``"private_stride"``.
        provider: ``"warplab"`` or a comparator library name.
        backend: ``"cuda"`` or ``"cpu"``.
        device: Device name from the source file's meta.
        source: Name of the file the record came from.
        size: ``params.size`` (bytes or elements) or None.
        params: All record parameters.
        phases: Phase name -> statistics in ms (no samples); None when absent.
        bytes_moved: Bytes moved by the operation, or None.
        gbps: Achieved bandwidth, or None.
        pct_of_copy_bw: Percentage of the measured copy bandwidth, or None.
        verified: Whether the result was checked correct.
        error: Error message, or None.
        copy_gbps: Copy-bandwidth ceiling of the source device, or None.
        rel_error: Optional ``rel_error`` of the record (``|result - reference| /
            |reference|``, reference computed in float64), or None when absent.
        flops: Floating-point operations per call (records of families with arithmetic,
            e.g. matmul), or None.
        gflops: Achieved GFLOP/s of such records, or None.
        extra: The record's other top-level keys (beyond schema 1's and the ones above), e.g.
            the series campaign's ``accuracy`` or ``pct_of_read_bw``; ``{}`` when none.
        samples: Phase name -> raw samples in ms, for the phases of :data:`KEEP_SAMPLES`
            only; ``{}`` for the rest.
        config: Plot/table grouping key (set by :func:`assign_configs`).
        series: Line identity in plots (set by :func:`assign_series`).
    """

    family: str
    variant: str
    provider: str
    backend: str
    device: str
    source: str
    size: int | None
    params: dict[str, Any]
    phases: dict[str, Stats | None]
    bytes_moved: int | None
    gbps: float | None
    pct_of_copy_bw: float | None
    verified: bool
    error: str | None
    copy_gbps: float | None = None
    rel_error: float | None = None
    flops: int | None = None
    gflops: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    samples: dict[str, list[float]] = field(default_factory=dict)
    config: tuple[tuple[str, Any], ...] = ()
    series: str = ""

    @property
    def ok(self) -> bool:
        """True when the record may be shown as a speed (verified, no error)."""
        return self.verified and not self.error

    def stat(self, phase: str = "kernel", name: str = "median") -> float | None:
        """Return one statistic of one phase in ms, or None when missing."""
        s = self.phases.get(phase)
        return None if s is None else s.get(name)

    @property
    def median(self) -> float | None:
        """Kernel-phase median time in ms (None for end-to-end records without one)."""
        return self.stat("kernel", "median")


@dataclass
class Results:
    """Merged contents of one or more results files.

    Attributes:
        sources: Files that were loaded, in run order (see :func:`load_results`).
        rows: All records (ok and failed), in run order.
        skipped: ``(path, reason)`` for every JSON file that is not a results file.
    """

    sources: list[Source]
    rows: list[Row]
    skipped: list[tuple[Path, str]] = field(default_factory=list)

    @property
    def ok_rows(self) -> list[Row]:
        """Rows that may be plotted as speeds."""
        return [r for r in self.rows if r.ok]

    @property
    def failed_rows(self) -> list[Row]:
        """Rows that are unverified or carry an error."""
        return [r for r in self.rows if not r.ok]

    def families(self) -> list[str]:
        """Families present, ``histogram`` first, then alphabetical."""
        fams = {r.family for r in self.rows}
        return sorted(fams, key=lambda f: (f != "histogram", f))


def num(x: Any) -> float | None:
    """Return ``x`` as a finite float, or None for null/bool/NaN/inf/non-numbers."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _int(x: Any) -> int | None:
    v = num(x)
    return int(v) if v is not None else None


def _stats(obj: Any, scale: float) -> Stats | None:
    if not isinstance(obj, dict):
        return None
    out: Stats = {}
    for k in STATS:
        v = num(obj.get(k))
        out[k] = v if (v is None or k == "noise") else v * scale
    return out if out.get("median") is not None else None


def _samples(obj: Any, scale: float) -> list[float]:
    """A phase's finite raw samples in ms (``[]`` when it has none)."""
    raw = obj.get("samples") if isinstance(obj, dict) else None
    if not isinstance(raw, list):
        return []
    return [v * scale for x in raw if (v := num(x)) is not None]


def flatten_record(rec: Any, source: Source) -> Row:
    """Turn one ``results`` entry into a :class:`Row`.

    Args:
        rec: The record as parsed from JSON.
        source: The file it came from (for device name, ceilings, time unit).

    Returns:
        The row. A malformed record becomes a failed row whose ``error`` says why.
    """
    problems: list[str] = []
    if not isinstance(rec, dict):
        problems.append(f"record is {type(rec).__name__}, not an object")
        rec = {}
    params = rec.get("params") if isinstance(rec.get("params"), dict) else {}
    unit = str(source.meta.get("time_unit") or "ms")
    scale = _UNIT_TO_MS.get(unit, 1.0)
    raw_phases = rec.get("phases") if isinstance(rec.get("phases"), dict) else {}
    phases = {p: _stats(raw_phases.get(p), scale) for p in PHASES}
    for p, v in raw_phases.items():
        if p not in phases:
            phases[str(p)] = _stats(v, scale)
    for key in ("family", "variant"):
        if not rec.get(key):
            problems.append(f"missing {key}")
    family = str(rec.get("family") or "unknown")
    if family in END_TO_END_FAMILIES:
        if phases.get("kernel") is None and phases.get("total") is None:
            problems.append("no timing (neither a kernel nor a total phase)")
    elif phases.get("kernel") is None:
        problems.append("no kernel timing")
    error = rec.get("error")
    error = None if error is None or error == "" else str(error)
    if problems:
        msg = "malformed record: " + "; ".join(problems)
        error = msg if error is None else f"{error} ({msg})"
    samples = {p: _samples(raw_phases.get(p), scale) for p in KEEP_SAMPLES.get(family, ())}
    return Row(
        family=family,
        variant=str(rec.get("variant") or "unknown"),
        provider=str(rec.get("provider") or "warplab"),
        backend=str(rec.get("backend") or source.device.get("backend") or "unknown"),
        device=source.device_name,
        source=source.path.name,
        size=_int(params.get("size")),
        params=dict(params),
        phases=phases,
        bytes_moved=_int(rec.get("bytes_moved")),
        gbps=num(rec.get("gbps")),
        pct_of_copy_bw=num(rec.get("pct_of_copy_bw")),
        verified=rec.get("verified") is True,
        error=error,
        copy_gbps=source.copy_gbps,
        rel_error=num(rec.get("rel_error")),
        flops=_int(rec.get("flops")),
        gflops=num(rec.get("gflops")),
        extra={str(k): v for k, v in rec.items() if k not in _ROW_KEYS},
        samples={p: v for p, v in samples.items() if v},
    )


def _candidate_files(src: str | Path | Iterable[str | Path]) -> tuple[list[Path], str]:
    if isinstance(src, (str, Path)):
        p = Path(src)
        if not p.exists():
            raise FileNotFoundError(f"no such file or directory: {p}")
        if p.is_dir():
            found = {q for g in GLOBS for q in p.glob(g) if q.is_file()}
            return sorted(found), str(p)
        return [p], str(p)
    files = [Path(s) for s in src]
    for p in files:
        if not p.exists():
            raise FileNotFoundError(f"no such file or directory: {p}")
    return files, ", ".join(str(p) for p in files) or "[]"


def read_results_file(path: Path) -> tuple[dict[str, Any] | None, str]:
    """Read one file and check that it is a schema-1 results file.

    A JSON document that does not claim to be a results file (not an object, or an object
    with neither ``schema`` nor ``results``, e.g. a saved ``warplab device`` answer) is not one:
    ``(None, reason)``. A file that cannot be read or parsed, or that claims to be a results
    file and is not a readable one, is an error.

    Args:
        path: The JSON file.

    Returns:
        ``(document, "")`` when usable, ``(None, reason)`` for a JSON file of another kind.

    Raises:
        ValueError: The file is unreadable, not JSON, or a corrupt or unsupported results
            file; the message names the file.
    """
    try:
        text = read_text(path)
    except (OSError, UnicodeDecodeError, EOFError) as exc:
        msg = f"cannot read results file {path}: {exc}"
        raise InvalidValueError(msg) from None
    try:
        doc = json.loads(text)
    except ValueError as exc:
        msg = f"corrupt results file {path}: not valid JSON ({exc})"
        raise InvalidValueError(msg) from None
    if not isinstance(doc, dict):
        return None, f"not a warplab results file (a JSON {type(doc).__name__})"
    if "schema" not in doc and "results" not in doc:
        return None, "not a warplab results file (no 'schema' or 'results' key)"
    if doc.get("schema") != SCHEMA:
        msg = (f"unsupported results file {path}: schema {doc.get('schema')!r}, this warplab "
               f"reads schema {SCHEMA}")
        raise InvalidValueError(msg)
    if not isinstance(doc.get("results"), list):
        msg = f"corrupt results file {path}: no 'results' list"
        raise InvalidValueError(msg)
    return doc, ""


def _run_order(item: tuple[int, Path, dict[str, Any]]) -> tuple[Any, ...]:
    """Runs in time order (``meta.timestamp``); files without one first, then reading order."""
    i, _, doc = item
    meta = doc.get("meta") if isinstance(doc.get("meta"), dict) else {}
    t = parse_timestamp(meta.get("timestamp"))
    return (t is not None, t.timestamp() if t else 0.0, i)


def load_results(src: str | Path | Iterable[str | Path]) -> Results:
    """Read and merge warplab results files.

    Args:
        src: A directory (every ``*.json`` directly inside it is considered), a
            file, or a list of files. JSON files of another kind (see
            :func:`read_results_file`) are skipped and listed in ``Results.skipped``.

    Returns:
        The merged results, with ``config`` and ``series`` set on every row. Sources (and
        rows) are in run order: by ``meta.timestamp``, files without one first, ties in
        reading order; so where runs repeat a measurement, the newest one is read last (and
        wins wherever the report keeps one row per key).

    Raises:
        FileNotFoundError: A given path does not exist.
        ValueError: A file is unreadable, not JSON, or a corrupt or unsupported results
            file (the message names it); or no results file was found.
    """
    files, where = _candidate_files(src)
    docs: list[tuple[int, Path, dict[str, Any]]] = []
    skipped: list[tuple[Path, str]] = []
    for i, path in enumerate(files):
        doc, reason = read_results_file(path)
        if doc is None:
            skipped.append((path, reason))
        else:
            docs.append((i, path, doc))
    if not docs:
        raise InvalidValueError(f"no warplab results JSON in {where}")
    sources: list[Source] = []
    rows: list[Row] = []
    for _, path, doc in sorted(docs, key=_run_order):
        meta = doc.get("meta")
        source = Source(path=path, meta=meta if isinstance(meta, dict) else {})
        sources.append(source)
        rows.extend(flatten_record(rec, source) for rec in doc["results"])
    assign_configs(rows)
    assign_series(rows)
    return Results(sources=sources, rows=rows, skipped=skipped)

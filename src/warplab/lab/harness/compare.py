"""``warplab compare A.json B.json``: nvbench's compare for warplab results documents.

Pure functions of two results documents (schema 1, ``results.py``); ``commands.cmd_compare``
prints, ``report/compare_figure.py`` draws.

Matching: a record of A and one of B are the same configuration when their **key** is equal:
``(family, variant, provider, backend, config)``, where ``config`` is ``params`` without the
run-specific keys of ``RUN_SPECIFIC`` (how a run was measured or checked, not what was
measured: ``runs``, ``warmup``, ``rounds``, ``calls``, ``held``, ``checked_rows``,
``sample_pairs``, ``max_seconds``, ``flush_l2``, timestamps). Every other key identifies the
configuration (``mode``, ``op``, ``dtype``, ``size``, ``shape``, ``bins``, ``data``, ``m``/``n``,
``acc``, ``seed``, ``tol``, ``case``, ``step``, ``pinned``...), so a key a new family adds keeps
configurations apart unless it is listed here: an unmatched record is a visible outcome, a wrong
match is not. ``backend`` is in the key because a cpu (host clock) and a cuda (events) timing of
one variant name measure different things. Records of one key repeated within a file pair up in
file order (a warning says so).

Verdict (nvbench's rule): the phase is ``kernel`` when both records have it, else ``total`` when
both have it. With medians ``a``, ``b`` and relative noises ``na``, ``nb`` (``phases.<p>.noise``,
(Q90 - Q10) / median), ``rel = (b - a) / a`` and ``bound = max(na, nb, threshold / 100)``:
``SAME`` when ``|rel| <= bound``, else ``FASTER`` (``rel < 0``) or ``SLOWER``. A record that
failed verification (``verified`` false or an ``error``) in either file makes the pair
``FAILED``, never compared; a pair with no common timed phase or a zero median is ``UNTIMED``.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from warplab.lab.harness import results
from warplab.core.errors import InvalidValueError

RUN_SPECIFIC = frozenset({"runs", "warmup", "rounds", "calls", "held", "checked_rows",
                          "sample_pairs", "max_seconds", "flush_l2", "timestamp",
                          "timestamps"})
SAME, FASTER, SLOWER, FAILED, UNTIMED = "SAME", "FASTER", "SLOWER", "FAILED", "UNTIMED"
VERDICTS = (FASTER, SLOWER, SAME, FAILED, UNTIMED)
STYLES = {FASTER: "bold green", SLOWER: "bold red", SAME: "dim", FAILED: "bold yellow",
          UNTIMED: "yellow"}
_TO_MS = {"ms": 1.0, "s": 1e3, "us": 1e-3, "µs": 1e-3, "ns": 1e-6}
_BARE = ("dtype", "op", "shape")  # label shows their value alone
_FIRST = ("size", "data", "bins", "mode")  # then these as key=value, then the rest sorted


# ------------------------------------------------------------------------------- loading

def load(path: str | Path) -> dict:
    """Read one results document and check everything compare relies on.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: it is a folder, not JSON, or not a usable schema-1 results document.
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no such results file: {p}")
    if p.is_dir():
        raise InvalidValueError(f"{p} is a folder: name a results JSON file")
    try:
        doc = json.loads(results.read_text(p))  # .json or .json.gz (as the report reads)
    except (UnicodeDecodeError, OSError, EOFError):
        raise InvalidValueError(f"{p} is not JSON (not UTF-8 text, or not valid gzip)") from None
    except json.JSONDecodeError as exc:
        raise InvalidValueError(f"{p} is not JSON ({exc.msg}, line {exc.lineno})") from None
    try:
        _check(doc)
    except ValueError as exc:
        raise InvalidValueError(f"{p}: {exc}") from None
    return doc


def _check(doc: Any) -> None:
    """``results.validate`` plus the types compare reads (params an object, finite stats)."""
    results.validate(doc)
    unit = doc["meta"].get("time_unit", "ms")
    if unit not in _TO_MS:
        raise InvalidValueError(f"meta.time_unit {unit!r} is none of {', '.join(_TO_MS)}")
    for i, r in enumerate(doc["results"]):
        if not isinstance(r["params"], dict):
            raise InvalidValueError(f"results[{i}].params is not an object")
        for f in ("family", "variant", "provider", "backend"):
            if not isinstance(r[f], str):
                raise InvalidValueError(f"results[{i}].{f} is not a string")
        for ph, st in r["phases"].items():
            if st is None or ph not in results.PHASES:
                continue
            if not isinstance(st, dict):
                raise InvalidValueError(f"results[{i}].phases.{ph} is not an object")
            for k in ("median", "noise"):
                v = st[k]
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                        or v < 0:
                    raise InvalidValueError(f"results[{i}].phases.{ph}.{k} is not a finite number >= 0")


# ------------------------------------------------------------------------------- matching

def config(record: dict) -> dict:
    """The params that identify a record's configuration (``params`` minus ``RUN_SPECIFIC``)."""
    return {k: record["params"][k] for k in sorted(record["params"]) if k not in RUN_SPECIFIC}


def key(record: dict) -> tuple[str, str, str, str, str]:
    """The matching key: family, variant, provider, backend and the config as canonical JSON."""
    return (record["family"], record["variant"], record["provider"], record["backend"],
            json.dumps(config(record), sort_keys=True, default=str))


def _value(k: str, v: Any) -> str:
    if k == "size" and isinstance(v, int) and not isinstance(v, bool) and v >= 1000:
        if v & (v - 1) == 0:
            return f"2^{v.bit_length() - 1}"
        e = len(str(v)) - len(str(v).rstrip("0"))
        return f"{v // 10 ** e}e{e}" if e >= 3 else str(v)
    return str(v).lower() if isinstance(v, bool) else str(v)


def params_text(cfg: dict, omit: frozenset[str] | set[str] = frozenset()) -> str:
    """``cfg`` (a config) as short text: dtype, op and shape bare, then ``key=value``; ``m``
    and ``n`` left out where ``shape`` says ``MxN``; the keys in ``omit`` left out."""
    cfg = {k: v for k, v in cfg.items() if k not in RUN_SPECIFIC and k not in omit}
    if "shape" in cfg and cfg["shape"] == f"{cfg.get('m')}x{cfg.get('n')}":
        del cfg["m"], cfg["n"]
    bare = [_value(k, cfg[k]) for k in _BARE if k in cfg]
    rest = [k for k in _FIRST if k in cfg] + sorted(k for k in cfg if k not in (*_BARE, *_FIRST))
    return " ".join(bare + [f"{k}={_value(k, cfg[k])}" for k in rest])


def label(record: dict, omit: frozenset[str] | set[str] = frozenset()) -> str:
    """A short human name of a record's configuration (without its family): the variant, its
    provider unless warplab (or the variant's prefix), then :func:`params_text`."""
    v, prov = record["variant"], record["provider"]
    head = v if prov == "warplab" or v.startswith(prov) else f"{v} ({prov})"
    return " ".join(x for x in (head, params_text(record["params"], omit)) if x)


def _ident(record: dict) -> dict:
    return {"family": record["family"], "variant": record["variant"],
            "provider": record["provider"], "backend": record["backend"],
            "config": config(record), "label": label(record)}


def _failed(record: dict) -> bool:
    return not record["verified"] or bool(record["error"])


def _side(record: dict, phase: str | None, scale: float) -> dict:
    st = record["phases"].get(phase) if phase else None
    return {"median_ms": st["median"] * scale if st else None,
            "noise": float(st["noise"]) if st else None,
            "verified": bool(record["verified"]), "error": record["error"]}


def _pair(ra: dict, rb: dict, scale_a: float, scale_b: float, thr: float) -> dict:
    """One matched pair: medians, ratio B/A and the verdict."""
    phase = next((p for p in ("kernel", "total") if ra["phases"].get(p) and rb["phases"].get(p)),
                 None)
    out = {**_ident(ra), "phase": phase, "a": _side(ra, phase, scale_a),
           "b": _side(rb, phase, scale_b), "ratio": None, "rel_diff": None, "bound": None}
    if _failed(ra) or _failed(rb):
        who = " and ".join(s for s, r in (("A", ra), ("B", rb)) if _failed(r))
        return {**out, "verdict": FAILED, "reason": f"failed verification in {who}"}
    a, b = out["a"]["median_ms"], out["b"]["median_ms"]
    if phase is None or not a or not b:
        why = "no kernel or total phase in both" if phase is None else "a median of 0"
        return {**out, "verdict": UNTIMED, "reason": why}
    rel = (b - a) / a
    bound = max(out["a"]["noise"], out["b"]["noise"], thr)
    verdict = SAME if abs(rel) <= bound else FASTER if rel < 0 else SLOWER
    return {**out, "ratio": b / a, "rel_diff": rel, "bound": bound, "verdict": verdict,
            "reason": None}


def _about(doc: dict, source: str) -> dict:
    meta, dev = doc["meta"], doc["meta"]["device"]
    dev = dev if isinstance(dev, dict) else {"name": str(dev)}
    return {"source": source, "device": dev.get("name"), "backend": dev.get("backend"),
            "commit": meta.get("commit"), "timestamp": meta.get("timestamp"),
            "records": len(doc["results"])}


def compare(doc_a: dict, doc_b: dict, *, threshold: float = 0.0,
            sources: tuple[str, str] = ("A", "B")) -> dict:
    """Compare two results documents (B against the baseline A).

    Args:
        doc_a: The baseline results document (already validated, e.g. by :func:`load`).
        doc_b: The results document compared with it.
        threshold: Minimum relative difference in percent a pair must exceed (on top of the
            noise) to be FASTER or SLOWER.
        sources: What to call the two documents (their paths).

    Returns:
        The comparison: ``a``/``b`` (source, device, commit...), ``threshold_pct``,
        ``warnings``, ``pairs`` (in A's order, each with ``verdict``), ``only_a``, ``only_b``
        and ``counts``. JSON-serialisable.

    Raises:
        ValueError: ``threshold`` is negative or not finite.
    """
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) \
            or not math.isfinite(threshold) or threshold < 0:
        raise InvalidValueError(f"--threshold must be a percentage >= 0, not {threshold!r}")
    about_a, about_b = _about(doc_a, sources[0]), _about(doc_b, sources[1])
    warnings = []
    if about_a["device"] != about_b["device"]:
        warnings.append(f"different devices: A ran on {about_a['device']}, "
                        f"B on {about_b['device']}")
    scale_a = _TO_MS[doc_a["meta"].get("time_unit", "ms")]
    scale_b = _TO_MS[doc_b["meta"].get("time_unit", "ms")]
    queues: dict[tuple, list[dict]] = {}
    for rb in doc_b["results"]:
        queues.setdefault(key(rb), []).append(rb)
    for name, doc in (("A", doc_a), ("B", doc_b)):
        seen: dict[tuple, int] = {}
        for r in doc["results"]:
            seen[key(r)] = seen.get(key(r), 0) + 1
        dup = [k for k, n in seen.items() if n > 1]
        if dup:
            more = f" and {len(dup) - 1} more" if len(dup) > 1 else ""
            warnings.append(f"{name} records {dup[0][0]} {label_of_key(dup[0])}{more} more "
                            "than once: paired with the other file's in file order")
    pairs, only_a = [], []
    for ra in doc_a["results"]:
        q = queues.get(key(ra))
        if q:
            pairs.append(_pair(ra, q.pop(0), scale_a, scale_b, threshold / 100.0))
        else:
            only_a.append(_ident(ra))
    order = {id(rb): i for i, rb in enumerate(doc_b["results"])}
    only_b_recs = sorted((rb for q in queues.values() for rb in q), key=lambda r: order[id(r)])
    only_b = [_ident(rb) for rb in only_b_recs]
    counts = {v: sum(p["verdict"] == v for p in pairs) for v in VERDICTS}
    counts.update(only_a=len(only_a), only_b=len(only_b))
    return {"kind": "warplab.compare", "version": 1, "a": about_a, "b": about_b,
            "threshold_pct": float(threshold), "warnings": warnings, "pairs": pairs,
            "only_a": only_a, "only_b": only_b, "counts": counts}


def label_of_key(k: tuple) -> str:
    """The :func:`label` of a matching key."""
    return label({"variant": k[1], "provider": k[2], "params": json.loads(k[4])})


def compare_files(path_a: str | Path, path_b: str | Path, threshold: float = 0.0) -> dict:
    """:func:`load` both files and :func:`compare` them (sources = the paths). ``ValueError``
    when the two hold no family in common (nothing could pair)."""
    a, b = load(path_a), load(path_b)
    fa, fb = ({r["family"] for r in d["results"]} for d in (a, b))
    if fa and fb and not fa & fb:
        raise InvalidValueError(
            f"nothing to compare: {path_a} holds {', '.join(sorted(fa))} records, {path_b} "
            f"holds {', '.join(sorted(fb))}; compare two runs of the same family")
    return compare(a, b, threshold=threshold, sources=(str(path_a), str(path_b)))


def exit_status(comparison: dict, fail_on_slower: bool = False) -> int:
    """0, or 1 when ``fail_on_slower`` and any pair is SLOWER."""
    return int(fail_on_slower and comparison["counts"][SLOWER] > 0)


def write_json(comparison: dict, path: str | Path) -> Path:
    """Write the comparison as indented JSON; returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(comparison, indent=1, default=str))
    return p


# ------------------------------------------------------------------------------- text

def fmt_ms(ms: float | None) -> str:
    """A duration in milliseconds with a unit that keeps it short (``12.34 µs``)."""
    if ms is None:
        return "—"
    for unit, scale in (("s", 1e3), ("ms", 1.0), ("µs", 1e-3), ("ns", 1e-6)):
        if ms >= scale or unit == "ns":
            v = ms / scale
            return f"{v:.3f} {unit}" if v < 10 else f"{v:.2f} {unit}" if v < 100 \
                else f"{v:.1f} {unit}" if v < 1000 else f"{v:.0f} {unit}"
    return "—"  # pragma: no cover


def _cell(side: dict) -> str:
    if not side["verified"] or side["error"]:
        return "failed"
    return fmt_ms(side["median_ms"])


def common_keys(items: list[dict]) -> set[str]:
    """Config keys with one value across all ``items`` (pairs or unmatched records) when
    there are two or more of them: the table's title says them once."""
    if len(items) < 2:
        return set()
    first = items[0]["config"]
    return {k for k, v in first.items() if all(k in i["config"] and i["config"][k] == v
                                               for i in items)}


def _short(item: dict, omit: set[str]) -> str:
    return label({"variant": item["variant"], "provider": item["provider"],
                  "params": item["config"]}, frozenset(omit))


def _family_table(family: str, pairs: list[dict]) -> Table:
    common = common_keys(pairs)
    same = params_text({k: pairs[0]["config"][k] for k in common})
    t = Table(title=f"{family}{': ' + same if same else ''} (medians)",
              title_justify="left", caption_justify="left", expand=True)
    t.add_column("config", overflow="fold", ratio=1, min_width=16)
    for col, w in (("A", 8), ("B", 8), ("B/A", 5), ("noise", 6)):  # same widths in every table
        t.add_column(col, justify="right", no_wrap=True, min_width=w)
    t.add_column("verdict", no_wrap=True, min_width=7)
    total = False
    for p in pairs:
        mark = ""
        if p["phase"] == "total" and p["ratio"] is not None:
            mark, total = "*", True
        t.add_row(_short(p, common), _cell(p["a"]), _cell(p["b"]),
                  "—" if p["ratio"] is None else f"{p['ratio']:.3f}{mark}",
                  "—" if p["bound"] is None else f"±{100 * p['bound']:.1f}%",
                  Text(p["verdict"], style=STYLES[p["verdict"]]))
    if total:
        t.caption = "* total phase (no kernel phase in both)"
    return t


def renderables(comparison: dict) -> list[RenderableType]:
    """What ``warplab compare`` prints, in order: warnings, the two sources, one table per
    family, failures, unmatched records and a summary line (each fits 80 columns)."""
    c = comparison
    out: list[RenderableType] = [Text(f"warning: {w}", style="bold yellow")
                                 for w in c["warnings"]]
    for name in ("a", "b"):
        s = c[name]
        commit = (s["commit"] or "?")[:12]
        out.append(Text(f"{name.upper()}: {s['source']}\n   {s['device']}, commit {commit}, "
                        f"{s['timestamp']}, {s['records']} records"))
    thr = c["threshold_pct"]
    out.append(Text("SAME when |B/A - 1| <= max(noise A, noise B" +
                    (f", {thr:g}%" if thr else "") + "); noise = (Q90 - Q10) / median",
                    style="dim"))
    families: dict[str, list[dict]] = {}
    for p in c["pairs"]:
        families.setdefault(p["family"], []).append(p)
    out += [_family_table(f, ps) for f, ps in families.items()]
    failed = [p for p in c["pairs"] if p["verdict"] in (FAILED, UNTIMED)]
    if failed:
        t = Table(title="not compared", title_justify="left", expand=True)
        t.add_column("config", overflow="fold", ratio=1, min_width=16)
        t.add_column("why", overflow="fold", ratio=1, min_width=16)
        for p in failed:
            why = [f"{s.upper()}: {p[s]['error'] or 'unverified'}" for s in ("a", "b")
                   if not p[s]["verified"] or p[s]["error"]] or [p["reason"]]
            t.add_row(f"{p['family']} {p['label']}", "; ".join(why))
        out.append(t)
    if c["only_a"] or c["only_b"]:
        t = Table(title="unmatched", title_justify="left", expand=True)
        t.add_column("only in", no_wrap=True)
        t.add_column("family", no_wrap=True)
        t.add_column("config", overflow="fold", ratio=1, min_width=16)
        for side in ("a", "b"):
            for r in c[f"only_{side}"]:
                t.add_row(side.upper(), r["family"], r["label"])
        out.append(t)
    out.append(Text(summary(c)))
    return out


def summary(comparison: dict) -> str:
    """One line: how many pairs got each verdict and how many records went unmatched."""
    n = comparison["counts"]
    parts = [f"{n[v]} {v.lower()}" for v in VERDICTS if n[v] or v in (FASTER, SLOWER, SAME)]
    return (f"{len(comparison['pairs'])} pairs: " + ", ".join(parts) +
            f"; {n['only_a']} only in A, {n['only_b']} only in B")

"""What every family's campaign shares: the device facts for a results file, the sizes a
device can hold, the results document, and a timestamped folder per campaign."""
from __future__ import annotations

import datetime as _dt
from pathlib import Path

from warplab.core import registry as _registry
from warplab.core.device import cpu_properties, device_properties
from warplab.lab.harness import results
from warplab.core.errors import InvalidValueError


def device_meta(backend: str) -> dict:
    """Facts about the device of ``backend`` (GPU properties, or the CPU's)."""
    return device_properties() if backend == "cuda" else cpu_properties()


def cap_sizes(sizes: tuple[int, ...], backend: str, explicit: bool, cpu_max: int
              ) -> tuple[list[int], list[str]]:
    """Drop sizes the device cannot hold (input plus comparator temporaries); on the cpu
    backend a campaign's own sizes stop at ``cpu_max``, sizes asked for do not."""
    if backend == "cuda":
        import cupy

        limit = cupy.cuda.runtime.memGetInfo()[0] // 4
    else:
        limit = max(sizes) if explicit else cpu_max
    kept = [s for s in sizes if s <= limit]
    dropped = [s for s in sizes if s > limit]
    if not kept:
        raise InvalidValueError(f"no size fits: {list(sizes)} all exceed {limit} bytes on {backend}")
    notes = [f"sizes above {limit} bytes skipped on {backend}: {dropped}"] if dropped else []
    return kept, notes


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


def check_variant_names(family: str, names: list[str] | None, backend: str) -> None:
    """``ValueError`` for a name that is no variant of ``family`` (listing the valid ones),
    or one that runs on another backend than ``backend`` (listing the valid ones there)."""
    for n in names or []:
        _registry.get(family, n)  # unknown: "unknown <family> variant 'x'; valid: ..."
    wrong = [n for n in names or [] if _registry.get(family, n).backend != backend]
    if wrong:
        valid = ", ".join(v.name for v in _registry.variants(family, backend))
        raise InvalidValueError(f"variant(s) {', '.join(wrong)} run on another backend than "
                                f"{backend} (valid on {backend}: {valid})")

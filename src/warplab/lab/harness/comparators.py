"""Comparator providers: what people use today, timed in the same run as warplab's kernels.

A :class:`Provider` computes what a family's public call computes, through another library's
call; each family lists its providers in its own ``comparators.py``. Providers that cannot be
imported are skipped with a note, never an error.

On the cpu backend the comparator is NumPy's own call on the same input (:func:`numpy_provider`,
library ``"numpy"``): a family lists those next to its GPU providers, and a campaign times them
with the same host clock as warplab's NumPy variants.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from warplab.core import registry
from warplab.core.errors import InvalidValueError

#: The provider (library) of the cpu backend's comparators.
NUMPY = "numpy"


@dataclass(frozen=True)
class Provider:
    """A comparator: ``run(...)`` computes the family's result on the current stream (the
    arguments are the family's: e.g. ``(d_data, mapping)`` for histograms)."""

    name: str
    library: str
    probe: Callable[[], str | None]  # None when usable, else why not
    run: Callable[..., Any]


def numpy_provider(name: str, run: Callable[..., Any]) -> Provider:
    """A cpu-backend comparator: NumPy's own call ``run`` (NumPy is always importable)."""
    return Provider(name, NUMPY, lambda: None, run)


def cpu_note(gpu: str, calls: str) -> str:
    """The campaign note of a cpu run whose comparators are NumPy's calls ``calls`` (the GPU
    ones, ``gpu``, need a GPU)."""
    return (f"cpu backend: the GPU comparators ({gpu}) need a GPU; NumPy's own {calls} on the "
            "same input stands in (provider numpy)")


def probe_module(name: str) -> str | None:
    """None when ``name`` imports, else why not."""
    try:
        __import__(name)
    except Exception as exc:
        return f"{name} not importable ({type(exc).__name__}: {exc})"
    return None


def available(providers: tuple[Provider, ...]) -> tuple[list[Provider], list[str]]:
    """The usable providers and one note per skipped one."""
    ok, notes = [], []
    for p in providers:
        why = p.probe()
        if why is None:
            ok.append(p)
        else:
            notes.append(f"comparator {p.name} skipped: {why}")
    return ok, notes


def campaign_targets(family: str, backend: str, providers: tuple[Provider, ...],
                     variant_names: list[str] | None, with_comparators: bool,
                     cpu_providers: tuple[Provider, ...] = ()) -> tuple[list[Any], list[str]]:
    """What a campaign of ``family`` times on ``backend``: the named variants (or all of the
    backend's, preferred first), then when asked the comparators: on cuda the usable
    ``providers``, on cpu ``cpu_providers`` (NumPy's own calls); plus one note per skipped
    provider. ``ValueError`` for a variant of another backend (naming the valid ones)."""
    if variant_names:
        vs = [registry.get(family, n) for n in variant_names]
        wrong = [v.name for v in vs if v.backend != backend]
        if wrong:
            valid = ", ".join(v.name for v in registry.variants(family, backend))
            raise InvalidValueError(f"variant(s) {', '.join(wrong)} do not run on the {backend} "
                             f"backend (valid there: {valid})")
    else:
        vs = registry.variants(family, backend)
    if not with_comparators:
        return list(vs), []
    if backend != "cuda":
        return list(vs) + list(cpu_providers), []
    provs, notes = available(providers)
    return list(vs) + provs, notes

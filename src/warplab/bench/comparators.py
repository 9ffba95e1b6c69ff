"""Comparator providers: what people use today, timed in the same run as warplab's kernels.

A :class:`Provider` computes what a family's public call computes, through another library's
call; each family lists its providers in its own ``comparators.py``. Providers that cannot be
imported are skipped with a note, never an error.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Provider:
    """A comparator: ``run(...)`` computes the family's result on the current stream (the
    arguments are the family's: e.g. ``(d_data, mapping)`` for histograms)."""

    name: str
    library: str
    probe: Callable[[], str | None]  # None when usable, else why not
    run: Callable[..., Any]


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

"""Variant registry and dispatch.

Every kernel strategy registers itself under ``(family, name)`` with the backend it runs on, a
``supports(problem)`` predicate, its cost model ``bytes_moved(problem)`` (and ``flops(problem)``
where arithmetic matters) and a preference rank. Dispatch walks the preference list of a backend
and takes the first variant that supports the problem; ``variant=`` selects one by name.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, NamedTuple

from warplab.core.device import cuda_available, cuda_status, resolve_backend
from warplab.core.errors import DeviceUnavailableError, InvalidValueError

_REGISTRY: dict[str, dict[str, Variant]] = {}
# variants() cache: (family, backend) -> (family dict identity and size, ordered list)
_ORDERED: dict[tuple[str, str | None], tuple[tuple[int, int], list[Variant]]] = {}
#: Bumped by every :func:`register`: a hot path that cached a dispatch decision compares it
#: with the generation it decided at (one attribute read) instead of asking again.
generation = 0


def supports_all(problem: Any) -> bool:
    """The ``supports`` of a variant registered without a predicate: every problem."""
    return True


@dataclass(frozen=True)
class Variant:
    """One registered implementation strategy of a family."""

    family: str
    name: str
    backend: str
    fn: Callable[..., Any]
    bytes_moved: Callable[[Any], int]
    supports: Callable[[Any], bool] = supports_all
    flops: Callable[[Any], int] | None = None
    rank: int = 100
    seed: bool = False
    summary: str = ""
    prefer: Callable[[Any], bool] = supports_all


def register(
    family: str,
    name: str,
    *,
    backend: str,
    bytes_moved: Callable[[Any], int],
    supports: Callable[[Any], bool] | None = None,
    flops: Callable[[Any], int] | None = None,
    rank: int = 100,
    seed: bool = False,
    prefer: Callable[[Any], bool] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register ``fn`` as variant ``name`` of ``family``.

    Args:
        family: e.g. ``"histogram"``.
        name: the strategy's name (``"warp_private_vec"``), unique within the family.
        backend: ``"cuda"`` or ``"cpu"``.
        bytes_moved: the variant's one cost model: fewest device-memory bytes for a problem.
        supports: predicate; ``False`` passes the problem to the next variant in rank order.
        flops: arithmetic cost model where it matters.
        rank: lower is preferred by automatic dispatch (the default is the lowest rank).
        seed: True for a variant that reproduces a seed document's kernel faithfully.
        prefer: predicate for automatic dispatch only: where it is False the problem passes to
            the next variant in rank order, though the variant still runs it when named.
    """

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        global generation
        fam = _REGISTRY.setdefault(family, {})
        if name in fam:
            raise RuntimeError(f"variant {family}/{name} registered twice")
        doc = (fn.__doc__ or "").strip().splitlines()
        fam[name] = Variant(family, name, backend, fn, bytes_moved,
                            supports or supports_all, flops, rank, seed,
                            doc[0] if doc else "", prefer or supports_all)
        generation += 1
        return fn

    return deco


def variants(family: str, backend: str | None = None) -> list[Variant]:
    """All variants of a family (optionally of one backend), in preference order."""
    return list(_ordered(family, backend))


def _family(family: str) -> dict[str, Variant]:
    """The variants of ``family`` by name. ``import warplab`` imports a family package on the
    first use of one of its names: where ``family`` has none registered yet, every package of
    ``warplab.families.FAMILIES`` is imported first."""
    fam = _REGISTRY.get(family)
    if fam is None:
        from warplab.families import FAMILIES

        for pkg in FAMILIES:
            importlib.import_module(f"warplab.families.{pkg}")
        fam = _REGISTRY.get(family, {})
    return fam


def _ordered(family: str, backend: str | None) -> list[Variant]:
    """The cached preference order (do not modify the list)."""
    fam = _family(family)
    stamp = (id(fam), len(fam))
    cached = _ORDERED.get((family, backend))
    if cached is None or cached[0] != stamp:
        out = [v for v in fam.values() if backend is None or v.backend == backend]
        cached = _ORDERED[(family, backend)] = (stamp, sorted(out, key=lambda v: (v.rank, v.name)))
    return cached[1]


def has(family: str, name: str) -> bool:
    """True when ``family`` has a variant called ``name``."""
    return name in _family(family)


def get(family: str, name: str) -> Variant:
    """The variant called ``name``; ``ValueError`` listing the valid names otherwise."""
    fam = _family(family)
    if name not in fam:
        valid = ", ".join(v.name for v in variants(family))
        raise InvalidValueError(f"unknown {family} variant {name!r}; valid: {valid}")
    return fam[name]


def pick_backend(family: str, device: str | None, variant: str | None, on_device: bool) -> str:
    """The backend of a call: ``device=`` wins, then the named variant's own backend (which
    must be usable), then the input's home (device input runs on cuda), then the automatic
    choice."""
    if device is not None:
        return resolve_backend(device)
    if variant is not None:
        v = get(family, variant)
        if v.backend == "cuda" and not cuda_available():
            raise DeviceUnavailableError(f"variant {variant!r} needs the cuda backend: "
                                         f"{cuda_status()[1]}")
        return v.backend
    return "cuda" if on_device else resolve_backend(None)


def preferred_for_all(family: str, backend: str) -> Variant | None:
    """The preferred variant of ``backend`` if it supports every problem (what :func:`choose`
    returns for any problem, so a hot path may skip building one), else None."""
    order = _ordered(family, backend)
    return (order[0] if order and order[0].supports is supports_all
            and order[0].prefer is supports_all else None)


def choose(family: str, backend: str, problem: Any, name: str | None = None) -> Variant:
    """Pick the variant that runs ``problem``.

    With ``name`` the named variant must exist, belong to ``backend`` and support the problem;
    without it the first variant of ``backend`` in rank order that supports and prefers it is
    taken (the first that supports it when none prefers it).
    """
    if name is not None:
        v = get(family, name)
        if v.backend != backend:
            valid = ", ".join(x.name for x in variants(family, backend))
            raise InvalidValueError(f"{family} variant {name!r} runs on the {v.backend} backend, "
                                    f"not {backend}; valid on {backend}: {valid}")
        if not v.supports(problem):
            raise InvalidValueError(f"{family} variant {name!r} does not support this input "
                                    f"({problem})")
        return v
    first = None
    for v in _ordered(family, backend):
        if v.supports(problem):
            if v.prefer(problem):
                return v
            first = first or v
    if first is not None:
        return first
    raise InvalidValueError(f"no {family} variant on {backend} supports {problem}")


# --- what ran: an opt-in, thread-safe record (a context variable, no module-global state) ---

class Ran(NamedTuple):
    """One dispatch decision: which variant of which family ran (on its backend)."""

    family: str
    variant: str
    backend: str


_RECORD: ContextVar[list[Ran] | None] = ContextVar("warplab_record", default=None)


def ran(v: Variant) -> None:
    """Note that variant ``v`` is about to run; appended to the active :func:`record_variants`
    list of this thread (or asyncio task), if any. Costs one context-variable read otherwise."""
    rec = _RECORD.get()
    if rec is not None:
        rec.append(Ran(v.family, v.name, v.backend))


@contextmanager
def record_variants() -> Iterator[list[Ran]]:
    """Record which variants the calls inside the block ran, in call order.

    >>> with warplab.record_variants() as ran:
    ...     warplab.sum(x)
    >>> ran[-1].variant
    'persistent_vec'

    Safe under threads: each thread (each ``contextvars`` context) has its own record, so calls
    in other threads never appear in it. Nested blocks each see their own calls only.
    """
    rec: list[Ran] = []
    token = _RECORD.set(rec)
    try:
        yield rec
    finally:
        _RECORD.reset(token)

"""Shared fixtures of the test suite.

Every test that is not a GPU test (no ``gpu`` marker, not under ``tests/gpu``) runs on the NumPy
backend: ``WARPLAB_DEVICE=cpu`` is set for it, so that a machine with a GPU runs the CPU suite the
same way CI (no GPU) does.
"""
from __future__ import annotations

import gc
import threading
from pathlib import Path
from typing import Callable

import pytest

_GPU_DIR = Path(__file__).resolve().parent / "gpu"
#: trimmed copies of real results files (tests/fixtures/README.md says how they were cut)
RESULT_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "results"


def pytest_collection_finish(session: pytest.Session) -> None:
    """Move what collection built (thousands of test items, every imported module) out of the
    cyclic garbage collector's reach: it lives to the end of the session, and each full
    collection would walk it again. The lab's campaigns and Dask call ``gc.collect()`` between
    runs (a quarter of a second each over the whole suite's objects); objects the tests make
    are collected as before."""
    gc.collect()
    gc.freeze()


def _is_gpu_test(node: pytest.Item) -> bool:
    if node.get_closest_marker("gpu") is not None:
        return True
    path = Path(str(getattr(node, "path", None) or node.fspath)).resolve()
    return _GPU_DIR in path.parents


@pytest.fixture(autouse=True)
def _cpu_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """``WARPLAB_DEVICE=cpu`` for every test outside ``tests/gpu`` without the ``gpu`` marker."""
    if not _is_gpu_test(request.node):
        monkeypatch.setenv("WARPLAB_DEVICE", "cpu")


# What ran: every test records its calls' variants (warplab.record_variants); tests ask with
# last_ran() (the variant of the newest call) and start afresh with clear_ran().
_RAN: list = []


@pytest.fixture(autouse=True)
def _record_variants():
    import warplab

    with warplab.record_variants() as rec:
        _RAN[:] = [rec]
        yield
    _RAN.clear()


def last_ran() -> str | None:
    """Name of the variant the newest warplab call of this test ran (None if none ran)."""
    rec = _RAN[0] if _RAN else []
    return rec[-1].variant if rec else None


def ran_of(family: str) -> str | None:
    """Name of the newest variant of ``family`` that this test ran (a variant that calls
    another family's functions, e.g. corrcoef's series statistics, records those after it)."""
    rec = _RAN[0] if _RAN else []
    return next((r.variant for r in reversed(rec) if r.family == family), None)


def clear_ran() -> None:
    """Forget the calls recorded so far in this test."""
    if _RAN:
        _RAN[0].clear()


@pytest.fixture(autouse=True)
def _ceilings_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
                    request: pytest.FixtureRequest) -> None:
    """Measured ceilings go to a cache folder of this test session, never to the user's
    ~/.cache (GPU tests too: they measure the real device once per session)."""
    monkeypatch.setenv("WARPLAB_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


def run_in_threads(worker: Callable[[int], None], n: int = 2) -> None:
    """``worker(i)`` for i in range(n), each on its own thread, all released at once (a
    barrier); an exception in any thread fails the calling test with every one listed."""
    start = threading.Barrier(n)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            start.wait()
            worker(i)
        except BaseException as exc:  # noqa: BLE001  (re-raised in the calling thread)
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


@pytest.fixture
def plot_labels(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ``label=`` of every matplotlib ``Axes.plot`` call the test makes (each call still
    plots)."""
    from matplotlib.axes import Axes

    labels: list[str] = []
    orig = Axes.plot

    def spy(self: Axes, *args: object, **kw: object) -> object:
        labels.append(str(kw.get("label", "")))
        return orig(self, *args, **kw)

    monkeypatch.setattr(Axes, "plot", spy)
    return labels


def builtin_kind(exc: BaseException) -> type:
    """The built-in exception class an error is (``ValueError`` for warplab's
    ``InvalidValueError``): what NumPy's semantics are compared by."""
    return next(c for c in type(exc).__mro__ if c.__module__ == "builtins")

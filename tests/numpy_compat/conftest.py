"""The NumPy test adapter's collection: NumPy's own test markers, and the deselect list of
``test_numpy_suite.DIFFERENCES`` (each a deliberate difference from NumPy, with its reason)."""
from __future__ import annotations

import pytest

_NUMPY_MARKERS = ("slow", "valgrind_error", "leaks_references", "thread_unsafe", "parallel_threads",
                  "iterations", "limit_leaks")


def pytest_configure(config: pytest.Config) -> None:
    for name in _NUMPY_MARKERS:
        config.addinivalue_line("markers", f"{name}: NumPy's own test marker")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    kept, dropped = [], []
    for item in items:
        table = getattr(item.module, "DIFFERENCES", None) if item.module is not None else None
        name = f"{item.cls.__name__}::{item.originalname}" if item.cls is not None else ""
        if table is not None and name in table:
            dropped.append(item)
        else:
            kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept

"""Latency of small calls: every family's public call on small inputs, timed on the host as
call latency (call to result usable) and host time per call (back-to-back calls), next to
CuPy, PyTorch and the bare-launch floor (``bench.py``, ``cases.py``, ``comparators.py``).
A measurement only: no public functions."""
from __future__ import annotations

__all__: list[str] = []

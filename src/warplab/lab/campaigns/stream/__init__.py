"""Streaming host data at bus speed: a measurement-only folder (the streaming itself is in
``core/streaming.py``, used by every family). ``warplab stream`` and ``warplab bench stream``
run the campaign of ``bench.py``; no public functions of its own."""
from __future__ import annotations

__all__: list[str] = []

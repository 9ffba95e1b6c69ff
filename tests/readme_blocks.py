"""The README's Python code blocks, as a user pastes them: each block in a fresh interpreter."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks(path: Path = ROOT / "README.md") -> list[str]:
    """The text of every ```python block of ``path``, in order."""
    return BLOCK.findall(path.read_text(encoding="utf-8"))


def run_block(code: str, cwd: Path, env: dict[str, str] | None = None
              ) -> subprocess.CompletedProcess:
    """``code`` run by ``python -c`` in ``cwd`` with the tree's ``src`` on the path."""
    full = dict(os.environ, PYTHONPATH=str(ROOT / "src"), MPLBACKEND="Agg", **(env or {}))
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=300)

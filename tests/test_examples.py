"""Every ``examples/*.py`` runs to completion on the NumPy backend."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
PARAMS = [pytest.param(p, id=p.name) for p in EXAMPLES]


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 3, "examples/*.py went missing"


@pytest.mark.parametrize("script", PARAMS)
def test_example_runs(script: Path, tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), WARPLAB_DEVICE="cpu", MPLBACKEND="Agg")
    p = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, f"{script.name} exited {p.returncode}\n{p.stdout}\n{p.stderr}"

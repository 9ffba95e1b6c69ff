"""The README's quickstart runs as pasted on a machine without a GPU (the NumPy backend)."""
from __future__ import annotations

from pathlib import Path

import pytest
from readme_blocks import python_blocks, run_block

BLOCKS = python_blocks()


def test_the_readme_has_its_quickstart() -> None:
    assert BLOCKS, "README.md lost its ```python blocks"


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_block_runs_on_the_cpu(code: str, tmp_path: Path) -> None:
    p = run_block(code, tmp_path, {"WARPLAB_DEVICE": "cpu"})
    assert p.returncode == 0, f"exit {p.returncode}\n{p.stdout}\n{p.stderr}"

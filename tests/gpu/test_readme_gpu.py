"""The README's quickstart runs as pasted on the GPU machine (the automatic backend: cuda)."""
from __future__ import annotations

from pathlib import Path

import pytest
from readme_blocks import python_blocks, run_block

import warplab

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)

BLOCKS = python_blocks()


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_block_runs_on_the_gpu(code: str, tmp_path: Path) -> None:
    p = run_block(code, tmp_path)
    assert p.returncode == 0, f"exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    assert "cuda" in p.stdout.splitlines()[0]

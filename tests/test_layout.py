"""The library/lab split: the library (``warplab`` outside ``warplab.lab``) imports neither the
lab nor its dependencies (rich, matplotlib), ``import warplab`` works with NumPy alone, the
plain ``warplab histogram FILE`` needs only the library, and the lab's commands say which
extra to install when it is missing."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
LIBRARY = SRC / "warplab"
LAB_ONLY = ("rich", "matplotlib", "warplab.lab")

#: A child process in which rich and matplotlib cannot be imported (as without the lab extra).
_BLOCK = """
import importlib.abc, sys
class _Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('rich', 'matplotlib'):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _Block())
"""


def _library_modules() -> list[Path]:
    """Every library module but the command's entry point (``cli.py``), which hands a lab
    subcommand over to ``warplab.lab.cli`` when one is asked for (tested below)."""
    return [p for p in LIBRARY.rglob("*.py") if "lab" not in p.relative_to(LIBRARY).parts
            and p != LIBRARY / "cli.py"]


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


@pytest.mark.parametrize("path", _library_modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_library_module_never_imports_the_lab(path: Path) -> None:
    bad = sorted(n for n in _imports(path)
                 if any(n == m or n.startswith(m + ".") for m in LAB_ONLY))
    assert not bad, f"{path.relative_to(SRC)} imports {bad}"


def _child(code: str, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(SRC), "WARPLAB_DEVICE": "cpu"}
    return subprocess.run([sys.executable, "-c", _BLOCK + code, *args], env=env, input=stdin,
                          capture_output=True, timeout=120, check=False)


def test_import_warplab_loads_no_lab_dependency() -> None:
    p = _child("import sys, warplab\n"
               "print(warplab.histogram([1, 2, 3])[0].tolist())\n"
               "print(sorted(m for m in sys.modules if m.split('.')[0] in "
               "('rich', 'matplotlib') or m.startswith('warplab.lab')))")
    assert p.returncode == 0, p.stderr.decode()
    lines = p.stdout.decode().splitlines()
    assert lines == ["[1, 0, 0, 0, 0, 1, 0, 0, 0, 1]", "[]"]


def test_histogram_file_without_the_lab(tmp_path: Path) -> None:
    f = tmp_path / "a.txt"
    f.write_bytes(b"aab")
    p = _child("import sys; from warplab.cli import main; sys.exit(main(sys.argv[1:]))",
               "histogram", str(f), "--top", "1")
    assert p.returncode == 0, p.stderr.decode()
    out = p.stdout.decode()
    assert out.startswith(f"{f}: 3 bytes, bins bytes (256)")
    assert " 97 a " in out and "66.667" in out


def test_histogram_of_stdin(tmp_path: Path) -> None:
    p = _child("import sys; from warplab.cli import main; sys.exit(main(sys.argv[1:]))",
               "histogram", "-", "--bins", "letters", stdin=b"Hello")
    assert p.returncode == 0, p.stderr.decode()
    assert p.stdout.decode().startswith("-: 5 bytes, bins letters (27)")


@pytest.mark.parametrize("argv", [["bench", "reduce"], ["report", "runs"], ["device"],
                                  ["histogram", "--generate", "uniform", "--size", "1K"]])
def test_lab_commands_name_the_extra(argv: list[str]) -> None:
    p = _child("import sys; from warplab.cli import main; sys.exit(main(sys.argv[1:]))", *argv)
    assert p.returncode == 2
    err = p.stderr.decode().strip()
    assert err.count("\n") == 0 and "pip install 'warplab[lab]'" in err, err
    assert "Traceback" not in err


def test_plain_histogram_user_error_is_one_line(tmp_path: Path) -> None:
    p = _child("import sys; from warplab.cli import main; sys.exit(main(sys.argv[1:]))",
               "histogram", str(tmp_path / "missing.bin"))
    assert p.returncode == 2
    err = p.stderr.decode().strip()
    assert err.startswith("warplab: error:") and "\n" not in err


def test_plain_histogram_negative_top_is_one_line(tmp_path: Path) -> None:
    f = tmp_path / "a.txt"
    f.write_bytes(b"ab")
    p = _child("import sys; from warplab.cli import main; sys.exit(main(sys.argv[1:]))",
               "histogram", str(f), "--top", "-1")
    assert p.returncode == 2
    err = p.stderr.decode().strip()
    assert err == "warplab: error: --top must be 0 (all bins) or more, got -1"
    assert p.stdout == b""

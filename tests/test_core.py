"""The shared core: what ran (record_variants), module names, error translation, the CLI's
line between user mistakes and bugs, launch constants passed as -D."""
from __future__ import annotations

import importlib
import threading

import numpy as np
import pytest

import warplab
from warplab.lab import cli
from warplab.core import registry
from warplab.core.device import device_errors
from warplab.core.loader import defines


def test_record_variants_lists_the_calls_in_order() -> None:
    with warplab.record_variants() as ran:
        warplab.sum(np.arange(10, dtype=np.int32))
        warplab.byte_histogram(b"abc")
    assert [(r.family, r.variant, r.backend) for r in ran] == [
        ("reduce", "numpy", "cpu"), ("histogram", "numpy_chunked", "cpu")]


def test_record_variants_nests_and_stops() -> None:
    with warplab.record_variants() as outer:
        warplab.sum(np.ones(3, np.float32))
        with warplab.record_variants() as inner:
            warplab.max(np.ones(3, np.float32))
        warplab.min(np.ones(3, np.float32))
    warplab.mean(np.ones(3, np.float32))  # after the block: recorded nowhere
    assert len(inner) == 1 and len(outer) == 2


def test_record_variants_is_per_thread() -> None:
    """Two threads recording at once each see only their own calls."""
    barrier = threading.Barrier(2)
    seen: dict[str, list] = {}

    def work(name: str, fn, n: int) -> None:
        with warplab.record_variants() as ran:
            barrier.wait()
            for _ in range(n):
                fn(np.arange(16, dtype=np.int64))
            seen[name] = [r.family for r in ran]

    a = threading.Thread(target=work, args=("sum", warplab.sum, 200))
    b = threading.Thread(target=work, args=("bincount", warplab.bincount, 50))
    a.start(); b.start(); a.join(); b.join()
    assert seen["sum"] == ["reduce"] * 200
    assert seen["bincount"] == []  # int64 bincount runs NumPy directly: no variant dispatch


def test_public_names_do_not_shadow_modules() -> None:
    assert callable(warplab.histogram) and callable(warplab.sum) and callable(warplab.matmul)
    for family in ("histogram", "reduce", "matmul"):
        mod = importlib.import_module(f"warplab.families.{family}")
        assert set(mod.__all__) <= set(warplab.__all__)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("warplab.histogram")


def test_device_errors_translates_cupy_oom_only() -> None:
    oom = type("OutOfMemoryError", (MemoryError,), {"__module__": "cupy.cuda.memory"})

    @device_errors
    def f(exc: BaseException) -> None:
        raise exc

    with pytest.raises(warplab.DeviceOutOfMemoryError, match="out of memory in warplab.f") as info:
        f(oom("1 GiB"))
    assert isinstance(info.value.__cause__, oom) and isinstance(info.value, MemoryError)
    with pytest.raises(MemoryError) as plain:
        f(MemoryError("host"))
    assert not isinstance(plain.value, warplab.WarplabError)


def test_defines_are_the_launch_plans_only_copy() -> None:
    assert defines({"WARPLAB_B": 8, "WARPLAB_A": 512}) == ("-DWARPLAB_A=512", "-DWARPLAB_B=8")
    from warplab.families.histogram import cuda as hcuda
    from warplab.families.reduce import cuda as rcuda

    for mod in (hcuda, rcuda):
        src = mod.SOURCE.read_text()
        for name in mod.DEFINES:
            assert f"#ifndef {name}\n#error" in src, name  # no default in the .cu


def _raise_like_user() -> None:
    raise ValueError("bad size")


def test_user_errors_are_told_from_bugs() -> None:
    try:
        warplab.sum(np.ones(3), variant="nosuch")
    except ValueError as exc:
        assert cli.is_user_error(exc)
    try:
        np.zeros(3) + "x"  # a library's error inside warplab would be a bug
    except Exception as exc:  # noqa: BLE001
        assert not cli.is_user_error(exc)
    try:
        registry.get("reduce", None)  # type: ignore[arg-type]
    except ValueError as exc:
        assert cli.is_user_error(exc)
    assert cli.is_user_error(FileNotFoundError("x"))
    assert not cli.is_user_error(KeyError("x"))


def test_cli_shows_the_traceback_of_a_bug(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from warplab.lab import commands

    def broken(args):  # an internal TypeError, not raised on purpose
        return len(None)  # type: ignore[arg-type]

    monkeypatch.setattr(commands, "cmd_device", broken)
    with pytest.raises(TypeError):
        cli.main(["device"])
    with pytest.raises(ValueError):  # a ValueError from outside warplab's source: not ours
        monkeypatch.setattr(commands, "cmd_device", lambda args: _raise_like_user())
        cli.main(["device"])
    monkeypatch.setattr(commands, "cmd_device",
                        lambda args: warplab.sum(np.ones(3), variant="nosuch"))
    assert cli.main(["device"]) == 2  # warplab's own validation: one line
    err = capsys.readouterr().err
    assert err.startswith("warplab: error: unknown reduce variant") and err.count("\n") == 1
    with pytest.raises(ValueError):
        cli.main(["--debug", "device"])


def test_shared_header_is_included_not_copied() -> None:
    """Lim / is_nan live once, in core/warplab.cuh; the loader finds it and keys on its hash."""
    from warplab.core import loader

    assert loader.HEADER.exists() and f"-I{loader.HEADER.parent}" in loader.BASE_OPTIONS
    from pathlib import Path

    fam = Path(loader.__file__).resolve().parent.parent / "families"
    for cu in fam.glob("*/*.cu"):
        text = cu.read_text()
        assert "struct Lim<int>" not in text, f"{cu.name} copies the shared header"


def test_family_headers_are_on_the_include_path_and_in_the_key(tmp_path) -> None:
    """A source's own headers (*.cuh beside it): its folder goes on NVRTC's include path and
    their hash into the options (CuPy's disk cache keys on options); none without headers."""
    from warplab.core import loader
    from warplab.families.memcpy import cuda as mc

    folder = mc.SOURCE.resolve().parent
    opts = loader.local_headers(folder)
    assert opts[0] == f"-I{folder}" and opts[1].startswith("-DWARPLAB_LOCAL_HASH=0x")
    for name in ("memcpy_copy.cuh", "memcpy_warp.cuh"):
        assert f'#include "{name}"' in mc.SOURCE.read_text() + (folder / "memcpy_warp.cuh"
                                                                 ).read_text()
    assert loader.local_headers(tmp_path) == ()
    a, b = tmp_path / "a", tmp_path / "b"
    for d, text in ((a, "x"), (b, "y")):
        d.mkdir()
        (d / "h.cuh").write_text(text)
    assert loader.local_headers(a)[1] != loader.local_headers(b)[1]


def test_families_are_imported_on_first_use() -> None:
    """``import warplab`` imports no family; a name imports its own family only; every
    family's ``__all__`` is what the package maps (a new public name needs its entry)."""
    import subprocess
    import sys

    from warplab.families import FAMILIES

    code = ("import sys, warplab; fams = lambda: sorted({m.split('.')[2] for m in sys.modules "
            "if m.startswith('warplab.families.')}); print(fams()); warplab.byte_histogram; "
            "print(fams()); print(warplab.variants('matmul')[:1]); print(fams())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out[0] == "[]"
    assert out[1] == "['histogram']"
    assert out[2] != "[]" and out[3] == str(sorted(FAMILIES))
    for fam in FAMILIES:
        mod = importlib.import_module(f"warplab.families.{fam}")
        assert set(mod.__all__) == {n for n, f in warplab._FAMILY_OF.items() if f == fam}
    assert set(warplab.__all__) >= set(warplab._FAMILY_OF)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        warplab.nope  # noqa: B018


def test_a_family_package_registers_its_variants_in_full() -> None:
    """Lazy imports rely on it: whichever family package is imported first, every registry
    family it touches is then complete (no package registers into another's family)."""
    import json
    import subprocess
    import sys

    from warplab.families import FAMILIES

    def registry_after(*packages: str) -> dict:
        code = ("import importlib, json, sys; from warplab.core import registry as r\n"
                "for p in sys.argv[1:]: importlib.import_module('warplab.families.' + p)\n"
                "print(json.dumps({f: sorted(v) for f, v in r._REGISTRY.items()}))")
        out = subprocess.run([sys.executable, "-c", code, *packages], capture_output=True,
                             text=True, check=True).stdout
        return json.loads(out)

    everything = registry_after(*FAMILIES)
    for pkg in FAMILIES:
        for fam, names in registry_after(pkg).items():
            assert names == everything[fam], (pkg, fam)

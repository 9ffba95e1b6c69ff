"""Compile every CUDA source of the package for sm_75 and sm_90 with nvcc (PTX; ptxas on a few).

A library source ``families/F/F.cu`` takes its ``-D`` constants from ``families/F/cuda.py``
(``DEFINES``), ``families/F/X.cu`` from ``families/F/X_cuda.py``; a lab source
``lab/campaigns/F/X.cu`` from ``lab/campaigns/F/X_cuda.py`` where that module exists. Extra
configurations: the default batched copy's load policy, every Gram configuration, the CUB
comparator helper (as a shared library). Warnings are errors; a register spill in the matmul
tiles fails the check.

Prints one line per failure (with the compiler's log) and a one-line summary; ``-v`` also
prints every job and ptxas's resource lines of the default kernels. Without nvcc it fails under
CI (``CI=true``) and is skipped elsewhere.

Usage: ``python scripts/nvcc_check.py [-v] [-j JOBS]`` from the repository root.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
sys.path.insert(0, str(SRC))

from warplab.core.loader import defines  # noqa: E402

ARCHS = ("sm_75", "sm_90")
#: What each compile produces: the kernels are built at run time by NVRTC, so no host code is
#: compiled here. sm_75, the oldest target, to PTX with NVVM's optimiser off (``-Xcicc -O0``):
#: the front end for that architecture (every template instantiated, its ``__CUDA_ARCH__``
#: branches) and NVVM's code generation for it (an intrinsic or instruction sm_75 lacks fails
#: there) in a fifth of the time. sm_90 to PTX with the optimiser on, as NVRTC builds it; ptxas
#: (half of an sm_90 compile's time) runs here only on the sources whose register use is
#: checked or printed (``PTXAS``: the matmul tiles' spill check, ``-v``'s resource lines), and
#: on every kernel in the GPU machine's runs, where NVRTC builds each for its device.
_OUTPUT = {"sm_75": ("-Xcicc", "-O0", "-ptx"), "sm_90": ("-ptx",)}
_CUBIN = ("-Xptxas", "-v", "-cubin")
#: Kernels whose ptxas resource lines ``-v`` prints (mangled-name prefixes), per log name.
RESOURCES = {"histogram-sm_90": r"_Z19hist_privatized_vec|_Z11hist_global|_Z19hist_private_stride",
             "reduce-sm_90": r"_Z21reduce_persistent_vec",
             "matmul-sm_90": r"_Z14matmul_regtile"}
#: sm_90 compiles that run ptxas (to a cubin): the resource lines above, and every Gram
#: configuration (its tiles' register use decides its occupancy).
PTXAS = (*RESOURCES, "gram-")


def _output(name: str, arch: str) -> tuple[str, ...]:
    """The output options of compile ``name`` for ``arch``."""
    if arch == "sm_90" and name.startswith(PTXAS):
        return _CUBIN
    return _OUTPUT[arch]


@dataclass(frozen=True)
class Job:
    """One nvcc invocation."""

    name: str
    source: Path
    args: tuple[str, ...]


def _defines_of(cu: Path) -> list[str]:
    """The ``-D`` options of a source, from its launch-plan module's ``DEFINES``."""
    rel = cu.relative_to(SRC / "warplab")
    folder, name = rel.parent, cu.stem
    fam = folder.name
    if rel.parts[0] == "families":
        mod = "cuda" if name == fam else f"{name}_cuda"
    elif rel.parts[:2] == ("lab", "campaigns"):
        mod = f"{name}_cuda"
    else:
        return []
    dotted = "warplab." + ".".join(folder.parts) + "." + mod
    try:
        module = import_module(dotted)
    except ModuleNotFoundError:
        return []
    if hasattr(module, "DEFINES"):
        return list(defines(module.DEFINES))
    config = getattr(module, "DEFAULT", None)  # a launch configuration object: its options
    return list(getattr(config, "options", ()))


def jobs() -> list[Job]:
    """Every compilation the check runs, each once (a configuration whose options equal
    another's, e.g. the Gram default, is not compiled twice)."""
    base = ("-std=c++17", "-DWARPLAB_NVCC_CHECK", f"-I{SRC / 'warplab' / 'core'}",
            "-Werror", "all-warnings")
    out: list[Job] = []
    sources = sorted([*SRC.glob("warplab/families/*/*.cu"),
                      *SRC.glob("warplab/lab/harness/*.cu"),
                      *SRC.glob("warplab/lab/campaigns/*/*.cu")])
    for cu in sources:
        opts = tuple(_defines_of(cu))
        family = SRC / "warplab/families" / cu.parent.name  # a lab source includes its
        if "lab" in cu.parts and family.is_dir():            # family's headers
            opts = (f"-I{family}", *opts)
        for arch in ARCHS:
            name = f"{cu.stem}-{arch}"
            out.append(Job(name, cu, (f"-arch={arch}", *base, *opts, *_output(name, arch))))
    memcpy = SRC / "warplab/families/memcpy"
    if (memcpy / "memcpy.cu").exists():
        from warplab.families.memcpy.cuda import DEFINES
        from warplab.families.memcpy.spec import WARP_TIERS_WORDS

        opts = tuple(defines({**DEFINES, "WARPLAB_MEMCPY_LOADS": WARP_TIERS_WORDS.loads}))
        out.append(Job("memcpy-default-sm_90", memcpy / "memcpy.cu",
                       ("-arch=sm_90", *base, *opts, *_output("memcpy-default", "sm_90"))))
    from warplab.families.corr.gram_cuda import CONFIGS

    for name, cfg in CONFIGS.items():
        out.append(Job(f"gram-{name}-sm_90", SRC / "warplab/families/corr/gram.cu",
                       ("-arch=sm_90", *base, *defines(cfg.defines),
                        *_output(f"gram-{name}", "sm_90"))))
    for cub in sorted(SRC.glob("warplab/lab/campaigns/*/cub/*.cu")):
        out.append(Job(f"{cub.stem}-sm_90-shared", cub,
                       ("-arch=sm_90", "-std=c++17", "-O3", "-shared", "-Xcompiler", "-fPIC",
                        "-Werror", "all-warnings")))
    seen: set[tuple[Path, tuple[str, ...]]] = set()
    unique = []
    for job in out:
        if (job.source, job.args) not in seen:
            seen.add((job.source, job.args))
            unique.append(job)
    return unique


def _local_bytes(path: Path, seen: set[Path] | None = None) -> int:
    """Bytes of a source and of the package's headers it includes (``#include "..."``)."""
    seen = set() if seen is None else seen
    if path in seen or not path.is_file():
        return 0
    seen.add(path)
    text = path.read_text(encoding="utf-8", errors="replace")
    total = len(text)
    for name in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M):
        for folder in (path.parent, SRC / "warplab" / "core",
                       SRC / "warplab" / "families" / path.parent.name):
            if (folder / name).is_file():
                total += _local_bytes(folder / name, seen)
                break
    return total


def _cost(job: Job) -> float:
    """A rough estimate of a job's compile time, only for the order the jobs start in (the
    longest first, so that no long one starts last and runs alone): the bytes of the source
    and its local headers, twice over for sm_90 (NVVM's optimiser runs there), three times for
    a cubin (ptxas too); a build with host code (the CUB library) before every other."""
    if "-shared" in job.args:
        return float("inf")
    return _local_bytes(job.source) * (1 if "-arch=sm_75" in job.args
                                       else 3 if "-cubin" in job.args else 2)


def run(job: Job, nvcc: str, tmp: Path) -> tuple[Job, bool, str]:
    """Compile one job; (job, ok, log)."""
    obj = tmp / f"{job.name}.out"
    p = subprocess.run([nvcc, *job.args, str(job.source), "-o", str(obj)],
                       capture_output=True, text=True, check=False)
    return job, p.returncode == 0, p.stdout + p.stderr


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args(argv)
    nvcc = os.environ.get("NVCC") or shutil.which("nvcc") or "/usr/local/bin/nvcc"
    if not os.access(nvcc, os.X_OK):
        if os.environ.get("CI") == "true":
            print("nvcc_check: nvcc not found", file=sys.stderr)
            return 1
        print("nvcc_check: nvcc not found, CUDA compile check skipped", file=sys.stderr)
        return 0
    todo = jobs()
    t0 = time.perf_counter()
    failed = 0
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(max(1, args.jobs)) as pool:
        started = sorted(todo, key=_cost, reverse=True)
        done = dict(zip(started, pool.map(lambda j: run(j, nvcc, Path(tmp)), started)))
        for job, ok, log in (done[j] for j in todo):  # reported in the jobs' own order
            spill = job.name.startswith("matmul-") and re.search(
                r"[1-9][0-9]* bytes spill (stores|loads)", log)
            if not ok or spill:
                failed += 1
                why = "spills registers" if ok else "FAILED"
                print(f"nvcc_check: {job.source.relative_to(ROOT)} ({job.name}) {why}",
                      file=sys.stderr)
                print(log, file=sys.stderr)
            elif args.verbose:
                print(f"nvcc_check: {job.source.relative_to(ROOT)} ({job.name}) OK")
                pattern = RESOURCES.get(job.name)
                if pattern:
                    _print_resources(log, pattern)
    dt = time.perf_counter() - t0
    verdict = f"{failed} of {len(todo)} compilations failed" if failed else \
        f"all {len(todo)} compilations OK"
    print(f"nvcc_check: {verdict} ({dt:.0f} s, {max(1, args.jobs)} jobs)")
    return 1 if failed else 0


def _print_resources(log: str, pattern: str) -> None:
    """ptxas's entry / Used / spill lines of the kernels matching ``pattern``."""
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if "Compiling entry function" in line and re.search(pattern, line):
            for follow in lines[i:i + 4]:
                if re.search(r"entry|Used|spill", follow):
                    print("  " + follow.strip())


if __name__ == "__main__":
    sys.exit(main())

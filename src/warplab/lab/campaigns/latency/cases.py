"""The small calls the latency campaign times: one :class:`Case` per public function on a small
input, with its data (NumPy, sent to the GPU on the cuda backend), warplab's call, the NumPy
float64 reference of the answer and the tolerance a result must meet.

A call's *answer* is what a user reads on the host: ``float(...)`` of a scalar, the host copy
of an array (``.get()``), nothing for a copy (the stream synchronised; the answer is then the
destination buffers, read back only to verify). :func:`host` makes any implementation's
result usable on the host that way; the comparators (``comparators.py``) return results of the
same meaning so that one reference checks them all.
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import warplab as wl  # the package is whole before its families are imported
from warplab.core.errors import InvalidValueError

POISON = 0xA5


@dataclass(frozen=True)
class Case:
    """One small call.

    Attributes:
        name: the case's label in records and tables (``params.case``).
        function: warplab's public function (the records' ``variant``).
        what: the input in words.
        code: the timed call as a user writes it (``params.call``).
        make: NumPy generator -> the inputs (NumPy arrays, or lists of them).
        call: ``call(inputs, **keywords for warplab)`` -> warplab's result: the call as the
            user writes it in one frame (on cuda the timed callable itself, as each
            comparator's is; the cpu backend passes ``device="cpu"``).
        reference: host inputs -> the answer in float64 (or exact integers).
        tol: largest ``max|got - ref| / max(1, max|ref|)`` that verifies (0: exact).
        copies: the answer is the ``dsts`` buffers (poisoned before the verifying call).
        gpu_only: no NumPy backend (device addresses).
    """

    name: str
    function: str
    what: str
    code: str
    make: Callable[[np.random.Generator], dict]
    call: Callable[..., Any]
    reference: Callable[[dict], Any]
    tol: float = 0.0
    copies: bool = False
    gpu_only: bool = False


def _f32(rng: np.random.Generator, *shape: int) -> dict:
    return {"x": rng.random(shape, dtype=np.float32)}


def _centred_bins(rng: np.random.Generator) -> dict:
    # values at the centres of 1/1024-wide cells of [0, 1): never near one of 64 bin edges,
    # so every library's edge arithmetic puts them in the same bin
    return {"x": ((rng.integers(0, 1024, size=1024) + 0.5) / 1024).astype(np.float32)}


def _weighted(rng: np.random.Generator) -> dict:
    # integer-valued weights: every summation order gives the exact count
    return {"x": rng.integers(0, 64, size=1024, dtype=np.int32),
            "w": rng.integers(0, 8, size=1024).astype(np.float32)}


def _buffers(rng: np.random.Generator) -> dict:
    return {"srcs": [rng.integers(0, 256, size=1024, dtype=np.uint8) for _ in range(8)],
            "dsts": [np.full(1024, POISON, dtype=np.uint8) for _ in range(8)]}


def _series_stats_ref(d: dict) -> tuple[np.ndarray, np.ndarray]:
    x = d["x"].astype(np.float64)
    m = x.mean(axis=1)
    return m, np.sqrt(((x - m[:, None]) ** 2).sum(axis=1))


CASES: tuple[Case, ...] = (
    Case("byte_hist_4k", "byte_histogram", "4 KiB of uint8, 256 bins",
         "byte_histogram(x).get()",
         lambda g: {"x": g.integers(0, 256, size=4096, dtype=np.uint8)},
         lambda d, **kw: wl.byte_histogram(d["x"], **kw),
         lambda d: np.bincount(d["x"], minlength=256)),
    Case("sum_1k", "sum", "1,024 float32", "float(sum(x))", lambda g: _f32(g, 1024),
         lambda d, **kw: wl.sum(d["x"], **kw),
         lambda d: d["x"].astype(np.float64).sum(), tol=1e-5),
    Case("mean_1k", "mean", "1,024 float32", "float(mean(x))", lambda g: _f32(g, 1024),
         lambda d, **kw: wl.mean(d["x"], **kw),
         lambda d: d["x"].astype(np.float64).mean(), tol=1e-5),
    Case("mean_rows_64", "mean", "64 x 64 float32, axis=1", "mean(x, axis=1).get()",
         lambda g: _f32(g, 64, 64), lambda d, **kw: wl.mean(d["x"], axis=1, **kw),
         lambda d: d["x"].astype(np.float64).mean(axis=1), tol=1e-5),
    Case("series_stats_64", "series_stats", "64 x 64 float32", "series_stats(x) .get() x2",
         lambda g: _f32(g, 64, 64), lambda d, **kw: wl.series_stats(d["x"], **kw),
         _series_stats_ref, tol=1e-5),
    Case("corrcoef_8x64", "corrcoef", "8 series of 64 float32", "corrcoef(x).get()",
         lambda g: _f32(g, 8, 64), lambda d, **kw: wl.corrcoef(d["x"], **kw),
         lambda d: np.corrcoef(d["x"].astype(np.float64)), tol=1e-4),
    Case("copy_batched_8", "copy_batched", "8 buffers of 1 KiB", "copy_batched(srcs, dsts)",
         _buffers, lambda d, **kw: wl.copy_batched(d["srcs"], d["dsts"], **kw),
         lambda d: d["srcs"], copies=True),
    Case("memcpy_batched_8", "memcpy_batched", "8 buffers of 1 KiB, device addresses",
         "memcpy_batched(src_ptrs, dst_ptrs, sizes)", _buffers,
         lambda d, **kw: wl.memcpy_batched(d["src_ptrs"], d["dst_ptrs"], d["sizes"]),
         lambda d: d["srcs"], copies=True, gpu_only=True),
    Case("matmul_64", "matmul", "64 x 64 @ 64 x 64 float32", "matmul(a, a).get()",
         lambda g: _f32(g, 64, 64), lambda d, **kw: wl.matmul(d["x"], d["x"], **kw),
         lambda d: d["x"].astype(np.float64) @ d["x"].astype(np.float64), tol=1e-5),
    Case("histogram_1k", "histogram", "1,024 float32, 64 bins in [0, 1)",
         "histogram(x, 64, (0, 1))[0].get()", _centred_bins,
         lambda d, **kw: wl.histogram(d["x"], bins=64, range=(0.0, 1.0), **kw)[0],
         lambda d: np.histogram(d["x"], bins=64, range=(0.0, 1.0))[0]),
    Case("bincount_1k", "bincount", "1,024 int32 < 64, float32 weights",
         "bincount(x, weights=w).get()", _weighted,
         lambda d, **kw: wl.bincount(d["x"], weights=d["w"], **kw),
         lambda d: np.bincount(d["x"], weights=d["w"].astype(np.float64))),
)
CASE_NAMES = tuple(c.name for c in CASES)


def select(names: list[str] | None) -> list[Case]:
    """The cases named (by case or by warplab function name), or all; ``ValueError`` for an
    unknown name (naming the valid ones)."""
    if not names:
        return list(CASES)
    known = {*CASE_NAMES, *(c.function for c in CASES)}
    bad = [n for n in names if n not in known]
    if bad:
        raise InvalidValueError(f"unknown latency case(s) {', '.join(bad)}; valid: "
                         f"{', '.join(CASE_NAMES)} or a function name")
    return [c for c in CASES if c.name in names or c.function in names]


def nbytes(inputs: dict) -> int:
    """Bytes of a case's input arrays (destination buffers included)."""
    return int(sum(sum(a.nbytes for a in v) if isinstance(v, list) else v.nbytes
                   for k, v in inputs.items()))


def to_device(inputs: dict) -> dict:
    """The inputs on the current GPU (CuPy), plus for copies the device address arrays
    (``src_ptrs``, ``dst_ptrs``, ``sizes``) of the buffers."""
    import cupy

    out = {k: [cupy.asarray(a) for a in v] if isinstance(v, list) else cupy.asarray(v)
           for k, v in inputs.items()}
    if "srcs" in out:
        for key, arrays in (("src_ptrs", out["srcs"]), ("dst_ptrs", out["dsts"])):
            out[key] = cupy.asarray([a.data.ptr for a in arrays], dtype=np.uint64)
        out["sizes"] = cupy.asarray([a.nbytes for a in out["srcs"]], dtype=np.int64)
    cupy.cuda.get_current_stream().synchronize()
    return out


def host(x: Any) -> Any:
    """A result as host data: Python floats for scalars, NumPy for arrays, tuples of those.
    Reads a GPU array back (one synchronisation). CuPy arrays (subclasses included: warplab's
    ``DeviceScalar`` and ``DeviceArray``) are told by ``isinstance``, torch tensors by the
    type's module (cheaper than asking for ``__cuda_array_interface__``, which CuPy builds on
    each read)."""
    if isinstance(x, (tuple, list)):
        return tuple(host(v) for v in x)
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(x, cupy.ndarray):
        return float(x) if x.ndim == 0 else x.get()
    if type(x).__module__.startswith("torch"):
        return x.item() if x.dim() == 0 else x.cpu().numpy()
    x = np.asarray(x)
    return float(x) if x.ndim == 0 else x


def poison(inputs: dict) -> None:
    """Fill the destination buffers of a copy case (before the verifying call); CuPy and
    NumPy arrays or torch tensors."""
    for a in inputs.get("dsts", ()):
        if hasattr(a, "fill_"):
            a.fill_(POISON)
        else:
            a.fill(POISON)


def check(case: Case, got: Any, ref: Any) -> tuple[bool, str | None]:
    """(verified, error): ``got`` against the reference within ``case.tol``."""
    gots = got if isinstance(got, tuple) else (got,)
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    if len(gots) != len(refs):
        return False, f"{len(gots)} results, the reference has {len(refs)}"
    worst = 0.0
    for g, r in zip(gots, refs):
        g64 = np.asarray(g, dtype=np.float64)
        r64 = np.asarray(r, dtype=np.float64)
        if g64.shape != r64.shape:
            return False, f"shape {g64.shape}, the reference's is {r64.shape}"
        if g64.size == 0:
            continue
        if not np.isfinite(g64).all():
            return False, "non-finite values in the result"
        err = float(np.abs(g64 - r64).max()) / max(1.0, float(np.abs(r64).max()))
        worst = max(worst, err)
    if worst > case.tol:
        return False, f"relative error {worst:.3g} above {case.tol:g}"
    return True, None

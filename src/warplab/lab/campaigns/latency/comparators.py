"""What a user writes in CuPy and in PyTorch for each latency case, on the same device data
(torch tensors are DLPack views of the CuPy arrays: same memory, no copy), and the floor: an
empty kernel launch (CuPy ``RawKernel``) with a stream synchronisation, and with a 4-byte copy
into pinned memory before it; and the same empty kernel on warplab's own launch path
(``core/launch.py``: from C where the extension builds), alone and with the least a call that
returns a new 0-d result adds (the result object on existing memory, read by ``int()``).

Each comparator returns a result of the same meaning as warplab's call (``cases.py``): the
per-case reference checks it. Libraries that do not import are skipped with a note.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from warplab.lab.harness.comparators import probe_module


@dataclass(frozen=True)
class Comparator:
    """One library's version of a case: ``run(inputs)`` on the case's device inputs as
    ``library`` holds them (CuPy arrays; for torch their DLPack views: :func:`to_torch`)."""

    name: str
    library: str
    run: Callable[[dict], Any]


def _copies(d: dict) -> None:
    for s, t in zip(d["srcs"], d["dsts"]):
        t[...] = s


def _cupy_calls() -> dict[str, tuple[str, Callable[[dict], Any]]]:
    """Per case: the CuPy call (memcpy_batched's is the copy loop: no CuPy call takes device
    addresses, and the copies are the same). The module is bound once, not looked up per call."""
    import cupy as cp

    def series_stats(x: Any) -> tuple[Any, Any]:
        m = x.mean(axis=1)
        return m, cp.sqrt(((x - m[:, None]) ** 2).sum(axis=1))

    return {
        "byte_hist_4k": ("cupy.bincount", lambda d: cp.bincount(d["x"], minlength=256)),
        "sum_1k": ("cupy.sum", lambda d: cp.sum(d["x"])),
        "mean_1k": ("cupy.mean", lambda d: cp.mean(d["x"])),
        "mean_rows_64": ("cupy.mean", lambda d: cp.mean(d["x"], axis=1)),
        "series_stats_64": ("cupy.mean+norm", lambda d: series_stats(d["x"])),
        "corrcoef_8x64": ("cupy.corrcoef", lambda d: cp.corrcoef(d["x"])),
        "copy_batched_8": ("cupy.copy_loop", _copies),
        "memcpy_batched_8": ("cupy.copy_loop", _copies),
        "matmul_64": ("cupy.matmul", lambda d: cp.matmul(d["x"], d["x"])),
        "histogram_1k": ("cupy.histogram",
                         lambda d: cp.histogram(d["x"], bins=64, range=(0.0, 1.0))[0]),
        "bincount_1k": ("cupy.bincount", lambda d: cp.bincount(d["x"], weights=d["w"])),
    }


def _torch_calls() -> dict[str, tuple[str, Callable[[dict], Any]]]:
    """Per case: the PyTorch call on DLPack views of the CuPy inputs."""
    import torch

    def series_stats(t: Any) -> tuple[Any, Any]:
        m = t.mean(dim=1)
        return m, torch.linalg.vector_norm(t - m[:, None], dim=1)

    def copies(d: dict) -> None:  # one fused multi-tensor copy: PyTorch's batched copy
        torch._foreach_copy_(d["dsts"], d["srcs"])

    return {
        "byte_hist_4k": ("torch.bincount", lambda d: torch.bincount(d["x"], minlength=256)),
        "sum_1k": ("torch.sum", lambda d: torch.sum(d["x"])),
        "mean_1k": ("torch.mean", lambda d: torch.mean(d["x"])),
        "mean_rows_64": ("torch.mean", lambda d: torch.mean(d["x"], dim=1)),
        "series_stats_64": ("torch.mean+norm", lambda d: series_stats(d["x"])),
        "corrcoef_8x64": ("torch.corrcoef", lambda d: torch.corrcoef(d["x"])),
        "copy_batched_8": ("torch._foreach_copy_", copies),
        "memcpy_batched_8": ("torch._foreach_copy_", copies),
        "matmul_64": ("torch.matmul", lambda d: d["x"] @ d["x"]),
        "histogram_1k": ("torch.histc",
                         lambda d: torch.histc(d["x"], bins=64, min=0.0, max=1.0)),
        "bincount_1k": ("torch.bincount", lambda d: torch.bincount(d["x"], weights=d["w"])),
    }


_TABLES = {"cupy": _cupy_calls, "torch": _torch_calls}


def to_torch(inputs: dict) -> dict:
    """DLPack views of the CuPy inputs (arrays torch cannot view, e.g. uint64 addresses,
    stay CuPy: no torch call reads them)."""
    import torch

    def view(a: Any) -> Any:
        try:
            return torch.from_dlpack(a)
        except (TypeError, RuntimeError, BufferError):
            return a

    return {k: [view(a) for a in v] if isinstance(v, list) else view(v)
            for k, v in inputs.items()}


def comparators(case_name: str, with_comparators: bool) -> tuple[list[Comparator], list[str]]:
    """The usable comparators of a case and one note per library skipped."""
    if not with_comparators:
        return [], []
    out, notes = [], []
    for lib, table in _TABLES.items():
        why = probe_module(lib)
        if why is not None:
            notes.append(f"comparator {lib} skipped: {why}")
        elif case_name in (calls := table()):
            name, run = calls[case_name]
            out.append(Comparator(name, lib, run))
    return out, notes


class Floor:
    """The bare launch: an empty ``RawKernel`` on the current stream, then a synchronisation
    (``sync``), or a 4-byte device-to-host copy into pinned memory and a synchronisation
    (``d2h``). ``launch`` / ``launch_d2h`` are the parts without the synchronisation."""

    def __init__(self) -> None:
        import cupy
        import cupyx
        import numpy as np

        self.kernel = cupy.RawKernel('extern "C" __global__ void latency_empty() {}',
                                     "latency_empty")
        self.d_word = cupy.full(1, 42, dtype=np.int32)
        self.h_word = cupyx.empty_pinned(1, dtype=np.int32)
        self.h_word[0] = 0
        self.stream = cupy.cuda.get_current_stream()
        self._copy = cupy.cuda.runtime.memcpyAsync
        self._kind = cupy.cuda.runtime.memcpyDeviceToHost

    def launch(self) -> None:
        self.kernel((1,), (1,), ())

    def launch_d2h(self) -> None:
        self.kernel((1,), (1,), ())
        self._copy(self.h_word.ctypes.data, self.d_word.data.ptr, 4, self._kind,
                   self.stream.ptr)

    def sync(self) -> None:
        self.launch()
        self.stream.synchronize()

    def d2h(self) -> None:
        self.launch_d2h()
        self.stream.synchronize()

    def verified(self) -> bool:
        """The pinned word holds the device word after a ``d2h``."""
        self.h_word[0] = 0
        self.d2h()
        return int(self.h_word[0]) == 42


class OwnFloor:
    """The empty kernel of :class:`Floor` on warplab's launch path (``launch.Prepared``, what
    the families' short paths call): ``launch`` alone and ``sync`` with a synchronisation;
    ``result`` adds a 0-d ``DeviceScalar`` on existing device memory (no allocation: the
    least any call returning a new CuPy scalar pays) and ``read`` its ``int()`` (the C read,
    which synchronises the stream). ``path`` says which launch ran (C or CuPy's)."""

    def __init__(self, floor: Floor) -> None:
        from warplab.core import launch, scalar

        self.prepared = launch.Prepared(floor.kernel, (1,), (1,), ())
        self.path = launch.status()
        self.stream, self.memptr, self._on = floor.stream, floor.d_word.data, scalar.on
        self.dtype = floor.d_word.dtype

    def launch(self) -> None:
        self.prepared()

    def sync(self) -> None:
        self.prepared()
        self.stream.synchronize()

    def result(self) -> object:
        self.prepared()
        return self._on(self.memptr, (), self.dtype)

    def read(self) -> int:
        return int(self.result())

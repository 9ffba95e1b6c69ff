"""Launch plans of the tensor-core Gram kernels (``gram_mma`` in ``gram.cu`` beside this file).

A plan is a pure function of the problem and the device's limits (:func:`plan`), so the CPU
tests check the grid, the shared memory and the vector-load choice; :func:`launch` compiles
(NVRTC, one module per instantiation, cached) and launches on the current stream without
synchronising.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...core.loader import defines, get_kernel

SOURCE = Path(__file__).with_name("gram.cu")
TILE = 128            # block tile edge: a block computes TILE x TILE elements of C
WARPS = (2, 4)        # warps of a block over its tile, modes "float64" and "tf32" (64 x 32 each)
F32_WARPS = (4, 4)    # mode "float32" (3xTF32, float64 sums): 32 x 32 warp tiles, 128 registers
F64_BK = 16           # k-slice depth staged in shared memory, mode "float64"
TF32_BK = 32          # k-slice depth, modes "float32" and "tf32"
F64_PAD = 4           # elements of padding per shared-memory row, mode "float64" ...
TF32_PAD = 8          # ... and the TF32 modes (8-byte fragment reads): conflict-free reads
GROUP = 8             # tile rows per group of the non-symmetric block order (L2 reuse)
MAX_STAGES = 3        # cp.async ring depth when shared memory allows (else 2)
#: The kernels' compile-time constants: this dict is their only copy (passed as -D options).
DEFINES = {"WARPLAB_GRAM_TILE": TILE, "WARPLAB_GRAM_WARPS_M": WARPS[0],
           "WARPLAB_GRAM_WARPS_N": WARPS[1], "WARPLAB_GRAM_F32_WARPS_M": F32_WARPS[0],
           "WARPLAB_GRAM_F32_WARPS_N": F32_WARPS[1], "WARPLAB_GRAM_F64_BK": F64_BK,
           "WARPLAB_GRAM_TF32_BK": TF32_BK, "WARPLAB_GRAM_F64_PAD": F64_PAD,
           "WARPLAB_GRAM_TF32_PAD": TF32_PAD, "WARPLAB_GRAM_GROUP": GROUP}
#: The kernel's MODE template argument of each precision.
MODES = {"float64": 0, "float32": 1, "tf32": 2}
_C_TYPE = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
MAX_BLOCKS = 2**31 - 1


@dataclass(frozen=True)
class GramPlan:
    """One launch of ``gram_mma``: template arguments, grid, block and dynamic shared memory."""

    mode: int
    dtype: np.dtype      # the input element type the kernel reads
    stages: int
    vec: bool            # 16-byte cp.async copies
    sym: bool            # C = A A^T over the upper-triangle tiles
    blocks: int
    threads: int
    smem: int            # dynamic shared memory, bytes

    @property
    def expression(self) -> str:
        return (f"gram_mma<{self.mode}, {_C_TYPE[self.dtype]}, {self.stages}, "
                f"{'true' if self.vec else 'false'}, {'true' if self.sym else 'false'}>")


def tiles(m: int) -> int:
    """Tiles of ``TILE`` along a dimension of ``m`` rows."""
    return -(-m // TILE)


def block_count(ma: int, mb: int, sym: bool) -> int:
    """Blocks of the grid: every tile of C, or only the tiles (bi, bj) with bi <= bj."""
    if sym:
        t = tiles(ma)
        return t * (t + 1) // 2
    return tiles(ma) * tiles(mb)


def slice_depth(mode: int) -> int:
    return F64_BK if mode == 0 else TF32_BK


def row_stride(mode: int) -> int:
    """Elements per shared-memory row: the slice depth plus the padding."""
    return slice_depth(mode) + (F64_PAD if mode == 0 else TF32_PAD)


def threads(mode: int) -> int:
    wm, wn = F32_WARPS if mode == 1 else WARPS
    return 32 * wm * wn


def smem_bytes(mode: int, itemsize: int, stages: int) -> int:
    """Dynamic shared memory: ``stages`` slices of both tiles, rows of :func:`row_stride`."""
    return stages * 2 * TILE * row_stride(mode) * itemsize


def vector_copies_ok(n: int, itemsize: int, *pointers: int) -> bool:
    """16-byte copies work: rows of ``n`` elements keep 16-byte alignment and so do the bases."""
    return n % (16 // itemsize) == 0 and all(p % 16 == 0 for p in pointers)


def plan(precision: str, dtype: Any, ma: int, mb: int, n: int, *, sym: bool,
         pointers: tuple[int, ...] = (0,), smem_limit: int = 227 * 1024) -> GramPlan:
    """The launch of ``gram_mma`` for ``C (ma x mb) = A (ma x n) B^T`` (``sym``: B is A).

    ``dtype`` is the element type the kernel reads (float32 for the TF32 modes: the caller
    converts); ``smem_limit`` the device's opt-in shared memory per block. The ring is
    ``MAX_STAGES`` deep when that fits, else 2 (e.g. float64 input on sm_86/89, 99 KiB).

    Raises:
        ValueError: the grid would exceed 2^31 - 1 blocks, or no ring fits in ``smem_limit``.
    """
    mode, dt = MODES[precision], np.dtype(dtype)
    if mode != 0 and dt != np.float32:
        raise ValueError(f"gram precision {precision!r} reads float32 input, not {dt}")
    blocks = block_count(ma, mb, sym)
    if blocks > MAX_BLOCKS:
        raise ValueError(f"gram of {ma} x {mb} needs {blocks} blocks, more than {MAX_BLOCKS}")
    for stages in range(MAX_STAGES, 1, -1):
        smem = smem_bytes(mode, dt.itemsize, stages)
        if smem <= smem_limit:
            break
    else:
        raise ValueError(f"gram needs {smem} bytes of shared memory per block; this device "
                         f"allows {smem_limit}")
    return GramPlan(mode, dt, stages, vector_copies_ok(n, dt.itemsize, *pointers), sym, blocks,
                    threads(mode), smem)


def device_smem_limit() -> int:
    """Opt-in shared memory per block of the current device (bytes; queried once per device)."""
    import cupy

    return _smem_limit(cupy.cuda.Device().id)


@functools.cache
def _smem_limit(device_id: int) -> int:
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(device_id)
    return int(props.get("sharedMemPerBlockOptin", props["sharedMemPerBlock"]))


def launch(p: GramPlan, a: Any, b: Any, c: Any) -> Any:
    """Run ``p`` on CuPy arrays ``a`` (ma x n), ``b`` (mb x n; ``a`` itself when ``p.sym``) and
    ``c`` (ma x mb, float64 for mode 0, else float32); returns ``c``."""
    kernel = get_kernel(SOURCE, p.expression, options=defines(DEFINES))
    kernel.max_dynamic_shared_size_bytes = p.smem  # the opt-in above 48 KiB (one driver call)
    ma, n = a.shape
    mb = b.shape[0]
    kernel((p.blocks,), (p.threads,), (a, b, c, np.int32(ma), np.int32(mb), np.int32(n)),
           shared_mem=p.smem)
    return c

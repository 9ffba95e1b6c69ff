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

from warplab.core import fastpath
from warplab.core.errors import InvalidValueError
from warplab.core.loader import defines, get_kernel

SOURCE = Path(__file__).with_name("gram.cu")
MAX_BLOCKS = 2**31 - 1


@dataclass(frozen=True)
class GramConfig:
    """The compile-time shape of one build of ``gram.cu``: every ``-D`` constant of the kernels
    (:attr:`defines`). ``CONFIGS`` names them; ``"default"`` is what :func:`gram` runs unless told.

    Attributes:
        tile: block tile edge (a block computes tile x tile elements of C).
        warps: warps of a block over its tile, modes "float64" and "tf32" (rows, columns).
        f32_warps: the same for mode "float32" (3xTF32 with float64 sums: smaller warp tiles).
        f64_mma: (M, K) of the DMMA instruction: (8, 4) m8n8k4 (sm_80+), (16, 8) m16n8k8 or
            (16, 16) m16n8k16 (sm_90+).
        f64_bk, tf32_bk: k-slice depth staged in shared memory (float64 / TF32 modes).
        f64_pad, tf32_pad: elements of padding per shared-memory row (conflict-free fragment
            reads: 4 for m8n8k4, 8 for the paired loads of m16n8kK and the TF32 modes).
        group: tile rows per group of the non-symmetric block order (L2 reuse).
        stages: cp.async ring depth when shared memory allows (else down to 2).
        min_blocks: ``__launch_bounds__`` blocks per SM (caps the registers of a thread).
        min_cc: the compute capability the configuration needs (90 for the m16n8kK DMMA).
    """

    tile: int = 128
    warps: tuple[int, int] = (2, 4)
    f32_warps: tuple[int, int] = (4, 4)
    f64_mma: tuple[int, int] = (8, 4)
    f64_bk: int = 16
    tf32_bk: int = 32
    f64_pad: int = 4
    tf32_pad: int = 8
    group: int = 8
    stages: int = 3
    min_blocks: int = 1
    min_cc: int = 80

    @property
    def defines(self) -> dict[str, int]:
        """The kernels' -D constants of this configuration."""
        return {"WARPLAB_GRAM_TILE": self.tile, "WARPLAB_GRAM_WARPS_M": self.warps[0],
                "WARPLAB_GRAM_WARPS_N": self.warps[1],
                "WARPLAB_GRAM_F32_WARPS_M": self.f32_warps[0],
                "WARPLAB_GRAM_F32_WARPS_N": self.f32_warps[1], "WARPLAB_GRAM_F64_BK": self.f64_bk,
                "WARPLAB_GRAM_TF32_BK": self.tf32_bk, "WARPLAB_GRAM_F64_PAD": self.f64_pad,
                "WARPLAB_GRAM_TF32_PAD": self.tf32_pad, "WARPLAB_GRAM_GROUP": self.group,
                "WARPLAB_GRAM_F64_MMA_M": self.f64_mma[0],
                "WARPLAB_GRAM_F64_MMA_K": self.f64_mma[1],
                "WARPLAB_GRAM_MIN_BLOCKS": self.min_blocks}

    def mma(self, mode: int) -> tuple[int, int, int]:
        """(M, N, K) of mode ``mode``'s mma instruction."""
        return (self.f64_mma[0], 8, self.f64_mma[1]) if mode == 0 else (16, 8, 8)

    def warp_grid(self, mode: int) -> tuple[int, int]:
        return self.f32_warps if mode == 1 else self.warps

    def slice_depth(self, mode: int) -> int:
        return self.f64_bk if mode == 0 else self.tf32_bk

    def row_stride(self, mode: int) -> int:
        """Elements per shared-memory row: the slice depth plus the padding."""
        return self.slice_depth(mode) + (self.f64_pad if mode == 0 else self.tf32_pad)

    def threads(self, mode: int) -> int:
        wm, wn = self.warp_grid(mode)
        return 32 * wm * wn

    def smem_bytes(self, mode: int, itemsize: int, stages: int) -> int:
        """Dynamic shared memory: ``stages`` slices of both tiles, rows of :meth:`row_stride`."""
        return stages * 2 * self.tile * self.row_stride(mode) * itemsize


# m16n8kK: paired 16-byte fragment reads, Hopper DMMA
_PAIRED: dict[str, Any] = {"f64_pad": 8, "min_cc": 90}
#: Named configurations (``gram(..., config=)``); ``"default"`` is the measured default. The
#: others are candidates for the float64 mode (docs/gram.md, notes in benchmarks/NOTES.md):
#: m16n8k8 / m16n8k16 DMMA on 64 x 32 warp tiles, m16n8k8 on 16 warps of 32 x 32 (at most 128
#: registers, 4 warps per scheduler), m16n8k16 with a 4-deep ring.
CONFIGS = {
    "default": GramConfig(),
    "dmma_k8": GramConfig(f64_mma=(16, 8), **_PAIRED),
    "dmma_k16": GramConfig(f64_mma=(16, 16), **_PAIRED),
    "dmma_k8_w16": GramConfig(f64_mma=(16, 8), warps=(4, 4), **_PAIRED),
    "dmma_k16_s4": GramConfig(f64_mma=(16, 16), stages=4, **_PAIRED),
}
DEFAULT = CONFIGS["default"]
#: The default build's compile-time constants (passed as -D options; the values live in
#: ``GramConfig``'s defaults only).
DEFINES = DEFAULT.defines
#: The kernel's MODE template argument of each precision.
MODES = {"float64": 0, "float32": 1, "tf32": 2}
_C_TYPE = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}


#: Kernels whose dynamic shared-memory limit is set (the kernel -> its bytes).
_OPTED_IN = fastpath.PlanCache("gram.smem")


@dataclass(frozen=True)
class GramPlan:
    """One launch of ``gram_mma``: configuration, template arguments, grid, block and dynamic
    shared memory."""

    mode: int
    dtype: np.dtype      # the input element type the kernel reads
    stages: int
    vec: bool            # 16-byte cp.async copies
    sym: bool            # C = A A^T over the upper-triangle tiles
    blocks: int
    threads: int
    smem: int            # dynamic shared memory, bytes
    config: str = "default"

    @functools.cached_property
    def expression(self) -> str:
        return (f"gram_mma<{self.mode}, {_C_TYPE[self.dtype]}, {self.stages}, "
                f"{'true' if self.vec else 'false'}, {'true' if self.sym else 'false'}>")


def tiles(m: int, tile: int = DEFAULT.tile) -> int:
    """Tiles of ``tile`` along a dimension of ``m`` rows."""
    return -(-m // tile)


def block_count(ma: int, mb: int, sym: bool, tile: int = DEFAULT.tile) -> int:
    """Blocks of the grid: every tile of C, or only the tiles (bi, bj) with bi <= bj."""
    if sym:
        t = tiles(ma, tile)
        return t * (t + 1) // 2
    return tiles(ma, tile) * tiles(mb, tile)


def vector_copies_ok(n: int, itemsize: int, *pointers: int) -> bool:
    """16-byte copies work: rows of ``n`` elements keep 16-byte alignment and so do the bases."""
    return n % (16 // itemsize) == 0 and all(p % 16 == 0 for p in pointers)


def config_of(name: str) -> GramConfig:
    """The configuration named ``name`` (``CONFIGS``); ValueError for an unknown name."""
    try:
        return CONFIGS[name]
    except KeyError:
        raise InvalidValueError(f"unknown gram config {name!r}; choose one of {tuple(CONFIGS)}") \
            from None


def plan(precision: str, dtype: Any, ma: int, mb: int, n: int, *, sym: bool,
         pointers: tuple[int, ...] = (0,), smem_limit: int = 227 * 1024,
         config: str = "default", cc: int = 90) -> GramPlan:
    """The launch of ``gram_mma`` for ``C (ma x mb) = A (ma x n) B^T`` (``sym``: B is A).

    ``dtype`` is the element type the kernel reads (float32 for the TF32 modes: the caller
    converts); ``smem_limit`` the device's opt-in shared memory per block and ``cc`` its
    compute capability (10 major + minor). The ring is the configuration's ``stages`` deep when
    that fits, else shallower down to 2 (e.g. float64 input on sm_86/89, 99 KiB).

    Raises:
        ValueError: unknown config, a config the device cannot run (``min_cc``), the grid would
            exceed 2^31 - 1 blocks, or no ring fits in ``smem_limit``.

    Performance: cached per problem (the pointers count through their 16-byte alignment only).
    """
    aligned = all(p % 16 == 0 for p in pointers)
    return _plan(precision, np.dtype(dtype), ma, mb, n, sym, aligned, smem_limit, config, cc)


@functools.lru_cache(maxsize=1024)
def _plan(precision: str, dt: np.dtype, ma: int, mb: int, n: int, sym: bool, aligned: bool,
          smem_limit: int, config: str, cc: int) -> GramPlan:
    cfg = config_of(config)
    mode = MODES[precision]
    if mode != 0 and dt != np.float32:
        raise InvalidValueError(f"gram precision {precision!r} reads float32 input, not {dt}")
    if cc < cfg.min_cc:
        raise InvalidValueError(
            f"gram config {config!r} needs compute capability {cfg.min_cc / 10:.1f}"
            f" or newer, this device has {cc / 10:.1f}")
    blocks = block_count(ma, mb, sym, cfg.tile)
    if blocks > MAX_BLOCKS:
        raise InvalidValueError(
            f"gram of {ma} x {mb} needs {blocks} blocks, more than {MAX_BLOCKS}")
    for stages in range(cfg.stages, 1, -1):
        smem = cfg.smem_bytes(mode, dt.itemsize, stages)
        if smem <= smem_limit:
            break
    else:
        raise InvalidValueError(f"gram needs {smem} bytes of shared memory per block; this device "
                         f"allows {smem_limit}")
    return GramPlan(mode, dt, stages, aligned and vector_copies_ok(n, dt.itemsize), sym, blocks,
                    cfg.threads(mode), smem, config)


def device_limits() -> tuple[int, int]:
    """(opt-in shared memory per block in bytes, compute capability as 10 major + minor) of the
    current device, queried once per device."""
    import cupy

    return _limits(cupy.cuda.runtime.getDevice())


@functools.cache
def _limits(device_id: int) -> tuple[int, int]:
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(device_id)
    smem = int(props.get("sharedMemPerBlockOptin", props["sharedMemPerBlock"]))
    return smem, 10 * int(props["major"]) + int(props["minor"])


@functools.cache
def _options(config: str) -> tuple[str, ...]:
    return defines(CONFIGS[config].defines)


def launch(p: GramPlan, a: Any, b: Any, c: Any) -> Any:
    """Run ``p`` on CuPy arrays ``a`` (ma x n), ``b`` (mb x n; ``a`` itself when ``p.sym``) and
    ``c`` (ma x mb, float64 for mode 0, else float32); returns ``c``."""
    kernel = get_kernel(SOURCE, p.expression, options=_options(p.config))
    if _OPTED_IN.get(kernel) is None:  # the opt-in above 48 KiB: one driver call per kernel
        kernel.max_dynamic_shared_size_bytes = p.smem  # (its expression fixes its smem)
        _OPTED_IN.put(kernel, p.smem)
    ma, n = a.shape
    mb = b.shape[0]
    kernel((p.blocks,), (p.threads,), (a, b, c, np.int32(ma), np.int32(mb), np.int32(n)),
           shared_mem=p.smem)
    return c

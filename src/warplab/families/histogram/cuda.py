"""Launch plans of the CUDA histogram variants (kernels in ``histogram.cu`` beside this file).

Each variant takes a contiguous uint8 device array, the int64 device bins (added to, never
cleared here) and the resolved :class:`~warplab.families.histogram.spec.Mapping`, and launches
on the current stream without synchronising.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from warplab.core import fastpath
from warplab.core.launch import ARRAY, Prepared
from warplab.core.loader import defines, get_kernel, occupancy_blocks_per_sm
from warplab.core.registry import register
from warplab.families.histogram.spec import MAP_LUT, Mapping, histogram_bytes_moved

SEED_BLOCK = 256          # the report's nThreadsPerBlock
SEED_STRIDE_GRID = 1024   # the report's fixed grid of the stride kernels
VEC_BLOCK = 512           # block size of the privatized vector kernels
VEC_UNROLL = 2            # 16-byte loads in flight per thread
LANE_STRIDE = 32          # counters per byte in the lane-private layout (one per lane)
SOURCE = Path(__file__).with_name("histogram.cu")
#: The kernels' compile-time constants: this dict is their only copy (passed as -D options).
DEFINES = {"WARPLAB_VEC_BLOCK": VEC_BLOCK, "WARPLAB_VEC_UNROLL": VEC_UNROLL,
           "WARPLAB_HIST_LANE_STRIDE": LANE_STRIDE}

_SEED_KERNELS = ("hist_global", "hist_global_stride", "hist_private", "hist_private_stride")
_VEC_KERNELS = {  # variant name -> (LAYOUT, RUNS)
    "warp_private_vec": (0, "false"),
    "lane_private_vec": (1, "false"),
    "lane_private_vec_rle": (1, "true"),
}
EXPRESSIONS = tuple(
    [f"{k}<{m}>" for k in _SEED_KERNELS for m in range(4)]
    + [f"hist_privatized_vec<{lay}, {runs}, {m}>"
       for lay, runs in _VEC_KERNELS.values() for m in range(4)]
)


def _kernel(expr: str) -> Any:
    return get_kernel(SOURCE, expr, all_expressions=EXPRESSIONS, options=defines(DEFINES))


class _Plan:
    """What a launch of one kernel for one mapping needs beyond the input, built once per
    (kernel expression, mapping, dynamic shared memory, device): the kernel, the device copy
    of the mapping's table, the bin count as the kernel takes it, the persistent grid."""

    __slots__ = ("full", "go", "kernel", "lut", "nbins", "smem")

    def __init__(self, expr: str, mapping: Mapping, smem: int, device_id: int) -> None:
        import cupy

        self.kernel = _kernel(expr)
        self.lut = cupy.asarray(mapping.lut)
        # the table is copied on the current stream; the plan serves every stream and thread:
        # wait for the copy once, here, so no launch elsewhere can read it half written
        cupy.cuda.get_current_stream().synchronize()
        self.nbins = np.uint32(mapping.nbins)
        self.smem = smem
        sms = cupy.cuda.runtime.getDeviceProperties(device_id)["multiProcessorCount"]
        self.full = sms * occupancy_blocks_per_sm(self.kernel, VEC_BLOCK, smem) if smem else 0
        # (data, n, bins, nbins, table): n a Python int (the kernel's u64)
        self.go = Prepared(self.kernel, None, None, (ARRAY, 0, ARRAY, self.nbins, ARRAY), smem)


#: (expression, mapping key, smem, device id) -> plan; a named mapping's key is its name, a
#: table's its 256 bytes
_PLANS = fastpath.PlanCache("histogram.launch")


def _plan(expr: str, mapping: Mapping, smem: int = 0) -> _Plan:
    import cupy

    dev = cupy.cuda.runtime.getDevice()
    mkey = mapping.name if mapping.map_id != MAP_LUT else mapping.lut.tobytes()
    key = (expr, mkey, smem, dev)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS.put(key, _Plan(expr, mapping, smem, dev))
    return plan


def _launch(plan: _Plan, grid: int, block: int, data: Any, bins: Any) -> None:
    plan.go.on(grid, block, data, data.size, bins, plan.nbins, plan.lut)


def _launch_one_per_thread(kernel: str, data: Any, bins: Any, mapping: Mapping) -> None:
    n = data.size
    if n == 0:
        return
    grid = (n + SEED_BLOCK - 1) // SEED_BLOCK
    _launch(_plan(f"{kernel}<{mapping.map_id}>", mapping), grid, SEED_BLOCK, data, bins)


def _launch_fixed_grid(kernel: str, data: Any, bins: Any, mapping: Mapping) -> None:
    if data.size == 0:
        return
    _launch(_plan(f"{kernel}<{mapping.map_id}>", mapping), SEED_STRIDE_GRID, SEED_BLOCK, data,
            bins)


_SEED: dict[str, Any] = {"backend": "cuda", "bytes_moved": histogram_bytes_moved, "seed": True}


@register("histogram", "global", rank=40, **_SEED)
def global_atomics(data: Any, bins: Any, mapping: Mapping) -> None:
    """Report kernel "global": one byte per thread, one global atomic per byte.

    Performance: reads n bytes; n global atomics (L2); 1 launch of ceil(n/256) blocks of 256.
    """
    _launch_one_per_thread("hist_global", data, bins, mapping)


@register("histogram", "global_stride", rank=41, **_SEED)
def global_stride(data: Any, bins: Any, mapping: Mapping) -> None:
    """Report kernel "global_stride": fixed 1024x256 grid striding over the input, global atomics.

    Performance: reads n bytes; n global atomics; 1 launch of 1024 blocks of 256.
    """
    _launch_fixed_grid("hist_global_stride", data, bins, mapping)


@register("histogram", "private", rank=30, **_SEED)
def private(data: Any, bins: Any, mapping: Mapping) -> None:
    """Report kernel "private": one byte per thread, shared-memory bins per block.

    Performance: reads n bytes; n shared atomics; nbins global atomics per block of 256 bytes;
    1 launch of ceil(n/256) blocks.
    """
    _launch_one_per_thread("hist_private", data, bins, mapping)


@register("histogram", "private_stride", rank=20, **_SEED)
def private_stride(data: Any, bins: Any, mapping: Mapping) -> None:
    """Report kernel "private_stride": fixed 1024x256 grid, shared-memory bins per block.

    Performance: reads n bytes; n shared atomics; 1024 * nbins global atomics; 1 launch.
    """
    _launch_fixed_grid("hist_private_stride", data, bins, mapping)


def vec_shared_bytes(layout: int) -> int:
    """Dynamic shared memory of ``hist_privatized_vec`` for a layout (mirrors the .cu)."""
    words = 256 * LANE_STRIDE if layout == 1 else (VEC_BLOCK // 32) * 256
    return 4 * words


def _launch_vec(name: str, data: Any, bins: Any, mapping: Mapping) -> None:
    n = data.size
    if n == 0:
        return
    layout, runs = _VEC_KERNELS[name]
    plan = _plan(f"hist_privatized_vec<{layout}, {runs}, {mapping.map_id}>", mapping,
                 vec_shared_bytes(layout))
    needed = (n // 16 + VEC_BLOCK - 1) // VEC_BLOCK
    _launch(plan, max(1, min(plan.full, needed)), VEC_BLOCK, data, bins)


_VEC: dict[str, Any] = {"backend": "cuda", "bytes_moved": histogram_bytes_moved}


@register("histogram", "lane_private_vec", rank=1, **_VEC)
def lane_private_vec(data: Any, bins: Any, mapping: Mapping) -> None:
    """Per-lane shared sub-histograms, 16-byte loads, persistent grid.

    Counter ``byte * 32 + lane`` is shared by the block's warps: lane l always hits bank l, so no
    input (not even a constant one) causes bank or same-address conflicts within a warp.
    Performance: reads n bytes once (16-byte streaming loads); n shared atomics; at most
    nbins global atomics per block; 1 launch of SMs x occupancy blocks of 512.
    """
    _launch_vec("lane_private_vec", data, bins, mapping)


@register("histogram", "lane_private_vec_rle", rank=0, **_VEC)
def lane_private_vec_rle(data: Any, bins: Any, mapping: Mapping) -> None:
    """``lane_private_vec`` plus run aggregation: 16 equal loaded bytes cost one atomic (+16).

    Performance: as lane_private_vec; n/16 shared atomics on constant runs.
    """
    _launch_vec("lane_private_vec_rle", data, bins, mapping)


@register("histogram", "warp_private_vec", rank=10, **_VEC)
def warp_private_vec(data: Any, bins: Any, mapping: Mapping) -> None:
    """One 256-bin shared sub-histogram per warp, 16-byte loads, persistent grid.

    Performance: reads n bytes once; n shared atomics, up to 32-way serialised when the lanes
    of a warp see the same byte (constant input); at most nbins global atomics per block.
    """
    _launch_vec("warp_private_vec", data, bins, mapping)

"""Launch plan of the scatter ceiling (``ceiling.cu``; what it measures: ``ceiling.py``).

Every way to touch of :data:`~warplab.lab.campaigns.memcpy.ceiling.TOUCHES` is one instantiation
of one NVRTC module per load policy: ``memcpy_scatter_touch<block, per_thread>`` (a thread per
buffer) or ``memcpy_scatter_touch_warp<block>`` (a warp's pieces in lane order: one buffer per
thread); the grid is resident (as many blocks as fit on the SMs at full occupancy, or a
fraction of them; fewer when the batch needs fewer) and strides over chunks of
``block * per_thread`` buffers, or has a block per chunk.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

from warplab.core.loader import defines, get_kernel, local_headers
from warplab.lab.campaigns.memcpy.ceiling import CEILING, TOUCHES, ScatterCeiling, Touch
from warplab.families.memcpy.cuda import DEFINES as COPY_DEFINES
from warplab.families.memcpy.cuda import DeviceBatch, sms
from warplab.families.memcpy.spec import WARP_TIERS_WORDS
from warplab.families.memcpy.spec import __file__ as COPY_SPEC_FILE

SOURCE = Path(__file__).with_name("ceiling.cu")  # includes memcpy_copy.cuh (size_of)
#: The library's memcpy folder: its headers (memcpy_copy.cuh) are on the include path.
MEMCPY_HEADERS = Path(COPY_SPEC_FILE).parent
#: Threads an SM holds (compute capability 7.5 holds 1024, 8.0 and 9.0 hold 2048: the
#: launch bounds ask for full occupancy at 2048) and copy_bytes' unroll (memcpy_copy.cuh).
THREADS_PER_SM = 2048
DEFINES = {"MEMCPY_CEILING_THREADS_PER_SM": THREADS_PER_SM,
           "WARPLAB_MEMCPY_UNROLL": COPY_DEFINES["WARPLAB_MEMCPY_UNROLL"],
           "WARPLAB_MEMCPY_LOADS": WARP_TIERS_WORDS.loads}  # the default copy's load policy


def _expression(block: int, per_thread: int, warp: bool) -> str:
    return (f"memcpy_scatter_touch_warp<{block}>" if warp
            else f"memcpy_scatter_touch<{block}, {per_thread}>")


#: The kernels every module holds: one per shape of :data:`TOUCHES` (grids and load policies
#: share them).
_EXPRESSIONS = tuple(dict.fromkeys(_expression(t.block, t.per_thread, t.warp) for t in TOUCHES))


@functools.cache
def _kernel_on(expr: str, device_id: int, loads: int = 0) -> Any:
    """The compiled kernel per device and load policy (the default copy's by default; one
    NVRTC module per policy holds every shape)."""
    options = defines({**DEFINES, "WARPLAB_MEMCPY_LOADS": loads})
    exprs = _EXPRESSIONS if expr in _EXPRESSIONS else (expr,)  # another shape: its own module
    return get_kernel(SOURCE, expr, all_expressions=exprs,
                      options=(*options, *local_headers(MEMCPY_HEADERS)))


@functools.cache
def _resident_blocks(device_id: int, block: int) -> int:
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(device_id)
    per_sm = int(props.get("maxThreadsPerMultiProcessor", THREADS_PER_SM)) // block
    return max(1, per_sm) * sms(device_id)


def scatter_touch(b: DeviceBatch, block: int, per_thread: int, warp: bool = False,
                  loads: int = DEFINES["WARPLAB_MEMCPY_LOADS"], grid: float = 1.0) -> None:
    """Touch the end sectors of every buffer of ``b`` (see ``ceiling.py``) with the shape
    (``block`` threads, ``per_thread`` buffers each; ``warp``: the warp-cooperative kernel,
    one buffer per thread; ``loads`` the load policy, the default copy's by default;
    ``grid``: the grid strides, with this fraction of the blocks that fit the SMs at once; 0:
    a block per chunk, as the copies launch; ``ceiling.Touch.grid``) on the current stream;
    nothing for an empty batch.

    Performance: one launch, no synchronisation; reads 24 bytes of descriptor per buffer and
    one or two bytes of source, writes one or two bytes per buffer.
    """
    import cupy

    if b.count == 0:
        return
    dev = cupy.cuda.runtime.getDevice()
    kernel = _kernel_on(_expression(block, per_thread, warp), dev, loads)
    blocks = -(-b.count // (block * per_thread))
    if grid:
        blocks = min(blocks, max(1, int(grid * _resident_blocks(dev, block))))
    kernel((blocks,), (block,), (b.src, b.dst, b.sizes, np.uint64(b.count)))


def touch_launch(t: Touch, loads: int = DEFINES["WARPLAB_MEMCPY_LOADS"]) -> Any:
    """``launch(batch)`` of the way to touch ``t``; ``loads``: the policy where ``t`` has none."""
    return functools.partial(scatter_touch, block=t.block, per_thread=t.per_thread,
                             warp=t.warp, loads=loads if t.loads is None else t.loads,
                             grid=t.grid)


def cuda_ceiling(loads: int | None = None, touches: tuple[Touch, ...] = TOUCHES) -> ScatterCeiling:
    """The ceiling target of the cuda backend: one launch function per way to touch of
    ``touches``, each at its own load policy or the default copy's; another policy for those
    (``loads``, for the explore scripts) names the target ``scatter_touch[loads k]``."""
    k = DEFINES["WARPLAB_MEMCPY_LOADS"] if loads is None else loads
    name = CEILING if k == DEFINES["WARPLAB_MEMCPY_LOADS"] else f"{CEILING}[loads {k}]"
    return ScatterCeiling(name, {t.name: touch_launch(t, k) for t in touches})

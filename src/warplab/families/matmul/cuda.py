"""Launch plans of the CUDA matmul variants (kernels in ``matmul.cu`` beside this file).

Every variant is ``fn(a, b, c) -> c``: ``a`` (m x k), ``b`` (k x n) and ``c`` (m x n) are
C-contiguous CuPy arrays of the problem's dtype; the kernel is launched on the current stream
and nothing synchronises.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from warplab.core.launch import ARRAY, Prepared
from warplab.core.loader import defines, get_kernel
from warplab.core.registry import register
from warplab.families.matmul.spec import (
    C_TYPE,
    DTYPES,
    LECTURE_TILE,
    MAX_DIM,
    MatmulProblem,
    matmul_flops,
    naive_bytes,
    tiled_bytes,
)

LANES_M, LANES_N = 4, 8   # a warp's lanes as a grid over its C tile
GROUP_M = 8               # tile rows per group of the block order (L2 reuse)
SOURCE = Path(__file__).with_name("matmul.cu")
#: The kernels' compile-time constants: this dict is their only copy (passed as -D options).
DEFINES = {"WARPLAB_MATMUL_LANES_M": LANES_M, "WARPLAB_MATMUL_LANES_N": LANES_N,
           "WARPLAB_MATMUL_GROUP_M": GROUP_M}
MAX_GRID_Y = 65535        # the lecture kernels put the rows of C on grid y


@dataclass(frozen=True)
class RegTile:
    """One instantiation of ``matmul_regtile``: warps of ``4 x 8`` lanes, each lane owning
    ``(4 sub_m) x (4 sub_n)`` elements of C; ``bk`` is the depth of a shared-memory slice."""

    bk: int
    warps_m: int
    warps_n: int
    sub_m: int
    sub_n: int
    min_blocks: int   # __launch_bounds__ minimum resident blocks (caps the registers)
    dtypes: tuple[np.dtype, ...] = DTYPES

    @property
    def bm(self) -> int:
        return self.warps_m * LANES_M * 4 * self.sub_m

    @property
    def bn(self) -> int:
        return self.warps_n * LANES_N * 4 * self.sub_n

    @property
    def threads(self) -> int:
        return 32 * self.warps_m * self.warps_n

    @property
    def name(self) -> str:
        """``regtile_<block tile>_<thread tile>``, e.g. ``regtile_64x128_8x8``."""
        return f"regtile_{self.bm}x{self.bn}_{4 * self.sub_m}x{4 * self.sub_n}"

    def expression(self, dtype: np.dtype, vec: bool) -> str:
        """The kernel's template instantiation for ``dtype`` (16-byte loads if ``vec``)."""
        return (f"matmul_regtile<{C_TYPE[np.dtype(dtype)]}, {self.bk}, {self.warps_m}, "
                f"{self.warps_n}, {self.sub_m}, {self.sub_n}, {self.min_blocks}, "
                f"{'true' if vec else 'false'}>")

    def expressions(self) -> tuple[str, ...]:
        return tuple(self.expression(dt, v) for dt in self.dtypes for v in (True, False))


#: The default: 64 x 128 tiles, 8 x 8 per thread (128 threads), slices of 16, three blocks per
#: SM. Measured on the H100 (benchmarks/NOTES.md): 93% of cuBLAS at N = 8192, and twice the
#: blocks that 128 x 128 tiles give, which keeps the SMs busy from N = 1024 on.
REGTILE_DEFAULT = RegTile(bk=16, warps_m=2, warps_n=2, sub_m=2, sub_n=2, min_blocks=3,
                          dtypes=(np.dtype(np.float32),))
#: 64 x 64 tiles, 4 x 4 per thread: float64 (and float32).
REGTILE_64 = RegTile(bk=16, warps_m=4, warps_n=2, sub_m=1, sub_n=1, min_blocks=2)
REGTILES = (REGTILE_DEFAULT, REGTILE_64)

_LECTURE_KERNELS = ("matmul_naive", "matmul_tiled_smem16")
_EXPRESSIONS = tuple(f"{k}<{C_TYPE[dt]}>" for k in _LECTURE_KERNELS for dt in DTYPES) + \
    tuple(e for t in REGTILES for e in t.expressions())


def _kernel(expression: str, module: Sequence[str] = _EXPRESSIONS) -> Any:
    """The compiled kernel; ``module`` lists every instantiation compiled together with it."""
    return get_kernel(SOURCE, expression, all_expressions=tuple(module), options=defines(DEFINES))


def _dims(a: Any, b: Any) -> tuple[np.int32, np.int32, np.int32]:
    return np.int32(a.shape[0]), np.int32(b.shape[1]), np.int32(a.shape[1])


def vector_loads_ok(a: Any, b: Any, c: Any) -> bool:
    """16-byte loads and stores work: K and N multiples of 4, every pointer 16-byte aligned."""
    return (a.shape[1] % 4 == 0 and b.shape[1] % 4 == 0
            and all(x.data.ptr % 16 == 0 for x in (a, b, c)))


def launch_regtile(tile: RegTile, a: Any, b: Any, c: Any,
                   module: Sequence[str] = _EXPRESSIONS) -> Any:
    """``c = a @ b`` with ``tile`` (any m, n, k; one launch, grouped tile order)."""
    dims = _dims(a, b)
    kernel = _kernel(tile.expression(a.dtype, vector_loads_ok(a, b, c)), module)
    blocks = -(-int(dims[0]) // tile.bm) * -(-int(dims[1]) // tile.bn)
    kernel((blocks,), (tile.threads,), (a, b, c, *dims))
    return c


def prepared_regtile(tile: RegTile, a: Any, b: Any) -> tuple[Prepared, tuple]:
    """The launch of ``c = a @ b`` with ``tile`` into a fresh result (a new allocation is
    256-byte aligned, so ``a`` and ``b`` decide the 16-byte loads) as a :class:`Prepared`
    launch taking ``(a, b, c, *dims)``, and ``dims``. ``a`` and ``b`` are C-contiguous CuPy
    arrays of one dtype, every dimension at least 1."""
    dims = _dims(a, b)
    vec = (int(dims[2]) % 4 == 0 and int(dims[1]) % 4 == 0 and a.data.ptr % 16 == 0
           and b.data.ptr % 16 == 0)
    blocks = -(-int(dims[0]) // tile.bm) * -(-int(dims[1]) // tile.bn)
    kernel = _kernel(tile.expression(a.dtype, vec))
    return Prepared(kernel, (blocks,), (tile.threads,), (ARRAY, ARRAY, ARRAY, *dims)), dims


def _fits(p: MatmulProblem) -> bool:
    return np.dtype(p.dtype) in DTYPES and max(p.m, p.n, p.k) <= MAX_DIM


def _lecture_supports(p: MatmulProblem) -> bool:
    return _fits(p) and -(-p.m // LECTURE_TILE) <= MAX_GRID_Y


def _lecture(kernel: str) -> Callable[[Any, Any, Any], Any]:
    def run(a: Any, b: Any, c: Any) -> Any:
        m, n, _ = _dims(a, b)
        grid = (-(-int(n) // LECTURE_TILE), -(-int(m) // LECTURE_TILE))
        _kernel(f"{kernel}<{C_TYPE[np.dtype(a.dtype)]}>")(
            grid, (LECTURE_TILE, LECTURE_TILE), (a, b, c, *_dims(a, b)))
        return c

    return run


_naive = _lecture("matmul_naive")
_naive.__doc__ = """GPU lecture #1: one thread per element of C reads a row of A and a column of B.

Performance: 2 m n k flops; requests m n k (1/16 + 1) words (one A word per 16 threads, see
``_matmul_spec``); one launch of 16 x 16 blocks on a 2-D grid (rows of C on grid y)."""
register("matmul", "naive", backend="cuda", bytes_moved=naive_bytes, flops=matmul_flops,
         supports=_lecture_supports, rank=90, seed=True)(_naive)

_tiled = _lecture("matmul_tiled_smem16")
_tiled.__doc__ = """GPU lecture #2: 16 x 16 tiles of A and B staged in shared memory.

Performance: 2 m n k flops; reads A once per 16 columns and B once per 16 rows of C (4
flop/byte in float32); one launch of 16 x 16 blocks, two barriers per 16-deep slice."""
register("matmul", "tiled_smem16", backend="cuda", bytes_moved=tiled_bytes(16, 16),
         flops=matmul_flops, supports=_lecture_supports, rank=80, seed=True)(_tiled)


def _register_regtile(tile: RegTile, rank: int, summary: str) -> None:
    def run(a: Any, b: Any, c: Any) -> Any:
        return launch_regtile(tile, a, b, c)

    def supports(p: MatmulProblem) -> bool:
        tiles = -(-p.m // tile.bm) * -(-p.n // tile.bn)
        return _fits(p) and np.dtype(p.dtype) in tile.dtypes and tiles <= MAX_DIM

    kinds = "/".join(dt.name for dt in tile.dtypes)
    run.__doc__ = f"""{summary}

    Performance: 2 m n k flops; reads A once per {tile.bn} columns and B once per {tile.bm} rows
    of C; one launch of {tile.threads} threads per {tile.bm} x {tile.bn} tile, each thread
    {4 * tile.sub_m} x {4 * tile.sub_n} elements; slices of {tile.bk} double-buffered (one
    barrier each); 16-byte loads when K and N are multiples of 4. {kinds}."""
    register("matmul", tile.name, backend="cuda", bytes_moved=tiled_bytes(tile.bm, tile.bn),
             flops=matmul_flops, supports=supports, rank=rank)(run)


_register_regtile(REGTILE_DEFAULT, 0, "Register tiles: 64 x 128 per block, 8 x 8 per thread, "
                  "A transposed and padded in shared memory, next slice prefetched.")
_register_regtile(REGTILE_64, 10, "Register tiles: 64 x 64 per block, 4 x 4 per thread "
                  "(float32 and float64), same pipeline as the default 64 x 128 tiles.")


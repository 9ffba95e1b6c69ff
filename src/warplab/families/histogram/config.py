"""The launch configuration of the numeric histogram kernels (``numeric_cuda.py``): their
compile-time constants and the choices a tuning sweep varies. Every plan takes one as an
argument and has it in its key; :data:`DEFAULT` is what the public calls pass."""
from __future__ import annotations

from dataclasses import dataclass, field

from warplab.core.loader import defines


@dataclass(frozen=True)
class LaunchConfig:
    """How the numeric kernels are compiled and launched; part of every plan's key.

    Attributes:
        block: threads per block of every kernel (``-DWARPLAB_NUM_BLOCK``).
        unroll: 16-byte loads in flight per thread (``-DWARPLAB_NUM_UNROLL``).
        prefetch: 1 to load the next vectors before counting the current ones, else 0
            (``-DWARPLAB_NUM_PREFETCH``).
        acc_budget: shared bytes of accumulator copies per block (above 48 KiB a block
            opts in to more shared memory).
        minmax: how the min/max pass reads the data's range: ``"atomic"`` (one set of 64-bit
            atomics per block into three words, one read back; 2689 against 2474 GB/s on the
            H100, benchmarks/NOTES.md) or ``"partials"`` (per-block minima, maxima and flags
            reduced on the host).
        one_block: small inputs of ``histogram`` with a given range run the kernels'
            one-block form (False: the form that adds into a zeroed template, for
            comparisons).
        max_device_chunk: largest host chunk copied to the GPU at once; None: half the
            free device memory.
    """

    block: int = 256
    unroll: int = 2
    prefetch: int = 0
    acc_budget: int = 32 * 1024
    minmax: str = "atomic"
    one_block: bool = True
    max_device_chunk: int | None = None
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # hashed once: every warm call hashes its plan key, which holds the config
        object.__setattr__(self, "_hash", hash((self.block, self.unroll, self.prefetch,
                                                self.acc_budget, self.minmax, self.one_block,
                                                self.max_device_chunk)))

    def __hash__(self) -> int:
        return self._hash

    @property
    def smem_limit(self) -> int:
        """Dynamic shared memory a block may use (48 KiB without opting in)."""
        return max(48 * 1024, self.acc_budget + 16 * 1024)

    @property
    def options(self) -> tuple[str, ...]:
        """The kernels' ``-D`` options: their compile-time constants' only copy."""
        return defines({"WARPLAB_NUM_BLOCK": self.block, "WARPLAB_NUM_UNROLL": self.unroll,
                        "WARPLAB_NUM_PREFETCH": self.prefetch})


#: The measured defaults (256 threads, unroll 2, no prefetch, 32 KiB of accumulators).
DEFAULT = LaunchConfig()

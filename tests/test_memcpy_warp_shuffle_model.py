"""A lane-by-lane model of ``warp_copy_bytes`` (``memcpy_copy.cuh``): the rounds of 32 x U
aligned 16-byte words storing 32 x U - 1 chunks, the next lane's word by a shuffle (lane
31: lane 0's, the next round's), the 16 bytes at the source's misalignment, the head and tail
bytes one a lane. Checks the indexing, not the compiler: every destination byte right, nothing
else written, no load outside an aligned word that holds a source byte."""
from __future__ import annotations

import numpy as np
import pytest

MASK = (1 << 64) - 1


def shifted16(a: bytes, b: bytes, m: int) -> bytes:
    """The kernel's ``shifted16``: the 16 bytes from byte m (1..15) of a (low) and b (high)."""
    ax, ay = int.from_bytes(a[:8], "little"), int.from_bytes(a[8:], "little")
    bx, by = int.from_bytes(b[:8], "little"), int.from_bytes(b[8:], "little")
    x0, x1, x2 = (ax, ay, bx) if m < 8 else (ay, bx, by)
    s = 8 * (m & 7)
    lo, hi = (x0, x1) if s == 0 else (((x0 >> s) | (x1 << (64 - s))) & MASK,
                                      ((x1 >> s) | (x2 << (64 - s))) & MASK)
    return lo.to_bytes(8, "little") + hi.to_bytes(8, "little")


def warp_copy(mem: bytearray, dst: int, src: int, n: int, U: int) -> None:  # noqa: N803
    """``warp_copy_bytes<U>`` on ``mem`` for a misaligned source (the aligned one takes
    ``copy_bytes<true>``)."""
    head = min((16 - (dst & 15)) & 15, n)
    m = (src + head) & 15
    chunks = (n - head) >> 4
    body_end = head + (chunks << 4)
    edges = [(at, mem[src + at]) for lane in range(32)
             for at in [lane if lane < head else lane - head + body_end] if at < n]
    s16 = src + head - m
    for base in range(0, chunks, 32 * U - 1):
        w = [[bytes(16)] * U for _ in range(32)]
        for lane in range(32):
            for k in range(U):
                j = base + lane + 32 * k
                if j <= chunks:
                    addr = s16 + 16 * j
                    assert addr + 15 >= src and addr < src + n  # holds a source byte
                    w[lane][k] = bytes(mem[addr:addr + 16])
        stores = {}
        for lane in range(32):
            nxt = (lane + 1) & 31
            r = w[nxt][0]
            for k in range(U):
                r1 = w[nxt][k + 1] if k + 1 < U else r
                i = base + lane + 32 * k
                if i < chunks and (k + 1 < U or lane != 31):
                    stores[i] = shifted16(w[lane][k], r1 if lane == 31 else r, m)
                r = r1
        for i, v in stores.items():
            mem[dst + head + 16 * i:dst + head + 16 * i + 16] = v
    for at, v in edges:
        mem[dst + at] = v


@pytest.mark.parametrize("u", [2, 4])  # WARPLAB_MEMCPY_WARP_SHUFFLE
@pytest.mark.parametrize("seed", range(4))
def test_warp_copy_model_copies_every_byte_once(seed: int, u: int) -> None:
    rng = np.random.default_rng(seed)
    done = 0
    while done < 150:
        n = int(rng.choice([rng.integers(0, 48), rng.integers(0, 9000)]))
        src, dst = 64 + int(rng.integers(0, 64)), 20_128 + int(rng.integers(0, 64))
        if (src + min((16 - (dst & 15)) & 15, n)) & 15 == 0:
            continue  # aligned where the destination is: copy_bytes<true>
        mem = bytearray(rng.integers(0, 256, 40_448, dtype=np.uint8).tobytes())
        before = bytes(mem)
        warp_copy(mem, dst, src, n, u)
        assert mem[dst:dst + n] == before[src:src + n], (n, src, dst)
        assert mem[:dst] == before[:dst] and mem[dst + n:] == before[dst + n:]
        done += 1

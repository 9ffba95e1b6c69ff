"""Synthetic inputs of the histogram report, on the host and (for large sizes) on the GPU.

Kinds:
    uniform  Lehmer (Park-Miller, a = 48271, m = 2^31 - 1) bytes 1..128, fixed seed
    const    the byte 'a' everywhere (the classic worst case for atomics)
    text     pseudo-English prose (Zipf-weighted common words), a 4 MiB block tiled
    random   bytes 0..255 from NumPy's PCG64 with a fixed seed
The same (kind, size, seed) always gives the same bytes, on either side.
"""
from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import numpy as np
from warplab.core.errors import InvalidValueError

KINDS = ("uniform", "const", "text", "random")
LEHMER_A = 48271
LEHMER_M = (1 << 31) - 1
SEED = 1
_POW_CHUNK = 1 << 20
_TEXT_BLOCK = 4 << 20


def _mod_m(x: np.ndarray) -> np.ndarray:
    """x mod (2^31 - 1) for uint64 x < 2^62 (two Mersenne folds and a subtraction)."""
    x = (x & LEHMER_M) + (x >> 31)
    x = (x & LEHMER_M) + (x >> 31)
    return np.where(x >= LEHMER_M, x - LEHMER_M, x)


def _pow_table() -> np.ndarray:
    """a^j mod m for j = 0 .. _POW_CHUNK-1, by doubling."""
    t = np.ones(1, dtype=np.uint64)
    while t.size < _POW_CHUNK:
        step = np.uint64(pow(LEHMER_A, int(t.size), LEHMER_M))
        t = np.concatenate([t, _mod_m(t * step)])
    return t


def lehmer_bytes(n: int, seed: int = SEED) -> np.ndarray:
    """Bytes 1..128: byte_k = 1 + (s_{k+1} mod 128), s_{k+1} = a * s_k mod m, s_0 = seed."""
    out = np.empty(n, dtype=np.uint8)
    table = _pow_table()
    for start in range(0, n, _POW_CHUNK):
        m = min(_POW_CHUNK, n - start)
        first = np.uint64(seed * pow(LEHMER_A, start + 1, LEHMER_M) % LEHMER_M)
        s = _mod_m(table[:m] * first)
        out[start:start + m] = 1 + (s & np.uint64(127)).astype(np.uint8)
    return out


def lehmer_bytes_device(n: int, seed: int = SEED) -> Any:
    """The same bytes as :func:`lehmer_bytes`, generated on the GPU (CuPy array)."""
    import cupy

    from warplab.core.loader import get_kernel

    out = cupy.empty(n, dtype=np.uint8)
    if n == 0:
        return out
    per_thread, block = 256, 256
    threads = (n + per_thread - 1) // per_thread
    grid = (threads + block - 1) // block
    get_kernel(Path(__file__).with_name("generate.cu"), "lehmer_bytes")((grid,), (block,),
                                           (out, np.uint64(n), np.uint32(seed),
                                            np.uint32(per_thread)))
    return out


_WORDS = (
    "the of and to a in is it you that he was for on are with as I his they be at one have this "
    "from or had by hot word but what some we can out other were all there when up use your how "
    "said an each she which do their time if will way about many then them write would like so "
    "these her long make thing see him two has look more day could go come did number sound no "
    "most people my over know water than call first who may down side been now find any new work "
    "part take get place made live where after back little only round man year came show every "
    "good me give our under name very through just form sentence great think say help low line "
    "differ turn cause much mean before move right boy old too same tell does set three want air "
    "well also play small end put home read hand port large spell add even land here must big "
    "high such follow act why ask men change went light kind off need house picture try us again "
    "animal point mother world near build self earth father head stand own page should country "
    "found answer school grow study still learn plant cover food sun four between state keep eye "
    "never last let thought city tree cross farm hard start might story saw far sea draw left "
    "late run while press close night real life few north open seem together next white children "
    "begin got walk example ease paper group always music those both mark often letter until mile "
    "river car feet care second book carry took science eat room friend began idea fish mountain "
    "stop once base hear horse cut sure watch color face wood main enough plain girl usual young "
    "ready above ever red list though feel talk bird soon body dog family direct pose leave song "
    "measure door product black short numeral class wind question happen complete ship area half "
    "rock order fire south problem piece told knew pass since top whole king space heard best hour "
    "better true during hundred five remember step early hold west ground interest reach fast verb "
    "sing listen six table travel less morning ten simple several vowel toward war lay against "
    "pattern slow center love person money serve appear road map rain rule govern pull cold notice "
    "voice unit power town fine certain fly fall lead cry dark machine note wait plan figure star "
    "box noun field rest correct able pound done beauty drive stood contain front teach week final "
    "gave green oh quick develop ocean warm free minute strong special mind behind clear tail "
    "produce fact street inch multiply nothing course stay wheel full force blue object decide "
    "surface deep moon island foot system busy test record boat common gold possible plane stead "
    "dry wonder laugh thousand ago ran check game shape equate miss brought heat snow tire bring "
    "yes distant fill east paint language among Zurich Quebec Jazz Xylophone"
).split()


def english_text(n: int, seed: int = SEED) -> np.ndarray:
    """Pseudo-English: Zipf-weighted words, sentences with capitals, commas, periods, newlines.

    A 4 MiB block is generated once per seed and tiled, so any size costs one ``np.resize``.
    """
    block = _text_block(seed)
    return np.resize(block, n) if n else np.zeros(0, dtype=np.uint8)


@functools.lru_cache(maxsize=2)
def _text_block(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    words = np.array(_WORDS, dtype=object)
    weights = 1.0 / np.arange(1, len(words) + 1)
    idx = rng.choice(len(words), size=_TEXT_BLOCK // 4, p=weights / weights.sum())
    parts: list[str] = []
    sentence_len = 0
    for w in words[idx]:
        if sentence_len == 0:
            w = w.capitalize()
        sentence_len += 1
        r = rng.random()
        if sentence_len > 6 and r < 0.12:
            w += ".\n" if r < 0.02 else ". "
            sentence_len = 0
        elif r < 0.06:
            w += ", "
        else:
            w += " "
        parts.append(w)
    block = np.frombuffer("".join(parts).encode("ascii")[:_TEXT_BLOCK], dtype=np.uint8)
    block.flags.writeable = False
    return block


def generate(kind: str, n: int, seed: int = SEED) -> np.ndarray:
    """Host bytes of ``kind`` (see the module docstring) and size ``n``."""
    if kind not in KINDS:
        raise InvalidValueError(f"unknown data kind {kind!r}; valid: {', '.join(KINDS)}")
    if n < 0:
        raise InvalidValueError(f"size must be >= 0, got {n}")
    if kind == "uniform":
        return lehmer_bytes(n, seed)
    if kind == "const":
        return np.full(n, ord("a"), dtype=np.uint8)
    if kind == "text":
        return english_text(n, seed)
    return np.random.default_rng(seed).integers(0, 256, size=n, dtype=np.uint8)


def generate_fast(kind: str, n: int, seed: int = SEED) -> np.ndarray:
    """Like :func:`generate`; large ``uniform`` inputs are made on the GPU when one is usable."""
    from warplab.core.device import cuda_available

    if kind == "uniform" and n >= (64 << 20) and cuda_available():
        return lehmer_bytes_device(n, seed).get()
    return generate(kind, n, seed)


def evict_from_page_cache(paths: list) -> None:
    """Drop the files' pages from the page cache (written back first), for cold reads."""
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)

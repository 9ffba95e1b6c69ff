"""NumPy models of the batched-copy kernels' bookkeeping (memcpy.cu, memcpy_warp.cuh), for the
CPU tests: the ``size_classes`` partition and BLEV queue, ``memcpy_warp_classes``'s classes,
lists and streams, which bytes each lane of a group or stream copies, and the chunk search of
the BLEV kernel. No GPU; nothing here runs on the copy's path."""
from __future__ import annotations

import numpy as np

from warplab.families.memcpy.spec import SizeClasses, WarpClasses, as_i64


def partition_model(sizes: np.ndarray, classes: SizeClasses) -> dict[str, np.ndarray]:
    """A NumPy model of what the ``size_classes`` tile kernel computes (for the CPU tests):
    per tile the 3-bin histogram and its exclusive prefix sum, the stable partition of the
    tile's buffers, the TLEV byte stream's run ends; and the BLEV queue the tiles fill through
    one packed atomic each, taken here in tile order (the queue is correct in any order as
    long as each tile's slots and first chunks are reserved together).

    Returns ``tlev`` / ``wlev`` (buffer ids in partition order, all tiles), ``tlev_end`` (each
    TLEV buffer's inclusive end in its tile's byte stream), ``queue`` (BLEV buffer ids),
    ``first_chunk`` (their first chunk in the global chunk space) and ``chunks`` (total)."""
    s = np.maximum(as_i64(sizes), 0)
    cls = classes.classify(s)
    tile = classes.tile_threads * classes.buffers_per_thread
    tlev, wlev, tlev_end, queue, first = [], [], [], [], []
    chunks = 0
    for t0 in range(0, len(s), tile):
        ids = np.arange(t0, min(t0 + tile, len(s)))
        c = cls[ids]
        hist = np.bincount(c, minlength=3)
        base = np.concatenate([[0], np.cumsum(hist)[:-1]])  # where each class starts
        part = np.empty(len(ids), dtype=np.int64)
        for k in range(3):
            part[base[k]:base[k] + hist[k]] = ids[c == k]
        t_ids = part[:hist[0]]
        tlev += list(t_ids)
        tlev_end += list(np.cumsum(s[t_ids]))
        wlev += list(part[hist[0]:hist[0] + hist[1]])
        b_ids = part[hist[0] + hist[1]:]
        n_chunks = -(-s[b_ids] // classes.chunk)
        queue += list(b_ids)
        first += list(chunks + np.cumsum(n_chunks) - n_chunks)
        chunks += int(n_chunks.sum())
    return {"tlev": as_i64(tlev), "tlev_end": as_i64(tlev_end), "wlev": as_i64(wlev),
            "queue": as_i64(queue), "first_chunk": as_i64(first), "chunks": np.int64(chunks)}


def warp_classes_model(sizes: np.ndarray, classes: WarpClasses, src: np.ndarray | None = None,
                       dst: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """A NumPy model of ``memcpy_warp_classes``'s bookkeeping (for the CPU tests): per warp of
    32 buffers (in order) the ids of each class in lane order, and the BLEV queue filled by
    one packed atomic per warp with BLEV buffers, taken here in warp order.

    Returns ``thread``, ``group``, ``group_words``, ``group2``, ``warp`` (buffer ids),
    ``queue`` (BLEV ids), ``first_chunk`` and ``chunks`` (total), as :func:`partition_model`,
    and ``list_slot``: per buffer its slot in the warp's shared list (``s_list``: the groups'
    buffers by rank from slot 0 up, then those of ``group_words``, the second tier's from slot
    31 down; -1 for the others). ``group_words`` (:func:`group_worded`) needs the addresses
    ``src`` and ``dst``; without them it stays empty."""
    s = np.maximum(as_i64(sizes), 0)
    cls = classes.classify(s)
    if src is not None and dst is not None:
        cls = np.where(group_worded(s, src, dst, classes), 5, cls)
    out: dict[str, list] = {"thread": [], "group": [], "group_words": [], "group2": [],
                            "warp": [], "queue": [], "first": []}
    slot = np.full(len(s), -1, dtype=np.int64)
    chunks = 0
    for w0 in range(0, len(s), 32):
        ids = np.arange(w0, min(w0 + 32, len(s)))
        for key, k in (("thread", 0), ("group", 1), ("group2", 2), ("warp", 3),
                       ("group_words", 5)):
            out[key] += list(ids[cls[ids] == k])
        n_sub = np.count_nonzero(cls[ids] == 1)
        slot[ids[cls[ids] == 1]] = np.arange(n_sub)
        slot[ids[cls[ids] == 5]] = n_sub + np.arange(np.count_nonzero(cls[ids] == 5))
        slot[ids[cls[ids] == 2]] = 31 - np.arange(np.count_nonzero(cls[ids] == 2))
        big = ids[cls[ids] == 4]
        mine = -(-s[big] // classes.chunk)
        incl = np.cumsum(mine)
        out["queue"] += list(big)
        out["first"] += list(chunks + incl - mine)
        chunks += int(mine.sum())
    return {"thread": as_i64(out["thread"]), "group": as_i64(out["group"]),
            "group_words": as_i64(out["group_words"]), "group2": as_i64(out["group2"]),
            "warp": as_i64(out["warp"]), "queue": as_i64(out["queue"]),
            "first_chunk": as_i64(out["first"]), "chunks": np.int64(chunks), "list_slot": slot}


def group_lanes(n: int, dst: int, group: int, max_bytes: int) -> list[list[tuple[int, str]]]:
    """What each of ``group`` lanes copies in ``group_copy`` (memcpy.cu) of ``n <= max_bytes``
    bytes to address ``dst``: per lane a list of (byte offset, "chunk" or "byte"), chunks 16
    bytes from ``dst``'s first 16-byte boundary on, edge bytes before it and after the last
    chunk; at most ``ceil(max_bytes / 16 / group)`` chunks and ``ceil(30 / group)`` edge bytes
    per lane."""
    k_max, e_max = -(-(max_bytes // 16) // group), -(-30 // group)
    head = min((16 - dst % 16) % 16, n)
    chunks = (n - head) >> 4
    body_end = head + 16 * chunks
    edges = head + n - body_end
    lanes = []
    for g in range(group):
        mine = [(head + 16 * (g + k * group), "chunk") for k in range(k_max)
                if g + k * group < chunks]
        for k in range(e_max):
            j = g + k * group
            if j < edges:
                mine.append((j if j < head else j - head + body_end, "byte"))
        lanes.append(mine)
    return lanes


def thread_pieces(n: int, src: int, dst: int) -> list[tuple[int, int]]:
    """The (offset, width) moves of ``thread_copy`` (memcpy.cu) for ``n <= 16`` bytes: one
    16-byte move when both addresses are 16-aligned and n is 16, else 8- or 4-byte words
    where both are so aligned and the tail in 4-, 2-, 1-byte pieces, else single bytes."""
    a = src | dst
    if n == 16 and a % 16 == 0:
        return [(0, 16)]
    if a % 4:
        return [(k, 1) for k in range(n)]
    w = 8 if a % 8 == 0 else 4
    out = [(k * w, w) for k in range(n // w)]
    o = n - n % w
    for p in (4, 2, 1):
        if p < w and n & p:
            out.append((o, p))
            o += p
    return out


def one_move(s: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Whether ``one_move`` (memcpy_lanes.cuh) copies each buffer: 1, 2, 4, 8 or 16 bytes with
    both addresses aligned to the size (``s``: sizes, read where >= 1; ``a``: the two
    addresses or'ed, uint64)."""
    u = s.astype(np.uint64) - np.uint64(1)
    return ((s & (s - 1)) == 0) & ((a & u) == 0)


def streamed(sizes: np.ndarray, src: np.ndarray, dst: np.ndarray, classes: WarpClasses,
             dst_scattered: bool = True) -> np.ndarray:
    """Which buffers ``memcpy_warp_classes`` copies through the warp's byte stream: thread-level
    ones (1..``tlev_max`` bytes) when ``classes.stream`` is 2; when it is 1, those with an
    address not 4-byte aligned (exactly those ``thread_copy`` would copy byte by byte); when it
    is 3, all but those of 1, 2, 4, 8 or 16 bytes with both addresses aligned to their size
    (one aligned move each, ``one_move``); when it is 4, those that are neither (both
    addresses 4-byte aligned: ``word_copy``) nor such a single move, and with ``words`` bit 4
    only in a warp whose destinations are scattered (``dst_scattered``, :func:`scattered`;
    in the other warps their own lanes copy them: :func:`lane_shifted`)."""
    s = np.maximum(as_i64(sizes), 0)
    tiny = (s > 0) & (s <= classes.tlev_max)
    a = np.asarray(src, np.uint64) | np.asarray(dst, np.uint64)
    if classes.stream == 2:
        return tiny
    odd = (a & np.uint64(3)) != 0
    if classes.stream == 4 and classes.words & 4 and not dst_scattered:
        return np.zeros_like(tiny)
    if classes.stream in (3, 4):
        return tiny & ~one_move(s, a) & (odd if classes.stream == 4 else True)
    return tiny & odd if classes.stream == 1 else np.zeros_like(tiny)


def lane_shifted(sizes: np.ndarray, src: np.ndarray, dst: np.ndarray, classes: WarpClasses,
                 dst_scattered: bool) -> np.ndarray:
    """Which buffers their own lane copies with ``lane_shifted_copy`` (``words`` bit 4,
    ``stream`` 4): in a warp whose destinations are not scattered, exactly those the byte
    stream would take there without the bit."""
    if not (classes.words & 4 and classes.stream == 4) or dst_scattered:
        return np.zeros(len(as_i64(sizes)), bool)
    return streamed(sizes, src, dst, classes._replace(words=classes.words & 3))


def lane_shifted_bytes(n: int, src: int, memory: bytes, max_bytes: int = 16
                       ) -> tuple[list[int], list[int]]:
    """``lane_shifted_copy``'s arithmetic for ``n`` bytes (1 <= n <= ``max_bytes``) from
    address ``src`` of ``memory`` (little-endian, as the GPU's): the addresses of the aligned
    8-byte words it loads, and the bytes it stores at destination offsets 0..n-1. The words
    go to 4-byte halves ``a``; each 4-byte word k of the buffer is ``funnelshift_r`` of halves
    k, k + 1 (from half 1 on where src % 8 >= 4) by 8 (src % 4) bits."""
    kw, kv = (max_bytes + 14) // 8, (max_bytes + 3) // 4
    r = src % 8
    base = src - r
    last = (r + n - 1) // 8
    loads = [base + 8 * k for k in range(kw) if k <= last]
    words = [int.from_bytes(memory[x:x + 8], "little") for x in loads]
    words += [0] * (kw - len(words))  # zeroed (ZERO bit 2) where not loaded
    a = [h for w in words for h in (w & 0xFFFFFFFF, w >> 32)] + [0, 0]
    up, sh = int(r >= 4), 8 * (r % 4)
    v = [((a[k + up] | (a[k + up + 1] << 32)) >> sh) & 0xFFFFFFFF for k in range(kv)]
    return loads, [(v[k // 4] >> (8 * (k % 4))) & 0xFF for k in range(n)]


def stream_bytes(sizes: np.ndarray, chosen: np.ndarray) -> list[list[tuple[int, int]]]:
    """What each lane of one warp copies in ``stream_copy`` (memcpy.cu): the ``chosen`` lanes'
    buffers (``sizes``, 32 entries at most) back to back in lane order, lane l taking stream
    bytes l, l + 32, ... below the total; per lane a list of (owner lane, byte offset) (the
    kernel's loop holds ``tlev_max`` entries a lane: no lane may get more)."""
    s = np.where(chosen, np.maximum(as_i64(sizes), 0), 0)
    start = np.cumsum(s) - s
    total = int(s.sum())
    owner = np.repeat(np.arange(len(s)), s)  # the kernel's s_owner
    lanes = []
    for lane in range(32):
        lanes.append([(int(owner[j]), int(j - start[owner[j]]))
                      for j in range(lane, total, 32)])
    return lanes


def chunk_owner(first_chunk: np.ndarray, g: np.ndarray) -> np.ndarray:
    """The queue slot that global chunk ``g`` belongs to: the last slot whose first chunk is
    at most ``g`` (the BLEV kernel's binary search)."""
    return np.searchsorted(as_i64(first_chunk), as_i64(g), side="right") - 1


def scattered(addrs: np.ndarray, sizes: np.ndarray, live: np.ndarray | None = None) -> bool:
    """``scattered`` (memcpy_copy.cuh) for one warp's buffers (32 entries at most, in lane
    order): fewer than half of the lanes find the next lane's buffer starting within a sector
    (32 bytes) after their own end; the last lane and lanes without a buffer count as near."""
    a, s = np.asarray(addrs, np.uint64), np.maximum(as_i64(sizes), 0).astype(np.uint64)
    n = len(a)
    ok = np.ones(n, bool) if live is None else np.asarray(live, bool)
    near = np.ones(n, bool)
    for k in range(n - 1):
        if ok[k]:
            near[k] = bool(a[k + 1] >= a[k] and a[k + 1] - a[k] <= s[k] + np.uint64(32))
    return 2 * int(near.sum()) < n


def word_streamed(sizes: np.ndarray, src: np.ndarray, dst: np.ndarray, classes: WarpClasses,
                  dst_scattered: bool) -> np.ndarray:
    """Which buffers ``memcpy_warp_classes`` copies through the stream of the warp's 4-byte
    words (``words`` bit 2, ``stream`` 4): in a warp whose destinations are scattered
    (:func:`scattered`), the thread-level buffers that ``word_copy`` would copy in two or more
    words: size and both addresses multiples of 4, and no single aligned move (8 bytes with an
    address not 8-byte aligned, 12 bytes, 16 bytes with an address not 16-byte aligned)."""
    s = np.maximum(as_i64(sizes), 0)
    if not (classes.words & 2 and classes.stream == 4 and dst_scattered):
        return np.zeros(len(s), bool)
    a = np.asarray(src, np.uint64) | np.asarray(dst, np.uint64)
    tiny = (s > 0) & (s <= classes.tlev_max)
    return tiny & ((a & np.uint64(3)) == 0) & (s % 4 == 0) & ~one_move(s, a)


def group_worded(sizes: np.ndarray, src: np.ndarray, dst: np.ndarray,
                 classes: WarpClasses) -> np.ndarray:
    """Which buffers the groups of ``classes.group`` lanes copy with ``group_words`` instead of
    ``group_copy`` (``words`` bit 1): group-level ones (``tlev_max`` < size <= ``sub_max``)
    of at most 8 ``group`` bytes whose addresses are not both multiples of 16."""
    s = np.maximum(as_i64(sizes), 0)
    if not classes.words & 1:
        return np.zeros(len(s), bool)
    a = np.asarray(src, np.uint64) | np.asarray(dst, np.uint64)
    sub = (s > classes.tlev_max) & (s <= min(classes.sub_max, 8 * classes.group))
    return sub & ((a & np.uint64(15)) != 0)


def group_word_lanes(n: int, src: int, dst: int, group: int,
                     max_bytes: int) -> list[dict[str, list[int]]]:
    """What each of ``group`` lanes does in ``group_words`` for ``n`` bytes (16 < n <=
    ``max_bytes``) from address ``src`` to ``dst``: per lane ``loads`` (the aligned source
    words it loads, by address), ``words`` (the destination offsets of the words it stores,
    with the two source words each is shifted from: (offset, low word, high word)) and
    ``edge`` (the offset of its head or tail byte, at most one). Lane g loads source words g,
    g + group, ... of those holding body bytes, and builds destination word g + k group from
    its own k-th word and the next lane's (lane group - 1: lane 0's next)."""
    h = (4 - dst % 4) % 4
    words, t = (n - h) // 4, (n - h) % 4
    sb = src + h
    sh = sb % 4
    sa = sb - sh
    need = words + (1 if sh and words else 0)
    k_dst = -(-(max_bytes // 4) // group)
    k_src = -(-(max_bytes // 4 + 1) // group)
    lanes = []
    for g in range(group):
        loads = [sa + 4 * (g + k * group) for k in range(k_src) if g + k * group < need]
        mine = []
        for k in range(k_dst):
            w = g + k * group
            if w < words:
                nxt = (g + 1, k) if g < group - 1 else (0, k + 1)
                mine.append((h + 4 * w, sa + 4 * (g + k * group),
                             sa + 4 * (nxt[0] + nxt[1] * group)))
        edge = [g if g < h else 4 * words + g] if g < h + t else []
        lanes.append({"loads": loads, "words": mine, "edge": edge})
    return lanes

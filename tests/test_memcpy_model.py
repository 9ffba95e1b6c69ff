"""NumPy models of the memcpy kernels' index math (no GPU): ``copy_bytes`` of memcpy.cu (head
bytes, 16-byte or shifted 8-byte loads, unrolled and remainder loops, tail), the size-class
partition and BLEV queue, the warp kernel's classes, lists and streams (``memcpy/model.py``)
and the benchmark's size and offset generators."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from warplab.lab.campaigns.memcpy.bench import MEMCPY_CAMPAIGNS, cases, make_sizes, offsets
from warplab.lab.campaigns.memcpy import ceiling_cuda
from warplab.families.memcpy import cuda, spec
from warplab.families.memcpy.cuda import DEFINES
from warplab.lab.campaigns.memcpy.model import (
    chunk_owner,
    group_word_lanes,
    group_worded,
    group_lanes,
    lane_shifted,
    lane_shifted_bytes,
    partition_model,
    scattered,
    stream_bytes,
    streamed,
    thread_pieces,
    warp_classes_model,
    word_streamed,
)
from warplab.families.memcpy.spec import (
    PR_CLASSES,
    TUNED_CLASSES,
    WARP_CLASSES,
    WARP_CLASSES_STREAM,
    WARP_CLASSES_SWEEP,
    WARP_TIERS,
    WARP_TIERS_WORDS,
    concat_plan,
)

UNROLL = DEFINES["WARPLAB_MEMCPY_UNROLL"]


def lane_indices(lanes: int, chunks: int) -> list[int]:
    """The chunk indices the unrolled loop and its remainder visit, over all lanes."""
    seen = []
    for lane in range(lanes):
        i = lane
        while i + (UNROLL - 1) * lanes < chunks:
            seen += [i + k * lanes for k in range(UNROLL)]
            i += UNROLL * lanes
        while i < chunks:
            seen.append(i)
            i += lanes
    return seen


def copy_bytes_model(mem: np.ndarray, dst: int, src: int, n: int, lanes: int) -> set[int]:
    """copy_bytes of memcpy.cu on a byte array standing for memory; returns the start
    addresses of the aligned 8- and 16-byte words it loads (byte loads are not listed)."""
    loads: set[int] = set()
    head = min((16 - dst % 16) % 16, n)
    mem[dst:dst + head] = mem[src:src + head]
    dst, src, n = dst + head, src + head, n - head
    chunks = n >> 4
    word = lambda a: int.from_bytes(mem[a:a + 8].tobytes(), "little")
    idx = lane_indices(lanes, chunks)
    assert sorted(idx) == list(range(chunks))  # every 16-byte chunk exactly once
    out = {}
    for i in idx:
        if src % 16 == 0:
            loads.add(src + 16 * i)
            out[i] = mem[src + 16 * i:src + 16 * i + 16].copy()
        else:
            mis = src & 7
            base = src - mis
            a0, a1 = word(base + 16 * i), word(base + 16 * i + 8)
            loads |= {base + 16 * i, base + 16 * i + 8}
            if mis == 0:
                lo, hi = a0, a1
            else:
                a2 = word(base + 16 * i + 16)
                loads.add(base + 16 * i + 16)
                m = (1 << 64) - 1
                lo = (a0 >> 8 * mis) | ((a1 << (64 - 8 * mis)) & m)
                hi = (a1 >> 8 * mis) | ((a2 << (64 - 8 * mis)) & m)
            out[i] = np.frombuffer(lo.to_bytes(8, "little") + hi.to_bytes(8, "little"),
                                   dtype=np.uint8)
    for i, v in out.items():  # stores after loads: sources and destinations do not overlap
        mem[dst + 16 * i:dst + 16 * i + 16] = v
    mem[dst + 16 * chunks:dst + n] = mem[src + 16 * chunks:src + n]
    return loads


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 31), st.integers(0, 31), st.integers(0, 700),
       st.sampled_from([1, 3, 32, 256]))
def test_copy_bytes_model_copies_exactly_and_reads_inside(s_off: int, d_off: int, n: int,
                                                          lanes: int) -> None:
    size = 2048
    rng = np.random.default_rng(n)
    mem = rng.integers(0, 256, size=size, dtype=np.uint8)
    src, dst = 64 + s_off, 1024 + d_off
    want = mem.copy()
    want[dst:dst + n] = mem[src:src + n]
    loads = copy_bytes_model(mem, dst, src, n, lanes)
    assert np.array_equal(mem, want)  # the buffer copied, nothing else written
    for a in loads:  # every wide load holds at least one source byte (never past the word)
        width = 16 if a % 16 == 0 and (src + min((16 - dst % 16) % 16, n)) % 16 == 0 else 8
        assert a < src + n and a + width > src, (a, src, n)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 40), st.integers(0, 20000)), max_size=1200),
       st.sampled_from([PR_CLASSES, TUNED_CLASSES]))
def test_partition_model(sizes: list[int], classes: object) -> None:
    s = np.array(sizes, dtype=np.int64)
    m = partition_model(s, classes)
    cls = classes.classify(s)
    tile = classes.tile_threads * classes.buffers_per_thread
    # every buffer in exactly one class, its own
    ids = np.concatenate([m["tlev"], m["wlev"], m["queue"]])
    assert sorted(ids.tolist()) == list(range(len(s)))
    for key, k in (("tlev", 0), ("wlev", 1), ("queue", 2)):
        assert (cls[m[key]] == k).all()
        # stable within a tile, tiles in order
        assert (np.diff(m[key]) > 0).all()
    # TLEV run ends: per tile an inclusive prefix sum of the sizes, below 2^16
    for t0 in range(0, len(s), tile):
        sel = (m["tlev"] >= t0) & (m["tlev"] < t0 + tile)
        assert np.array_equal(m["tlev_end"][sel], np.cumsum(s[m["tlev"][sel]]))
        assert (m["tlev_end"][sel] < 1 << 16).all()
    # BLEV: first chunks increase with the slot; every chunk maps back to its buffer
    n_chunks = -(-s[m["queue"]] // classes.chunk)
    assert int(m["chunks"]) == int(n_chunks.sum())
    assert np.array_equal(m["first_chunk"], np.cumsum(n_chunks) - n_chunks)
    g = np.arange(int(m["chunks"]))
    owner = chunk_owner(m["first_chunk"], g)
    assert np.array_equal(owner, np.repeat(np.arange(len(n_chunks)), n_chunks))
    off = (g - m["first_chunk"][owner]) * classes.chunk
    assert (off < s[m["queue"]][owner]).all()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.integers(-3, 40), st.integers(0, 300), st.integers(0, 70000)),
                max_size=400),
       st.sampled_from([WARP_CLASSES, WARP_CLASSES_STREAM, WARP_TIERS, WARP_TIERS_WORDS,
                        *WARP_CLASSES_SWEEP]))
def test_warp_classes_model(sizes: list[int], classes: object) -> None:
    s = np.array(sizes, dtype=np.int64)
    rng = np.random.default_rng(len(sizes))
    src, dst = (rng.integers(0, 1 << 20, size=len(s)).astype(np.uint64) for _ in range(2))
    m = warp_classes_model(s, classes, src, dst)
    cls = classes.classify(s)
    worded = group_worded(s, src, dst, classes)
    assert np.array_equal(np.flatnonzero(worded), m["group_words"])
    assert (cls[worded] == 1).all() and (classes.words & 1 or not worded.any())
    cls = np.where(worded, 5, cls)
    ids = np.concatenate([m["thread"], m["group"], m["group_words"], m["group2"], m["warp"],
                          m["queue"]])
    assert sorted(ids.tolist()) == np.flatnonzero(cls >= 0).tolist()  # empty ones: no work
    for key, k in (("thread", 0), ("group", 1), ("group2", 2), ("warp", 3), ("queue", 4),
                   ("group_words", 5)):
        assert (cls[m[key]] == k).all() and (np.diff(m[key]) > 0).all()
    assert (s[m["thread"]] <= 16).all()  # thread_copy holds at most 16 bytes
    if classes.sub2_max <= classes.sub_max:
        assert m["group2"].size == 0  # no second tier: the kernel's ballot is constant 0
    # s_list: the two tiers' and group_words' lanes never share a slot of their warp's 32
    slot = m["list_slot"]
    for w0 in range(0, len(s), 32):
        mine = slot[w0:w0 + 32]
        used = mine[mine >= 0]
        assert len(set(used.tolist())) == used.size and (used < 32).all()
        assert ((mine >= 0) == np.isin(cls[w0:w0 + 32], (1, 2, 5))).all()
    n_chunks = -(-s[m["queue"]] // classes.chunk)
    assert np.array_equal(m["first_chunk"], np.cumsum(n_chunks) - n_chunks)
    g = np.arange(int(m["chunks"]))
    owner = chunk_owner(m["first_chunk"], g)
    assert np.array_equal(owner, np.repeat(np.arange(len(n_chunks)), n_chunks))


def test_sweep_shapes_are_the_default_but_for_the_register_cap_the_loads_or_the_words() -> None:
    """The default zeroes every register array before its predicated loads (the kernel's
    ZERO 3), caps registers for 4 blocks per SM, loads its descriptors evict-first (policy
    2, its own module with its BLEV kernel) and copies in 4-byte words in neighbouring lanes
    (WORDS 3); the sweep's shapes cap them for 5, 6 and 8 blocks (the default's module), or
    load with another policy (policy 0: the base module, every other variant's; else a module
    each), or copy with no such words or parts of them (WORDS 0, 1, 2, 3: the default's
    module), and change nothing else."""
    assert (WARP_TIERS_WORDS.zeroed, WARP_TIERS_WORDS.min_blocks) == (3, 4)
    assert WARP_TIERS_WORDS.loads == 2 and cuda.DEFINES["WARPLAB_MEMCPY_LOADS"] == 0
    assert WARP_TIERS_WORDS.words == 7
    assert [(c.min_blocks, c.loads, c.words) for c in WARP_CLASSES_SWEEP] == [
        (5, 2, 7), (6, 2, 7), (8, 2, 7), (4, 0, 7), (4, 1, 7), (4, 3, 7), (4, 4, 7), (4, 6, 7),
        (4, 8, 7), (4, 10, 7), (4, 18, 7), (4, 34, 7), (4, 50, 7), (4, 66, 7), (4, 130, 7),
        (4, 2, 0), (4, 2, 1), (4, 2, 2), (4, 2, 3)]
    for c in WARP_CLASSES_SWEEP:
        assert c._replace(min_blocks=4, loads=2, words=7) == WARP_TIERS_WORDS
    mine = [c for c in WARP_CLASSES_SWEEP if c.loads == 2]
    exprs = [cuda._warp_expr(c) for c in (WARP_TIERS_WORDS, *mine)]
    assert exprs[0].endswith(", 4, 4, 3, 7>") and len(set(exprs)) == 8
    blev = cuda._blev_expr(WARP_TIERS_WORDS.chunk)
    # the default's module holds the registered variants' kernels only: the default, its
    # BLEV kernel, its via copy and the destination windows' kernels (warp_tiers_windows)
    assert cuda._expressions(2) == (exprs[0], blev, *cuda._via_exprs(WARP_TIERS_WORDS),
                                    *cuda.windows_exprs(spec.WINDOWS))
    # the tuning shapes compile into a module of their own, only when one is launched
    sweep_windows = dict.fromkeys(e for w in spec.WINDOWS_SWEEP for e in cuda.windows_exprs(w))
    assert cuda._expressions(2, sweep=True) == (*exprs[1:], blev, *sweep_windows)
    assert exprs[0] not in cuda._expressions(0) and exprs[0] in cuda._expressions(0, sweep=True)
    assert exprs[1] not in cuda._expressions(0, sweep=True)
    for k in (1, 3, 4, 6, 10, 18, 34, 50, 66):
        assert cuda._expressions(k) == ()
        policy = [cuda._warp_expr(c) for c in WARP_CLASSES_SWEEP if c.loads == k]
        assert cuda._expressions(k, sweep=True) == (*policy, blev) and len(policy) == 1
    assert ceiling_cuda.DEFINES["WARPLAB_MEMCPY_LOADS"] == WARP_TIERS_WORDS.loads
    source = (cuda.SOURCE.parent / "memcpy.cu").read_text()
    g2 = WARP_TIERS_WORDS.group2
    for b, w in ((4, 7), (5, 7), (6, 7), (8, 7), (4, 0), (4, 1), (4, 2), (4, 3)):
        assert f"WARP_CLASSES_INST(16, 8, 256, {g2}, 1024, 8192, 32768, {b}, 4, 3, {w})" in source
    assert cuda._via_exprs(WARP_TIERS_WORDS)[0] + "(" in source  # the windows path's copy


def test_warp_tiers_classes_at_the_tier_boundaries() -> None:
    """warp_tiers: thread level to 16 bytes, groups of 8 to 256, groups of 32 to 1 KiB, the
    warp loop to 8 KiB, BLEV above; warp_classes and its stream form have no second tier."""
    s = np.array([0, 1, 16, 17, 256, 257, 1024, 1025, 8192, 8193])
    for c, stream in ((WARP_TIERS, 3), (WARP_TIERS_WORDS, 4)):
        assert c.classify(s).tolist() == [-1, 0, 0, 1, 1, 2, 2, 3, 3, 4]
        assert (c.group, c.group2, c.stream) == (8, 32, stream)
    for c in (WARP_CLASSES, WARP_CLASSES_STREAM):
        assert c.tier2_max == c.sub_max and 2 not in c.classify(s).tolist()


def group_copy_tiers() -> list[tuple[int, int, int, int]]:
    """The distinct (tier, lo, hi, group) of every warp class set's group copies. The copy
    (``group_lanes``) sees nothing else of a class set, so the sets that share them (the
    sweep's variants of WARP_TIERS_WORDS differ only in loads, words and blocks) are one case."""
    seen: dict[tuple[int, int, int, int], None] = {}
    for c in (WARP_CLASSES, WARP_CLASSES_STREAM, WARP_TIERS, WARP_TIERS_WORDS,
              *WARP_CLASSES_SWEEP):
        seen.setdefault((1, c.tlev_max, c.sub_max, c.group))
        seen.setdefault((2, c.sub_max, c.tier2_max, c.group2))
    return list(seen)


@pytest.mark.parametrize("tier, lo, hi, group", group_copy_tiers())
def test_group_copy_covers_each_byte_once(tier: int, lo: int, hi: int, group: int) -> None:
    for n in range(lo + 1, hi + 1, 1 if tier == 1 else 3):
        for dst in range(16):
            lanes = group_lanes(n, dst, group, hi)
            covered = np.zeros(n, dtype=int)
            for mine in lanes:
                for off, kind in mine:
                    width = 16 if kind == "chunk" else 1
                    assert off + width <= n
                    if kind == "chunk":
                        assert (dst + off) % 16 == 0  # 16-byte stores are aligned
                    covered[off:off + width] += 1
            assert (covered == 1).all(), (n, dst)


def test_thread_copy_pieces_cover_each_byte_once_aligned() -> None:
    for n in range(1, 17):
        for src in range(32):
            for dst in (0, 4, 8, 16, 3):
                pieces = thread_pieces(n, src, dst)
                covered = np.zeros(n, dtype=int)
                for off, w in pieces:
                    assert (src + off) % w == 0 and (dst + off) % w == 0  # aligned moves
                    covered[off:off + w] += 1
                assert (covered == 1).all(), (n, src, dst)
        assert thread_pieces(n, 16, 32) == ([(0, 16)] if n == 16 else thread_pieces(n, 8, 8))


def test_concat_plan_covers_the_output_once() -> None:
    shapes = [(3, 2, 4), (3, 0, 4), (3, 5, 4)]
    p = concat_plan(shapes, 1, 8)
    covered = np.zeros(3 * 7 * 4 * 8, dtype=int)
    for o, n in zip(p.dst_offset, p.size):
        covered[o:o + n] += 1
    assert (covered == 1).all() and p.count == 6


@pytest.mark.parametrize("lo,hi,align", [(1, 8, 1), (1, 64, 4), (16, 16, 16), (0, 8, 1),
                                         (1, 65536, 16)])
@pytest.mark.parametrize("layout", ["consecutive", "shuffle"])
def test_sizes_and_offsets(lo: int, hi: int, align: int, layout: str) -> None:
    sizes = make_sizes(lo, hi, align, 1 << 16)
    assert (sizes >= lo).all() and (sizes <= hi).all() and (sizes % align == 0).all()
    off = offsets(sizes, layout)
    assert (off % align == 0).all()
    order = np.argsort(off, kind="stable")
    order = order[sizes[order] > 0]
    ends = off[order] + sizes[order]
    assert off[order][0] == 0 and (off[order][1:] == ends[:-1]).all()  # packed, no overlap
    if layout == "consecutive":
        assert (np.diff(off) >= 0).all()


def test_grid_leaves_out_cells_without_aligned_sizes() -> None:
    full = cases(MEMCPY_CAMPAIGNS["full"])
    assert not any(c.hi < c.align for c in full)
    assert len(cases(MEMCPY_CAMPAIGNS["table"])) == 24
    with pytest.raises(ValueError):
        make_sizes(1, 8, 16, 1024)


def test_streamed_buffers_are_thread_copys_byte_path() -> None:
    """stream 1 takes exactly the thread-level buffers thread_copy would copy byte by byte (an
    address not 4-byte aligned); stream 2 every thread-level one; stream 3 all but those one
    aligned move copies (1, 2, 4, 8, 16 bytes, both addresses so aligned); stream 4 those of
    stream 1 that no single aligned move copies (word-aligned ones keep word_copy); stream 0
    none."""
    n, src, dst = (a.ravel() for a in np.meshgrid(np.arange(-1, 20), np.arange(32),
                                                   np.arange(32), indexing="ij"))
    tiny = (n > 0) & (n <= 16)
    odd = ((src | dst) % 4) != 0
    single = np.isin(n, (1, 2, 4, 8, 16)) & ((src % np.maximum(n, 1)) == 0) & (
        (dst % np.maximum(n, 1)) == 0)
    assert WARP_TIERS.stream == 3 and WARP_TIERS_WORDS.stream == 4
    assert [c.stream for c in WARP_CLASSES_SWEEP] == [4] * len(WARP_CLASSES_SWEEP)
    every = WARP_CLASSES._replace(stream=2)
    for c, want in ((WARP_CLASSES, np.zeros_like(tiny)), (every, tiny),
                    (WARP_CLASSES_STREAM, tiny & odd), (WARP_TIERS, tiny & ~single),
                    (WARP_TIERS_WORDS, tiny & odd & ~single),
                    (WARP_CLASSES_SWEEP[0], tiny & odd & ~single)):
        got = streamed(n, src.astype(np.uint64), dst.astype(np.uint64), c)
        assert np.array_equal(got, want), c
    for k in np.flatnonzero(streamed(n, src.astype(np.uint64), dst.astype(np.uint64),
                                     WARP_CLASSES_STREAM)):
        assert thread_pieces(int(n[k]), int(src[k]), int(dst[k])) == [
            (j, 1) for j in range(int(n[k]))]
    # stream 4 at align 4: nothing streamed (round 5's stream 3 streamed 3-, 5- to 7-byte and
    # misaligned 8- and 16-byte buffers there)
    aligned = tiny & ~odd
    assert not streamed(n[aligned], src[aligned].astype(np.uint64),
                        dst[aligned].astype(np.uint64), WARP_TIERS_WORDS).any()
    assert streamed(n[aligned], src[aligned].astype(np.uint64),
                    dst[aligned].astype(np.uint64), WARP_TIERS).any()


def test_lanes_copy_what_the_stream_would_where_destinations_are_neighbours() -> None:
    """words bit 4: in a warp whose destinations are not scattered the byte stream takes
    nothing and lane_shifted_copy exactly what it would have taken; where they are scattered
    the stream keeps them and the lanes take none; nothing without the bit."""
    n, src, dst = (a.ravel() for a in np.meshgrid(np.arange(-1, 20), np.arange(32),
                                                   np.arange(32), indexing="ij"))
    s, d = src.astype(np.uint64), dst.astype(np.uint64)
    c = WARP_TIERS_WORDS
    assert c.words & 4
    byte_path = streamed(n, s, d, c._replace(words=3))
    assert byte_path.any()
    assert not streamed(n, s, d, c, dst_scattered=False).any()
    assert np.array_equal(lane_shifted(n, s, d, c, False), byte_path)
    assert np.array_equal(streamed(n, s, d, c, dst_scattered=True), byte_path)
    assert not lane_shifted(n, s, d, c, True).any()
    assert not lane_shifted(n, s, d, c._replace(words=3), False).any()


@settings(max_examples=400, deadline=None)
@given(st.integers(1, 16), st.integers(0, 47), st.binary(min_size=64, max_size=64))
def test_lane_shifted_copy_stores_each_source_byte(n: int, src: int, memory: bytes) -> None:
    """lane_shifted_copy's arithmetic: the bytes it stores are the source bytes in order, for
    every offset in the first word and every size up to tlev_max; it loads aligned 8-byte
    words only, each holding a byte of the buffer (never one past it: a word holding a source
    byte never leaves that byte's page), at most three."""
    tmax = WARP_TIERS_WORDS.tlev_max
    loads, got = lane_shifted_bytes(n, src, memory, tmax)
    assert got == list(memory[src:src + n])
    assert 1 <= len(loads) <= 3 and (n > 8 or len(loads) <= 2)
    for a in loads:
        assert a % 8 == 0 and a + 8 > src and a < src + n


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-2, 20), min_size=0, max_size=32),
       st.lists(st.integers(0, 63), min_size=64, max_size=64),
       st.sampled_from([WARP_CLASSES_STREAM, WARP_TIERS, WARP_TIERS_WORDS,
                        *[c for c in WARP_CLASSES_SWEEP if c.stream]]))
def test_stream_copy_covers_each_byte_once(sizes: list[int], addr: list[int],
                                           classes: object) -> None:
    """The warp's byte stream (stream_copy): every byte of every streamed buffer exactly once,
    nothing of the others, at most tlev_max bytes a lane (the kernel's loop bound)."""
    s = np.array(sizes, dtype=np.int64)
    src = np.array(addr[:len(s)], dtype=np.uint64)
    dst = np.array(addr[32:32 + len(s)], dtype=np.uint64)
    chosen = streamed(s, src, dst, classes)
    lanes = stream_bytes(s, chosen)
    covered = {}
    for mine in lanes:
        assert len(mine) <= classes.tlev_max
        for owner, off in mine:
            covered[(owner, off)] = covered.get((owner, off), 0) + 1
    want = {(b, j): 1 for b in np.flatnonzero(chosen) for j in range(int(s[b]))}
    assert covered == want


def test_scattered_tells_packed_buffers_from_shuffled_ones() -> None:
    """scattered (memcpy_copy.cuh): a warp of packed buffers (each starting where the last
    ended, or within a sector after it) is not scattered; the same buffers shuffled over 1 MiB
    are; lanes without a buffer count as near."""
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 9, size=32)
    packed = np.cumsum(sizes) - sizes + 4096
    assert not scattered(packed, sizes)
    assert not scattered(packed + 16 * np.arange(32), sizes)  # gaps under a sector
    assert scattered(rng.permutation(1 << 20)[:32].astype(np.uint64) * 32, sizes)
    assert not scattered(packed, sizes, np.arange(32) < 12)  # 20 dead lanes: near


def test_word_stream_takes_the_buffers_of_two_or_more_words() -> None:
    """The word stream (words bit 2) takes, where the warp's destinations are scattered, the
    thread-level buffers whose size and addresses are multiples of 4 and that no single
    aligned move copies: 8 bytes not both 8-byte aligned, 12, 16 not both 16-byte aligned;
    never a byte-streamed buffer; nothing where destinations are packed or without the bit."""
    n, src, dst = (a.ravel() for a in np.meshgrid(np.arange(-1, 20), np.arange(32),
                                                   np.arange(32), indexing="ij"))
    s, d = src.astype(np.uint64), dst.astype(np.uint64)
    a = src | dst
    want = ((a % 4 == 0) & ((n == 12) | ((n == 8) & (a % 8 != 0)) |
                            ((n == 16) & (a % 16 != 0))))
    assert WARP_TIERS_WORDS.words & 2
    got = word_streamed(n, s, d, WARP_TIERS_WORDS, True)
    assert np.array_equal(got, want)
    assert not (got & streamed(n, s, d, WARP_TIERS_WORDS)).any()
    assert not word_streamed(n, s, d, WARP_TIERS_WORDS, False).any()
    assert not word_streamed(n, s, d, WARP_TIERS_WORDS._replace(words=1), True).any()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-2, 20), min_size=0, max_size=32),
       st.lists(st.integers(0, 63), min_size=64, max_size=64))
def test_both_streams_fit_the_owner_array(sizes: list[int], addr: list[int]) -> None:
    """The byte stream's owners fill s_owner from the front, the word stream's from the back:
    together at most 32 tlev_max entries (each lane is in one stream at most), at most 4 words
    a lane, and the word stream covers each word of its buffers once."""
    c = WARP_TIERS_WORDS
    s = np.array(sizes, dtype=np.int64)
    src = 4 * np.array(addr[:len(s)], dtype=np.uint64)  # both kinds occur: aligned and not
    dst = np.array(addr[32:32 + len(s)], dtype=np.uint64) * np.uint64(1 + len(s) % 2)
    bytes_ = streamed(s, src, dst, c)
    words = word_streamed(s, src, dst, c, True)
    assert not (bytes_ & words).any()
    assert int(s[bytes_].sum()) + int(s[words].sum()) // 4 <= 32 * c.tlev_max
    lanes = stream_bytes(np.where(words, s // 4, 0), words)
    covered = {}
    for mine in lanes:
        assert len(mine) <= c.tlev_max // 4
        for owner, off in mine:
            covered[(owner, off)] = covered.get((owner, off), 0) + 1
    assert covered == {(b, j): 1 for b in np.flatnonzero(words) for j in range(int(s[b]) // 4)}


@settings(max_examples=300, deadline=None)
@given(st.integers(17, 64), st.integers(0, 63), st.integers(0, 63))
def test_group_words_cover_each_byte_once(n: int, src: int, dst: int) -> None:
    """group_words: every destination byte once (whole words from d's first 4-byte boundary,
    the head and tail bytes one a lane), each word from the two aligned source words holding
    its bytes, both loaded by some lane of the group where the shift needs them; no aligned
    source word loaded that holds no byte of the buffer (loads never leave the buffer's
    words); at most two words, three loads and one edge byte a lane."""
    group = WARP_TIERS_WORDS.group
    lanes = group_word_lanes(n, src, dst, group, 8 * group)
    covered = [0] * n
    loaded = {a for m in lanes for a in m["loads"]}
    for m in lanes:
        assert len(m["words"]) <= 2 and len(m["loads"]) <= 3 and len(m["edge"]) <= 1
        for off, lo, hi in m["words"]:
            assert (dst + off) % 4 == 0
            first = src + off  # the source byte of the word's first byte
            assert lo == first - first % 4 and lo in loaded
            assert hi == lo + 4 and (first % 4 == 0 or hi in loaded)
            for j in range(4):
                covered[off + j] += 1
        for off in m["edge"]:
            covered[off] += 1
    assert covered == [1] * n
    for a in loaded:
        assert a % 4 == 0 and a + 4 > src and a < src + n


def test_group_worded_buffers() -> None:
    """group_worded picks exactly the group-level buffers of at most 64 bytes whose addresses
    are not both multiples of 16; nothing without the bit."""
    n, src, dst = (a.ravel() for a in np.meshgrid(np.arange(0, 80), np.arange(0, 48, 3),
                                                   np.arange(0, 48, 2), indexing="ij"))
    want = (n > 16) & (n <= 64) & ((src | dst) % 16 != 0)
    got = group_worded(n, src.astype(np.uint64), dst.astype(np.uint64), WARP_TIERS_WORDS)
    assert np.array_equal(got, want)
    assert not group_worded(n, src.astype(np.uint64), dst.astype(np.uint64),
                            WARP_TIERS_WORDS._replace(words=2)).any()


def test_parts_per_group_fill_the_gpu_only_where_groups_are_few() -> None:
    """The warp kernel's warps per group of 32 buffers (``cuda.parts_log2``): a power of two
    of at most 8, the largest whose warps stay within PARTS_WAVES x the resident warps, and 1
    once the groups alone reach that."""
    from warplab.families.memcpy.cuda import PARTS_WAVES, parts_log2

    resident = 132 * 4 * 8  # an H100 at four blocks of eight warps per SM
    for count in (1, 31, 32, 33, 1000, 16_384, 65_536, 200_000, 262_144, 1 << 20, 1 << 27):
        groups = -(-count // 32)
        p = 1 << parts_log2(count, resident)
        assert p in (1, 2, 4, 8)
        assert p == 1 or p * groups <= PARTS_WAVES * resident
        assert p == 8 or 2 * p * groups > PARTS_WAVES * resident
    assert 1 << parts_log2(16_384, resident) == 8      # 64 MiB of 4 KiB buffers
    assert 1 << parts_log2(65_536, resident) == 4      # 64 MiB of 1 KiB buffers
    assert parts_log2(1 << 20, resident) == 0          # 1 GiB of 1 KiB buffers

"""GPU tests of the memcpy family (``pytest -m gpu`` on the GPU machine): every cuda variant x
size class x alignment x layout x buffer count against NumPy, in poisoned arenas with guard
bytes around every buffer; the public functions on CuPy arrays; CUB's helper."""
from __future__ import annotations

import functools

import numpy as np
import pytest
from conftest import clear_ran, last_ran, run_in_threads

import warplab

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)
cupy = pytest.importorskip("cupy")

VARIANTS = warplab.variants("memcpy_batched", "cuda")
POISON = 0xA5
#: size classes: TLEV, warp_classes' sub-warp groups, WLEV of both thresholds, BLEV, and a
#: log-uniform mix of all
RANGES = {"tiny": (0, 32), "sub": (17, 256), "warp": (33, 1024), "warp_tuned": (1025, 8192),
          "block": (8193, 40000), "mixed": (0, 70000)}
#: every warp's byte stream full (32 buffers of 16 bytes: 16 bytes a lane), or one short of it
FULL_STREAM = {"sixteen": (16, 16), "fifteen_sixteen": (15, 16)}
#: sizes on both sides of every class boundary (thread / groups / warp_tiers' second group
#: tier / warp loop / BLEV), drawn from this list
BOUNDARY_SIZES = (0, 1, 2, 4, 8, 15, 16, 17, 255, 256, 257, 1023, 1024, 1025, 8192, 8193)
#: the sizes whose register arrays the kernel zeroes (the sweep's register caps spill some of
#: them): the lane's words and bytes, the stream, the groups' first chunks and edge bytes
ZEROED_SIZES = (1, 2, 7, 8, 9, 16, 17, 64)
COUNTS = (0, 1, 31, 32, 33, 1000, 100_000)
BIG_COUNT_RANGES = ("tiny", "sub")  # 100,000 buffers only where the data stays small


@functools.lru_cache(maxsize=8)
def layout(rng_name: str, count: int, align: int, shuffled: bool, seed: int
           ) -> tuple[np.ndarray, np.ndarray, int]:
    """(sizes, offsets, arena bytes): sizes multiples of ``align`` (the same for every
    ``seed``: source and destination layouts hold the same buffers); every buffer starts at a
    multiple of ``align`` after a guard gap of 1..32 alignment units (drawn from ``seed``);
    shuffled packs the buffers in a random order."""
    rng = np.random.default_rng(0)
    lo, hi = {**RANGES, **FULL_STREAM, "boundary": (0, 8193), "zeroed": (1, 64)}[rng_name]
    if rng_name in ("boundary", "zeroed"):
        sizes = rng.choice(np.array(BOUNDARY_SIZES if rng_name == "boundary"
                                    else ZEROED_SIZES), size=count)
    elif rng_name == "mixed":
        sizes = np.exp(rng.uniform(0, np.log(hi + 1), size=count)).astype(np.int64) - 1
    else:
        sizes = rng.integers(lo, hi + 1, size=count)
    sizes = sizes // align * align
    rng = np.random.default_rng(seed)
    gaps = align * rng.integers(1, 33, size=count)
    order = rng.permutation(count) if shuffled else np.arange(count)
    ends = np.cumsum(sizes[order] + gaps[order])
    off = np.empty(count, dtype=np.int64)
    off[order] = ends - sizes[order]
    return sizes.astype(np.int64), off, int(ends[-1] + 64) if count else 64


def run_case(variants: list[str], rng_name: str, count: int, align: int, src_s: bool,
             dst_s: bool, configs: tuple = ()) -> None:
    """Every variant (and every ``warp_classes`` shape in ``configs``, through its launch
    plan) on one case (the expected arena built once); failures are reported together."""
    sizes, s_off, s_bytes = layout(rng_name, count, align, src_s, 1)
    _, d_off, d_bytes = layout(rng_name, count, align, dst_s, 2)
    h_src = np.random.default_rng(3).integers(0, 256, size=s_bytes, dtype=np.uint8)
    d_src = cupy.asarray(h_src)
    d_dst = cupy.empty(d_bytes, dtype=np.uint8)
    base_s, base_d = np.uint64(d_src.data.ptr), np.uint64(d_dst.data.ptr)
    src_ptrs = cupy.asarray(s_off.astype(np.uint64) + base_s)
    dst_ptrs = cupy.asarray(d_off.astype(np.uint64) + base_d)
    d_sizes = cupy.asarray(sizes)
    want = np.full(d_bytes, POISON, dtype=np.uint8)
    rel = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    want[np.repeat(d_off, sizes) + rel] = h_src[np.repeat(s_off, sizes) + rel]
    failures = []

    def check(name: str) -> None:
        bad = np.flatnonzero(d_dst.get() != want)
        if bad.size:
            failures.append(f"{name}: {bad.size} bytes wrong, first at {bad[:5]}")

    for variant in variants:
        d_dst.fill(POISON)
        clear_ran()
        warplab.memcpy_batched(src_ptrs, dst_ptrs, d_sizes, variant=variant)
        assert last_ran() == (variant or "table_walk")  # None: the default of a few buffers
        check(variant or "default")
    if configs:
        from warplab.families.memcpy.cuda import DeviceBatch, run_warp_classes

        batch = DeviceBatch(src_ptrs, dst_ptrs, d_sizes.astype(np.uint64), count, None)
        for c in configs:
            d_dst.fill(POISON)
            run_warp_classes(batch, c)
            check(f"warp_classes{tuple(c)}")
    assert not failures, failures


CASES = [(r, n, a, s, d) for r in (*RANGES, "boundary") for n in COUNTS for a in (1, 4, 16)
         for s, d in ((False, False), (True, True), (False, True))
         if n < 100_000 or r in BIG_COUNT_RANGES]


@pytest.mark.parametrize("rng_name,count,align,src_s,dst_s", CASES)
def test_variants_copy_exactly(rng_name: str, count: int, align: int, src_s: bool,
                               dst_s: bool) -> None:
    variants = [v for v in VARIANTS if v != "loop_memcpy_async" or count <= 1000
                or (align, src_s, rng_name) == (1, True, "tiny")]  # a driver call per buffer
    run_case(variants, rng_name, count, align, src_s, dst_s)


@pytest.mark.parametrize("rng_name,count,align,src_s,dst_s",
                         [c for c in CASES if 1 <= c[1] <= 32])
def test_default_of_a_few_buffers_copies_exactly(rng_name: str, count: int, align: int,
                                                 src_s: bool, dst_s: bool) -> None:
    """memcpy_batched of at most 32 buffers and no variant: the table walk's one launch."""
    run_case([None], rng_name, count, align, src_s, dst_s)


@pytest.mark.parametrize("shifts", [(0, 0), (3, 5), (8, 1), (15, 0)])
def test_table_walk_spreads_large_buffers(shifts: tuple[int, int]) -> None:
    """Buffers of many 64 KiB chunks (one of 96 MiB + 7 bytes: more chunks than blocks),
    chunk edges off the 16-byte grid on either side, a zero and a negative size, next to tiny
    ones: every byte in place, nothing else written."""
    sizes = [(96 << 20) + 7, 0, 3, 70_000, -4, 65_536, 65_537, (3 << 20) + 1]
    total = sum(max(0, n) for n in sizes)
    src = cupy.asarray(np.random.default_rng(5).integers(0, 256, total + 64, dtype=np.uint8))
    dst = cupy.full(total + 64 + 16 * len(sizes), POISON, dtype=np.uint8)
    s_off, d_off, so, do = [], [], shifts[0], shifts[1]
    for n in sizes:
        s_off.append(so)
        d_off.append(do)
        so += max(0, n)
        do += max(0, n) + 16
    want = dst.copy()
    for n, a, b in zip(sizes, s_off, d_off):
        if n > 0:
            want[b:b + n] = src[a:a + n]
    ptrs = lambda base, offs: cupy.asarray([base.data.ptr + o for o in offs], dtype=np.uint64)
    clear_ran()
    warplab.memcpy_batched(ptrs(src, s_off), ptrs(dst, d_off), cupy.asarray(sizes, np.int64))
    assert last_ran() == "table_walk"
    bad = cupy.flatnonzero(dst != want)
    assert bad.size == 0, (int(bad.size), bad[:5].get())


@pytest.mark.parametrize("rng_name,count,align,src_s,dst_s",
                         [c for c in CASES if c[1] in (1, 33, 1000, 100_000)])
def test_warp_classes_shapes_copy_exactly(rng_name: str, count: int, align: int, src_s: bool,
                                          dst_s: bool) -> None:
    """The other shapes of warp_classes (benchmarks/explore_memcpy_small.py times them)."""
    from warplab.families.memcpy.spec import WARP_CLASSES_SWEEP

    run_case([], rng_name, count, align, src_s, dst_s, configs=WARP_CLASSES_SWEEP)


@pytest.mark.parametrize("rng_name,count,align,src_s,dst_s",
                         [(r, n, a, s, d) for r in FULL_STREAM for n in (32, 33, 1000)
                          for a in (1, 4) for s, d in ((False, False), (True, True),
                                                       (False, True), (True, False))])
def test_full_byte_streams_copy_exactly(rng_name: str, count: int, align: int, src_s: bool,
                                        dst_s: bool) -> None:
    """Warps whose thread-level buffers fill the byte stream (16 bytes a lane: the kernel's
    loop bound) or nearly, misaligned (align 1) or word-aligned (align 4: streamed only by the
    shapes that stream all but single aligned moves: 16 bytes at align 4 is streamed by
    warp_tiers, word-copied by warp_tiers_words), for every shape with a stream."""
    from warplab.families.memcpy.spec import WARP_CLASSES_SWEEP

    run_case(["warp_classes", "warp_classes_stream", "warp_tiers", "warp_tiers_words"],
             rng_name, count, align, src_s, dst_s,
             configs=tuple(c for c in WARP_CLASSES_SWEEP if c.stream))


@pytest.mark.parametrize("dst_packed", [True, False])
@pytest.mark.parametrize("src_end", [False, True])
def test_misaligned_tiny_buffers_every_offset_and_size(dst_packed: bool, src_end: bool) -> None:
    """Buffers of 1-16 bytes at every source offset in its 8-byte word (sizes and offsets
    drawn independently), written back to back (their lanes copy them from aligned source
    words: words bit 4) or 64 bytes apart in a random order (the byte stream), by the default
    and every shape of the default's kernel; with ``src_end`` the last buffer's source ends
    the allocation on a misaligned byte. Every byte outside the buffers stays poisoned."""
    from warplab.families.memcpy.cuda import DeviceBatch, run_warp_classes
    from warplab.families.memcpy.spec import WARP_CLASSES_SWEEP, WARP_TIERS_WORDS

    rng = np.random.default_rng(11)
    count = 4096
    sizes = rng.integers(1, 17, size=count)
    s_off = 24 * np.arange(count) + rng.integers(0, 8, size=count)
    s_bytes = int(s_off[-1] + sizes[-1]) + (0 if src_end else 64)
    if src_end:  # the last source byte at an odd address inside its word
        sizes[-1] = 5
        s_off[-1] = 24 * (count - 1) + 2
        s_bytes = int(s_off[-1] + sizes[-1])
    if dst_packed:
        d_off = np.cumsum(sizes) - sizes + 3
    else:
        d_off = 64 * rng.permutation(count) + 7
    d_bytes = int((d_off + sizes).max()) + 64
    h_src = rng.integers(0, 256, size=s_bytes, dtype=np.uint8)
    d_src = cupy.asarray(h_src)
    d_dst = cupy.empty(d_bytes, dtype=np.uint8)
    src_ptrs = cupy.asarray(s_off.astype(np.uint64) + np.uint64(d_src.data.ptr))
    dst_ptrs = cupy.asarray(d_off.astype(np.uint64) + np.uint64(d_dst.data.ptr))
    d_sizes = cupy.asarray(sizes.astype(np.int64))
    want = np.full(d_bytes, POISON, dtype=np.uint8)
    rel = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    want[np.repeat(d_off, sizes) + rel] = h_src[np.repeat(s_off, sizes) + rel]
    assert WARP_TIERS_WORDS.words & 4
    batch = DeviceBatch(src_ptrs, dst_ptrs, d_sizes.astype(np.uint64), count, None)
    runs = [("default", lambda: warplab.memcpy_batched(src_ptrs, dst_ptrs, d_sizes))]
    runs += [(str(tuple(c)), lambda c=c: run_warp_classes(batch, c))
             for c in (WARP_TIERS_WORDS, *WARP_CLASSES_SWEEP)]
    failures = []
    for name, go in runs:
        d_dst.fill(POISON)
        go()
        bad = np.flatnonzero(d_dst.get() != want)
        if bad.size:
            failures.append(f"{name}: {bad.size} bytes wrong, first at {bad[:5]}")
    assert not failures, failures


@pytest.mark.parametrize("count", [1, 31, 32, 33, 1000, 100_000])
@pytest.mark.parametrize("align", [1, 4, 16])
@pytest.mark.parametrize("src_s,dst_s", [(False, False), (True, True), (False, True),
                                         (True, False)])
def test_sweep_shapes_copy_exactly_at_register_sizes(count: int, align: int, src_s: bool,
                                                     dst_s: bool) -> None:
    """The sweep's shapes (the default's kernel with registers capped for 5, 6 and 8 blocks
    per SM: values spilled and reloaded) beside the default on 1, 2, 7, 8, 9, 16, 17 and 64
    bytes, the sizes whose register arrays are zeroed (rounded down to the alignment; 0-byte
    buffers where that empties them), every layout, guard gaps between all buffers in a
    poisoned arena: no register may reach a byte the default would not write."""
    from warplab.families.memcpy.spec import WARP_CLASSES_SWEEP

    run_case(["warp_tiers_words"], "zeroed", count, align, src_s, dst_s,
             configs=WARP_CLASSES_SWEEP)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("shift", [(0, 0), (1, 0), (0, 7), (3, 13), (8, 0), (5, 5)])
def test_one_large_unaligned_buffer(variant: str, shift: tuple[int, int]) -> None:
    n = (24 << 20) + 13  # many BLEV chunks, a ragged end
    src = cupy.random.RandomState(0).randint(0, 256, size=n + 64, dtype=np.uint8)
    dst = cupy.full(n + 64, POISON, dtype=np.uint8)
    s, d = shift
    warplab.memcpy_batched(cupy.asarray([src.data.ptr + s], dtype=np.uint64),
                           cupy.asarray([dst.data.ptr + d], dtype=np.uint64),
                           cupy.asarray([n], dtype=np.int64), variant=variant)
    assert bool((dst[d:d + n] == src[s:s + n]).all())
    assert int(cupy.count_nonzero(dst[:d] != POISON)) == 0
    assert int(cupy.count_nonzero(dst[d + n:] != POISON)) == 0


def test_copy_batched_cupy_lists_and_dtypes() -> None:
    rng = np.random.default_rng(0)
    h = [rng.standard_normal(int(k)).astype(np.float32) for k in rng.integers(0, 3000, 500)]
    srcs = [cupy.asarray(x) for x in h]
    dsts = [cupy.empty(x.size * 4, dtype=np.uint8) for x in h]
    clear_ran()
    warplab.copy_batched(srcs, dsts)
    assert last_ran() == VARIANTS[0]
    for x, d in zip(h, dsts):
        assert np.array_equal(d.get().view(np.float32), x)


def test_copy_batched_errors_write_nothing() -> None:
    mem = cupy.arange(64, dtype=np.uint8)
    with pytest.raises(ValueError, match="overlaps"):
        warplab.copy_batched([mem[:8], cupy.ones(8, np.uint8)], [mem[4:12], mem[32:40]])
    assert bool((mem == cupy.arange(64, dtype=np.uint8)).all())
    with pytest.raises(ValueError, match="host"):
        warplab.copy_batched([mem[:8], np.zeros(8, np.uint8)], [cupy.zeros(8, np.uint8)] * 2)
    with pytest.raises(ValueError, match="C-contiguous"):
        warplab.copy_batched([mem[::2]], [cupy.zeros(32, np.uint8)])


def test_copy_batched_overlap_through_memory_cupy_does_not_own() -> None:
    """A destination on an ``UnownedMemory`` alias of a source's pool block overlaps it
    although the two arrays' memory objects differ: refused, nothing written; separate pool
    allocations copy."""
    base = cupy.arange(256, dtype=np.uint8)
    alias = cupy.ndarray((64,), np.uint8, cupy.cuda.MemoryPointer(
        cupy.cuda.UnownedMemory(base.data.ptr + 32, 64, base), 0))
    with pytest.raises(ValueError, match="overlaps"):
        warplab.copy_batched([base[:64]], [alias])
    assert bool((base == cupy.arange(256, dtype=np.uint8)).all())
    srcs = [cupy.full(n, i, np.uint8) for i, n in enumerate((64, 1000, 3))]
    dsts = [cupy.zeros(n, np.uint8) for n in (64, 1000, 3)]
    warplab.copy_batched(srcs, dsts)
    assert all(bool((d == s).all()) for s, d in zip(srcs, dsts))


def test_memcpy_batched_check_and_size_dtypes() -> None:
    src = cupy.arange(100, dtype=np.uint8)
    dst = cupy.zeros(100, dtype=np.uint8)
    p = lambda a, offs: cupy.asarray([a.data.ptr + o for o in offs], dtype=np.uint64)
    warplab.memcpy_batched(p(src, [0, 10]), p(dst, [50, 0]), cupy.asarray([5, 7], np.int32))
    assert dst[50:55].tolist() == list(range(5)) and dst[:7].tolist() == list(range(10, 17))
    dst[:] = 0
    with pytest.raises(ValueError, match="negative"):
        warplab.memcpy_batched(p(src, [0]), p(dst, [0]), cupy.asarray([-1]), check=True)
    with pytest.raises(ValueError, match="overlaps"):
        warplab.memcpy_batched(p(src, [0, 20]), p(dst, [0, 4]), cupy.asarray([8, 8]),
                               check=True)
    assert int(dst.sum()) == 0
    warplab.memcpy_batched(p(src, [0]), p(dst, [0]), cupy.asarray([-5]))  # copies nothing
    assert int(dst.sum()) == 0
    with pytest.raises(ValueError, match="entries"):
        warplab.memcpy_batched(p(src, [0]), p(dst, [0, 1]), cupy.asarray([1]))


def _big_batch(seed: int, count: int = 40) -> tuple:
    """``count`` buffers, a third of them above the warp limit (the BLEV queue), packed in
    one source and one poisoned destination arena: (src_ptrs, dst_ptrs, sizes, source, dst)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 40000, size=count)
    sizes[::3] += 8192
    off = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.uint64)
    src = cupy.asarray(rng.integers(0, 256, size=int(sizes.sum()), dtype=np.uint8))
    dst = cupy.full(int(sizes.sum()), POISON, dtype=np.uint8)
    return (cupy.asarray(off + np.uint64(src.data.ptr)),
            cupy.asarray(off + np.uint64(dst.data.ptr)), cupy.asarray(sizes), src, dst)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("count,largest", [(1025, 3 * 32768 + 7), (3000, 3 * 32768 + 7),
                                           (33_000, 12_000)])
def test_long_blev_queue_copies_exactly(variant: str, count: int, largest: int) -> None:
    """Long BLEV queues (1,025 to 33,000 queued buffers of 1-4 chunks: more chunks than the
    BLEV grid has blocks, 2 to 31 a block) between buffers the first kernel copies and ones
    of size 0 or negative (copy nothing): every byte lands, nothing else is written (checked
    on the device: a mask of the buffers' bytes from a running sum of +1 at each start and -1
    at each end)."""
    rng = np.random.default_rng(count)
    n = 2 * count
    sizes = rng.integers(8193, largest + 1, size=n)
    sizes[1::2] = rng.choice([-3, 0, 1, 17, 300, 5000], size=count)
    used = np.maximum(sizes, 0)
    off = np.concatenate([[0], np.cumsum(used + 16)[:-1]]).astype(np.int64)
    total = int(used.sum() + 16 * n)
    src = cupy.random.RandomState(count).randint(0, 256, size=total, dtype=np.uint8)
    dst = cupy.full(total, POISON, dtype=np.uint8)
    warplab.memcpy_batched(cupy.asarray(off.astype(np.uint64) + np.uint64(src.data.ptr)),
                           cupy.asarray(off.astype(np.uint64) + np.uint64(dst.data.ptr)),
                           cupy.asarray(sizes), variant=variant)
    edges = cupy.zeros(total + 1, dtype=np.int32)
    cupy.add.at(edges, cupy.asarray(off), 1)
    cupy.add.at(edges, cupy.asarray(off + used), -1)
    inside = cupy.cumsum(edges[:-1]) > 0
    assert int(inside.sum()) == int(used.sum())
    assert bool(cupy.where(inside, dst == src, dst == POISON).all())


def test_pointer_form_queue_across_calls_streams_and_threads() -> None:
    """The BLEV queue is the stream's and its kernels zero it: back-to-back calls (short path
    and full path) on one stream, a second stream, and four host threads sharing the legacy
    stream each copy exactly their own batch (each call into a destination poisoned again on
    the same stream, so a call that lost its queue leaves poison)."""
    import threading

    batches = [_big_batch(s) for s in range(6)]
    for i, (sp, dp, n, src, dst) in enumerate(batches[:3]):
        for _ in range(3):
            dst.fill(POISON)
            warplab.memcpy_batched(sp, dp, n, variant=None if i % 2 else "warp_tiers_words")
    with cupy.cuda.Stream(non_blocking=True):
        sp, dp, n, src, dst = batches[3]
        warplab.memcpy_batched(sp, dp, n)
        warplab.memcpy_batched(*batches[4][:3])
    cupy.cuda.Device().synchronize()
    for sp, dp, n, src, dst in batches[:5]:
        assert bool((dst == src).all())
    threaded = [_big_batch(10 + k, count=200) for k in range(4)]
    cupy.cuda.Device().synchronize()

    def work(k: int) -> None:
        for _ in range(20):
            threaded[k][4].fill(POISON)
            warplab.memcpy_batched(*threaded[k][:3])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    cupy.cuda.Device().synchronize()
    for sp, dp, n, src, dst in threaded:
        assert bool((dst == src).all())


def test_copy_batched_plans_across_keys_threads_and_streams() -> None:
    """Four host threads, each on a stream of its own, alternate keys (the address table,
    the pinned ring through ``CopyConfig``, a named variant; sizes up to the BLEV class) and
    each copies exactly its own buffers, call after call."""
    from warplab.families.memcpy.api import copy_pairs
    from warplab.families.memcpy.plan import CopyConfig

    ring = CopyConfig(table_buffers=0)

    def work(k: int) -> None:
        rng = np.random.default_rng(k)
        with cupy.cuda.Stream(non_blocking=True) as stream:
            for i in range(30):
                sizes = rng.integers(0, 20000 if i % 2 else 4096, size=int(rng.integers(1, 48)))
                hs = [rng.integers(0, 256, int(n), dtype=np.uint8) for n in sizes]
                srcs = [cupy.asarray(h) for h in hs]
                dsts = [cupy.full(int(n), POISON, dtype=np.uint8) for n in sizes]
                if i % 3 == 0:
                    copy_pairs(srcs, dsts, None, None, ring)
                else:
                    warplab.copy_batched(srcs, dsts, variant=None if i % 3 == 1 else "warp_classes")
                stream.synchronize()
                for h, d in zip(hs, dsts):
                    assert np.array_equal(d.get(), h)

    run_in_threads(work, 4)


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_concatenate_and_split_on_cupy(axis: int | None) -> None:
    rng = np.random.default_rng(1)
    shape = {0: lambda k: (k, 3, 5), 1: lambda k: (3, k, 5), -1: lambda k: (3, 5, k),
             None: lambda k: (k, 2)}[axis]
    h = [rng.integers(0, 100, size=shape(k)).astype(np.int16) for k in (0, 1, 7, 300)]
    clear_ran()
    got = warplab.concatenate([cupy.asarray(x) for x in h], axis=axis)
    assert last_ran() == VARIANTS[0]
    want = np.concatenate(h, axis=axis)
    assert isinstance(got, cupy.ndarray) and np.array_equal(got.get(), want)
    ax = 0 if axis is None else axis
    cuts = [1, 3, 3]
    pieces = warplab.split(cupy.asarray(want), cuts, axis=ax, copy=True)
    for g, w in zip(pieces, np.split(want, cuts, axis=ax)):
        assert g.flags.c_contiguous and np.array_equal(g.get(), w)


def test_no_host_synchronisation_in_copy_batched() -> None:
    """A batch queued behind a long kernel returns before the kernel ends."""
    import time

    from warplab.lab.harness.timing import _stream_hold

    srcs = [cupy.ones(1000, np.uint8) for _ in range(100)]
    dsts = [cupy.zeros(1000, np.uint8) for _ in range(100)]
    warplab.copy_batched(srcs, dsts)  # compile, allocate
    cupy.cuda.get_current_stream().synchronize()
    hold = _stream_hold()
    hold.block()
    t0 = time.perf_counter()
    warplab.copy_batched(srcs, dsts)
    elapsed = time.perf_counter() - t0
    hold.release()
    cupy.cuda.get_current_stream().synchronize()
    assert elapsed < 0.9 * hold.TIMEOUT_S, "copy_batched waited for the device"
    assert all(bool((d == 1).all()) for d in dsts[:5])


def test_cub_helper_matches() -> None:
    from warplab.lab.campaigns.memcpy import cub_helper

    why = cub_helper.probe()
    if why:
        pytest.skip(why)
    sizes = np.random.default_rng(2).integers(0, 5000, size=777)
    src = cupy.random.RandomState(1).randint(0, 256, size=int(sizes.sum()), dtype=np.uint8)
    dst = cupy.full(int(sizes.sum()), POISON, dtype=np.uint8)
    off = (np.cumsum(sizes) - sizes).astype(np.uint64)
    s = cupy.asarray(off + np.uint64(src.data.ptr))
    d = cupy.asarray(off + np.uint64(dst.data.ptr))
    cub_helper.cub_memcpy_batched(s, d, cupy.asarray(sizes.astype(np.uint64)), sizes.size)
    cupy.cuda.get_current_stream().synchronize()
    assert bool((dst == src).all())


@pytest.mark.large
def test_buffer_over_4_gib() -> None:
    n = (1 << 32) + 4099
    free = cupy.cuda.runtime.memGetInfo()[0]
    if free < 2 * n + (1 << 30):
        pytest.skip("not enough device memory")
    src = cupy.empty(n + 3, dtype=np.uint8)
    src[-4099:] = 7
    src[:4096] = 9
    dst = cupy.zeros(n, dtype=np.uint8)
    warplab.copy_batched([src[3:]], [dst])
    assert int(dst[0]) == 9 and bool((dst[-4096:] == 7).all())


def test_planned_grid_on_the_device() -> None:
    """The --full grid's runner on small cells with every target (the per-buffer ones in the
    witness cell): draws on the device pack the buffers, every record verified, the fast
    targets held back to back."""
    from warplab.lab.campaigns.memcpy.bench import Case, targets
    from warplab.lab.campaigns.memcpy.cells import layout_offsets
    from warplab.lab.campaigns.memcpy.grid import SizeSet, run_planned
    from warplab.lab.campaigns.memcpy.plan import SLOW, plan_cells

    ss = SizeSet(cupy, 1, 64, 4, 1 << 20)
    for layout, seed in (("consecutive", 0), ("shuffle", 2), ("shuffle", 3)):
        off = layout_offsets(cupy, ss.sizes, layout, seed).get()
        sizes = ss.sizes.get()
        order = np.argsort(off, kind="stable")
        assert off[order][0] == 0 and (off[order][1:] == (off + sizes)[order][:-1]).all()
    tgts, _ = targets(None, True)
    grid = [Case(1, 64, "shuffle", "shuffle", 4, 1 << 20),
            Case(65536, 65536, "consecutive", "consecutive", 1, 1 << 23)]
    cells = plan_cells(grid, [t.name for t in tgts], auto_total=False, runs=3, warmup=1)
    with cupy.cuda.Stream(non_blocking=True):
        records, _, complete = run_planned(cells, tgts, {})
    assert complete and len(records) == sum(len(p.targets) for p in cells)
    bad = [(r["variant"], r["params"]["case"], r["error"]) for r in records
           if not r["verified"] and r["provider"] in ("warplab", "cub")]  # the runtime's
    assert not bad, bad  # cudaMemcpyBatchAsync needs CUDA 13: not this test's subject
    fast = [r for r in records if r["variant"] not in SLOW]
    assert all(r["params"]["held"] and r["params"]["timing"] == "back_to_back" for r in fast)

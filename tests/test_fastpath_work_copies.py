"""Work counters of ``copy_batched`` on device arrays (no GPU; ``fake_cupy``, the size-class
and table kernels replaced by models that copy what each kernel copies): a warm call of 8
buffers of 1 KiB is one launch whose parameter is the address table (``args_table``): no
allocation, no H2D copy, no event, no copy plan, no NumPy address tables, no NumPy overlap
sweep, no dispatch. With the table path off (or past its limits) the ring path: one
allocation (the device table), one H2D copy from the pinned ring, one event record and wait,
and one launch, no queue workspace or its memset, no second kernel (no buffer above the tuned
WLEV limit). Larger buffers still take both kernels. Results equal
the full path's (a named variant) and the sources' bytes; the full path's errors are raised
again with the same message; the Python overlap sweep agrees with NumPy's and brute force."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import warplab
from fake_cupy import WORK, Dev, count_launch, dev, install
from warplab.core import device, fastpath, registry
from warplab.families.memcpy import api, cuda, spec, table_cuda, transfer


def _table(args: tuple) -> list[tuple[int, int, int]]:
    src, dst, sizes, n = (np.asarray(a).view(np.ndarray) for a in args[:4])
    return [(int(s), int(d), int(z)) for s, d, z in zip(src[:int(n)], dst[:int(n)],
                                                        sizes.view(np.int64)[:int(n)])]


def _kernel_on(expr: str, device: int, loads: int = 0) -> object:
    classes = {c.chunk: c for c in (spec.PR_CLASSES, spec.TUNED_CLASSES)}

    def tiles(grid: tuple, block: tuple, args: tuple) -> None:  # also warp_classes' first
        count_launch()
        params = [int(v) for v in expr.split("<")[1].rstrip(">").split(",")]
        if "warp_classes" in expr:  # <TMAX, G, SUB_MAX, G2, SUB2_MAX, WLEV_MAX, CHUNK, ...>
            c = classes[params[6]]._replace(wlev_max=params[5])
        else:                       # <threads, per thread, TLEV_MAX, WLEV_MAX, CHUNK>
            c = classes[params[4]]
        queued = False
        for s, d, n in _table(args):
            if n > c.wlev_max:
                queued = True
            elif n > 0:
                ctypes.memmove(d, s, n)
        assert not queued or int(args[4]) != 0  # BLEV buffers need the queue

    def blev(grid: tuple, block: tuple, args: tuple) -> None:
        count_launch()
        c = classes[int(expr.split("<")[1].rstrip(">"))]
        src, dst, sizes = (np.asarray(a).view(np.ndarray) for a in args[:3])
        for s, d, n in zip(src, dst, sizes.view(np.int64)):
            if n > c.wlev_max:
                ctypes.memmove(int(d), int(s), int(n))

    return tiles if "tiles" in expr or "warp_classes" in expr else blev


def _table_kernel(source, expr: str, options=()) -> object:
    assert expr == "memcpy_table" and source == table_cuda.SOURCE

    def run(grid: tuple, block: tuple, args: tuple) -> None:
        count_launch()
        t, n = args
        assert isinstance(t, np.ndarray) and t.dtype == table_cuda.TABLE and t.size == 1
        assert grid == (int(n),) and block == (table_cuda.DEFINES["MEMCPY_TABLE_BLOCK"],)
        for s, d, z in zip(*(t[k][0][:int(n)] for k in ("src", "dst", "size"))):
            ctypes.memmove(int(d), int(s), int(z))

    return run


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch):
    g = install(monkeypatch)
    monkeypatch.setattr(cuda, "_kernel_on", _kernel_on)
    monkeypatch.setattr(table_cuda, "get_kernel", _table_kernel)
    monkeypatch.setattr(registry, "cuda_available", lambda: True)  # named variants
    monkeypatch.setattr(device, "cuda_available", lambda: True)  # memcpy_batched's device=
    monkeypatch.setattr(transfer, "_RINGS", {})
    # fake device arrays subclass NumPy's: the full path must not take them for host arrays
    monkeypatch.setattr(transfer, "is_host", lambda a: isinstance(a, np.ndarray)
                        and not isinstance(a, Dev))
    fastpath.clear()
    yield g
    fastpath.clear()


def _buffers(sizes: list[int], seed: int = 0) -> tuple[list[Dev], list[Dev]]:
    rng = np.random.default_rng(seed)
    return ([dev(rng.integers(0, 256, n, dtype=np.uint8)) for n in sizes],
            [dev(np.full(n, 0xA5, np.uint8)) for n in sizes])


def _same(srcs: list[Dev], dsts: list[Dev]) -> None:
    for s, d in zip(srcs, dsts):
        np.testing.assert_array_equal(np.asarray(d).view(np.uint8), np.asarray(s).view(np.uint8))


def _spy_planning(monkeypatch) -> list[str]:
    planned: list[str] = []
    for mod, name in ((api, "pairwise_plan"), (api, "host_pointers"), (spec, "overlap"),
                      (registry, "choose"), (transfer, "send_batch"), (api, "send_batch")):
        real = getattr(mod, name)
        monkeypatch.setattr(mod, name, lambda *a, _n=name, _r=real, **k:
                            planned.append(_n) or _r(*a, **k))
    return planned


def test_warm_copy_batched_is_one_launch(gpu, monkeypatch) -> None:
    srcs, dsts = _buffers([1024] * 8)
    warplab.copy_batched(srcs, dsts)
    planned = _spy_planning(monkeypatch)
    for d in dsts:
        d[...] = 0xA5
    WORK.clear()
    with warplab.record_variants() as ran:
        warplab.copy_batched(srcs, dsts)
    assert dict(WORK) == {"launch": 1}
    assert planned == [] and [r.variant for r in ran] == ["args_table"]
    _same(srcs, dsts)


@pytest.mark.parametrize("sizes,table", [
    ([1024] * 32, True), ([1024] * 33, False), ([table_cuda.MAX_BYTES, 0, 1], True),
    ([table_cuda.MAX_BYTES + 1], False), ([0], True), ([3, 5, 7, 16, 17, 31, 4097], True)])
def test_table_limits(gpu, sizes: list[int], table: bool) -> None:
    srcs, dsts = _buffers(sizes, seed=len(sizes))
    # odd offsets: addresses of every alignment
    srcs = [dev(np.concatenate([np.zeros(i % 5, np.uint8), s]))[i % 5:]
            for i, s in enumerate(srcs)]
    with warplab.record_variants() as ran:
        warplab.copy_batched(srcs, dsts)
    assert ([r.variant for r in ran] == ["args_table"]) == table
    _same(srcs, dsts)


def test_warm_copy_batched_ring_work(gpu, monkeypatch) -> None:
    monkeypatch.setattr(api, "TABLE_BUFFERS", 0)  # the ring path (main's before the table)
    srcs, dsts = _buffers([1024] * 8)
    for _ in range(transfer.RING):  # every slot of the ring used once: its event exists
        warplab.copy_batched(srcs, dsts)
    planned: list[str] = []
    for mod, name in ((api, "pairwise_plan"), (api, "host_pointers"), (spec, "overlap"),
                      (registry, "choose")):
        real = getattr(mod, name)
        monkeypatch.setattr(mod, name, lambda *a, _n=name, _r=real, **k:
                            planned.append(_n) or _r(*a, **k))
    for d in dsts:
        d[...] = 0xA5
    WORK.clear()
    with warplab.record_variants() as ran:
        warplab.copy_batched(srcs, dsts)
    assert dict(WORK) == {"empty": 1, "h2d": 1, "record": 1, "sync": 1, "launch": 1}
    assert planned == [] and [r.variant for r in ran] == ["warp_tiers_windows"]
    _same(srcs, dsts)


@pytest.mark.parametrize("variant", [None, "size_classes_tuned", "size_classes"])
def test_size_classes_and_launches(gpu, monkeypatch, variant) -> None:
    monkeypatch.setattr(api, "TABLE_BUFFERS", 0)
    srcs, dsts = _buffers([70000])
    warplab.copy_batched(srcs, dsts, variant=variant)  # makes this stream's BLEV queue
    for sizes, launches in (([0, 32, 33, 1024, 8192], 1), ([8192, 8193], 2),
                            ([40000, 1, 0, 70000], 2), ([0, 0], 1)):
        srcs, dsts = _buffers(sizes, seed=len(sizes))
        WORK.clear()
        warplab.copy_batched(srcs, dsts, variant=variant)
        limit = (spec.PR_CLASSES if variant == "size_classes" else spec.TUNED_CLASSES).wlev_max
        two = max(sizes) > limit
        # two kernels: the stream's queue, zeroed once when made (cupy.zeros: one memset)
        assert WORK["launch"] == (2 if two else 1) and WORK["memset"] == 0
        if variant != "size_classes":
            assert WORK["launch"] == launches
        _same(srcs, dsts)


def test_pointer_form_keeps_both_kernels(gpu) -> None:
    srcs, dsts = _buffers([1024] * 4)
    ptrs = [dev(np.array([a.data.ptr for a in arrays], np.uint64)) for arrays in (srcs, dsts)]
    sizes = dev(np.array([a.nbytes for a in srcs], np.int64))
    WORK.clear()
    warplab.memcpy_batched(ptrs[0], ptrs[1], sizes)  # sizes on the device: not known here
    # the stream's BLEV queue made: slots for 4 buffers, the counter zeroed once (cupy.zeros)
    assert WORK["launch"] == 2 and WORK["memset"] == 1 and WORK["empty"] == 2
    _same(srcs, dsts)
    for d in dsts:
        d[...] = 0
    WORK.clear()
    warplab.memcpy_batched(ptrs[0], ptrs[1], sizes)  # warm: the kernels zero the counter
    assert dict(WORK) == {"launch": 2}
    _same(srcs, dsts)
    for d in dsts:
        d[...] = 0
    WORK.clear()
    warplab.memcpy_batched(ptrs[0], ptrs[1], sizes, check=True)  # read back: now known
    assert WORK["launch"] == 1 and WORK["memset"] == 0
    _same(srcs, dsts)


def _raised(fn, *a, **k) -> tuple[type, str]:
    with pytest.raises(Exception) as info:  # noqa: PT011  (compared below)
        fn(*a, **k)
    return type(info.value), str(info.value)


def test_errors_same_as_full_path(gpu) -> None:
    buf = dev(np.zeros(4096, np.uint8))
    srcs, dsts = _buffers([64, 64])
    other = dev(np.zeros(64, np.uint8))
    other.device_id = 1
    bad = [([buf[:1024]], [buf[512:1536]]),                  # a destination over its source
           ([buf[:64], srcs[0]], [buf[2000:2064], buf[2032:2096]]),  # two destinations meet
           ([buf[:64]], [buf[:64]]),                         # in place
           (srcs, dsts[:1]),                                 # lengths
           (srcs, [dsts[0], dev(np.zeros(63, np.uint8))]),   # byte sizes
           (srcs, [dsts[0], dev(np.zeros(128, np.uint8))[::2]]),  # not contiguous
           (srcs, [dsts[0], np.zeros(64, np.uint8)]),        # host and device mixed
           (srcs, [dsts[0], other])]                         # another GPU
    for s, d in bad:
        warplab.copy_batched(*_buffers([64, 64]))  # warm
        want = _raised(warplab.copy_batched, s, d, variant="size_classes_tuned")
        assert _raised(warplab.copy_batched, s, d) == want
    # sources may overlap each other (as in the full path)
    warplab.copy_batched([buf[:64], buf[32:96]], [dsts[0], dsts[1]])


def _pointers(sizes: list[int], seed: int = 0) -> tuple[list[Dev], list[Dev], Dev, Dev]:
    srcs, dsts = _buffers(sizes, seed)
    src, dst = (dev(np.array([a.data.ptr for a in arrays], np.uint64)) for arrays in (srcs, dsts))
    return srcs, dsts, src, dst


def test_pointer_form_errors_and_conversions_after_a_warm_call(gpu) -> None:
    """Every input the short path does not take goes to the full path, which raises what it
    always raised (checked against a named variant: the full path) or converts (int32
    sizes, a strided view): the bytes copied are the same."""
    srcs, dsts, src, dst = _pointers([64, 100, 3])
    n = dev(np.array([64, 100, 3], np.int64))
    bad = [(src, dst, n[:2]),                                  # lengths
           (src, dst, dev(np.array([64.0, 100.0, 3.0]))),      # not integers
           (src, dst.astype(np.uint32), n),                     # 4-byte addresses
           (dev(np.stack([src, src])), dst, n),                 # 2-D
           (src, dst, np.array([64, 100, 3], np.int64)),        # host sizes
           (src.get(), dst, n)]                                 # host addresses
    for s, d, z in bad:
        warplab.memcpy_batched(src, dst, n)  # warm
        want = _raised(warplab.memcpy_batched, s, d, z, variant="warp_tiers_windows")
        assert _raised(warplab.memcpy_batched, s, d, z) == want
    for d in dsts:
        d[...] = 0
    with warplab.record_variants() as ran:
        warplab.memcpy_batched(src, dst, dev(np.array([64, 100, 3], np.int32)))  # widened
    assert [r.variant for r in ran] == ["warp_tiers_windows"]
    _same(srcs, dsts)
    wide = dev(np.zeros(6, np.uint64))
    wide[::2] = src
    for d in dsts:
        d[...] = 0
    warplab.memcpy_batched(wide[::2], dst, n)  # a strided view: made contiguous
    _same(srcs, dsts)


def test_pointer_form_choice_follows_the_registry(gpu, monkeypatch) -> None:
    """The cached choice is keyed by the registry's generation: a variant registered after
    warm calls runs on the next call."""
    srcs, dsts, src, dst = _pointers([16, 16])
    n = dev(np.array([16, 16], np.int64))
    warplab.memcpy_batched(src, dst, n)
    monkeypatch.setattr(registry, "_REGISTRY", {k: dict(v) for k, v in
                                                registry._REGISTRY.items()})
    seen = []
    registry.register("memcpy_batched", "spy", backend="cuda", rank=-1,
                      bytes_moved=spec.bytes_moved)(lambda b: seen.append(b.count))
    with warplab.record_variants() as ran:
        warplab.memcpy_batched(src, dst, n)
    assert seen == [2] and [r.variant for r in ran] == ["spy"]


def test_stream_queue_slots(gpu, monkeypatch) -> None:
    """The BLEV queue keeps slots for up to KEEP_SLOTS buffers (grown by doubling, then
    reused: no allocation), larger batches take slots per call; one queue per stream."""
    monkeypatch.setattr(cuda, "KEEP_SLOTS", 64)
    q = cuda._Queue()
    caps = []
    for count in (3, 3, 5, 40, 41, 64, 65, 1000, 10):
        WORK.clear()
        keep, first, ids = q.slots_for(count)
        caps.append((q.capacity, WORK["empty"]))
        assert ids - first >= 8 * count and keep.nbytes >= 12 * count
    assert caps == [(3, 1), (3, 0), (6, 1), (40, 1), (64, 1), (64, 0), (64, 1), (64, 1),
                    (64, 0)]
    assert np.asarray(q.counter).tolist() == [0, 0]
    big = [8193, 9000]  # both queued for the BLEV kernel
    srcs, dsts, src, dst = _pointers(big)
    for stream in (7, 7, 9):
        for d in dsts:
            d[...] = 0
        gpu.stream = stream
        warplab.memcpy_batched(src, dst, dev(np.array(big, np.int64)))
        _same(srcs, dsts)
    assert len(cuda._QUEUES) == 2


def _brute(src: list[int], dst: list[int], sizes: list[int]) -> bool:
    iv = [(a, a + n, False) for a, n in zip(src, sizes)] + \
        [(a, a + n, True) for a, n in zip(dst, sizes)]
    return any(max(a, c) < min(b, d) and (p or q) for i, (a, b, p) in enumerate(iv)
               for (c, d, q) in iv[i + 1:])


@given(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 60), st.integers(0, 12)),
                min_size=1, max_size=12))
@settings(max_examples=300, deadline=None)
def test_overlap_sweep_matches_numpy_and_brute_force(bufs: list) -> None:
    src, dst, sizes = (list(v) for v in zip(*bufs))
    want = _brute(src, dst, sizes)
    assert spec.overlap_sweep(src, dst, sizes) == want
    s = np.array(sizes, np.int64)
    lo, hi = np.array(src, np.int64), np.array(dst, np.int64)
    assert spec.overlap(lo, lo + s, hi, hi + s) == want
    assert spec.overlaps(np.array(src, np.uint64), np.array(dst, np.uint64),
                         np.array(sizes, np.uint64)) == want

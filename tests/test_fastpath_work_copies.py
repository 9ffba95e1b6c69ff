"""The batched copies' one planned path on device arrays (no GPU; ``fake_cupy``, the
size-class and table kernels replaced by models that copy what each kernel copies): results
equal the sources' bytes and a named variant's; a warm call reuses its plan (8 buffers of
1 KiB: one launch whose parameter is the address table, ``args_table``; with the table off
through ``CopyConfig``: one allocation, one H2D copy from the pinned ring, one event record and
wait, one launch); every key component gives its own plan; errors are raised with the same
message by every call and never cached; threads share plans; the Python overlap sweep agrees
with NumPy's and brute force."""
from __future__ import annotations

import ctypes
import os

import numpy as np
import pytest
from conftest import run_in_threads
from fake_cupy import WORK, Dev, count_launch, dev, install
from hypothesis import given, settings
from hypothesis import strategies as st

import warplab
from warplab.core import device, fastpath, registry
from warplab.families.memcpy import api, blev_queue, cuda, spec, table_cuda, transfer
from warplab.families.memcpy.plan import CopyConfig

RING = CopyConfig(table_buffers=0)  # the pinned ring and the registry's variant at every size


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
    assert expr in ("memcpy_table", "memcpy_table_walk") and source == table_cuda.SOURCE
    if expr == "memcpy_table_walk":
        return _walk

    def run(grid: tuple, block: tuple, args: tuple) -> None:
        count_launch()
        t, n = args
        assert isinstance(t, np.ndarray) and t.dtype == table_cuda.TABLE and t.size == 1
        assert grid == (int(n),) and block == (table_cuda.DEFINES["MEMCPY_TABLE_BLOCK"],)
        for s, d, z in zip(*(t[k][0][:int(n)] for k in ("src", "dst", "size"))):
            ctypes.memmove(int(d), int(s), int(z))

    return run


def _walk(grid: tuple, block: tuple, args: tuple) -> None:
    """memcpy_table_walk: the device table's buffers (a negative size copies nothing)."""
    count_launch()
    assert block == (table_cuda.DEFINES["MEMCPY_TABLE_BLOCK"],)
    assert grid == (table_cuda.WALK_BLOCKS_PER_SM * 4,)  # the fake GPU's 4 SMs
    src, dst, sizes = (np.asarray(a).view(np.ndarray) for a in args[:3])
    assert int(args[3]) == src.size <= table_cuda.MAX_BUFFERS
    for s, d, n in zip(src, dst, sizes.view(np.int64)):
        if n > 0:
            ctypes.memmove(int(d), int(s), int(n))


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


def _plans() -> int:
    return fastpath.stats()["memcpy.plan"]


def test_warm_copy_batched_is_one_launch(gpu) -> None:
    srcs, dsts = _buffers([1024] * 8)
    warplab.copy_batched(srcs, dsts)
    plans = _plans()
    for d in dsts:
        d[...] = 0xA5
    WORK.clear()
    with warplab.record_variants() as ran:
        warplab.copy_batched(srcs, dsts)
    assert dict(WORK) == {"launch": 1}  # no allocation, no copy, no event
    assert _plans() == plans and [r.variant for r in ran] == ["args_table"]
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


def test_warm_copy_batched_ring_work(gpu) -> None:
    srcs, dsts = _buffers([1024] * 8)
    for _ in range(transfer.RING):  # every slot of the ring used once: its event exists
        api.copy_pairs(srcs, dsts, None, None, RING)
    plans = _plans()
    for d in dsts:
        d[...] = 0xA5
    WORK.clear()
    with warplab.record_variants() as ran:
        api.copy_pairs(srcs, dsts, None, None, RING)
    assert dict(WORK) == {"empty": 1, "h2d": 1, "record": 1, "sync": 1, "launch": 1}
    assert _plans() == plans and [r.variant for r in ran] == ["warp_tiers_windows"]
    _same(srcs, dsts)


@pytest.mark.parametrize("variant", [None, "size_classes_tuned", "size_classes"])
def test_size_classes_and_launches(gpu, variant) -> None:
    srcs, dsts = _buffers([70000])
    api.copy_pairs(srcs, dsts, variant, None, RING)  # makes this stream's BLEV queue
    for sizes, launches in (([0, 32, 33, 1024, 8192], 1), ([8192, 8193], 2),
                            ([40000, 1, 0, 70000], 2), ([0, 0], 1)):
        srcs, dsts = _buffers(sizes, seed=len(sizes))
        WORK.clear()
        api.copy_pairs(srcs, dsts, variant, None, RING)
        limit = (spec.PR_CLASSES if variant == "size_classes" else spec.TUNED_CLASSES).wlev_max
        two = max(sizes) > limit
        # two kernels: the stream's queue, zeroed once when made (cupy.zeros: one memset)
        assert WORK["launch"] == (2 if two else 1) and WORK["memset"] == 0
        if variant != "size_classes":
            assert WORK["launch"] == launches
        _same(srcs, dsts)


def test_pointer_form_of_a_few_buffers_is_one_launch(gpu) -> None:
    """Up to MAX_BUFFERS buffers: the walk's one launch, nothing allocated or zeroed, cold or
    warm; with ``check`` the same launch after the host's read-back."""
    srcs, dsts = _buffers([1024, 5, 70_000, 0])
    ptrs = [dev(np.array([a.data.ptr for a in arrays], np.uint64)) for arrays in (srcs, dsts)]
    sizes = dev(np.array([a.nbytes for a in srcs], np.int64))
    for check in (False, False, True):
        for d in dsts:
            d[...] = 0
        WORK.clear()
        with registry.record_variants() as ran:
            warplab.memcpy_batched(ptrs[0], ptrs[1], sizes, check=check)
        assert WORK["launch"] == 1 and WORK["memset"] == 0 and WORK["empty"] == 0
        assert [r.variant for r in ran] == ["table_walk"]
        _same(srcs, dsts)


def test_pointer_form_keeps_both_kernels(gpu) -> None:
    n = table_cuda.MAX_BUFFERS + 1
    srcs, dsts = _buffers([1024] * n)
    ptrs = [dev(np.array([a.data.ptr for a in arrays], np.uint64)) for arrays in (srcs, dsts)]
    sizes = dev(np.array([a.nbytes for a in srcs], np.int64))
    WORK.clear()
    warplab.memcpy_batched(ptrs[0], ptrs[1], sizes)  # sizes on the device: not known here
    # the stream's BLEV queue made: slots for the buffers, the counter zeroed once (cupy.zeros)
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
        assert _raised(warplab.copy_batched, s, d) == want  # never cached
    # sources may overlap each other (as in the full path)
    warplab.copy_batched([buf[:64], buf[32:96]], [dsts[0], dsts[1]])


def _c_reader() -> None:
    """Skip where the C reader of the pairs is not built (fail under CI, where the package
    build must have built it)."""
    if transfer._ext is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the C helper is not built under CI: {transfer._WHY}")
        pytest.skip(f"the C helper is not built: {transfer._WHY}")


def test_the_c_reader_builds_the_launch_table_or_declines(gpu) -> None:
    """``transfer.device_table``: three rows of max(n, 32) uint64 (sources, destinations,
    sizes, zeros after the n-th), the largest and total sizes, the device; None for any pair
    it does not take (the general path then raises or copies), nothing written."""
    _c_reader()
    for sizes in ([64, 1000, 0, 3], list(range(1, 41))):
        srcs, dsts = _buffers(sizes)
        table, largest, total, where = transfer.device_table(srcs, dsts)
        rows = max(len(sizes), table_cuda.MAX_BUFFERS)
        t = np.frombuffer(table, np.uint64).reshape(3, rows)
        want = [[a.data.ptr for a in srcs], [a.data.ptr for a in dsts], sizes]
        assert t[:, :len(sizes)].tolist() == want and not t[:, len(sizes):].any()
        assert (largest, total, where) == (max(sizes), sum(sizes), 0)
        assert [r.tolist() for r in table_cuda.rows(table, len(sizes))] == want
    srcs, dsts = _buffers([64, 64])
    buf = dev(np.zeros(256, np.uint8))
    other = dev(np.zeros(64, np.uint8))
    other.device_id = 1
    declined = [(srcs, [dsts[0]]),                                 # lengths
                (srcs, [dsts[0], other]),                          # another GPU
                ([], []),                                          # empty
                (srcs, [dsts[0], np.zeros(64, np.uint8)]),         # a host array
                (srcs, [dsts[0], dev(np.zeros(128, np.uint8))[::2]]),  # not contiguous
                (srcs, [dsts[0], dev(np.zeros(32, np.uint16))[:31]]),  # 62 bytes for 64
                (srcs, [dsts[0], srcs[1]]),                        # a destination is a source
                ([buf[:64], buf[64:128]], [buf[32:96], buf[128:192]]),  # dst on a source
                ([buf[:64], buf[64:128]], [buf[128:192], buf[160:224]])]  # dsts overlap
    for s, d in declined:
        assert transfer.device_table(list(s), list(d)) is None
    assert transfer.device_table([buf[:64]], [buf[64:128]]) is not None  # adjacent: apart


class _Unowned:
    """A memory object that is not CuPy's own allocation (another library's memory through
    DLPack, ``cupy.cuda.UnownedMemory``)."""


@pytest.mark.parametrize("reader", ["c", "python"])
def test_overlaps_are_found_by_address_whatever_owns_the_memory(gpu, monkeypatch, reader) -> None:
    """Destinations on allocations of their own copy; a destination on memory another library
    owns that overlaps a source is refused, nothing written; adjacent views of one allocation
    copy. The same answers from the C reader of the pairs and from the general path."""
    if reader == "python":
        monkeypatch.setattr(transfer, "_ext", None)
    else:
        _c_reader()
    buf = dev(np.arange(256, dtype=np.uint8))
    srcs, dsts = _buffers([64, 64, 64])
    warplab.copy_batched(srcs, dsts)
    _same(srcs, dsts)
    ptr = buf.data + 32
    ptr.mem = _Unowned()
    alias = Dev((64,), np.uint8, ptr)  # buf[32:96] under another allocation object
    with pytest.raises(ValueError, match="overlaps"):
        warplab.copy_batched([buf[:64]], [alias])
    with pytest.raises(ValueError, match="overlaps"):
        warplab.copy_batched([buf[:64], buf[128:192]], [buf[192:256], buf[160:224]])
    assert np.array_equal(np.asarray(buf), np.arange(256, dtype=np.uint8))  # nothing written
    warplab.copy_batched([buf[:64]], [buf[64:128]])
    assert np.array_equal(np.asarray(buf[64:128]), np.arange(64, dtype=np.uint8))


def _pointers(sizes: list[int], seed: int = 0) -> tuple[list[Dev], list[Dev], Dev, Dev]:
    srcs, dsts = _buffers(sizes, seed)
    src, dst = (dev(np.array([a.data.ptr for a in arrays], np.uint64)) for arrays in (srcs, dsts))
    return srcs, dsts, src, dst


def test_pointer_form_errors_and_conversions_after_a_warm_call(gpu) -> None:
    """Inputs the kernels cannot read as they are raise what a named variant's call raises
    (after a warm call of good arrays) or are converted (int32 sizes, a strided view): the
    bytes copied are the same."""
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
    assert [r.variant for r in ran] == ["table_walk"]
    _same(srcs, dsts)
    wide = dev(np.zeros(6, np.uint64))
    wide[::2] = src
    for d in dsts:
        d[...] = 0
    warplab.memcpy_batched(wide[::2], dst, n)  # a strided view: made contiguous
    _same(srcs, dsts)


def test_pointer_form_choice_follows_the_registry(gpu, monkeypatch) -> None:
    """Plans are keyed by the registry's generation: a variant registered after warm calls
    runs on the next call (batches of more buffers than the walk takes)."""
    sizes = [16] * (table_cuda.MAX_BUFFERS + 1)
    srcs, dsts, src, dst = _pointers(sizes)
    n = dev(np.array(sizes, np.int64))
    warplab.memcpy_batched(src, dst, n)
    monkeypatch.setattr(registry, "_REGISTRY", {k: dict(v) for k, v in
                                                registry._REGISTRY.items()})
    seen = []
    registry.register("memcpy_batched", "spy", backend="cuda", rank=-1,
                      bytes_moved=spec.bytes_moved)(lambda b: seen.append(b.count))
    with warplab.record_variants() as ran:
        warplab.memcpy_batched(src, dst, n)
    assert seen == [len(sizes)] and [r.variant for r in ran] == ["spy"]


def test_stream_queue_slots(gpu, monkeypatch) -> None:
    """The BLEV queue keeps slots for up to KEEP_SLOTS buffers (grown by doubling, then
    reused: no allocation), larger batches take slots per call; one queue per stream."""
    monkeypatch.setattr(blev_queue, "KEEP_SLOTS", 64)
    q = blev_queue._Queue()
    caps = []
    for count in (3, 3, 5, 40, 41, 64, 65, 1000, 10):
        WORK.clear()
        keep, first, ids = q.slots_for(count)
        caps.append((q.capacity, WORK["empty"]))
        assert ids - first >= 8 * count and keep.nbytes >= 12 * count
    assert caps == [(3, 1), (3, 0), (6, 1), (40, 1), (64, 1), (64, 0), (64, 1), (64, 1),
                    (64, 0)]
    assert np.asarray(q.counter).tolist() == [0, 0]
    big = [8193, 9000] + [16] * table_cuda.MAX_BUFFERS  # two queued for the BLEV kernel
    srcs, dsts, src, dst = _pointers(big)
    for stream in (7, 7, 9):
        for d in dsts:
            d[...] = 0
        gpu.stream = stream
        warplab.memcpy_batched(src, dst, dev(np.array(big, np.int64)))
        _same(srcs, dsts)
    assert len(blev_queue._QUEUES) == 2


def test_every_key_component_has_its_own_plan(gpu) -> None:
    """Count, size class, variant, device= and config each give a plan of their own; the
    same key reuses one (and copies the same bytes); a variant and the table off agree."""
    calls = [(([1024] * 8,), {}), (([1024] * 8,), {}),             # the same key: one plan
             (([1024] * 9,), {}),                                   # count
             (([1024] * 7 + [4096],), {}),                          # largest buffer's class
             (([1024] * 8,), {"variant": "warp_classes"}),          # variant
             (([1024] * 8,), {"device": "cuda"}),                   # device=
             (([1024] * 8,), {"config": RING})]                     # config
    grown = []
    for (sizes,), kw in calls:
        srcs, dsts = _buffers(sizes, seed=len(grown))
        before = _plans()
        with warplab.record_variants() as ran:
            if "config" in kw:
                api.copy_pairs(srcs, dsts, None, None, kw["config"])
            else:
                warplab.copy_batched(srcs, dsts, **kw)
        grown.append(_plans() - before)
        _same(srcs, dsts)
        want = kw.get("variant", "warp_tiers_windows" if kw else "args_table")
        assert [r.variant for r in ran] == [want]
    assert grown == [1, 0, 1, 1, 1, 1, 1]


def test_plans_per_device(gpu) -> None:
    """A plan holds the table's launch on its device: another current device builds its own
    (the kernel asked for on that device)."""
    asked = []
    real = table_cuda.get_kernel
    table_cuda.get_kernel = lambda *a, **k: asked.append(gpu.device) or real(*a, **k)
    try:
        for device_id in (0, 0, 1, 1, 0):
            gpu.device = device_id
            srcs, dsts = _buffers([64] * 4)
            warplab.copy_batched(srcs, dsts)
            _same(srcs, dsts)
    finally:
        table_cuda.get_kernel = real
    assert asked == [0, 1]


def test_host_arrays_take_the_same_plans(gpu) -> None:
    """NumPy arrays: the cpu variant through a plan of the same cache, reused when warm."""
    rng = np.random.default_rng(3)
    srcs = [rng.integers(0, 256, n, dtype=np.uint8) for n in (5, 0, 300)]
    for i in range(2):
        dsts = [np.zeros(a.size, np.uint8) for a in srcs]
        before = _plans()
        with warplab.record_variants() as ran:
            warplab.copy_batched(srcs, dsts)
        assert _plans() - before == (1 - i) and [r.variant for r in ran] == ["numpy"]
        for s, d in zip(srcs, dsts):
            np.testing.assert_array_equal(d, s)


def test_concatenate_and_split_reuse_their_plans(gpu) -> None:
    rng = np.random.default_rng(4)
    hs = [rng.integers(0, 100, (3, k)).astype(np.int16) for k in (1, 0, 7, 300)]
    for i in range(2):
        before = _plans()
        with warplab.record_variants() as ran:
            got = warplab.concatenate([dev(h) for h in hs], axis=1)
            pieces = warplab.split(got, [2, 5], axis=1, copy=True)
        assert _plans() - before == 2 * (1 - i)
        assert [r.variant for r in ran] == ["warp_tiers_windows"] * 2
        want = np.concatenate(hs, axis=1)
        np.testing.assert_array_equal(np.asarray(got), want)
        for g, w in zip(pieces, np.split(want, [2, 5], axis=1)):
            np.testing.assert_array_equal(np.asarray(g), w)
    with pytest.raises(np.exceptions.AxisError):
        warplab.concatenate([dev(h) for h in hs], axis=2)
    with pytest.raises(np.exceptions.AxisError):  # never cached
        warplab.concatenate([dev(h) for h in hs], axis=2)


def test_pointer_form_plan_per_layout(gpu) -> None:
    """Each dtype and layout of the arrays has its plan (int32 sizes: widened on every call);
    a warm call of 8-byte sizes is the walk's one launch alone."""
    srcs, dsts, src, dst = _pointers([64, 100, 3])
    grown = []
    for dtype in (np.int64, np.int64, np.int32, np.int32, np.int64):
        n = dev(np.array([64, 100, 3], dtype))
        for d in dsts:
            d[...] = 0
        before = _plans()
        WORK.clear()
        warplab.memcpy_batched(src, dst, n)
        _same(srcs, dsts)
        grown.append(_plans() - before)
    assert grown == [1, 0, 1, 0, 0] and dict(WORK) == {"launch": 1}


def test_bad_config_raises(gpu) -> None:
    srcs, dsts = _buffers([8])
    with pytest.raises(ValueError, match="table_buffers must be 0..32"):
        api.copy_pairs(srcs, dsts, None, None, CopyConfig(table_buffers=33))


def test_threads_share_plans(gpu) -> None:
    """Threads calling with one key and with keys of their own copy their own bytes."""
    def worker(i: int) -> None:
        for k in range(20):
            sizes = [64 * (1 + i)] * 4 if k % 2 else [1024] * 8
            srcs, dsts = _buffers(sizes, seed=100 * i + k)
            if k % 3 == 0:
                api.copy_pairs(srcs, dsts, None, None, RING)
            else:
                warplab.copy_batched(srcs, dsts)
            _same(srcs, dsts)

    run_in_threads(worker, 4)


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

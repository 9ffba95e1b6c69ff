"""GPU tests of destination windows (``warp_tiers_windows``, ``memcpy_windows.cuh``): batches
the count kernel groups (tiny buffers scattered far apart over 2^26 to 2^28 bytes; up to 2^29
where the sources are scattered too or the buffers hold at most 8 bytes; from 2^25 where the
sources are scattered or the buffers hold more than 8 bytes) and batches it does not (back to
back, a smaller or wider span, shuffled only locally, larger buffers),
every destination byte against NumPy in a poisoned arena, the header's verdict read back to
show which path ran, and the tally left zero for the stream's next call."""
from __future__ import annotations

import numpy as np
import pytest

import warplab

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)
cupy = pytest.importorskip("cupy")

from warplab.core import fastpath  # noqa: E402
from warplab.families.memcpy import cuda as mc  # noqa: E402
from warplab.families.memcpy import blev_queue, spec, windows  # noqa: E402

POISON = 0x5A


def arena(sizes: np.ndarray, align: int, shuffled: bool | int, gap: int, seed: int
          ) -> tuple[np.ndarray, int]:
    """Offsets of the buffers (each after a gap of align..gap bytes, multiples of align) and
    the arena's bytes; ``shuffled`` an int k: shuffled within runs of k consecutive buffers."""
    rng = np.random.default_rng(seed)
    n = sizes.size
    gaps = align * rng.integers(1, max(2, gap // align), size=n)
    if shuffled is True or shuffled is False:
        order = rng.permutation(n) if shuffled else np.arange(n)
    else:
        order = np.lexsort((rng.random(n), np.arange(n) // shuffled))
    ends = np.cumsum(sizes[order] + gaps[order])
    off = np.empty(n, dtype=np.int64)
    off[order] = ends - sizes[order]
    return off, int(ends[-1]) + 64


def copy_and_check(sizes: np.ndarray, align: int, src_s: bool, dst_s: bool | int, gap: int,
                   largest: int | None = None, shape: spec.WindowsShape | None = None,
                   overlap: bool = windows.OVERLAP) -> int:
    """Copy through ``run_windows`` (the public call when neither ``largest`` nor ``shape`` is
    given and ``overlap`` is the default) and compare every byte of the destination arena;
    returns the header's verdict (the window shift + 1, 0 when not grouped)."""
    s_off, s_bytes = arena(sizes, align, src_s, gap, 1)
    d_off, d_bytes = arena(sizes, align, dst_s, gap, 2)
    h_src = np.random.default_rng(3).integers(0, 256, size=s_bytes, dtype=np.uint8)
    src = cupy.asarray(h_src)
    dst = cupy.full(d_bytes, POISON, dtype=np.uint8)
    sp = cupy.asarray(s_off.astype(np.uint64) + np.uint64(src.data.ptr))
    dp = cupy.asarray(d_off.astype(np.uint64) + np.uint64(dst.data.ptr))
    zs = cupy.asarray(sizes.astype(np.uint64))
    if largest is None and shape is None and overlap == windows.OVERLAP:
        warplab.memcpy_batched(sp, dp, zs, variant="warp_tiers_windows")
    else:
        windows.run_windows(mc.DeviceBatch(sp, dp, zs, sizes.size, None, largest),
                            w=shape or spec.WINDOWS, overlap=overlap)
    want = np.full(d_bytes, POISON, dtype=np.uint8)
    rel = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    want[np.repeat(d_off, sizes) + rel] = h_src[np.repeat(s_off, sizes) + rel]
    bad = np.flatnonzero(dst.get() != want)
    assert bad.size == 0, f"{bad.size} bytes wrong, first at {bad[:5]}"
    q = blev_queue._QUEUES.get((cupy.cuda.runtime.getDevice(), fastpath.current_stream()[1]))
    state = q.windows.get()
    tally = state[5:].view(np.uint32)
    assert not tally.any(), "the tally must be zero after a call"
    return int(state[3])


N = spec.WINDOWS_MIN_COUNT + 50_000
SCATTER_GAP = 150  # 80-100 MiB of destination for 1.1 M buffers: 2^26 to 2^27 bytes
NARROW_GAP = 80    # 45-60 MiB: 2^25 to 2^26 bytes


def tiny_sizes(align: int) -> np.ndarray:
    """N sizes of 0-8 bytes in multiples of ``align`` (seeded by it); 16 bytes each at 16."""
    if align == 16:
        return np.full(N, 16)
    return np.random.default_rng(align).integers(0, 9, size=N) // align * align


@pytest.mark.parametrize("align", [1, 4, 16])
@pytest.mark.parametrize("src_s", [False, True])
def test_tiny_scattered_batches_are_grouped_and_exact(align: int, src_s: bool) -> None:
    sizes = tiny_sizes(align)
    verdict = copy_and_check(sizes, align, src_s, True, SCATTER_GAP)
    assert verdict > 0, "a tiny batch scattered over 80 MiB must be grouped"


@pytest.mark.parametrize(("align", "src_s", "grouped"), [
    (1, False, False),   # consecutive sources, a mean of at most 8 bytes: copied as they are
    (4, False, False),
    (1, True, True),     # scattered sources
    (16, False, True),   # buffers of more than 8 bytes
])
def test_spans_under_2_26_bytes_grouped_by_sources_and_sizes(align: int, src_s: bool,
                                                             grouped: bool) -> None:
    sizes = tiny_sizes(align)
    verdict = copy_and_check(sizes, align, src_s, True, NARROW_GAP)
    assert (verdict > 0) == grouped


def test_grouped_batch_with_large_buffers_uses_the_blev_queue() -> None:
    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 9, size=N)
    sizes[rng.choice(N, 12, replace=False)] = rng.integers(8193, 40000, size=12)
    sizes[rng.choice(N, 1000, replace=False)] = 0
    assert copy_and_check(sizes, 1, True, True, SCATTER_GAP) > 0


def test_grouped_without_the_blev_launch_when_the_host_knows_the_largest() -> None:
    sizes = np.random.default_rng(8).integers(1, 33, size=N)
    assert copy_and_check(sizes, 1, False, True, SCATTER_GAP, largest=32) > 0


@pytest.mark.parametrize("case", ["consecutive", "small_span", "large_buffers", "local",
                                  "wide_span"])
def test_batches_not_grouped_are_copied_through_the_header(case: str) -> None:
    rng = np.random.default_rng(9)
    if case == "consecutive":    # destinations back to back
        verdict = copy_and_check(rng.integers(1, 9, size=N), 1, True, False, 2)
    elif case == "small_span":   # scattered, but within 2^25 bytes (about 28 MB)
        verdict = copy_and_check(rng.integers(1, 9, size=N), 1, True, True, 40)
    elif case == "local":        # over 80 MiB, shuffled within runs of about 1 MiB
        verdict = copy_and_check(rng.integers(1, 9, size=N), 1, True, 12_000, SCATTER_GAP)
    elif case == "wide_span":    # scattered over about 660 MB: above 2^29 bytes
        verdict = copy_and_check(rng.integers(1, 9, size=N), 1, True, True, 1200)
    else:                        # scattered, a mean size above WINDOWS_MEAN_MAX
        verdict = copy_and_check(rng.integers(50, 100, size=N), 1, True, True, SCATTER_GAP)
    assert verdict == 0


@pytest.mark.parametrize(("sizes", "src_s", "grouped"), [
    ("1-8", False, True),   # consecutive sources, a mean of at most 8 bytes
    ("1-8", True, True),
    ("16", True, True),     # scattered sources
    ("16", False, False),   # consecutive sources of 16 bytes: copied as they are
])
def test_spans_above_2_28_bytes_grouped_by_sources_and_sizes(sizes: str, src_s: bool,
                                                            grouped: bool) -> None:
    # destinations scattered over about 440 MB (2^28 to 2^29 bytes)
    rng = np.random.default_rng(13)
    z = rng.integers(1, 9, size=N) if sizes == "1-8" else np.full(N, 16)
    verdict = copy_and_check(z, 1, src_s, True, 800)
    assert (verdict > 0) == grouped


@pytest.mark.parametrize("grouped", [False, True])
def test_plain_and_overlapped_launches_copy_the_same(grouped: bool) -> None:
    sizes = np.random.default_rng(11).integers(1, 9, size=N)
    gap = SCATTER_GAP if grouped else 2
    for overlap in (False, True):
        assert (copy_and_check(sizes, 1, True, grouped, gap, overlap=overlap) > 0) == grouped


def test_arrays_written_by_the_kernel_just_before_the_call() -> None:
    # the count kernel, launched to overlap the stream's previous kernel, must wait for the
    # kernels that wrote the source bytes and the three arrays
    sizes = np.random.default_rng(12).integers(1, 9, size=N)
    s_off, s_bytes = arena(sizes, 1, False, 2, 1)
    d_off, d_bytes = arena(sizes, 1, True, SCATTER_GAP, 2)
    rel = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    src = cupy.empty(s_bytes, dtype=np.uint8)
    dst = cupy.empty(d_bytes, dtype=np.uint8)
    s_rel, d_rel = (cupy.asarray(o.astype(np.uint64)) for o in (s_off, d_off))
    z_one = cupy.asarray(sizes.astype(np.uint64))
    for k in range(3):
        dst.fill(POISON)
        cupy.cuda.Device().synchronize()
        src[...] = (cupy.arange(s_bytes, dtype=np.uint32) * np.uint32(7 + 2 * k)).astype(np.uint8)
        sp, dp = s_rel + np.uint64(src.data.ptr), d_rel + np.uint64(dst.data.ptr)
        warplab.memcpy_batched(sp, dp, z_one * np.uint64(1))
        h_src = src.get()
        want = np.full(d_bytes, POISON, dtype=np.uint8)
        want[np.repeat(d_off, sizes) + rel] = h_src[np.repeat(s_off, sizes) + rel]
        bad = np.flatnonzero(dst.get() != want)
        assert bad.size == 0, f"pass {k}: {bad.size} bytes wrong, first at {bad[:5]}"


def test_calls_on_two_streams_and_below_the_least_count() -> None:
    sizes = np.random.default_rng(10).integers(1, 9, size=N)
    with cupy.cuda.Stream(non_blocking=True):
        assert copy_and_check(sizes, 1, True, True, SCATTER_GAP) > 0
    assert copy_and_check(sizes, 1, True, True, SCATTER_GAP) > 0
    small = np.random.default_rng(11).integers(1, 9, size=spec.WINDOWS_MIN_COUNT - 1)
    copy_and_check(small, 1, True, True, SCATTER_GAP)  # below the least count: the plain copy


@pytest.mark.parametrize("shape", spec.WINDOWS_SWEEP)
def test_sweep_shapes_group_exactly(shape: spec.WindowsShape) -> None:
    sizes = np.random.default_rng(12).integers(0, 17, size=N)
    assert copy_and_check(sizes, 1, True, True, SCATTER_GAP, shape=shape) > 0

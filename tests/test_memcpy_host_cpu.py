"""The cpu backend's own run of host batches (``memcpy/host.py``): the C helper's checks and
copies, or (where it is not built) NumPy's copies where the whole-list checks prove the call
safe; the general path (and its errors) for everything else, results identical either way."""
from __future__ import annotations

import os

import numpy as np
import pytest

import warplab as wl
from warplab.families.memcpy import host


@pytest.fixture(params=["c", "python"])
def impl(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both runs of host batches: the C helper (skipped where it is not built, except under
    CI, where the package build must have built it) and the Python checks."""
    if request.param == "c" and host._ext is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the C helper is not in use under CI: {host.status()}")
        pytest.skip(host.status())
    if request.param == "python":
        monkeypatch.setattr(host, "_ext", None)
    return str(request.param)


def test_status_says_which_run() -> None:
    assert ("in C" in host.status()) == (host._ext is not None)


def _pairs(k: int = 5) -> tuple[list[np.ndarray], list[np.ndarray]]:
    rng = np.random.default_rng(1)
    return [rng.random(7) for _ in range(k)], [np.zeros(7) for _ in range(k)]


def test_fresh_pairs_take_numpys_copies_and_are_recorded(impl: str) -> None:
    srcs, dsts = _pairs()
    assert host.copy_pairs(srcs, dsts)
    for s, d in zip(srcs, dsts):
        assert np.array_equal(s, d)
    srcs, dsts = _pairs()
    with wl.record_variants() as ran:
        wl.copy_batched(srcs, dsts)
    assert [tuple(r) for r in ran] == [("memcpy_batched", "numpy", "cpu")]
    assert all(np.array_equal(s, d) for s, d in zip(srcs, dsts))


def test_views_of_other_arrays_as_sources_are_copied(impl: str) -> None:
    big = np.arange(40.0)
    srcs = [big[0:7], big[10:17], big[20:27].copy()]
    dsts = [np.zeros(7) for _ in srcs]
    assert host.copy_pairs(srcs, dsts)
    assert all(np.array_equal(s, d) for s, d in zip(srcs, dsts))


@pytest.mark.parametrize("case", ["src_view_of_dst", "src_is_dst", "dst_twice", "dst_view",
                                  "read_only_src_ok", "fortran_dst", "shape_differs",
                                  "transposed_shape", "dtype_differs", "structured",
                                  "bytes_source_view"])
def test_what_the_checks_send_to_the_general_path(case: str, impl: str) -> None:
    srcs, dsts = _pairs(3)
    if case == "src_view_of_dst":
        srcs[1] = dsts[0][:]
    elif case == "src_is_dst":
        srcs[2] = dsts[1]
    elif case == "dst_twice":
        dsts[2] = dsts[0]
    elif case == "dst_view":
        dsts[0] = np.zeros(14)[:7]
    elif case == "read_only_src_ok":
        srcs[0].flags.writeable = False
        assert host.copy_pairs(srcs, dsts)
        return
    elif case == "fortran_dst":
        srcs = [np.ones((2, 3))]
        dsts = [np.zeros((2, 3), order="F")]
    elif case == "shape_differs":
        dsts[0] = np.zeros((7, 1))
    elif case == "transposed_shape":
        srcs, dsts = [np.ones((2, 3)), np.ones(4)], [np.zeros((3, 2)), np.zeros(4)]
    elif case == "dtype_differs":
        dsts[0] = np.zeros(7, dtype=np.int64)
    elif case == "structured":
        dt = np.dtype({"names": ["a"], "formats": ["<u2"], "offsets": [0], "itemsize": 4})
        srcs, dsts = [np.ones(3, dt)], [np.zeros(3, dt)]
    elif case == "bytes_source_view":
        srcs[0] = np.frombuffer(memoryview(dsts[1]), dtype=np.float64)
    # The C helper copies bytes between any C-contiguous buffers of equal size that do not
    # overlap (what the general path does); the Python checks take only same-shaped pairs of
    # one numeric dtype into destinations owning their memory.
    overlap = case in ("src_view_of_dst", "src_is_dst", "dst_twice", "bytes_source_view")
    refused = overlap or case == "fortran_dst" or impl == "python"
    before = [d.copy() for d in dsts]
    assert host.copy_pairs(srcs, dsts) == (not refused)
    if refused:
        assert all(np.array_equal(b, d) for b, d in zip(before, dsts))  # nothing written
    else:
        assert all(s.tobytes() == d.tobytes() for s, d in zip(srcs, dsts))


@pytest.mark.parametrize("case", ["fresh", "dst_twice", "src_is_dst", "src_view_of_dst"])
def test_many_pairs_hash_rotated_identities(case: str, impl: str) -> None:
    """From ``_ROTATED_IDS_MIN`` pairs on the identity set holds ``object.__hash__``: the same
    decisions as with ``id``."""
    srcs, dsts = _pairs(host._ROTATED_IDS_MIN + 3)
    if case == "dst_twice":
        dsts[-1] = dsts[7]
    elif case == "src_is_dst":
        srcs[-2] = dsts[5]
    elif case == "src_view_of_dst":
        srcs[9] = dsts[-1][:]
    before = [d.copy() for d in dsts]
    assert host.copy_pairs(srcs, dsts) == (case == "fresh")
    if case == "fresh":
        assert all(np.array_equal(s, d) for s, d in zip(srcs, dsts))
    else:
        assert all(np.array_equal(b, d) for b, d in zip(before, dsts))  # nothing written


def test_general_path_results_unchanged(impl: str) -> None:
    """Byte copies across dtypes and shapes, and a structured dtype's padding, still go
    through the general path byte for byte."""
    dt = np.dtype({"names": ["a"], "formats": ["<u2"], "offsets": [0], "itemsize": 4})
    src = np.frombuffer(bytes(range(12)), dtype=dt).copy()
    dst = np.zeros(3, dt)
    wl.copy_batched([src, np.arange(6, dtype=np.int32)], [dst, np.zeros(3, np.int64)])
    assert dst.tobytes() == src.tobytes()


def test_overlapping_view_of_a_destination_is_refused(impl: str) -> None:
    srcs, dsts = _pairs(2)
    srcs[1] = dsts[0][:]
    with pytest.raises(ValueError, match="overlap"):
        wl.copy_batched(srcs, dsts[::-1])


def test_concatenate_and_split_host_results_match_numpy() -> None:
    rng = np.random.default_rng(2)
    arrays = [rng.random((k, 3)) for k in (1, 4, 2)]
    out = wl.concatenate(arrays)
    assert np.array_equal(out, np.concatenate(arrays)) and out.dtype == np.float64
    mixed = wl.concatenate([np.arange(3, dtype=np.int32), np.arange(2.0)])
    assert mixed.dtype == np.float64
    with pytest.raises(wl.InvalidValueError):
        wl.concatenate([np.zeros(2), np.zeros((2, 2))])
    with pytest.raises(TypeError):
        wl.concatenate([np.array([object()]), np.zeros(1)])
    a = rng.random((6, 4))[:, ::2]
    pieces = wl.split(a, 3, copy=True)
    assert all(p.flags.c_contiguous and p.base is None for p in pieces)
    assert all(np.array_equal(p, q) for p, q in zip(pieces, np.split(a, 3)))
    with pytest.raises(ValueError):
        wl.split(np.zeros(7), 2, copy=True)


@pytest.mark.parametrize("device", [None, "cpu"])
def test_the_cpu_backend_named_runs_as_the_default(device: str | None, impl: str) -> None:
    """``device="cpu"`` on NumPy arrays is the default's call: the same copies, results,
    records and errors (the host run where its checks pass, the general path's errors
    where they do not)."""
    srcs, dsts = _pairs()
    with wl.record_variants() as ran:
        wl.copy_batched(srcs, dsts, device=device)
        out = wl.concatenate(srcs, device=device)
        pieces = wl.split(out, 5, copy=True, device=device)
    assert [tuple(r) for r in ran] == [("memcpy_batched", "numpy", "cpu")] * 3
    assert all(np.array_equal(s, d) for s, d in zip(srcs, dsts))
    assert np.array_equal(out, np.concatenate(srcs))
    assert all(np.array_equal(p, s) for p, s in zip(pieces, srcs))
    srcs, dsts = _pairs(2)
    srcs[1] = dsts[0][:]
    with pytest.raises(ValueError, match="overlap"):
        wl.copy_batched(srcs, dsts[::-1], device=device)
    with pytest.raises(wl.InvalidValueError):
        wl.concatenate([np.zeros(2), np.zeros((2, 2))], device=device)
    with pytest.raises(ValueError):
        wl.split(np.zeros(7), 2, copy=True, device=device)


@pytest.mark.parametrize("case", ["object", "object_field", "list", "subclass", "short",
                                  "size_differs", "read_only_dst", "partial_overlap", "empty"])
def test_the_c_helper_refuses_what_it_cannot_copy(case: str, impl: str) -> None:
    """Python objects, non-arrays, subclasses, unequal lists or sizes, read-only or overlapping
    destinations: refused with nothing written (the general path raises); zero-size pairs
    anywhere in the batch are copied around."""
    srcs, dsts = _pairs(3)
    if case == "object":
        srcs[1], dsts[1] = np.array([object()] * 7), np.empty(7, dtype=object)
    elif case == "object_field":
        dt = np.dtype([("a", "f8"), ("o", "O")])
        srcs[1], dsts[1] = np.zeros(2, dt), np.zeros(2, dt)
    elif case == "list":
        srcs[2] = list(range(7))
    elif case == "subclass":
        dsts[0] = np.zeros(7).view(np.matrix)
    elif case == "short":
        srcs = srcs[:2]
    elif case == "size_differs":
        dsts[2] = np.zeros(6)
    elif case == "read_only_dst":
        dsts[1].flags.writeable = False
    elif case == "partial_overlap":
        buf = np.zeros(20)
        dsts[0], dsts[1] = buf[0:7], buf[5:12]
    elif case == "empty":
        srcs[1], dsts[1] = np.zeros(0), np.zeros(0)
    before = [d.copy() for d in dsts]
    took = host.copy_pairs(srcs, dsts)
    assert took == (case == "empty")
    if took:
        assert all(s.tobytes() == d.tobytes() for s, d in zip(srcs, dsts))
    else:
        assert all(np.array_equal(b, d) for b, d in zip(before, dsts))  # nothing written


def test_the_c_helper_copies_bytes_across_dtypes_and_large_batches(impl: str) -> None:
    """Any equal byte sizes (the general path's byte copy), and a batch over the size from
    which the helper copies without the GIL."""
    rng = np.random.default_rng(3)
    srcs = [rng.random(1 << 17), np.arange(6, dtype=np.int32),
            rng.random((3, 4)).astype(np.float32)]
    dsts = [np.zeros(1 << 17), np.zeros(3, np.int64), np.zeros(12, np.int32)]
    wl.copy_batched(srcs, dsts)
    assert all(s.tobytes() == d.tobytes() for s, d in zip(srcs, dsts))


def test_the_helpers_exact_type_check(impl: str) -> None:
    """``exact``: every element of a list or tuple an exact ``ndarray`` (what NumPy's functions
    are called without their dispatch on); concatenate's results match NumPy's either way."""
    a = np.arange(3.0)
    sub = a.view(np.matrix)
    ext = host._ext
    if impl == "c":
        assert ext is not None
        assert ext.exact(np.ndarray, [a, a]) and ext.exact(np.ndarray, (a,))
        assert ext.exact(np.ndarray, [])
        assert not ext.exact(np.ndarray, [a, sub]) and not ext.exact(np.ndarray, [a, 1])
        with pytest.raises(TypeError):
            ext.exact(np.ndarray, iter([a]))
    assert host._all_arrays([a, a]) and not host._all_arrays([a, sub])
    assert np.array_equal(wl.concatenate((a, a)), np.concatenate((a, a)))
    assert host.concatenate([a, sub], 0) is None  # a subclass: the general path

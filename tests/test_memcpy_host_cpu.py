"""The cpu backend's own run of host batches (``memcpy/host.py``): NumPy's copies where the
whole-list checks prove the call safe, the general path (and its errors) for everything
else, results identical either way."""
from __future__ import annotations

import numpy as np
import pytest

import warplab as wl
from warplab.families.memcpy import host


def _pairs(k: int = 5) -> tuple[list[np.ndarray], list[np.ndarray]]:
    rng = np.random.default_rng(1)
    return [rng.random(7) for _ in range(k)], [np.zeros(7) for _ in range(k)]


def test_fresh_pairs_take_numpys_copies_and_are_recorded() -> None:
    srcs, dsts = _pairs()
    assert host.copy_pairs(srcs, dsts)
    for s, d in zip(srcs, dsts):
        assert np.array_equal(s, d)
    srcs, dsts = _pairs()
    with wl.record_variants() as ran:
        wl.copy_batched(srcs, dsts)
    assert [tuple(r) for r in ran] == [("memcpy_batched", "numpy", "cpu")]
    assert all(np.array_equal(s, d) for s, d in zip(srcs, dsts))


def test_views_of_other_arrays_as_sources_are_copied() -> None:
    big = np.arange(40.0)
    srcs = [big[0:7], big[10:17], big[20:27].copy()]
    dsts = [np.zeros(7) for _ in srcs]
    assert host.copy_pairs(srcs, dsts)
    assert all(np.array_equal(s, d) for s, d in zip(srcs, dsts))


@pytest.mark.parametrize("case", ["src_view_of_dst", "src_is_dst", "dst_twice", "dst_view",
                                  "read_only_src_ok", "fortran_dst", "shape_differs", "transposed_shape",
                                  "dtype_differs", "structured", "bytes_source_view"])
def test_what_the_checks_send_to_the_general_path(case: str) -> None:
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
    before = [d.copy() for d in dsts]
    assert not host.copy_pairs(srcs, dsts)
    assert all(np.array_equal(b, d) for b, d in zip(before, dsts))  # nothing written


@pytest.mark.parametrize("case", ["fresh", "dst_twice", "src_is_dst", "src_view_of_dst"])
def test_many_pairs_hash_rotated_identities(case: str) -> None:
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


def test_general_path_results_unchanged() -> None:
    """Byte copies across dtypes and shapes, and a structured dtype's padding, still go
    through the general path byte for byte."""
    dt = np.dtype({"names": ["a"], "formats": ["<u2"], "offsets": [0], "itemsize": 4})
    src = np.frombuffer(bytes(range(12)), dtype=dt).copy()
    dst = np.zeros(3, dt)
    wl.copy_batched([src, np.arange(6, dtype=np.int32)], [dst, np.zeros(3, np.int64)])
    assert dst.tobytes() == src.tobytes()


def test_overlapping_view_of_a_destination_is_refused() -> None:
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

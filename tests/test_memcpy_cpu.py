"""The memcpy family on the NumPy backend: copy_batched, concatenate and split against NumPy,
the errors (nothing written), the overlap check against a brute-force one, and the CLI."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import last_ran
from hypothesis import given, settings
from hypothesis import strategies as st

import warplab
from warplab import cli
from warplab.families.memcpy.spec import overlap

SETTINGS = settings(max_examples=40, deadline=None)


def _arrays(sizes: list[int], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, size=n, dtype=np.uint8) for n in sizes]


@SETTINGS
@given(st.lists(st.integers(0, 300), max_size=40))
def test_copy_batched_random_sizes_with_zeros(sizes: list[int]) -> None:
    srcs = _arrays(sizes)
    dsts = [np.full(n, 0xA5, dtype=np.uint8) for n in sizes]
    warplab.copy_batched(srcs, dsts)
    for s, d in zip(srcs, dsts):
        assert np.array_equal(s, d)
    if sizes:
        assert last_ran() == "numpy"


def test_copy_batched_copies_bytes_across_dtypes_and_shapes() -> None:
    srcs = (np.arange(6, dtype=np.float64).reshape(2, 3), np.arange(4, dtype=np.int16))
    dsts = (np.zeros(48, dtype=np.uint8), np.zeros(2, dtype=np.uint32))
    warplab.copy_batched(srcs, dsts)
    assert np.array_equal(dsts[0].view(np.float64).reshape(2, 3), srcs[0])
    assert np.array_equal(dsts[1].view(np.int16), srcs[1])


def test_copy_batched_empty_lists() -> None:
    warplab.copy_batched([], [])


@pytest.mark.parametrize("srcs,dsts,err,needle", [
    ([np.zeros(4)], [np.zeros(4), np.zeros(4)], ValueError, "has 1 arrays"),
    ([np.zeros(4)], [np.zeros(3)], ValueError, "32 bytes"),
    ([np.zeros((4, 4))[:, 0]], [np.zeros(4)], ValueError, "C-contiguous"),
    ([np.zeros(4)], [np.zeros((4, 2))[:, 1]], ValueError, "C-contiguous"),
    ([np.zeros(4)], [[0.0] * 4], TypeError, "not a NumPy or GPU array"),
    (np.zeros(4), [np.zeros(4)], TypeError, "list or tuple"),
])
def test_copy_batched_bad_input(srcs: object, dsts: object, err: type, needle: str) -> None:
    with pytest.raises(err, match=needle):
        warplab.copy_batched(srcs, dsts)


def test_copy_batched_read_only_destination() -> None:
    d = np.zeros(4)
    d.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        warplab.copy_batched([np.ones(4)], [d])


@pytest.mark.parametrize("case", ["dst_on_src", "dst_on_dst", "same_buffer"])
def test_overlap_is_refused_and_nothing_written(case: str) -> None:
    mem = np.arange(64, dtype=np.uint8)
    before = mem.copy()
    other = np.zeros(8, dtype=np.uint8)
    if case == "dst_on_src":  # the second destination overlaps the first source
        srcs, dsts = [mem[0:8], mem[40:48]], [other, mem[4:12]]
    elif case == "dst_on_dst":
        srcs, dsts = [np.ones(8, np.uint8), np.ones(8, np.uint8)], [mem[16:24], mem[20:28]]
    else:
        srcs, dsts = [mem[0:8]], [mem[0:8]]
    with pytest.raises(ValueError, match="overlaps"):
        warplab.copy_batched(srcs, dsts)
    assert np.array_equal(mem, before) and not other.any()


def test_sources_may_overlap_each_other() -> None:
    mem = np.arange(16, dtype=np.uint8)
    dsts = [np.zeros(8, np.uint8), np.zeros(8, np.uint8)]
    warplab.copy_batched([mem[0:8], mem[4:12]], dsts)
    assert np.array_equal(dsts[1], mem[4:12])


def _brute(src: list[tuple[int, int]], dst: list[tuple[int, int]]) -> bool:
    iv = [(lo, hi, False) for lo, hi in src] + [(lo, hi, True) for lo, hi in dst]
    for i, (a0, a1, ad) in enumerate(iv):
        for b0, b1, bd in iv[i + 1:]:
            if (ad or bd) and a1 > a0 and b1 > b0 and a0 < b1 and b0 < a1:
                return True
    return False


interval = st.tuples(st.integers(0, 60), st.integers(0, 12)).map(lambda t: (t[0], t[0] + t[1]))


@settings(max_examples=200, deadline=None)
@given(st.lists(interval, max_size=8), st.lists(interval, max_size=8))
def test_overlap_matches_brute_force(src: list, dst: list) -> None:
    lo = lambda v: np.array([a for a, _ in v], dtype=np.int64)
    hi = lambda v: np.array([b for _, b in v], dtype=np.int64)
    assert overlap(lo(src), hi(src), lo(dst), hi(dst)) == _brute(src, dst)


shapes = st.lists(st.integers(0, 4), min_size=1, max_size=3)


@SETTINGS
@given(shapes, st.lists(st.integers(0, 5), min_size=1, max_size=6), st.data())
def test_concatenate_matches_numpy(shape: list[int], widths: list[int], data: st.DataObject
                                   ) -> None:
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    dtypes = data.draw(st.lists(st.sampled_from(["int8", "int32", "float32", "float64"]),
                                min_size=len(widths), max_size=len(widths)))
    arrays = []
    for w, dt in zip(widths, dtypes):
        s = list(shape)
        s[axis] = w
        arrays.append((np.arange(int(np.prod(s))) % 97).astype(dt).reshape(s))
    got = warplab.concatenate(arrays, axis=axis)
    want = np.concatenate(arrays, axis=axis)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want)


def test_concatenate_axis_none_and_non_contiguous() -> None:
    a = np.arange(12).reshape(3, 4)
    b = np.arange(6).reshape(2, 3).T  # Fortran order
    assert np.array_equal(warplab.concatenate([a, b], axis=None),
                          np.concatenate([a, b], axis=None))
    assert np.array_equal(warplab.concatenate([a[:, :3], b], axis=1),
                          np.concatenate([a[:, :3], b], axis=1))


def test_concatenate_thousands_of_small_arrays() -> None:
    arrays = [np.full(i % 7, i, dtype=np.int64) for i in range(3000)]
    assert np.array_equal(warplab.concatenate(arrays), np.concatenate(arrays))


@pytest.mark.parametrize("arrays,kw,err", [
    ([], {}, ValueError),
    ([np.float64(1.0), np.float64(2.0)], {}, ValueError),
    ([np.zeros(3), np.zeros((3, 1))], {}, ValueError),
    ([np.zeros((2, 3)), np.zeros((2, 4))], {"axis": 0}, ValueError),
    ([np.zeros(3)], {"axis": 1}, np.exceptions.AxisError),
])
def test_concatenate_errors_like_numpy(arrays: list, kw: dict, err: type) -> None:
    with pytest.raises(err):
        np.concatenate(arrays, **kw)
    with pytest.raises(err):
        warplab.concatenate(arrays, **kw)


@SETTINGS
@given(shapes, st.data())
def test_split_copy_matches_numpy(shape: list[int], data: st.DataObject) -> None:
    axis = data.draw(st.integers(0, len(shape) - 1))
    n = shape[axis]
    ios = data.draw(st.one_of(
        st.sampled_from([d for d in range(1, 5) if n % d == 0] or [1]),
        st.lists(st.integers(0, n + 2), max_size=4).map(sorted)))
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    want = np.split(x, ios, axis=axis)
    got = warplab.split(x, ios, axis=axis, copy=True)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.flags.c_contiguous and not np.shares_memory(g, x)
        assert g.shape == w.shape and np.array_equal(g, w)


def test_split_views_by_default_and_numpy_errors() -> None:
    x = np.arange(10)
    parts = warplab.split(x, 5)
    assert all(np.shares_memory(p, x) for p in parts)
    for copy in (False, True):
        with pytest.raises(ValueError, match="equal division"):
            warplab.split(x, 3, copy=copy)


def test_memcpy_batched_refuses_host_arrays() -> None:
    a = np.zeros(2, dtype=np.uint64)
    with pytest.raises(TypeError, match="copy_batched"):
        warplab.memcpy_batched(a, a, a)


def test_variants_registered() -> None:
    names = warplab.variants("memcpy_batched", "cuda")
    assert names[0] == "warp_tiers_windows"
    assert set(names) == {"size_classes_tuned", "warp_classes", "warp_classes_stream",
                          "warp_tiers", "warp_tiers_words", "warp_tiers_windows",
                          "size_classes", "warp_per_buffer",
                          "block_per_buffer", "loop_memcpy_async"}
    assert warplab.variants("memcpy_batched", "cpu") == ["numpy"]


def test_cuda_variant_on_host_arrays_is_a_clear_error() -> None:
    with pytest.raises((ValueError, warplab.DeviceUnavailableError)):
        warplab.copy_batched([np.zeros(2)], [np.zeros(2)], variant="warp_per_buffer")


def test_cli_fits_80_columns(monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture) -> None:
    from warplab.lab.console import console

    monkeypatch.setattr(console, "width", 80)
    monkeypatch.setenv("COLUMNS", "80")
    argv = ["--device", "cpu", "memcpy", "--min", "1", "--max", "64", "--total", "1M",
            "--runs", "2", "--warmup", "0"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "C_C_1_64_a1" in out and "numpy" in out and "yes" in out
    assert all(len(line) <= 80 for line in out.splitlines())


def test_cli_bad_range_is_one_line(capsys: pytest.CaptureFixture) -> None:
    assert cli.main(["--device", "cpu", "memcpy", "--min", "9", "--max", "8"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "max" in err


def test_host_arrays_run_on_cpu_where_a_gpu_is_usable(monkeypatch: pytest.MonkeyPatch) -> None:
    import warplab.core.device as dev

    monkeypatch.delenv("WARPLAB_DEVICE", raising=False)
    monkeypatch.setattr(dev, "cuda_status", lambda: (True, "a GPU, pretended"))
    dst = np.zeros(3)
    warplab.copy_batched([np.ones(3)], [dst])
    assert last_ran() == "numpy" and (dst == 1).all()
    assert np.array_equal(warplab.concatenate([np.ones(2), np.zeros(1)]), [1, 1, 0])


def test_bench_quick_on_cpu_writes_verified_records(tmp_path: object,
                                                    capsys: pytest.CaptureFixture) -> None:
    import json
    from pathlib import Path

    from warplab.lab.campaigns.memcpy.bench import MEMCPY_CAMPAIGNS

    out = Path(str(tmp_path)) / "runs"
    argv = ["--device", "cpu", "bench", "memcpy", "--quick", "--sizes", "64K", "--runs", "1",
            "--warmup", "0", "--out", str(out)]
    assert cli.main(argv) == 0
    (path,) = out.glob("*/memcpy.json")
    doc = json.loads(path.read_text())
    recs = doc["results"]
    assert len(recs) == len(MEMCPY_CAMPAIGNS["quick"].sizes)
    for r in recs:
        assert r["verified"] and r["variant"] == "numpy" and r["params"]["size"] == 64 << 10
        n = r["params"]["count"]
        assert r["bytes_moved"] == r["data_bytes"] + 24 * n
    assert "memcpy.json" in capsys.readouterr().out


def test_object_arrays_are_refused() -> None:
    a = np.array([object(), object()])
    with pytest.raises(TypeError, match="object arrays"):
        warplab.copy_batched([a], [np.empty_like(a)])
    with pytest.raises(TypeError, match="object arrays"):
        warplab.concatenate([a, a])

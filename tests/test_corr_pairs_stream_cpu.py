"""corr_pairs' threshold stream on the NumPy backend: ``strips.stream_above`` strip by strip in
``(i, j)`` order against a brute force over the same coefficients (random and adversarial:
constant and NaN series, values on the threshold, thresholds 0 and 1, M = 2 and 3, every strip
height 1..M forced through the byte budget), the blocks it asks of an engine, and the strip
shapes; ``out="host"`` and ``out=<path>`` (the file's records, reopened with ``numpy.load``);
the host-memory error with its counts and advice."""
from __future__ import annotations

import os
import pathlib
import warnings

import numpy as np
import pytest

import warplab
from warplab.core.errors import HostOutOfMemoryError, WarplabError
from warplab.families.corr import pairs, sinks, strips, tiles
from warplab.families.corr.cpu import NumpyEngine
from warplab.families.corr.strips import (
    PAIR_BYTES,
    stream_above,
    strip_bytes_for,
    strip_shape,
    strips_above,
)


class MatrixEngine:
    """An engine over a given finished M x M matrix (every coefficient fixed in advance, so
    the stream must find exactly the brute force's pairs); records the blocks asked."""

    xp = np

    def __init__(self, r: np.ndarray) -> None:
        self.r, self.m = r, r.shape[0]
        self.valid = ~np.isnan(r).all(axis=1)
        self.all_valid = bool(self.valid.all())
        self.asked: list[tuple[int, int, int, int]] = []

    def block(self, r0: int, r1: int, c0: int, c1: int) -> np.ndarray:
        assert (r0 == c0 and r1 == c1) or r1 <= c0, "only diagonal blocks or blocks above"
        self.asked.append((r0, r1, c0, c1))
        return self.r[r0:r1, c0:c1].copy()


def _matrix(m: int, kind: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "random":
        x = rng.standard_normal((m, 6))
    else:  # adversarial: constant and NaN series, duplicates and exact opposites
        x = rng.integers(-2, 3, (m, 5)).astype(float)
        x[3:] = x[3] if m > 3 else x[3:]
        x[5::3] = -x[3] if m > 5 else x[5::3]
        x[::4] = 1.5
        if m > 2:
            x[2, 1] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = np.clip(np.corrcoef(x), -1, 1)
    np.fill_diagonal(r, 1)
    bad = ~np.isfinite(np.einsum("ij,ij->i", x - x.mean(1, keepdims=True), x)) | \
        (np.ptp(x, axis=1) == 0)
    r[bad], r[:, bad] = np.nan, np.nan
    if kind == "adversarial" and m > 6:
        r[3, 6] = r[6, 3] = 0.5  # a coefficient exactly on a threshold
    return r


def _brute(r: np.ndarray, thr: float, r0: int = 0, r1: int | None = None
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    hit = np.triu(np.abs(r) >= thr, 1)
    hit[:r0] = False
    if r1 is not None:
        hit[r1:] = False
    i, j = np.nonzero(hit)
    return i, j, r[i, j]


def _budget(m: int, rows: int) -> int:
    """A strip budget whose first strip (from row 0) is ``rows`` rows."""
    return 2 * PAIR_BYTES * m * rows


@pytest.mark.parametrize("kind", ["random", "adversarial"])
@pytest.mark.parametrize("m", [2, 3, 7, 13])
@pytest.mark.parametrize("thr", [0.0, 0.5, 0.9, 1.0])
def test_stream_is_the_brute_force_in_order(m: int, thr: float, kind: str) -> None:
    r = _matrix(m, kind, seed=m)
    want = _brute(r, thr)
    for rows in range(1, m + 1):
        eng = MatrixEngine(r)
        got = list(strips_above(eng, thr, 0, m, _budget(m, rows)))
        assert got[0][1] - got[0][0] == rows  # the forced first height
        assert [s[0] for s in got] == [0, *[s[1] for s in got[:-1]]] and got[-1][1] == m
        i, j, v = (np.concatenate([s[f] for s in got]) for f in (2, 3, 4))
        assert i.dtype == j.dtype == np.int64 and v.dtype == np.float64
        np.testing.assert_array_equal(i, want[0])
        np.testing.assert_array_equal(j, want[1])
        np.testing.assert_array_equal(v, want[2])
        for a, b, si, _, _ in got:  # each strip holds its own rows only
            assert ((si >= a) & (si < b)).all()


@pytest.mark.parametrize("m", [5, 16])
def test_blocks_cover_the_triangle_once(m: int) -> None:
    r = _matrix(m, "random")
    for budget in (1, _budget(m, 2), _budget(m, 3) + 7, 1 << 30):
        eng = MatrixEngine(r)
        list(stream_above(eng, 0.5, 0, m, budget))
        cover = np.zeros((m, m), int)
        for r0, r1, c0, c1 in eng.asked:
            cover[r0:r1, c0:c1] += 1
        assert (cover[np.triu_indices(m)] == 1).all()  # below: inside diagonal blocks only


def test_row_range_and_empty_strips() -> None:
    r = _matrix(11, "random", seed=3)
    got = list(stream_above(MatrixEngine(r), 0.3, 4, 9, _budget(11, 2)))
    want = _brute(r, 0.3, 4, 9)
    for f in range(3):
        np.testing.assert_array_equal(np.concatenate([s[f] for s in got]), want[f])
    nothing = list(stream_above(MatrixEngine(np.full((6, 6), np.nan)), 0.0, 0, 6, 1))
    assert len(nothing) == 6 and all(s[0].size == 0 and s[0].dtype == np.int64
                                     for s in nothing)
    assert list(stream_above(MatrixEngine(r), 0.3, 5, 5, 1)) == []


def test_strip_shape_from_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    assert strip_shape(1000, 0, 1000, 0) == (1, strip_shape(1000, 0, 1000, 0)[1])
    assert strip_shape(1000, 0, 1000, 1)[0] == 1  # at least one row
    assert strip_shape(1000, 0, 1000, _budget(1000, 10))[0] == 10
    assert strip_shape(1000, 500, 1000, _budget(1000, 10))[0] == 20  # fewer columns: taller
    assert strip_shape(1000, 990, 1000, 1 << 40)[0] == 10  # never past r1
    assert strip_shape(100_000, 0, 100_000, _budget(100_000, 300))[0] == 256  # 128s
    rows, cols = strip_shape(1000, 0, 1000, 1 << 24)
    assert rows * 1000 * PAIR_BYTES <= (1 << 23) and rows * cols * strips.PART_BYTES <= 1 << 23
    monkeypatch.setattr(tiles, "TILE_CAP", 3)
    assert strip_shape(1000, 0, 1000, 1 << 40) == (3, 3)


def test_strip_bytes_for_the_cpu_backend() -> None:
    eng = NumpyEngine(np.random.default_rng(0).standard_normal((4, 8)))
    assert strip_bytes_for(eng) == tiles.CPU_TILE_BYTES


def test_numpy_engine_stream_matches_corrcoef() -> None:
    x = np.cumsum(np.random.default_rng(1).standard_normal((40, 30)), axis=1)
    eng = NumpyEngine(x)
    i, j, v = (np.concatenate(f) for f in zip(*stream_above(eng, 0.7, 0, 40, _budget(40, 3))))
    keys = i * 40 + j
    assert (np.diff(keys) > 0).all() and (i < j).all()
    ref = np.corrcoef(x)
    np.testing.assert_allclose(v, ref[i, j], atol=1e-12)
    a = np.abs(np.triu(ref, 1))
    assert set(np.flatnonzero(a >= 0.7 + 1e-9)) <= set(keys) <= set(np.flatnonzero(a >= 0.7 - 1e-9))


def _walks(m: int = 60, n: int = 40) -> np.ndarray:
    return np.cumsum(np.random.default_rng(m).standard_normal((m, n)), axis=1)


@pytest.fixture
def small_strips(monkeypatch: pytest.MonkeyPatch) -> None:
    """corr_pairs' strips of about 4 rows (the default budget replaced)."""
    monkeypatch.setattr(pairs, "strip_bytes_for", lambda eng: _budget(eng.m, 4))


@pytest.mark.usefixtures("small_strips")
def test_out_host_and_file(tmp_path: pathlib.Path) -> None:
    x = _walks()
    want = warplab.corr_pairs(x, threshold=0.8)
    assert want.i.size > 100
    host = warplab.corr_pairs(x, threshold=0.8, out="host")
    for g, w in zip(host, want):
        assert type(g) is np.ndarray
        np.testing.assert_array_equal(g, w)
    path = tmp_path / "pairs.npy"
    for where in (path, str(path)):  # os.PathLike and str
        got = warplab.corr_pairs(x, threshold=0.8, out=where)
        for g, w in zip(got, want):
            assert isinstance(g, np.memmap) and not g.flags.writeable
            np.testing.assert_array_equal(g, w)
        rec = np.load(path, mmap_mode="r")
        assert rec.dtype == sinks.PAIR_DTYPE and rec.shape == (want.i.size,)
        for f, w in zip("ijr", want):
            np.testing.assert_array_equal(rec[f], w)
        assert os.path.getsize(path) == sinks.HEADER_BYTES + 24 * want.i.size
        del got, rec


def test_out_file_of_no_pairs_and_top_k(tmp_path: pathlib.Path) -> None:
    x = _walks(20, 30)
    none = warplab.corr_pairs(x[:1], threshold=0.5, out=tmp_path / "none.npy")
    assert none.i.size == 0 and np.load(tmp_path / "none.npy").shape == (0,)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        flat = warplab.corr_pairs(np.ones((5, 4)), threshold=0.0, out=tmp_path / "flat.npy")
    assert flat.i.size == 0 and np.load(tmp_path / "flat.npy").shape == (0,)
    want = warplab.corr_pairs(x, top_k=3)
    for out in ("host", tmp_path / "top.npy"):
        got = warplab.corr_pairs(x, top_k=3, out=out)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    assert np.load(tmp_path / "top.npy")["j"].tolist() == want.j.tolist()


@pytest.mark.parametrize("out, err", [(3, TypeError), (b"x.npy", TypeError),
                                      (np.zeros(3), TypeError), ("", ValueError)])
def test_bad_out(out: object, err: type) -> None:
    with pytest.raises(err, match="out="):
        warplab.corr_pairs(_walks(5, 10), threshold=0.5, out=out)


def test_unfinished_file_is_removed(tmp_path: pathlib.Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    x = _walks()

    def failing(eng, thr, r0, r1, budget):
        yield from list(strips_above(eng, thr, r0, r1, _budget(eng.m, 4)))[:2]
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(pairs, "strips_above", failing)
    with pytest.raises(RuntimeError, match="disk on fire"):
        warplab.corr_pairs(x, threshold=0.5, out=tmp_path / "p.npy")
    assert not (tmp_path / "p.npy").exists()


@pytest.mark.usefixtures("small_strips")
def test_host_memory_error_says_found_expected_and_what_to_change(
        monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    x = _walks()  # 60 series: 1770 pairs, all of them at threshold 0
    room = 600 * sinks.HELD_BYTES
    monkeypatch.setattr(pairs, "host_memory_available", lambda: room + _budget(60, 4))
    with pytest.raises(HostOutOfMemoryError) as info:
        warplab.corr_pairs(x, threshold=0.0)
    err = info.value
    assert isinstance(err, MemoryError) and isinstance(err, WarplabError)
    msg = str(err)
    found = int(msg.split(": ")[2].split(" pairs")[0].replace(",", ""))
    assert 600 < found < 1770
    assert "about 1,770 expected in total" in msg and "of the 1,770 pairs" in msg
    assert "host memory" in msg and "out='pairs.npy'" in msg and "top_k" in msg
    assert "threshold" in msg
    got = warplab.corr_pairs(x, threshold=0.0, out=tmp_path / "all.npy")  # the way out
    assert got.i.size == 1770
    monkeypatch.setattr(pairs, "host_memory_available", lambda: None)  # unknown: no check
    assert warplab.corr_pairs(x, threshold=0.0).i.size == 1770


def test_triangle_share() -> None:
    assert sinks.triangle_share(5, 0) == 0 and sinks.triangle_share(5, 5) == 1
    assert sinks.triangle_share(5, 1) == 4 / 10 and sinks.triangle_share(5, 4) == 1
    assert sinks.triangle_share(1, 1) == 1.0

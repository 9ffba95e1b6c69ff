"""warplab.lab.harness.data: the synthetic inputs of the histogram report."""
from __future__ import annotations

import functools
import string

import numpy as np
import pytest

from warplab.lab.harness import data

A, M = 48271, (1 << 31) - 1
BOUNDARY = 1 << 20


def recurrence(n: int, seed: int = 1) -> np.ndarray:
    """Park-Miller bytes, written out directly: advance the state, then emit 1 + s % 128."""
    out = bytearray(n)
    s = seed
    for k in range(n):
        s = s * A % M
        out[k] = 1 + s % 128
    return np.frombuffer(bytes(out), dtype=np.uint8)


@functools.lru_cache(maxsize=1)
def long_recurrence() -> np.ndarray:
    return recurrence(BOUNDARY + 100)


def test_lehmer_first_3000() -> None:
    got = data.generate("uniform", 3000)
    assert got.dtype == np.uint8 and got.shape == (3000,)
    np.testing.assert_array_equal(got, recurrence(3000))
    # the very first values, by hand: s1 = 48271 -> 1 + 48271 % 128 = 16
    assert got[0] == 1 + 48271 % 128


def test_lehmer_across_chunk_boundary() -> None:
    want = long_recurrence()
    got = data.generate("uniform", BOUNDARY + 100)
    np.testing.assert_array_equal(got[BOUNDARY - 100:], want[BOUNDARY - 100:])
    np.testing.assert_array_equal(got[:1000], want[:1000])
    # a second chunk boundary further out: state k at index k, by modular exponentiation
    n = 2 * BOUNDARY + 5
    far = data.lehmer_bytes(n)
    for k in (BOUNDARY, 2 * BOUNDARY - 1, 2 * BOUNDARY, 2 * BOUNDARY + 4):
        s = pow(A, k + 1, M)
        assert far[k] == 1 + s % 128, k


def test_lehmer_seed() -> None:
    np.testing.assert_array_equal(data.lehmer_bytes(500, seed=7), recurrence(500, seed=7))
    assert not np.array_equal(data.lehmer_bytes(500, seed=7), data.lehmer_bytes(500))


def test_lehmer_range() -> None:
    a = data.generate("uniform", 1 << 16)
    assert int(a.min()) == 1 and int(a.max()) == 128
    assert np.unique(a).size == 128


def test_prefix_consistent() -> None:
    for kind in data.KINDS:
        small, big = data.generate(kind, 777), data.generate(kind, 5000)
        np.testing.assert_array_equal(small, big[:777], err_msg=kind)


def test_const() -> None:
    a = data.generate("const", 1000)
    assert a.dtype == np.uint8 and a.shape == (1000,)
    assert (a == ord("a")).all()


def test_text() -> None:
    a = data.generate("text", 300_000)
    assert a.dtype == np.uint8 and a.shape == (300_000,)
    allowed = set(string.printable.encode()) - set(b"\t\r\x0b\x0c") | {ord("\n")}
    present = set(np.unique(a).tolist())
    assert present <= allowed, sorted(present - allowed)
    assert {ord(" "), ord("\n"), ord("."), ord("e")} <= present
    assert any(ord("A") <= c <= ord("Z") for c in present)
    np.testing.assert_array_equal(a, data.generate("text", 300_000))
    # looks like prose: words separated by single spaces mostly, letters dominate
    letters = np.count_nonzero(((a | 0x20) >= ord("a")) & ((a | 0x20) <= ord("z")))
    assert letters > 0.7 * a.size


def test_text_beyond_block_tiles() -> None:
    n = (4 << 20) + 10
    a = data.generate("text", n)
    assert a.shape == (n,)
    np.testing.assert_array_equal(a[4 << 20:], a[:10])


def test_random() -> None:
    a = data.generate("random", 1 << 16)
    assert a.dtype == np.uint8
    assert np.unique(a).size == 256
    np.testing.assert_array_equal(a, data.generate("random", 1 << 16))
    assert not np.array_equal(a, data.generate("random", 1 << 16, seed=2))


@pytest.mark.parametrize("kind", data.KINDS)
def test_size_zero(kind: str) -> None:
    a = data.generate(kind, 0)
    assert a.dtype == np.uint8 and a.shape == (0,)


@pytest.mark.parametrize("kind", ["nosuch", "Uniform", "zeros", ""])
def test_unknown_kind(kind: str) -> None:
    with pytest.raises(ValueError, match="kind"):
        data.generate(kind, 10)


def test_negative_size() -> None:
    with pytest.raises(ValueError):
        data.generate("const", -1)


def test_generate_fast_on_cpu_equals_generate() -> None:
    np.testing.assert_array_equal(data.generate_fast("uniform", 4097),
                                  data.generate("uniform", 4097))

"""warplab.byte_histogram on the NumPy backend against plain NumPy, and its bad-input paths."""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

import warplab
from warplab.lab.harness import data as bench_data

no_gpu = pytest.mark.skipif(warplab.cuda_available(), reason="a usable GPU is present here")

# A user table: 50 bins, every bin hit by some byte value, not monotone in the byte.
USER_LUT = (np.arange(256) * 7 + 3) % 50
SIZES = (0, 1, 31, 255, 4097, (1 << 20) + 3)
KINDS = ("uniform", "const", "random", "text")
MAPPINGS = ("bytes", "ascii128", "letters", "lut")


def ref_table(bins: str | np.ndarray) -> tuple[np.ndarray, int]:
    """The mapping tables written out independently of warplab.families.histogram.spec."""
    c = np.arange(256)
    if isinstance(bins, str) and bins == "lut":
        bins = USER_LUT
    if isinstance(bins, str):
        if bins == "bytes":
            return c, 256
        if bins == "ascii128":
            return (c - 1) & 0x7F, 128
        if bins == "letters":
            lut = np.zeros(256, dtype=np.int64)
            lut[ord("A"):ord("Z") + 1] = np.arange(1, 27)
            lut[ord("a"):ord("z") + 1] = np.arange(1, 27)
            return lut, 27
        raise AssertionError(bins)
    lut = np.asarray(bins, dtype=np.int64)
    return lut, int(lut.max()) + 1


def ref_hist(data_u8: np.ndarray, bins: str | np.ndarray) -> np.ndarray:
    lut, nbins = ref_table(bins)
    return np.bincount(lut[np.asarray(data_u8, dtype=np.uint8).reshape(-1)], minlength=nbins)


def bins_arg(name: str):
    return USER_LUT if name == "lut" else name


@functools.lru_cache(maxsize=None)
def sample(kind: str, n: int) -> np.ndarray:
    a = bench_data.generate(kind, n)
    a.flags.writeable = False
    return a


def check(got, want: np.ndarray) -> None:
    assert isinstance(got, np.ndarray)
    assert got.dtype == np.int64
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------------- tables


def test_reference_tables_sanity() -> None:
    # the hand-written reference tables themselves (so that a wrong reference cannot hide a bug)
    lut, n = ref_table("ascii128")
    assert n == 128 and lut[0] == 127 and lut[1] == 0 and lut[128] == 127 and lut[129] == 0
    lut, n = ref_table("letters")
    assert n == 27 and lut[ord("A")] == 1 and lut[ord("z")] == 26 and lut[ord("@")] == 0
    assert lut[ord("[")] == 0 and lut[ord("`")] == 0 and lut[ord("{")] == 0 and lut[0xC1] == 0
    assert int(np.count_nonzero(lut)) == 52


@pytest.mark.parametrize("bins", ["bytes", "ascii128", "letters"])
def test_each_byte_value_lands_in_its_bin(bins: str) -> None:
    lut, nbins = ref_table(bins)
    for c in (0, 1, 64, 65, 90, 91, 96, 97, 122, 123, 127, 128, 129, 193, 225, 255):
        got = warplab.byte_histogram(np.array([c], dtype=np.uint8), bins)
        want = np.zeros(nbins, dtype=np.int64)
        want[lut[c]] = 1
        check(got, want)


# ---------------------------------------------------------------------- against NumPy


@pytest.mark.parametrize("mapping", MAPPINGS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("size", SIZES)
def test_matches_numpy(size: int, kind: str, mapping: str) -> None:
    a = sample(kind, size)
    got = warplab.byte_histogram(a, bins_arg(mapping))
    check(got, ref_hist(a, bins_arg(mapping)))
    assert int(got.sum()) == size


def test_user_lut_bin_count_is_max_plus_one() -> None:
    lut = np.zeros(256, dtype=np.int32)
    lut[200] = 9  # 10 bins, most of them empty
    a = np.arange(256, dtype=np.uint8)
    got = warplab.byte_histogram(a, lut)
    want = np.zeros(10, dtype=np.int64)
    want[0], want[9] = 255, 1
    check(got, want)
    # a table given as a plain Python list works the same
    check(warplab.byte_histogram(a, lut.tolist()), want)
    # all-zero table: one bin
    check(warplab.byte_histogram(a, [0] * 256), np.array([256]))
    # 256 bins via a table (max value 255) reversing the bytes
    rev = 255 - np.arange(256)
    check(warplab.byte_histogram(np.array([0, 0, 3], np.uint8), rev), ref_hist(np.array([0, 0, 3]), rev))


def test_chunk_boundary_counts_every_byte() -> None:
    # values chosen so that the bytes right before and after 2**20 differ from the bulk
    n = (1 << 20) + 3
    a = np.zeros(n, dtype=np.uint8)
    a[(1 << 20) - 1] = 7
    a[1 << 20] = 8
    a[-1] = 9
    got = warplab.byte_histogram(a)
    assert got[0] == n - 3 and got[7] == 1 and got[8] == 1 and got[9] == 1


# ---------------------------------------------------------------------------- input kinds

N_FORMS = 4097 * 3


@pytest.fixture(scope="module")
def rnd() -> np.ndarray:
    return sample("random", N_FORMS)


@pytest.mark.parametrize("mapping", MAPPINGS)
def test_int8_input(rnd: np.ndarray, mapping: str) -> None:
    a = rnd.view(np.int8)
    assert (a < 0).any()
    check(warplab.byte_histogram(a, bins_arg(mapping)), ref_hist(rnd, bins_arg(mapping)))


@pytest.mark.parametrize("mapping", MAPPINGS)
def test_multidim_input(rnd: np.ndarray, mapping: str) -> None:
    a = rnd.reshape(3, 17, 241)
    check(warplab.byte_histogram(a, bins_arg(mapping)), ref_hist(rnd, bins_arg(mapping)))
    f = np.asfortranarray(a)
    check(warplab.byte_histogram(f, bins_arg(mapping)), ref_hist(rnd, bins_arg(mapping)))


@pytest.mark.parametrize("mapping", MAPPINGS)
def test_non_contiguous_input(rnd: np.ndarray, mapping: str) -> None:
    b = bins_arg(mapping)
    s = rnd[::3]
    assert not s.flags.c_contiguous
    check(warplab.byte_histogram(s, b), ref_hist(np.ascontiguousarray(s), b))
    s2 = rnd.reshape(17, -1)[1:, ::2]
    check(warplab.byte_histogram(s2, b), ref_hist(np.ascontiguousarray(s2), b))
    s3 = rnd[::-1]
    check(warplab.byte_histogram(s3, b), ref_hist(rnd, b))
    s4 = rnd.view(np.int8)[5::7]
    check(warplab.byte_histogram(s4, b), ref_hist(rnd[5::7], b))


@pytest.mark.parametrize("mapping", MAPPINGS)
@pytest.mark.parametrize("form", ["bytes", "bytearray", "memoryview", "memoryview_strided"])
def test_buffer_inputs(rnd: np.ndarray, mapping: str, form: str) -> None:
    b = bins_arg(mapping)
    raw = rnd.tobytes()
    if form == "bytes":
        x, want = raw, rnd
    elif form == "bytearray":
        x, want = bytearray(raw), rnd
    elif form == "memoryview":
        x, want = memoryview(raw), rnd
    else:
        x, want = memoryview(raw)[1::2], rnd[1::2]
    check(warplab.byte_histogram(x, b), ref_hist(want, b))


@pytest.mark.parametrize("mapping", MAPPINGS)
def test_file_path_input(tmp_path: Path, mapping: str) -> None:
    a = sample("text", 70_001)
    f = tmp_path / "in.txt"
    f.write_bytes(a.tobytes())
    b = bins_arg(mapping)
    check(warplab.byte_histogram(str(f), b), ref_hist(a, b))
    check(warplab.byte_histogram(f, b), ref_hist(a, b))


@pytest.mark.parametrize("mapping", MAPPINGS)
def test_empty_inputs(tmp_path: Path, mapping: str) -> None:
    b = bins_arg(mapping)
    nbins = ref_table(b)[1]
    f = tmp_path / "empty"
    f.write_bytes(b"")
    for x in (str(f), f, b"", bytearray(), memoryview(b""), np.zeros(0, np.uint8),
              np.zeros((0, 5), np.int8)):
        check(warplab.byte_histogram(x, b), np.zeros(nbins, dtype=np.int64))


def test_input_not_modified(rnd: np.ndarray) -> None:
    a = rnd.copy()
    warplab.byte_histogram(a, "letters")
    np.testing.assert_array_equal(a, rnd)


def test_explicit_cpu_device_and_variant(rnd: np.ndarray) -> None:
    want = ref_hist(rnd, "ascii128")
    check(warplab.byte_histogram(rnd, "ascii128", device="cpu"), want)
    check(warplab.byte_histogram(rnd, "ascii128", variant="numpy_chunked"), want)
    check(warplab.byte_histogram(rnd, "ascii128", variant="numpy_chunked", device="cpu"), want)
    assert warplab.backend() == "cpu"


# ------------------------------------------------------------------------- out= / accumulate


@pytest.mark.parametrize("mapping", MAPPINGS)
def test_out_overwrites(rnd: np.ndarray, mapping: str) -> None:
    b = bins_arg(mapping)
    want = ref_hist(rnd, b)
    out = np.full(want.size, 12345, dtype=np.int64)
    got = warplab.byte_histogram(rnd, b, out=out)
    assert got is out
    check(out, want)


@pytest.mark.parametrize("mapping", MAPPINGS)
def test_accumulate_two_chunks_equals_whole(rnd: np.ndarray, mapping: str) -> None:
    b = bins_arg(mapping)
    want = ref_hist(rnd, b)
    out = np.zeros(want.size, dtype=np.int64)
    cut = 4099
    r1 = warplab.byte_histogram(rnd[:cut], b, out=out, accumulate=True)
    assert r1 is out
    check(out, ref_hist(rnd[:cut], b))
    r2 = warplab.byte_histogram(rnd[cut:], b, out=out, accumulate=True)
    assert r2 is out
    check(out, want)


def test_accumulate_adds_to_existing_values(rnd: np.ndarray) -> None:
    want = ref_hist(rnd, "letters")
    out = np.arange(27, dtype=np.int64)
    warplab.byte_histogram(rnd, "letters", out=out, accumulate=True)
    check(out, want + np.arange(27))


def test_accumulate_false_with_out_ignores_old_values() -> None:
    out = np.full(128, -5, dtype=np.int64)
    warplab.byte_histogram(b"\x01\x01", "ascii128", out=out, accumulate=False)
    want = np.zeros(128, dtype=np.int64)
    want[0] = 2
    check(out, want)


# ------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "uint32", "int64"])
def test_non_byte_dtype_is_type_error(dtype: str) -> None:
    with pytest.raises(TypeError, match=dtype):
        warplab.byte_histogram(np.zeros(4, dtype=dtype))


def test_float_memoryview_is_type_error() -> None:
    with pytest.raises(TypeError, match="float32"):
        warplab.byte_histogram(memoryview(np.zeros(4, np.float32)))


@pytest.mark.parametrize("name", ["byte", "ASCII128", "letter", "", "lut"])
def test_unknown_bins_name(name: str) -> None:
    with pytest.raises(ValueError, match="bins"):
        warplab.byte_histogram(b"abc", name)


@pytest.mark.parametrize("lut", [
    np.zeros(255, np.int64), np.zeros(257, np.int64), np.zeros((16, 16), np.int64),
    list(range(255)),
], ids=["255", "257", "2d", "list255"])
def test_lut_wrong_length(lut) -> None:
    with pytest.raises(ValueError, match="256"):
        warplab.byte_histogram(b"abc", lut)


def test_lut_negative_value() -> None:
    lut = np.zeros(256, np.int64)
    lut[3] = -1
    with pytest.raises(ValueError, match="-1"):
        warplab.byte_histogram(b"abc", lut)


def test_lut_value_256() -> None:
    lut = np.zeros(256, np.int64)
    lut[200] = 256
    with pytest.raises(ValueError, match="256"):
        warplab.byte_histogram(b"abc", lut)


@pytest.mark.parametrize("lut", [np.zeros(256, np.float64), np.zeros(256, np.float32),
                                 [0.5] * 256])
def test_lut_of_floats_is_type_error(lut) -> None:
    with pytest.raises(TypeError, match="integer"):
        warplab.byte_histogram(b"abc", lut)


def test_missing_file(tmp_path: Path) -> None:
    p = tmp_path / "nope.bin"
    with pytest.raises(FileNotFoundError) as ei:
        warplab.byte_histogram(str(p))
    assert str(p) in str(ei.value)
    with pytest.raises(FileNotFoundError, match="nope.bin"):
        warplab.byte_histogram(p)


def test_directory_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(OSError) as ei:
        warplab.byte_histogram(tmp_path)
    assert str(tmp_path) in str(ei.value)
    assert not isinstance(ei.value, FileNotFoundError)


def test_unknown_variant_lists_valid_names() -> None:
    with pytest.raises(ValueError) as ei:
        warplab.byte_histogram(b"abc", variant="nosuch")
    msg = str(ei.value)
    assert "nosuch" in msg
    for name in ("numpy_chunked", "lane_private_vec", "global", "private_stride"):
        assert name in msg


@pytest.mark.parametrize("out", [
    np.zeros(255, np.int64), np.zeros(257, np.int64), np.zeros((1, 256), np.int64),
    np.zeros(256, np.int32), np.zeros(256, np.uint64), np.zeros(256, np.float64),
    np.zeros(512, np.int64)[::2], [0] * 256,
], ids=["short", "long", "2d", "int32", "uint64", "float", "strided", "list"])
def test_bad_out(out) -> None:
    with pytest.raises(ValueError, match="out"):
        warplab.byte_histogram(b"abc", "bytes", out=out)


def test_out_for_another_mapping_is_rejected() -> None:
    with pytest.raises(ValueError, match="128"):
        warplab.byte_histogram(b"abc", "ascii128", out=np.zeros(256, np.int64))


def test_accumulate_without_out() -> None:
    with pytest.raises(ValueError, match="out"):
        warplab.byte_histogram(b"abc", accumulate=True)


@no_gpu
@pytest.mark.parametrize("variant", ["global", "global_stride", "private", "private_stride",
                                     "lane_private_vec", "warp_private_vec"])
def test_cuda_variant_without_gpu(variant: str) -> None:
    with pytest.raises(warplab.DeviceUnavailableError, match=variant):
        warplab.byte_histogram(b"abc", variant=variant)


@no_gpu
@pytest.mark.parametrize("device", ["cuda", "gpu", "CUDA"])
def test_cuda_device_without_gpu(device: str) -> None:
    with pytest.raises(warplab.DeviceUnavailableError):
        warplab.byte_histogram(b"abc", device=device)
    assert issubclass(warplab.DeviceUnavailableError, warplab.WarplabError)


@no_gpu
def test_env_cuda_without_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WARPLAB_DEVICE", "cuda")
    with pytest.raises(warplab.DeviceUnavailableError):
        warplab.byte_histogram(b"abc")


def test_cpu_device_with_cuda_variant_is_value_error() -> None:
    with pytest.raises(ValueError, match="global"):
        warplab.byte_histogram(b"abc", variant="global", device="cpu")


def test_bogus_env_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WARPLAB_DEVICE", "bogus")
    with pytest.raises(ValueError, match="bogus"):
        warplab.byte_histogram(b"abc")
    with pytest.raises(ValueError, match="bogus"):
        warplab.backend()


def test_bogus_device_argument() -> None:
    with pytest.raises(ValueError, match="tpu"):
        warplab.byte_histogram(b"abc", device="tpu")

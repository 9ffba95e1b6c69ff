"""GPU tests of the histogram family (run with ``pytest -m gpu`` on the GPU machine)."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import warplab
from warplab.families.histogram.spec import resolve
from warplab.lab.harness import data as gen
from conftest import last_ran


pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)
cupy = pytest.importorskip("cupy")

CUDA_VARIANTS = warplab.variants("histogram", "cuda")
SIZES = (0, 1, 31, 32, 33, 255, 256, 257, 4095, (1 << 20) + 3)
KINDS = ("uniform", "const", "random", "text")
_LUT = (np.arange(256) * 7 + 3) % 61  # a user table: 61 bins, every byte value reaches one
MAPPINGS = ("bytes", "ascii128", "letters", "lut")


def _bins(name: str):
    return _LUT if name == "lut" else name


@functools.lru_cache(maxsize=None)
def host_data(kind: str, n: int) -> np.ndarray:
    return gen.generate(kind, n)


def reference(h: np.ndarray, bins) -> np.ndarray:
    m = resolve(bins)
    return np.bincount(m.lut[h].astype(np.intp), minlength=m.nbins).astype(np.int64)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("mapping", MAPPINGS)
@pytest.mark.parametrize("variant", CUDA_VARIANTS)
def test_variant_exact(variant, mapping, size, kind):
    h = host_data(kind, size)
    bins = _bins(mapping)
    want = reference(h, bins)
    out = cupy.full(want.size, -987654321, dtype=np.int64)  # poison: unwritten bins fail
    got = warplab.byte_histogram(cupy.asarray(h), bins, variant=variant, out=out)
    assert last_ran() == variant
    assert got is out
    np.testing.assert_array_equal(cupy.asnumpy(got), want)


@pytest.mark.parametrize("offset", range(1, 17))
@pytest.mark.parametrize("variant", CUDA_VARIANTS)
def test_unaligned_views(variant, offset):
    h = host_data("random", 5000)
    d = cupy.asarray(h)
    for end in (offset + 1, offset + 17, 4999):
        got = warplab.byte_histogram(d[offset:end], "bytes", variant=variant)
        np.testing.assert_array_equal(got.get(), reference(h[offset:end], "bytes"))


@pytest.mark.parametrize("variant", CUDA_VARIANTS)
def test_accumulate_on_device(variant):
    h = host_data("text", 100_003)
    out = cupy.zeros(27, dtype=np.int64)
    for part in (h[:40_000], h[40_000:]):
        warplab.byte_histogram(cupy.asarray(part), "letters", variant=variant, out=out,
                          accumulate=True)
    np.testing.assert_array_equal(out.get(), reference(h, "letters"))


def test_host_input_returns_numpy():
    h = host_data("uniform", (1 << 20) + 3)
    whole = warplab.byte_histogram(h, "ascii128")
    assert isinstance(whole, np.ndarray) and last_ran() == CUDA_VARIANTS[0]
    np.testing.assert_array_equal(whole, reference(h, "ascii128"))
    np.testing.assert_array_equal(warplab.byte_histogram(h, "ascii128"), whole)  # warm plan


def test_host_out_accumulate():
    h = host_data("random", 70_000)
    out = np.zeros(256, dtype=np.int64)
    warplab.byte_histogram(h[:30_000], out=out, accumulate=True)
    warplab.byte_histogram(h[30_000:], out=out, accumulate=True)
    np.testing.assert_array_equal(out, reference(h, "bytes"))


def test_file_input(tmp_path):
    h = host_data("text", 300_001)
    f = tmp_path / "t.txt"
    f.write_bytes(h.tobytes())
    np.testing.assert_array_equal(warplab.byte_histogram(str(f), "letters"), reference(h, "letters"))


def test_device_out_wrong_kind_rejected():
    with pytest.raises(ValueError):
        warplab.byte_histogram(cupy.zeros(10, np.uint8), out=np.zeros(256, np.int64))
    with pytest.raises(TypeError, match="float32"):
        warplab.byte_histogram(cupy.zeros(10, np.float32))


def test_torch_and_cuda_array_interface_inputs():
    torch = pytest.importorskip("torch")
    h = host_data("random", 12_345)
    t = torch.as_tensor(h).cuda()
    got = warplab.byte_histogram(t, "bytes")
    assert isinstance(got, cupy.ndarray)
    np.testing.assert_array_equal(got.get(), reference(h, "bytes"))

    class CAI:  # only __cuda_array_interface__
        def __init__(self, a):
            self.__cuda_array_interface__ = a.__cuda_array_interface__

    d = cupy.asarray(h)
    np.testing.assert_array_equal(warplab.byte_histogram(CAI(d)).get(), reference(h, "bytes"))


@pytest.mark.parametrize("dtype", [np.uint8, np.bool_, np.int32, np.int64])
def test_bincount_device(dtype):
    rng = np.random.default_rng(5)
    h = rng.integers(0, 2 if dtype == np.bool_ else 200, size=10_001).astype(dtype)
    got = warplab.bincount(cupy.asarray(h), minlength=3)
    assert isinstance(got, cupy.ndarray)
    np.testing.assert_array_equal(got.get(), np.bincount(h, minlength=3))
    np.testing.assert_array_equal(warplab.bincount(h, minlength=300), np.bincount(h, minlength=300))


def test_gpu_generator_matches_host():
    for n in (1, 255, 256, 257, 1 << 20, (1 << 20) + 77):
        np.testing.assert_array_equal(gen.lehmer_bytes_device(n).get(), gen.lehmer_bytes(n))


@pytest.mark.parametrize("name", ["cupy.bincount", "cupy.histogram", "torch.bincount",
                                  "cuda.compute.histogram_even"])
def test_comparators_compute_the_same_function(name):
    from warplab.lab.campaigns.histogram.comparators import HISTOGRAM_PROVIDERS

    p = next(x for x in HISTOGRAM_PROVIDERS if x.name == name)
    why = p.probe()
    if why:
        pytest.skip(why)
    h = host_data("text", 100_000)
    for bins in ("bytes", "ascii128"):
        got = p.run(cupy.asarray(h), resolve(bins))
        np.testing.assert_array_equal(cupy.asnumpy(got), reference(h, bins))


@pytest.mark.large
@pytest.mark.parametrize("variant", CUDA_VARIANTS)
def test_large_over_4gib(variant):
    """More than 2^32 bytes: 64-bit indices, and a bin count beyond 32 bits (constant data)."""
    n = (1 << 32) + 17
    d = gen.lehmer_bytes_device(n)
    want = cupy.zeros(256, dtype=np.int64)
    for s in range(0, n, 1 << 30):
        want += cupy.bincount(d[s:s + (1 << 30)], minlength=256)
    got = warplab.byte_histogram(d, "bytes", variant=variant)
    np.testing.assert_array_equal(got.get(), want.get())
    d.fill(ord("a"))
    got = warplab.byte_histogram(d, "letters", variant=variant)
    assert int(got[1]) == n and int(got.sum()) == n

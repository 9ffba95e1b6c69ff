"""The variant registry and dispatch."""
from __future__ import annotations

import numpy as np
import pytest

import warplab
from warplab.core import registry as _registry
from warplab.families.histogram.spec import HistogramProblem, resolve

SEEDS = {"global", "global_stride", "private", "private_stride"}
EXPECTED = SEEDS | {"lane_private_vec", "warp_private_vec", "numpy_chunked"}
PROBLEMS = [HistogramProblem(0, 256, "bytes", False), HistogramProblem(12345, 128, "ascii128", False),
            HistogramProblem(1 << 33, 27, "letters", True), HistogramProblem(7, 50, "lut", False)]


def test_histogram_variants_listed() -> None:
    names = warplab.variants("histogram")
    assert EXPECTED <= set(names), EXPECTED - set(names)
    assert len(names) == len(set(names))
    assert warplab.variants("nosuch_family") == []


def test_variants_by_backend() -> None:
    cpu = warplab.variants("histogram", "cpu")
    cuda = warplab.variants("histogram", "cuda")
    assert cpu[0] == "numpy_chunked"
    assert "numpy_chunked" not in cuda
    assert SEEDS | {"lane_private_vec", "warp_private_vec"} <= set(cuda)
    assert set(cpu) | set(cuda) == set(warplab.variants("histogram"))
    assert all(_registry.get("histogram", n).backend == "cpu" for n in cpu)


def test_preference_order_is_rank_order() -> None:
    vs = _registry.variants("histogram")
    ranks = [(v.rank, v.name) for v in vs]
    assert ranks == sorted(ranks)
    # the faster strategies are preferred over the seed kernels on cuda
    cuda = warplab.variants("histogram", "cuda")
    assert cuda.index("lane_private_vec") < cuda.index("global")
    assert cuda.index("private_stride") < cuda.index("global")


def test_choose_cpu_picks_numpy_chunked() -> None:
    for p in PROBLEMS:
        assert _registry.choose("histogram", "cpu", p).name == "numpy_chunked"
    assert _registry.choose("histogram", "cpu", PROBLEMS[0], "numpy_chunked").name == \
        "numpy_chunked"


@pytest.mark.parametrize("name", sorted(SEEDS | {"lane_private_vec", "warp_private_vec"}))
def test_choose_cuda_variant_on_cpu(name: str) -> None:
    with pytest.raises(ValueError) as ei:
        _registry.choose("histogram", "cpu", PROBLEMS[1], name)
    assert name in str(ei.value) and "numpy_chunked" in str(ei.value)


def test_choose_cpu_variant_on_cuda() -> None:
    with pytest.raises(ValueError, match="numpy_chunked"):
        _registry.choose("histogram", "cuda", PROBLEMS[1], "numpy_chunked")


def test_unknown_variant() -> None:
    with pytest.raises(ValueError, match="nosuch"):
        _registry.get("histogram", "nosuch")
    with pytest.raises(ValueError, match="nosuch"):
        _registry.choose("histogram", "cpu", PROBLEMS[0], "nosuch")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bytes_moved(name: str) -> None:
    v = _registry.get("histogram", name)
    for p in PROBLEMS:
        assert v.bytes_moved(p) == p.size + 8 * p.nbins, (name, p)
        assert p.bytes_moved == p.size + 8 * p.nbins


@pytest.mark.parametrize("name", warplab.variants("histogram"))
def test_every_registered_variant_bytes_moved(name: str) -> None:
    v = _registry.get("histogram", name)
    p = HistogramProblem(1000, resolve("letters").nbins, "letters", False)
    assert v.bytes_moved(p) == 1000 + 8 * 27
    assert v.family == "histogram" and v.name == name and v.backend in ("cpu", "cuda")
    assert v.summary  # first docstring line


def test_seed_flags() -> None:
    seeds = {v.name for v in _registry.variants("histogram") if v.seed}
    assert seeds == SEEDS


# ------------------------------------------------------------------- dispatch mechanics


@pytest.fixture
def scratch_family():
    fam = "test_scratch_family"
    assert fam not in _registry._REGISTRY
    yield fam
    _registry._REGISTRY.pop(fam, None)


def test_supports_false_passes_to_next(scratch_family: str) -> None:
    def small_only(p):
        return p < 10

    @_registry.register(scratch_family, "fast_small", backend="cpu", bytes_moved=lambda p: p,
                        supports=small_only, rank=0)
    def fast_small():
        """Fast for small."""

    @_registry.register(scratch_family, "general", backend="cpu", bytes_moved=lambda p: p,
                        rank=5)
    def general():
        """General."""

    @_registry.register(scratch_family, "other_backend", backend="cuda", bytes_moved=lambda p: p,
                        rank=-1)
    def other():
        """Other."""

    assert _registry.choose(scratch_family, "cpu", 3).name == "fast_small"
    assert _registry.choose(scratch_family, "cpu", 30).name == "general"
    assert _registry.choose(scratch_family, "cuda", 30).name == "other_backend"
    with pytest.raises(ValueError, match="support"):
        _registry.choose(scratch_family, "cpu", 30, "fast_small")
    assert warplab.variants(scratch_family) == ["other_backend", "fast_small", "general"]
    assert _registry.get(scratch_family, "general").summary == "General."


def test_preferred_for_all(scratch_family: str) -> None:
    assert _registry.preferred_for_all(scratch_family, "cpu") is None  # nothing registered
    _registry.register(scratch_family, "any", backend="cpu", bytes_moved=lambda p: 0,
                       rank=5)(lambda: None)
    assert _registry.preferred_for_all(scratch_family, "cpu").name == "any"
    # a preferred variant with a predicate: dispatch must ask it, so no short cut
    _registry.register(scratch_family, "picky", backend="cpu", bytes_moved=lambda p: 0,
                       supports=lambda p: p < 10, rank=0)(lambda: None)
    assert _registry.preferred_for_all(scratch_family, "cpu") is None
    assert _registry.choose(scratch_family, "cpu", 30).name == "any"
    assert _registry.preferred_for_all("reduce", "cuda").name == "persistent_vec"


def test_prefer_steers_automatic_dispatch_only(scratch_family: str) -> None:
    """A variant that supports a problem but does not prefer it is skipped by automatic
    dispatch, runs when named, and is still taken when no supporting variant prefers it."""
    _registry.register(scratch_family, "big", backend="cpu", bytes_moved=lambda p: 0,
                       supports=lambda p: p < 100, prefer=lambda p: p >= 10, rank=0)(
        lambda: None)
    _registry.register(scratch_family, "small", backend="cpu", bytes_moved=lambda p: 0,
                       supports=lambda p: p < 5, rank=5)(lambda: None)
    assert _registry.choose(scratch_family, "cpu", 50).name == "big"
    assert _registry.choose(scratch_family, "cpu", 3).name == "small"
    assert _registry.choose(scratch_family, "cpu", 7).name == "big"  # none prefers: first able
    assert _registry.choose(scratch_family, "cpu", 3, "big").name == "big"
    assert _registry.preferred_for_all(scratch_family, "cpu") is None
    with pytest.raises(ValueError, match="no"):
        _registry.choose(scratch_family, "cpu", 500)


def test_no_supporting_variant(scratch_family: str) -> None:
    _registry.register(scratch_family, "never", backend="cpu", bytes_moved=lambda p: 0,
                       supports=lambda p: False)(lambda: None)
    with pytest.raises(ValueError, match="no"):
        _registry.choose(scratch_family, "cpu", 1)


def test_register_twice(scratch_family: str) -> None:
    _registry.register(scratch_family, "a", backend="cpu", bytes_moved=lambda p: 0)(lambda: None)
    with pytest.raises(RuntimeError, match="twice"):
        _registry.register(scratch_family, "a", backend="cpu", bytes_moved=lambda p: 0)(
            lambda: None)


def test_numpy_chunked_adds_into_out() -> None:
    v = _registry.get("histogram", "numpy_chunked")
    out = np.ones(27, dtype=np.int64)
    v.fn(np.frombuffer(b"abcZ!", dtype=np.uint8), out, resolve("letters"))
    want = np.ones(27, dtype=np.int64)
    want[[0, 1, 2, 3, 26]] += 1
    np.testing.assert_array_equal(out, want)

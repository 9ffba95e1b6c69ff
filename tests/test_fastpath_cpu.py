"""The small-call fast path without a GPU (``core/fastpath.py``): the plan caches (publish once,
clear, bypass, bound), their keys (device, stream, dtype/op, kernel, mapping, -D options) with
CuPy's device and stream queries replaced by fakes, thread safety on the NumPy backend, and
every public function's error cases raised again, with the same message, after a successful call of
the same shape (warm caches) as with the caches bypassed."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import warplab
from fake_cupy import Dev, Gpu, install
from warplab.core import fastpath, loader
from warplab.families.histogram import cuda as hcuda
from warplab.families.histogram.spec import resolve
from warplab.families.reduce import cuda as rcuda
from warplab.families.reduce.spec import spec
from conftest import run_in_threads


@pytest.fixture(autouse=True)
def _fresh() -> None:
    fastpath.clear()
    yield
    fastpath.clear()


_Dev = Dev  # NumPy memory that the short paths take for a CuPy array (fake_cupy's)


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> Gpu:
    """fake_cupy's stand-in: CuPy's device and stream queries answer what the test sets."""
    return install(monkeypatch)


# --- the caches themselves ------------------------------------------------------------------


def test_plan_cache_publish_clear_bypass_bound() -> None:
    c = fastpath.PlanCache("test.cache", maxsize=3)
    a, b = object(), object()
    assert c.get("k") is None
    assert c.put("k", a) is a and c.put("k", b) is a and c.get("k") is a  # first one wins
    assert fastpath.stats()["test.cache"] == 1
    fastpath.clear()
    assert c.get("k") is None and len(c) == 0
    with fastpath.bypassed():
        assert not fastpath.enabled()
        assert c.put("k", b) is b and c.get("k") is None and len(c) == 0
    assert fastpath.enabled()
    for i in range(4):
        c.put(i, object())
    assert len(c) <= 3


def test_two_threads_publish_one_plan() -> None:
    c = fastpath.PlanCache("test.race")
    start = threading.Barrier(8)
    got: list[object] = []

    def worker() -> None:
        start.wait()
        for key in range(200):
            plan = c.get(key)
            if plan is None:
                plan = c.put(key, object())
            got.append((key, plan))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    by_key: dict[int, set[int]] = {}
    for key, plan in got:
        by_key.setdefault(key, set()).add(id(plan))
    assert all(len(ids) == 1 for ids in by_key.values())  # every thread used the one plan


# --- keys -----------------------------------------------------------------------------------


def test_kernel_cache_keys(gpu: Gpu, monkeypatch: pytest.MonkeyPatch) -> None:
    builds: list[tuple] = []

    def build(*key: object) -> object:
        builds.append(key)
        return object()

    monkeypatch.setattr(loader, "_build_kernel", build)
    src = rcuda.SOURCE
    k = loader.get_kernel(src, "f<int>", all_expressions=("f<int>", "f<float>"),
                          options=loader.defines({"A": 1}))
    assert loader.get_kernel(src, "f<int>", all_expressions=("f<int>", "f<float>"),
                             options=loader.defines({"A": 1})) is k and len(builds) == 1
    others = [loader.get_kernel(src, "f<float>", all_expressions=("f<int>", "f<float>"),
                                options=loader.defines({"A": 1})),          # expression
              loader.get_kernel(src, "f<int>", all_expressions=("f<int>", "f<float>"),
                                options=loader.defines({"A": 2})),          # -D option
              loader.get_kernel(src, "f<int>", options=loader.defines({"A": 1}))]  # module
    gpu.device = 1
    others.append(loader.get_kernel(src, "f<int>", all_expressions=("f<int>", "f<float>"),
                                    options=loader.defines({"A": 1})))      # device
    assert len({id(x) for x in [k, *others]}) == 5 and len(builds) == 5
    assert builds[-1][-1] == 1
    with fastpath.bypassed():
        loader.get_kernel(src, "f<int>", all_expressions=("f<int>", "f<float>"),
                          options=loader.defines({"A": 1}))
    assert len(builds) == 6
    fastpath.clear()
    loader.get_kernel(src, "f<int>", all_expressions=("f<int>", "f<float>"),
                      options=loader.defines({"A": 1}))
    assert len(builds) == 7


def test_defines_follow_the_dict() -> None:
    d = {"B": 2, "A": 1}
    assert loader.defines(d) == ("-DA=1", "-DB=2")
    d["A"] = 5  # a tuning run changes a constant: new options, never the cached ones
    assert loader.defines(d) == ("-DA=5", "-DB=2")


def test_reduce_plan_keys(gpu: Gpu, monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[tuple] = []

    class Plan:
        def __init__(self, s: object, dev: int, stream: int) -> None:
            built.append((s, dev, stream))

    monkeypatch.setattr(rcuda, "_VecPlan", Plan)
    f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
    p = rcuda.vec_plan(spec("sum", f32))
    assert rcuda.vec_plan(spec("sum", f32)) is p and len(built) == 1
    rcuda.vec_plan(spec("sum", f64))         # dtype
    rcuda.vec_plan(spec("max", f32))         # op
    gpu.stream = 12
    rcuda.vec_plan(spec("sum", f32))         # stream
    gpu.device = 1
    q = rcuda.vec_plan(spec("sum", f32))  # device
    assert len(built) == 5 and built[-1][1:] == (1, 12) and q is not p


def test_histogram_plan_keys(gpu: Gpu, monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[tuple] = []

    class Plan:
        def __init__(self, expr: str, mapping: object, smem: int, dev: int) -> None:
            built.append((expr, smem, dev))

    monkeypatch.setattr(hcuda, "_Plan", Plan)
    lut = np.arange(256) % 7
    p = hcuda._plan("k<0>", resolve("bytes"), 64)
    assert hcuda._plan("k<0>", resolve("bytes"), 64) is p and len(built) == 1
    hcuda._plan("k<1>", resolve("ascii128"), 64)   # kernel / mapping
    hcuda._plan("k<0>", resolve("bytes"), 128)     # shared memory (layout)
    t = hcuda._plan("k<3>", resolve(lut), 64)      # a table: keyed by its bytes
    assert hcuda._plan("k<3>", resolve(lut.copy()), 64) is t
    hcuda._plan("k<3>", resolve(np.arange(256) % 5), 64)
    gpu.device = 3
    hcuda._plan("k<0>", resolve("bytes"), 64)      # device
    assert len(built) == 6 and built[-1][2] == 3


# --- thread safety on the NumPy backend -----------------------------------------------------


def test_threads_on_the_numpy_backend() -> None:
    rng = np.random.default_rng(2)
    data = [rng.random(1024, dtype=np.float32) for _ in range(2)]
    raw = [rng.integers(0, 256, 4096, dtype=np.uint8) for _ in range(2)]

    def worker(i: int) -> None:
        with warplab.record_variants() as ran:
            for _ in range(50):
                assert warplab.sum(data[i]) == np.float32(data[i].sum(dtype=np.float64))
                np.testing.assert_array_equal(warplab.byte_histogram(raw[i]),
                                              np.bincount(raw[i], minlength=256))
                np.testing.assert_allclose(warplab.mean(data[i].reshape(32, 32), axis=1),
                                           data[i].reshape(32, 32).mean(axis=1), rtol=1e-6)
        assert len(ran) == 150  # each thread sees its own calls only

    run_in_threads(worker, 2)


def test_environment_override_read_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.arange(10, dtype=np.float32)
    assert warplab.sum(x) == 45
    monkeypatch.setenv("WARPLAB_DEVICE", "nonsense")
    with pytest.raises(ValueError, match="WARPLAB_DEVICE"):
        warplab.sum(x)
    monkeypatch.setenv("WARPLAB_DEVICE", "cpu")
    assert warplab.sum(x) == 45


# --- every error case again through warm caches ---------------------------------------------

F32 = np.arange(64, dtype=np.float32).reshape(8, 8) / 7
U8 = np.arange(256, dtype=np.uint8)
I32 = np.arange(64, dtype=np.int32)
SRC = [np.arange(16, dtype=np.uint8)] * 2
DST = [np.zeros(16, np.uint8) for _ in range(2)]

#: (function, a successful call's arguments, [bad arguments...]) with the same shapes
ERROR_CASES = [
    ("sum", (F32,), [((F32.astype(np.complex64),), {}), ((F32,), {"axis": 2}),
                     ((F32,), {"variant": "nope"}), ((F32,), {"out": np.zeros(3)})]),
    ("mean", (F32,), [((F32,), {"axis": (0, 0)}), ((F32,), {"variant": "nope"})]),
    ("min", (F32,), [((F32[:0],), {}), ((F32,), {"axis": -3})]),
    ("max", (F32,), [((F32[:0],), {}), ((F32.astype(object),), {})]),
    ("var", (F32,), [((F32,), {"ddof": 64}), ((F32,), {"axis": 5})]),
    ("std", (F32,), [((F32,), {"ddof": 100}), ((F32.astype(np.complex128),), {})]),
    ("byte_histogram", (U8,), [((U8.astype(np.float32),), {}), ((U8, "nope"), {}),
                               ((U8,), {"accumulate": True}),
                               ((U8,), {"out": np.zeros(3, np.int64)}),
                               ((U8, np.arange(255)), {}), ((U8,), {"variant": "nope"})]),
    ("histogram", (F32.ravel(), 8, (0.0, 9.0)),
     [((F32.ravel(), 8, (0.0, 9.0)), {"weights": np.ones(3)}),
      ((F32.ravel(), -1, (0.0, 9.0)), {}), ((F32.ravel(), 8, (9.0, 0.0)), {}),
      ((F32.ravel(), [3.0, 1.0]), {})]),
    ("bincount", (I32,), [((I32 - 1,), {}), ((I32,), {"minlength": None}),
                          ((I32.reshape(8, 8),), {}), ((I32.astype(np.float32),), {}),
                          ((I32,), {"weights": np.ones(3)}), ((I32,), {"minlength": -1})]),
    ("matmul", (F32, F32), [((F32, F32[:3]), {}), ((F32.astype(np.int32), F32), {}),
                            ((F32.ravel(), F32), {}), ((F32, F32), {"variant": "nope"}),
                            ((F32, F32), {"out": np.zeros((2, 2), np.float32)})]),
    ("corrcoef", (F32,), [((F32[None],), {}), ((F32.astype(np.complex64),), {}),
                          ((F32,), {"nan_policy": "nope"}), ((F32,), {"precision": "nope"}),
                          ((F32, F32[:, :3]), {})]),
    ("series_stats", (F32,), [((F32.ravel(),), {}), ((F32.astype(np.complex64),), {})]),
    ("random_walk", (8, 8), [((0, 8), {}), ((8, 8), {"eps": 2.0}), ((8, 8), {"dtype": "i4"}),
                             ((8, 8), {"seed": -1})]),
    ("copy_batched", (SRC, DST), [((SRC, DST[:1]), {}), ((SRC, [np.zeros(3, np.uint8)] * 2), {}),
                                  (("x", DST), {})]),
]


def _raised(fn, args: tuple, kwargs: dict) -> tuple[type, str]:
    with pytest.raises(Exception) as info:  # noqa: PT011  (compared below)
        fn(*args, **kwargs)
    return type(info.value), str(info.value)


@pytest.mark.parametrize("name, good, bad", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_errors_through_warm_caches(name: str, good: tuple, bad: list) -> None:
    fn = getattr(warplab, name)
    with fastpath.bypassed():
        cold = [_raised(fn, a, k) for a, k in bad]
    fn(*good)
    fn(*good)  # warm: every plan of this shape built
    warm = [_raised(fn, a, k) for a, k in bad]
    assert warm == cold
    assert all(issubclass(t, (TypeError, ValueError)) for t, _ in warm), warm


def test_stream_key_separates_threads_on_the_per_thread_stream(gpu: Gpu) -> None:
    """Every host thread reports the same handle for the per-thread default stream, which is
    a different stream per thread: per-stream scratch must not be shared between them."""
    import threading

    gpu.stream = 11
    assert fastpath.stream_key() == 11
    gpu.stream = 2  # cudaStreamPerThread
    keys: list = []
    t = threading.Thread(target=lambda: keys.append(fastpath.stream_key()))
    t.start()
    t.join()
    assert keys[0] != fastpath.stream_key() and keys[0][0] == 2

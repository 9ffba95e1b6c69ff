"""Results as ``DeviceScalar`` and ``DeviceArray`` (``core/scalar.py``) on the GPU
(``pytest -m gpu``): every whole-array reduction returns a ``DeviceScalar``, short path or full
path; its ``float()``, ``int()``, ``bool()`` and ``item()`` give what CuPy's give, read through C
where it is built; every family's small array results are ``DeviceArray`` whose ``get()`` gives
CuPy's bytes; the reads wait for the stream's work (a non-default stream, a long kernel); a
thread with no current context reads through CuPy; derived arrays are plain ``cupy.ndarray``.
One GPU here: the other-device fallback is tested on the CPU (``tests/test_scalar_cpu.py``)."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import warplab
from warplab.core import fastpath, launch, scalar

pytestmark = pytest.mark.gpu
if not warplab.cuda_available():
    pytest.skip("no usable CUDA GPU", allow_module_level=True)
cupy = pytest.importorskip("cupy")

BASE = (cupy.ndarray.__float__, cupy.ndarray.__int__, cupy.ndarray.__bool__,
        cupy.ndarray.item)


def _check(s, want: float) -> None:
    assert type(s) is scalar.scalar_type() and isinstance(s, cupy.ndarray) and s.ndim == 0
    for mine, base in zip((float, int, bool, lambda v: v.item()), BASE):
        if mine is int and np.isnan(want):
            with pytest.raises(ValueError):
                int(s)
            continue
        got, ref = mine(s), base(s)
        assert type(got) is type(ref) and (got == ref or (np.isnan(got) and np.isnan(ref)))
    if not np.isnan(want):
        assert float(s) == pytest.approx(want, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("op", ["sum", "mean", "min", "max"])
@pytest.mark.parametrize("n", [1, 1000, 300_001])
def test_whole_array_results(op: str, dtype: str, n: int) -> None:
    rng = np.random.default_rng(n)
    h = (rng.standard_normal(n) * 100).astype(dtype)
    x = cupy.asarray(h)
    want = getattr(np, op)(h.astype(np.float64))
    _check(getattr(warplab, op)(x), want)       # the short path
    _check(getattr(warplab, op)(x[::2]), getattr(np, op)(h[::2].astype(np.float64)))  # full
    _check(warplab.reduce(x, op, variant="persistent_vec"), want)


def test_other_reductions_and_axes() -> None:
    h = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = cupy.asarray(h)
    _check(warplab.var(x), h.astype(np.float64).var())
    _check(warplab.sum(x, axis=(0, 1)), 66.0)            # every axis through axis_fast
    assert type(warplab.sum(x, axis=1)) is scalar.array_type()  # not 0-d: a DeviceArray
    _check(warplab.max(cupy.asarray([np.nan, 1.0])), np.nan)


def test_reads_are_cupys_without_c(monkeypatch: pytest.MonkeyPatch) -> None:
    x = cupy.arange(10, dtype=np.float32)
    monkeypatch.setattr(launch, "reader", lambda: None)
    fastpath.clear()
    _check(warplab.sum(x), 45.0)
    monkeypatch.undo()
    fastpath.clear()


def test_read_waits_for_the_stream() -> None:
    n = 1 << 26
    with cupy.cuda.Stream(non_blocking=True):
        x = cupy.ones(n, dtype=np.float64)
        for _ in range(3):  # launches queued behind a long fill
            s = warplab.sum(x)
            assert float(s) == n
    assert float(s) == n


def test_threads_without_a_context() -> None:
    x = cupy.arange(1000, dtype=np.float64)
    s = warplab.sum(x)
    got: dict = {}

    def reader_only(k: int) -> None:  # a new thread: no runtime call before the read
        got[k] = (float(s), int(s), s.item())

    def computes(k: int) -> None:
        got[k] = (float(warplab.sum(x)), int(warplab.sum(x)), warplab.sum(x).item())

    threads = [threading.Thread(target=reader_only if k % 2 else computes, args=(k,))
               for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == {k: (499500.0, 499500, 499500.0) for k in range(8)}


def test_found_by_name_and_pickled() -> None:
    import pickle

    s = warplab.sum(cupy.arange(4, dtype=np.float64))
    assert scalar.DeviceScalar is type(s)
    back = pickle.loads(pickle.dumps(s))
    assert isinstance(back, cupy.ndarray) and float(back) == 6.0


def test_derived_arrays_are_plain() -> None:
    x = cupy.arange(8, dtype=np.float32)
    s = warplab.sum(x)
    for d in (x / s, s + 1, -s, s.reshape(1), s[()], s.copy(), s.astype(np.float64),
              cupy.sum(s), cupy.asarray(s) * 2):
        assert type(d) is cupy.ndarray
    cupy.testing.assert_allclose(x / s, cupy.arange(8, dtype=np.float32) / 28)


def _results() -> list:
    """(name, result) of every family's small-call results on device input."""
    rng = np.random.default_rng(5)
    m = cupy.asarray(rng.standard_normal((64, 64)).astype(np.float32))
    u = cupy.asarray(rng.random(1024).astype(np.float32))
    b = cupy.asarray(rng.integers(0, 256, 4096).astype(np.uint8))
    k = cupy.asarray(rng.integers(0, 64, 1024).astype(np.int32))
    w = cupy.asarray(rng.integers(0, 9, 1024).astype(np.float64))
    mean, norm = warplab.series_stats(m)
    hist, edges = warplab.histogram(u, 64, (0, 1))
    return [("mean_rows", warplab.mean(m, axis=1)), ("std_cols", warplab.std(m, axis=0)),
            ("series_mean", mean), ("series_norm", norm), ("hist", hist), ("edges", edges),
            ("byte_hist", warplab.byte_histogram(b)), ("bincount", warplab.bincount(k, w)),
            ("corrcoef", warplab.corrcoef(m[:8])), ("matmul", warplab.matmul(m, m)),
            ("matmul_full", warplab.matmul(m[:, :32], m[:32]))]


def test_array_results_get_cupys_bytes() -> None:
    for name, r in _results():
        assert type(r) is scalar.array_type(), name
        got, ref = r.get(), cupy.ndarray.get(r)
        assert type(got) is np.ndarray and got.dtype == ref.dtype and got.shape == ref.shape
        assert got.tobytes() == ref.tobytes(), name
        assert cupy.asnumpy(r).tobytes() == ref.tobytes(), name
        host = np.empty_like(ref)
        assert r.get(out=host) is host and host.tobytes() == ref.tobytes()  # CuPy's get()
        stream = cupy.cuda.Stream(non_blocking=True)
        assert r.get(stream=stream).tobytes() == ref.tobytes()


def test_array_get_waits_for_the_stream() -> None:
    with cupy.cuda.Stream(non_blocking=True):
        x = cupy.ones((64, 1 << 20), dtype=np.float32)  # a long fill queued first
        for _ in range(3):
            r = warplab.mean(x, axis=1)
            assert (r.get() == 1.0).all()
        x[...] = 2.0
        r = warplab.sum(x, axis=1)
        assert (r.get() == float(1 << 21)).all()


def test_array_get_in_threads_without_a_context() -> None:
    r = warplab.mean(cupy.arange(64 * 64, dtype=np.float64).reshape(64, 64), axis=1)
    want = np.arange(64 * 64, dtype=np.float64).reshape(64, 64).mean(axis=1)
    got: dict = {}

    def reader_only(k: int) -> None:  # a new thread: no runtime call before the read
        got[k] = r.get()

    threads = [threading.Thread(target=reader_only, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 4 and all((g == want).all() for g in got.values())


def test_array_results_derive_plain_and_pickle() -> None:
    import pickle

    r = warplab.mean(cupy.arange(16, dtype=np.float32).reshape(4, 4), axis=1)
    for d in (r + 1, r[1:], r.reshape(2, 2), r.copy(), r.astype(np.float64), cupy.sqrt(r),
              r.view(np.int32), cupy.asarray(r) * 2):
        assert type(d) is cupy.ndarray
    back = pickle.loads(pickle.dumps(r))
    assert isinstance(back, cupy.ndarray) and (back.get() == [1.5, 5.5, 9.5, 13.5]).all()
    big = scalar.empty(scalar.LIMIT // 4 + 1, np.float32)  # above the staging limit
    big[...] = 3.0
    assert (big.get() == 3.0).all()


def test_many_small_results_stay_distinct() -> None:
    """Many small results alive at once (zeroed counts and written means), on the default and
    on a non-blocking stream, in a second thread: each its own correct memory."""
    rng = np.random.default_rng(9)
    hs = [rng.integers(0, 256, 4096).astype(np.uint8) for _ in range(40)]
    ms = [rng.standard_normal((64, 64)).astype(np.float32) for _ in range(40)]

    def run() -> tuple[list, list]:
        xs, ys = [cupy.asarray(h) for h in hs], [cupy.asarray(m) for m in ms]
        return [warplab.byte_histogram(x) for x in xs], [warplab.mean(y, axis=1) for y in ys]

    def check(counts: list, means: list) -> None:
        assert len({c.data.ptr for c in counts} | {m.data.ptr for m in means}) == 80
        for c, h in zip(counts, hs):
            assert (c.get() == np.bincount(h, minlength=256)).all()
        for m, h in zip(means, ms):
            np.testing.assert_allclose(m.get(), h.astype(np.float64).mean(axis=1), rtol=1e-6)

    check(*run())
    with cupy.cuda.Stream(non_blocking=True):
        got = run()
        check(*got)
    out: dict = {}
    t = threading.Thread(target=lambda: out.setdefault("r", run()))
    t.start()
    t.join()
    cupy.cuda.runtime.deviceSynchronize()
    check(*out["r"])

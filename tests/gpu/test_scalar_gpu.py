"""0-d results as ``DeviceScalar`` (``core/scalar.py``) on the GPU (``pytest -m gpu``): every
whole-array reduction returns one, short path or full path; its ``float()``, ``int()``,
``bool()`` and ``item()`` give what CuPy's give, read through C where it is built; the read
waits for the stream's work (a non-default stream, a long kernel); a thread with no current
context reads it through CuPy; derived arrays are plain ``cupy.ndarray``. One GPU here: the
other-device fallback is tested on the CPU (``tests/test_scalar_cpu.py``)."""
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
    assert type(warplab.sum(x, axis=1)) is cupy.ndarray  # not 0-d: plain
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

"""Memory plans without a GPU: ``corrcoef``'s ``plan_workspace`` with given free-memory
figures (whole; tiled into ``out``, a host result or a device result; the error and its
estimate), a device corrcoef tiled into a device result and device ``corr_pairs`` kept on the
"GPU" (``fake_cupy`` with the kernels' NumPy models), and the device sink's error."""
from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

import warplab
from fake_cupy import Dev, dev
from test_fastpath_work_corr_small import gpu  # noqa: F401  (the fake GPU fixture)
from warplab.core.errors import DeviceOutOfMemoryError
from warplab.families.corr import pairs, sinks, tiles
from warplab.families.corr.api import MIN_DEVICE_TILE, TILE_ELEMENT_BYTES, plan_workspace

F64 = np.dtype(np.float64)


def _never() -> int:
    raise AssertionError("free memory asked")


def test_65536_x_4096_fits_tiled_into_a_device_result() -> None:
    """The whole-matrix working set (139.6 GB) does not fit 83.4 GB; the 34.4 GB result, the
    2.1 GB of rows and the tiles do."""
    m, n, free = 65536, 4096, 83_400_000_000
    ws = plan_workspace(m, n, F64, "float64", "cuda", True, None, free=lambda: free)
    assert not ws.whole
    result, rows = m * m * 8, m * n * 8
    assert ws.tile == tiles.device_tile(m, n, 8, free - result) and 16384 < ws.tile < m
    assert result + rows + TILE_ELEMENT_BYTES * ws.tile ** 2 <= free
    whole = plan_workspace(m, n, F64, "float64", "cuda", True, None, free=lambda: 250 * 10**9)
    assert whole.whole  # 139.6 GB within 0.6 of 250 GB


def test_device_result_too_big_even_tiled() -> None:
    m, n, free = 65536, 4096, 30_000_000_000
    with pytest.raises(ValueError) as info:
        plan_workspace(m, n, F64, "float64", "cuda", True, None, free=lambda: free)
    msg = str(info.value)
    need = m * m * 8 + m * n * 8 + TILE_ELEMENT_BYTES * MIN_DEVICE_TILE ** 2
    assert f"needs {need / 1e9:.1f} GB of GPU memory even tile by tile" in msg  # 36.5 GB
    assert "36.5 GB" in msg and "the result 34.4 GB" in msg and "rows 2.1 GB" in msg
    assert "256 x 256" in msg and "free: 30.0 GB" in msg and "pass out=" in msg
    assert "139.6" not in msg
    # just enough: the result, the rows and one smallest tile
    ok = plan_workspace(m, n, F64, "float64", "cuda", True, None, free=lambda: need)
    assert not ok.whole and ok.tile == MIN_DEVICE_TILE
    with pytest.raises(ValueError, match="even tile by tile"):
        plan_workspace(m, n, F64, "float64", "cuda", True, None, free=lambda: need - 1)


def test_host_input_and_out_tile_into_their_arrays() -> None:
    m, n, free = 65536, 4096, 30_000_000_000
    host = plan_workspace(m, n, F64, "float64", "cuda", False, None, free=lambda: free)
    out = plan_workspace(m, n, F64, "float64", "cuda", True, np.empty((1, 1)), free=lambda: free)
    assert host == out and not host.whole and host.tile == tiles.device_tile(m, n, 8, free)


def test_float32_result_and_precision() -> None:
    m, n = 65536, 4096
    f32 = np.dtype(np.float32)
    need = m * m * 4 + m * n * 4 + TILE_ELEMENT_BYTES * MIN_DEVICE_TILE ** 2
    ws = plan_workspace(m, n, f32, "float32", "cuda", True, None, free=lambda: need)
    assert not ws.whole and ws.tile == MIN_DEVICE_TILE
    with pytest.raises(ValueError, match="float32 result needs"):
        plan_workspace(m, n, f32, "float32", "cuda", True, None, free=lambda: need - 1)


def test_tiny_is_whole_without_asking(monkeypatch: pytest.MonkeyPatch) -> None:
    assert plan_workspace(100, 50, F64, "float64", "cuda", True, None, free=_never).whole
    monkeypatch.setattr(tiles, "TILE_CAP", 30)  # tests force tiles
    ws = plan_workspace(100, 50, F64, "float64", "cuda", True, None, free=lambda: 1 << 34)
    assert not ws.whole and ws.tile == 30


def test_cpu_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    ws = plan_workspace(100, 50, F64, "float64", "cpu", False, None, host=lambda: 1 << 34,
                        free=_never)
    assert ws.whole
    assert plan_workspace(100, 50, F64, "float64", "cpu", False, np.empty((100, 100)),
                          host=lambda: 1 << 34) == (False, tiles.cpu_tile(100))
    big = plan_workspace(20_000, 50, F64, "float64", "cpu", False, None, host=lambda: 1 << 34)
    assert not big.whole and big.tile == tiles.cpu_tile(20_000)
    with pytest.raises(ValueError, match="more than this host's memory"):
        plan_workspace(20_000, 50, F64, "float64", "cpu", False, None, host=lambda: 1 << 20)
    assert not plan_workspace(20_000, 50, F64, "float64", "cpu", False, None,
                              host=lambda: None).whole


def _walks(m: int, n: int, const: tuple[int, ...] = ()) -> Dev:
    x = np.cumsum(np.random.default_rng(m).standard_normal((m, n)), axis=1).astype(np.float32)
    for i in const:
        x[i] = 0.5
    return dev(x)


def _numpy(x: Dev) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.corrcoef(np.asarray(x).astype(np.float64))


def test_device_corrcoef_tiled_into_a_device_result(gpu, monkeypatch) -> None:  # noqa: F811
    x = _walks(300, 64, const=(7,))
    m, n = 300, 64
    free = m * m * 8 + m * n * 8 + TILE_ELEMENT_BYTES * MIN_DEVICE_TILE ** 2
    monkeypatch.setattr(tiles, "free_device_bytes", lambda: free)
    fills = []
    fill = tiles.fill_tiled

    def recording(eng, out, t):
        fills.append((type(out), t))
        return fill(eng, out, t)

    monkeypatch.setattr(tiles, "fill_tiled", recording)
    with pytest.warns(RuntimeWarning):
        got = warplab.corrcoef(x, variant="tiled_smem")
    assert isinstance(got, Dev) and len(fills) == 1  # a device result, tiled once
    assert issubclass(fills[0][0], Dev) and fills[0][1] == MIN_DEVICE_TILE
    want = _numpy(x)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(np.asarray(got)[~np.isnan(want)], want[~np.isnan(want)],
                               atol=1e-12)
    monkeypatch.setattr(tiles, "free_device_bytes", lambda: free - 1)
    with pytest.raises(ValueError, match="even tile by tile"):
        warplab.corrcoef(x, variant="tiled_smem")


@pytest.fixture
def device_ops(gpu):  # noqa: F811
    """The CuPy operations the threshold stream uses, on the fake."""
    cp = sys.modules["cupy"]
    wrap = lambda f: lambda *a, **k: f(*a, **k).view(Dev)  # noqa: E731
    cp.abs, cp.stack, cp.cumsum = wrap(np.abs), wrap(np.stack), wrap(np.cumsum)
    cp.full, cp.searchsorted, cp.diff = wrap(np.full), wrap(np.searchsorted), wrap(np.diff)
    return gpu


def test_device_pairs_stay_on_the_device(device_ops, monkeypatch) -> None:
    x = _walks(50, 40, const=(3,))
    monkeypatch.setattr(pairs, "strip_bytes_for", lambda eng: 2 * 48 * 50 * 4)
    with pytest.warns(RuntimeWarning):
        got = warplab.corr_pairs(x, threshold=0.8, variant="tiled_smem")
        want = warplab.corr_pairs(np.asarray(x).view(np.ndarray), threshold=0.8,
                                  device="cpu")
    assert all(type(a) is Dev for a in got) and got.i.size > 50
    np.testing.assert_array_equal(got.i, want.i)
    np.testing.assert_array_equal(got.j, want.j)
    np.testing.assert_allclose(got.r, want.r, atol=1e-9)
    with pytest.warns(RuntimeWarning):
        host = warplab.corr_pairs(x, threshold=0.8, variant="tiled_smem", out="host")
    assert all(type(a) is np.ndarray for a in host)
    np.testing.assert_array_equal(host.j, want.j)


def test_device_pairs_too_many_for_the_device(device_ops, monkeypatch) -> None:
    x = _walks(50, 40)
    budget = 2 * 48 * 50 * 4
    monkeypatch.setattr(pairs, "strip_bytes_for", lambda eng: budget)
    monkeypatch.setattr(tiles, "free_device_bytes", lambda: budget + 400 * sinks.HELD_BYTES)
    with pytest.raises(DeviceOutOfMemoryError) as info:
        warplab.corr_pairs(x, threshold=0.0, variant="tiled_smem")
    msg = str(info.value)
    assert msg.startswith("warplab.corr_pairs: the pairs do not fit GPU memory: ")
    assert "about 1,225 expected in total" in msg and "of the 1,225 pairs" in msg
    assert "out='host'" in msg and "out='pairs.npy'" in msg and "top_k" in msg
    host = warplab.corr_pairs(x, threshold=0.0, variant="tiled_smem", out="host")
    assert host.i.size == 1225


def test_device_sink_alone() -> None:
    sink = sinks.DeviceSink(np, 10, free=1000 + 10 * sinks.HELD_BYTES, strip_bytes=1000)
    i = np.arange(4, dtype=np.int64)
    sink.add(i, i + 1, i * 0.5, 0.2)
    sink.add(i[:0], i[:0], i[:0] * 0.5, 0.3)
    sink.add(i + 4, i + 5, i * 0.25, 0.5)
    assert sink.found == 8
    with pytest.raises(DeviceOutOfMemoryError, match=r"11 pairs found so far .* 60\.0% .* "
                                                     r"about 18 expected"):
        sink.add(i[:3] + 8, i[:3] + 9, i[:3] * 1.0, 0.6)
    got = sink.result()  # what was held before the refusal
    assert got[0].tolist() == list(range(8)) and got[2].dtype == np.float64
    assert all(not f for f in sink.fields)  # the strips' copies dropped

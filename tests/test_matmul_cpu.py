"""warplab.matmul on the NumPy backend against NumPy: shapes, dtypes, layouts, ``out=``, errors,
the variant registry and cost models, the benchmark's analysis, property tests and the CLI."""
from __future__ import annotations

import json
import zlib
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import warplab
from warplab.core import registry as _registry
from warplab.families.matmul.spec import MatmulProblem, intensity
from warplab.lab.harness import results
from warplab.lab.campaigns.matmul import bench as matmul_bench
from warplab.lab.cli import main
from conftest import last_ran


SEEDS = {"naive", "tiled_smem16"}
EXPECTED = SEEDS | {"regtile_64x128_8x8", "regtile_64x64_4x4", "numpy"}
SHAPES = [(1, 1, 1), (15, 16, 17), (17, 15, 16), (16, 16, 16), (33, 31, 1), (1, 100, 1),
          (1000, 3, 2), (2, 3, 1000), (1, 1, 1000), (999, 1, 1), (127, 129, 65), (4, 4, 4)]


def _operands(m: int, n: int, k: int, dtype: str = "float32") -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(zlib.crc32(f"{m}/{n}/{k}/{dtype}".encode()))
    return (rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype))


def _check(got: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    want = np.matmul(a, b)
    assert isinstance(got, np.ndarray)
    assert got.dtype == want.dtype and got.shape == want.shape
    ref = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
    scale = np.linalg.norm(ref) or 1.0
    assert np.linalg.norm(got - ref) / scale < (1e-5 if got.dtype == np.float32 else 1e-12)


# ---------------------------------------------------------------------------- vs NumPy

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_matches_numpy(m: int, n: int, k: int, dtype: str) -> None:
    a, b = _operands(m, n, k, dtype)
    _check(warplab.matmul(a, b), a, b)
    assert last_ran() == "numpy"


@pytest.mark.parametrize("m,n", [(0, 3), (3, 0), (0, 0)])
def test_empty_result(m: int, n: int) -> None:
    a, b = np.ones((m, 4), np.float32), np.ones((4, n), np.float32)
    got = warplab.matmul(a, b)
    assert got.shape == (m, n) and got.dtype == np.float32


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_k_zero_gives_zeros_like_numpy(dtype: str) -> None:
    a, b = np.ones((3, 0), dtype), np.ones((0, 5), dtype)
    want = np.matmul(a, b)
    got = warplab.matmul(a, b)
    assert got.dtype == want.dtype and got.shape == (3, 5)
    np.testing.assert_array_equal(got, want)
    out = np.full((3, 5), np.nan, dtype)
    assert warplab.matmul(a, b, out=out) is out and not out.any()


@pytest.mark.parametrize("da,db", [("float32", "float64"), ("float64", "float32")])
def test_mixed_dtypes_promote_like_numpy(da: str, db: str) -> None:
    a, b = _operands(7, 5, 3, da)[0], _operands(7, 5, 3, db)[1]
    got = warplab.matmul(a, b)
    assert got.dtype == np.matmul(a, b).dtype == np.float64
    np.testing.assert_allclose(got, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-12)


# ---------------------------------------------------------------------------- layouts, inputs

def _layouts() -> list:
    a, b = _operands(40, 30, 20, "float64")
    big_a, big_b = _operands(80, 60, 40, "float32")
    return [
        pytest.param(np.asfortranarray(a), b, id="fortran_a"),
        pytest.param(a, np.asfortranarray(b), id="fortran_b"),
        pytest.param(big_a[::2, ::2], big_b[::2, ::2], id="strided"),
        pytest.param(a.T.copy().T, b.T.copy().T, id="transposed_views"),
        pytest.param(big_a[::-2, 1::2], big_b[1::2, ::-2], id="reversed"),
    ]


@pytest.mark.parametrize("a,b", _layouts())
def test_layouts(a: np.ndarray, b: np.ndarray) -> None:
    before = a.copy(), b.copy()
    _check(warplab.matmul(a, b), a, b)
    np.testing.assert_array_equal(a, before[0])
    np.testing.assert_array_equal(b, before[1])


def test_python_lists() -> None:
    got = warplab.matmul([[1.0, 2.0], [3.0, 4.0]], [[5.0], [6.0]])
    np.testing.assert_array_equal(got, [[17.0], [39.0]])
    assert got.dtype == np.float64


def test_dlpack_only_objects() -> None:
    a, b = _operands(9, 11, 13)
    dlpack_only = [SimpleNamespace(__dlpack__=x.__dlpack__, __dlpack_device__=x.__dlpack_device__)
                   for x in (a, b)]  # like a foreign CPU tensor: nothing but DLPack
    _check(warplab.matmul(*dlpack_only), a, b)


def test_torch_cpu_tensors() -> None:
    torch = pytest.importorskip("torch")
    a, b = _operands(9, 11, 13)
    ta, tb = torch.from_numpy(a.copy()), torch.from_numpy(b.copy())
    _check(warplab.matmul(ta, tb), a, b)
    _check(warplab.matmul(ta.T.contiguous().T, tb[:, ::2]), a, b[:, ::2])


# ---------------------------------------------------------------------------- out=

def test_out_is_written_and_returned() -> None:
    a, b = _operands(6, 5, 4)
    out = np.full((6, 5), np.nan, np.float32)
    assert warplab.matmul(a, b, out=out) is out
    _check(out, a, b)


def test_out_aliasing_an_operand() -> None:
    a, b = _operands(8, 8, 8, "float64")
    want = a @ b
    got = warplab.matmul(a, b, out=a)
    assert got is a
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("out", [np.empty((5, 6), np.float32), np.empty((6, 5), np.float64),
                                 np.empty((6, 10), np.float32)[:, ::2], [[0.0] * 5] * 6],
                         ids=["shape", "dtype", "strided", "list"])
def test_bad_out(out) -> None:
    a, b = _operands(6, 5, 4)
    with pytest.raises(ValueError, match="out must"):
        warplab.matmul(a, b, out=out)


# ---------------------------------------------------------------------------- errors

def test_shape_mismatch_names_both_shapes() -> None:
    with pytest.raises(ValueError) as ei:
        warplab.matmul(np.ones((3, 4), np.float32), np.ones((5, 2), np.float32))
    assert "(3, 4)" in str(ei.value) and "(5, 2)" in str(ei.value)


@pytest.mark.parametrize("dtype", ["int32", "int64", "float16", "bool", "complex64", "uint8"])
def test_unsupported_dtype(dtype: str) -> None:
    with pytest.raises(TypeError, match=dtype):
        warplab.matmul(np.ones((2, 2), dtype), np.ones((2, 2), np.float32))
    with pytest.raises(TypeError, match=dtype):
        warplab.matmul(np.ones((2, 2), np.float64), np.ones((2, 2), dtype))


@pytest.mark.parametrize("sa,sb", [((3,), (3, 2)), ((2, 3), (3,)), ((2, 2, 2), (2, 2)),
                                   ((), (1, 1))])
def test_not_2d(sa: tuple, sb: tuple) -> None:
    with pytest.raises(ValueError, match="2-D"):
        warplab.matmul(np.ones(sa, np.float32), np.ones(sb, np.float32))


def test_unknown_variant_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError) as ei:
        warplab.matmul(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), variant="v2")
    for name in EXPECTED:
        assert name in str(ei.value)


@pytest.mark.skipif(warplab.cuda_available(), reason="a GPU is present")
@pytest.mark.parametrize("name", sorted(EXPECTED - {"numpy"}))
def test_cuda_variant_without_gpu(name: str) -> None:
    with pytest.raises(warplab.DeviceUnavailableError, match=name):
        warplab.matmul(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), variant=name)


@pytest.mark.skipif(warplab.cuda_available(), reason="a GPU is present")
def test_device_cuda_without_gpu() -> None:
    with pytest.raises(warplab.DeviceUnavailableError):
        warplab.matmul(np.ones((2, 2)), np.ones((2, 2)), device="cuda")


# ---------------------------------------------------------------------------- registry, costs

def test_variants_registered() -> None:
    assert set(warplab.variants("matmul")) == EXPECTED
    assert warplab.variants("matmul", "cpu") == ["numpy"]
    cuda = warplab.variants("matmul", "cuda")
    assert cuda[0] == "regtile_64x128_8x8"
    assert cuda.index("tiled_smem16") < cuda.index("naive")


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (1024, 1024, 1024), (8192, 8192, 8192)])
def test_automatic_dispatch(m: int, n: int, k: int) -> None:
    for dtype, want in ((np.float32, "regtile_64x128_8x8"), (np.float64, "regtile_64x64_4x4")):
        p = MatmulProblem(m, n, k, np.dtype(dtype), True)
        assert _registry.choose("matmul", "cuda", p).name == want


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_seed_flags_and_cost_models(name: str) -> None:
    v = _registry.get("matmul", name)
    assert v.seed is (name in SEEDS) and v.summary
    p = MatmulProblem(256, 512, 128, np.dtype(np.float32), False)
    assert v.flops(p) == 2 * 256 * 512 * 128
    mnk, mn = 256 * 512 * 128, 256 * 512
    words = {"naive": mnk // 16 + mnk + mn,
             "tiled_smem16": 256 * 128 * 32 + 128 * 512 * 16 + mn,
             "regtile_64x128_8x8": 256 * 128 * 4 + 128 * 512 * 4 + mn,
             "regtile_64x64_4x4": 256 * 128 * 8 + 128 * 512 * 4 + mn,
             "numpy": 256 * 128 + 128 * 512 + mn}[name]
    assert v.bytes_moved(p) == 4 * words


@pytest.mark.parametrize("name,flop_per_byte", [("naive", 2 / (4 * 17 / 16)),
                                                ("tiled_smem16", 4.0),
                                                ("regtile_64x128_8x8", 64 / 3),
                                                ("regtile_64x64_4x4", 16.0)])
def test_intensity_of_large_float32_products(name: str, flop_per_byte: float) -> None:
    p = MatmulProblem(8192, 8192, 8192, np.dtype(np.float32), True)
    ai = intensity(p, _registry.get("matmul", name).bytes_moved(p))
    assert ai == pytest.approx(flop_per_byte, rel=0.01)


@pytest.mark.parametrize("name,f64", [("regtile_64x128_8x8", False), ("regtile_64x64_4x4", True),
                                      ("tiled_smem16", True), ("naive", True)])
def test_supports(name: str, f64: bool) -> None:
    v = _registry.get("matmul", name)
    assert v.supports(MatmulProblem(5, 5, 5, np.dtype(np.float32), True))
    assert v.supports(MatmulProblem(5, 5, 5, np.dtype(np.float64), True)) is f64
    assert not v.supports(MatmulProblem(5, 5, 1 << 31, np.dtype(np.float32), True))


# ---------------------------------------------------------------------------- bench analysis

def _record(verified: bool = True) -> dict:
    kernel = {"median": 10.0, "min": 10.0, "q10": 10.0, "q90": 10.0, "max": 10.0}
    return {"phases": {"kernel": kernel}, "verified": verified, "bytes_moved": 4 * 10**9}


def test_flop_analysis_memory_and_compute_bound() -> None:
    p = MatmulProblem(1000, 1000, 1000, np.dtype(np.float32), False)  # 2e9 flops
    ceilings = {"copy_gbps": 1000.0, "sgemm_gflops": 50_000.0}
    rec = matmul_bench.add_flop_analysis(_record(), p, ceilings)
    assert rec["flops"] == 2 * 10**9 and rec["gflops"] == pytest.approx(200.0)
    assert rec["intensity"] == pytest.approx(0.5)
    assert rec["bound_by"] == "memory" and rec["bound_gflops"] == pytest.approx(500.0)
    assert rec["pct_of_bound"] == pytest.approx(40.0)
    assert rec["pct_of_ceiling"] == pytest.approx(0.4) and rec["compute_ceiling"] == "sgemm_gflops"
    fast = dict(_record(), bytes_moved=10**6)
    rec = matmul_bench.add_flop_analysis(fast, p, ceilings)
    assert rec["bound_by"] == "compute" and rec["bound_gflops"] == 50_000.0


def test_flop_analysis_ceiling_fallbacks() -> None:
    p = MatmulProblem(10, 10, 10, np.dtype(np.float64), False)
    rec = matmul_bench.add_flop_analysis(_record(), p, {"datasheet_fp64_gflops": 1.0})
    assert rec["compute_ceiling"] == "datasheet_fp64_gflops" and rec["bound_by"] == "compute"
    rec = matmul_bench.add_flop_analysis(_record(verified=False), p, {})
    assert rec["gflops"] is None and rec["bound_gflops"] is None and rec["bound_by"] is None


def test_reference_row_sample_catches_poison(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(matmul_bench, "REFERENCE_BUDGET", 40 * 30 * 4)
    a, b = _operands(50, 40, 30, "float64")
    ref = matmul_bench.reference(a, b)
    assert ref.rows is not None and ref.rows.size == 4
    c = a @ b
    assert ref.rel_error(c) < 1e-15
    c[np.setdiff1d(np.arange(50), ref.rows)[0], 7] = np.nan  # outside the sampled rows
    assert np.isnan(ref.rel_error(c))


# ---------------------------------------------------------------------------- properties

@settings(max_examples=60, deadline=None, database=None)
@given(dims=st.tuples(st.integers(1, 40), st.integers(1, 40), st.integers(0, 40)),
       dtype=st.sampled_from([np.float32, np.float64]), data=st.data())
def test_prop_matches_numpy(dims: tuple, dtype, data) -> None:
    m, n, k = dims
    elems = st.floats(-1e3, 1e3, allow_nan=False, width=32)
    a = data.draw(hnp.arrays(dtype, (m, k), elements=elems))
    b = data.draw(hnp.arrays(dtype, (k, n), elements=elems))
    got = warplab.matmul(a, b)
    want = np.matmul(a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    bound = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    eps = np.finfo(dtype).eps
    assert np.all(np.abs(got - a.astype(np.float64) @ b.astype(np.float64))
                  <= 2 * (k + 1) * eps * bound + 1e-30)


# ---------------------------------------------------------------------------- CLI

def _one_error_line(capsys: pytest.CaptureFixture) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warplab: error:"), err
    return err[0]


def test_cli_matmul_table_and_json(capsys, tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    assert main(["matmul", "--size", "64", "--m", "33", "--runs", "2", "--warmup", "1",
                 "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "GFLOP/s" in text and "flop/byte" in text and "numpy" in text and "33x64" in text
    (rec,) = results.read(out)["results"]
    assert rec["family"] == "matmul" and rec["verified"] and rec["dims"] == [33, 64, 64]
    assert isinstance(rec["flops"], int) and rec["flops"] == 2 * 33 * 64 * 64
    assert rec["gflops"] > 0 and rec["rel_error"] < 1e-6
    assert rec["params"]["shape"] == "33x64x64"


def test_cli_bench_matmul_quick_is_capped(capsys, tmp_path: Path) -> None:
    assert main(["bench", "matmul", "--quick", "--runs", "1", "--warmup", "0",
                 "--out", str(tmp_path)]) == 0
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    doc = json.loads((run / "matmul.json").read_text())
    for variant, provider in (("numpy", "warplab"), ("numpy.matmul", "numpy")):
        sizes = sorted(r["params"]["size"] for r in doc["results"]
                       if (r["variant"], r["provider"]) == (variant, provider))
        assert sizes == [128, 256, 512, 1024]  # NumPy's own call, the comparator, beside ours
    assert len(doc["results"]) == 8
    assert all(r["verified"] and r["gflops"] for r in doc["results"])
    assert any("capped" in n for n in doc["meta"]["notes"])
    assert any("np.matmul" in n for n in doc["meta"]["notes"])


def test_cli_bench_matmul_sizes_and_dtypes(capsys, tmp_path: Path) -> None:
    assert main(["bench", "matmul", "--sizes", "17,32", "--dtypes", "float64", "--runs", "1",
                 "--warmup", "0", "--out", str(tmp_path)]) == 0
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    doc = results.read(run / "matmul.json")
    assert {(r["params"]["size"], r["params"]["dtype"]) for r in doc["results"]} == {
        (17, "float64"), (32, "float64")}


@pytest.mark.parametrize("argv, needle", [
    (["matmul", "--variant", "naive"], "cpu"),
    (["matmul", "--variant", "nosuch"], "nosuch"),
    (["matmul", "--size", "0"], ">= 1"),
    (["bench", "matmul", "--dtypes", "int32"], "int32"),
])
def test_cli_errors_are_one_line(argv, needle, capsys, tmp_path: Path) -> None:
    assert main(argv + ["--runs", "1", "--warmup", "0"] +
                (["--out", str(tmp_path)] if argv[0] == "bench" else [])) == 2
    assert needle in _one_error_line(capsys)


def test_cli_bad_dtype_is_an_argparse_error(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["matmul", "--dtype", "int8"])
    assert exc.value.code == 2
    assert "int8" in capsys.readouterr().err

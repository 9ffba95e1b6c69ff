"""NumPy's own tests of the functions warplab shares with it, run against warplab.

The test classes are imported from the installed NumPy's test modules (``numpy/lib/tests``,
``numpy/_core/tests``; nothing is copied here) and run with NumPy's function replaced by
warplab's inside that test module's namespace only: its global name (``histogram``,
``concatenate``...) and, through a stand-in for the module's ``np``, ``np.<name>``. The
stand-in forwards every other attribute to NumPy, so the tests" references (``np.array``,
``np.histogram_bin_edges``...) stay NumPy"s.

``DIFFERENCES`` lists the tests that are deselected, each a deliberate difference from NumPy
with its reason (docs/numpy.md, "Differences from NumPy"). Everything else must pass.
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import warplab

#: test module -> the warplab functions that replace NumPy's there
REPLACED: dict[str, dict[str, Any]] = {
    "numpy.lib.tests.test_histograms": {"histogram": warplab.histogram},
    "numpy.lib.tests.test_function_base": {"bincount": warplab.bincount,
                                           "corrcoef": warplab.corrcoef},
    "numpy._core.tests.test_shape_base": {"concatenate": warplab.concatenate},
    "numpy.lib.tests.test_shape_base": {"split": warplab.split},
    "numpy._core.tests.test_numeric": {"sum": warplab.sum, "mean": warplab.mean,
                                       "std": warplab.std, "var": warplab.var},
    "numpy._core.tests.test_multiarray": {"mean": warplab.mean, "std": warplab.std,
                                          "var": warplab.var, "matmul": warplab.matmul},
}



def _numpy_test_module(name: str) -> types.ModuleType:
    """NumPy's test module ``name``, imported as NumPy's code rather than as a test file of
    this suite: pytest does not rewrite its asserts (a failing one still fails the test, with
    Python's message instead of pytest's), which cost seconds in every pytest process. NumPy's
    test modules ship with NumPy's wheels; a NumPy installed without them skips this file."""
    if name in sys.modules:
        return sys.modules[name]
    package = pytest.importorskip(name.rpartition(".")[0])
    spec = importlib.machinery.PathFinder.find_spec(name, package.__path__)
    if spec is None or spec.loader is None:
        pytest.skip(f"NumPy's test module {name} is not installed", allow_module_level=True)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


_MODULES = {name: _numpy_test_module(name) for name in REPLACED}


class _NumpyWith(types.ModuleType):
    """NumPy with some functions replaced: what a test module's ``np`` becomes."""

    def __init__(self, replaced: dict[str, Any]) -> None:
        super().__init__("numpy")
        self.__dict__.update(replaced)

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)


@pytest.fixture(autouse=True)
def _warplab_in_numpy_tests(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every adapted test module's ``np`` and global names point at warplab's functions for
    the duration of one test."""
    for name, replaced in REPLACED.items():
        mod = _MODULES[name]
        monkeypatch.setattr(mod, "np", _NumpyWith(replaced))
        for fname, fn in replaced.items():
            if fname in vars(mod):
                monkeypatch.setattr(mod, fname, fn)
    yield


_hist = _MODULES["numpy.lib.tests.test_histograms"]
_fb = _MODULES["numpy.lib.tests.test_function_base"]
_csb = _MODULES["numpy._core.tests.test_shape_base"]
_lsb = _MODULES["numpy.lib.tests.test_shape_base"]
_num = _MODULES["numpy._core.tests.test_numeric"]
_ma = _MODULES["numpy._core.tests.test_multiarray"]


class TestHistogram(_hist.TestHistogram):
    pass


class TestHistogramOptimBinNums(_hist.TestHistogramOptimBinNums):
    pass


class TestBincount(_fb.TestBincount):
    pass


class TestCorrCoef(_fb.TestCorrCoef):
    pass


class TestConcatenate(_csb.TestConcatenate):
    pass


class TestSplit(_lsb.TestSplit):
    pass


class TestReductions(_num.TestNonarrayArgs):
    pass


class TestStats(_ma.TestStats):
    funcs = [warplab.mean, warplab.var, warplab.std]


class TestMatmul(_ma.TestMatmul):
    matmul = staticmethod(warplab.matmul)


def test_names_point_at_warplab() -> None:
    """The fixture replaced NumPy's functions in the adapted modules (and only there)."""
    for name, replaced in REPLACED.items():
        mod = _MODULES[name]
        for fname, fn in replaced.items():
            assert getattr(mod.np, fname) is fn
            assert vars(mod).get(fname, fn) is fn
    assert _hist.np.histogram_bin_edges is np.histogram_bin_edges
    assert np.histogram is not warplab.histogram
    assert TestMatmul().matmul is warplab.matmul


#: Class::test -> why warplab differs from NumPy there (docs/numpy.md)
DIFFERENCES: dict[str, str] = {
    "TestConcatenate::test_huge_list_error":
        "builds a tuple of 2**31 references to one array first (minutes, gigabytes)",
    "TestConcatenate::test_bad_out_shape":
        "concatenate takes no out=, dtype= or casting=",
    "TestConcatenate::test_concatenate":
        "concatenate takes no out=, dtype= or casting= (the test ends with out=)",
    "TestConcatenate::test_concatenate_axis_None":
        "concatenate takes no out=, dtype= or casting=",
    "TestConcatenate::test_concatenate_same_value":
        "concatenate takes no out=, dtype= or casting=",
    "TestConcatenate::test_dtype_with_promotion":
        "concatenate takes no out=, dtype= or casting=",
    "TestConcatenate::test_out_and_dtype":
        "concatenate takes no out=, dtype= or casting=",
    "TestConcatenate::test_subarray_error":
        "concatenate takes no out=, dtype= or casting=",
    "TestConcatenate::test_exceptions":
        "the message words differ (same ValueError / AxisError)",
    "TestConcatenate::test_large_concatenate_axis_None":
        "arrays must be a list or tuple (NumPy iterates any sequence, an ndarray too)",
    "TestCorrCoef::test_complex":
        "corrcoef takes real data only",
    "TestCorrCoef::test_xy":
        "corrcoef takes real data only (its y is complex)",
    "TestCorrCoef::test_corrcoef_dtype":
        "dtype= is float16, float32 or float64 (no longdouble)",
    "TestReductions::test_var":
        "reductions take bool, integer and float16/32/64 data (the test passes object data)",
    "TestStats::test_python_type":
        "reductions take no complex data (the test passes 1 + 0j)",
    "TestStats::test_dtype_from_input":
        "reductions take no complex or object data",
    "TestStats::test_dtype_from_dtype":
        "dtype= is bool, integer or float16/32/64 (no longdouble, complex)",
    "TestStats::test_mean_where":
        "mean takes no where=",
    "TestStats::test_var_where":
        "var takes no where=",
    "TestStats::test_std_where":
        "std takes no where=",
    "TestReductions::test_std_with_mean_keyword":
        "var/std take no mean= (nor where=)",
    "TestReductions::test_std_with_mean_keyword_axis_None":
        "var/std take no mean= (nor where=)",
    "TestReductions::test_std_with_mean_keyword_keepdims_false":
        "var/std take no mean= (nor where=)",
    "TestReductions::test_std_with_mean_keyword_keepdims_true_masked":
        "var/std take no mean= (nor where=)",
    "TestReductions::test_std_with_mean_keyword_multiple_axis":
        "var/std take no mean= (nor where=)",
    "TestReductions::test_std_with_mean_keyword_where_nontrivial":
        "var/std take no mean= (nor where=)",
    "TestReductions::test_var_with_mean_keyword":
        "var/std take no mean= (nor where=)",
    "TestReductions::test_var_with_mean_keyword_keepdims_false":
        "var/std take no mean= (nor where=)",
    "TestReductions::test_var_with_mean_keyword_keepdims_true_masked":
        "var/std take no mean= (nor where=)",
    "TestReductions::test_var_with_mean_keyword_where_nontrivial":
        "var/std take no mean= (nor where=)",
    "TestMatmul::test_dot_equivalent":
        "matmul takes 2-D float32/float64 operands only (no vectors, stacks, other dtypes)",
    "TestMatmul::test_dot_equivalent_matrix_matrix_blastypes":
        "matmul takes 2-D float32/float64 operands only (no vectors, stacks, other dtypes)",
    "TestMatmul::test_matmul_bool":
        "matmul takes 2-D float32/float64 operands only (no vectors, stacks, other dtypes)",
    "TestMatmul::test_matmul_empty":
        "matmul takes 2-D float32/float64 operands only (no vectors, stacks, other dtypes)",
    "TestMatmul::test_matmul_object":
        "matmul takes 2-D float32/float64 operands only (no vectors, stacks, other dtypes)",
    "TestMatmul::test_matmul_object_type_scalar":
        "matmul takes 2-D float32/float64 operands only (no vectors, stacks, other dtypes)",
    "TestMatmul::test_matrix_vector_values":
        "matmul takes 2-D float32/float64 operands only (no vectors, stacks, other dtypes)",
    "TestMatmul::test_vector_matrix_values":
        "matmul takes 2-D float32/float64 operands only (no vectors, stacks, other dtypes)",
    "TestMatmul::test_vector_vector_values":
        "matmul takes 2-D float32/float64 operands only (no vectors, stacks, other dtypes)",
    "TestMatmul::test_result_types":
        "matmul takes 2-D float32/float64 operands only (no vectors, stacks, other dtypes)",
    "TestMatmul::test_scalar_output":
        "matmul takes 2-D float32/float64 operands only (no vectors, stacks, other dtypes)",
    "TestMatmul::test_shapes":
        "matmul takes 2-D float32/float64 operands only (no vectors, stacks, other dtypes)",
    "TestMatmul::test_exceptions":
        "matmul takes 2-D float32/float64 operands only (no vectors, stacks, other dtypes)",
    "TestMatmul::test_matrix_matrix_values":
        "matmul takes 2-D float32/float64 operands only (no vectors, stacks, other dtypes)",
    "TestMatmul::test_out_arg":
        "out= is keyword-only and must match the result's shape and dtype",
    "TestMatmul::test_out_contiguous":
        "out= must be C-contiguous of the result's dtype (no strided out)",
    "TestMatmul::test_empty_out":
        "out= is keyword-only",
}

"""Harness entries for issue 3's math and reduction ops that the per-group suites left out:
bad inputs of every elementwise / reduction op (non-Tensor arguments, shapes that do not
broadcast, axes out of range), and forward / gradient entries for sort, any, unique,
bincount, histogram, searchsorted and nonzero against float64 NumPy references."""
import numpy as np
import pytest

import oar
from op_test_utils import (FLOAT_DTYPES, Gen, INT_DTYPES, NARROW_DTYPES, OpCase, case_id,
                           check_bad_inputs, check_forward, check_grad, ints, normal, tensor)

ALL_FLOATS = FLOAT_DTYPES + NARROW_DTYPES


def _x23():
    return tensor(np.arange(6.0).reshape(2, 3))


UNARY = """abs acos acosh asin asinh atan atanh ceil cos cosh digamma erf erfinv exp expm1 floor
isfinite isinf isnan lgamma log log10 log1p log2 neg reciprocal rsqrt sign sin sinh sqrt square
tan tanh trunc round nan_to_num scale clip unique nonzero outer kron""".split()
BINARY = "add subtract multiply divide floor_divide remainder maximum minimum fmax fmin atan2".split()
REDUCE = """sum mean prod max min amax amin all any std var median nansum nanmean logsumexp
count_nonzero mode""".split()


def _unary_bad(name):
    fn = getattr(oar, name)
    args = (lambda: ([1.0], _x23())) if name in ("outer", "kron") else [[1.0]]
    return OpCase(f"{name}[bad]", fn, None, dtypes=(), grad=False, op=name,
                  bad_inputs=[(args, TypeError, "must be a Tensor")])


def _binary_bad(name):
    return OpCase(f"{name}[bad]", getattr(oar, name), None, dtypes=(), grad=False, op=name,
                  bad_inputs=[(lambda: (tensor([1.0, 2.0, 3.0]), tensor([1.0, 2.0, 3.0, 4.0])),
                               ValueError, "broadcast"),
                              (lambda: ("a", tensor([1.0])), TypeError, "must be a Tensor")])


def _reduce_bad(name):
    return OpCase(f"{name}[bad]", getattr(oar, name), None, dtypes=(), grad=False, op=name,
                  bad_inputs=[(lambda: (_x23(),), IndexError, "out of range", {"axis": 5}),
                              (lambda: (_x23(),), IndexError, "out of range", {"axis": -3})])


def _bad(name, fn, *bad):
    return OpCase(f"{name}[bad]", fn, None, dtypes=(), grad=False, op=name, bad_inputs=list(bad))


BAD_CASES = ([_unary_bad(n) for n in UNARY] + [_binary_bad(n) for n in BINARY]
             + [_reduce_bad(n) for n in REDUCE] + [
    _bad("pow", oar.pow, ([[1.0], 2.0], TypeError, "Tensor"),
         (lambda: (tensor([1.0, 2.0]), tensor([1.0, 2.0, 3.0])), ValueError, "broadcast")),
    _bad("cumsum", oar.cumsum, (lambda: (_x23(), 3), IndexError, "out of range")),
    _bad("cumprod", oar.cumprod, (lambda: (_x23(), 3), IndexError, "out of range")),
    _bad("logcumsumexp", oar.logcumsumexp, (lambda: (_x23(), 3), IndexError, "out of range")),
    _bad("diff", oar.diff, (lambda: (_x23(),), IndexError, "out of range", {"axis": 4})),
    _bad("dot", oar.dot, (lambda: (tensor([1.0, 2.0]), tensor([1.0, 2.0, 3.0])), ValueError,
                          "same shape")),
    _bad("inner", oar.inner, (lambda: (_x23(), tensor(np.ones((2, 4)))), ValueError, "differ")),
    _bad("addmm", oar.addmm,
         (lambda: (tensor(np.ones((2, 2))), tensor(np.ones((2, 3))), tensor(np.ones((4, 2)))),
          ValueError, "4"),
         (lambda: (tensor(np.ones((3, 3))), tensor(np.ones((2, 3))), tensor(np.ones((3, 2)))),
          ValueError, "broadcast")),
    _bad("trace", oar.trace, (lambda: (_x23(),), ValueError, "different", {"axis1": 0, "axis2": 0}),
         (lambda: (_x23(),), IndexError, "out of range", {"axis1": 0, "axis2": 4})),
    _bad("diagonal", oar.diagonal,
         (lambda: (_x23(),), IndexError, "out of range", {"axis1": 0, "axis2": 5})),
    _bad("kthvalue", oar.kthvalue, (lambda: (_x23(), 5), ValueError, "k (5)"),
         (lambda: (_x23(), 0), ValueError, "k (0)")),
    _bad("topk", oar.topk, (lambda: (_x23(), 5), ValueError, "k (5)")),
    _bad("sort", oar.sort, (lambda: (_x23(),), IndexError, "out of range", {"axis": 4})),
    _bad("argsort", oar.argsort, (lambda: (_x23(),), IndexError, "out of range", {"axis": 4})),
    _bad("quantile", oar.quantile, (lambda: (_x23(), 1.5), ValueError, "q must be in [0, 1]"),
         (lambda: (_x23(), 0.5), IndexError, "out of range", {"axis": 3})),
    _bad("norm", oar.norm, (lambda: (_x23(),), ValueError, "p=", {"p": "abc"})),
    _bad("lerp", oar.lerp, (lambda: (tensor([1.0, 2.0]), tensor([1.0, 2.0, 3.0]), 0.5),
                            ValueError, "broadcast")),
    _bad("bincount", oar.bincount,
         (lambda: (oar.to_tensor(np.array([1, -1])),), ValueError, "non-negative"),
         (lambda: (tensor([1.0, 2.0]),), TypeError, "integer"),
         (lambda: (oar.to_tensor(np.array([[1, 2]])),), ValueError, "1-D")),
    _bad("histogram", oar.histogram, (lambda: (tensor([1.0, 2.0]),), ValueError, "bins",
                                      {"bins": 0}),
         (lambda: (tensor([1.0, 2.0]),), ValueError, "min", {"bins": 3, "min": 2.0, "max": 1.0})),
    _bad("searchsorted", oar.searchsorted,
         (lambda: (_x23(), tensor(np.ones((3, 3)))), ValueError, "shape")),
    _bad("increment", oar.increment, (lambda: (tensor([1.0, 2.0]),), ValueError, "exactly one element")),
])


def _bincount_ref(x, minlength=0):
    return np.bincount(x.astype(np.int64), minlength=minlength).astype(np.int64)


def _histogram_ref(x, bins, min, max):
    return np.histogram(x, bins=bins, range=(min, max))[0].astype(np.int64)


def _unique_counts(x):
    values, inverse, counts = oar.unique(x, return_inverse=True, return_counts=True)
    return oar.stack([values.astype("float64"), counts.astype("float64")]), inverse


def _sorted_rows(rng, shape):  # searchsorted's sorted_sequence
    return np.sort(rng.integers(-5, 5, shape).astype(np.float64), axis=-1)


CASES = [
    OpCase("sort", lambda x, axis=-1, descending=False: oar.sort(x, axis, descending),
           lambda x, axis=-1, descending=False: (x if x.ndim == 0 else -np.sort(-x, axis)
                                                 if descending else np.sort(x, axis)),
           inputs=[normal()], shapes=[[(3, 5)], [(0, 4)], [(2, 3, 4)], [()]],
           dtypes=ALL_FLOATS + INT_DTYPES),
    OpCase("sort[desc,axis=0]", lambda x: oar.sort(x, 0, True),
           lambda x: -np.sort(-x, 0), inputs=[normal()], shapes=[[(4, 3)], [(5, 2)]],
           dtypes=FLOAT_DTYPES + INT_DTYPES, op="sort"),
    OpCase("any[numeric]", lambda x, axis=None: oar.any(x, axis),
           lambda x, axis=None: np.any(x != 0, axis), inputs=[ints(-1, 2)],
           shapes=[[(3, 4)], [(0, 3)], [(2, 3, 4)]], attrs={"axis": 1},
           dtypes=FLOAT_DTYPES + INT_DTYPES, out_dtype="bool", grad=False),
    OpCase("unique", lambda x: oar.unique(x), lambda x: np.unique(x), inputs=[ints(-4, 4)],
           shapes=[[(20,)], [(3, 5)], [(0,)]], dtypes=FLOAT_DTYPES + INT_DTYPES, grad=False),
    OpCase("unique[counts]", lambda x: _unique_counts(x)[0],
           lambda x: np.stack(np.unique(x, return_counts=True)).astype(np.float64),
           inputs=[ints(-4, 4)], shapes=[[(20,)], [(3, 5)]], dtypes=FLOAT_DTYPES + INT_DTYPES,
           out_dtype="float64", grad=False, op="unique"),
    OpCase("unique[inverse]", lambda x: _unique_counts(x)[1],
           lambda x: np.unique(x, return_inverse=True)[1].reshape(-1),
           inputs=[ints(-4, 4)], shapes=[[(20,)], [(3, 5)]], dtypes=FLOAT_DTYPES + INT_DTYPES,
           out_dtype="int64", grad=False, op="unique"),
    OpCase("bincount", lambda x, minlength=0: oar.bincount(x, minlength=minlength),
           _bincount_ref, inputs=[ints(0, 6)], shapes=[[(30,)], [(0,)]], attrs={"minlength": 8},
           dtypes=INT_DTYPES, out_dtype="int64", grad=False),
    OpCase("histogram", lambda x, **k: oar.histogram(x, **k), _histogram_ref,
           inputs=[normal()], shapes=[[(40,)], [(4, 5)], [(0,)]],
           attrs={"bins": 5, "min": -2.0, "max": 2.0}, dtypes=FLOAT_DTYPES + INT_DTYPES,
           out_dtype="int64", grad=False),
    OpCase("searchsorted", lambda s, v, right=False: oar.searchsorted(s, v, right=right),
           lambda s, v, right=False: np.array(
               [np.searchsorted(a, b, "right" if right else "left")
                for a, b in zip(s.reshape(-1, s.shape[-1]),
                                  v.reshape(int(np.prod(v.shape[:-1])), v.shape[-1]))],
               dtype=np.int64).reshape(v.shape),
           inputs=[Gen(_sorted_rows), ints(-6, 6)], shapes=[[(2, 7), (2, 5)], [(3, 6), (3, 0)]],
           dtypes=FLOAT_DTYPES + INT_DTYPES, out_dtype="int64", grad=False),
    OpCase("searchsorted[right]", lambda s, v: oar.searchsorted(s, v, right=True),
           lambda s, v: np.searchsorted(s, v, "right"), inputs=[Gen(_sorted_rows), ints(-6, 6)],
           shapes=[[(9,), (7,)]], dtypes=FLOAT_DTYPES + INT_DTYPES, out_dtype="int64",
           grad=False, op="searchsorted"),
    OpCase("nonzero", oar.nonzero, lambda x: np.argwhere(x != 0), inputs=[ints(-1, 2)],
           shapes=[[(3, 4)], [(0, 3)], [(5,)]], dtypes=FLOAT_DTYPES + INT_DTYPES,
           out_dtype="int64", grad=False),
]
GRAD_CASES = [c for c in CASES if c.grad]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", GRAD_CASES, ids=case_id)
def test_grad(case):
    check_grad(case)


@pytest.mark.parametrize("case", [c for c in CASES + BAD_CASES if c.bad_inputs], ids=case_id)
def test_bad_inputs(case):
    check_bad_inputs(case)

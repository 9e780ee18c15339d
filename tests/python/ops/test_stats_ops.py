"""Reductions, statistics, scans, sorting and searching (paddle_core/ops/stats.yaml and the
compositions in python/oar/_stats.py) against float64 NumPy references: axis/keepdim
variants, 0-size shapes, gradients against finite differences, bad inputs."""
import collections
import warnings

import numpy as np
import pytest

import oar
from op_test_utils import (FLOAT_DTYPES, INT_DTYPES, NARROW_DTYPES, Gen, OpCase, bools, case_id,
                           check_forward, check_grad, declared_ops, ints,
                           nonzero, normal, tensor, run_in_isa_copy)

ALL_FLOATS = FLOAT_DTYPES + NARROW_DTYPES
SHAPES = [[(3, 4, 5)], [(2, 1, 3)], [(0, 4, 5)], [(1, 4, 1)]]
NONEMPTY = [s for s in SHAPES if 0 not in s[0]]
WIDE = {"float16": (5e-2, 2e-2), "bfloat16": (3e-1, 5e-2)}
VARIANTS = [("", None, False), ("[axis=1]", 1, False), ("[axis=-1,keepdim]", -1, True),
            ("[axis=(0,2)]", [0, 2], False), ("[axis=(0,2),keepdim]", (0, 2), True)]


def _ax(axis):
    return tuple(axis) if isinstance(axis, (list, tuple)) else axis


def reduce_cases(name, fn_oar, fn_np, shapes=SHAPES, variants=VARIANTS, **kw):
    cases = []
    for suffix, axis, keepdim in variants:
        cases.append(OpCase(
            name + suffix, lambda x, axis=axis, keepdim=keepdim: fn_oar(x, axis=axis, keepdim=keepdim),
            lambda x, axis=axis, keepdim=keepdim: fn_np(x, axis=_ax(axis), keepdims=keepdim),
            shapes=shapes, op=name.split("[")[0], **kw))
    return cases


def _pnorm(p):
    def ref(x, axis=None, keepdims=False):
        a = np.abs(x)
        if p == np.inf:
            return np.max(a, axis=axis, keepdims=keepdims, initial=0.0)
        if p == -np.inf:
            return np.min(a, axis=axis, keepdims=keepdims, initial=np.inf)
        if p == 0:
            return np.sum(a != 0, axis=axis, keepdims=keepdims).astype(np.float64)
        return np.sum(a ** p, axis=axis, keepdims=keepdims) ** (1.0 / p)
    return ref


def _logsumexp(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True, initial=-np.inf)
    m = np.where(np.isfinite(m), m, 0)
    return np.log(np.sum(np.exp(x - m), axis=axis, keepdims=keepdims)) + \
        (m if keepdims else np.squeeze(m, axis=axis))


def _scan_ref(fn):
    def ref(x, axis=None):
        return fn(x.reshape(-1), axis=0) if axis is None else fn(x, axis=axis)
    return ref


def _lcse(x, axis=0):
    return np.logaddexp.accumulate(x, axis=axis)


def with_zeros(shape=None):
    return Gen(lambda r, s: r.choice([0.0, 0.5, -1.5, 2.0, -0.7], s), shape)


def _topk_ref(k, axis=-1, largest=True):
    def ref(x):
        s = -np.sort(-x, axis=axis, kind="stable") if largest else np.sort(x, axis=axis)
        return np.take(s, np.arange(k), axis=axis)
    return ref


def _median_ref(x, axis=None, keepdims=False):
    return np.median(x, axis=axis, keepdims=keepdims)


def _mode_1d(v):
    vals, counts = np.unique(v, return_counts=True)
    return vals[np.argmax(counts)]


def _with_nans(r, s):
    a = r.standard_normal(s)
    a[r.random(s) < 0.3] = np.nan
    return a


def _idx(shape, n):
    return oar.to_tensor(np.random.default_rng(3).integers(-n, n, shape))


def _corner_boxes(r, s):
    """s[0] boxes (x1, y1, x2, y2) with x2 > x1, y2 > y1, crowded enough to overlap."""
    lo = r.uniform(0, 1, (s[0], 2))
    return np.concatenate([lo, lo + r.uniform(0.05, 0.6, (s[0], 2))], 1)


def _nms_ref(b, thr):
    """Greedy NMS in float64: each box kept unless its IoU with a kept one exceeds thr."""
    keep = []
    for i in range(len(b)):
        def iou(k):
            iw = max(min(b[i, 2], b[k, 2]) - max(b[i, 0], b[k, 0]), 0.0)
            ih = max(min(b[i, 3], b[k, 3]) - max(b[i, 1], b[k, 1]), 0.0)
            area = lambda q: (b[q, 2] - b[q, 0]) * (b[q, 3] - b[q, 1])  # noqa: E731
            return iw * ih / (area(i) + area(k) - iw * ih)
        if all(iou(k) <= thr for k in keep):
            keep.append(i)
    return np.array(keep, np.int64)


def _scatter_add(z, idx, g, axis):
    idx = np.where(idx < 0, idx + z.shape[axis], idx)
    out = z.copy()
    for pos in np.ndindex(*idx.shape):
        tgt = list(pos)
        tgt[axis] = idx[pos]
        out[tuple(tgt)] += g[pos]
    return out


def _cumsum_dtype(dtype):
    """Paddle's cumsum accumulates integers narrower than int64 in int64."""
    return "int64" if dtype in ("int32", "int16", "int8", "uint8", "bool") else dtype


CASES = [
    *reduce_cases("amax", oar.amax, np.max, shapes=NONEMPTY, dtypes=ALL_FLOATS + INT_DTYPES),
    *reduce_cases("amin", oar.amin, np.min, shapes=NONEMPTY, dtypes=ALL_FLOATS + INT_DTYPES),
    *reduce_cases("all", oar.all, np.all, inputs=[bools()], grad=False, dtypes=["float32"],
                  out_dtype="bool"),
    *reduce_cases("any", oar.any, np.any, inputs=[bools()], grad=False, dtypes=["float32"],
                  out_dtype="bool"),
    OpCase("all[numeric]", lambda x: oar.all(x, axis=1), lambda x: np.all(x, axis=1),
           inputs=[ints(0, 3)], dtypes=FLOAT_DTYPES + INT_DTYPES, grad=False, out_dtype="bool",
           op="all"),
    *reduce_cases("var", oar.var, lambda x, axis, keepdims: np.var(x, axis=axis, ddof=1,
                                                                   keepdims=keepdims),
                  dtypes=ALL_FLOATS, tol=WIDE, grad_shapes=[[(3, 4, 5)]]),
    OpCase("var[biased]", lambda x: oar.var(x, axis=[0, 1], unbiased=False),
           lambda x: np.var(x, axis=(0, 1)), inputs=[(3, 4, 2)], op="var"),
    *reduce_cases("std", oar.std, lambda x, axis, keepdims: np.std(x, axis=axis, ddof=1,
                                                                   keepdims=keepdims),
                  dtypes=ALL_FLOATS, tol=WIDE, grad_shapes=[[(3, 4, 5)]]),
    OpCase("std[int]", lambda x: oar.std(x), lambda x: np.std(x, ddof=1), inputs=[ints(-5, 5)],
           dtypes=INT_DTYPES, out_dtype="float32", grad=False, op="std",
           tol={"int32": (1e-5, 1e-5), "int64": (1e-5, 1e-5)}),
    *reduce_cases("logsumexp", oar.logsumexp, _logsumexp, dtypes=ALL_FLOATS, tol=WIDE),
    *[c for p in (2, 1, 3, 0.5, np.inf, -np.inf, 0)
      for c in reduce_cases(f"p_norm[p={p}]", lambda x, axis, keepdim, p=p:
                            oar.norm(x, p=p, axis=axis, keepdim=keepdim), _pnorm(p),
                            shapes=NONEMPTY, variants=VARIANTS[:2],  # 2 axes: matrix norm
                            dtypes=FLOAT_DTYPES, grad=p != 0, grad_tol=(1e-5, 1e-5))],
    OpCase("p_norm[fro]", lambda x: oar.norm(x, p="fro", axis=[0, 1]),
           lambda x: np.sqrt(np.sum(x * x, axis=(0, 1))), inputs=[(3, 4, 2)], op="norm",
           dtypes=ALL_FLOATS, tol=WIDE),
    OpCase("p_norm[zero_grad]", lambda x: oar.norm(x, p=2), lambda x: np.sqrt(np.sum(x * x)),
           inputs=[Gen(lambda r, s: np.zeros(s), (2, 3))], op="norm", grad=False),
    OpCase("cumsum", lambda x: oar.cumsum(x, axis=1), lambda x: np.cumsum(x, axis=1),
           shapes=SHAPES, dtypes=ALL_FLOATS + INT_DTYPES, tol=WIDE, out_dtype=_cumsum_dtype),
    OpCase("cumsum[flat]", lambda x: oar.cumsum(x), lambda x: np.cumsum(x), shapes=SHAPES,
           dtypes=FLOAT_DTYPES + INT_DTYPES, op="cumsum", out_dtype=_cumsum_dtype),
    OpCase("cumsum[axis=-1,dtype]", lambda x: oar.cumsum(x, axis=-1, dtype="float64"),
           lambda x: np.cumsum(x, axis=-1), shapes=SHAPES[:2], dtypes=["float32", "int64"],
           out_dtype="float64", op="cumsum", grad=False),
    OpCase("cumprod", lambda x: oar.cumprod(x, dim=1), lambda x: np.cumprod(x, axis=1),
           inputs=[nonzero(lo=0.5, hi=1.5)], shapes=SHAPES, dtypes=FLOAT_DTYPES + INT_DTYPES),
    OpCase("cumprod_grad[zeros]", lambda x: oar.cumprod(x, dim=-1),
           lambda x: np.cumprod(x, axis=-1), inputs=[with_zeros()], shapes=[[(4, 6)], [(3, 2, 5)]],
           op="cumprod"),
    OpCase("cumprod[flat]", lambda x: oar.cumprod(x), lambda x: np.cumprod(x),
           inputs=[with_zeros()], shapes=[[(3, 4)], [()]], op="cumprod"),
    OpCase("logcumsumexp", lambda x: oar.logcumsumexp(x, axis=1), lambda x: _lcse(x, axis=1),
           shapes=SHAPES, dtypes=ALL_FLOATS, tol=WIDE),
    OpCase("logcumsumexp[flat]", lambda x: oar.logcumsumexp(x), lambda x: _lcse(x.reshape(-1)),
           shapes=SHAPES[:3], op="logcumsumexp"),
    OpCase("argsort[values]", lambda x: oar.sort(x, axis=1), lambda x: np.sort(x, axis=1),
           shapes=SHAPES, dtypes=ALL_FLOATS + INT_DTYPES, op="argsort"),
    OpCase("argsort[desc]", lambda x: oar.sort(x, axis=0, descending=True),
           lambda x: -np.sort(-x, axis=0), shapes=SHAPES, op="argsort"),
    OpCase("argsort", lambda x: oar.argsort(x, axis=-1, stable=True),
           lambda x: np.argsort(x, axis=-1, kind="stable"), inputs=[ints(0, 4)], shapes=SHAPES,
           dtypes=FLOAT_DTYPES + INT_DTYPES, out_dtype="int64", grad=False),
    OpCase("argsort[desc,stable]", lambda x: oar.argsort(x, axis=1, descending=True, stable=True),
           lambda x: np.argsort(-x, axis=1, kind="stable"), inputs=[ints(0, 4)], shapes=SHAPES,
           dtypes=INT_DTYPES, out_dtype="int64", grad=False, op="argsort"),
    OpCase("topk", lambda x: oar.topk(x, 3, axis=1)[0], _topk_ref(3, 1), shapes=NONEMPTY[:1],
           dtypes=ALL_FLOATS + INT_DTYPES),
    OpCase("topk[smallest,last]", lambda x: oar.topk(x, 2, largest=False)[0],
           _topk_ref(2, -1, False), shapes=NONEMPTY[:2] + [[(0, 4)]], op="topk"),
    OpCase("topk[indices]", lambda x: oar.topk(x, 4, axis=-1)[1],
           lambda x: np.argsort(-x, axis=-1, kind="stable")[..., :4], inputs=[(6, 300)],
           out_dtype="int64", grad=False, op="topk"),
    OpCase("kthvalue", lambda x: oar.kthvalue(x, 2, axis=1)[0],
           lambda x: np.sort(x, axis=1)[:, 1], shapes=[[(3, 4, 5)], [(2, 3)]],
           dtypes=ALL_FLOATS + INT_DTYPES),
    OpCase("kthvalue[keepdim]", lambda x: oar.kthvalue(x, 1, axis=-1, keepdim=True)[0],
           lambda x: np.min(x, axis=-1, keepdims=True), shapes=[[(3, 4)], [(2, 3, 4)]],
           op="kthvalue"),
    OpCase("mode", lambda x: oar.mode(x, axis=1)[0],
           lambda x: np.apply_along_axis(_mode_1d, 1, x), inputs=[ints(0, 3)],
           shapes=[[(4, 7)], [(2, 5, 3)]], dtypes=FLOAT_DTYPES + INT_DTYPES, grad=False),
    OpCase("mode[grad]", lambda x: oar.mode(x, axis=-1, keepdim=True)[0],
           lambda x: np.min(x, axis=-1, keepdims=True), inputs=[normal()],
           shapes=[[(3, 4)]], op="mode"),
    OpCase("median", oar.median, np.median, shapes=NONEMPTY, dtypes=FLOAT_DTYPES),
    OpCase("median[axis=1,keepdim]", lambda x: oar.median(x, axis=1, keepdim=True),
           lambda x: np.median(x, axis=1, keepdims=True), shapes=[[(3, 4, 5)], [(2, 5, 3)]],
           op="median"),
    OpCase("median[int]", lambda x: oar.median(x, axis=0), lambda x: np.median(x, axis=0),
           inputs=[ints(-9, 9)], dtypes=INT_DTYPES, out_dtype="float32", grad=False, op="median",
           tol={"int32": (1e-6, 1e-6), "int64": (1e-6, 1e-6)}),
    OpCase("nanmedian", lambda x: oar.nanmedian(x, axis=1),
           lambda x: np.nanmedian(x, axis=1), inputs=[Gen(_with_nans, None)],
           shapes=[[(4, 6)], [(3, 5, 2)]], grad=False),
    OpCase("quantile", lambda x: oar.quantile(x, 0.3, axis=1), lambda x: np.quantile(x, 0.3, axis=1),
           shapes=[[(3, 4, 5)], [(2, 7)]]),
    OpCase("quantile[list,axes]", lambda x: oar.quantile(x, [0.1, 0.5, 0.95], axis=[0, 2]),
           lambda x: np.quantile(x, [0.1, 0.5, 0.95], axis=(0, 2)), shapes=[[(3, 4, 5)]],
           op="quantile"),
    *[OpCase(f"quantile[{m}]", lambda x, m=m: oar.quantile(x, 0.4, axis=-1, interpolation=m),
             lambda x, m=m: np.quantile(x, 0.4, axis=-1, method=m), shapes=[[(3, 6)], [(2, 11)]],
             op="quantile", grad=m in ("linear", "midpoint"))
      for m in ("lower", "higher", "nearest", "midpoint")],
    OpCase("nanquantile", lambda x: oar.nanquantile(x, [0.25, 0.8], axis=1, keepdim=True),
           lambda x: np.nanquantile(x, [0.25, 0.8], axis=1, keepdims=True),
           inputs=[Gen(_with_nans, None)], shapes=[[(4, 6)], [(3, 5, 2)]], grad=False),
    OpCase("count_nonzero", lambda x: oar.count_nonzero(x, axis=1),
           lambda x: np.count_nonzero(x, axis=1), inputs=[ints(0, 3)], shapes=SHAPES,
           dtypes=FLOAT_DTYPES + INT_DTYPES, out_dtype="int64", grad=False),
    OpCase("nansum", lambda x: oar.nansum(x, axis=[0, 2]), lambda x: np.nansum(x, axis=(0, 2)),
           inputs=[Gen(_with_nans, None)], shapes=SHAPES, grad=False),
    OpCase("nansum[grad]", lambda x: oar.nansum(x, axis=1), lambda x: np.nansum(x, axis=1),
           shapes=SHAPES[:2], op="nansum"),
    OpCase("nanmean", lambda x: oar.nanmean(x, axis=-1, keepdim=True),
           lambda x: np.nanmean(x, axis=-1, keepdims=True), inputs=[Gen(_with_nans, None)],
           shapes=SHAPES[:2] + SHAPES[3:], grad=False),
    OpCase("nanmean[grad]", lambda x: oar.nanmean(x), np.nanmean, shapes=SHAPES[:2], op="nanmean"),
    OpCase("gather_axis", lambda x: oar._C.ops._gather_axis(x, _idx((3, 2, 5), 4), 1),
           lambda x: np.take_along_axis(x, _idx((3, 2, 5), 4).numpy(), 1), inputs=[(3, 4, 5)],
           dtypes=ALL_FLOATS + INT_DTYPES),
    OpCase("gather_axis_grad", lambda g: oar._C.ops._gather_axis_grad(
        tensor(np.zeros((3, 4)), g.dtype.name), _idx((3, 6), 4), g, 1),
        lambda g: _scatter_add(np.zeros((3, 4)), _idx((3, 6), 4).numpy(), g, 1),
        inputs=[(3, 6)]),
    OpCase("nms", lambda b: oar._C.ops._nms(b, 0.3), lambda b: _nms_ref(b, 0.3),
           inputs=[Gen(_corner_boxes, (40, 4))], shapes=[[(40, 4)], [(0, 4)], [(1, 4)], [(300, 4)]],
           grad=False, out_dtype="int64",
           bad_inputs=[((tensor(np.zeros((3, 5)), "float32"),), ValueError, "boxes must have shape [N, 4]"),
                       ((tensor(np.zeros((3, 4)), "int64"),), TypeError, "boxes must be a float tensor")]),
    OpCase("diagonal", lambda x: oar.diagonal(x), lambda x: np.diagonal(x, axis1=0, axis2=1),
           shapes=[[(3, 4)], [(4, 3, 2)], [(0, 3)]], dtypes=ALL_FLOATS + INT_DTYPES),
    OpCase("diagonal_grad[offset]", lambda x: oar.diagonal(x, offset=1, axis1=-1, axis2=0),
           lambda x: np.diagonal(x, offset=1, axis1=-1, axis2=0), shapes=[[(3, 4)], [(4, 3, 5)]],
           op="diagonal"),
    OpCase("diagonal[neg_offset]", lambda x: oar.diagonal(x, offset=-2, axis1=1, axis2=2),
           lambda x: np.diagonal(x, offset=-2, axis1=1, axis2=2), shapes=[[(2, 5, 4)]],
           op="diagonal"),
    OpCase("trace", lambda x: oar.trace(x, offset=1), lambda x: np.trace(x, offset=1),
           shapes=[[(3, 4)], [(4, 3, 2)]]),
    OpCase("diff", lambda x: oar.diff(x, n=2, axis=1), lambda x: np.diff(x, n=2, axis=1),
           shapes=[[(3, 5)], [(2, 4, 3)], [(0, 4)]]),
    OpCase("diff[prepend]", lambda x, y: oar.diff(x, prepend=y, append=y),
           lambda x, y: np.diff(x, prepend=y, append=y), inputs=[(3, 4), (3, 2)], op="diff"),
    OpCase("outer", oar.outer, np.outer, inputs=[(3,), (4,)],
           shapes=[[(3,), (4,)], [(2, 2), (0,)], [(), (2,)]], grad_shapes=[[(3,), (4,)], [(2, 2), (3,)]]),
    OpCase("inner", oar.inner, np.inner, inputs=[(3, 4), (2, 4)],
           shapes=[[(3, 4), (2, 4)], [(4,), (4,)], [(2, 3, 4), (5, 4)]]),
    OpCase("dot", oar.dot, lambda x, y: np.sum(x * y, axis=-1), inputs=[(5,), (5,)],
           shapes=[[(5,), (5,)], [(3, 4), (3, 4)], [(0,), (0,)]], dtypes=ALL_FLOATS + INT_DTYPES,
           tol=WIDE),
    OpCase("kron", oar.kron, np.kron, inputs=[(2, 3), (3, 2)],
           shapes=[[(2, 3), (3, 2)], [(3,), (2, 2)], [(2, 1, 2), (2, 3)]]),
    OpCase("addmm", lambda a, x, y: oar.addmm(a, x, y, beta=0.5, alpha=2.0),
           lambda a, x, y: 0.5 * a + 2.0 * (x @ y), inputs=[(3, 4), (3, 5), (5, 4)],
           shapes=[[(3, 4), (3, 5), (5, 4)], [(4,), (3, 5), (5, 4)]]),
]


GRAD_CASES = [c for c in CASES if c.grad]


# ---- bad inputs: (call, exception, substring); the op's name is part of every substring
def _t(shape=(2, 3), dtype="float32"):
    return tensor(np.ones(shape), dtype)


BAD = [
    (lambda: oar.all(_t(), axis=5), IndexError, "axis 5 is out of range"),
    (lambda: oar.var(_t(), axis=[0, 3]), IndexError, "var: axis 3 is out of range"),
    (lambda: oar.std(_t(), axis=-3), IndexError, "std: axis -3 is out of range"),
    (lambda: oar.logsumexp(_t(), axis=[2]), IndexError, "axis 2 is out of range"),
    (lambda: oar.norm(_t(), p="abc"), ValueError, "norm: p='abc'"),
    (lambda: oar.norm(_t(), p="nuc"), ValueError, "norm: p='nuc'"),
    (lambda: oar.norm(_t(), axis=4), IndexError, "norm: axis 4"),
    (lambda: oar.cumsum(_t(), axis=2), IndexError, "cumsum: axis 2 is out of range"),
    (lambda: oar.cumprod(_t(), dim=-3), IndexError, "axis -3 is out of range"),
    (lambda: oar.logcumsumexp(_t(), axis=7), IndexError, "axis 7 is out of range"),
    (lambda: oar.sort(_t(), axis=3), IndexError, "sort: axis 3"),
    (lambda: oar.topk(_t(), 4), ValueError, "topk: k (4) must be in [0, 3]"),
    (lambda: oar.topk(_t(), -1), ValueError, "topk: k (-1)"),
    (lambda: oar.topk(_t(), 1, axis=2), IndexError, "topk: axis 2"),
    (lambda: oar.kthvalue(_t(), 0), ValueError, "kthvalue: k (0) must be in [1, 3]"),
    (lambda: oar.kthvalue(_t(), 4, axis=1), ValueError, "kthvalue: k (4)"),
    (lambda: oar.mode(_t((2, 0))), ValueError, "mode: axis 1 of input shape [2, 0] is empty"),
    (lambda: oar.median(_t(), mode="mean"), ValueError, "median: mode must be 'avg' or 'min'"),
    (lambda: oar.median(_t((2, 0)), axis=1, mode="min"), ValueError, "median: mode='min' has no element to take"),
    (lambda: oar.median(_t(), axis=[0, 1]), TypeError, "median: axis must be an int"),
    (lambda: oar.quantile(_t(), 1.5), ValueError, "quantile: q must be in [0, 1], got 1.5"),
    (lambda: oar.quantile(_t(), [0.2, -0.1]), ValueError, "quantile: q must be in [0, 1], got -0.1"),
    (lambda: oar.quantile(_t(), 0.5, interpolation="cubic"), ValueError, "quantile: interpolation"),
    (lambda: oar.nanquantile(_t(), "a"), TypeError, "nanquantile: q must be"),
    (lambda: oar.nanmean(_t(dtype="int64")), TypeError, "nanmean: expected a float tensor"),
    (lambda: oar._C.ops._gather_axis(_t(), oar.to_tensor([[0, 5, 1]] * 2), 1), IndexError,
     "gather_axis: index 5 is out of range for axis 1 of size 3"),
    (lambda: oar._C.ops._gather_axis(_t(), _t(), 1), TypeError, "gather_axis: index must be int"),
    (lambda: oar._C.ops._gather_axis(_t(), oar.to_tensor([[0, 1]]), 1), ValueError,
     "gather_axis: index shape [1, 2] and x shape [2, 3] differ at dimension 0"),
    (lambda: oar._C.ops._gather_axis_grad(_t(), oar.to_tensor([[0]] * 2), _t((2, 1), "float64"), 1),
     TypeError, "grad_out dtype float64 must equal x dtype float32"),
    (lambda: oar.diagonal(tensor([1.0, 2.0])), ValueError, "diagonal: x must have rank >= 2"),
    (lambda: oar.diagonal(_t(), 0, 1, -1), ValueError, "diagonal: axis1 (1) and axis2 (-1)"),
    (lambda: oar.diff(tensor(1.0)), ValueError, "diff: x must have rank >= 1"),
    (lambda: oar.diff(_t(), n=-1), ValueError, "diff: n must be non-negative"),
    (lambda: oar.inner(_t(), _t((4,))), ValueError, "inner: the last dimensions"),
    (lambda: oar.dot(_t((3,)), _t((4,))), ValueError, "dot: x and y must be 1-D or 2-D"),
    (lambda: oar.addmm(_t((3, 4)), _t((5,)), _t((5, 4))), ValueError, "addmm: x and y must be 2-D"),
    (lambda: oar.cumsum([1, 2]), TypeError, "cumsum: argument 'x' must be a Tensor"),
]


@pytest.mark.parametrize("call, exc, substring", BAD, ids=[b[2][:40] for b in BAD])
def test_bad_inputs_table(call, exc, substring):
    with pytest.raises(exc) as info:
        call()
    assert substring in str(info.value), f"'{substring}' not in '{info.value}'"


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", GRAD_CASES, ids=case_id)
def test_grad(case):
    check_grad(case)


# ---- ops with several results or data-dependent shapes: direct tests
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_unique_against_numpy(dtype):
    a = np.random.default_rng(1).integers(-4, 4, 40)
    out = oar.unique(tensor(a, dtype), return_index=True, return_inverse=True, return_counts=True)
    for got, ref in zip(out, np.unique(a, return_index=True, return_inverse=True,
                                       return_counts=True)):
        np.testing.assert_array_equal(got.numpy(), ref)
    assert out[0].dtype.name == dtype and out[1].dtype.name == "int64"
    assert oar.unique(tensor(a, dtype), return_counts=True, dtype="int32")[1].dtype.name == "int32"


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16",
                                   "int32", "int64", "bool"])
def test_unique_radix_keys_order_and_group(dtype):
    """unique of scalars by radix-sorted keys (Note [unique by radix]): negatives, values
    spanning every key byte, -0 and +0 as one value, +-inf, NaN last and as one group, and
    the smallest position as each group's index, against NumPy (equal_nan)."""
    rng = np.random.default_rng(17)
    if dtype == "bool":
        a = rng.integers(0, 2, 300).astype(bool)
    elif dtype in ("int8", "uint8", "int16", "int32", "int64"):
        info = np.iinfo(dtype)
        a = np.concatenate([rng.integers(info.min, int(info.max) + 1, 400, dtype=np.int64),
                            rng.integers(-3, 4, 300).clip(info.min, info.max),
                            [info.min, info.max, 0]]).astype(dtype)
    else:
        a = np.concatenate([rng.standard_normal(300) * 10.0 ** rng.integers(-5, 5, 300),
                            rng.integers(-3, 4, 300),
                            [0.0, -0.0, np.inf, -np.inf, np.nan, np.nan, -np.nan]])
        rng.shuffle(a)
    t = oar.to_tensor(a) if a.dtype.kind in "iub" else tensor(a, dtype)
    vals = t.astype("float64").numpy() if dtype in ("float16", "bfloat16") else t.numpy()
    out = oar.unique(t, return_index=True, return_inverse=True, return_counts=True)
    ref = np.unique(vals, return_index=True, return_inverse=True, return_counts=True)
    got_vals = out[0].astype("float64").numpy() if dtype in ("float16", "bfloat16") else out[0].numpy()
    np.testing.assert_array_equal(got_vals, ref[0])
    for got, want in zip(out[1:], ref[1:]):
        np.testing.assert_array_equal(got.numpy(), want.reshape(-1))


@pytest.mark.parametrize("shift", [0, 16, 40])
def test_radix_sort_skips_bytes_every_key_shares(shift):
    """The radix sort skips the key bytes every key shares: keys that differ in their low,
    middle or high bytes alone, negatives, and all keys equal, through unique and a stable
    argsort, against NumPy."""
    rng = np.random.default_rng(18)
    for a in (rng.integers(0, 300, 5000) << shift, (rng.integers(-300, 300, 5000) << shift) + 7,
              np.full(3000, -5 << shift)):
        a = a.astype(np.int64)
        out = oar.unique(oar.to_tensor(a), return_index=True, return_inverse=True, return_counts=True)
        for got, ref in zip(out, np.unique(a, return_index=True, return_inverse=True, return_counts=True)):
            np.testing.assert_array_equal(got.numpy(), np.asarray(ref).reshape(-1))
        got = oar.argsort(oar.to_tensor(a.reshape(50, -1)), axis=1, stable=True).numpy()
        np.testing.assert_array_equal(got, np.argsort(a.reshape(50, -1), axis=1, kind="stable"))


def test_unique_and_sort_reuse_cached_buffers():
    """unique and the radix sort of a long row take their buffers from the CPU allocator's
    cache (Note [unique by radix]): calls of one size in a row, each on other values (a
    buffer's old contents must not leak into the next result), against NumPy."""
    rng = np.random.default_rng(23)
    for hi in (5000, 7, 1 << 40):
        a = rng.integers(-hi, hi, 200000)
        out = oar.unique(oar.to_tensor(a), return_index=True, return_inverse=True, return_counts=True)
        for got, want in zip(out, np.unique(a, return_index=True, return_inverse=True, return_counts=True)):
            np.testing.assert_array_equal(got.numpy(), want.reshape(-1))
        x = rng.standard_normal(200000).astype(np.float32) * hi
        v, i = oar.sort(oar.to_tensor(x)), oar.argsort(oar.to_tensor(x), stable=True)
        np.testing.assert_array_equal(v.numpy(), np.sort(x))
        np.testing.assert_array_equal(i.numpy(), np.argsort(x, kind="stable"))


def test_unique_axis_and_empty():
    a = np.array([[1, 2], [3, 4], [1, 2], [0, 9], [3, 4]])
    u, inv, cnt = oar.unique(tensor(a, "int64"), return_inverse=True, return_counts=True, axis=0)
    ru, rinv, rcnt = np.unique(a, return_inverse=True, return_counts=True, axis=0)
    np.testing.assert_array_equal(u.numpy(), ru)
    np.testing.assert_array_equal(inv.numpy(), rinv.reshape(-1))
    np.testing.assert_array_equal(cnt.numpy(), rcnt)
    np.testing.assert_array_equal(oar.unique(tensor(a, "int64"), axis=1).numpy(),
                                  np.unique(a, axis=1))
    assert oar.unique(tensor(np.zeros((0,)))).shape == [0]
    with pytest.raises(TypeError, match="unique: dtype must be int32 or int64"):
        oar.unique(tensor([1.0]), dtype="float32")
    with pytest.raises(IndexError, match="unique: axis 2"):
        oar.unique(tensor(a, "int64"), axis=2)


def test_unique_consecutive():
    a = np.array([1, 1, 2, 2, 2, 3, 1, 1])
    out, inv, cnt = oar.unique_consecutive(tensor(a, "int64"), return_inverse=True,
                                           return_counts=True)
    np.testing.assert_array_equal(out.numpy(), [1, 2, 3, 1])
    np.testing.assert_array_equal(inv.numpy(), [0, 0, 1, 1, 1, 2, 3, 3])
    np.testing.assert_array_equal(cnt.numpy(), [2, 3, 1, 2])
    m = np.array([[1, 1, 2], [1, 1, 2], [0, 0, 0]])
    np.testing.assert_array_equal(oar.unique_consecutive(tensor(m, "int64"), axis=0).numpy(),
                                  [[1, 1, 2], [0, 0, 0]])


def test_bincount():
    a = np.array([1, 3, 3, 0, 7])
    np.testing.assert_array_equal(oar.bincount(tensor(a, "int64")).numpy(), np.bincount(a))
    w = np.array([0.5, 1.0, 2.0, -1.0, 3.0])
    got = oar.bincount(tensor(a, "int32"), tensor(w, "float64"), minlength=10)
    np.testing.assert_allclose(got.numpy(), np.bincount(a, w, minlength=10))
    assert got.dtype.name == "float64"
    assert oar.bincount(tensor(np.zeros(0), "int64"), minlength=3).numpy().tolist() == [0, 0, 0]
    with pytest.raises(ValueError, match="bincount: x must be non-negative, got -2"):
        oar.bincount(tensor([1, -2], "int64"))
    with pytest.raises(TypeError, match="bincount: x must be an integer tensor"):
        oar.bincount(tensor([1.0]))
    with pytest.raises(ValueError, match="bincount: x must be 1-D"):
        oar.bincount(tensor([[1]], "int64"))


def test_histogram():
    a = np.random.default_rng(2).standard_normal(200)
    got = oar.histogram(tensor(a, "float64"), bins=7, min=-1.5, max=2.0)
    np.testing.assert_array_equal(got.numpy(), np.histogram(a, 7, (-1.5, 2.0))[0])
    assert got.dtype.name == "int64"
    auto = oar.histogram(tensor(a, "float32"), bins=5)
    np.testing.assert_array_equal(auto.numpy(), np.histogram(a.astype(np.float32), 5)[0])
    w = np.abs(a)
    dens = oar.histogram(tensor(a, "float64"), bins=4, min=-2, max=2, weight=tensor(w, "float64"),
                         density=True)
    np.testing.assert_allclose(dens.numpy(), np.histogram(a, 4, (-2, 2), weights=w, density=True)[0],
                               rtol=1e-6)
    assert dens.dtype.name == "float32"
    np.testing.assert_array_equal(oar.histogram(tensor([1, 2, 1], "int64"), 4, 0, 3).numpy(),
                                  [0, 2, 1, 0])
    with pytest.raises(ValueError, match="histogram: max \\(1\\) must be >= min \\(2\\)"):
        oar.histogram(tensor([1.0]), 3, 2, 1)
    with pytest.raises(ValueError, match="histogram: bins must be >= 1"):
        oar.histogram(tensor([1.0]), 0)


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_and_bucketize(right):
    seq = np.array([1.0, 2.0, 2.0, 5.0, 7.0])
    v = np.array([[0.0, 2.0, 6.0], [7.0, 8.0, 2.5]])
    side = "right" if right else "left"
    got = oar.searchsorted(tensor(seq, "float64"), tensor(v, "float64"), right=right)
    np.testing.assert_array_equal(got.numpy(), np.searchsorted(seq, v, side=side))
    assert got.dtype.name == "int64"
    got32 = oar.bucketize(tensor(v, "float64"), tensor(seq, "float64"), out_int32=True, right=right)
    np.testing.assert_array_equal(got32.numpy(), np.searchsorted(seq, v, side=side))
    assert got32.dtype.name == "int32"
    seq2 = np.sort(np.random.default_rng(4).standard_normal((2, 6)), axis=1)
    got2 = oar.searchsorted(tensor(seq2, "float64"), tensor(v, "float64"), right=right)
    np.testing.assert_array_equal(got2.numpy(), [np.searchsorted(seq2[i], v[i], side=side)
                                                 for i in range(2)])
    with pytest.raises(ValueError, match="searchsorted: sorted_sequence shape \\[2, 6\\]"):
        oar.searchsorted(tensor(seq2), tensor(np.ones((3, 2))))
    with pytest.raises(ValueError, match="bucketize: sorted_sequence must be 1-D"):
        oar.bucketize(tensor(v), tensor(seq2))


def test_topk_kthvalue_mode_indices():
    x = np.array([[3.0, 1.0, 4.0, 1.5, 9.0], [2.0, 7.0, 1.0, 8.0, 2.5]])
    v, i = oar.topk(tensor(x, "float64"), 2)
    np.testing.assert_array_equal(i.numpy(), [[4, 2], [3, 1]])
    v, i = oar.kthvalue(tensor(x, "float64"), 3, axis=1)
    np.testing.assert_array_equal(v.numpy(), [3.0, 2.5])
    np.testing.assert_array_equal(i.numpy(), [0, 4])
    v, i = oar.mode(tensor([[1, 2, 2, 3, 3], [5, 5, 4, 4, 4]], "int64"))
    np.testing.assert_array_equal(v.numpy(), [2, 4])
    np.testing.assert_array_equal(i.numpy(), [2, 4])
    big = np.random.default_rng(9).standard_normal(100000)
    v, i = oar.topk(tensor(big, "float64"), 50)
    np.testing.assert_array_equal(i.numpy(), np.argsort(-big, kind="stable")[:50])
    assert oar.topk(tensor(big), 0)[0].shape == [0]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_kthvalue_long_rows_with_ties_and_signed_zeros(dtype):
    """Long float32 rows take the radix-select path; the index is the stable sort's."""
    rng = np.random.default_rng(8)
    a = np.concatenate([np.round(rng.standard_normal(30000) * 3), np.zeros(5000), -np.zeros(5000)])
    a = rng.permutation(a).astype(dtype)
    order = np.argsort(a, kind="stable")
    t = tensor(a, dtype)
    for k in (1, 1234, a.size // 2, a.size // 2 + 1, a.size):
        v, i = oar.kthvalue(t, k)
        assert v.item() == np.sort(a)[k - 1] and i.item() == order[k - 1], k
    np.testing.assert_array_equal(oar.median(t).numpy(), np.median(a))


def _select_rows(rng, n):
    """Rows that exercise each level of the radix select (Note [Radix select]): spread
    values, few distinct ones, a range so narrow only the last digits differ, signed zeros,
    infinities and subnormals, all equal."""
    narrow = 1.0 + np.arange(n, dtype=np.float32) * np.float32(2 ** -23)  # consecutive floats
    special = np.array([np.inf, -np.inf, 1e-45, -1e-45, 0.0, -0.0, 3.4e38, -3.4e38], np.float32)
    return [rng.standard_normal(n).astype(np.float32),
            np.round(rng.standard_normal(n) * 2).astype(np.float32),
            rng.permutation(narrow),
            rng.permutation(np.concatenate([np.zeros(n // 2), -np.zeros(n - n // 2)])).astype(np.float32),
            rng.permutation(np.resize(np.concatenate([special, rng.standard_normal(8).astype(np.float32)]), n)),
            np.full(n, 2.5, np.float32)]


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("n", [257, 1000, 1024, 4099])
def test_kthvalue_radix_select_against_a_stable_sort(n, dtype):
    """Rows longer than 256 floats select on order keys, a histogram level per 11-bit digit
    (Note [Radix select]): the value and index of every rank a stable sort gives, for rows
    that stop at each level, and NaN rows (the sort's path) beside them in one tensor."""
    rng = np.random.default_rng(n)
    rows = _select_rows(rng, n)
    rows.append(np.where(rng.random(n) < 0.1, np.nan, rng.standard_normal(n)).astype(np.float32))
    a = np.stack(rows)
    t = oar.to_tensor(a).astype(dtype)
    ref = t.astype("float32").numpy()  # the values as rounded to dtype
    order = np.argsort(ref, axis=1, kind="stable")
    srt = np.take_along_axis(ref, order, 1)
    for k in sorted({1, 2, n // 3, n // 2, n // 2 + 1, n - 1, n}):
        v, i = oar.kthvalue(t, k, axis=1)
        np.testing.assert_array_equal(v.astype("float32").numpy(), srt[:, k - 1], err_msg=f"k={k}")
        np.testing.assert_array_equal(i.numpy(), order[:, k - 1], err_msg=f"k={k}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # inf - inf in NumPy's average
        np.testing.assert_array_equal(oar.median(t.astype("float32"), axis=1).numpy(), np.median(ref, axis=1))


def test_median_of_empty_tensors_as_paddle():
    """An empty axis has the median NaN (mode 'avg', as Paddle and NumPy); an empty kept dim
    gives an empty result (it raised a reshape error); nanmedian alike."""
    for x, axis, keepdim, shape in [((0, 3), 0, False, [3]), ((0, 3), None, False, []), ((2, 0), 1, True, [2, 1]),
                                    ((0, 3), 1, False, [0]), ((2, 0, 3), 2, False, [2, 0]),
                                    ((0, 3), 1, True, [0, 1])]:
        for fn, dtype in [(oar.median, "float32"), (oar.median, "int64"), (oar.median, "float64"),
                          (oar.nanmedian, "float32")]:
            got = fn(oar.zeros(list(x), dtype), axis=axis, keepdim=keepdim)
            with warnings.catch_warnings():  # NumPy warns of the empty slice it averages
                warnings.simplefilter("ignore", RuntimeWarning)
                want = np.median(np.zeros(x), axis=axis, keepdims=keepdim)
            assert got.shape == shape, (fn.__name__, x, axis, got.shape)
            assert got.dtype.name == ("float64" if dtype == "float64" else "float32")
            np.testing.assert_array_equal(np.isnan(got.numpy()), np.isnan(want))


def test_sort_nan_last_and_median_min():
    x = tensor([3.0, np.nan, 1.0, 2.0], "float64")
    np.testing.assert_array_equal(oar.sort(x).numpy(), [1.0, 2.0, 3.0, np.nan])
    np.testing.assert_array_equal(oar.argsort(x).numpy(), [2, 3, 0, 1])
    m = tensor([[4.0, 1.0, 3.0, 2.0], [0.0, 5.0, 6.0, 7.0]], "float64")
    v, i = oar.median(m, axis=1, mode="min")
    np.testing.assert_array_equal(v.numpy(), [2.0, 5.0])
    np.testing.assert_array_equal(i.numpy(), [3, 1])
    assert oar.median(m, mode="min").numpy().item() == 3.0
    assert np.isnan(oar.nanmedian(tensor([np.nan, np.nan], "float64")).numpy())
    with_nan = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]])
    np.testing.assert_array_equal(oar.median(tensor(with_nan, "float64"), axis=1).numpy(),
                                  np.median(with_nan, axis=1))
    np.testing.assert_array_equal(oar.quantile(tensor(with_nan, "float64"), 0.25, axis=1).numpy(),
                                  np.quantile(with_nan, 0.25, axis=1))


def test_median_gradient_splits_between_middle_values():
    x = tensor([4.0, 1.0, 3.0, 2.0], "float64", stop_gradient=False)
    oar.median(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 0.0, 0.5, 0.5])


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cumprod_of_long_rows(dtype, threads):
    """cumprod of contiguous rows as an in-register scan with a carry (scan_rows_vec): every
    row length 0-40, long rows, zero, inf and NaN inside a row, against float64."""
    rng = np.random.default_rng(11)
    prev = oar.get_num_threads()
    oar.set_num_threads(threads)
    try:
        for n in list(range(41)) + [257, 1000]:
            x = rng.uniform(0.8, 1.25, (4, n))
            if n > 12:
                x[1, 5], x[2, 9], x[3, 11] = 0.0, np.inf, np.nan
            got = oar.cumprod(oar.to_tensor(x.astype(dtype)), dim=1).numpy()
            with np.errstate(invalid="ignore"):
                ref = np.cumprod(x.astype(dtype).astype(np.float64), axis=1)
            np.testing.assert_allclose(got, ref, rtol=1e-6 if dtype == "float32" else 1e-13,
                                       equal_nan=True, err_msg=f"n={n}")
    finally:
        oar.set_num_threads(prev)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["int32", "int64", "float16"])
def test_scans_of_rows_in_the_element_loop(dtype, threads):
    """cumsum and cumprod of contiguous rows of the types without a vector scan (the running
    value in a register): every row length 0-40, long rows, against NumPy's (int32 sums in
    int64, as Paddle's; products in the input's type, wrapping as NumPy's)."""
    rng = np.random.default_rng(12)
    prev = oar.get_num_threads()
    oar.set_num_threads(threads)
    try:
        for n in list(range(41)) + [1000, 4099]:
            if dtype == "float16":
                x = rng.uniform(0.9, 1.1, (3, n)).astype(dtype)
            else:
                x = rng.integers(-40, 41, (3, n)).astype(dtype)
            t = oar.to_tensor(x)
            got = oar.cumsum(t, axis=1).numpy()
            ref = np.cumsum(x.astype(np.float64 if dtype == "float16" else np.int64), axis=1)
            if dtype == "float16":
                np.testing.assert_allclose(got, ref, rtol=2e-3, atol=2e-3 * n, err_msg=f"n={n}")
                continue
            np.testing.assert_array_equal(got, ref, err_msg=f"n={n}")
            with np.errstate(over="ignore"):
                np.testing.assert_array_equal(oar.cumprod(t, dim=1).numpy(), np.cumprod(x, axis=1, dtype=x.dtype),
                                              err_msg=f"n={n}")
    finally:
        oar.set_num_threads(prev)


@pytest.mark.parametrize("axis", [0, 1])
def test_cumsum_of_16_bit_columns(axis):
    """float16 / bfloat16 cumsum over a leading axis (16-bit columns): sums in double, each
    rounded to float and then to the type, exactly as NumPy computes them; their backward (a
    reverse cumsum) too."""
    rng = np.random.default_rng(13)
    x = rng.standard_normal((37, 20, 70)).astype(np.float16)
    ref = np.cumsum(x.astype(np.float64), axis=axis).astype(np.float32).astype(np.float16)
    np.testing.assert_array_equal(oar.cumsum(oar.to_tensor(x), axis=axis).numpy(), ref)
    t = oar.to_tensor(x.astype(np.float32)).astype("bfloat16")
    got = oar.cumsum(t, axis=axis).astype("float32").numpy()
    ref_bf = np.cumsum(t.astype("float32").numpy().astype(np.float64), axis=axis)
    np.testing.assert_allclose(got, ref_bf, rtol=8e-3, atol=8e-3)
    g = rng.standard_normal((37, 20, 70)).astype(np.float16)
    xt = oar.to_tensor(x, stop_gradient=False)
    (oar.cumsum(xt, axis=axis) * oar.to_tensor(g)).sum().backward()
    rev = np.flip(np.cumsum(np.flip(g.astype(np.float64), axis), axis), axis)
    np.testing.assert_allclose(xt.grad.numpy().astype(np.float64), rev, rtol=2e-3, atol=2e-2)


def test_cumprod_gradient_with_several_zeros():
    a = np.array([2.0, 0.0, 3.0, 0.0, 4.0])
    x = tensor(a, "float64", stop_gradient=False)
    g = np.array([1.0, 2.0, -1.0, 0.5, 3.0])
    oar.cumprod(x, dim=0).backward(oar.to_tensor(g))
    num = np.zeros(5)
    for k in range(5):
        e = np.zeros(5)
        e[k] = 1e-6
        num[k] = (np.sum(np.cumprod(a + e) * g) - np.sum(np.cumprod(a - e) * g)) / 2e-6
    np.testing.assert_allclose(x.grad.numpy(), num, atol=1e-8)


def test_sum_of_bool_is_int64_and_any_all_methods():
    b = tensor([[True, False], [True, True]], "bool")
    assert oar.sum(b).dtype.name == "int64" and oar.sum(b).item() == 3
    assert b.all(axis=1).numpy().tolist() == [False, True]
    assert b.any().item() is True
    assert oar.cumsum(b).dtype.name == "int64"


def test_long_rows_run_in_parallel_chunks():
    a = np.random.default_rng(7).standard_normal(300001)
    t = tensor(a, "float64")
    np.testing.assert_allclose(oar.logsumexp(t).item(), _logsumexp(a), rtol=1e-12)
    np.testing.assert_allclose(oar.var(t).item(), np.var(a, ddof=1), rtol=1e-12)
    np.testing.assert_allclose(oar.norm(t, p=3).item(), np.sum(np.abs(a) ** 3) ** (1 / 3), rtol=1e-12)
    f = tensor(a, "float32")
    np.testing.assert_allclose(oar.logsumexp(f).item(), _logsumexp(a.astype(np.float32)), rtol=1e-5)


def test_tensor_methods():
    x = tensor(np.arange(12.0).reshape(3, 4), "float64")
    # (no searchsorted: it is paddle.searchsorted only, paddle.Tensor has no such method)
    for name in ["amax", "amin", "all", "any", "var", "std", "logsumexp", "cumsum", "cumprod",
                 "logcumsumexp", "sort", "argsort", "topk", "kthvalue", "mode", "median",
                 "nanmedian", "quantile", "nanquantile", "count_nonzero", "nansum", "nanmean",
                 "norm", "unique", "unique_consecutive", "histogram", "bucketize", "diagonal",
                 "trace", "diff", "outer", "inner", "dot", "kron", "addmm", "bincount"]:
        assert hasattr(x, name), name
    np.testing.assert_allclose(x.cumsum(axis=0).numpy(), np.cumsum(x.numpy(), 0))
    np.testing.assert_allclose(x.quantile(0.5).numpy(), 5.5)


def test_every_stats_op_is_tested():
    named = {c.name.split("[")[0] for c in CASES} | {
        "unique", "unique_consecutive", "bincount", "histogram", "searchsorted",
        "cum_extremum"}  # cummax / cummin's indices: test_scan_composites.py
    assert declared_ops("stats.yaml") - named == set()


@pytest.mark.parametrize("threads", [1, 2])
def test_column_reductions_in_row_order(threads):
    """var/std/norm over a middle axis sum rows in memory order into per-column double sums
    (column_sums), split over the pool by columns: chunks that cross from one outer index to
    the next, NaN and inf columns, against float64."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 257, 301)) * 3
    x[1, 7, 11] = np.nan
    x[2, 100, 5] = np.inf
    x[0, :, 300] = 0.0  # an all-zero column: p = 0 counts it as 0
    prev = oar.get_num_threads()
    oar.set_num_threads(threads)
    try:
        for dtype in ("float32", "float64"):
            t = oar.to_tensor(x.astype(dtype))
            x64 = x.astype(dtype).astype(np.float64)
            with np.errstate(invalid="ignore"):
                refs = {
                    "var": (oar.var(t, axis=1), x64.var(1, ddof=1)),
                    "std": (oar.std(t, axis=1, unbiased=False), x64.std(1)),
                    "norm2": (oar.linalg.norm(t, axis=1), np.sqrt((x64 ** 2).sum(1))),
                    "norm3": (oar.linalg.norm(t, 3, axis=1), (np.abs(x64) ** 3).sum(1) ** (1 / 3)),
                    "norm0": (oar.linalg.vector_norm(t, 0, axis=1), (x64 != 0).sum(1).astype(np.float64)),
                    "fro(0,1)": (oar.linalg.norm(t, "fro", axis=[0, 1]), np.sqrt((x64 ** 2).sum((0, 1)))),
                }
            rtol = 1e-6 if dtype == "float32" else 1e-12
            for name, (got, ref) in refs.items():
                np.testing.assert_allclose(got.numpy(), ref, rtol=rtol, atol=0, equal_nan=True,
                                           err_msg=f"{name} {dtype} threads={threads}")
    finally:
        oar.set_num_threads(prev)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int32"])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_candidate_filter_against_a_stable_sort(dtype, largest):
    """topk's scan keeps an element only when it beats the current k-th on value alone (8
    floats a compare for contiguous float rows; the float family on packed keys, Note [topk on
    packed keys], k up to 32 by insertion and larger k by nth_element): long rows with ties at
    the k-th value, NaN at the start, middle and end, and a strided axis, against a stable sort
    (NaN largest, ties by index)."""
    rng = np.random.default_rng(13)
    for n, k in ((1, 1), (9, 3), (70, 8), (1000, 1), (1000, 8), (1000, 40), (1000, 1000)):
        x = rng.integers(-20, 20, (5, n)).astype("float64")  # many ties
        if n > 50 and dtype != "int32":
            x[1, [0, n // 2, n - 1]] = np.nan
            x[2, :] = np.nan
            x[3, ::3] = np.nan
        key = np.where(np.isnan(x), np.inf, x)
        order = (np.argsort(-key, axis=1, kind="stable") if largest
                 else np.argsort(key, axis=1, kind="stable"))
        if largest:  # NaN first; among NaN, by index
            nan_first = np.argsort(~np.isnan(x), axis=1, kind="stable")
            order = np.where(np.isnan(x).any(1, keepdims=True),
                             np.array([np.concatenate([r[np.isnan(xr[r])], o[~np.isnan(xr[o])]])
                                       for r, o, xr in zip(nan_first, order, x)]), order)
        ref_idx = order[:, :k]
        for axis, t in ((1, oar.to_tensor(x).astype(dtype)),
                        (0, oar.to_tensor(np.ascontiguousarray(x.T)).astype(dtype))):
            v, i = oar.topk(t, k, axis=axis, largest=largest)
            v, i = v.astype("float64").numpy(), i.numpy()
            v, i = (v, i) if axis == 1 else (v.T, i.T)
            np.testing.assert_array_equal(i, ref_idx, err_msg=f"n={n} k={k} axis={axis}")
            np.testing.assert_array_equal(v, np.take_along_axis(x, ref_idx, 1))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16",
                                   "int32", "int64"])
@pytest.mark.parametrize("descending", [False, True])
def test_argsort_radix_rows_against_a_stable_sort(dtype, descending):
    """Rows of 64 values and more sort by radix keys (Note [Radix keys], radix_sort.h): the
    order of the comparison sort (NaN last ascending and first descending, -0 equal to +0,
    ties by index) on a last and a middle axis, at 1 and 2 threads; short rows keep
    std::sort and must agree with the same reference."""
    rng = np.random.default_rng(23)
    shape = (3, 300, 5)
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        a = rng.integers(info.min, int(info.max) + 1, shape, dtype=np.int64).astype(dtype)
        a[:, ::3] = rng.integers(0, 3, a[:, ::3].shape).astype(dtype)  # ties
    else:
        a = rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)
        a[:, ::4] = rng.integers(-2, 3, a[:, ::4].shape)  # ties
        a[0, :7, 0] = [0.0, -0.0, np.inf, -np.inf, np.nan, -0.0, np.nan]
        a[1, ::9, 1] = np.nan
    t = oar.to_tensor(a) if a.dtype.kind in "iub" else tensor(a, dtype)
    v = t.astype("float64").numpy() if dtype in ("float16", "bfloat16") else t.numpy()
    prev = oar.get_num_threads()
    try:
        for threads in (1, 2):
            oar.set_num_threads(threads)
            for axis, n in ((1, 300), (-1, 5)):
                key = np.moveaxis(v, axis, -1)
                if key.dtype.kind == "f":
                    nan = np.isnan(key)
                    k = np.where(nan, 0, np.where(key == 0, 0, key))
                    # NaN largest: sort by (isnan, value) ascending, or (not isnan, -value)
                    order = (np.lexsort((-k, ~nan), axis=-1) if descending else np.lexsort((k, nan), axis=-1))
                else:
                    k = key.astype(np.int64)
                    order = np.argsort(-k if descending else k, axis=-1, kind="stable")
                want_idx = np.moveaxis(order, -1, axis)
                vals, idx = oar.sort(t, axis=axis, descending=descending), oar.argsort(t, axis=axis, descending=descending)
                np.testing.assert_array_equal(idx.numpy(), want_idx, err_msg=f"axis={axis} threads={threads}")
                got = vals.astype("float64").numpy() if dtype in ("float16", "bfloat16") else vals.numpy()
                np.testing.assert_array_equal(got, np.take_along_axis(v, want_idx, axis))
    finally:
        oar.set_num_threads(prev)


def _np_mode_last(v):
    """The most frequent value (the smallest of equally frequent ones; NaNs one value above
    every number, -0 as +0) and its last position."""
    keys = [(1, 0.0) if np.isnan(a) else (0, float(a) + 0.0) for a in v]
    counts = collections.Counter(keys)
    top = max(counts.values())
    best = min(k for k, c in counts.items() if c == top)
    last = max(j for j, k in enumerate(keys) if k == best)
    return (np.nan if best[0] else best[1]), last


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int64"])
@pytest.mark.parametrize("axis", [1, 0])
def test_mode_long_rows_ties_and_last_index(dtype, axis):
    # rows of 700 small integers (many equal counts), zeros of both signs and NaNs, along the
    # last axis and along axis 0 (a strided row)
    rng = np.random.default_rng(21)
    x = rng.integers(-6, 6, (9, 700)).astype("float64")
    if dtype.startswith("float"):
        x[x == 0] = rng.choice([0.0, -0.0], (x == 0).sum())
        x[2, rng.choice(700, 300, replace=False)] = np.nan  # NaN the most frequent in row 2
    x = x if axis == 1 else np.ascontiguousarray(x.T)
    v, i = oar.mode(tensor(x, dtype), axis=axis)
    rows = x if axis == 1 else x.T
    for r, row in enumerate(rows):
        want_v, want_i = _np_mode_last(row)
        got_v = v.numpy()[r]
        assert (np.isnan(want_v) and np.isnan(got_v)) or got_v == want_v, (r, got_v, want_v)
        assert i.numpy()[r] == want_i, (r, i.numpy()[r], want_i)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cumsum_reverse_rows_and_backward(dtype):
    """cumsum's reverse form along rows (what a forward cumsum's backward runs) takes the
    vector scan from the row's end: every length around the vector widths (8 and 4 double
    lanes), against the float64 sums of the reversed rows; and x.grad of cumsum(x) * w is
    the reverse cumsum of w."""
    rng = np.random.default_rng(3)
    tol = 1e-6 if dtype == "float32" else 1e-13
    for n in [0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33, 1029]:
        x = rng.standard_normal((3, n))
        got = oar._C.ops._cumsum(tensor(x, dtype), 1, False, False, True).numpy()
        ref = np.cumsum(x.astype(dtype).astype(np.float64)[:, ::-1], axis=1)[:, ::-1]
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol, err_msg=f"n={n}")
        xt = tensor(x, dtype, stop_gradient=False)
        w = rng.standard_normal((3, n))
        (oar.cumsum(xt, axis=-1) * tensor(w, dtype)).sum().backward()
        want = np.cumsum(w.astype(dtype).astype(np.float64)[:, ::-1], axis=1)[:, ::-1]
        np.testing.assert_allclose(xt.grad.numpy(), want, rtol=tol, atol=tol, err_msg=f"grad n={n}")


@pytest.mark.parametrize("capability", ["avx2", "avx512"])
def test_cumsum_reverse_in_each_isa_copy(capability):
    run_in_isa_copy(f"{__file__}::test_cumsum_reverse_rows_and_backward", capability, 2)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_gather_axis_grad_slabs(threads, dtype):
    # The scatter-add of take_along_axis / topk / sort gradients, one slab per outer index over
    # the pool: every axis of a rank-3 x, duplicate and negative indices (they add), index
    # longer and shorter than the axis, 16-bit floats through a float slab.
    rng = np.random.default_rng(11)
    shape = (37, 6, 29)
    prev = oar.get_num_threads()
    oar.set_num_threads(threads)
    try:
        for axis in range(3):
            for m in (1, shape[axis], 3 * shape[axis]):
                ishape = list(shape)
                ishape[axis] = m
                idx = rng.integers(-shape[axis], shape[axis], ishape)
                g = rng.standard_normal(ishape).astype(np.float32)
                gt = oar.to_tensor(g).astype(dtype)
                got = oar._C.ops._gather_axis_grad(oar.zeros(shape, dtype), oar.to_tensor(idx), gt, axis)
                gw = gt.numpy() if dtype == "float64" else gt.astype("float32").numpy().astype(np.float64)
                want = _scatter_add(np.zeros(shape), idx, gw, axis)
                tol = {"float32": 1e-5, "float64": 1e-12}.get(dtype, 2e-2)
                got = got.numpy() if dtype == "float64" else got.astype("float32").numpy()
                np.testing.assert_allclose(got, want, rtol=tol, atol=tol * m)
        x = oar.to_tensor(rng.standard_normal((64, 300)).astype(np.float32)).astype(dtype)
        x.stop_gradient = False
        vals, ids = oar.topk(x, 7, axis=1)
        (vals * oar.arange(7, dtype="float32").astype(dtype)).sum().backward()
        want = np.zeros((64, 300))
        np.put_along_axis(want, ids.numpy(), np.arange(7, dtype=np.float64)[None, :], 1)
        np.testing.assert_array_equal(x.grad.astype("float32").numpy(), want)
    finally:
        oar.set_num_threads(prev)
    with pytest.raises(ValueError, match=r"gather_axis_grad: index \(shape \[3, 2\]\).*x's shape \[4, 4\]"):
        oar._C.ops._gather_axis_grad(oar.zeros([4, 4]), oar.to_tensor(np.zeros((3, 2), np.int64)),
                                     oar.ones([3, 2]), 1)

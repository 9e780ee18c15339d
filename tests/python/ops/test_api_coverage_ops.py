"""The ops behind issue 3's API coverage (test_api_coverage.py checks the names): oar.poisson,
F.diag_embed, the Tensor methods concat/stack/broadcast_tensors/slice/where/multinomial,
and F.conv2d_transpose's Paddle argument order (dilation before groups)."""
import math

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from op_test_utils import (BINARY_SHAPES, OpCase, bools, case_id, check_bad_inputs,
                           check_forward, check_grad, normal, tensor)


# ---------------------------------------------------------------- deterministic ops
def _np_diag_embed(x, offset=0, dim1=-2, dim2=-1):
    x = np.asarray(x)
    n = x.shape[-1] + abs(offset)
    out_nd = x.ndim + 1
    d1, d2 = dim1 % out_nd, dim2 % out_nd
    out = np.zeros(x.shape[:-1] + (n, n), dtype=x.dtype)
    idx = np.arange(x.shape[-1])
    rows, cols = (idx, idx + offset) if offset >= 0 else (idx - offset, idx)
    out[..., rows, cols] = x
    # out's last two axes are (dim1, dim2); move them into place
    rest = [a for a in range(out_nd) if a not in (d1, d2)]
    perm = [0] * out_nd
    for src, dst in zip(range(out_nd - 2), rest):
        perm[dst] = src
    perm[d1], perm[d2] = out_nd - 2, out_nd - 1
    return np.transpose(out, perm)


def _np_slice(x, axes, starts, ends):
    idx = [slice(None)] * x.ndim
    for a, s, e in zip(axes, starts, ends):
        idx[a] = slice(s, e)
    return x[tuple(idx)]


_T = oar.Tensor

CASES = [
    OpCase("diag_embed", F.diag_embed, _np_diag_embed, inputs=[normal()],
           shapes=[[(3,)], [(2, 3)], [(0, 3)], [(2, 0)]], grad_shapes=[[(2, 3)]],
           bad_inputs=[((tensor([[1.0, 2.0]]),), ValueError, "must differ",
                        {"dim1": 0, "dim2": 0}),
                       ((tensor([[1.0, 2.0]]),), IndexError, "out of range", {"dim1": 5}),
                       (([1.0, 2.0],), TypeError, "must be a Tensor")]),
    OpCase("diag_embed_offset", F.diag_embed, _np_diag_embed, inputs=[normal()],
           attrs={"offset": -1, "dim1": 0, "dim2": 2}, shapes=[[(2, 3)], [(2, 0)]],
           grad_shapes=[[(2, 3)]], op="diag_embed"),
    OpCase("Tensor.concat", lambda a, b, axis=0: _T.concat([a, b], axis),
           lambda a, b, axis=0: np.concatenate([a, b], axis), inputs=[(2, 3), (4, 3)],
           shapes=[[(2, 3), (4, 3)], [(0, 3), (2, 3)]], op="concat",
           bad_inputs=[((tensor([[1.0]]), tensor([[1.0, 2.0]])), ValueError, "")]),
    OpCase("Tensor.stack", lambda a, b: _T.stack([a, b], 1),
           lambda a, b: np.stack([a, b], 1), inputs=[(2, 3), (2, 3)],
           shapes=[[(2, 3), (2, 3)], [(0, 3), (0, 3)]], op="stack",
           bad_inputs=[((tensor([[1.0]]), tensor([[1.0, 2.0]])), ValueError, "")]),
    OpCase("Tensor.broadcast_tensors", lambda a, b: _T.broadcast_tensors([a, b])[0] * 2.0
           + _T.broadcast_tensors([a, b])[1],
           lambda a, b: np.broadcast_arrays(a, b)[0] * 2.0 + np.broadcast_arrays(a, b)[1],
           inputs=[(3, 1), (1, 4)], shapes=BINARY_SHAPES, op="broadcast_tensors",
           bad_inputs=[(lambda: (tensor([1.0, 2.0]), tensor([1.0, 2.0, 3.0])), ValueError,
                        "cannot be broadcast")]),
    OpCase("Tensor.slice", lambda x: x.slice([0, 1], [1, 0], [3, 2]),
           lambda x: _np_slice(x, [0, 1], [1, 0], [3, 2]), inputs=[(4, 3)],
           shapes=[[(4, 3)], [(0, 3)], [(4, 5)]], op="strided_slice"),
    OpCase("Tensor.where", lambda c, a, b: c.where(a, b), lambda c, a, b: np.where(c, a, b),
           inputs=[bools(), normal(), normal()],
           shapes=[[(3, 4), (3, 4), (3, 4)], [(3, 1), (1, 4), ()], [(0, 3), (3,), (1, 3)]],
           op="where"),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.grad], ids=case_id)
def test_grad(case):
    check_grad(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.bad_inputs], ids=case_id)
def test_bad_inputs(case):
    check_bad_inputs(case)


@pytest.mark.parametrize("op", ["concat", "stack", "broadcast_tensors"])
def test_list_methods_called_on_one_tensor_raise(op):
    # As in Paddle, these methods take the list: Tensor.concat([a, b]); a.concat() is an error.
    x = tensor([[1.0, 2.0]])
    with pytest.raises(TypeError, match=f"{op}: argument '(x|input)' must be a list or tuple"):
        getattr(x, op)()


def test_slice_bad_inputs_name_the_op():
    x = tensor([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(IndexError, match="strided_slice: axes 2 is out of range"):
        x.slice([2], [0], [1])
    with pytest.raises(ValueError, match="strided_slice: .*same length"):
        x.slice([0, 1], [0], [1])


def test_where_method_needs_both_values():
    with pytest.raises(ValueError, match="where: x and y must both be given"):
        tensor([True, False], "bool").where(tensor([1.0, 2.0]))


def test_multinomial_method_is_the_function():
    w = tensor([[0.1, 0.6, 0.3], [0.5, 0.0, 0.5]])
    oar.seed(11)
    a = w.multinomial(5, replacement=True).numpy()
    oar.seed(11)
    b = oar.multinomial(w, 5, True).numpy()
    np.testing.assert_array_equal(a, b)
    assert a.shape == (2, 5) and (a[1] != 1).all()
    with pytest.raises(ValueError, match="multinomial: num_samples"):
        w.multinomial(0)


# ---------------------------------------------------------------- conv2d_transpose order
def _np_conv2d_transpose(x, w, stride, dilation, groups):
    n, cin, h, wd = x.shape
    _, cout_g, kh, kw = w.shape
    ho = (h - 1) * stride + dilation * (kh - 1) + 1
    wo = (wd - 1) * stride + dilation * (kw - 1) + 1
    out = np.zeros((n, cout_g * groups, ho, wo))
    cin_g = cin // groups
    for g in range(groups):
        for ci in range(g * cin_g, (g + 1) * cin_g):
            for co in range(cout_g):
                for i in range(kh):
                    for j in range(kw):
                        out[:, g * cout_g + co,
                            i * dilation:i * dilation + (h - 1) * stride + 1:stride,
                            j * dilation:j * dilation + (wd - 1) * stride + 1:stride] += \
                            x[:, ci] * w[ci, co, i, j]
    return out


def test_conv2d_transpose_positional_dilation_then_groups():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 3, 3))
    w = rng.standard_normal((4, 1, 2, 2))
    ref = _np_conv2d_transpose(x, w, stride=2, dilation=3, groups=2)
    xt, wt = tensor(x, "float64"), tensor(w, "float64")
    # Paddle: (x, weight, bias, stride, padding, output_padding, dilation, groups, ...)
    pos = F.conv2d_transpose(xt, wt, None, 2, 0, 0, 3, 2).numpy()
    kw = F.conv2d_transpose(xt, wt, stride=2, dilation=3, groups=2).numpy()
    np.testing.assert_allclose(pos, ref, atol=1e-10)
    np.testing.assert_allclose(kw, ref, atol=1e-10)
    layer = oar.nn.Conv2DTranspose(4, 2, 2, stride=2, dilation=3, groups=2)
    layer.weight.set_value(tensor(w, "float32"))
    np.testing.assert_allclose(layer(tensor(x)).numpy(), ref + layer.bias.numpy().reshape(1, -1, 1, 1),
                               atol=1e-4)


# ---------------------------------------------------------------- poisson
def _pmf(k, lam):
    return np.exp(k * math.log(lam) - lam - np.array([math.lgamma(v + 1) for v in k]))


@pytest.mark.parametrize("lam", [0.5, 3.0, 9.5, 10.0, 25.0])
def test_poisson_frequencies(lam):
    n = 20000
    oar.seed(2024)
    s = oar.poisson(oar.full([n], lam, "float64")).numpy()
    assert s.dtype == np.float64 and (s == np.round(s)).all() and (s >= 0).all()
    ks = np.arange(max(0, int(lam - 3 * math.sqrt(lam))), int(lam + 3 * math.sqrt(lam)) + 1)
    p = _pmf(ks, lam)
    freq = np.array([(s == k).mean() for k in ks])
    sigma = np.sqrt(p * (1 - p) / n)
    assert (np.abs(freq - p) < 5 * sigma + 1e-3).all(), (lam, freq, p)
    assert abs(s.mean() - lam) < 5 * math.sqrt(lam / n)
    assert abs(s.var() - lam) < 6 * lam * math.sqrt(2.0 / n) + 5 * math.sqrt(lam / n)


def test_poisson_moments_mixed_rates_and_dtypes():
    rates = np.array([0.0, 0.2, 4.0, 12.0, 1000.0])
    n = 8000
    for dtype in ["float32", "float64", "float16", "bfloat16"]:
        oar.seed(7)
        x = oar.to_tensor(np.tile(rates, (n, 1)).astype("float32")).astype(dtype)
        out = oar.poisson(x)
        assert out.dtype.name == dtype and out.shape == [n, 5]
        s = out.astype("float64").numpy()
        assert (s[:, 0] == 0).all()
        if dtype in ("float32", "float64"):
            tol = 5 * np.sqrt(np.maximum(rates, 1e-12) / n)
            assert (np.abs(s.mean(0) - rates) <= tol + 1e-12).all(), (dtype, s.mean(0))
            assert abs(s[:, 4].var() / 1000.0 - 1.0) < 0.1


def test_poisson_reproducible_and_no_gradient():
    x = oar.to_tensor(np.linspace(0.0, 40.0, 50), stop_gradient=False)
    oar.seed(5)
    a = oar.poisson(x).numpy()
    state = oar.get_rng_state()
    b = oar.poisson(x).numpy()
    oar.set_rng_state(state)
    c = oar.poisson(x).numpy()
    oar.seed(5)
    d = oar.poisson(x).numpy()
    np.testing.assert_array_equal(a, d)
    np.testing.assert_array_equal(b, c)
    assert not np.array_equal(a, b)
    assert oar.poisson(x).stop_gradient
    assert oar.poisson(oar.zeros([0, 3])).shape == [0, 3]
    assert oar.poisson(oar.to_tensor(3.0)).shape == []


@pytest.mark.parametrize("x, exc, msg", [
    (lambda: oar.to_tensor([1.0, -0.5]), ValueError, "got -0.5"),
    (lambda: oar.to_tensor([1.0, float("nan")]), ValueError, "got nan"),
    (lambda: oar.to_tensor([float("inf")]), ValueError, "got inf"),
    (lambda: oar.to_tensor([1, 2]), TypeError, "floating-point"),
    (lambda: [1.0, 2.0], TypeError, "argument 'x' must be a Tensor"),
])
def test_poisson_bad_inputs(x, exc, msg):
    with pytest.raises(exc) as info:
        oar.poisson(x())
    assert "poisson" in str(info.value) and msg in str(info.value)

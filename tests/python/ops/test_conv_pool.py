"""Convolutions and pooling (paddle_core/ops/cnn.yaml) against float64 NumPy loop
references: forward in float32 (oneDNN) and float64 (im2col + GEMM), both layouts,
gradients against finite differences, double backward, 0-size batches, bad inputs."""
import itertools

import numpy as np
import oar
import oar.nn.functional as F
import pytest
from op_test_utils import OpCase, case_id, check_bad_inputs, check_forward, check_grad, tensor


# ---------------------------------------------------------------- references
def _pads(p, nd):
    return [(p[2 * i], p[2 * i + 1]) for i in range(nd)]


def np_conv(x, w, stride, pads, dil, groups):
    """x [N, C, *S], w [O, C/g, *K], explicit pads [(before, after)] per dim."""
    nd = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + pads)
    O, cg = w.shape[0], w.shape[1]
    og = O // groups
    K = w.shape[2:]
    out_sz = [(xp.shape[2 + i] - dil[i] * (K[i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    out = np.zeros((x.shape[0], O, *out_sz))
    for o in range(O):
        g = o // og
        for kidx in itertools.product(*[range(k) for k in K]):
            sl = tuple(slice(kidx[i] * dil[i], kidx[i] * dil[i] + stride[i] * (out_sz[i] - 1) + 1,
                             stride[i]) for i in range(nd))
            patch = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + sl]
            out[:, o] += np.tensordot(w[(o, slice(None)) + kidx], patch, axes=([0], [1]))
    return out


def np_conv_transpose(x, w, stride, pads, outpad, dil, groups):
    """x [N, Cin, *S], w [Cin, Cout/g, *K]: the adjoint of np_conv's input."""
    nd = x.ndim - 2
    cin, cog = w.shape[0], w.shape[1]
    cig = cin // groups
    K = w.shape[2:]
    S = x.shape[2:]
    full = [(S[i] - 1) * stride[i] + dil[i] * (K[i] - 1) + 1 + outpad[i] + pads[i][1]
            for i in range(nd)]
    out = np.zeros((x.shape[0], cog * groups, *full))
    for c in range(cin):
        g = c // cig
        for kidx in itertools.product(*[range(k) for k in K]):
            sl = tuple(slice(kidx[i] * dil[i], kidx[i] * dil[i] + stride[i] * (S[i] - 1) + 1,
                             stride[i]) for i in range(nd))
            contrib = np.einsum("n...,o->no...", x[:, c], w[(c, slice(None)) + kidx])
            out[(slice(None), slice(g * cog, (g + 1) * cog)) + sl] += contrib
    T = [(S[i] - 1) * stride[i] - pads[i][0] - pads[i][1] + dil[i] * (K[i] - 1) + 1 + outpad[i]
         for i in range(nd)]
    return out[(slice(None), slice(None)) + tuple(slice(pads[i][0], pads[i][0] + T[i])
                                                  for i in range(nd))]


def np_pool(x, kernel, stride, pads, mode, ceil_mode=False, exclusive=True, adaptive=False):
    """Paddle's pooling semantics on [N, C, *S] (mode 'max' or 'avg')."""
    nd = x.ndim - 2
    S = x.shape[2:]
    if adaptive:
        out_sz = list(kernel)
    else:
        out_sz = [(S[i] + pads[i][0] + pads[i][1] - kernel[i] + (stride[i] - 1 if ceil_mode else 0))
                  // stride[i] + 1 for i in range(nd)]
    out = np.zeros(x.shape[:2] + tuple(out_sz))
    for o in itertools.product(*[range(n) for n in out_sz]):
        sl, vol = [], 1
        for i in range(nd):
            if adaptive:
                b, e = o[i] * S[i] // out_sz[i], -(-(o[i] + 1) * S[i] // out_sz[i])
            else:
                s = o[i] * stride[i] - pads[i][0]
                b, e = max(s, 0), min(s + kernel[i], S[i])
            sl.append(slice(b, e))
            vol *= max(e - b, 0)
        win = x[(slice(None), slice(None)) + tuple(sl)].reshape(x.shape[0], x.shape[1], vol)
        if mode == "max":
            out[(slice(None), slice(None)) + o] = win.max(-1) if vol else 0.0
        else:
            div = vol if (exclusive or adaptive) else int(np.prod(kernel))
            out[(slice(None), slice(None)) + o] = win.sum(-1) / div if div else 0.0
    return out


def to_last(a):
    return np.moveaxis(a, 1, -1)


def from_last(a):
    return np.moveaxis(a, -1, 1)


# ---------------------------------------------------------------- conv cases
CONV2D = [  # (x shape, w shape, stride, padding, dilation, groups)
    ((2, 4, 7, 8), (6, 4, 3, 3), 1, 1, 1, 1),
    ((2, 4, 7, 8), (6, 2, 3, 2), (2, 1), [0, 1, 2, 0], (1, 2), 2),
    ((1, 3, 5, 5), (3, 1, 3, 3), 2, [1, 1], 1, 3),  # depthwise
    ((2, 8, 6, 6), (4, 8, 1, 1), 1, 0, 1, 1),  # 1x1
    ((0, 4, 5, 5), (6, 4, 3, 3), 1, 1, 1, 1),  # empty batch
]


def _explicit(padding, nd):
    if isinstance(padding, int):
        return [(padding, padding)] * nd
    if len(padding) == nd:
        return [(p, p) for p in padding]
    return _pads(padding, nd)


def _t(v, nd):
    return [v] * nd if isinstance(v, int) else list(v)


def _conv_case(i, spec, fmt):
    xs, ws, s, p, d, g = spec
    last = fmt == "NHWC"

    def fn_oar(x, w):
        return F.conv2d(x, w, stride=s, padding=p, dilation=d, groups=g, data_format=fmt)

    def fn_np(x, w):
        xx = from_last(x) if last else x
        out = np_conv(xx, w, _t(s, 2), _explicit(p, 2), _t(d, 2), g)
        return to_last(out) if last else out
    x_shape = (xs[0], xs[2], xs[3], xs[1]) if last else xs
    return OpCase(f"conv2d_{i}_{fmt}", fn_oar, fn_np, inputs=[x_shape, ws], shapes=[[x_shape, ws]],
                  grad_shapes=[[x_shape, ws]] if xs[0] else [], op="conv2d",
                  tol={"float32": (2e-4, 2e-4)})


CONV_CASES = [_conv_case(i, spec, fmt) for i, spec in enumerate(CONV2D) for fmt in ("NCHW", "NHWC")]


def _convt_case(i, xs, ws, s, p, op_, d, g, fmt="NCHW", output_size=None):
    last = fmt == "NHWC"

    def fn_oar(x, w):
        return F.conv2d_transpose(x, w, stride=s, padding=p, output_padding=op_, dilation=d,
                                  groups=g, output_size=output_size, data_format=fmt)

    def fn_np(x, w):
        xx = from_last(x) if last else x
        outpad = _t(op_, 2)
        if output_size is not None:
            sp = xx.shape[2:]
            outpad = [output_size[k] - ((sp[k] - 1) * _t(s, 2)[k] - sum(_explicit(p, 2)[k]) +
                                        _t(d, 2)[k] * (w.shape[2 + k] - 1) + 1) for k in range(2)]
        out = np_conv_transpose(xx, w, _t(s, 2), _explicit(p, 2), outpad, _t(d, 2), g)
        return to_last(out) if last else out
    x_shape = (xs[0], xs[2], xs[3], xs[1]) if last else xs
    return OpCase(f"conv2d_transpose_{i}_{fmt}", fn_oar, fn_np, inputs=[x_shape, ws],
                  shapes=[[x_shape, ws]], grad_shapes=[[x_shape, ws]] if xs[0] else [],
                  op="conv2d_transpose", tol={"float32": (2e-4, 2e-4)})


CONVT_CASES = [
    _convt_case(0, (2, 4, 4, 5), (4, 3, 3, 3), 1, 1, 0, 1, 1),
    _convt_case(1, (2, 4, 4, 5), (4, 3, 3, 3), 2, 1, 1, 1, 2),
    _convt_case(2, (1, 4, 3, 4), (4, 2, 2, 3), (2, 3), [1, 0, 0, 1], 0, (2, 1), 1, "NHWC"),
    _convt_case(3, (1, 2, 3, 3), (2, 2, 3, 3), 2, 0, 0, 1, 1, output_size=[8, 7]),
    _convt_case(4, (0, 4, 4, 5), (4, 3, 3, 3), 1, 1, 0, 1, 1),
]


@pytest.mark.parametrize("case", CONV_CASES + CONVT_CASES, ids=case_id)
def test_conv_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", [c for c in CONV_CASES + CONVT_CASES if c.grad_shapes],
                         ids=case_id)
def test_conv_grad(case):
    check_grad(case)


def test_conv1d_and_conv3d():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((2, 3, 9)), rng.standard_normal((4, 3, 3))
    for dt in ("float32", "float64"):
        out = F.conv1d(tensor(x, dt), tensor(w, dt), stride=2, padding=1, dilation=1)
        ref = np_conv(x, w, [2], [(1, 1)], [1], 1)
        np.testing.assert_allclose(out.numpy(), ref, atol=1e-4)
        out = F.conv1d(tensor(np.moveaxis(x, 1, 2), dt), tensor(w, dt), padding="SAME",
                       data_format="NLC")
        np.testing.assert_allclose(out.numpy(), np.moveaxis(np_conv(x, w, [1], [(1, 1)], [1], 1), 1, 2),
                                   atol=1e-4)
        out = F.conv1d_transpose(tensor(x, dt), tensor(rng.standard_normal((3, 2, 3)), dt), stride=2)
        assert out.shape == [2, 2, 19]
    x3, w3 = rng.standard_normal((1, 4, 4, 5, 3)), rng.standard_normal((2, 2, 2, 3, 1))
    for dt in ("float32", "float64"):
        out = F.conv3d(tensor(x3, dt), tensor(w3, dt), padding=[1, 0, 1], stride=[1, 2, 1], groups=2)
        ref = np_conv(x3, w3, [1, 2, 1], [(1, 1), (0, 0), (1, 1)], [1, 1, 1], 2)
        np.testing.assert_allclose(out.numpy(), ref, atol=1e-4)
        wt = rng.standard_normal((4, 1, 2, 2, 2))
        out = F.conv3d_transpose(tensor(x3, dt), tensor(wt, dt), stride=2, groups=2)
        ref = np_conv_transpose(x3, wt, [2] * 3, [(0, 0)] * 3, [0] * 3, [1] * 3, 2)
        np.testing.assert_allclose(out.numpy(), ref, atol=1e-4)


def test_conv_same_valid_and_bias():
    rng = np.random.default_rng(1)
    x, w, b = rng.standard_normal((1, 2, 7, 6)), rng.standard_normal((3, 2, 3, 2)), rng.standard_normal(3)
    out = F.conv2d(tensor(x, "float64"), tensor(w, "float64"), tensor(b, "float64"), stride=2,
                   padding="SAME")
    # SAME: out = ceil(in / stride); pad_total = (out - 1) * s + k - in, split low-first
    ref = np_conv(x, w, [2, 2], [(1, 1), (0, 0)], [1, 1], 1) + b[None, :, None, None]
    assert out.shape == [1, 3, 4, 3]
    np.testing.assert_allclose(out.numpy(), ref, atol=1e-12)
    out = F.conv2d(tensor(x, "float64"), tensor(w, "float64"), padding="VALID")
    np.testing.assert_allclose(out.numpy(), np_conv(x, w, [1, 1], [(0, 0)] * 2, [1, 1], 1), atol=1e-12)
    pairs = [[0, 0], [0, 0], [1, 2], [0, 1]]
    out = F.conv2d(tensor(x, "float64"), tensor(w, "float64"), padding=pairs)
    np.testing.assert_allclose(out.numpy(), np_conv(x, w, [1, 1], [(1, 2), (0, 1)], [1, 1], 1),
                               atol=1e-12)


def test_conv_double_backward():
    """d/dx of <grad_x(conv), v> against finite differences (second order through
    conv2d_transpose and conv2d_grad_filter)."""
    rng = np.random.default_rng(2)
    x0, w0 = rng.standard_normal((1, 2, 5, 4)), rng.standard_normal((3, 2, 3, 3))
    cot = rng.standard_normal((1, 3, 3, 2))

    def first_grads(xa, wa, create):
        x, w = oar.to_tensor(xa, stop_gradient=False), oar.to_tensor(wa, stop_gradient=False)
        y = F.conv2d(x, w, stride=[1, 2], padding=[0, 1])
        gx, gw = oar.grad([y], [x, w], grad_outputs=[oar.to_tensor(cot)], create_graph=create)
        return x, w, gx, gw

    x, w, gx, gw = first_grads(x0, w0, True)
    v, u = rng.standard_normal(x0.shape), rng.standard_normal(w0.shape)
    s = (gx * oar.to_tensor(v)).sum() + (gw * oar.to_tensor(u)).sum()
    dx, dw = oar.grad([s], [x, w])

    def scalar(xa, wa):
        _, _, gx, gw = first_grads(xa, wa, False)
        return float((gx.numpy() * v).sum() + (gw.numpy() * u).sum())
    eps = 1e-6
    for arr, got in ((x0, dx), (w0, dw)):
        num = np.zeros_like(arr)
        for idx in np.ndindex(*arr.shape):
            old = arr[idx]
            arr[idx] = old + eps
            hi = scalar(x0, w0)
            arr[idx] = old - eps
            lo = scalar(x0, w0)
            arr[idx] = old
            num[idx] = (hi - lo) / (2 * eps)
        np.testing.assert_allclose(got.numpy(), num, atol=1e-6, rtol=1e-5)


CONV_BAD = OpCase(
    "conv2d_bad", lambda x, w, **k: F.conv2d(x, w, **k), None, op="conv2d",
    bad_inputs=[
        ([tensor(np.ones((2, 3, 5))), tensor(np.ones((4, 3, 3, 3)))], ValueError, "4-D", {}),
        ([tensor(np.ones((1, 4, 5, 5))), tensor(np.ones((6, 4, 3, 3)))], ValueError, "groups",
         {"groups": 3}),
        ([tensor(np.ones((1, 4, 5, 5))), tensor(np.ones((6, 3, 3, 3)))], ValueError, "channels", {}),
        ([tensor(np.ones((1, 4, 5, 5))), tensor(np.ones((6, 4, 3, 3)))], ValueError, "non-negative",
         {"padding": -1}),
        ([tensor(np.ones((1, 4, 2, 2))), tensor(np.ones((6, 4, 3, 3)))], ValueError, "larger",
         {}),
        ([tensor(np.ones((1, 4, 5, 5))), tensor(np.ones((6, 4, 3, 3)))], ValueError, "data_format",
         {"data_format": "NCL"}),
        ([tensor(np.ones((1, 4, 5, 5))), tensor(np.ones((6, 4, 3, 3)), "float64")], TypeError,
         "dtype", {}),
        ([tensor(np.ones((1, 4, 5, 5))), tensor(np.ones((6, 4, 3, 3)))], ValueError, "stride",
         {"stride": 0}),
    ])


def test_conv_bad_inputs():
    check_bad_inputs(CONV_BAD)
    with pytest.raises(ValueError, match="conv2d_transpose.*output_size"):
        F.conv2d_transpose(tensor(np.ones((1, 2, 3, 3))), tensor(np.ones((2, 2, 3, 3))), stride=2,
                           output_size=[20, 20])
    with pytest.raises(ValueError, match="conv2d_transpose.*output_padding"):
        F.conv2d_transpose(tensor(np.ones((1, 2, 3, 3))), tensor(np.ones((2, 2, 3, 3))), stride=1,
                           output_padding=1)
    with pytest.raises(ValueError, match="conv1d"):
        F.conv1d(tensor(np.ones((1, 2, 3, 3))), tensor(np.ones((2, 2, 3))))


def test_conv_argument_forms():
    """Paddle's stride / dilation / padding forms (int, list, tuple, NumPy int, pairs) give
    one result, with and without a gradient to feed; a bad one of each form is a ValueError
    naming the op and the argument (the common int and list forms take a fast path)."""
    rng = np.random.default_rng(3)
    x = tensor(rng.standard_normal((1, 4, 9, 8)))
    w = tensor(rng.standard_normal((6, 4, 3, 3)))
    b = tensor(rng.standard_normal(6))
    ref = F.conv2d(x, w, b, stride=[2, 2], padding=[1, 1, 1, 1], dilation=[1, 1]).numpy()
    forms = [dict(stride=2, padding=1, dilation=1), dict(stride=(2, 2), padding=(1, 1), dilation=(1, 1)),
             dict(stride=np.int64(2), padding=np.int32(1), dilation=[np.int64(1)] * 2),
             dict(stride=[2], padding=[[0, 0], [0, 0], [1, 1], [1, 1]], dilation=1)]
    for kw in forms:
        np.testing.assert_allclose(F.conv2d(x, w, b, **kw).numpy(), ref, rtol=1e-6, atol=1e-6)
        wg = tensor(w.numpy())
        wg.stop_gradient = False
        np.testing.assert_allclose(F.conv2d(x, wg, b, **kw).numpy(), ref, rtol=1e-5, atol=1e-5)
    bad = [(dict(stride=[1, 0]), "stride"), (dict(stride=-1), "stride"), (dict(stride=[1, 2, 3]), "stride"),
           (dict(stride=[1.5, 1]), "stride"), (dict(dilation=0), "dilation"), (dict(dilation=[2, -1]), "dilation"),
           (dict(padding=-1), "padding"), (dict(padding=[1, -1]), "padding"), (dict(padding=[1, 1, 1]), "padding"),
           (dict(groups=0), "groups")]
    for kw, arg in bad:
        with pytest.raises(ValueError, match=f"conv2d: {arg}"):
            with oar.no_grad():
                F.conv2d(x, w, b, **kw)
    with pytest.raises(ValueError, match=r"conv2d: bias must have shape \[6\]"):
        with oar.no_grad():
            F.conv2d(x, w, tensor(np.ones(5)))


# ---------------------------------------------------------------- pooling
POOLS = [  # (x shape, kernel, stride, padding, ceil_mode, exclusive)
    ((2, 3, 7, 8), 2, None, 0, False, True),
    ((2, 3, 7, 8), 3, 2, 1, False, True),
    ((2, 3, 7, 8), 3, 2, 1, True, False),
    ((1, 2, 6, 5), (3, 2), (1, 2), [1, 0, 0, 1], True, True),
    ((0, 3, 4, 4), 2, 2, 0, False, True),
]


def _pool_case(i, spec, mode, fmt):
    xs, k, s, p, ceil, excl = spec
    last = fmt == "NHWC"

    def fn_oar(x):
        if mode == "max":
            return F.max_pool2d(x, k, s, p, ceil_mode=ceil, data_format=fmt)
        return F.avg_pool2d(x, k, s, p, ceil_mode=ceil, exclusive=excl, data_format=fmt)

    def fn_np(x):
        xx = from_last(x) if last else x
        kk = _t(k, 2)
        out = np_pool(xx, kk, kk if s is None else _t(s, 2), _explicit(p, 2), mode, ceil, excl)
        return to_last(out) if last else out
    x_shape = (xs[0], xs[2], xs[3], xs[1]) if last else xs
    return OpCase(f"{mode}_pool2d_{i}_{fmt}", fn_oar, fn_np, inputs=[x_shape], shapes=[[x_shape]],
                  grad_shapes=[[x_shape]] if xs[0] else [], op=f"{mode}_pool2d")


POOL_CASES = [_pool_case(i, spec, mode, fmt) for i, spec in enumerate(POOLS)
              for mode in ("max", "avg") for fmt in ("NCHW", "NHWC")]
ADAPTIVE_CASES = [
    OpCase(f"adaptive_{mode}_pool2d_{o}", (lambda m, o: lambda x: (
        F.adaptive_max_pool2d(x, o) if m == "max" else F.adaptive_avg_pool2d(x, o)))(mode, o),
        (lambda m, o: lambda x: np_pool(x, _t(o, 2), None, None, m, adaptive=True))(mode, o),
        inputs=[(2, 3, 7, 5)], op=f"adaptive_{mode}_pool2d")
    for mode in ("max", "avg") for o in (1, 3, (4, 2))]


@pytest.mark.parametrize("case", POOL_CASES + ADAPTIVE_CASES, ids=case_id)
def test_pool_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", [c for c in POOL_CASES + ADAPTIVE_CASES
                                  if c.grad_shapes is None or c.grad_shapes], ids=case_id)
def test_pool_grad(case):
    check_grad(case)


def test_pool_mask_1d_3d_and_divisor():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 6, 5))
    out, mask = F.max_pool2d(tensor(x, "float64"), 2, return_mask=True)
    flat = x.reshape(2, 3, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, mask.numpy().reshape(2, 3, -1).astype(np.int64), -1),
                                  out.numpy().reshape(2, 3, -1))
    assert mask.dtype == oar.int32
    x1 = rng.standard_normal((2, 3, 9))
    ref = np_pool(x1[:, :, None], [1, 3], [1, 2], [(0, 0), (1, 1)], "max")[:, :, 0]
    np.testing.assert_allclose(F.max_pool1d(tensor(x1, "float64"), 3, 2, 1).numpy(), ref)
    ref = np_pool(x1[:, :, None], [1, 3], [1, 2], [(0, 0), (1, 1)], "avg", exclusive=False)[:, :, 0]
    np.testing.assert_allclose(F.avg_pool1d(tensor(x1, "float64"), 3, 2, 1, exclusive=False).numpy(), ref)
    ref = np_pool(x1[:, :, None], [1, 4], None, None, "avg", adaptive=True)[:, :, 0]
    np.testing.assert_allclose(F.adaptive_avg_pool1d(tensor(x1, "float64"), 4).numpy(), ref)
    o1, m1 = F.adaptive_max_pool1d(tensor(x1, "float64"), 4, return_mask=True)
    assert o1.shape == [2, 3, 4] and m1.shape == [2, 3, 4]
    x3 = rng.standard_normal((1, 2, 4, 5, 6))
    np.testing.assert_allclose(F.max_pool3d(tensor(x3, "float64"), 2, 2).numpy(),
                               np_pool(x3, [2] * 3, [2] * 3, [(0, 0)] * 3, "max"))
    np.testing.assert_allclose(F.avg_pool3d(tensor(x3, "float64"), 3, 2, 1).numpy(),
                               np_pool(x3, [3] * 3, [2] * 3, [(1, 1)] * 3, "avg"))
    np.testing.assert_allclose(F.adaptive_avg_pool3d(tensor(x3, "float64"), [2, 3, 4]).numpy(),
                               np_pool(x3, [2, 3, 4], None, None, "avg", adaptive=True))
    out = F.avg_pool2d(tensor(x, "float64"), 2, divisor_override=3)
    np.testing.assert_allclose(out.numpy(), np_pool(x, [2, 2], [2, 2], [(0, 0)] * 2, "avg") * 4 / 3)
    out = F.max_pool2d(tensor(x, "float64"), 3, 1, "SAME")
    np.testing.assert_allclose(out.numpy(), np_pool(x, [3, 3], [1, 1], [(1, 1)] * 2, "max"))


def test_max_pool_double_backward():
    x = oar.to_tensor(np.random.default_rng(4).standard_normal((1, 2, 4, 4)), stop_gradient=False)
    y = F.max_pool2d(x, 2)
    (g,) = oar.grad([(y * y).sum()], [x], create_graph=True)  # 2 * y scattered to the argmax
    (gg,) = oar.grad([g.sum()], [x])
    _, m = F.max_pool2d(x, 2, return_mask=True)
    ref = np.zeros((1, 2, 16))
    for c in range(2):
        ref[0, c, m.numpy()[0, c].ravel()] = 2.0
    np.testing.assert_allclose(gg.numpy().reshape(1, 2, 16), ref)



@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fill", ["nan_everywhere", "nan_in_one_plane", "signed_zero_ties"])
@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
def test_max_pool2d_without_grad_matches_the_indexed_kernel(fmt, fill, dtype):
    """Eager max_pool2d with no gradient to feed (a stop_gradient input, or under no_grad)
    runs the kernel without the argmax; its values, NaN lanes, ceil_mode and padding
    included, equal the indexed kernel's, which a differentiable input takes. Planes
    without a NaN take the plain max, planes with one the NaN-skipping max. (A window
    whose maximum is a tie of -0 and +0 may give the other zero: the rows are combined
    before the columns, so "first" is not row-major there.)"""
    rng = np.random.default_rng(9)
    for shape, k, s, p, ceil in [((2, 3, 9, 11), 3, 2, 1, False), ((1, 4, 7, 7), 2, 2, 0, True),
                                 ((2, 2, 5, 6), 3, 1, 1, False), ((0, 3, 4, 4), 2, 2, 0, False),
                                 ((1, 16, 32, 32), 3, 2, 1, False), ((2, 3, 23, 37), 3, 2, 1, False)]:
        x = rng.standard_normal(shape).astype(dtype)
        if fill == "nan_everywhere":
            x.flat[::7] = np.nan
        elif fill == "nan_in_one_plane" and x.size:
            x[0, 0].flat[::5] = np.nan
        elif fill == "signed_zero_ties":
            x = rng.choice(np.array([-0.0, 0.0, -1.0], dtype=dtype), size=shape)
        if fmt == "NHWC":
            x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
        with_grad = F.max_pool2d(oar.to_tensor(x, stop_gradient=False), k, s, p, ceil_mode=ceil,
                                 data_format=fmt).numpy()
        plain = F.max_pool2d(oar.to_tensor(x), k, s, p, ceil_mode=ceil, data_format=fmt).numpy()
        with oar.no_grad():
            under_no_grad = F.max_pool2d(oar.to_tensor(x, stop_gradient=False), k, s, p,
                                         ceil_mode=ceil, data_format=fmt).numpy()
        np.testing.assert_array_equal(plain, with_grad)
        np.testing.assert_array_equal(under_no_grad, with_grad)


@pytest.mark.parametrize("fill", ["random", "nan", "signed_zero_ties"])
def test_max_pool2d_2x2_every_row_tail(fill):
    """The float 2x2 / stride 2 path (max_rows_2x2 in pool_fwd_kernels.cc) takes 8 outputs a
    step and a row's last OW % 8 through masked loads and a masked store: every tail length,
    against the indexed kernel (a differentiable input) and, without NaNs, NumPy; the output's
    neighbours past each row's tail must not be written over."""
    rng = np.random.default_rng(11)
    for ow in range(1, 20):
        shape = (2, 3, 6, 2 * ow)
        x = rng.standard_normal(shape).astype("float32")
        if fill == "nan":
            x.flat[::5] = np.nan
        elif fill == "signed_zero_ties":
            x = rng.choice(np.array([-0.0, 0.0, -1.0], dtype="float32"), size=shape)
        plain = F.max_pool2d(oar.to_tensor(x), 2, 2).numpy()
        with_grad = F.max_pool2d(oar.to_tensor(x, stop_gradient=False), 2, 2).numpy()
        np.testing.assert_array_equal(plain, with_grad, err_msg=f"OW {ow}")
        if fill == "random":
            ref = x.reshape(2, 3, 3, 2, ow, 2).max(axis=(3, 5))
            np.testing.assert_array_equal(plain, ref, err_msg=f"OW {ow}")


POOL_BAD = OpCase(
    "max_pool2d_bad", lambda x, **k: F.max_pool2d(x, **k), None, op="max_pool2d",
    bad_inputs=[
        ([tensor(np.ones((2, 3, 5)))], ValueError, "4-D", {"kernel_size": 2}),
        ([tensor(np.ones((1, 1, 3, 3)))], ValueError, "larger", {"kernel_size": 5}),
        ([tensor(np.ones((1, 1, 5, 5)))], ValueError, "non-negative", {"kernel_size": 2, "padding": -1}),
        ([tensor(np.ones((1, 1, 5, 5)))], ValueError, "half", {"kernel_size": 2, "padding": 2}),
        ([tensor(np.ones((1, 1, 5, 5)))], ValueError, "stride", {"kernel_size": 2, "stride": 0}),
        ([tensor(np.ones((1, 1, 5, 5)), "int64")], TypeError, "int64", {"kernel_size": 2}),
    ])


def test_pool_bad_inputs():
    check_bad_inputs(POOL_BAD)
    with pytest.raises(ValueError, match="adaptive_avg_pool2d.*output_size"):
        F.adaptive_avg_pool2d(tensor(np.ones((1, 1, 4, 4))), 0)
    with pytest.raises(ValueError, match="avg_pool2d.*data_format"):
        F.avg_pool2d(tensor(np.ones((1, 1, 4, 4))), 2, data_format="NCDHW")


# ---------------------------------------------------------------- layers
def test_conv_layers_shapes_init_and_forward():
    nn = oar.nn
    oar.seed(0)
    conv = nn.Conv2D(4, 6, 3, stride=2, padding=1, groups=2)
    assert conv.weight.shape == [6, 2, 3, 3] and conv.bias.shape == [6]
    assert conv._groups == 2 and conv._kernel_size == [3, 3] and conv._in_channels == 4
    assert conv._stride == [2, 2] and conv._out_channels == 6
    np.testing.assert_allclose(conv.bias.numpy(), 0.0)
    big = nn.Conv2D(64, 64, 3)  # Normal(0, sqrt(2 / (k * k * in_channels)))
    assert abs(big.weight.numpy().std() - (2.0 / (9 * 64)) ** 0.5) < 0.005
    x = np.random.default_rng(0).standard_normal((2, 4, 7, 7)).astype(np.float32)
    out = conv(oar.to_tensor(x))
    ref = np_conv(x.astype(np.float64), conv.weight.numpy().astype(np.float64), [2, 2],
                  [(1, 1), (1, 1)], [1, 1], 2)
    np.testing.assert_allclose(out.numpy(), ref + conv.bias.numpy()[None, :, None, None], atol=1e-4)
    assert sorted(conv.state_dict()) == ["bias", "weight"]
    nobias = nn.Conv2D(4, 6, 3, bias_attr=False)
    assert nobias.bias is None and nn.Conv1D(3, 5, 3).weight.shape == [5, 3, 3]
    assert nn.Conv3D(2, 4, (1, 2, 3)).weight.shape == [4, 2, 1, 2, 3]
    t = nn.Conv2DTranspose(4, 6, 3, stride=2, groups=2)
    assert t.weight.shape == [4, 3, 3, 3]
    assert t(oar.to_tensor(x)).shape == [2, 6, 15, 15]
    assert t(oar.to_tensor(x), output_size=[16, 16]).shape == [2, 6, 16, 16]
    assert nn.Conv1DTranspose(3, 2, 4).weight.shape == [3, 2, 4]
    assert nn.Conv3DTranspose(2, 4, 2).weight.shape == [2, 4, 2, 2, 2]
    with pytest.raises(ValueError, match="Conv2D.*groups"):
        nn.Conv2D(4, 6, 3, groups=4)
    with pytest.raises(ValueError, match="Conv2D.*padding_mode"):
        nn.Conv2D(4, 6, 3, padding_mode="mirror")



@pytest.mark.parametrize("mode,np_mode", [("reflect", "reflect"), ("replicate", "edge"),
                                          ("circular", "wrap")])
def test_conv2d_padding_modes(mode, np_mode):
    oar.seed(1)
    conv = oar.nn.Conv2D(3, 4, 3, padding=[1, 2], padding_mode=mode)
    x = np.random.default_rng(2).standard_normal((2, 3, 6, 7)).astype(np.float32)
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (1, 1), (2, 2)], mode=np_mode)
    ref = np_conv(xp, conv.weight.numpy().astype(np.float64), [1, 1], [(0, 0), (0, 0)], [1, 1], 1)
    out = conv(oar.to_tensor(x))
    assert out.shape == [2, 4, 6, 9]
    np.testing.assert_allclose(out.numpy(), ref + conv.bias.numpy()[None, :, None, None], atol=1e-4)

def test_pool_layers():
    nn = oar.nn
    x = oar.to_tensor(np.random.default_rng(1).standard_normal((2, 3, 8, 8)))
    np.testing.assert_allclose(nn.MaxPool2D(2)(x).numpy(), F.max_pool2d(x, 2).numpy())
    np.testing.assert_allclose(nn.AvgPool2D(3, 2, 1, exclusive=False)(x).numpy(),
                               F.avg_pool2d(x, 3, 2, 1, exclusive=False).numpy())
    out, mask = nn.MaxPool2D(kernel_size=2, return_mask=True)(x)
    assert mask.shape == [2, 3, 4, 4]
    assert nn.AdaptiveAvgPool2D(1)(x).shape == [2, 3, 1, 1]
    assert nn.AdaptiveMaxPool2D((2, 3))(x).shape == [2, 3, 2, 3]
    x1 = oar.to_tensor(np.random.default_rng(2).standard_normal((2, 3, 9)))
    assert nn.MaxPool1D(3, 2)(x1).shape == [2, 3, 4]
    assert nn.AvgPool1D(3, 2, 1)(x1).shape == [2, 3, 5]
    assert nn.AdaptiveAvgPool1D(3)(x1).shape == [2, 3, 3]
    assert nn.AdaptiveMaxPool1D(3)(x1).shape == [2, 3, 3]
    assert nn.MaxPool2D(2)._kernel_size == 2
    with pytest.raises(TypeError, match="MaxPool2D"):
        nn.MaxPool2D()


def test_lenet_trains():
    """A LeNet-style model (conv, pool, relu, linear) lowers its loss with SGD."""
    nn = oar.nn
    oar.seed(0)
    model = nn.Sequential(nn.Conv2D(1, 6, 3, padding=1), nn.ReLU(), nn.MaxPool2D(2),
                          nn.Conv2D(6, 16, 3), nn.BatchNorm2D(16), nn.ReLU(), nn.AvgPool2D(2),
                          nn.Flatten(), nn.Linear(16, 10))
    rng = np.random.default_rng(0)
    x = oar.to_tensor(rng.standard_normal((32, 1, 8, 8)).astype(np.float32))
    y = oar.to_tensor(rng.integers(0, 10, (32,)))
    opt = oar.optimizer.SGD(learning_rate=0.3, parameters=model.parameters())
    losses = []
    for _ in range(60):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
    assert losses[-1] < 0.5 * losses[0], losses


def test_paddle_names_present():
    """The CNN part of Paddle's nn.functional and nn namespaces exists under its Paddle names."""
    functional = """conv1d conv2d conv3d conv1d_transpose conv2d_transpose conv3d_transpose
        max_pool1d max_pool2d max_pool3d avg_pool1d avg_pool2d avg_pool3d adaptive_avg_pool1d
        adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool1d adaptive_max_pool2d
        adaptive_max_pool3d batch_norm layer_norm group_norm instance_norm rms_norm
        local_response_norm relu relu6 leaky_relu elu selu celu gelu silu swish mish softplus
        softsign hardswish hardsigmoid hardtanh tanhshrink hardshrink softshrink
        thresholded_relu log_sigmoid sigmoid tanh prelu glu dropout dropout2d dropout3d
        alpha_dropout""".split()
    layers = """Conv1D Conv2D Conv3D Conv1DTranspose Conv2DTranspose Conv3DTranspose MaxPool1D
        MaxPool2D MaxPool3D AvgPool1D AvgPool2D AvgPool3D AdaptiveAvgPool1D AdaptiveAvgPool2D
        AdaptiveAvgPool3D AdaptiveMaxPool1D AdaptiveMaxPool2D AdaptiveMaxPool3D BatchNorm
        BatchNorm1D BatchNorm2D BatchNorm3D LayerNorm GroupNorm InstanceNorm1D InstanceNorm2D
        InstanceNorm3D RMSNorm LocalResponseNorm Dropout2D Dropout3D AlphaDropout ReLU6
        LeakyReLU ELU SELU CELU Silu Swish Mish Softplus Softsign Hardswish Hardsigmoid
        Hardtanh Tanhshrink Softshrink Hardshrink ThresholdedReLU LogSigmoid PReLU GLU""".split()
    missing = [n for n in functional if not callable(getattr(F, n, None))]
    missing += [n for n in layers if not isinstance(getattr(oar.nn, n, None), type)]
    assert not missing, missing


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_global_average_pool_is_the_spatial_mean(dtype, threads):
    """adaptive_avg_pool2d/3d to 1 (channels first) is the mean over the trailing axes (the
    reduce kernel's rows): maps of 1 to 100 elements, 3-D, a strided input and an empty batch,
    against float64; its gradient spreads 1/(H*W)."""
    rng = np.random.default_rng(21)
    before = oar.get_num_threads()
    oar.set_num_threads(threads)
    tol = 1e-6 if dtype == "float32" else 1e-13
    try:
        for h, w in ((1, 1), (7, 7), (3, 5), (10, 10), (4, 13)):
            x = rng.standard_normal((3, 33, h, w)).astype(dtype)
            got = F.adaptive_avg_pool2d(tensor(x, dtype), 1).numpy()
            np.testing.assert_allclose(got, x.astype(np.float64).mean((2, 3), keepdims=True),
                                       rtol=tol, atol=tol, err_msg=f"{h}x{w}")
        x = rng.standard_normal((2, 5, 4, 6, 3)).astype(dtype)
        np.testing.assert_allclose(F.adaptive_avg_pool3d(tensor(x, dtype), 1).numpy(),
                                   x.astype(np.float64).mean((2, 3, 4), keepdims=True), rtol=tol, atol=tol)
        base = rng.standard_normal((2, 9, 8, 14)).astype(dtype)
        view = tensor(base, dtype)[:, ::2, :, 3:10]  # channels stepped, maps cut: not contiguous
        np.testing.assert_allclose(F.adaptive_avg_pool2d(view, 1).numpy(),
                                   base[:, ::2, :, 3:10].astype(np.float64).mean((2, 3), keepdims=True),
                                   rtol=tol, atol=tol)
        assert F.adaptive_avg_pool2d(tensor(np.zeros((0, 4, 3, 3)), dtype), 1).shape == [0, 4, 1, 1]
        xt = tensor(rng.standard_normal((2, 3, 5, 4)), dtype, stop_gradient=False)
        (F.adaptive_avg_pool2d(xt, 1) * tensor(np.arange(6.0).reshape(2, 3, 1, 1), dtype)).sum().backward()
        np.testing.assert_allclose(xt.grad.numpy(), np.broadcast_to(np.arange(6.0).reshape(2, 3, 1, 1) / 20,
                                                                    (2, 3, 5, 4)), rtol=tol)
    finally:
        oar.set_num_threads(before)

"""Activations of oar.nn.functional (nn.yaml) and dropout variants: forward against
float64 NumPy references on all float dtypes, gradients and second derivatives against
finite differences, bad arguments, and the statistics of the dropout masks."""
import numpy as np
import oar
import oar.nn.functional as F
import pytest
from op_test_utils import (FLOAT_DTYPES, NARROW_DTYPES, UNARY_SHAPES, OpCase, case_id,
                           check_forward, check_grad, normal, tensor)

SELU_SCALE, SELU_ALPHA = 1.0507009873554804934193349852946, 1.6732632423543772848170429916717


def np_softplus(x, beta=1.0, threshold=20.0):
    z = beta * x
    return np.where(z > threshold, x, (np.maximum(z, 0) + np.log1p(np.exp(-np.abs(z)))) / beta)


def np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


# name, oar function, numpy reference, smooth (second derivative checked)
ACTS = [
    ("relu6", F.relu6, lambda x: np.clip(x, 0, 6), False),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.2), lambda x: np.where(x > 0, x, 0.2 * x), False),
    ("elu", lambda x: F.elu(x, 0.7), lambda x: np.where(x > 0, x, 0.7 * np.expm1(x)), True),
    ("selu", F.selu, lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x)), True),
    ("celu", lambda x: F.celu(x, 1.5),
     lambda x: np.maximum(0, x) + np.minimum(0, 1.5 * np.expm1(x / 1.5)), True),
    ("silu", F.silu, lambda x: x * np_sigmoid(x), True),
    ("swish", F.swish, lambda x: x * np_sigmoid(x), True),
    ("mish", F.mish, lambda x: x * np.tanh(np_softplus(x)), True),
    ("softplus", lambda x: F.softplus(x, 2.0, 5.0), lambda x: np_softplus(x, 2.0, 5.0), True),
    ("softsign", F.softsign, lambda x: x / (1 + np.abs(x)), True),
    ("hardswish", F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6, True),
    ("hardsigmoid", F.hardsigmoid, lambda x: np.clip(0.1666667 * x + 0.5, 0, 1), False),
    ("hardtanh", lambda x: F.hardtanh(x, -0.5, 1.2), lambda x: np.clip(x, -0.5, 1.2), False),
    ("tanhshrink", F.tanhshrink, lambda x: x - np.tanh(x), True),
    ("hardshrink", lambda x: F.hardshrink(x, 0.3),
     lambda x: np.where(np.abs(x) > 0.3, x, 0.0), False),
    ("softshrink", lambda x: F.softshrink(x, 0.3),
     lambda x: np.where(x > 0.3, x - 0.3, np.where(x < -0.3, x + 0.3, 0.0)), False),
    ("thresholded_relu", lambda x: F.thresholded_relu(x, 0.4, -0.1),
     lambda x: np.where(x > 0.4, x, -0.1), False),
    ("log_sigmoid", F.log_sigmoid, lambda x: -np.log1p(np.exp(-x)), True),
    # smooth_l1_loss's pointwise part (nn.yaml's huber)
    ("huber", lambda x: oar._C.ops._huber(x, 0.3),
     lambda x: np.where(np.abs(x) < 0.3, 0.5 * x * x, 0.3 * (np.abs(x) - 0.15)), True),
    ("sigmoid", F.sigmoid, np_sigmoid, True),
    ("tanh", F.tanh, np.tanh, True),
    ("relu", F.relu, lambda x: np.maximum(x, 0), False),
    ("gelu_tanh", lambda x: F.gelu(x, True),
     lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))), True),
]
NARROW_TOL = {"float16": (5e-3, 1e-2), "bfloat16": (4e-2, 2e-2)}


def _away_from_kinks(rng, shape):
    """Normal values kept away from the activations' kinks (0, +-0.3, 0.4, -0.5, 1.2, 6, -3)
    so finite differences do not straddle one."""
    x = np.array(rng.standard_normal(shape) * 2.5)
    for k in (0.0, 0.3, -0.3, 0.4, -0.5, 1.2, 6.0, -3.0, 3.0):
        close = np.abs(x - k) < 0.02
        x[close] += 0.05
    return x


CASES = [OpCase(name, fn, ref, inputs=[normal()], shapes=UNARY_SHAPES,
                dtypes=FLOAT_DTYPES + NARROW_DTYPES, tol=NARROW_TOL)
         for name, fn, ref, _ in ACTS]
for c in CASES:
    c.inputs = [type(c.inputs[0])(_away_from_kinks)]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_activation_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_activation_grad(case):
    check_grad(case)


@pytest.mark.parametrize("name,fn", [(n, f) for n, f, _, smooth in ACTS if smooth], ids=lambda v: v if isinstance(v, str) else "")
def test_activation_double_backward(name, fn):
    rng = np.random.default_rng(7)
    x0 = _away_from_kinks(rng, (3, 4))
    v = rng.standard_normal((3, 4))
    x = oar.to_tensor(x0, stop_gradient=False)
    (g,) = oar.grad([fn(x).sum()], [x], create_graph=True)
    (gg,) = oar.grad([(g * oar.to_tensor(v)).sum()], [x])

    def first(a):
        t = oar.to_tensor(a, stop_gradient=False)
        return oar.grad([fn(t).sum()], [t])[0].numpy()
    eps = 1e-6
    num = (first(x0 + eps) - first(x0 - eps)) / (2 * eps) * v  # f'' is elementwise
    np.testing.assert_allclose(gg.numpy(), num, atol=1e-6, rtol=1e-5, err_msg=name)


def test_prelu_and_glu():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 3, 4))
    w = np.array([0.1, -0.2, 0.3])
    ref = np.where(x > 0, x, w[None, :, None] * x)
    case = OpCase("prelu", lambda x, w: F.prelu(x, w), lambda x, w: np.where(
        x > 0, x, w[None, :, None] * x), inputs=[(2, 3, 4), (3,)])
    check_forward(case)
    check_grad(case)
    out = F.prelu(tensor(np.moveaxis(x, 1, -1), "float64"), tensor(w, "float64"), data_format="NLC")
    np.testing.assert_allclose(out.numpy(), np.moveaxis(ref, 1, -1))
    out = F.prelu(tensor(x, "float64"), tensor([0.25], "float64"))
    np.testing.assert_allclose(out.numpy(), np.where(x > 0, x, 0.25 * x))
    glu = OpCase("glu", lambda x: F.glu(x, axis=1),
                 lambda x: x[:, :2] * np_sigmoid(x[:, 2:]), inputs=[(3, 4, 2)])
    check_forward(glu)
    check_grad(glu)
    with pytest.raises(ValueError, match="glu.*even"):
        F.glu(tensor(np.ones((2, 3))))
    with pytest.raises(ValueError, match="prelu.*channels"):
        F.prelu(tensor(np.ones((2, 3, 4))), tensor(np.ones(4)))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_prelu_special_values_long_rows_and_views(dtype):
    # rows long enough for the vector loop, with NaN, +-inf and both zeros; x <= 0 takes
    # alpha * x (so -0.0 keeps its sign for a positive alpha and NaN stays NaN), as Paddle's
    # kernel; a channels-last view of a channels-first array
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 700))
    x[0, :, :6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-3]
    w = np.array([0.1, -0.2, 0.3])
    xt = tensor(x, dtype)
    xr = xt.astype("float64").numpy()  # x as rounded to dtype
    ref = np.where(xr > 0, xr, w[None, :, None] * xr)
    got = F.prelu(xt, tensor(w, dtype)).astype("float64").numpy()
    tol = {"float16": 1e-3, "bfloat16": 8e-3}.get(dtype, 1e-7)
    np.testing.assert_allclose(got, ref, rtol=tol, atol=0)
    assert np.signbit(got[0, 0, 4]) and not np.signbit(got[0, 0, 3])
    view = xt.transpose([0, 2, 1])
    assert not view.is_contiguous()
    got = F.prelu(view, tensor(w, dtype), data_format="NLC").astype("float64").numpy()
    np.testing.assert_allclose(got, np.moveaxis(ref, 1, -1), rtol=tol, atol=0)


def test_prelu_gradient_at_zero_and_of_alpha():
    # x == 0 is on alpha's side: d/dx = alpha there and d/dalpha sums x <= 0 per channel
    x = tensor([[[0.0, 2.0, -3.0], [-1.0, 0.0, 4.0]]], "float64")
    x.stop_gradient = False
    w = tensor([0.5, -0.25], "float64")
    w.stop_gradient = False
    gx, gw = oar.grad([F.prelu(x, w).sum()], [x, w])
    np.testing.assert_array_equal(gx.numpy(), [[[0.5, 1.0, 0.5], [-0.25, -0.25, 1.0]]])
    np.testing.assert_array_equal(gw.numpy(), [-3.0, -1.0])


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_glu_long_rows_views_and_axes(dtype):
    # the glu kernel reads both halves where they lie: rows long enough for the vector loop,
    # the halves along the last axis, the first (one row) and a middle one, and a view
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 6, 514))
    tol = {"float16": 2e-3, "bfloat16": 1.6e-2}.get(dtype, 1e-6 if dtype == "float32" else 1e-13)
    xt = tensor(x, dtype)
    xr = xt.astype("float64").numpy()
    for axis in (-1, 0, 1):
        a, b = np.split(xr, 2, axis)
        got = F.glu(xt, axis).astype("float64").numpy()
        np.testing.assert_allclose(got, a * np_sigmoid(b), rtol=tol, atol=tol, err_msg=str(axis))
    view = xt.transpose([0, 2, 1])  # [4, 514, 6], not contiguous
    a, b = np.split(np.swapaxes(xr, 1, 2), 2, 1)
    np.testing.assert_allclose(F.glu(view, 1).astype("float64").numpy(), a * np_sigmoid(b),
                               rtol=tol, atol=tol)


def test_glu_second_derivative():
    # glu's gradient is a composition of ops, so it differentiates again
    rng = np.random.default_rng(7)
    x0, v = rng.standard_normal((3, 8)), rng.standard_normal((3, 8))

    def first(a, create_graph=False):
        t = oar.to_tensor(a, stop_gradient=False)
        return t, oar.grad([F.glu(t, 1).sum()], [t], create_graph=create_graph)[0]

    t, g = first(x0, create_graph=True)
    gg = oar.grad([(g * oar.to_tensor(v)).sum()], [t])[0].numpy()
    eps = 1e-6
    num = ((first(x0 + eps * v)[1] - first(x0 - eps * v)[1]).numpy() / (2 * eps))
    np.testing.assert_allclose(gg, num, atol=1e-6, rtol=1e-5)


def test_activation_bad_args():
    x = tensor(np.ones((2, 2)))
    for fn, msg in [(lambda: F.selu(x, scale=0.5), "selu"), (lambda: F.celu(x, 0.0), "celu"),
                    (lambda: F.hardtanh(x, 2.0, 1.0), "hardtanh"),
                    (lambda: F.softshrink(x, -1.0), "softshrink")]:
        with pytest.raises(ValueError, match=msg):
            fn()


# ---------------------------------------------------------------- dropout
def test_dropout_modes_and_axis():
    oar.seed(1)
    x = oar.ones([200, 50], "float64")
    y = F.dropout(x, 0.3).numpy()
    kept = y != 0
    assert abs(kept.mean() - 0.7) < 0.02
    np.testing.assert_allclose(y[kept], 1 / 0.7)
    y = F.dropout(x, 0.3, mode="downscale_in_infer").numpy()
    np.testing.assert_allclose(y[y != 0], 1.0)
    np.testing.assert_allclose(F.dropout(x, 0.3, training=False, mode="downscale_in_infer").numpy(), 0.7)
    np.testing.assert_allclose(F.dropout(x, 0.3, training=False).numpy(), 1.0)
    y = F.dropout(x, 0.5, axis=0).numpy()  # whole rows share a draw
    assert all(len(set(row)) == 1 for row in y)
    y = F.dropout2d(oar.ones([4, 30, 3, 3], "float64"), 0.5).numpy()
    per_channel = y.reshape(4, 30, 9)
    assert all(len(set(v)) == 1 for v in per_channel.reshape(-1, 9))
    y = F.dropout3d(oar.ones([2, 3, 4, 2, 2, 5], "float64")[0], 0.5, data_format="NDHWC").numpy()
    assert all(len(set(v)) == 1 for v in np.moveaxis(y, -1, 1).reshape(3 * 5, -1))
    np.testing.assert_allclose(F.dropout(x, 1.0).numpy(), 0.0)
    assert F.dropout(oar.zeros([0, 3]), 0.5).shape == [0, 3]


def test_dropout_gradient_uses_the_mask():
    oar.seed(3)
    x = oar.to_tensor(np.ones((50, 40)), stop_gradient=False)
    y = F.dropout(x, 0.4)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), (y.numpy() != 0) / 0.6)


def test_alpha_dropout_keeps_moments():
    oar.seed(2)
    x = oar.to_tensor(np.random.default_rng(0).standard_normal((400, 500)))
    y = F.alpha_dropout(x, 0.2).numpy()
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1.0) < 0.02
    np.testing.assert_allclose(F.alpha_dropout(x, 0.2, training=False).numpy(), x.numpy())


def test_dropout_bad_args():
    x = tensor(np.ones((2, 3)))
    for fn, msg in [(lambda: F.dropout(x, 1.5), "dropout.*p"),
                    (lambda: F.dropout(x, 0.5, mode="bad"), "dropout.*mode"),
                    (lambda: F.dropout(x, 0.5, axis=3), "dropout.*axis"),
                    (lambda: F.dropout2d(x, 0.5), "dropout2d.*4-D"),
                    (lambda: F.alpha_dropout(x, -0.1), "alpha_dropout.*p")]:
        with pytest.raises(ValueError, match=msg):
            fn()


# ---------------------------------------------------------------- layers
def test_activation_layers():
    nn = oar.nn
    x = oar.to_tensor(np.random.default_rng(9).standard_normal((2, 3, 4)))
    pairs = [(nn.ReLU6(), F.relu6(x)), (nn.LeakyReLU(0.3), F.leaky_relu(x, 0.3)),
             (nn.ELU(0.5), F.elu(x, 0.5)), (nn.SELU(), F.selu(x)), (nn.CELU(2.0), F.celu(x, 2.0)),
             (nn.Silu(), F.silu(x)), (nn.Swish(), F.swish(x)), (nn.Mish(), F.mish(x)),
             (nn.Softplus(2, 10), F.softplus(x, 2, 10)), (nn.Softsign(), F.softsign(x)),
             (nn.Hardswish(), F.hardswish(x)), (nn.Hardsigmoid(), F.hardsigmoid(x)),
             (nn.Hardtanh(-0.5, 0.5), F.hardtanh(x, -0.5, 0.5)), (nn.Tanhshrink(), F.tanhshrink(x)),
             (nn.Softshrink(0.2), F.softshrink(x, 0.2)), (nn.Hardshrink(0.2), F.hardshrink(x, 0.2)),
             (nn.ThresholdedReLU(0.1), F.thresholded_relu(x, 0.1)),
             (nn.LogSigmoid(), F.log_sigmoid(x)), (nn.GLU(axis=0), F.glu(x, 0))]
    for layer, ref in pairs:
        np.testing.assert_allclose(layer(x).numpy(), ref.numpy(), err_msg=type(layer).__name__)
    p = nn.PReLU(3, init=0.1)
    assert p.weight.shape == [3]
    np.testing.assert_allclose(p.weight.numpy(), 0.1)
    np.testing.assert_allclose(p(x).numpy(), np.where(x.numpy() > 0, x.numpy(), 0.1 * x.numpy()),
                               rtol=1e-6)
    with pytest.raises(TypeError, match="LeakyReLU"):
        nn.LeakyReLU(slope=0.1)
    d = nn.Dropout2D(0.5)
    d.eval()
    np.testing.assert_allclose(d(oar.ones([2, 3, 2, 2])).numpy(), 1.0)
    a = nn.AlphaDropout(0.5)
    a.eval()
    np.testing.assert_allclose(a(x).numpy(), x.numpy())
    assert nn.Dropout3D(0.5)(oar.ones([2, 3, 2, 2, 2])).shape == [2, 3, 2, 2, 2]


def _np_gelu_d1(x, approximate):
    from math import erfc
    if approximate:
        c = np.sqrt(2 / np.pi)
        t = np.tanh(c * (x + 0.044715 * x ** 3))
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x)
    cdf = 0.5 * np.vectorize(erfc, otypes=[np.float64])(-x / np.sqrt(2))  # no 1 + erf cancelling
    return cdf + x * np.exp(-0.5 * x * x) / np.sqrt(2 * np.pi)


@pytest.mark.parametrize("approximate", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (9,), (16,), (17,), (31,), (32,), (3, 1001), (4, 8, 33)])
def test_gelu_grad_vector_path_against_float64(approximate, dtype, shape):
    """gelu_grad's vector loop (full vectors, then a padded tail), on odd sizes, 0-size and a
    transposed view, against the float64 derivative: float32 within a few ulp."""
    rng = np.random.default_rng(sum(shape) + approximate)
    x = rng.standard_normal(shape) * 4
    g = rng.standard_normal(shape)
    for view in (False, True):
        xa, ga = (x.T, g.T) if view else (x, g)
        xt = oar.to_tensor(np.ascontiguousarray(x).astype(dtype), stop_gradient=False)
        xin = xt.transpose(list(range(x.ndim))[::-1]) if view else xt
        out = F.gelu(xin, approximate)
        (dx,) = oar.grad([out], [xt], [oar.to_tensor(np.ascontiguousarray(ga).astype(dtype))])
        ref = (ga * _np_gelu_d1(xa, approximate))
        ref = ref.T if view else ref
        tol = 2e-6 if dtype == "float32" else 1e-12
        np.testing.assert_allclose(dx.numpy(), ref, rtol=tol, atol=tol * np.abs(g).max(initial=1))


def test_gelu_grad_float64_negative_tail():
    """float64 gelu' = Phi(x) + x phi(x) keeps its relative accuracy below x = -3, where
    0.5 + 0.5 erf(z) loses Phi (exactly 0 from -8.3 down: 1.2% off at -9 before), on a
    vector loop whose vectors mix lanes above and below -3 and lanes all below it."""
    x = -np.geomspace(1e-3, 35.0, 2001)
    xt = oar.to_tensor(x, stop_gradient=False)
    (dx,) = oar.grad([F.gelu(xt)], [xt], [oar.ones([x.size], dtype="float64")])
    # the rounding of x^2 / 2 in the density alone is x^2 / 2 ulp: 7e-14 at -35
    np.testing.assert_allclose(dx.numpy(), _np_gelu_d1(x, False), rtol=5e-13, atol=0)


def test_gelu_grad_special_values():
    x = np.array([0.0, -0.0, 12.0, -12.0, 30.0, -30.0, np.inf, -np.inf, np.nan, 1e-30], "float32")
    for approximate in (False, True):
        xt = oar.to_tensor(x, stop_gradient=False)
        (dx,) = oar.grad([F.gelu(xt, approximate)], [xt], [oar.ones([x.size])])
        with np.errstate(invalid="ignore", over="ignore"):  # inf * 0 at +-inf
            ref = _np_gelu_d1(x.astype(np.float64), approximate)
        finite = np.isfinite(x)
        np.testing.assert_allclose(dx.numpy()[finite], ref[finite], rtol=2e-6, atol=1e-7)
        assert np.isnan(dx.numpy()[np.isnan(x)]).all()


def _np_mish_parts(x):
    sp = np_softplus(x)
    return np.where(x > 20, 1.0, np.tanh(sp)), np.where(x > 20, 1.0, np_sigmoid(x))


# f'(x) in float64 for the activations of ACTS with vector forms (their parameters as there)
D1 = {
    "relu6": lambda x: ((x > 0) & (x < 6)) * 1.0,
    "leaky_relu": lambda x: np.where(x > 0, 1.0, 0.2),
    "elu": lambda x: np.where(x > 0, 1.0, 0.7 * np.exp(np.minimum(x, 0))),
    "selu": lambda x: SELU_SCALE * np.where(x > 0, 1.0, SELU_ALPHA * np.exp(np.minimum(x, 0))),
    "celu": lambda x: np.where(x > 0, 1.0, np.exp(np.minimum(x, 0) / 1.5)),
    "silu": lambda x: np_sigmoid(x) * (1 + x * (1 - np_sigmoid(x))),
    "mish": lambda x: (lambda t, s: t + x * (1 - t * t) * s)(*_np_mish_parts(x)),
    "softplus": lambda x: np.where(2 * x > 5, 1.0, np_sigmoid(2 * x)),
    "softsign": lambda x: 1 / (1 + np.abs(x)) ** 2,
    "hardswish": lambda x: np.where(x + 3 >= 6, 1.0, np.where(x + 3 > 0, (2 * x + 3) / 6, 0.0)),
    "hardsigmoid": lambda x: np.where((0.1666667 * x + 0.5 > 0) & (0.1666667 * x + 0.5 < 1), 0.1666667, 0.0),
    "hardtanh": lambda x: ((x > -0.5) & (x < 1.2)) * 1.0,
    "tanhshrink": lambda x: np.tanh(x) ** 2,
    "hardshrink": lambda x: (np.abs(x) > 0.3) * 1.0,
    "softshrink": lambda x: (np.abs(x) > 0.3) * 1.0,
    "thresholded_relu": lambda x: (x > 0.4) * 1.0,
    "log_sigmoid": lambda x: np_sigmoid(-x),
    "huber": lambda x: np.clip(x, -0.3, 0.3),
}
VEC_ACTS = [(n, f, r) for n, f, r, _ in ACTS if n in D1]
# the kinks that floats hold exactly (0.3, 0.4, ... round, and Paddle compares with the
# threshold rounded to the input's dtype, which a float64 reference would not), the ends of
# each form's range (mish's 20, softplus' 2.5, exp's clamps, expm1's -20), signed zeros,
# infinities and NaN
SPECIAL = np.array([0.0, -0.0, 1e-30, -1e-30, 2.5, 3.0, -3.0, 6.0,
                    19.99, 20.0, 20.01, -20.0, -25.0, 30.0, -30.0, -87.0, -89.0, 89.0, -100.0,
                    np.inf, -np.inf, np.nan])


@pytest.mark.parametrize("name,fn,ref", VEC_ACTS, ids=[n for n, *_ in VEC_ACTS])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_activation_vector_path_against_float64(name, fn, ref, dtype):
    """The vector forms (full vectors, a padded tail, float16 in registers, bfloat16 in
    blocks) against float64 f and g f'(x), on sizes around the vector widths, a transposed
    view, and special values: float32 within a few ulp, the 16-bit dtypes within their
    rounding."""
    rng = np.random.default_rng(len(name))
    d1 = D1[name]
    tol = {"float32": (3e-6, 3e-6)}.get(dtype) or NARROW_TOL[dtype]
    for n in (1, 7, 8, 9, 15, 16, 17, 33, 515, 4099):
        x = _away_from_kinks(rng, (n,))
        if n == 33:
            x[:len(SPECIAL) - 3] = SPECIAL[:-3]  # finite specials: checked for the gradient too
        g = rng.standard_normal(n)
        xt = oar.to_tensor(x.astype("float32")).astype(dtype)
        xt.stop_gradient = False
        x64 = xt.astype("float32").numpy().astype(np.float64)  # the rounded input
        out = fn(xt)
        (dx,) = oar.grad([out], [xt], [oar.to_tensor(g.astype("float32")).astype(dtype)])
        g64 = oar.to_tensor(g.astype("float32")).astype(dtype).astype("float32").numpy().astype(np.float64)
        rtol, atol = tol
        np.testing.assert_allclose(out.astype("float32").numpy(), ref(x64), rtol=rtol, atol=atol,
                                   err_msg=f"{name} {dtype} n={n}")
        np.testing.assert_allclose(dx.astype("float32").numpy(), g64 * d1(x64), rtol=rtol, atol=atol,
                                   err_msg=f"{name}' {dtype} n={n}")
    # a transposed view (made contiguous first) and every special value, NaN and +-inf too
    base = _away_from_kinks(rng, (37, 6)).astype("float32")
    view = oar.to_tensor(base).astype(dtype).transpose([1, 0])
    got = fn(view).astype("float32").numpy()
    b64 = view.astype("float32").numpy().astype(np.float64)
    np.testing.assert_allclose(got, ref(b64), rtol=tol[0], atol=tol[1], err_msg=f"{name} {dtype} view")
    with np.errstate(invalid="ignore", over="ignore"):
        s = oar.to_tensor(SPECIAL.astype("float32")).astype(dtype)
        want = ref(s.astype("float32").numpy().astype(np.float64))
    np.testing.assert_allclose(fn(s).astype("float32").numpy(), want, rtol=tol[0], atol=tol[1],
                               equal_nan=True, err_msg=f"{name} {dtype} special values")


def test_activation_grad_kernel_needs_x_shape():
    """The fused gradient kernels take grad_out in x's shape (autograd passes the output's
    gradient); a direct call with another shape names the op and both shapes."""
    with pytest.raises(ValueError, match=r"leaky_relu_grad: grad_out shape \[4\] must equal x shape \[3, 4\]"):
        oar._C.ops._leaky_relu_grad(oar.ones([3, 4]), oar.ones([4]), 0.1)
    with pytest.raises(ValueError, match=r"mish_grad: grad_out shape \[3, 1\]"):
        oar._C.ops._mish_grad(oar.ones([3, 4], dtype="float64"), oar.ones([3, 1], dtype="float64"))
    with pytest.raises(ValueError, match=r"huber_grad: grad_out shape \[2\]"):
        oar._C.ops._huber_grad(oar.ones([3, 4]), oar.ones([2]), 1.0)


@pytest.mark.parametrize("name", ["softplus", "softplus_beta2", "log_sigmoid"])
def test_softplus_tail_within_two_ulp(name):
    """softplus and log_sigmoid take log1p(exp(-|z|)) on vec::log1p_unit (log's polynomial
    on y itself up to sqrt(2) - 1, on (1 + y) / 2 - 1 with the part of y that 1 + y lost
    above): within 2 ulp of float64 on 4M random floats, every float around the switch
    (|z| near 0.8814) and the whole sweep of |z| in [0, 30]; results of at least 1.2e-38
    (exp's lanes end at -87.33)."""
    rng = np.random.default_rng(11)
    r = rng.integers(0, 2 ** 31, 2_000_000, dtype=np.int64).astype(np.uint32).view(np.float32)
    r = r[np.isfinite(r) & (np.abs(r) < 100)]
    switch = np.arange(-2000, 2000, dtype=np.int32) + np.float32(0.88137).view(np.int32)
    x = np.concatenate([r, -r, switch.view(np.float32), -switch.view(np.float32),
                        np.linspace(-30, 30, 600_001, dtype=np.float32)])
    x64 = x.astype(np.float64)
    if name == "log_sigmoid":
        got, ref = F.log_sigmoid(oar.to_tensor(x)), -np.logaddexp(0, -x64)
    else:
        beta = 2.0 if name == "softplus_beta2" else 1.0
        got = F.softplus(oar.to_tensor(x), beta, 20.0)
        ref = np.where(beta * x64 > 20, x64, np.logaddexp(0, beta * x.astype(np.float32).astype(np.float64)) / beta)
    ok = np.abs(ref) >= 1.2e-38
    ulp = np.abs(got.numpy().astype(np.float64) - ref)[ok] / np.spacing(np.abs(ref[ok]).astype(np.float32))
    assert ulp.max() <= 2.0, (name, float(ulp.max()), float(x[ok][ulp.argmax()]))

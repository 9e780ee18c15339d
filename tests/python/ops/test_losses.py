"""Loss functionals, Bilinear and gumbel_softmax vs float64 NumPy references, gradients vs
central finite differences, bad inputs, and the layer wrappers."""
import numpy as np
import pytest

import oar

F = oar.nn.functional
RNG = np.random.default_rng(7)
REDUCTIONS = ["mean", "sum", "none"]


def _t(a, grad=False):
    return oar.to_tensor(np.asarray(a), stop_gradient=not grad)


def _red(loss, reduction):
    return {"mean": loss.mean(), "sum": loss.sum(), "none": loss}[reduction]


def _fd_check(fn, arrays, wrt, eps=1e-6, tol=1e-5):
    """d sum(fn(*xs) * cot) / d xs[i] for i in wrt: autograd vs central differences."""
    ts = [_t(a, i in wrt) for i, a in enumerate(arrays)]
    out = fn(*ts)
    cot = RNG.standard_normal(out.shape)
    grads = oar.grad([out], [ts[i] for i in wrt], grad_outputs=[_t(cot)])
    for g, i in zip(grads, wrt):
        num = np.zeros_like(arrays[i])
        for idx in np.ndindex(*arrays[i].shape):
            xs = [a.copy() for a in arrays]
            xs[i][idx] += eps
            hi = float((fn(*[_t(a) for a in xs]).numpy() * cot).sum())
            xs[i][idx] -= 2 * eps
            lo = float((fn(*[_t(a) for a in xs]).numpy() * cot).sum())
            num[idx] = (hi - lo) / (2 * eps)
        np.testing.assert_allclose(g.numpy(), num, atol=tol, rtol=tol)


def _log_softmax(x, axis=1):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def _nll_ref(x, lab, w, ignore, reduction):
    c = x.shape[1]
    valid = lab != ignore
    safe = np.where(valid, lab, 0)
    picked = np.take_along_axis(x, safe[:, None], 1)[:, 0]
    ww = (w[safe] if w is not None else np.ones(safe.shape)) * valid
    loss = -picked * ww
    assert c > 0
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.sum() / ww.sum()


# ------------------------------------------------------------------ nll_loss
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(5, 4), (3, 4, 2, 3)])
def test_nll_loss(reduction, weighted, shape):
    x = _log_softmax(RNG.standard_normal(shape))
    lab = RNG.integers(0, shape[1], (shape[0],) + shape[2:])
    lab.flat[0] = -100  # ignored
    w = RNG.uniform(0.5, 2.0, shape[1]) if weighted else None
    out = F.nll_loss(_t(x), _t(lab), None if w is None else _t(w), reduction=reduction)
    np.testing.assert_allclose(out.numpy(), _nll_ref(x, lab, w, -100, reduction), rtol=1e-12)
    _fd_check(lambda a: F.nll_loss(a, _t(lab), None if w is None else _t(w),
                                   reduction=reduction), [x], [0])


def test_nll_loss_bad_inputs():
    x, lab = _t(np.zeros((3, 4))), _t(np.array([0, 1, 2]))
    with pytest.raises(IndexError, match=r"nll_loss: label value 4 is out of range \[0, 4\)"):
        F.nll_loss(x, _t(np.array([0, 4, 1])))
    with pytest.raises(ValueError, match=r"nll_loss: label shape \[2\]"):
        F.nll_loss(x, _t(np.array([0, 1])))
    with pytest.raises(TypeError, match="nll_loss: label must be int32 or int64"):
        F.nll_loss(x, _t(np.array([0.0, 1.0, 2.0])))
    with pytest.raises(ValueError, match="nll_loss: reduction .* got 'avg'"):
        F.nll_loss(x, lab, reduction="avg")
    with pytest.raises(ValueError, match=r"nll_loss: weight shape \[3\] must be \[4\]"):
        F.nll_loss(x, lab, _t(np.ones(3)))


# ------------------------------------------------------------------ elementwise losses
def _smooth_l1(x, y, delta):
    d = x - y
    return np.where(np.abs(d) < delta, 0.5 * d * d, delta * (np.abs(d) - 0.5 * delta))


def _bce(p, y, w):
    loss = -(y * np.maximum(np.log(p), -100) + (1 - y) * np.maximum(np.log1p(-p), -100))
    return loss if w is None else loss * w


def _bce_logits(x, y, w, pw):
    p = 1 / (1 + np.exp(-x))
    pw = 1.0 if pw is None else pw
    loss = -(pw * y * np.log(p) + (1 - y) * np.log1p(-p))
    return loss if w is None else loss * w


def _kl(x, y, log_target):
    if log_target:
        return np.exp(y) * (y - x)
    return np.where(y > 0, y * (np.log(np.where(y > 0, y, 1.0)) - x), 0.0)


@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(4, 3), (0, 3), (2, 3, 2)])
def test_elementwise_losses(reduction, shape):
    x, y = RNG.standard_normal(shape) * 2, RNG.standard_normal(shape)
    np.testing.assert_allclose(F.smooth_l1_loss(_t(x), _t(y), reduction, 0.7).numpy(),
                               _red(_smooth_l1(x, y, 0.7), reduction), rtol=1e-12)
    p, lab = RNG.uniform(0.05, 0.95, shape), RNG.uniform(0, 1, shape)
    w = RNG.uniform(0.5, 2, shape[-1:])
    np.testing.assert_allclose(F.binary_cross_entropy(_t(p), _t(lab), _t(w), reduction).numpy(),
                               _red(_bce(p, lab, w), reduction), rtol=1e-10)
    pw = RNG.uniform(0.5, 3, shape[-1:])
    for pwt in (None, pw):
        got = F.binary_cross_entropy_with_logits(_t(x), _t(lab), _t(w), reduction,
                                                 None if pwt is None else _t(pwt))
        np.testing.assert_allclose(got.numpy(), _red(_bce_logits(x, lab, w, pwt), reduction),
                                   rtol=1e-10, atol=1e-12)
    other, sign = RNG.standard_normal(shape), np.sign(RNG.standard_normal(shape))
    np.testing.assert_allclose(
        F.margin_ranking_loss(_t(x), _t(other), _t(sign), 0.3, reduction).numpy(),
        _red(np.maximum(0, -sign * (x - other) + 0.3), reduction), rtol=1e-12)
    if shape[0]:
        for fn, arrays, wrt in [
            (lambda a, b: F.smooth_l1_loss(a, b, reduction, 0.7), [x, y], [0, 1]),
            (lambda a, b: F.binary_cross_entropy(a, b, _t(w), reduction), [p, lab], [0, 1]),
            (lambda a, b: F.binary_cross_entropy_with_logits(a, b, None, reduction, _t(pw)),
             [x, lab], [0, 1]),
            (lambda a, b: F.binary_cross_entropy_with_logits(a, b, _t(w), reduction),
             [x, lab], [0, 1]),
            (lambda a, b: F.margin_ranking_loss(a, b, _t(sign), 0.3, reduction), [x, other],
             [0, 1]),
        ]:
            _fd_check(fn, arrays, wrt)


@pytest.mark.parametrize("reduction", ["mean", "batchmean", "sum", "none"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    x = _log_softmax(RNG.standard_normal((4, 5)))
    y = np.exp(_log_softmax(RNG.standard_normal((4, 5))))
    y[0, 0] = 0.0
    if log_target:
        y = np.log(np.where(y > 0, y, 1e-3))
    ref = _kl(x, y, log_target)
    ref = ref.sum() / 4 if reduction == "batchmean" else _red(ref, reduction)
    np.testing.assert_allclose(F.kl_div(_t(x), _t(y), reduction, log_target).numpy(), ref,
                               rtol=1e-12)
    _fd_check(lambda a: F.kl_div(a, _t(y), reduction, log_target), [x], [0])


def test_elementwise_loss_bad_inputs():
    a, b = _t(np.zeros((2, 3))), _t(np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"smooth_l1_loss: input shape \[2, 3\] and label shape \[3, 2\]"):
        F.smooth_l1_loss(a, b)
    with pytest.raises(ValueError, match="binary_cross_entropy: input must be probabilities"):
        F.binary_cross_entropy(_t(np.array([0.5, 1.5])), _t(np.array([0.0, 1.0])))
    with pytest.raises(ValueError, match="kl_div: reduction .* got 'avg'"):
        F.kl_div(a, a, reduction="avg")
    with pytest.raises(ValueError, match="margin_ranking_loss: input shape"):
        F.margin_ranking_loss(a, b, a)
    with pytest.raises(ValueError, match="smooth_l1_loss: delta must be positive"):
        F.smooth_l1_loss(a, a, delta=0)


# ------------------------------------------------------------------ bilinear
def test_bilinear_and_layer():
    x1, x2 = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 2))
    w, b = RNG.standard_normal((5, 4, 2)), RNG.standard_normal((1, 5))
    ref = np.einsum("ni,oij,nj->no", x1, w, x2) + b
    np.testing.assert_allclose(F.bilinear(_t(x1), _t(x2), _t(w), _t(b)).numpy(), ref, rtol=1e-12)
    _fd_check(lambda a, c, d: F.bilinear(a, c, d, _t(b)), [x1, x2, w], [0, 1, 2])
    oar.seed(3)
    layer = oar.nn.Bilinear(4, 2, 5)
    assert layer.weight.shape == [5, 4, 2] and layer.bias.shape == [1, 5]
    np.testing.assert_array_equal(layer.bias.numpy(), 0.0)  # Paddle: bias starts at zeros
    assert np.abs(layer.weight.numpy()).max() > 0
    assert oar.nn.Bilinear(4, 2, 5, bias_attr=False).bias is None
    np.testing.assert_allclose(F.bilinear(_t(x1), _t(x2), _t(w)).numpy(), ref - b, rtol=1e-12)
    np.testing.assert_allclose(
        layer(_t(x1.astype(np.float32)), _t(x2.astype(np.float32))).numpy(),
        np.einsum("ni,oij,nj->no", x1, layer.weight.numpy(), x2) + layer.bias.numpy(),
        rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="bilinear: x1 .* do not match weight"):
        F.bilinear(_t(x1), _t(x2), _t(np.zeros((5, 3, 2))))
    with pytest.raises(ValueError, match="Bilinear: in1_features must be positive"):
        oar.nn.Bilinear(0, 2, 5)


# ------------------------------------------------------------------ gumbel_softmax
def test_gumbel_softmax():
    x = _t(RNG.standard_normal((6, 5)))
    oar.seed(11)
    soft = F.gumbel_softmax(x, temperature=0.5)
    np.testing.assert_allclose(soft.numpy().sum(-1), 1.0, rtol=1e-12)
    oar.seed(11)
    np.testing.assert_array_equal(F.gumbel_softmax(x, temperature=0.5).numpy(), soft.numpy())
    oar.seed(11)
    xg = _t(x.numpy(), grad=True)
    hard = F.gumbel_softmax(xg, temperature=0.5, hard=True)
    h = hard.numpy()
    assert set(np.unique(h)) <= {0.0, 1.0} and (h.sum(-1) == 1).all()
    np.testing.assert_array_equal(h.argmax(-1), soft.numpy().argmax(-1))
    # straight-through: the hard sample's gradient is the soft sample's
    cot = _t(RNG.standard_normal((6, 5)))
    (g_hard,) = oar.grad([hard], [xg], grad_outputs=[cot])
    oar.seed(11)
    xs = _t(x.numpy(), grad=True)
    (g_soft,) = oar.grad([F.gumbel_softmax(xs, temperature=0.5)], [xs], grad_outputs=[cot])
    np.testing.assert_allclose(g_hard.numpy(), g_soft.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="gumbel_softmax: temperature must be positive, got 0"):
        F.gumbel_softmax(x, temperature=0)


# ------------------------------------------------------------------ layers
def test_loss_layers_match_functionals():
    x = _log_softmax(RNG.standard_normal((4, 3)))
    lab = RNG.integers(0, 3, (4,))
    nn = oar.nn
    np.testing.assert_allclose(nn.NLLLoss(reduction="sum")(_t(x), _t(lab)).numpy(),
                               F.nll_loss(_t(x), _t(lab), reduction="sum").numpy())
    p, y = RNG.uniform(0.1, 0.9, (4, 3)), RNG.uniform(0, 1, (4, 3))
    np.testing.assert_allclose(nn.BCELoss()(_t(p), _t(y)).numpy(),
                               F.binary_cross_entropy(_t(p), _t(y)).numpy())
    np.testing.assert_allclose(nn.BCEWithLogitsLoss()(_t(x), _t(y)).numpy(),
                               F.binary_cross_entropy_with_logits(_t(x), _t(y)).numpy())
    np.testing.assert_allclose(nn.SmoothL1Loss(delta=0.5)(_t(x), _t(y)).numpy(),
                               F.smooth_l1_loss(_t(x), _t(y), delta=0.5).numpy())
    np.testing.assert_allclose(nn.KLDivLoss("batchmean")(_t(x), _t(p)).numpy(),
                               F.kl_div(_t(x), _t(p), "batchmean").numpy())
    np.testing.assert_allclose(nn.MarginRankingLoss(0.1)(_t(x), _t(p), _t(np.sign(y - .5))).numpy(),
                               F.margin_ranking_loss(_t(x), _t(p), _t(np.sign(y - .5)), 0.1).numpy())
    with pytest.raises(ValueError, match="BCELoss: reduction .* got 'avg'"):
        nn.BCELoss(reduction="avg")


# ------------------------------------------------------------------ edge cases
@pytest.mark.parametrize("fn,args", [
    ("nll_loss", lambda: (_t(np.zeros((2, 3))), _t(np.array([0, 1])))),
    ("smooth_l1_loss", lambda: (_t(np.zeros(2)), _t(np.zeros(2)))),
    ("binary_cross_entropy", lambda: (_t(np.full(2, 0.5)), _t(np.zeros(2)))),
    ("binary_cross_entropy_with_logits", lambda: (_t(np.zeros(2)), _t(np.zeros(2)))),
    ("kl_div", lambda: (_t(np.zeros(2)), _t(np.zeros(2)))),
    ("margin_ranking_loss", lambda: (_t(np.zeros(2)), _t(np.zeros(2)), _t(np.ones(2)))),
])
def test_bad_reduction_every_loss(fn, args):
    with pytest.raises(ValueError, match=rf"{fn}: reduction must be one of .* got 'avg'"):
        getattr(F, fn)(*args(), reduction="avg")


def test_nll_loss_empty_batch_custom_ignore_index_int32():
    x0, l0 = _t(np.zeros((0, 3))), _t(np.zeros((0,), np.int64))
    assert F.nll_loss(x0, l0, reduction="none").shape == [0]
    assert float(F.nll_loss(x0, l0, reduction="sum")) == 0.0
    x = _log_softmax(RNG.standard_normal((6, 4)))
    lab = np.array([0, 1, 2, 3, 1, 1])
    w = RNG.uniform(0.5, 2.0, 4)
    for red in REDUCTIONS:
        got = F.nll_loss(_t(x), _t(lab.astype(np.int32)), _t(w), ignore_index=1, reduction=red)
        np.testing.assert_allclose(got.numpy(), _nll_ref(x, lab, w, 1, red), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bce_saturated_inputs_have_finite_gradients(dtype):
    p = _t(np.array([0.0, 1.0, 0.0, 1.0, 0.25], dtype), grad=True)
    y = _t(np.array([0.0, 1.0, 1.0, 0.0, 1.0], dtype))
    loss = F.binary_cross_entropy(p, y, reduction="none")
    np.testing.assert_allclose(loss.numpy(), [0, 0, 100, 100, -np.log(0.25)], rtol=1e-6)
    (g,) = oar.grad([loss.sum()], [p])
    assert np.isfinite(g.numpy()).all()
    np.testing.assert_allclose(g.numpy()[4], -1 / 0.25, rtol=1e-6)


def test_bce_with_logits_extreme_logits_are_stable():
    x = _t(np.array([1000.0, -1000.0, 40.0, -40.0]), grad=True)
    y = _t(np.array([0.0, 1.0, 1.0, 0.0]))
    pw = _t(np.array([2.0, 3.0, 1.0, 1.0]))
    loss = F.binary_cross_entropy_with_logits(x, y, reduction="none", pos_weight=pw)
    np.testing.assert_allclose(loss.numpy(), [1000.0, 3000.0, np.exp(-40.0), np.exp(-40.0)],
                               rtol=1e-9)
    (g,) = oar.grad([loss.sum()], [x])
    np.testing.assert_allclose(g.numpy(), [1.0, -3.0, -np.exp(-40.0), np.exp(-40.0)],
                               rtol=1e-9, atol=1e-300)


def test_bce_with_logits_gradient_at_zero_logit():
    # zero logits (e.g. a zero-initialised head) must get sigmoid(0) - y, not a subgradient
    x = np.array([0.0, 0.0, 0.0, 1.5])
    y = np.array([0.0, 1.0, 0.3, 0.7])
    pw = np.array([1.0, 2.0, 3.0, 0.5])
    _fd_check(lambda a, b: F.binary_cross_entropy_with_logits(a, b, None, "none", _t(pw)),
              [x, y], [0, 1])
    xt = _t(x, grad=True)
    (g,) = oar.grad([F.binary_cross_entropy_with_logits(xt, _t(y), reduction="sum")], [xt])
    np.testing.assert_allclose(g.numpy(), 1 / (1 + np.exp(-x)) - y, rtol=1e-12)


@pytest.mark.parametrize("dtype,tol", [("float32", 2e-6), ("float16", 2e-3), ("bfloat16", 1.6e-2)])
def test_bce_with_logits_fused_op_against_float64(dtype, tol):
    """The fused op (nn.yaml's sigmoid_cross_entropy_with_logits, float lanes): loss and
    gradient against float64 on the rounded inputs, on sizes around the vector widths, hard
    and soft labels, a transposed view, and large, zero and NaN logits."""
    for n in (1, 7, 16, 17, 33, 515, 4099):
        x = RNG.standard_normal(n) * 6
        y = np.where(RNG.random(n) < 0.3, RNG.random(n), (RNG.random(n) > 0.5) * 1.0)
        g = RNG.standard_normal(n)
        if n == 33:
            x[:8] = [0.0, -0.0, 30.0, -30.0, 89.0, -89.0, 1e-30, np.nan]
        xt = oar.to_tensor(x.astype("float32")).astype(dtype)
        yt = oar.to_tensor(y.astype("float32")).astype(dtype)
        gt = oar.to_tensor(g.astype("float32")).astype(dtype)
        xt.stop_gradient = False
        x64, y64, g64 = (t.astype("float64").numpy() for t in (xt, yt, gt))
        out = F.binary_cross_entropy_with_logits(xt, yt, reduction="none")
        (dx,) = oar.grad([out], [xt], [gt])
        ref = np.maximum(x64, 0) - x64 * y64 + np.log1p(np.exp(-np.abs(x64)))
        dref = g64 * (1 / (1 + np.exp(-x64)) - y64)
        np.testing.assert_allclose(out.astype("float64").numpy(), ref, rtol=tol, atol=tol,
                                   equal_nan=True, err_msg=f"{dtype} n={n}")
        np.testing.assert_allclose(dx.astype("float64").numpy(), dref, rtol=tol, atol=tol,
                                   equal_nan=True, err_msg=f"{dtype}' n={n}")
    base = RNG.standard_normal((37, 6)).astype("float32")
    lab = (RNG.random((6, 37)) > 0.5).astype("float32")
    view = oar.to_tensor(base).astype(dtype).transpose([1, 0])
    got = F.binary_cross_entropy_with_logits(view, oar.to_tensor(lab).astype(dtype), reduction="none")
    v64 = view.astype("float64").numpy()
    np.testing.assert_allclose(got.astype("float64").numpy(),
                               np.maximum(v64, 0) - v64 * lab + np.log1p(np.exp(-np.abs(v64))),
                               rtol=tol, atol=tol)


def test_bce_with_logits_double_backward():
    """The fused gradient's own gradients (x: g grad_out sigmoid' ; label: -g grad_out;
    grad_out: the gradient kernel again) against finite differences of the first gradient."""
    x, y = RNG.standard_normal((3, 4)) * 2, RNG.random((3, 4))
    v = RNG.standard_normal((3, 4))

    def first(a, b):
        at, bt = _t(a, True), _t(b, True)
        loss = F.binary_cross_entropy_with_logits(at, bt, reduction="sum")
        return oar.grad([loss], [at], create_graph=True)[0], at, bt

    g, xt, yt = first(x, y)
    gx, gy = oar.grad([(g * _t(v)).sum()], [xt, yt])
    eps = 1e-6
    for arr, got, i in ((x, gx, 0), (y, gy, 1)):
        num = np.zeros_like(arr)
        for idx in np.ndindex(*arr.shape):
            hi, lo = [x.copy(), y.copy()], [x.copy(), y.copy()]
            hi[i][idx] += eps
            lo[i][idx] -= eps
            num[idx] = ((first(*hi)[0].numpy() - first(*lo)[0].numpy()) * v).sum() / (2 * eps)
        np.testing.assert_allclose(got.numpy(), num, rtol=1e-5, atol=1e-7)


def test_bce_with_logits_op_bad_shapes():
    with pytest.raises(ValueError, match=r"sigmoid_cross_entropy_with_logits: label shape \[3\] must equal x shape \[2, 3\]"):
        oar._C.ops._sigmoid_cross_entropy_with_logits(oar.ones([2, 3]), oar.ones([3]))
    with pytest.raises(ValueError, match=r"sigmoid_cross_entropy_with_logits_grad: grad_out shape \[1\]"):
        oar._C.ops._sigmoid_cross_entropy_with_logits_grad(oar.ones([2, 3]), oar.ones([2, 3]), oar.ones([1]))
    with pytest.raises(ValueError, match="binary_cross_entropy_with_logits: logit shape"):
        F.binary_cross_entropy_with_logits(oar.ones([2, 3]), oar.ones([3, 2]))


def test_bilinear_bad_bias_and_gumbel_bad_axis():
    x1, x2, w = _t(np.ones((2, 3))), _t(np.ones((2, 4))), _t(np.ones((5, 3, 4)))
    with pytest.raises(ValueError, match=r"bilinear: bias shape \[2, 5\] must be \[1, 5\]"):
        F.bilinear(x1, x2, w, _t(np.ones((2, 5))))
    with pytest.raises(IndexError, match=r"gumbel_softmax: axis 2 is out of range .* \[2, 4\]"):
        F.gumbel_softmax(x2, axis=2)
    assert F.gumbel_softmax(x2, axis=-2).shape == [2, 4]

"""The functionals of oar/nn/_functional_loss_more.py and their layers (layer_more.py)
against float64 NumPy references on random inputs (0-size included where the loss allows),
gradients by central differences, bad inputs raising errors that name the function."""
import numpy as np
import pytest

import oar
import oar.nn.functional as F
from op_test_utils import (Gen, OpCase, case_id, check_bad_inputs, check_forward, check_grad, tensor, uniform)

T = lambda a: tensor(np.asarray(a, dtype=np.float64), "float64")  # noqa: E731
I64 = lambda a: oar.to_tensor(np.asarray(a, dtype=np.int64))  # noqa: E731
SIGNS = Gen(lambda r, s: r.integers(0, 2, s).astype(np.float64), None, False)  # 0/1 labels
SIGNS4 = Gen(SIGNS.fn, (4,), False)


def pm(label):
    return label * 2 - 1


def np_log_sigmoid(x):
    return -np.logaddexp(0, -x)


def np_pair(a, b, p=2.0, eps=1e-6):
    return (np.abs(a - b + eps) ** p).sum(-1) ** (1 / p)


def np_cos_emb(a, b, y, margin=0.0):
    cos = (a * b).sum(-1) / np.sqrt(((a * a).sum(-1) + 1e-11) * ((b * b).sum(-1) + 1e-11))
    return np.where(y == 1, 1 - cos, 0) + np.where(y == -1, np.maximum(cos - margin, 0), 0)


def np_multi_margin(x, lab, p=1, margin=1.0):
    picked = np.take_along_axis(x, lab[:, None], 1)
    return (np.maximum(margin - picked + x, 0) ** p).mean(1) - margin ** p / x.shape[1]


def np_focal(x, y, alpha=0.25, gamma=2.0):
    p = 1 / (1 + np.exp(-x))
    bce = np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x)))
    pt = p * y + (1 - p) * (1 - y)
    return ((alpha * y + (1 - alpha) * (1 - y)) * bce * (1 - pt) ** gamma).sum()


LAB2 = np.array([1, 0, 2])

CASES = [
    OpCase("square_error_cost", F.square_error_cost, lambda x, y: (x - y) ** 2,
           inputs=[(3, 4), (3, 4)], shapes=[[(3, 4), (3, 4)], [(0, 2), (0, 2)]]),
    OpCase("log_loss", F.log_loss,
           lambda p, y: -y * np.log(p + 1e-4) - (1 - y) * np.log(1 - p + 1e-4),
           inputs=[uniform(0.1, 0.9, (4, 1)), uniform(0, 1, (4, 1))],
           bad_inputs=[((T(np.ones((2, 1))), T(np.ones((3, 1)))), ValueError, "must be equal")]),
    OpCase("soft_margin_loss", lambda x, y: F.soft_margin_loss(x, pm(y)),
           lambda x, y: np.log1p(np.exp(-pm(y) * x)).mean(), inputs=[(3, 4), SIGNS]),
    OpCase("hinge_embedding_loss", lambda x, y: F.hinge_embedding_loss(x, pm(y), margin=0.5),
           lambda x, y: np.where(pm(y) == 1, x, np.maximum(0.5 - x, 0)).mean(),
           inputs=[(3, 4), SIGNS], grad_tol=(1e-5, 1e-4)),
    OpCase("cosine_embedding_loss",
           lambda a, b, y: F.cosine_embedding_loss(a, b, pm(y), margin=0.1, reduction="none"),
           lambda a, b, y: np_cos_emb(a, b, pm(y), 0.1), inputs=[(4, 3), (4, 3), SIGNS4],
           shapes=[[(4, 3), (4, 3), (4,)], [(0, 3), (0, 3), (0,)]]),
    OpCase("multi_label_soft_margin_loss", F.multi_label_soft_margin_loss,
           lambda x, y: (-(y * np_log_sigmoid(x) + (1 - y) * np_log_sigmoid(-x))).mean(-1).mean(),
           inputs=[(3, 5), uniform(0, 1, (3, 5))]),
    OpCase("multi_margin_loss", lambda x: F.multi_margin_loss(x, I64(LAB2), p=2, margin=0.5),
           lambda x: np_multi_margin(x, LAB2, 2, 0.5).mean(), inputs=[(3, 4)],
           bad_inputs=[((T(np.ones((2, 4))),), ValueError, "[N, C]")]),
    OpCase("triplet_margin_loss", lambda a, p, n: F.triplet_margin_loss(a, p, n, swap=True),
           lambda a, p, n: np.maximum(np_pair(a, p) - np.minimum(np_pair(a, n), np_pair(p, n)) + 1, 0).mean(),
           inputs=[(4, 3), (4, 3), (4, 3)], grad_tol=(1e-5, 1e-4)),
    OpCase("poisson_nll_loss", lambda x, y: F.poisson_nll_loss(x, y, full=True, reduction="sum"),
           lambda x, y: (np.exp(x) - y * x + np.where(
               y > 1, y * np.log(np.maximum(y, 1)) - y + 0.5 * np.log(2 * np.pi * np.maximum(y, 1)), 0)).sum(),
           inputs=[(3, 4), uniform(0, 3, (3, 4))]),
    OpCase("poisson_nll_loss_prob", lambda x, y: F.poisson_nll_loss(x, y, log_input=False),
           lambda x, y: (x - y * np.log(x + 1e-8)).mean(),
           inputs=[uniform(0.5, 2, (3, 4)), uniform(0, 3, (3, 4))], op="poisson_nll_loss"),
    OpCase("gaussian_nll_loss", lambda x, y, v: F.gaussian_nll_loss(x, y, v, full=True),
           lambda x, y, v: (0.5 * (np.log(v) + (x - y) ** 2 / v) + 0.5 * np.log(2 * np.pi)).mean(),
           inputs=[(3, 4), (3, 4), uniform(0.5, 2, (3, 4))],
           bad_inputs=[((T(np.ones((2, 2))), T(np.ones((2, 2))), T(-np.ones((2, 2)))), ValueError,
                        "negative")]),
    OpCase("sigmoid_focal_loss", F.sigmoid_focal_loss, np_focal,
           inputs=[(3, 4), uniform(0, 1, (3, 4))],
           bad_inputs=[((T(np.ones(2)), T(np.ones(2))), ValueError, "reduction", {"reduction": "avg"})]),
    OpCase("dice_loss", lambda x: F.dice_loss(x, I64([[0], [2], [1]])),
           lambda x: np.mean(1 - 2 * (x * np.eye(3)[[0, 2, 1]]).sum(1) / (x.sum(1) + 1 + 1e-5)),
           inputs=[uniform(0, 1, (3, 3))]),
    OpCase("label_smooth", lambda y: F.label_smooth(y, epsilon=0.2), lambda y: 0.8 * y + 0.2 / 4,
           inputs=[uniform(0, 1, (2, 3, 4))]),
    OpCase("maxout", lambda x: F.maxout(x, 2), lambda x: x.reshape(2, 2, 2, 3, 2).max(2),
           inputs=[(2, 4, 3, 2)]),
    OpCase("swiglu", lambda x: F.swiglu(x),
           lambda x: x[..., :2] / (1 + np.exp(-x[..., :2])) * x[..., 2:], inputs=[(3, 4)],
           shapes=[[(3, 4)], [(0, 4)]]),
    OpCase("channel_shuffle", lambda x: F.channel_shuffle(x, 3),
           lambda x: x.reshape(2, 3, 2, 2, 2).transpose(0, 2, 1, 3, 4).reshape(2, 6, 2, 2),
           inputs=[(2, 6, 2, 2)]),
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


def test_npair_loss_against_numpy():
    rng = np.random.default_rng(4)
    a, p = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    lab = np.array([1.0, 2.0, 1.0, 3.0])
    eq = (lab[:, None] == lab[None, :]).astype(float)
    eq /= eq.sum(1, keepdims=True)
    sim = a @ p.T
    logp = sim - np.log(np.exp(sim).sum(1, keepdims=True))
    ce = -(eq * logp).sum(1, keepdims=True)
    want = 0.25 * 0.002 * ((a * a).sum(1).mean() + (p * p).sum(1).mean()) + (eq * ce).sum(0).mean()
    np.testing.assert_allclose(float(F.npair_loss(T(a), T(p), T(lab))), want, rtol=1e-10)


def test_softmax_with_cross_entropy_keeps_axis():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 4))
    lab = np.array([[1], [0], [3]])
    logp = x - np.log(np.exp(x).sum(1, keepdims=True))
    loss, sm = F.softmax_with_cross_entropy(T(x), I64(lab), return_softmax=True)
    assert loss.shape == [3, 1]
    np.testing.assert_allclose(loss.numpy(), -np.take_along_axis(logp, lab, 1), rtol=1e-10)
    np.testing.assert_allclose(sm.numpy(), np.exp(logp), rtol=1e-10)


def test_sequence_mask_and_dropout1d():
    m = F.sequence_mask(I64([2, 0, 3]), maxlen=4, dtype="float32")
    np.testing.assert_array_equal(m.numpy(), np.arange(4) < np.array([2, 0, 3])[:, None])
    assert m.dtype.name == "float32" and F.sequence_mask(I64([1, 3])).shape == [2, 3]
    x = T(np.ones((2, 8, 5)))
    out = F.dropout1d(x, 0.5).numpy()
    per_channel = out.reshape(2, 8, 5)
    assert np.all((per_channel == per_channel[..., :1]))  # whole channels kept or dropped
    assert set(np.unique(out)) <= {0.0, 2.0}
    np.testing.assert_array_equal(F.dropout1d(x, 0.5, training=False).numpy(), x.numpy())
    with pytest.raises(ValueError, match="dropout1d: input must be 2-D or 3-D"):
        F.dropout1d(T(np.ones(3)))
    with pytest.raises(ValueError, match=r"dice_loss: input \[N, ..., C\]"):
        F.dice_loss(T(np.ones((3, 3))), I64([[0, 1], [1, 0], [0, 0]]))


def test_layers_call_the_functionals():
    rng = np.random.default_rng(6)
    a, b = T(rng.standard_normal((4, 3))), T(rng.standard_normal((4, 3)))
    y = I64([1, -1, 1, -1])
    assert np.allclose(oar.nn.CosineEmbeddingLoss(margin=0.2)(a, b, y).numpy(),
                       F.cosine_embedding_loss(a, b, y, margin=0.2).numpy())
    assert np.allclose(oar.nn.TripletMarginLoss(p=1.0)(a, b, a * 2).numpy(),
                       F.triplet_margin_loss(a, b, a * 2, p=1.0).numpy())
    with pytest.raises(ValueError, match="SoftMarginLoss: reduction"):
        oar.nn.SoftMarginLoss(reduction="avg")
    x = T(rng.standard_normal((1, 4, 2, 3)))
    np.testing.assert_allclose(oar.nn.Maxout(groups=2)(x).numpy(), F.maxout(x, 2).numpy())
    sm = oar.nn.Softmax2D()(x).numpy()
    np.testing.assert_allclose(sm.sum(1), np.ones((1, 2, 3)), rtol=1e-12)
    assert oar.nn.Unflatten(1, [2, 2])(x).shape == [1, 2, 2, 2, 3]
    p = oar.nn.ReflectionPad1D([1, 2])(T(np.arange(4.0).reshape(1, 1, 4)))
    np.testing.assert_array_equal(p.numpy()[0, 0], [1, 0, 1, 2, 3, 2, 1])
    z = oar.nn.ConstantPad2D(1, value=5.0)(T(np.zeros((1, 1, 1, 1))))
    assert z.shape == [1, 1, 3, 3] and float(z.sum()) == 40.0
    assert oar.nn.ZeroPad3D(1)(T(np.ones((1, 1, 1, 1, 1)))).shape == [1, 1, 3, 3, 3]


BAD = [  # (function, args, kwargs, exception, message fragment naming the function)
    (F.soft_margin_loss, (T(np.ones(2)), T(np.ones(2))), {"reduction": "x"}, ValueError,
     "soft_margin_loss: reduction"),
    (F.poisson_nll_loss, (T(np.ones(2)), T(np.ones(2))), {"epsilon": 0.0}, ValueError,
     "poisson_nll_loss: epsilon"),
    (F.maxout, (T(np.ones((1, 3, 2, 2))), 2), {}, ValueError, "maxout: the channels (3)"),
    (F.maxout, (T(np.ones((1, 4, 2, 2))), 2), {"axis": 2}, ValueError, "maxout: axis"),
    (F.channel_shuffle, (T(np.ones((1, 4, 2, 2))), 3), {}, ValueError,
     "channel_shuffle: the channels"),
    (F.channel_shuffle, (T(np.ones((1, 4, 2))), 2), {}, ValueError, "channel_shuffle: x must be 4-D"),
    (F.swiglu, (T(np.ones((2, 3))),), {}, ValueError, "swiglu: x's last dimension"),
    (F.label_smooth, (T(np.ones((2, 3))),), {"epsilon": 2.0}, ValueError, "label_smooth: epsilon"),
    (F.triplet_margin_loss, (T(np.ones((2, 3))), T(np.ones((2, 3))), T(np.ones((2, 4)))), {},
     ValueError, "triplet_margin_with_distance_loss: input shape"),
    (F.cosine_embedding_loss, (T(np.ones((2, 3))), T(np.ones((2, 3))), T(np.ones((2, 1)))), {},
     ValueError, "cosine_embedding_loss: label must be 1-D"),
]


@pytest.mark.parametrize("fn, args, kwargs, exc, msg", BAD,
                         ids=[f"{b[0].__name__}{i}" for i, b in enumerate(BAD)])
def test_bad_arguments(fn, args, kwargs, exc, msg):
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    assert msg in str(info.value), str(info.value)


def test_multi_margin_loss_huge_integer_power_returns():
    # an int margin ** a huge int p was a Python bigint power that never finished (fuzzer)
    x = np.array([[0.3, -1.2, 0.8]])
    lab = np.array([1])
    for p, margin in [(3, 2), (10**12, -2), (10**12, 1)]:
        got = F.multi_margin_loss(oar.to_tensor(x), oar.to_tensor(lab), p=p, margin=margin).numpy()
        with np.errstate(over="ignore", invalid="ignore"):
            want = np_multi_margin(x, lab, np.float64(p), np.float64(margin)).mean()
        np.testing.assert_allclose(got, want, rtol=1e-12)
    with pytest.raises(TypeError, match="multi_margin_loss: p must be a number, got str"):
        F.multi_margin_loss(oar.to_tensor(x), oar.to_tensor(lab), p="2")

"""batch_norm / layer_norm / group_norm / instance_norm / rms_norm (cnn.yaml and
oar.nn.functional) against float64 NumPy references: forward, running statistics,
gradients and second derivatives against finite differences, 0-size batches, bad inputs."""
import numpy as np
import oar
import oar.nn.functional as F
import pytest
from op_test_utils import OpCase, case_id, check_bad_inputs, check_forward, check_grad, tensor, uniform


# ---------------------------------------------------------------- references
def np_norm(x, axes, eps):
    mu = x.mean(axis=axes, keepdims=True) if x.size else np.zeros([1] * x.ndim)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True) if x.size else np.zeros([1] * x.ndim)
    return (x - mu) / np.sqrt(var + eps)


def np_layer_norm(x, w=None, b=None, begin=1, eps=1e-5):
    out = np_norm(x, tuple(range(begin, x.ndim)), eps)
    shape = x.shape[begin:]
    if w is not None:
        out = out * w.reshape(shape)
    if b is not None:
        out = out + b.reshape(shape)
    return out


def np_group_norm(x, groups, w=None, b=None, eps=1e-5):
    n, c = x.shape[:2]
    xv = x.reshape(n, groups, int(np.prod(x.shape[1:])) // groups)
    out = np_norm(xv, (2,), eps).reshape(x.shape) if x.size else x.copy()
    bshape = [1, c] + [1] * (x.ndim - 2)
    if w is not None:
        out = out * w.reshape(bshape)
    if b is not None:
        out = out + b.reshape(bshape)
    return out


def np_batch_norm_train(x, w, b, eps=1e-5, last=False):
    ax = tuple(i for i in range(x.ndim) if i != (x.ndim - 1 if last else 1))
    out = np_norm(x, ax, eps)
    shape = [1] * x.ndim
    shape[x.ndim - 1 if last else 1] = -1
    return out * w.reshape(shape) + b.reshape(shape)


# ---------------------------------------------------------------- table
def _ln(x, w, b, begin=1):
    return F.layer_norm(x, list(x.shape[begin:]), w, b)


def _ln_ref(x, w, b, begin=1):
    return np_layer_norm(x, w, b, begin)


def _bn_train(x, w, b, fmt="NCHW"):
    last = fmt[-1] == "C" and fmt != "NC"
    c = x.shape[-1] if last else x.shape[1]
    rm, rv = oar.zeros([c], x.dtype), oar.ones([c], x.dtype)
    return F.batch_norm(x, rm, rv, w, b, training=True, data_format=fmt)


def _bn_eval(x, w, b, rm, rv):
    return F.batch_norm(x, rm, rv, w, b, training=False)


def _bn_eval_ref(x, w, b, rm, rv):
    s = [1, -1] + [1] * (x.ndim - 2)
    return (x - rm.reshape(s)) / np.sqrt(rv.reshape(s) + 1e-5) * w.reshape(s) + b.reshape(s)


CASES = [
    OpCase("layer_norm_2d", _ln, _ln_ref, inputs=[(4, 6), (6,), (6,)],
           shapes=[[(4, 6), (6,), (6,)], [(0, 6), (6,), (6,)], [(1, 1), (1,), (1,)]],
           op="layer_norm"),
    OpCase("layer_norm_begin2", lambda x, w, b: _ln(x, w, b, 2),
           lambda x, w, b: _ln_ref(x, w, b, 2), inputs=[(2, 3, 4, 5), (4, 5), (4, 5)],
           op="layer_norm"),
    OpCase("layer_norm_noaffine", lambda x: F.layer_norm(x, x.shape[-1]),
           lambda x: np_layer_norm(x, begin=x.ndim - 1), inputs=[(3, 2, 7)], op="layer_norm"),
    OpCase("layer_norm_wide", _ln, _ln_ref, inputs=[(3, 300), (300,), (300,)], grad=False,
           op="layer_norm"),
    OpCase("group_norm", lambda x, w, b: F.group_norm(x, 2, weight=w, bias=b),
           lambda x, w, b: np_group_norm(x, 2, w, b), inputs=[(2, 4, 3, 3), (4,), (4,)],
           shapes=[[(2, 4, 3, 3), (4,), (4,)], [(0, 4, 3, 3), (4,), (4,)], [(2, 6, 5), (6,), (6,)]],
           attrs={}, op="group_norm"),
    OpCase("group_norm_nhwc", lambda x, w, b: F.group_norm(x, 3, weight=w, bias=b, data_format="NHWC"),
           lambda x, w, b: np.moveaxis(np_group_norm(np.moveaxis(x, -1, 1), 3, w, b), 1, -1),
           inputs=[(2, 3, 2, 6), (6,), (6,)], op="group_norm"),
    OpCase("instance_norm", lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
           lambda x, w, b: np_group_norm(x, x.shape[1], w, b), inputs=[(2, 3, 4, 3), (3,), (3,)],
           op="group_norm"),
    OpCase("batch_norm_train", _bn_train, np_batch_norm_train, inputs=[(4, 3, 2, 3), (3,), (3,)],
           shapes=[[(4, 3, 2, 3), (3,), (3,)], [(5, 3), (3,), (3,)], [(2, 3, 7), (3,), (3,)]],
           op="batch_norm"),
    OpCase("batch_norm_train_nhwc", lambda x, w, b: _bn_train(x, w, b, "NHWC"),
           lambda x, w, b: np_batch_norm_train(x, w, b, last=True),
           inputs=[(3, 2, 3, 4), (4,), (4,)], op="batch_norm"),
    OpCase("batch_norm_eval", _bn_eval, _bn_eval_ref,
           inputs=[(3, 2, 4, 2), (2,), (2,), (2,), uniform(0.5, 2.0, (2,))],
           shapes=[[(3, 2, 4, 2), (2,), (2,), (2,), (2,)], [(0, 2, 4, 2), (2,), (2,), (2,), (2,)]],
           grad=False, op="batch_norm"),  # gradients: test_batch_norm_eval_grad_and_running_stats
    OpCase("rms_norm", lambda x, w: F.rms_norm(x, [x.shape[-1]], w),
           lambda x, w: x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w,
           inputs=[(3, 5), (5,)], op="rms_norm"),
]
GRAD_CASES = [c for c in CASES if c.grad]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_norm_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", GRAD_CASES, ids=case_id)
def test_norm_grad(case):
    check_grad(case)


def test_batch_norm_eval_grad_and_running_stats():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 3, 4))
    rm, rv = oar.to_tensor(np.full(3, 0.5)), oar.to_tensor(np.full(3, 2.0))
    w, b = oar.to_tensor(np.ones(3)), oar.to_tensor(np.zeros(3))
    xt = oar.to_tensor(x)
    F.batch_norm(xt, rm, rv, w, b, training=True, momentum=0.8)
    np.testing.assert_allclose(rm.numpy(), 0.8 * 0.5 + 0.2 * x.mean((0, 2)))
    np.testing.assert_allclose(rv.numpy(), 0.8 * 2.0 + 0.2 * x.var((0, 2)))
    # use_global_stats in training: running stats normalize and stay unchanged
    before = rm.numpy().copy()
    out = F.batch_norm(xt, rm, rv, w, b, training=True, use_global_stats=True)
    np.testing.assert_allclose(rm.numpy(), before)
    np.testing.assert_allclose(out.numpy(), (x - before[None, :, None]) /
                               np.sqrt(rv.numpy()[None, :, None] + 1e-5))
    # eval-mode gradients: x, weight and bias
    rm32, rv32 = rm.astype("float32"), rv.astype("float32")
    case = OpCase("batch_norm_eval_grad",
                  lambda x, w, b: F.batch_norm(x, rm if x.dtype == oar.float64 else rm32,
                                               rv if x.dtype == oar.float64 else rv32, w, b,
                                               training=False),
                  lambda x, w, b: _bn_eval_ref(x, w, b, rm.numpy(), rv.numpy()),
                  inputs=[(4, 3, 2), (3,), (3,)], op="batch_norm")
    check_forward(case)
    check_grad(case)


def _second_order(fn, arrays, seed=0):  # noqa: C901
    """d/d(inputs) of <d fn / d inputs, v> against finite differences of the first grads."""
    rng = np.random.default_rng(seed)
    cot = None
    vs = [rng.standard_normal(a.shape) for a in arrays]

    def first(arrs, create):
        nonlocal cot
        ts = [oar.to_tensor(a, stop_gradient=False) for a in arrs]
        y = fn(*ts)
        if cot is None:
            cot = rng.standard_normal(y.shape)
        gs = oar.grad([y], ts, grad_outputs=[oar.to_tensor(cot)], create_graph=create)
        return ts, gs

    ts, gs = first(arrays, True)
    s = sum((g * oar.to_tensor(v)).sum() for g, v in zip(gs, vs))
    got = oar.grad([s], ts, allow_unused=True)

    def scalar(arrs):
        _, gs = first(arrs, False)
        return float(sum((g.numpy() * v).sum() for g, v in zip(gs, vs)))
    eps = 1e-5
    for k, a in enumerate(arrays):
        num = np.zeros_like(a)
        for idx in np.ndindex(*a.shape):
            old = a[idx]
            a[idx] = old + eps
            hi = scalar(arrays)
            a[idx] = old - eps
            lo = scalar(arrays)
            a[idx] = old
            num[idx] = (hi - lo) / (2 * eps)
        g = np.zeros_like(a) if got[k] is None else got[k].numpy()
        np.testing.assert_allclose(g, num, atol=1e-5, rtol=1e-4,
                                   err_msg=f"input {k}")


@pytest.mark.parametrize("kind", ["layer", "group", "batch_train", "batch_eval"])
def test_norm_double_backward(kind):
    rng = np.random.default_rng(5)
    if kind == "layer":
        fn = lambda x, w, b: F.layer_norm(x, [4], w, b)  # noqa: E731
        arrays = [rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal(4)]
    elif kind == "group":
        fn = lambda x, w, b: F.group_norm(x, 2, weight=w, bias=b)  # noqa: E731
        arrays = [rng.standard_normal((2, 4, 3)), rng.standard_normal(4), rng.standard_normal(4)]
    else:
        rm, rv = oar.to_tensor(np.full(2, 0.3)), oar.to_tensor(np.full(2, 1.5))
        train = kind == "batch_train"
        fn = lambda x, w, b: F.batch_norm(x, rm, rv, w, b, training=train)  # noqa: E731
        arrays = [rng.standard_normal((3, 2, 2)), rng.standard_normal(2), rng.standard_normal(2)]
    _second_order(fn, arrays)


def test_norm_bad_inputs():
    x = tensor(np.ones((2, 3, 4)))
    check_bad_inputs(OpCase("layer_norm", lambda *a, **k: F.layer_norm(*a, **k), None, bad_inputs=[
        ([x, [5]], ValueError, "normalized_shape"),
        ([x, [4], tensor(np.ones(5))], ValueError, "weight"),
        ([tensor(np.ones((2, 4)), "int64"), [4]], TypeError, "int64"),
    ]))
    check_bad_inputs(OpCase("group_norm", lambda *a, **k: F.group_norm(*a, **k), None, bad_inputs=[
        ([x, 2], ValueError, "divisible"),
        ([x, 3, 1e-5, tensor(np.ones(2))], ValueError, "weight"),
    ]))
    rm, rv = oar.zeros([3]), oar.ones([3])
    check_bad_inputs(OpCase("batch_norm", lambda *a, **k: F.batch_norm(*a, **k), None, bad_inputs=[
        ([x, oar.zeros([4]), rv, None, None], ValueError, "running_mean"),
        ([tensor(np.ones(3)), rm, rv, None, None], ValueError, "2-D to 5-D"),
        ([x, rm, rv, None, None, True, 1.5], ValueError, "momentum"),
        ([x, rm, rv, None, None, False, 0.9, 1e-5, "NCWH"], ValueError, "data_format"),
    ]))


def test_batch_norm_empty_batch_keeps_stats():
    rm, rv = oar.to_tensor(np.full(3, 0.5)), oar.to_tensor(np.full(3, 2.0))
    out = F.batch_norm(oar.zeros([0, 3, 2], "float64"), rm, rv, None, None, training=True)
    assert out.shape == [0, 3, 2]
    np.testing.assert_allclose(rm.numpy(), 0.5)
    np.testing.assert_allclose(rv.numpy(), 2.0)


# ---------------------------------------------------------------- layers
def test_norm_layers():
    nn = oar.nn
    bn = nn.BatchNorm2D(3, momentum=0.5)
    assert bn.weight.shape == [3] and bn._mean.shape == [3] and bn._variance.shape == [3]
    np.testing.assert_allclose(bn.weight.numpy(), 1.0)
    np.testing.assert_allclose(bn._variance.numpy(), 1.0)
    assert bn._mean.stop_gradient and not bn.weight.stop_gradient
    assert sorted(bn.state_dict()) == ["_mean", "_variance", "bias", "weight"]
    x = np.random.default_rng(0).standard_normal((4, 3, 2, 2)).astype(np.float32)
    out = bn(oar.to_tensor(x))
    np.testing.assert_allclose(out.numpy(), np_batch_norm_train(x, np.ones(3), np.zeros(3)), atol=1e-5)
    np.testing.assert_allclose(bn._mean.numpy(), 0.5 * x.mean((0, 2, 3)), atol=1e-6)
    bn.eval()
    out = bn(oar.to_tensor(x))
    ref = (x - bn._mean.numpy()[None, :, None, None]) / np.sqrt(bn._variance.numpy()[None, :, None, None] + 1e-5)
    np.testing.assert_allclose(out.numpy(), ref, atol=1e-5)
    assert nn.BatchNorm1D(5)(oar.ones([4, 5])).shape == [4, 5]
    assert nn.BatchNorm1D(5)(oar.ones([4, 5, 3])).shape == [4, 5, 3]
    assert nn.BatchNorm3D(2)(oar.ones([2, 2, 2, 2, 2])).shape == [2, 2, 2, 2, 2]
    assert nn.BatchNorm(3, act="relu")(oar.to_tensor(x)).shape == [4, 3, 2, 2]
    with pytest.raises(ValueError, match="BatchNorm2D"):
        nn.BatchNorm2D(3)(oar.ones([4, 3]))
    ln = nn.LayerNorm([2, 2])
    assert ln.weight.shape == [4] and ln.bias.shape == [4]
    np.testing.assert_allclose(ln(oar.to_tensor(x)).numpy(), np_layer_norm(x, begin=2), atol=1e-5)
    gn = nn.GroupNorm(3, 3)
    np.testing.assert_allclose(gn(oar.to_tensor(x)).numpy(), np_group_norm(x, 3), atol=1e-5)
    inn = nn.InstanceNorm2D(3)
    assert inn.scale.shape == [3]
    np.testing.assert_allclose(inn(oar.to_tensor(x)).numpy(), np_group_norm(x, 3), atol=1e-5)
    assert nn.InstanceNorm1D(3)(oar.ones([2, 3, 4])).shape == [2, 3, 4]
    rms = nn.RMSNorm(2)
    np.testing.assert_allclose(rms(oar.to_tensor(x)).numpy(),
                               x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6), atol=1e-5)
    lrn = nn.LocalResponseNorm(3)
    sq = np.pad(x.astype(np.float64) ** 2, ((0, 0), (1, 1), (0, 0), (0, 0)))
    div = (1.0 + 1e-4 / 3 * (sq[:, :-2] + sq[:, 1:-1] + sq[:, 2:])) ** 0.75
    np.testing.assert_allclose(lrn(oar.to_tensor(x)).numpy(), x / div, rtol=1e-5)
    with pytest.raises(ValueError, match="GroupNorm"):
        nn.GroupNorm(2, 3)

"""NN ops (paddle_core/ops/nn.yaml): softmax / log_softmax (forward, gradients, double
backward) and cross_entropy with Paddle's semantics (Note [cross_entropy] in
paddle_core/meta/infer_meta_nn.cc) against float64 NumPy references."""
import numpy as np
import oar
import oar.nn.functional as F
import pytest
from op_test_utils import (
    FLOAT_DTYPES,
    NARROW_DTYPES,
    OpCase,
    case_id,
    check_bad_inputs,
    check_forward,
    check_grad,
    normal,
    tensor,
)


# ---------------------------------------------------------------- softmax family
def np_softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True)) if x.size else x
    return e / np.sum(e, axis=axis, keepdims=True) if x.size else x


def np_log_softmax(x, axis=-1):
    if x.size == 0:
        return x
    m = np.max(x, axis=axis, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


SOFTMAX_SHAPES = [[(3, 5)], [(2, 3, 4)], [(0, 4)], [(4, 0)], [()], [(7,)], [(2, 300)]]
NARROW_TOL = {"float16": (3e-3, 1e-2), "bfloat16": (2e-2, 3e-2)}


def _softmax_cases():
    cases = []
    for name, fn, ref in [("softmax", F.softmax, np_softmax),
                          ("log_softmax", F.log_softmax, np_log_softmax)]:
        for axis in (-1, 0, 1):
            shapes = SOFTMAX_SHAPES if axis in (-1, 0) else [[(3, 5)], [(2, 3, 4)], [(2, 200, 3)],
                                                             [(2, 3, 300)], [(0, 4)]]
            if axis == 0:
                shapes = [s for s in shapes if s != [()]] + [[(5, 130)]]
            cases.append(OpCase(
                f"{name}_axis{axis}", fn, ref, inputs=[normal(scale=3.0)], shapes=shapes,
                dtypes=FLOAT_DTYPES + NARROW_DTYPES, attrs={"axis": axis}, tol=NARROW_TOL,
                grad_shapes=[[(3, 4)], [(2, 3, 4)]] if axis != 0 else [[(3, 4)]], op=name,
                bad_inputs=[([tensor([[1.0, 2.0]])], IndexError, "axis", {"axis": 2}),
                            ([tensor([[1, 2]], "int64")], TypeError, "int64", {"axis": -1})]))
    return cases


SOFTMAX_CASES = _softmax_cases()


@pytest.mark.parametrize("case", SOFTMAX_CASES, ids=case_id)
def test_softmax_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", SOFTMAX_CASES, ids=case_id)
def test_softmax_grad(case):
    check_grad(case)


@pytest.mark.parametrize("case", SOFTMAX_CASES[:2], ids=case_id)
def test_softmax_bad_inputs(case):
    check_bad_inputs(case)


def test_softmax_stable_for_large_inputs():
    x = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1001.0, -1e4]], dtype=np.float32)
    np.testing.assert_allclose(F.softmax(oar.to_tensor(x)).numpy(), np_softmax(x.astype(np.float64)),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(F.log_softmax(oar.to_tensor(x)).numpy(),
                               np_log_softmax(x.astype(np.float64)), rtol=1e-5, atol=1e-4)
    # -inf entries (masks) get probability exactly 0
    m = oar.to_tensor(np.array([[0.0, -np.inf, 1.0]], dtype=np.float32))
    assert F.softmax(m).numpy()[0, 1] == 0.0


def test_softmax_non_contiguous_input():
    x = np.random.default_rng(0).standard_normal((4, 6))
    t = oar.to_tensor(x).transpose([1, 0])
    np.testing.assert_allclose(F.softmax(t, axis=0).numpy(), np_softmax(x.T, axis=0), rtol=1e-12)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_double_backward(name, axis):
    """oar.grad(create_graph=True) twice vs finite differences of the first gradient.
    The objective sum(y * y * r) makes the incoming gradient depend on x, so both
    inputs of the fused *_grad op are exercised."""
    fn = getattr(F, name)
    rng = np.random.default_rng(7)
    x0 = rng.standard_normal((3, 4))
    r = oar.to_tensor(rng.standard_normal((3, 4)))
    q = rng.standard_normal((3, 4))

    def first_grad(xa, create_graph=False):
        x = oar.to_tensor(xa, stop_gradient=False)
        y = fn(x, axis=axis)
        (g,) = oar.grad([(y * y * r).sum()], [x], create_graph=create_graph)
        return x, g

    x, g = first_grad(x0, create_graph=True)
    (gg,) = oar.grad([(g * oar.to_tensor(q)).sum()], [x])
    num = np.zeros_like(x0)
    eps = 1e-6
    for idx in np.ndindex(*x0.shape):
        xp, xm = x0.copy(), x0.copy()
        xp[idx] += eps
        xm[idx] -= eps
        num[idx] = (np.sum(first_grad(xp)[1].numpy() * q) - np.sum(first_grad(xm)[1].numpy() * q)) / (2 * eps)
    np.testing.assert_allclose(gg.numpy(), num, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- cross_entropy
def ref_cross_entropy(x, label, weight=None, ignore_index=-100, reduction="mean",
                      soft_label=False, axis=-1, use_softmax=True, label_smoothing=0.0):
    """Paddle's semantics in float64 NumPy (Note [cross_entropy])."""
    axis = axis % x.ndim
    C = x.shape[axis]
    xm = np.moveaxis(x, axis, -1).reshape(-1, C)
    if use_softmax:
        logp = np_log_softmax(xm) if xm.size else xm
    else:
        with np.errstate(divide="ignore"):
            logp = np.maximum(np.log(xm), -1e20)
    eps = label_smoothing
    if soft_label:
        y = np.moveaxis(label, axis, -1).reshape(-1, C) * (1 - eps) + eps / C
        valid = np.ones(len(y), bool)
        out_shape = list(x.shape)
        out_shape[axis] = 1
    else:
        lab = label if label.ndim == x.ndim - 1 else np.squeeze(label, axis)
        out_shape = list(label.shape)
        if label.ndim == x.ndim - 1 and eps > 0:
            out_shape.insert(axis, 1)
        lab = lab.reshape(-1)
        valid = lab != ignore_index
        y = np.zeros((len(lab), C))
        y[np.arange(len(lab))[valid], lab[valid]] = 1.0
        y = y * (1 - eps) + eps / C
        y[~valid] = 0.0
    ce = -np.sum(y * logp, axis=1)
    W = y @ weight if weight is not None else np.where(valid, 1.0, 0.0)
    loss = np.where(valid, ce * W, 0.0) if weight is not None else np.where(valid, ce, 0.0)
    if reduction == "none":
        return loss.reshape(out_shape)
    if reduction == "sum":
        return loss.sum()
    if weight is not None or (not soft_label and (ignore_index >= 0 or eps > 0)):
        d = W.sum()
        return loss.sum() / (d if d != 0 else 1.0)
    return loss.sum() / len(loss) if len(loss) else np.nan


def _ce_inputs(rng, shape, axis, soft, label_rank_full, ignore=None, positive=False):
    x = rng.uniform(0.05, 1.0, shape) if positive else rng.standard_normal(shape) * 2
    C = shape[axis]
    if soft:
        lab = rng.uniform(0, 1, shape)
        lab /= lab.sum(axis=axis, keepdims=True)
        return x, lab
    lshape = list(shape)
    if label_rank_full:
        lshape[axis] = 1
    else:
        del lshape[axis]
    lab = rng.integers(0, C, lshape).astype(np.int64)
    if ignore is not None and lab.size:
        lab.reshape(-1)[:: 3] = ignore
    return x, lab


CE_CONFIGS = [
    # (id, shape, axis, kwargs, label_rank_full, ignore value placed in labels)
    ("hard", (5, 4), -1, {}, False, None),
    ("hard_n1", (5, 4), -1, {}, True, None),
    ("hard_weight", (6, 4), -1, {"weight": True}, False, None),
    ("hard_ignore_pos", (6, 4), -1, {"ignore_index": 1}, False, 1),
    ("hard_ignore_neg", (6, 4), -1, {"ignore_index": -100}, False, -100),
    ("hard_ignore_weight", (6, 4), -1, {"ignore_index": 2, "weight": True}, False, 2),
    ("hard_smooth", (5, 4), -1, {"label_smoothing": 0.1}, False, None),
    ("hard_smooth_weight", (5, 4), -1, {"label_smoothing": 0.2, "weight": True}, True, None),
    ("hard_axis1", (2, 3, 4), 1, {}, False, None),
    ("hard_axis1_n1", (2, 3, 4), 1, {"weight": True}, True, None),
    ("hard_nosoftmax", (5, 4), -1, {"use_softmax": False}, False, None),
    ("hard_nosoftmax_smooth", (5, 4), -1, {"use_softmax": False, "label_smoothing": 0.1}, False, None),
    ("soft", (5, 4), -1, {"soft_label": True}, False, None),
    ("soft_weight", (5, 4), -1, {"soft_label": True, "weight": True}, False, None),
    ("soft_smooth", (5, 4), -1, {"soft_label": True, "label_smoothing": 0.1}, False, None),
    ("soft_axis0", (4, 3), 0, {"soft_label": True, "weight": True}, False, None),
    ("soft_nosoftmax", (5, 4), -1, {"soft_label": True, "use_softmax": False}, False, None),
    # rows longer than the short-row chunking threshold (32 classes)
    ("hard_long", (3, 40), -1, {"weight": True, "ignore_index": 5}, False, 5),
    ("hard_long_smooth", (3, 40), -1, {"label_smoothing": 0.1}, True, None),
    ("soft_long", (3, 40), -1, {"soft_label": True, "weight": True}, False, None),
]


def _run_ce_config(cfg, dtype, reduction, rng, requires_grad=False):
    _, shape, axis, kw, full, ignore = cfg
    kw = dict(kw)
    soft = kw.get("soft_label", False)
    x, lab = _ce_inputs(rng, shape, axis, soft, full, ignore,
                        positive=not kw.get("use_softmax", True))
    w = rng.uniform(0.5, 2.0, shape[axis]) if kw.pop("weight", False) else None
    ref = ref_cross_entropy(x, lab, w, reduction=reduction, axis=axis, **kw)
    xt = oar.to_tensor(x.astype(dtype), stop_gradient=not requires_grad)
    lt = oar.to_tensor(lab.astype(dtype) if soft else lab, stop_gradient=not (requires_grad and soft))
    wt = oar.to_tensor(w.astype(dtype)) if w is not None else None
    out = F.cross_entropy(xt, lt, weight=wt, reduction=reduction, axis=axis, **kw)
    return out, ref, (x, lab, w, xt, lt, wt, kw, axis)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("cfg", CE_CONFIGS, ids=[c[0] for c in CE_CONFIGS])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_cross_entropy_forward(cfg, reduction, dtype):
    rng = np.random.default_rng(11)
    out, ref, _ = _run_ce_config(cfg, dtype, reduction, rng)
    assert out.dtype.name == dtype
    assert tuple(out.shape) == np.shape(ref), f"shape {out.shape} vs {np.shape(ref)}"
    tol = 1e-12 if dtype == "float64" else 2e-5
    np.testing.assert_allclose(out.numpy(), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("cfg", CE_CONFIGS, ids=[c[0] for c in CE_CONFIGS])
def test_cross_entropy_grad(cfg, reduction):
    """d/d input (and d/d soft label) vs central differences of the NumPy reference."""
    rng = np.random.default_rng(12)
    out, ref, (x, lab, w, xt, lt, _, kw, axis) = _run_ce_config(
        cfg, "float64", reduction, rng, requires_grad=True)
    cot = rng.standard_normal(np.shape(ref))
    targets = [xt] + ([lt] if kw.get("soft_label") else [])
    grads = oar.grad([out], targets, grad_outputs=[oar.to_tensor(cot)])

    def objective(xa, la):
        return float(np.sum(ref_cross_entropy(xa, la, w, reduction=reduction, axis=axis, **kw) * cot))

    for k, arr in enumerate([x, lab][: len(targets)]):
        num = np.zeros_like(arr)
        eps = 1e-6
        for idx in np.ndindex(*arr.shape):
            a = arr.copy()
            a[idx] += eps
            hi = objective(a, lab) if k == 0 else objective(x, a)
            a[idx] -= 2 * eps
            lo = objective(a, lab) if k == 0 else objective(x, a)
            num[idx] = (hi - lo) / (2 * eps)
        np.testing.assert_allclose(grads[k].numpy(), num, rtol=1e-5, atol=1e-6,
                                   err_msg=f"d/d {'input' if k == 0 else 'label'}")


def test_cross_entropy_backward_matches_grad_and_mlp_shape():
    rng = np.random.default_rng(3)
    x = oar.to_tensor(rng.standard_normal((64, 10)).astype(np.float32), stop_gradient=False)
    lab = oar.to_tensor(rng.integers(0, 10, (64,)))
    loss = F.cross_entropy(x, lab)
    loss.backward()
    p = np_softmax(x.numpy().astype(np.float64))
    onehot = np.eye(10)[lab.numpy()]
    np.testing.assert_allclose(x.grad.numpy(), (p - onehot) / 64, rtol=1e-5, atol=1e-7)


def test_cross_entropy_empty_batch():
    x = oar.to_tensor(np.zeros((0, 3), np.float32), stop_gradient=False)
    lab = oar.to_tensor(np.zeros((0,), np.int64))
    assert F.cross_entropy(x, lab, reduction="none").shape == [0]
    assert float(F.cross_entropy(x, lab, reduction="sum")) == 0.0
    F.cross_entropy(x, lab, reduction="sum").backward()
    assert x.grad.shape == [0, 3]


def test_cross_entropy_all_ignored_mean_is_zero():
    x = oar.to_tensor(np.ones((3, 4), np.float32))
    lab = oar.to_tensor(np.array([1, 1, 1]))
    assert float(F.cross_entropy(x, lab, ignore_index=1)) == 0.0


def _x(shape=(4, 3), dtype="float32"):
    return oar.to_tensor(np.ones(shape, dtype))


@pytest.mark.parametrize("args, kwargs, exc, substring", [
    ((_x(), oar.to_tensor(np.array([0, 1, 3, 0]))), {}, IndexError, "label value 3"),
    ((_x(), oar.to_tensor(np.array([0, -1, 0, 0]))), {}, IndexError, "3 classes"),
    ((_x(), oar.to_tensor(np.array([0, 1, 2]))), {}, ValueError, "label shape"),
    ((_x(), oar.to_tensor(np.zeros((4, 2), np.int64))), {}, ValueError, "label shape"),
    ((_x(), oar.to_tensor(np.zeros((4,), np.float32))), {}, TypeError, "int64"),
    ((_x(), oar.to_tensor(np.zeros((4, 3), np.float64))), {"soft_label": True}, TypeError, "dtype"),
    ((_x(), oar.to_tensor(np.zeros((4, 2), np.float32))), {"soft_label": True}, ValueError, "shape"),
    ((_x(), oar.to_tensor(np.zeros((4,), np.int64))), {"weight": oar.to_tensor(np.ones(2, np.float32))},
     ValueError, "weight"),
    ((_x(), oar.to_tensor(np.zeros((4,), np.int64))), {"axis": 2}, IndexError, "axis"),
    ((_x(), oar.to_tensor(np.zeros((4,), np.int64))), {"label_smoothing": 1.5}, ValueError,
     "label_smoothing"),
    ((_x(), oar.to_tensor(np.zeros((4, 3), np.float32))), {"soft_label": True, "ignore_index": 1},
     ValueError, "ignore_index"),
    ((oar.to_tensor(np.ones((4, 3), np.int64)), oar.to_tensor(np.zeros((4,), np.int64))), {},
     TypeError, "floating"),
])
def test_cross_entropy_bad_inputs(args, kwargs, exc, substring):
    with pytest.raises(exc) as info:
        F.cross_entropy(*args, **kwargs)
    assert substring in str(info.value) and "cross_entropy" in str(info.value), str(info.value)


def test_cross_entropy_bad_reduction():
    with pytest.raises(ValueError, match="cross_entropy"):
        oar._C.ops.cross_entropy(_x(), oar.to_tensor(np.zeros((4,), np.int64)), None, False, True,
                                 -100, -1, 0.0, "avg")


# ---------------------------------------------------------------- activations
def _sig(x):
    return 1 / (1 + np.exp(-x))


def _softplus(x, beta=1.0, threshold=20.0):
    z = beta * x
    return np.where(z > threshold, x, np.logaddexp(0, z) / beta)


ACTIVATIONS = [
    ("silu", lambda x: x * _sig(x), {}),
    ("softplus", _softplus, {}),
    ("softplus", _softplus, {"beta": 2.0, "threshold": 3.0}),
    ("leaky_relu", lambda x, negative_slope=0.01: np.where(x > 0, x, negative_slope * x), {}),
    ("leaky_relu", lambda x, negative_slope=0.01: np.where(x > 0, x, negative_slope * x),
     {"negative_slope": 0.3}),
    ("elu", lambda x, alpha=1.0: np.where(x > 0, x, alpha * np.expm1(x)), {"alpha": 0.7}),
    ("log_sigmoid", lambda x: -np.logaddexp(0, -x), {}),
    ("hardswish", lambda x: x * np.clip(x + 3, 0, 6) / 6, {}),
    ("hardsigmoid", lambda x, slope=0.1666667, offset=0.5: np.clip(slope * x + offset, 0, 1), {}),
    ("relu6", lambda x: np.clip(x, 0, 6), {}),
]
# Values spread over every piece of the piecewise functions, away from the kinks.
ACT_GEN = normal(scale=4.0)
def _act_fn(name):
    op = getattr(oar._C.ops, name)
    return lambda x, **kw: op(x, **kw)


ACT_CASES = [OpCase(f"{n}{'_' + '_'.join(map(str, a.values())) if a else ''}", _act_fn(n), ref,
                    inputs=[ACT_GEN], attrs=a, dtypes=FLOAT_DTYPES + NARROW_DTYPES, op=n,
                    shapes=[[(3, 4)], [()], [(0, 3)], [(2, 3, 5)]], grad_shapes=[[(4, 5)]],
                    tol={"float16": (5e-3, 1e-2), "bfloat16": (5e-2, 3e-2)})
             for n, ref, a in ACTIVATIONS]


@pytest.mark.parametrize("case", ACT_CASES, ids=case_id)
def test_activation_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", ACT_CASES, ids=case_id)
def test_activation_grad(case):
    check_grad(case)


@pytest.mark.parametrize("name", ["silu", "softplus", "elu", "log_sigmoid", "hardswish",
                                  "leaky_relu", "relu6", "hardsigmoid"])
def test_activation_double_backward(name):
    fn = getattr(oar._C.ops, name)
    rng = np.random.default_rng(5)
    x0 = rng.standard_normal((3, 4)) * 2.5
    q = rng.standard_normal((3, 4))

    def first_grad(xa, create_graph=False):
        x = oar.to_tensor(xa, stop_gradient=False)
        y = fn(x)
        (g,) = oar.grad([(y * y).sum()], [x], create_graph=create_graph)
        return x, g

    x, g = first_grad(x0, create_graph=True)
    (gg,) = oar.grad([(g * oar.to_tensor(q)).sum()], [x])
    eps = 1e-6
    num = np.zeros_like(x0)
    for idx in np.ndindex(*x0.shape):
        xp, xm = x0.copy(), x0.copy()
        xp[idx] += eps
        xm[idx] -= eps
        num[idx] = (np.sum(first_grad(xp)[1].numpy() * q) - np.sum(first_grad(xm)[1].numpy() * q)) / (2 * eps)
    np.testing.assert_allclose(gg.numpy(), num, rtol=1e-5, atol=1e-5)


def test_activations_promote_ints():
    out = oar._C.ops.silu(oar.to_tensor(np.array([0, 1, 2])))
    assert out.dtype.name == "float32"
    np.testing.assert_allclose(out.numpy(), [0, 1 * _sig(1.0), 2 * _sig(2.0)], rtol=1e-6)

"""Optimizers against NumPy re-implementations of Paddle's update rules; parameter groups,
weight decay forms, gradient clipping, state_dict and exact resume."""

import numpy as np
import pytest

import oar
from oar.nn import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue
from oar.regularizer import L1Decay, L2Decay

STEPS = 4


def make_param(shape=(3, 5), seed=0):
    rng = np.random.default_rng(seed)
    v = rng.normal(size=shape).astype(np.float32)
    return oar.create_parameter(
        list(shape), "float32", default_initializer=oar.nn.initializer.Assign(v)
    ), v.astype(np.float64)


def grads_seq(shape, seed=1):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=shape).astype(np.float32) for _ in range(STEPS)]


def run(opt, params, grads):
    """Steps opt with loss = sum(p * g) so that p.grad == g."""
    for gs in grads:
        loss = sum((p * oar.to_tensor(g)).sum() for p, g in zip(params, gs))
        loss.backward()
        opt.step()
        opt.clear_grad()


def ref_sgd(p, g, lr, wd, st):
    return p - lr * (g + wd * p)


def ref_momentum(p, g, lr, wd, st, mu=0.9, nesterov=False):
    g = g + wd * p
    v = st.get("v", 0) * mu + g
    st["v"] = v
    return p - lr * (g + mu * v if nesterov else v)


def ref_adam(p, g, lr, wd, st, b1=0.9, b2=0.999, eps=1e-8, decoupled=False):
    st["t"] = st.get("t", 0) + 1
    if decoupled:
        p = p * (1 - lr * wd)
    else:
        g = g + wd * p
    m = b1 * st.get("m", 0) + (1 - b1) * g
    v = b2 * st.get("v", 0) + (1 - b2) * g * g
    st["m"], st["v"] = m, v
    t = st["t"]
    lr_t = lr * np.sqrt(1 - b2**t) / (1 - b1**t)
    return p - lr_t * m / (np.sqrt(v) + eps * np.sqrt(1 - b2**t))


def ref_adamax(p, g, lr, wd, st, b1=0.9, b2=0.999, eps=1e-8):
    st["t"] = st.get("t", 0) + 1
    g = g + wd * p
    m = b1 * st.get("m", 0) + (1 - b1) * g
    u = np.maximum(b2 * st.get("u", 0) + eps, np.abs(g))
    st["m"], st["u"] = m, u
    return p - lr / (1 - b1 ** st["t"]) * m / u


def ref_adagrad(p, g, lr, wd, st, eps=1e-6, init=0.0):
    g = g + wd * p
    a = st.get("a", init) + g * g
    st["a"] = a
    return p - lr * g / (np.sqrt(a) + eps)


def ref_adadelta(p, g, lr, wd, st, rho=0.95, eps=1e-6):
    g = g + wd * p
    eg = rho * st.get("eg", 0) + (1 - rho) * g * g
    d = -np.sqrt((st.get("ex", 0) + eps) / (eg + eps)) * g
    st["eg"], st["ex"] = eg, rho * st.get("ex", 0) + (1 - rho) * d * d
    return p + lr * d


def ref_rmsprop(p, g, lr, wd, st, rho=0.95, eps=1e-6, mu=0.0, centered=False):
    g = g + wd * p
    ms = rho * st.get("ms", 0) + (1 - rho) * g * g
    st["ms"] = ms
    denom = ms + eps
    if centered:
        mg = rho * st.get("mg", 0) + (1 - rho) * g
        st["mg"] = mg
        denom = denom - mg * mg
    mom = mu * st.get("mom", 0) + lr * g / np.sqrt(denom)
    st["mom"] = mom
    return p - mom


def ref_lamb(p, g, lr, wd, st, b1=0.9, b2=0.999, eps=1e-6):
    st["t"] = st.get("t", 0) + 1
    t = st["t"]
    m = b1 * st.get("m", 0) + (1 - b1) * g
    v = b2 * st.get("v", 0) + (1 - b2) * g * g
    st["m"], st["v"] = m, v
    r = (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps) + wd * p
    pn, rn = np.linalg.norm(p), np.linalg.norm(r)
    trust = pn / rn if pn > 0 and rn > 0 else 1.0
    return p - lr * trust * r


CASES = [
    ("SGD", dict(learning_rate=0.1), ref_sgd, {}),
    ("SGD", dict(learning_rate=0.1, weight_decay=0.05), ref_sgd, {}),
    ("Momentum", dict(learning_rate=0.05, momentum=0.8), ref_momentum, dict(mu=0.8)),
    (
        "Momentum",
        dict(learning_rate=0.05, momentum=0.8, use_nesterov=True, weight_decay=0.01),
        ref_momentum,
        dict(mu=0.8, nesterov=True),
    ),
    ("Adam", dict(learning_rate=0.01), ref_adam, {}),
    (
        "Adam",
        dict(learning_rate=0.01, beta1=0.8, beta2=0.99, epsilon=1e-6, weight_decay=0.1),
        ref_adam,
        dict(b1=0.8, b2=0.99, eps=1e-6),
    ),
    ("AdamW", dict(learning_rate=0.01, weight_decay=0.1), ref_adam, dict(decoupled=True)),
    ("Adamax", dict(learning_rate=0.01), ref_adamax, {}),
    (
        "Adamax",
        dict(learning_rate=0.02, beta1=0.5, beta2=0.9, weight_decay=0.1),
        ref_adamax,
        dict(b1=0.5, b2=0.9),
    ),
    ("Adagrad", dict(learning_rate=0.1), ref_adagrad, {}),
    (
        "Adagrad",
        dict(learning_rate=0.1, initial_accumulator_value=0.5, epsilon=1e-4),
        ref_adagrad,
        dict(init=0.5, eps=1e-4),
    ),
    ("Adadelta", dict(learning_rate=1.0), ref_adadelta, {}),
    (
        "Adadelta",
        dict(learning_rate=0.5, rho=0.9, epsilon=1e-4, weight_decay=0.01),
        ref_adadelta,
        dict(rho=0.9, eps=1e-4),
    ),
    ("RMSProp", dict(learning_rate=0.01), ref_rmsprop, {}),
    (
        "RMSProp",
        dict(learning_rate=0.01, momentum=0.9, centered=True, rho=0.9),
        ref_rmsprop,
        dict(mu=0.9, centered=True, rho=0.9),
    ),
    ("Lamb", dict(learning_rate=0.01), ref_lamb, {}),
    ("Lamb", dict(learning_rate=0.01, lamb_weight_decay=0.0, beta1=0.8), ref_lamb, dict(b1=0.8)),
]


@pytest.mark.parametrize(
    "name,kwargs,ref,refkw", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_update_rule_matches_numpy(name, kwargs, ref, refkw):
    shapes = [(3, 5), (7,), (0, 2)]
    params, refs = zip(*[make_param(s, i) for i, s in enumerate(shapes)])
    grads = list(zip(*[grads_seq(s, 10 + i) for i, s in enumerate(shapes)]))
    opt = getattr(oar.optimizer, name)(parameters=list(params), **kwargs)
    run(opt, params, grads)
    lr = kwargs["learning_rate"]
    wd = kwargs.get(
        "weight_decay", kwargs.get("lamb_weight_decay", 0.01 if name == "Lamb" else 0.0)
    )
    if name == "AdamW" and "weight_decay" not in kwargs:
        wd = 0.01
    for i, (p, r) in enumerate(zip(params, refs)):
        st = {}
        for step in grads:
            r = ref(r, step[i].astype(np.float64), lr, wd, st, **refkw)
        np.testing.assert_allclose(p.numpy(), r, rtol=2e-5, atol=2e-6, err_msg=f"{name} param {i}")


def test_float64_params_and_multiple_groups_with_lr_scales():
    p1, r1 = make_param((4,), 1)
    p2, r2 = make_param((2, 2), 2)
    opt = oar.optimizer.SGD(
        learning_rate=0.1,
        parameters=[{"params": [p1]}, {"params": [p2], "learning_rate": 0.5, "weight_decay": 0.2}],
    )
    g1, g2 = grads_seq((4,), 3), grads_seq((2, 2), 4)
    run(opt, [p1, p2], list(zip(g1, g2)))
    for g in g1:
        r1 = r1 - 0.1 * g
    for g in g2:
        r2 = r2 - 0.05 * (g + 0.2 * r2)
    np.testing.assert_allclose(p1.numpy(), r1, rtol=1e-5)
    np.testing.assert_allclose(p2.numpy(), r2, rtol=1e-5)


def test_param_attr_learning_rate_and_regularizer_priority():
    attr = oar.ParamAttr(learning_rate=0.5, regularizer=L2Decay(0.3))
    lin = oar.nn.Linear(3, 2, weight_attr=attr)
    w0 = lin.weight.numpy().astype(np.float64)
    b0 = lin.bias.numpy().astype(np.float64)
    opt = oar.optimizer.SGD(learning_rate=0.1, parameters=lin.parameters(), weight_decay=0.01)
    x = oar.ones([1, 3])
    lin(x).sum().backward()
    gw, gb = lin.weight.grad.numpy().astype(np.float64), lin.bias.grad.numpy().astype(np.float64)
    opt.step()
    np.testing.assert_allclose(lin.weight.numpy(), w0 - 0.05 * (gw + 0.3 * w0), rtol=1e-5)
    np.testing.assert_allclose(lin.bias.numpy(), b0 - 0.1 * (gb + 0.01 * b0), rtol=1e-5)


def test_l1_decay():
    p, r = make_param((6,), 5)
    opt = oar.optimizer.Momentum(0.1, momentum=0.0, parameters=[p], weight_decay=L1Decay(0.2))
    g = grads_seq((6,), 6)
    run(opt, [p], [[x] for x in g])
    for x in g:
        r = r - 0.1 * (x + 0.2 * np.sign(r))
    np.testing.assert_allclose(p.numpy(), r, rtol=1e-5, atol=1e-6)


def test_adamw_apply_decay_param_fun_and_lr_ratio():
    p1, r1 = make_param((3,), 1)
    p2, r2 = make_param((3,), 2)
    p1.name, p2.name = "decay_me", "no_decay"
    opt = oar.optimizer.AdamW(
        0.01,
        parameters=[p1, p2],
        weight_decay=0.5,
        apply_decay_param_fun=lambda n: n == "decay_me",
        lr_ratio=lambda p: 0.5 if p.name == "no_decay" else 1.0,
    )
    g1, g2 = grads_seq((3,), 3), grads_seq((3,), 4)
    run(opt, [p1, p2], list(zip(g1, g2)))
    s1, s2 = {}, {}
    for a, b in zip(g1, g2):
        r1 = ref_adam(r1, a, 0.01, 0.5, s1, decoupled=True)
        r2 = ref_adam(r2, b, 0.005, 0.0, s2, decoupled=True)
    np.testing.assert_allclose(p1.numpy(), r1, rtol=1e-5)
    np.testing.assert_allclose(p2.numpy(), r2, rtol=1e-5)


@pytest.mark.parametrize("clip", ["value", "norm", "global"])
def test_grad_clip(clip):
    p1, r1 = make_param((4,), 1)
    p2, r2 = make_param((3,), 2)
    g1 = np.array([3.0, -4.0, 0.5, 0.0], np.float32)
    g2 = np.array([0.1, 0.2, -0.2], np.float32)
    c = {
        "value": ClipGradByValue(1.0, -0.15),
        "norm": ClipGradByNorm(1.0),
        "global": ClipGradByGlobalNorm(1.0),
    }[clip]
    opt = oar.optimizer.SGD(1.0, parameters=[p1, p2], grad_clip=c)
    run(opt, [p1, p2], [[g1, g2]])
    if clip == "value":
        e1, e2 = np.clip(g1, -0.15, 1.0), np.clip(g2, -0.15, 1.0)
    elif clip == "norm":
        e1 = g1 / np.linalg.norm(g1)
        e2 = g2  # norm 0.3 < 1: unchanged
    else:
        gn = np.sqrt((g1**2).sum() + (g2**2).sum())
        e1, e2 = g1 / gn, g2 / gn
    np.testing.assert_allclose(p1.numpy(), r1 - e1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(p2.numpy(), r2 - e2, rtol=1e-5, atol=1e-6)


def test_need_clip_false_skips_clipping():
    lin = oar.nn.Linear(2, 1, bias_attr=oar.ParamAttr(need_clip=False))
    opt = oar.optimizer.SGD(1.0, parameters=lin.parameters(), grad_clip=ClipGradByValue(1e-3))
    b0 = float(lin.bias)
    (lin(oar.ones([1, 2])) * 5.0).sum().backward()
    opt.step()
    assert abs(float(lin.bias) - (b0 - 5.0)) < 1e-5


def test_scheduler_drives_lr_and_set_lr():
    p, r = make_param((2,), 0)
    sched = oar.optimizer.lr.StepDecay(0.1, step_size=1, gamma=0.5)
    opt = oar.optimizer.SGD(sched, parameters=[p])
    gs = grads_seq((2,), 1)
    for g in gs:
        (p * oar.to_tensor(g)).sum().backward()
        opt.step()
        opt.clear_grad()
        r = r - sched.last_lr * g
        sched.step()
    np.testing.assert_allclose(p.numpy(), r, rtol=1e-5)
    assert opt.get_lr() == sched()
    with pytest.raises(RuntimeError, match="LRScheduler"):
        opt.set_lr(0.1)
    opt2 = oar.optimizer.SGD(0.1, parameters=[p])
    opt2.set_lr(0.3)
    assert opt2.get_lr() == 0.3


def test_bad_arguments():
    p, _ = make_param((2,))
    with pytest.raises(ValueError, match="parameters"):
        oar.optimizer.Adam(0.1)
    with pytest.raises(ValueError, match="beta1"):
        oar.optimizer.Adam(0.1, beta1=1.0, parameters=[p])
    with pytest.raises(ValueError, match="learning_rate"):
        oar.optimizer.SGD(-1.0, parameters=[p])
    with pytest.raises(TypeError, match="weight_decay"):
        oar.optimizer.SGD(0.1, parameters=[p], weight_decay="big")
    with pytest.raises(ValueError, match="more than one group"):
        oar.optimizer.SGD(0.1, parameters=[{"params": [p]}, {"params": [p]}])
    with pytest.raises(ValueError, match="rho"):
        oar.optimizer.RMSProp(0.1, rho=1.5, parameters=[p])


def build(seed):
    oar.seed(seed)
    return oar.nn.Sequential(oar.nn.Linear(4, 8), oar.nn.Tanh(), oar.nn.Linear(8, 3))


def train(model, opt, sched, data, steps):
    for x, y in data[:steps]:
        loss = oar.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        sched.step()


@pytest.mark.parametrize(
    "name", ["Adam", "AdamW", "Momentum", "RMSProp", "Adagrad", "Adadelta", "Adamax", "Lamb"]
)
def test_resume_equals_uninterrupted(tmp_path, name):
    rng = np.random.default_rng(0)
    data = [
        (
            oar.to_tensor(rng.normal(size=(6, 4)).astype(np.float32)),
            oar.to_tensor(rng.integers(0, 3, size=(6,))),
        )
        for _ in range(10)
    ]
    kw = {"RMSProp": dict(momentum=0.5, centered=True), "Momentum": dict(use_nesterov=True)}.get(
        name, {}
    )

    def make(model):
        sched = oar.optimizer.lr.CosineAnnealingDecay(0.05, T_max=10)
        clip = ClipGradByGlobalNorm(1.0)
        return getattr(oar.optimizer, name)(
            sched, parameters=model.parameters(), grad_clip=clip, **kw
        ), sched

    ref = build(0)
    opt, sched = make(ref)
    train(ref, opt, sched, data, 10)

    a = build(0)
    opt, sched = make(a)
    train(a, opt, sched, data, 4)
    oar.save(a.state_dict(), str(tmp_path / "m.pdparams"))
    oar.save(opt.state_dict(), str(tmp_path / "m.pdopt"))
    b = build(1)  # different init: everything must come from the checkpoint
    opt_b, sched_b = make(b)
    b.set_state_dict(oar.load(str(tmp_path / "m.pdparams")))
    opt_b.set_state_dict(oar.load(str(tmp_path / "m.pdopt")))
    assert sched_b.last_epoch == 4
    train(b, opt_b, sched_b, data[4:], 6)
    for (k, v1), v2 in zip(ref.state_dict().items(), b.state_dict().values()):
        np.testing.assert_array_equal(v1.numpy(), v2.numpy(), err_msg=k)


def test_set_state_dict_rejects_mismatch():
    p, _ = make_param((2,))
    q, _ = make_param((3,))
    opt = oar.optimizer.Adam(0.1, parameters=[p])
    (p * 1.0).sum().backward()
    opt.step()
    st = opt.state_dict()
    other = oar.optimizer.Adam(0.1, parameters=[q])
    with pytest.raises(ValueError, match="shape"):
        other.set_state_dict(st)
    two = oar.optimizer.Adam(0.1, parameters=[p, q])
    with pytest.raises(ValueError, match="parameters"):
        two.set_state_dict({**st, "@param_order": ["a"]})


def test_nn_utils_clip_and_vectors():
    from oar.nn import utils

    p1, _ = make_param((3,), 1)
    p2, _ = make_param((2, 2), 2)
    g1 = np.array([3.0, 0.0, -4.0], np.float32)
    g2 = np.full((2, 2), 6.0, np.float32)
    ((p1 * oar.to_tensor(g1)).sum() + (p2 * oar.to_tensor(g2)).sum()).backward()
    total = utils.clip_grad_norm_([p1, p2], max_norm=1.0)
    norm = np.sqrt((g1**2).sum() + (g2**2).sum())
    assert float(total) == pytest.approx(norm, rel=1e-5)
    np.testing.assert_allclose(p1.grad.numpy(), g1 / (norm + 1e-6), rtol=1e-5)
    inf = utils.clip_grad_norm_([p1, p2], max_norm=100.0, norm_type=float("inf"))
    assert float(inf) == pytest.approx(np.abs(g2).max() / (norm + 1e-6), rel=1e-5)
    utils.clip_grad_value_([p1, p2], 0.1)
    assert np.abs(p2.grad.numpy()).max() == pytest.approx(0.1)
    vec = utils.parameters_to_vector([p1, p2])
    np.testing.assert_array_equal(
        vec.numpy(), np.concatenate([p1.numpy().ravel(), p2.numpy().ravel()])
    )
    utils.vector_to_parameters(oar.arange(7, dtype="float32"), [p1, p2])
    np.testing.assert_array_equal(p2.numpy(), [[3, 4], [5, 6]])
    with pytest.raises(ValueError, match="7"):
        utils.vector_to_parameters(oar.ones([5]), [p1, p2])


@pytest.mark.parametrize(
    "name,group_kw,refkw",
    [
        ("Adam", dict(beta1=0.5, epsilon=1e-4), dict(b1=0.5, eps=1e-4)),
        ("Momentum", dict(momentum=0.3), dict(mu=0.3)),
        ("RMSProp", dict(rho=0.8, momentum=0.5), dict(rho=0.8, mu=0.5)),
    ],
)
def test_group_hyperparameters_override(name, group_kw, refkw):
    p1, r1 = make_param((4,), 1)
    p2, r2 = make_param((4,), 2)
    ref = {"Adam": ref_adam, "Momentum": ref_momentum, "RMSProp": ref_rmsprop}[name]
    opt = getattr(oar.optimizer, name)(
        learning_rate=0.01, parameters=[{"params": [p1]}, {"params": [p2], **group_kw}]
    )
    g1, g2 = grads_seq((4,), 3), grads_seq((4,), 4)
    run(opt, [p1, p2], list(zip(g1, g2)))
    base = {"Momentum": dict(mu=0.9)}.get(name, {})
    s1, s2 = {}, {}
    for a, b in zip(g1, g2):
        r1 = ref(r1, a, 0.01, 0.0, s1, **base)
        r2 = ref(r2, b, 0.01, 0.0, s2, **refkw)
    np.testing.assert_allclose(p1.numpy(), r1, rtol=2e-5, atol=1e-7)
    np.testing.assert_allclose(p2.numpy(), r2, rtol=2e-5, atol=1e-7)


@pytest.mark.parametrize("norm_type", [1.0, 2.0, 3.0, float("inf")])
def test_clip_grad_norm_every_order_against_numpy(norm_type):
    # the sums run as one p_norm pass per gradient (clip.py); the total and the scaled
    # gradients against NumPy's float64, for long gradients and a small one
    from oar.nn import utils

    rng = np.random.default_rng(int(norm_type) if norm_type != float("inf") else 9)
    shapes = [(300, 257), (5,), (64, 3, 3)]
    params, grads = [], []
    for i, s in enumerate(shapes):
        p, _ = make_param(s, i)
        g = rng.standard_normal(s).astype(np.float32)
        (p * oar.to_tensor(g)).sum().backward()
        params.append(p)
        grads.append(g.astype(np.float64))
    flat = np.concatenate([g.ravel() for g in grads])
    want = np.abs(flat).max() if norm_type == float("inf") else (np.abs(flat) ** norm_type).sum() ** (1 / norm_type)
    total = utils.clip_grad_norm_(params, max_norm=0.5, norm_type=norm_type)
    assert float(total) == pytest.approx(want, rel=2e-6)
    for p, g in zip(params, grads):
        np.testing.assert_allclose(p.grad.numpy(), g * (0.5 / (want + 1e-6)), rtol=2e-6, atol=1e-9)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_clip_grad_by_global_norm_against_numpy(dtype):
    rng = np.random.default_rng(4)
    gs = [rng.standard_normal(s) for s in [(513, 129), (7,), (1,)]]
    pairs = []
    for i, g in enumerate(gs):
        p, _ = make_param(g.shape, i)
        t = oar.to_tensor(g).astype(dtype)
        pairs.append((p, t))
        gs[i] = t.astype("float64").numpy()  # the values the clip sees
    norm = np.sqrt(sum((g ** 2).sum() for g in gs))
    clip = ClipGradByGlobalNorm(2.0)
    assert clip.global_norm(pairs) == pytest.approx(norm, rel=1e-6)
    out = clip(pairs)
    rtol = 2.0 ** -8 if dtype == "bfloat16" else 1e-6
    for (p, g), want in zip(out, gs):
        assert g.dtype == pairs[0][1].dtype
        np.testing.assert_allclose(g.astype("float64").numpy(), want * (2.0 / norm), rtol=rtol)
    # under the bound: the gradients pass through untouched
    assert ClipGradByGlobalNorm(norm * 2)(pairs)[0][1] is pairs[0][1]

"""NAdam, RAdam, Rprop and ASGD (fused C++ updates, phi_kernels/cpu/optimizer_kernels_more.cc)
against NumPy float64 transcriptions of Paddle's documented update rules over several steps
(gradients of a fixed quadratic): float32 and float64 parameters, odd and 0-size shapes,
several parameters in one update, weight decay, parameter groups, state_dict round trips, bad
arguments."""
import math

import numpy as np
import pytest

import oar

RNG = np.random.default_rng(7)
W0 = RNG.standard_normal((3, 4)).astype(np.float32)
A = RNG.standard_normal((3, 4))


def _grad(w, k, a=None):
    """Gradient of sum(a * w^2 / 2) + k-dependent linear term: signs change across steps."""
    a = A if a is None else a
    return a * w + math.sin(k) * a[::-1]


def np_nadam(w, steps, lr=0.1, b1=0.9, b2=0.999, eps=1e-8, psi=0.004, wd=0.0, a=None):
    m = v = 0
    prod = 1.0
    for t in range(1, steps + 1):
        g = _grad(w, t, a) + wd * w
        mu, mu1 = b1 * (1 - 0.5 * 0.96 ** (t * psi)), b1 * (1 - 0.5 * 0.96 ** ((t + 1) * psi))
        prod *= mu
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        mh = mu1 * m / (1 - prod * mu1) + (1 - mu) * g / (1 - prod)
        w = w - lr * mh / (np.sqrt(v / (1 - b2 ** t)) + eps)
    return w


def np_radam(w, steps, lr=0.1, b1=0.9, b2=0.999, eps=1e-8, wd=0.0, a=None):
    m = v = 0
    rho_inf = 2 / (1 - b2) - 1
    for t in range(1, steps + 1):
        g = _grad(w, t, a) + wd * w
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        mh = m / (1 - b1 ** t)
        rho = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
        if rho > 5:
            r = math.sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho))
            w = w - lr * mh * r * math.sqrt(1 - b2 ** t) / (np.sqrt(v) + eps)
        else:
            w = w - lr * mh
    return w


def np_rprop(w, steps, lr=0.01, lo=1e-4, hi=0.05, etas=(0.5, 1.2), a=None):
    prev, size = np.zeros_like(w), np.full_like(w, lr)
    for t in range(1, steps + 1):
        g = _grad(w, t, a)
        s = np.sign(g * prev)
        size = np.clip(size * np.where(s > 0, etas[1], np.where(s < 0, etas[0], 1.0)), lo, hi)
        g = np.where(s < 0, 0.0, g)
        w = w - np.sign(g) * size
        prev = g
    return w


def np_asgd(w, steps, lr=0.1, n=3, wd=0.0, a=None):
    d, ys = 0, {}
    for m in range(steps):
        g = _grad(w, m + 1, a)
        i = m % n
        d = d - ys.get(i, 0) + g
        ys[i] = g
        w = w - lr * (d / min(m + 1, n) + wd * w)
    return w


CASES = [
    ("NAdam", dict(learning_rate=0.1), np_nadam, {}),
    ("NAdam", dict(learning_rate=0.05, weight_decay=0.1, momentum_decay=0.01), np_nadam,
     dict(lr=0.05, wd=0.1, psi=0.01)),
    ("RAdam", dict(learning_rate=0.1), np_radam, {}),
    ("RAdam", dict(learning_rate=0.1, beta2=0.5, weight_decay=0.05), np_radam, dict(b2=0.5, wd=0.05)),
    ("Rprop", dict(learning_rate=0.01, learning_rate_range=(1e-4, 0.05)), np_rprop, {}),
    ("ASGD", dict(learning_rate=0.1, batch_num=3), np_asgd, {}),
    ("ASGD", dict(learning_rate=0.1, batch_num=2, weight_decay=0.1), np_asgd, dict(n=2, wd=0.1)),
]


def _run(cls, kwargs, steps, dtype="float32", inits=(W0,), coefs=(A,)):
    """`steps` steps of optimizer `cls` over one parameter per init (all in one update)."""
    ws = []
    for w0 in inits:
        w = oar.create_parameter(list(w0.shape), dtype)
        w.set_value(w0.astype(dtype))
        ws.append(w)
    opt = getattr(oar.optimizer, cls)(parameters=ws, **kwargs)
    for t in range(1, steps + 1):
        loss = None
        for w, a in zip(ws, coefs):
            term = (oar.to_tensor(a, dtype) * w * w / 2 + w * oar.to_tensor(math.sin(t) * a[::-1].copy(), dtype)).sum()
            loss = term if loss is None else loss + term
        loss.backward()
        opt.step()
        opt.clear_grad()
    return (ws[0] if len(ws) == 1 else ws), opt


@pytest.mark.parametrize("cls, kwargs, ref, ref_kw", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_matches_numpy(cls, kwargs, ref, ref_kw):
    for steps in (1, 7):
        w, _ = _run(cls, kwargs, steps)
        np.testing.assert_allclose(w.numpy(), ref(W0.astype(np.float64), steps, **ref_kw),
                                   rtol=2e-5, atol=2e-6, err_msg=f"{cls} after {steps} steps")


@pytest.mark.parametrize("cls, kwargs, ref, ref_kw", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_float64_odd_and_empty_shapes_match_numpy(cls, kwargs, ref, ref_kw):
    """float64 parameters (float64 state, as Paddle's accumulators) of odd, 1-element and
    0-size shapes in one update, each against NumPy to float64 rounding."""
    shapes = [(5, 3), (1,), (0, 4), (7,)]
    rng = np.random.default_rng(11)
    inits = [rng.standard_normal(sh) for sh in shapes]
    coefs = [rng.standard_normal(sh) for sh in shapes]
    ws, opt = _run(cls, kwargs, 7, "float64", inits, coefs)
    for w, w0, a, sh in zip(ws, inits, coefs, shapes):
        assert w.dtype == oar.float64 and list(w.shape) == list(sh)
        np.testing.assert_allclose(w.numpy(), ref(w0, 7, a=a, **ref_kw), rtol=1e-12, atol=1e-13,
                                   err_msg=f"{cls} {sh}")
    assert {t.dtype for acc in opt._accumulators.values() for t in acc.values()} == {oar.float64}


def test_fused_bindings_reject_bad_states():
    """The bindings name the rule and what is wrong: a state of the wrong size, a missing
    state list, a step count of 0, ASGD's window not batch_num long."""
    w = oar.create_parameter([3], "float32")
    g = oar.ones([3], "float32")
    z3, z2 = oar.zeros([3], "float32"), oar.zeros([2], "float32")
    before = w.numpy().copy()
    with pytest.raises(ValueError, match="nadam: state 'mu_product' must be contiguous float32 with 3 elements "
                                         "for a float32 parameter, got float32 with 2"):
        oar._C._nadam_update([w], [g], [z3], [z3], [z2], [0.1], [0.0], 0.9, 0.999, 1e-8, 0.004, 1)
    w64, g64 = oar.create_parameter([3], "float64"), oar.ones([3], "float64")
    with pytest.raises(ValueError, match="nadam: state 'moment1' must be contiguous float64 with 3 elements "
                                         "for a float64 parameter, got float32 with 3"):
        oar._C._nadam_update([w64], [g64], [z3], [z3], [z3], [0.1], [0.0], 0.9, 0.999, 1e-8, 0.004, 1)
    with pytest.raises(ValueError, match="radam: the step count must be >= 1, got 0"):
        oar._C._radam_update([w], [g], [z3], [z3], [0.1], [0.0], 0.9, 0.999, 1e-8, 0)
    with pytest.raises(ValueError, match="rprop: got 1 parameters but 0 step_size"):
        oar._C._rprop_update([w], [g], [z3], [], [0.1], [0.0], 0.5, 1.2, 1e-5, 50.0)
    with pytest.raises(ValueError, match="asgd: state 'y' must be contiguous float32 with 6 elements for a "
                                         "float32 parameter, got float32 with 3"):
        oar._C._asgd_update([w], [g], [z3], [z3], [0.1], [0.0], 2, 1)
    with pytest.raises(ValueError, match="asgd: batch_num must be a positive integer, got 0"):
        oar._C._asgd_update([w], [g], [z3], [z3], [0.1], [0.0], 0, 1)
    np.testing.assert_array_equal(w.numpy(), before)  # nothing written


@pytest.mark.parametrize("cls, kwargs", [(c[0], c[1]) for c in CASES[::2]])
def test_state_dict_round_trip_continues_identically(cls, kwargs):
    w, opt = _run(cls, kwargs, 3)
    state = {k: (v.numpy().copy() if isinstance(v, oar.Tensor) else v) for k, v in opt.state_dict().items()}
    w2 = oar.create_parameter([3, 4], "float32")
    w2.set_value(w.numpy())
    opt2 = getattr(oar.optimizer, cls)(parameters=[w2], **kwargs)
    opt2.set_state_dict(state)
    for p, o in ((w, opt), (w2, opt2)):
        (oar.to_tensor(A, "float32") * p * p).sum().backward()
        o.step()
    np.testing.assert_allclose(w2.numpy(), w.numpy(), rtol=1e-6)  # ASGD's window (y) included


def test_parameter_groups_and_bad_arguments():
    a, b = oar.create_parameter([2], "float32"), oar.create_parameter([2], "float32")
    opt = oar.optimizer.NAdam(learning_rate=0.1, parameters=[{"params": [a]},
                                                             {"params": [b], "beta1": 0.5}])
    (a.sum() + b.sum()).backward()
    before = b.numpy().copy()
    opt.step()
    assert not np.allclose(b.numpy(), before)
    with pytest.raises(ValueError, match="NAdam: beta1 must be in"):
        oar.optimizer.NAdam(beta1=1.5, parameters=[a])
    with pytest.raises(ValueError, match="NAdam: momentum_decay must be >= 0"):
        oar.optimizer.NAdam(momentum_decay=-1, parameters=[a])
    with pytest.raises(ValueError, match="RAdam: epsilon must be >= 0"):
        oar.optimizer.RAdam(epsilon=-1, parameters=[a])
    with pytest.raises(ValueError, match="Rprop: need 0 < learning_rate_range"):
        oar.optimizer.Rprop(learning_rate=1.0, learning_rate_range=(0.1, 0.5), parameters=[a])
    with pytest.raises(ValueError, match="Rprop: need 0 < etas"):
        oar.optimizer.Rprop(etas=(1.5, 2.0), parameters=[a])
    with pytest.raises(ValueError, match="ASGD: batch_num must be a positive int, got 0"):
        oar.optimizer.ASGD(batch_num=0, parameters=[a])
    with pytest.raises(ValueError, match="'parameters' is required"):
        oar.optimizer.ASGD(batch_num=2 ** 62)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rprop_nan_gradient_makes_the_parameter_nan(dtype):
    """Paddle's Rprop steps by sign(g): a NaN gradient gives a NaN parameter (never a silent
    finite step), an infinite one a step of the current size; the other entries as NumPy."""
    w0 = np.linspace(-1, 1, 7)
    c = np.array([0.5, np.nan, -2.0, np.inf, -np.inf, 0.0, 3.0])
    w = oar.create_parameter([7], dtype)
    w.set_value(w0.astype(dtype))
    opt = oar.optimizer.Rprop(learning_rate=0.01, parameters=[w])
    (w * oar.to_tensor(c, dtype)).sum().backward()
    opt.step()
    ref = w0 - np.sign(c) * 0.01
    got = w.numpy()
    assert np.isnan(got[1]) and np.isnan(ref[1])
    np.testing.assert_allclose(got, ref, rtol=1e-6, equal_nan=True)

"""oar.optimizer.lr: learning-rate sequences against the closed forms in Paddle's docs."""

import math

import numpy as np

import pytest

import oar
from oar.optimizer import lr


def seq(s, n=12):
    out = []
    for _ in range(n):
        out.append(s())
        s.step()
    return out


def check(s, f, n=12):
    assert seq(s, n) == pytest.approx([f(e) for e in range(n)], rel=1e-12, abs=1e-15)


def test_step_multistep_exponential():
    check(lr.StepDecay(0.5, step_size=3, gamma=0.1), lambda e: 0.5 * 0.1 ** (e // 3))
    check(
        lr.MultiStepDecay(0.5, milestones=[2, 5, 9], gamma=0.5),
        lambda e: 0.5 * 0.5 ** sum(e >= m for m in [2, 5, 9]),
    )
    check(lr.ExponentialDecay(0.5, gamma=0.9), lambda e: 0.5 * 0.9**e)
    check(lr.NaturalExpDecay(0.5, gamma=0.1), lambda e: 0.5 * math.exp(-0.1 * e))
    check(lr.InverseTimeDecay(0.5, gamma=0.1), lambda e: 0.5 / (1 + 0.1 * e))


def test_piecewise_lambda_multiplicative():
    check(
        lr.PiecewiseDecay([3, 6], [1.0, 0.5, 0.1]),
        lambda e: 1.0 if e < 3 else 0.5 if e < 6 else 0.1,
    )
    check(lr.LambdaDecay(0.5, lambda e: 0.95**e), lambda e: 0.5 * 0.95**e)
    check(lr.MultiplicativeDecay(0.5, lambda e: 0.9), lambda e: 0.5 * 0.9**e)
    with pytest.raises(ValueError, match="PiecewiseDecay"):
        lr.PiecewiseDecay([3, 6], [1.0, 0.5])


def test_noam():
    d, w = 64, 4
    check(
        lr.NoamDecay(d, w, learning_rate=2.0),
        lambda e: 2.0 * d**-0.5 * min(1 if e == 0 else e**-0.5, w**-1.5 * e),
    )


def test_polynomial():
    check(
        lr.PolynomialDecay(0.5, decay_steps=5, end_lr=0.01, power=2.0),
        lambda e: (0.5 - 0.01) * (1 - min(e, 5) / 5) ** 2 + 0.01,
    )

    def cyc(e):
        steps = 5 * (1 if e == 0 else math.ceil(e / 5))
        return (0.5 - 0.01) * (1 - e / steps) ** 1.0 + 0.01

    check(lr.PolynomialDecay(0.5, decay_steps=5, end_lr=0.01, cycle=True), cyc)


def test_cosine_annealing_matches_closed_form_and_epoch_step():
    T, eta = 8, 0.01
    check(
        lr.CosineAnnealingDecay(0.5, T_max=T, eta_min=eta),
        lambda e: eta + (0.5 - eta) * (1 + math.cos(math.pi * e / T)) / 2,
        n=T + 1,
    )
    s = lr.CosineAnnealingDecay(0.5, T_max=T, eta_min=eta)
    s.step(3)
    assert s() == pytest.approx(eta + (0.5 - eta) * (1 + math.cos(math.pi * 3 / T)) / 2)
    with pytest.raises(ValueError, match="T_max"):
        lr.CosineAnnealingDecay(0.5, T_max=0)


def test_linear_warmup_float_and_scheduler():
    check(
        lr.LinearWarmup(0.5, warmup_steps=4, start_lr=0.0, end_lr=0.5),
        lambda e: 0.5 * e / 4 if e < 4 else 0.5,
    )
    inner = lr.StepDecay(0.5, step_size=2, gamma=0.5)
    check(
        lr.LinearWarmup(inner, warmup_steps=3, start_lr=0.1, end_lr=0.5),
        lambda e: 0.1 + 0.4 * e / 3 if e < 3 else 0.5 * 0.5 ** ((e - 3) // 2),
    )


def test_one_cycle():
    total, mx, div, end, pct = 20, 1.0, 25.0, 1e-4, 0.3
    init = mx / div
    up_end = pct * total - 1

    def f(e):
        def cos(a, b, p):
            return b + (a - b) / 2 * (math.cos(math.pi * p) + 1)

        if e <= up_end:
            return cos(init, mx, e / up_end)
        return cos(mx, end, (e - up_end) / (total - 1 - up_end))

    check(
        lr.OneCycleLR(mx, total, divide_factor=div, end_learning_rate=end, phase_pct=pct),
        f,
        n=total,
    )
    lin = seq(lr.OneCycleLR(mx, total, anneal_strategy="linear"), total)
    assert lin[0] == pytest.approx(init) and max(lin) == pytest.approx(mx)
    three = seq(lr.OneCycleLR(mx, total, three_phase=True), total)
    assert three[0] == pytest.approx(init) and three[-1] == pytest.approx(1e-4)


def test_cyclic():
    base, mx, up, down = 0.1, 1.0, 3, 2

    def f(e, scale=lambda c, it: 1.0):
        cycle = 1 + e // (up + down)
        x = 1.0 + e / (up + down) - cycle
        frac = x / (up / (up + down)) if x <= up / (up + down) else (1 - x) / (1 - up / (up + down))
        return base + (mx - base) * frac * scale(cycle, e)

    check(lr.CyclicLR(base, mx, up, down), f)
    check(
        lr.CyclicLR(base, mx, up, down, mode="triangular2"),
        lambda e: f(e, lambda c, it: 1 / 2 ** (c - 1)),
    )
    check(
        lr.CyclicLR(base, mx, up, down, mode="exp_range", exp_gamma=0.9),
        lambda e: f(e, lambda c, it: 0.9**it),
    )


def test_reduce_on_plateau():
    s = lr.ReduceOnPlateau(1.0, factor=0.5, patience=1, cooldown=1, min_lr=0.2)
    got = []
    for m in [5, 4, 4, 4, 4, 4, 4, 4, 4]:
        s.step(m)
        got.append(s())
    # best 4 at step 2; bad epochs 1, 2 (>patience) -> halve, cooldown 1, then bad 1, 2 -> halve
    assert got == [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25]
    s.step(oar.to_tensor([1.0]))
    s.step(np.array([0.5], dtype="float32"))  # Paddle's example passes a NumPy array
    with pytest.raises(ValueError, match="one element"):
        s.step(oar.to_tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="one element"):
        s.step(np.zeros(3))
    mx = lr.ReduceOnPlateau(1.0, mode="max", patience=0, threshold_mode="abs", threshold=0.5)
    mx.step(1.0)
    mx.step(1.2)  # not better by 0.5
    assert mx() == pytest.approx(0.1)


def test_state_dict_roundtrip_and_verbose(capsys):
    a = lr.CosineAnnealingDecay(0.5, T_max=10)
    for _ in range(4):
        a.step()
    b = lr.CosineAnnealingDecay(0.5, T_max=10)
    b.set_state_dict(a.state_dict())
    assert seq(a, 5) == seq(b, 5)
    w = lr.LinearWarmup(lr.StepDecay(0.5, 2), 2, 0.0, 0.5)
    for _ in range(5):
        w.step()
    w2 = lr.LinearWarmup(lr.StepDecay(0.5, 2), 2, 0.0, 0.5)
    w2.set_state_dict(w.state_dict())
    assert seq(w, 4) == seq(w2, 4)
    lr.StepDecay(0.5, 2, verbose=True)
    assert "set learning rate to 0.5" in capsys.readouterr().out


def test_linear_lr():
    check(
        lr.LinearLR(0.6, total_steps=5, start_factor=0.25, end_factor=1.0),
        lambda e: 0.6 * (0.25 + 0.75 * min(e, 5) / 5),
    )
    s = lr.LinearLR(0.6, total_steps=5, start_factor=0.5)
    s.step(3)
    assert s() == pytest.approx(0.6 * (0.5 + 0.5 * 3 / 5))
    with pytest.raises(ValueError, match="start_factor"):
        lr.LinearLR(0.1, 5, start_factor=0.0)


def test_cosine_warm_restarts():
    T0, eta = 3, 0.01

    def f(e, mult):
        t_i, t_cur = T0, e
        while t_cur >= t_i:
            t_cur -= t_i
            t_i *= mult
        return eta + (0.5 - eta) * (1 + math.cos(math.pi * t_cur / t_i)) / 2

    check(lr.CosineAnnealingWarmRestarts(0.5, T_0=T0, eta_min=eta), lambda e: f(e, 1), n=10)
    check(
        lr.CosineAnnealingWarmRestarts(0.5, T_0=T0, T_mult=2, eta_min=eta), lambda e: f(e, 2), n=22
    )
    s = lr.CosineAnnealingWarmRestarts(0.5, T_0=T0, T_mult=2, eta_min=eta)
    s.step(10)
    assert s() == pytest.approx(f(10, 2))
    a = lr.CosineAnnealingWarmRestarts(0.5, T_0=T0, T_mult=2)
    for _ in range(5):
        a.step()
    b = lr.CosineAnnealingWarmRestarts(0.5, T_0=T0, T_mult=2)
    b.set_state_dict(a.state_dict())
    assert seq(a, 8) == seq(b, 8)


@pytest.mark.parametrize("fn, args, cls, attrs", [
    ("noam_decay", (2, 200, 0.01), "NoamDecay", {}),
    ("exponential_decay", (0.1, 10, 0.5), "ExponentialDecay", {}),
    ("natural_exp_decay", (0.1, 10, 0.5), "NaturalExpDecay", {}),
    ("inverse_time_decay", (0.1, 10, 0.5), "InverseTimeDecay", {}),
    ("polynomial_decay", (0.01, 5000, 0.0, 1.0), "PolynomialDecay", {}),
    ("piecewise_decay", ([3, 6], [0.1, 0.01, 0.001]), "PiecewiseDecay", {}),
    ("cosine_decay", (0.1, 10000, 120), "CosineAnnealingDecay", {}),
    ("linear_lr_warmup", (0.1, 5, 0.0, 0.1), "LinearWarmup", {}),
])
def test_functional_decays_return_their_scheduler(fn, args, cls, attrs):
    sched = getattr(lr, fn)(*args)
    assert type(sched) is getattr(lr, cls)
    lrs = []
    for _ in range(8):
        lrs.append(sched())
        sched.step()
    assert all(v >= 0 for v in lrs) and any(v > 0 for v in lrs)

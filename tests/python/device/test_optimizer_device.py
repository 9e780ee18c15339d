"""The optimizers' fused updates and GradScaler's inf check run where the parameters are
(Note [Devices]): a device's update kernel ("adam_update", registered through the C kernel
API: the sample device has sgd and adam) when it registers one, else the CPU's on host
copies with the fallback's warning once; FLAGS_enable_api_kernel_fallback=0 makes that an
error naming the update, the device and the dtypes it has."""
import os
import subprocess
import sys

import numpy as np
import pytest

import oar
from sample_plugin import sample_plugin_path

RNG = np.random.default_rng(0)
P0 = [RNG.standard_normal((3, 4)), RNG.standard_normal((5,))]   # float64 parameters
C = [RNG.uniform(0.5, 1.5, (3, 4)), RNG.uniform(0.5, 1.5, (5,))]  # loss = sum(c * p^2) / 2: grad c * p


def run(make_opt, device, steps=3, dtype="float64"):
    params = [oar.to_tensor(p.astype(dtype), place=device, stop_gradient=False) for p in P0]
    opt = make_opt(params)
    for _ in range(steps):
        loss = sum(((oar.to_tensor(c.astype(dtype), place=device) * p * p).sum() * 0.5) for c, p in zip(C, params))
        loss.backward()
        opt.step()
        opt.clear_grad()
    for p in params:
        assert p.place.device_str() == device
    return [p.numpy() for p in params]


def numpy_sgd(lr, wd, steps=3):
    ps = [p.copy() for p in P0]
    for _ in range(steps):
        ps = [p - lr * (c * p + wd * p) for p, c in zip(ps, C)]
    return ps


def numpy_momentum(lr, mu, nesterov, steps=3):
    ps, vs = [p.copy() for p in P0], [np.zeros_like(p) for p in P0]
    for _ in range(steps):
        for i, c in enumerate(C):
            g = c * ps[i]
            vs[i] = mu * vs[i] + g
            ps[i] = ps[i] - lr * (g + mu * vs[i] if nesterov else vs[i])
    return ps


def numpy_adam(lr, b1, b2, eps, steps=3):
    ps, m, v = [p.copy() for p in P0], [np.zeros_like(p) for p in P0], [np.zeros_like(p) for p in P0]
    for t in range(1, steps + 1):
        for i, c in enumerate(C):
            g = c * ps[i]
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            lr_t = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
            ps[i] = ps[i] - lr_t * m[i] / (np.sqrt(v[i]) + eps * np.sqrt(1 - b2 ** t))
    return ps


CASES = {
    "sgd": (lambda ps: oar.optimizer.SGD(0.1, parameters=ps, weight_decay=0.01), numpy_sgd(0.1, 0.01)),
    "momentum": (lambda ps: oar.optimizer.Momentum(0.1, 0.9, parameters=ps), numpy_momentum(0.1, 0.9, False)),
    "nesterov": (lambda ps: oar.optimizer.Momentum(0.1, 0.9, parameters=ps, use_nesterov=True),
                 numpy_momentum(0.1, 0.9, True)),
    "adam": (lambda ps: oar.optimizer.Adam(0.05, parameters=ps), numpy_adam(0.05, 0.9, 0.999, 1e-8)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_updates_match_numpy_in_float64(device, name):
    make, want = CASES[name]
    got = run(make, device)
    for g, w in zip(got, want):
        # float64 parameters keep float64 state, as Paddle's accumulators
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


OTHERS = {
    "adamw": lambda ps: oar.optimizer.AdamW(0.05, parameters=ps, weight_decay=0.1),
    "adamax": lambda ps: oar.optimizer.Adamax(0.05, parameters=ps),
    "adagrad": lambda ps: oar.optimizer.Adagrad(0.1, parameters=ps),
    "adadelta": lambda ps: oar.optimizer.Adadelta(1.0, parameters=ps),
    "rmsprop": lambda ps: oar.optimizer.RMSProp(0.01, parameters=ps),
    "rmsprop_centered": lambda ps: oar.optimizer.RMSProp(0.01, momentum=0.5, centered=True, parameters=ps),
    "lamb": lambda ps: oar.optimizer.Lamb(0.05, parameters=ps),
}


DEVICE_KERNELS = {"sgd", "adam", "adamw"}  # rules the sample device has its own kernel for


@pytest.mark.parametrize("name", sorted(OTHERS) + ["sgd", "adam"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_rule_on_the_device_matches_the_cpu(sample, name, dtype):
    make = OTHERS[name] if name in OTHERS else CASES[name][0]
    cpu = run(make, "cpu", dtype=dtype)
    dev = run(make, "sample:0", dtype=dtype)
    for c, d in zip(cpu, dev):
        assert not np.allclose(c, P0[0] if c.shape == P0[0].shape else P0[1])  # it moved
        if name in DEVICE_KERNELS:  # the device's own kernel: the same math, other rounding
            np.testing.assert_allclose(d, c, rtol=1e-6 if dtype == "float32" else 1e-12, atol=1e-7)
        else:
            np.testing.assert_array_equal(d, c)  # the same CPU kernel on the same numbers


@pytest.mark.parametrize("name", ["sgd", "adam", "adamw"])
def test_device_update_kernels_run_with_the_fallback_off(sample, name):
    """sgd/adam/adamw run on the sample device's own C update kernels: nothing falls back."""
    make = OTHERS[name] if name in OTHERS else CASES[name][0]
    cpu = run(make, "cpu", dtype="float32")
    oar.set_flags({"FLAGS_enable_api_kernel_fallback": False})
    try:
        dev = run(make, "sample:0", dtype="float32")
    finally:
        oar.set_flags({"FLAGS_enable_api_kernel_fallback": True})
    for c, d in zip(cpu, dev):
        np.testing.assert_allclose(d, c, rtol=1e-6, atol=1e-7)


def test_device_update_falls_back_with_one_warning():
    """A fresh process (the warning is once per process): SGD on sample:0 twice warns once."""
    code = (
        "import oar\n"
        f"oar.device.load_plugin({sample_plugin_path()!r})\n"
        "p = oar.to_tensor([1.0, 2.0, 3.0], place='sample:0', stop_gradient=False)\n"
        "opt = oar.optimizer.Momentum(0.1, 0.9, parameters=[p])\n"
        "for _ in range(2):\n"
        "    (p * p).sum().backward(); opt.step(); opt.clear_grad()\n"
        "print(p.place.device_str())\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=os.environ)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "sample:0"
    warning = "oar: warning: momentum_update has no sample kernel for float32; running its CPU kernel with copies"
    assert r.stderr.count(warning) == 1, r.stderr


def test_flag_off_makes_a_device_update_an_error(sample):
    p = oar.to_tensor([1.0, -2.0, 3.0, 0.5], place="sample:0", stop_gradient=False)
    opt = oar.optimizer.Momentum(0.1, 0.9, parameters=[p])
    (p * p).sum().backward()
    opt.step()  # makes the velocity
    before = p.numpy()
    oar.set_flags({"FLAGS_enable_api_kernel_fallback": False})
    try:
        with pytest.raises(TypeError, match=r"momentum_update: no kernel on sample:0 for dtype float32 \(its "
                                            r"kernels there: none\) and FLAGS_enable_api_kernel_fallback is off"):
            opt.step()
    finally:
        oar.set_flags({"FLAGS_enable_api_kernel_fallback": True})
    np.testing.assert_array_equal(p.numpy(), before)  # nothing was written
    opt.step()
    assert not np.array_equal(p.numpy(), before)


def test_parameters_on_two_places_are_an_error(sample):
    a = oar.to_tensor([1.0, 2.0], place="sample:0", stop_gradient=False)
    b = oar.to_tensor([1.0, 2.0], place="cpu", stop_gradient=False)
    for p in (a, b):
        (p * p).sum().backward()
    opt = oar.optimizer.SGD(0.1, parameters=[a, b])
    with pytest.raises(ValueError, match=r"sgd_update: parameters\[1\] is on cpu but the update runs on sample:0"):
        opt.step()


def test_grad_scaler_finds_inf_on_the_device(device):
    def step(x):
        p = oar.to_tensor(np.array([1.0, 2.0, 3.0], "float32"), place=device, stop_gradient=False)
        opt = oar.optimizer.SGD(0.5, parameters=[p])
        scaler = oar.amp.GradScaler(init_loss_scaling=1024.0)
        loss = (p * oar.to_tensor(x, place=device)).sum()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return p.numpy(), scaler.get_loss_scaling()

    finite, scale = step(np.array([1.0, -1.0, 2.0], "float32"))
    # the gradient x, unscaled exactly (1024 is a power of two)
    np.testing.assert_allclose(finite, [1.0 - 0.5, 2.0 + 0.5, 3.0 - 1.0], rtol=1e-6)
    assert float(scale) == 1024.0
    for bad in (np.inf, np.nan):
        kept, scale = step(np.array([1.0, bad, 2.0], "float32"))
        np.testing.assert_array_equal(kept, [1.0, 2.0, 3.0])  # the step was skipped
        assert float(scale) == 512.0


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_converted_training_step_updates_the_parameters_on_the_device(device, name):
    """to_static over forward, backward and opt.step() (Note [Training steps]): the update
    step of the program runs where the parameters are. On a device it ran on host copies of
    them and trained nothing, silently."""
    make_opt, want = CASES[name]
    params = [oar.to_tensor(p, place=device, stop_gradient=False) for p in P0]
    cs = [oar.to_tensor(c, place=device) for c in C]
    opt = make_opt(params)

    @oar.jit.to_static
    def step():
        loss = sum(((c * p * p).sum() * 0.5) for c, p in zip(cs, params))
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss

    for _ in range(3):
        step()
    assert step.concrete_programs[0].executor.place.device_str() == device
    for p, w in zip(params, want):
        assert p.place.device_str() == device
        np.testing.assert_allclose(p.numpy(), w, rtol=1e-10, atol=1e-12)

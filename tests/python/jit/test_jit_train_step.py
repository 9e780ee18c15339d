"""A whole training step inside to_static (Note [Training steps] in docs/notes/jit.md):
`loss.backward()` or `Optimizer.step()` in the converted function cannot be recorded
(the multi-tensor updates are bindings, and a traced backward would run once), so the
signature runs eagerly, with one warning naming the call: the parameters end exactly
where eager training leaves them, never a program that skips the update."""
import warnings

import numpy as np
import pytest

import oar


def make(seed=0):
    oar.seed(seed)
    net = oar.nn.Sequential(oar.nn.Linear(6, 8), oar.nn.Tanh(), oar.nn.Linear(8, 1))
    return net


def data(steps):
    rng = np.random.default_rng(4)
    return [(rng.standard_normal((5, 6)).astype("float32"), rng.standard_normal((5, 1)).astype("float32"))
            for _ in range(steps)]


@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_backward_and_step_inside_to_static_run_eagerly(opt_name):
    results = []
    for convert in (False, True):
        net = make()
        opt = getattr(oar.optimizer, opt_name)(learning_rate=0.05, parameters=net.parameters())

        def step(x, y):
            loss = ((net(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss

        fn = oar.jit.to_static(step) if convert else step
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            losses = [float(fn(oar.to_tensor(x), oar.to_tensor(y))) for x, y in data(1) * 4]
        msgs = [str(w.message) for w in caught if "to_static" in str(w.message)]
        if convert:
            # one warning for the signature (its later calls run eagerly from the cache)
            assert len(msgs) == 1 and "calls Tensor.backward() inside the converted function" in msgs[0], msgs
            assert "loss.backward()" in msgs[0]
        else:
            assert not msgs
        results.append((losses, [p.numpy().copy() for p in net.parameters()]))
    (eager_l, eager_p), (conv_l, conv_p) = results
    np.testing.assert_allclose(conv_l, eager_l, rtol=1e-6)
    assert conv_l[-1] < conv_l[0]
    for a, b in zip(conv_p, eager_p):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_step_alone_inside_to_static_runs_eagerly():
    net = make(1)
    ref = make(1)
    opt = oar.optimizer.SGD(learning_rate=0.1, parameters=net.parameters())
    ref_opt = oar.optimizer.SGD(learning_rate=0.1, parameters=ref.parameters())

    @oar.jit.to_static
    def update(scale):
        opt.step()
        return scale * 2.0

    for model, o, conv in ((net, opt, True), (ref, ref_opt, False)):
        x, y = data(1)[0]
        ((model(oar.to_tensor(x)) - oar.to_tensor(y)) ** 2).mean().backward()
        if conv:
            with pytest.warns(UserWarning, match=r"calls SGD.step\(\) inside the converted function"):
                out = update(oar.to_tensor(1.5))
            assert float(out) == 3.0
        else:
            o.step()
    for a, b in zip(net.parameters(), ref.parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_forward_only_conversion_is_unchanged():
    # The usual form: the converted forward is a program; backward and step run outside.
    net = make(2)
    fwd = oar.jit.to_static(net)
    opt = oar.optimizer.SGD(learning_rate=0.1, parameters=net.parameters())
    x, y = data(1)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback warning
        loss = ((fwd(oar.to_tensor(x)) - oar.to_tensor(y)) ** 2).mean()
        loss.backward()
        opt.step()
    assert fwd.forward.concrete_programs

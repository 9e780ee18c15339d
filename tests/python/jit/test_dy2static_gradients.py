"""Python control flow on tensors inside to_static (python/oar/jit/dy2static/): an if/while
whose condition is a traced tensor becomes cf.if / cf.while by converting the function's
source; with Python values the converted code behaves as written; what cannot be converted
is an error naming the file and line.

This suite: converted layers: gradients through converted ifs and whiles, random ops
that fall back to eager, and saved models."""
import os
import warnings

import numpy as np
import pytest

import oar
import oar.nn as nn
import oar.nn.functional as F
from dy2static_helpers import one_program, rand
from oar.static import InputSpec

HERE = os.path.basename(__file__)


# ---- layers, gradients, saved models
class Gate(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.out = nn.Linear(4, 2)

    def forward(self, x):
        h = self.fc(x)
        if h.mean() > 0:
            h = F.relu(h) * 2
        else:
            h = h * 0.5
        return self.out(h)


def gate_inputs():
    net = Gate()
    xs = []
    for seed in range(40):
        x = rand(3, 4, seed=seed) * 3
        taken = float(net.fc(x).mean()) > 0
        if not any(t == taken for _, t in xs):
            xs.append((x, taken))
        if len(xs) == 2:
            break
    assert len(xs) == 2
    return net, [x for x, _ in xs]


def test_layer_forward_converted_once_both_branches():
    oar.seed(0)
    net, xs = gate_inputs()
    expected = [net(x).numpy() for x in xs]
    static = oar.jit.to_static(net)
    with oar.no_grad():  # inference (training signatures: see the gradient test)
        for x, e in zip(xs * 2, expected * 2):
            np.testing.assert_allclose(static(x).numpy(), e, rtol=1e-5, atol=1e-6)
    one_program(static.forward)


def test_gradients_through_a_converted_if():
    # The training signature gets one forward program with a cf.if and one backward
    # program whose cf.if recomputes each branch and holds its backward rules, so calls
    # taking either branch get that branch's gradients from the same programs.
    oar.seed(1)
    net, xs = gate_inputs()
    static_net = Gate()
    static_net.set_state_dict(net.state_dict())
    static_net = oar.jit.to_static(static_net)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no eager fallback
        for x in xs * 2:
            for m in (net, static_net):
                m.clear_gradients()
            xe, xs_ = x.clone(), x.clone()
            xe.stop_gradient = False
            xs_.stop_gradient = False
            net(xe).square().sum().backward()
            out = static_net(xs_)
            out.square().sum().backward()
            np.testing.assert_allclose(xs_.grad.numpy(), xe.grad.numpy(), rtol=1e-5, atol=1e-6)
            for (n1, p1), (_, p2) in zip(net.named_parameters(), static_net.named_parameters()):
                np.testing.assert_allclose(p2.grad.numpy(), p1.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg=n1)
    (train,) = static_net.forward.concrete_programs
    assert "cf.if" in str(train.program) and "cf.if" in str(train.backward_program)
    assert "relu_grad" in str(train.backward_program)  # the true branch's backward rule
    with oar.no_grad():
        for x in xs:
            np.testing.assert_allclose(static_net(x).numpy(), net(x).numpy(), rtol=1e-5, atol=1e-6)


def test_gradients_through_nested_converted_ifs_and_captured_intermediates():
    # inner if inside a branch; the branches read an intermediate h computed from x (its
    # gradient must not be counted twice: once through the cond node, once through h)
    def f(x, w):
        h = x * w
        if h.sum() > 0:
            if x.mean() > 0.5:
                y = h * x + w
            else:
                y = oar.sin(h) * w
        else:
            y = h * h * x
        return (y * y).sum()

    sf = oar.jit.to_static(f)
    rng = np.random.default_rng(3)
    cases = [rng.uniform(0.6, 1.0, 5), rng.uniform(0.0, 0.4, 5), -rng.uniform(0.1, 1.0, 5)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for xn in cases:
            got, ref = [], []
            for fn, acc in ((f, ref), (sf, got)):
                x = oar.to_tensor(xn.astype("float32"), stop_gradient=False)
                w = oar.to_tensor(np.linspace(0.5, 1.5, 5).astype("float32"), stop_gradient=False)
                out = fn(x, w)
                out.backward()
                acc += [out.numpy(), x.grad.numpy(), w.grad.numpy()]
            for a, b in zip(got, ref):
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert len(sf.concrete_programs) == 1
    # the outer branch's backward recomputes the inner if (a cf.if) and differentiates it
    # (another cf.if), next to the outer backward cf.if
    assert str(sf.concrete_programs[0].backward_program).count("cf.if") == 3


def test_random_op_in_a_branch_with_gradients_runs_eagerly():
    # recomputing a branch in the backward program would draw new random numbers
    @oar.jit.to_static
    def f(x):
        if x.sum() > 0:
            y = F.dropout(x, 0.5, training=True)
        else:
            y = x * 2
        return y.sum()

    x = rand(8).abs()
    x.stop_gradient = False
    with pytest.warns(UserWarning, match="(?s)" + HERE + ".*random numbers"):
        f(x).backward()
    assert x.grad is not None
    with oar.no_grad():
        f(x)  # forward-only signatures still convert
    assert len(f.concrete_programs) == 1


class Recurrent(nn.Layer):
    """A cell applied a tensor-given number of times, with an if inside the body."""

    def __init__(self):
        super().__init__()
        self.cell = nn.Linear(4, 4)

    def forward(self, x, steps):
        h = x
        i = oar.zeros([], dtype="int64")
        while i < steps:
            z = self.cell(h)
            if z.mean() > 0:
                h = oar.tanh(z) + x * 0.5
            else:
                h = z * 0.25 - x
            i = i + 1
        return (h * h).sum()


def test_gradients_through_a_converted_while_with_an_if_inside():
    # One training program for every iteration count (0 included): the forward cf.while
    # also carries the loop variables' history, the backward program's cf.while runs the
    # iterations in reverse, recomputing each body (and its cf.if) from its row.
    oar.seed(5)
    net = Recurrent()
    static = oar.jit.to_static(Recurrent())
    static.set_state_dict(net.state_dict())
    xn = np.random.default_rng(5).standard_normal((3, 4)).astype("float32")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no eager fallback
        for steps in (3, 0, 6, 1):
            res = []
            for m in (net, static):
                m.clear_gradients()
                x = oar.to_tensor(xn, stop_gradient=False)
                out = m(x, oar.to_tensor(np.int64(steps)))
                out.backward()
                res.append([out.numpy(), x.grad.numpy()] + [p.grad.numpy() for p in m.parameters()])
            for a, b in zip(*res):
                np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6, err_msg=f"steps={steps}")
    (train,) = static.forward.concrete_programs
    assert "cf.while" in str(train.backward_program) and "tanh_grad" in str(train.backward_program)


def test_gradients_through_explicit_while_loop_and_finite_differences():
    # loop vars that need gradients themselves (no parameters), float64 against central
    # differences of the same function run in NumPy
    from oar.static import nn as snn

    def f(x, y, n):
        def body(i, a, b):
            return i + 1, a * b + oar.sin(b), b * 0.9 + a * 0.1
        _, a, b = snn.while_loop(lambda i, a, b: i < n, body, [oar.zeros([], dtype="int64"), x, y])
        return (a * b).sum()

    def f_np(x, y, n):
        a, b = x.copy(), y.copy()
        for _ in range(n):
            a, b = a * b + np.sin(b), b * 0.9 + a * 0.1
        return float((a * b).sum())

    sf = oar.jit.to_static(f)
    rng = np.random.default_rng(6)
    xn, yn = rng.uniform(-0.5, 0.5, 4), rng.uniform(-0.5, 0.5, 4)
    for steps in (4, 2):
        x = oar.to_tensor(xn, stop_gradient=False)
        y = oar.to_tensor(yn, stop_gradient=False)
        out = sf(x, y, oar.to_tensor(np.int64(steps)))
        out.backward()
        np.testing.assert_allclose(float(out), f_np(xn, yn, steps), rtol=1e-12)
        eps = 1e-6
        for t, base, k in ((x, xn, 0), (y, yn, 1)):
            num = np.zeros(4)
            for i in range(4):
                hi, lo = [xn.copy(), yn.copy()], [xn.copy(), yn.copy()]
                hi[k][i] += eps
                lo[k][i] -= eps
                num[i] = (f_np(*hi, steps) - f_np(*lo, steps)) / (2 * eps)
            np.testing.assert_allclose(t.grad.numpy(), num, rtol=1e-6, atol=1e-8)
    assert len(sf.concrete_programs) == 1


def test_gradients_through_nested_converted_whiles_with_empty_inner_loops():
    # the inner loop runs 0, 1, 2... times (0 while the outer one is traced): the backward
    # body still traces (row 0 of the history), and the gradients equal eager
    def f(x, n):
        i = oar.zeros([], dtype="int64")
        while i < n:
            j = oar.zeros([], dtype="int64")
            while j < i:
                x = oar.sin(x) + 0.1 * x
                j = j + 1
            i = i + 1
        return x.sum()

    sf = oar.jit.to_static(f)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for steps in (1, 4, 0):
            res = []
            for fn in (f, sf):
                x = rand(3, seed=steps)
                x.stop_gradient = False
                out = fn(x, oar.to_tensor(np.int64(steps)))
                out.backward()
                res.append([out.numpy(), x.grad.numpy() if x.grad is not None else np.zeros(3)])
            for a, b in zip(*res):
                np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    assert len(sf.concrete_programs) == 1


def test_random_op_in_a_while_body_with_gradients_runs_eagerly():
    @oar.jit.to_static
    def f(x, n):
        i = oar.zeros([], dtype="int64")
        while i < n:
            x = F.dropout(x, 0.1, training=True) + 1
            i = i + 1
        return x.sum()

    x = rand(8).abs()
    x.stop_gradient = False
    with pytest.warns(UserWarning, match="(?s)" + HERE + ".*random numbers"):
        f(x, oar.to_tensor(np.int64(2))).backward()
    assert x.grad is not None


def test_if_on_values_without_gradients_keeps_the_training_program():
    # the condition is traced but nothing the branches return needs gradients: the
    # training signature gets its forward/backward programs with the cf.if
    @oar.jit.to_static
    def f(x, w, s):
        if s.sum() > 0:
            k = s * 2
        else:
            k = s * 0
        return (x * w).sum() + k.sum()

    x = rand(3)
    for s in (rand(3).abs(), -rand(3).abs()):
        w = rand(3, seed=4)
        w.stop_gradient = False
        out = f(x, w, s)
        np.testing.assert_allclose(float(out), float((x * w).sum() + (s * 2 if float(s.sum()) > 0 else s * 0).sum()),
                                   rtol=1e-5)
        out.backward()
        np.testing.assert_allclose(w.grad.numpy(), x.numpy(), rtol=1e-6)
    one_program(f)
    assert f.concrete_programs[0].backward_program is not None


def test_saved_model_with_a_converted_if(tmp_path):
    oar.seed(2)
    net, xs = gate_inputs()
    path = str(tmp_path / "gate")
    oar.jit.save(net, path, input_spec=[InputSpec([None, 4])])
    loaded = oar.jit.load(path)
    predictor = oar.inference.create_predictor(oar.inference.Config(path + ".pdmodel", path + ".pdiparams"))
    for x in xs:
        e = net(x).numpy()
        np.testing.assert_allclose(loaded(x).numpy(), e, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(predictor.run([x])[0].numpy(), e, rtol=1e-5, atol=1e-6)

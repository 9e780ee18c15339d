"""oar.jit.to_static: the converted program equals eager (forward and gradients) on an
MLP, LeNet, ResNet-18 and a Transformer encoder; signatures and dynamic sizes; the
clear error for code tracing cannot convert; the executor's buffer reuse and profile."""
import numpy as np
import pytest

import oar
import oar.nn as nn
import oar.nn.functional as F
from oar.static import InputSpec


def rand(*shape, seed=0):
    return oar.to_tensor(np.random.default_rng(seed).standard_normal(shape).astype("float32"))


class MLP(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def transformer():
    layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0)
    return nn.TransformerEncoder(layer, 2)


MODELS = {
    "mlp": (MLP, lambda: rand(4, 16)),
    "lenet": (lambda: oar.vision.models.LeNet(), lambda: rand(2, 1, 28, 28)),
    "resnet18": (lambda: oar.vision.models.resnet18(num_classes=10), lambda: rand(2, 3, 32, 32)),
    "transformer": (transformer, lambda: rand(2, 5, 32)),
}


def grads(net):
    return {n: p.grad.numpy().copy() for n, p in net.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("name", list(MODELS))
def test_static_equals_eager_forward_and_gradients(name):
    make, data = MODELS[name]
    oar.seed(1)
    net = make()
    x = data()
    net.train()
    eager_out = net(x)
    eager_out.sum().backward()
    eager_grads = grads(net)
    net.clear_gradients()

    static_net = oar.jit.to_static(net)
    out = static_net(x)
    np.testing.assert_allclose(out.numpy(), eager_out.numpy(), rtol=1e-6, atol=1e-6)
    out.sum().backward()
    static_grads = grads(net)
    assert set(static_grads) == set(eager_grads) and static_grads
    for k in eager_grads:
        np.testing.assert_allclose(static_grads[k], eager_grads[k], rtol=1e-5, atol=1e-6, err_msg=k)
    # the second call runs the cached program (no new conversion)
    assert len(static_net.forward.concrete_programs) == 1
    np.testing.assert_allclose(static_net(x).numpy(), eager_out.numpy(), rtol=1e-6, atol=1e-6)
    assert len(static_net.forward.concrete_programs) == 1


def test_training_loop_matches_eager():
    def run(static):
        oar.seed(3)
        net = MLP()
        if static:
            net = oar.jit.to_static(net)
        opt = oar.optimizer.AdamW(learning_rate=0.01, parameters=net.parameters())
        losses = []
        for step in range(5):
            x, y = rand(8, 16, seed=step), oar.to_tensor(np.arange(8) % 10)
            loss = F.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            losses.append(float(loss))
        return losses, net.fc1.weight.numpy()

    (l_e, w_e), (l_s, w_s) = run(False), run(True)
    np.testing.assert_allclose(l_s, l_e, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(w_s, w_e, rtol=1e-6, atol=1e-6)


def test_function_decorator_and_signature_cache():
    calls = []

    @oar.jit.to_static
    def f(x, y, scale=2.0):
        calls.append(1)
        return (x * scale + y).tanh(), x.sum()

    a, b = rand(3, 4), rand(3, 4, seed=1)
    out, s = f(a, b)
    np.testing.assert_allclose(out.numpy(), np.tanh(a.numpy() * 2 + b.numpy()), rtol=1e-6)
    np.testing.assert_allclose(s.numpy(), a.numpy().sum(), rtol=1e-5)
    f(rand(3, 4, seed=5), b)        # same signature: no new trace
    assert len(calls) == 1
    out3, _ = f(a, b, scale=3.0)    # a Python constant is part of the signature
    np.testing.assert_allclose(out3.numpy(), np.tanh(a.numpy() * 3 + b.numpy()), rtol=1e-6)
    f(rand(5, 4), rand(5, 4))       # a new shape converts again
    f(a.astype("float64"), b.astype("float64"))  # and a new dtype
    assert len(calls) == 4
    assert "pd_op.tanh" in str(f.main_program)


def test_dynamic_batch_with_input_spec():
    oar.seed(0)
    net = oar.jit.to_static(MLP(), input_spec=[InputSpec([None, 16], "float32", "x")])
    with oar.no_grad():  # forward-only signatures keep the dynamic dims
        for n in (1, 4, 7):
            x = rand(n, 16, seed=n)
            np.testing.assert_allclose(net(x).numpy(), net.forward.dygraph_function(x).numpy(),
                                       rtol=1e-6, atol=1e-6)
    assert len(net.forward.concrete_programs) == 1
    assert "?x16xf32" in str(net.forward.main_program)
    with pytest.raises(ValueError, match="InputSpec"):
        net(rand(4, 8))


def test_program_reading_a_dynamic_size_is_rejected():
    # Converted code reads a dynamic x.shape[0] as a run-time size (test_jit_dynamic_shape.py);
    # unconverted code (full_graph=False) reads a Python number and would bake it in.
    @oar.jit.to_static(input_spec=[InputSpec([-1, 6])], full_graph=False)
    def f(x):
        return x.reshape([x.shape[0] * 2, 3])

    with pytest.raises(oar.jit.Dy2StaticError, match="dynamic dimension"):
        f(rand(4, 6))

    @oar.jit.to_static(input_spec=[InputSpec([-1, 6])])
    def h(x):
        return x.reshape([int(x.shape[0]) * 2, 3])  # int() reads the run-time size in Python

    with pytest.raises(oar.jit.Dy2StaticError, match="reads the value of a tensor"):
        h(rand(4, 6))

    @oar.jit.to_static(input_spec=[InputSpec([-1, 6])])
    def g(x):
        return x.reshape([-1, 3])

    assert list(g(rand(4, 6)).shape) == [8, 3] and list(g(rand(5, 6)).shape) == [10, 3]


def test_python_control_flow_on_a_tensor_names_the_line():
    # an if on a tensor converts (python/oar/jit/dy2static.py; more in test_dy2static.py)
    @oar.jit.to_static
    def f(x):
        if x.sum() > 0:
            return x * 2
        return x

    pos, neg = rand(3).abs(), -rand(3).abs()
    np.testing.assert_allclose(f(pos).numpy(), pos.numpy() * 2, rtol=1e-6)
    np.testing.assert_allclose(f(neg).numpy(), neg.numpy(), rtol=1e-6)
    assert len(f.concrete_programs) == 1 and "cf.if" in str(f.main_program)

    # what cannot be converted (a return inside a loop) names the line
    @oar.jit.to_static
    def g(x):
        for _ in range(2):
            if x.sum() > 0:  # the line the error names
                return x * 2
        return x

    with pytest.raises(oar.jit.Dy2StaticError) as e:
        g(rand(3))
    assert "test_jit.py" in str(e.value) and "if x.sum() > 0" in str(e.value)

    # reading a traced value in Python (.item()) names the line too
    @oar.jit.to_static
    def h(x):
        return x * x.sum().item()

    with pytest.raises(oar.jit.Dy2StaticError) as e:
        h(rand(3))
    assert "test_jit.py" in str(e.value) and "x.sum().item()" in str(e.value)
    # the tracer is gone afterwards: eager code reads values again
    assert float(rand(3).sum()) == pytest.approx(float(rand(3).numpy().sum()), rel=1e-6)


def test_captured_tensor_is_read_live_and_enable_to_static():
    c = rand(4, seed=9)

    @oar.jit.to_static
    def f(x):
        return x + c

    x = rand(4)
    np.testing.assert_allclose(f(x).numpy(), x.numpy() + c.numpy(), rtol=1e-6)
    # Note [Captured state]: a parameter of the program, not a constant of its value
    assert "builtin.constant" not in str(f.main_program)
    assert f.concrete_programs[0].program.parameter_names() == ["c"]
    with oar.no_grad():
        c.set_value(c * 2.0)
    np.testing.assert_allclose(f(x).numpy(), x.numpy() + c.numpy(), rtol=1e-6)
    oar.jit.enable_to_static(False)
    try:
        calls = len(f.concrete_programs)
        f(rand(4, seed=7))
        assert len(f.concrete_programs) == calls
    finally:
        oar.jit.enable_to_static(True)


def test_train_and_eval_modes_convert_separately():
    net = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5))
    net = oar.jit.to_static(net)
    x = oar.ones([64, 8])
    net.eval()
    a = net(x)
    np.testing.assert_allclose(a.numpy(), net.forward.dygraph_function(x).numpy(), rtol=1e-6)
    net.train()
    b, c = net(x), net(x)
    assert len(net.forward.concrete_programs) == 2
    # dropout in the program draws a new mask on every run
    assert not np.array_equal(b.numpy(), c.numpy())
    assert (b.numpy() == 0).mean() > 0.3


def test_batchnorm_running_statistics_update_through_the_program():
    oar.seed(0)
    eager = nn.BatchNorm2D(3)
    static = oar.jit.to_static(nn.BatchNorm2D(3))
    for step in range(3):
        x = rand(4, 3, 5, 5, seed=step)
        eager(x)
        static(x)
    np.testing.assert_allclose(static._mean.numpy(), eager._mean.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(static._variance.numpy(), eager._variance.numpy(), rtol=1e-6, atol=1e-7)


def test_executor_reuses_buffers_and_profiles():
    @oar.jit.to_static
    def chain(x):
        for _ in range(20):
            x = (x * 1.5).tanh()
        return x

    x = rand(64, 64)
    chain(x)
    entry = chain.concrete_programs[0]
    ex = entry.executor
    # 40 intermediate values, but each dies at its next use: only a few are ever live
    assert ex.num_steps > 40 and ex.peak_live_tensors <= 4
    ex.set_profiling(True)
    chain(x)
    prof = dict((n, (c, s)) for n, c, s in ex.profile())
    assert prof["pd_op.tanh"][0] == 20 and sum(c for c, _ in prof.values()) >= 40
    assert all(s >= 0 for _, s in prof.values())


def test_executor_rejects_bad_inputs():
    @oar.jit.to_static
    def f(x):
        return x + 1

    f(rand(2, 3))
    ex = f.concrete_programs[0].executor
    with pytest.raises(ValueError, match="expects"):
        ex.run([rand(3, 3)])
    with pytest.raises(ValueError, match="takes 1 inputs"):
        ex.run([])


def test_to_static_bad_arguments():
    with pytest.raises(TypeError, match="input_spec"):
        oar.jit.to_static(MLP(), input_spec=InputSpec([2, 16]))
    with pytest.raises(TypeError, match="function or an oar.nn.Layer"):
        oar.jit.to_static(3)
    with pytest.raises(ValueError, match="shape"):
        InputSpec([2, -3])


# ---- the backward program
def test_training_signature_has_a_backward_program():
    oar.seed(0)
    net = oar.jit.to_static(MLP())
    x = rand(4, 16)
    net(x).sum().backward()
    entry = net.forward.concrete_programs[0]
    assert entry.backward_program is not None
    text = str(entry.backward_program)
    assert "pd_op.matmul" in text and '"grad0"' in text and "saved" in text
    assert entry.wrt_params == [n for n, _ in net.named_parameters()]
    # under no_grad the same call converts to a forward-only program
    with oar.no_grad():
        net(x)
    assert [e.backward_program is None for e in net.forward.concrete_programs] == [False, True]


def test_gradients_reach_inputs_and_skip_frozen_parameters():
    oar.seed(0)
    eager = MLP()
    static = MLP()
    static.set_state_dict(eager.state_dict())
    static = oar.jit.to_static(static)
    for net in (eager, static):
        net.fc1.weight.stop_gradient = True
    xe, xs = rand(3, 16), rand(3, 16)
    xe.stop_gradient = xs.stop_gradient = False
    (eager(xe) ** 2).sum().backward()
    (static(xs) ** 2).sum().backward()
    np.testing.assert_allclose(xs.grad.numpy(), xe.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert static.fc1.weight.grad is None
    np.testing.assert_allclose(static.fc2.weight.grad.numpy(), eager.fc2.weight.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert static.forward.concrete_programs[0].wrt_inputs == [0]


def test_backward_twice_and_double_backward_are_rejected():
    net = oar.jit.to_static(MLP())
    loss = net(rand(2, 16)).sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()
    x = rand(2, 16)
    x.stop_gradient = False
    y = net(x).sum()
    with pytest.raises(NotImplementedError, match="create_graph"):
        oar.grad([y], [x], create_graph=True)


def test_autocast_state_is_part_of_the_signature():
    @oar.jit.to_static
    def f(x, w):
        return oar.matmul(x, w)

    x, w = rand(4, 8), rand(8, 3, seed=1)
    plain = f(x, w)
    with oar.amp.auto_cast(dtype="bfloat16"):
        low = f(x, w)
    assert plain.dtype == oar.float32 and low.dtype == oar.bfloat16
    assert len(f.concrete_programs) == 2
    np.testing.assert_allclose(low.astype("float32").numpy(), plain.numpy(), rtol=2e-2, atol=5e-2)


def test_the_same_tensor_passed_twice_stays_two_inputs():
    @oar.jit.to_static
    def f(a, b):
        return a * 2 + b

    p, q = rand(3), rand(3, seed=1)
    np.testing.assert_allclose(f(p, p).numpy(), p.numpy() * 3, rtol=1e-6)
    np.testing.assert_allclose(f(p, q).numpy(), p.numpy() * 2 + q.numpy(), rtol=1e-6)
    x = rand(3, seed=2)
    x.stop_gradient = False
    f(x, x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 3.0), rtol=1e-6)


def test_training_with_dynamic_input_spec_converts_per_shape():
    oar.seed(0)
    net = oar.jit.to_static(transformer(), input_spec=[InputSpec([None, None, 32])])
    for shape in ([2, 5, 32], [3, 7, 32]):
        x = rand(*shape)
        ref = net.forward.dygraph_function(x)
        out = net(x)
        np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)
        out.sum().backward()
        net.clear_gradients()
    # one training program per shape; without grads one dynamic program serves both
    assert len(net.forward.concrete_programs) == 2
    with oar.no_grad():
        for shape in ([2, 5, 32], [3, 7, 32]):
            net(rand(*shape))
    assert len(net.forward.concrete_programs) == 3
    assert "?x?x32xf32" in str(net.forward.concrete_programs[-1].program)

"""A plain function converted by to_static reads the layers and parameters it captures
(closure, module globals, a bound method's object, lists and dicts of them) live, as
program parameters (Note [Captured state] in docs/notes/jit.md): a later update of their
values is seen by the next call, and loss.backward() after the call fills their .grad.
(Before, they were baked into the program as constants: stale after an optimizer step,
and without gradients.)"""
import numpy as np

import oar

GLOBAL_NET = oar.nn.Linear(4, 3)
GLOBAL_LIST = [oar.nn.Linear(3, 3), oar.nn.Linear(3, 2)]


def uses_globals(x):
    h = oar.tanh(GLOBAL_NET(x))
    for layer in GLOBAL_LIST:
        h = layer(h)
    return h


def train(fn, params, steps=4):
    opt = oar.optimizer.Adam(learning_rate=0.05, parameters=params)
    rng = np.random.default_rng(0)
    x = oar.to_tensor(rng.standard_normal((6, 4)).astype("float32"))
    y = oar.to_tensor(rng.standard_normal((6, 2)).astype("float32"))
    losses = []
    for _ in range(steps):
        loss = ((fn(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
    return losses


def snapshot(layers):
    return [p.numpy().copy() for layer in layers for p in layer.parameters()]


def restore(layers, values):
    with oar.no_grad():
        for p, v in zip([p for layer in layers for p in layer.parameters()], values):
            p.set_value(oar.to_tensor(v))


def test_globals_train_like_eager():
    layers = [GLOBAL_NET] + GLOBAL_LIST
    params = [p for layer in layers for p in layer.parameters()]
    start = snapshot(layers)
    eager = train(uses_globals, params)
    eager_end = snapshot(layers)
    restore(layers, start)
    conv = oar.jit.to_static(uses_globals)
    static = train(conv, params)
    np.testing.assert_allclose(static, eager, rtol=1e-5)
    assert static[-1] < static[0]  # the updates reach the program
    for a, b in zip(snapshot(layers), eager_end):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    (cp,) = conv.concrete_programs
    names = cp.program.parameter_names()
    assert "GLOBAL_NET.weight" in names and "GLOBAL_LIST.1.bias" in names, names
    assert "builtin.constant" not in str(cp.program)


def test_closure_parameter_reads_live_values_and_gets_gradients():
    lin = oar.nn.Linear(3, 1)
    scale = oar.create_parameter([1], "float32")

    @oar.jit.to_static
    def f(x):
        return lin(x) * scale

    x = oar.ones([2, 3])
    f(x)
    with oar.no_grad():
        lin.weight.set_value(oar.ones([3, 1]))
        lin.bias.set_value(oar.zeros([1]))
        scale.set_value(oar.full([1], 2.0))
    np.testing.assert_allclose(f(x).numpy(), np.full((2, 1), 6.0))
    f(x).sum().backward()
    np.testing.assert_allclose(lin.weight.grad.numpy(), np.full((3, 1), 4.0))
    np.testing.assert_allclose(scale.grad.numpy(), [6.0])


class Trainer:
    def __init__(self):
        self.model = oar.nn.Sequential(oar.nn.Linear(4, 4), oar.nn.Dropout(0.5))
        self.heads = {"a": oar.nn.Linear(4, 2)}

    def forward(self, x):
        return self.heads["a"](self.model(x))


def test_bound_method_of_another_object_and_train_eval_switch():
    t = Trainer()
    conv = oar.jit.to_static(t.forward)
    x = oar.ones([8, 4])
    t.model.eval()
    a = conv(x).numpy()
    np.testing.assert_allclose(a, t.forward(x).numpy(), rtol=1e-6)
    t.model.train()  # dropout on: a program of its own, not the eval one
    oar.seed(3)
    b = conv(x).numpy()
    oar.seed(3)
    np.testing.assert_allclose(b, t.forward(x).numpy(), rtol=1e-6)
    assert not np.allclose(a, b)
    with oar.no_grad():
        t.heads["a"].bias.set_value(t.heads["a"].bias + 1.0)
    t.model.eval()
    np.testing.assert_allclose(conv(x).numpy(), a + 1.0, rtol=1e-6)


MASK = oar.ones([2, 3])


def test_captured_plain_tensor_and_an_argument_that_is_also_state():
    net = oar.nn.Linear(3, 3)

    @oar.jit.to_static
    def f(x, w):
        return net(x) * MASK + w.sum()

    def eager(x, w):
        return net(x) * MASK + w.sum()

    x = oar.ones([2, 3])
    # net.weight is both captured state and the argument: later calls pass other tensors
    np.testing.assert_allclose(f(x, net.weight).numpy(), eager(x, net.weight).numpy(), rtol=1e-6)
    other = oar.full([3, 3], 2.0)
    np.testing.assert_allclose(f(x, other).numpy(), eager(x, other).numpy(), rtol=1e-6)
    with oar.no_grad():
        MASK.set_value(oar.to_tensor(np.array([[1, 0, 1], [0, 1, 0]], "float32")))
    np.testing.assert_allclose(f(x, other).numpy(), eager(x, other).numpy(), rtol=1e-6)


@oar.jit.to_static
def decorated_before_its_model(x):
    return LATER(x)


LATER = oar.nn.Linear(2, 2)  # assigned after the decorator ran, as at module import


def test_a_global_assigned_after_the_decorator():
    x = oar.ones([1, 2])
    np.testing.assert_allclose(decorated_before_its_model(x).numpy(), LATER(x).numpy(), rtol=1e-6)
    with oar.no_grad():
        LATER.bias.set_value(LATER.bias + 5.0)
    np.testing.assert_allclose(decorated_before_its_model(x).numpy(), LATER(x).numpy(), rtol=1e-6)


def test_save_load_and_predictor_of_a_function_with_captured_state(tmp_path):
    from oar.static import InputSpec

    net = oar.nn.Linear(3, 2)
    scale = oar.to_tensor(np.array([1.0, 2.0], "float32"))

    def f(x):
        return net(x) * scale

    sf = oar.jit.to_static(f, input_spec=[InputSpec([None, 3], "float32")])
    x = np.random.default_rng(0).standard_normal((4, 3)).astype("float32")
    with oar.no_grad():
        ref = f(oar.to_tensor(x)).numpy()
    prefix = str(tmp_path / "fn")
    oar.jit.save(sf, prefix)  # the captured weights and tensor are the saved parameters
    np.testing.assert_allclose(oar.jit.load(prefix)(oar.to_tensor(x)).numpy(), ref, rtol=1e-6)
    pred = oar.inference.create_predictor(oar.inference.Config(prefix + ".pdmodel", prefix + ".pdiparams"))
    pred.get_input_handle(pred.get_input_names()[0]).copy_from_cpu(x)
    pred.run()
    np.testing.assert_allclose(pred.get_output_handle(pred.get_output_names()[0]).copy_to_cpu(), ref, rtol=1e-6)


def test_a_converted_layer_called_inside_a_converted_function_is_inlined():
    # The inner layer's own program, run while the outer one traced, reached the outer
    # program as a constant: every later input gave the first input's result.
    net = oar.nn.Linear(3, 2)
    oar.jit.to_static(net)  # net.forward is converted too

    @oar.jit.to_static
    def outer(x):
        return net(x) * 2.0

    rng = np.random.default_rng(1)
    with oar.no_grad():
        for _ in range(2):
            x = oar.to_tensor(rng.standard_normal((4, 3)).astype("float32"))
            np.testing.assert_allclose(outer(x).numpy(), net.forward.dygraph_function(x).numpy() * 2.0, rtol=1e-6)
    text = str(outer.concrete_programs[0].program)
    assert "pd_op.matmul" in text and "builtin.constant" not in text

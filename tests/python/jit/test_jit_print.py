"""print(tensor) under to_static (dy2static.convert_print): a print_tensor op that prints
every time the program runs (not while converting), kept by the optimizations, in saved
models and the predictor; a pass-through in ONNX."""
import numpy as np
import pytest

import oar
from oar import _C
from oar.static import InputSpec


def test_print_tensor_op_prints_and_passes_through(capfd):
    x = oar.to_tensor([[1.5, -2.0], [3.0, 4.0]])
    y = _C.ops._print_tensor(x, "x:", -1)
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    out = capfd.readouterr().out
    assert "x: Tensor(shape=[2, 2], dtype=float32)" in out and "data: [1.5, -2, 3, 4]" in out
    _C.ops._print_tensor(oar.arange(30), "", 3)
    assert "data: [0, 1, 2, ... (30 values)]" in capfd.readouterr().out
    _C.ops._print_tensor(oar.to_tensor([True, False]), "b", 5)
    assert "data: [True, False]" in capfd.readouterr().out


class Net(oar.nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = oar.nn.Linear(2, 3)

    def forward(self, x):
        h = self.fc(x)
        print("hidden", h)
        return h * 2


def test_print_in_converted_code_runs_with_the_program(capfd, tmp_path):
    oar.seed(0)
    net = Net()
    net.eval()
    static = oar.jit.to_static(net, input_spec=[InputSpec([None, 2], "float32", "x")])
    x = oar.to_tensor([[1.0, 2.0]])
    with oar.no_grad():
        static(x)
        first = capfd.readouterr().out
        static(oar.to_tensor([[0.0, 0.0], [1.0, 1.0]]))
        second = capfd.readouterr().out
    # one block per run with that run's values (converting printed nothing)
    assert first.count("hidden Tensor(shape=[1, 3]") == 1 and first.count("Tensor(") == 1, first
    assert second.count("hidden Tensor(shape=[2, 3]") == 1 and second.count("Tensor(") == 1, second
    bias = net.fc.bias.numpy()
    assert ", ".join(f"{v:g}" for v in bias) in second    # the zero row is the bias
    assert "pd_op.print_tensor" in str(static.forward.main_program)

    prefix = str(tmp_path / "net")
    oar.jit.save(net, prefix, input_spec=[InputSpec([None, 2], "float32", "x")])
    capfd.readouterr()
    predictor = oar.inference.create_predictor(oar.inference.Config(prefix + ".pdmodel", prefix + ".pdiparams"))
    out = predictor.run([x])[0].numpy()
    assert capfd.readouterr().out.count("hidden Tensor(shape=[1, 3]") == 1   # IR optimizations keep it
    with oar.no_grad():
        np.testing.assert_allclose(out, Net.forward(net, x).numpy(), rtol=1e-6)

    ort = pytest.importorskip("onnxruntime")
    oar.onnx.export(net, prefix, input_spec=[InputSpec([None, 2], "float32", "x")])
    sess = ort.InferenceSession(prefix + ".onnx", providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0], out, rtol=1e-5)


def test_print_without_traced_tensors_is_plain(capfd):
    @oar.jit.to_static
    def f(x):
        print("converting", 3)
        return x + 1

    f(oar.ones([2]))
    assert "converting 3" in capfd.readouterr().out
    f(oar.ones([2]))
    assert capfd.readouterr().out == ""       # a Python print runs while converting only

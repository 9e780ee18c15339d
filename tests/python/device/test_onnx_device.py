"""oar.onnx.export with a device current: a program traced there holds copy_to ops (a
constant made on the host, then moved: a setitem value, to_tensor of a number), which ONNX,
a graph without places, exports as Identity. The model runs in ONNX Runtime equal to eager
Oar on the CPU."""
import numpy as np
import pytest

import oar
from oar import nn
from oar.static import InputSpec

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


class Net(nn.Layer):
    def forward(self, x, i):
        z = x.clone()
        z[i] = 2.0  # the value: a host constant moved to x's place
        return z * oar.to_tensor(3.0, dtype="float32")


def test_a_program_traced_on_the_device_exports_its_moves_as_identity(sample, tmp_path):
    spec = [InputSpec([None, 3], "float32", "x"), InputSpec([None], "int64", "i")]
    oar.set_device("sample:0")
    try:
        path = oar.onnx.export(Net(), str(tmp_path / "net"), input_spec=spec)
    finally:
        oar.set_device("cpu")
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    assert "Identity" in {n.op_type for n in model.graph.node}
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    for n in (2, 5):
        x = rng.standard_normal((n, 3)).astype("float32")
        i = rng.integers(-n, n, [3]).astype("int64")
        (got,) = sess.run(None, {"x": x, "i": i})
        want = Net()(oar.to_tensor(x), oar.to_tensor(i)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6)

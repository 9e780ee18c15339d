"""Config.enable_cinn(): the Python and the C++ predictor run a saved model through the
fusion compiler (cinn_stages before the lowering); outputs equal the predictor without
it, on random inputs and two batch sizes."""
import glob
import os
import subprocess

import numpy as np
import pytest

import oar
from oar import _C
from oar.static import InputSpec
from build_tree import built


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


class Block(oar.nn.Layer):
    """A linear layer, then RMSNorm, softmax and GELU written from primitives."""

    def __init__(self):
        super().__init__()
        self.fc = oar.nn.Linear(48, 48)
        self.w = self.create_parameter([48])

    def forward(self, x):
        h = self.fc(x)
        h = h * oar.rsqrt(oar.mean(h * h, axis=-1, keepdim=True) + 1e-6) * self.w
        e = oar.exp(h - oar.max(h, axis=-1, keepdim=True))
        s = e / oar.sum(e, axis=-1, keepdim=True)
        return s * 0.5 * (oar.erf(h * 0.7071067811865476) + 1.0)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    oar.seed(3)
    net = Block()
    net.eval()
    path = str(tmp_path_factory.mktemp("block") / "model")
    oar.jit.save(net, path, input_spec=[InputSpec([None, 48], "float32", "x")])
    return net, path


def predict(path, x, cinn):
    config = oar.inference.Config(path + ".pdmodel", path + ".pdiparams")
    if cinn:
        config.enable_cinn()
    assert config.cinn_enabled() == cinn
    assert ("cinn_stages" in config.pass_names()) == cinn
    assert config.pass_names()[-1] == "lower_to_kernel"
    assert f"cinn: {cinn}" in config.summary()
    pred = oar.inference.create_predictor(config)
    h = pred.get_input_handle("x")
    h.reshape(x.shape)
    h.copy_from_cpu(x)
    assert pred.run() is None
    return pred.get_output_handle(pred.get_output_names()[0]).copy_to_cpu()


@pytest.mark.parametrize("batch", [1, 7])
def test_python_predictor_with_cinn_equals_without(saved, batch):
    net, path = saved
    x = np.random.default_rng(batch).standard_normal((batch, 48)).astype("float32")
    plain = predict(path, x, False)
    assert _C.cinn.cache_stats()["compiles"] == 0
    fused = predict(path, x, True)
    s = _C.cinn.cache_stats()
    assert s["compiles"] >= 1 and s["fallbacks"] == 0, s
    np.testing.assert_allclose(fused, plain, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fused, net(oar.to_tensor(x)).numpy(), rtol=1e-5, atol=1e-6)


def test_cpp_predictor_with_cinn_equals_python(saved, tmp_path):
    _, path = saved
    binary = built("inference/oar_run_model")
    x = np.random.default_rng(9).standard_normal((5, 48)).astype("float32")
    (tmp_path / "in.bin").write_bytes(x.tobytes())
    cache = tmp_path / "xdg"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["XDG_CACHE_HOME"] = str(cache)  # the C++ process's default cache: $XDG_CACHE_HOME/oar/cinn
    r = subprocess.run([binary, path, str(tmp_path / "in.bin"), "5,48", str(tmp_path / "out.bin"), "--cinn"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "runs unfused" not in r.stderr and "no fusion compiler" not in r.stderr, r.stderr
    assert glob.glob(str(cache / "oar" / "cinn" / "*.o")), "the C++ predictor compiled no group"
    cpp = np.frombuffer((tmp_path / "out.bin").read_bytes(), dtype="float32").reshape(5, 48)
    np.testing.assert_allclose(cpp, predict(path, x, False), rtol=1e-5, atol=1e-6)

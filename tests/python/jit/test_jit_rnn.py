"""Recurrent layers in saved programs: a dynamic batch and a dynamic sequence length
(the time steps become one cf.while), sequence_length masks, the predictor and ONNX."""
import os

import numpy as np
import pytest

import oar
from oar.static import InputSpec


def seq(b, t, f=4, seed=0):
    return oar.to_tensor(np.random.default_rng(seed).standard_normal((b, t, f)).astype("float32"))


@pytest.mark.parametrize("cls", [oar.nn.LSTM, oar.nn.GRU, oar.nn.SimpleRNN])
def test_dynamic_batch_and_length_match_eager(cls, tmp_path):
    oar.seed(0)
    net = cls(4, 6, num_layers=2, direction="bidirect")
    net.eval()
    prefix = str(tmp_path / "m")
    oar.jit.save(net, prefix, input_spec=[InputSpec([-1, -1, 4], "float32", "x")])
    loaded = oar.jit.load(prefix)
    text = str(loaded.program)
    # both dims stay dynamic; each layer runs as one fused op over the sequence, no loop
    fused = {oar.nn.LSTM: "pd_op.lstm_sequence", oar.nn.GRU: "pd_op.gru_sequence",
             oar.nn.SimpleRNN: "pd_op.rnn_sequence"}[cls]
    assert fused in text and "cf.while" not in text and "?x?x12" in text
    for b, t in ((2, 7), (3, 1), (1, 12)):
        x = seq(b, t, seed=b * t)
        ref_out, ref_state = net(x)
        out, state = loaded(x)
        np.testing.assert_allclose(out.numpy(), ref_out.numpy(), rtol=1e-5, atol=1e-6)
        ref_state = ref_state if isinstance(ref_state, tuple) else (ref_state,)
        state = state if isinstance(state, (tuple, list)) else (state,)
        for a, r in zip(state, ref_state):
            np.testing.assert_allclose(a.numpy(), r.numpy(), rtol=1e-5, atol=1e-6)


def test_sequence_length_with_a_dynamic_length():
    oar.seed(1)
    net = oar.nn.LSTM(4, 5, direction="bidirect")
    net.eval()
    static = oar.jit.to_static(net, input_spec=[InputSpec([-1, -1, 4], "float32"), None,
                                                InputSpec([-1], "int64")])
    for b, t in ((3, 6), (2, 4)):
        x = seq(b, t, seed=t)
        lens = oar.to_tensor(np.random.default_rng(t).integers(1, t + 1, b).astype("int64"))
        with oar.no_grad():  # forward-only: the dynamic program (training converts per shape)
            ref_out, (h, c) = net(x, None, lens)
            out, (h2, c2) = static(x, None, lens)
        np.testing.assert_allclose(out.numpy(), ref_out.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(h2.numpy(), h.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(c2.numpy(), c.numpy(), rtol=1e-5, atol=1e-6)
    (prog,) = static.forward.concrete_programs
    assert "cf.while" in str(prog.program)


@pytest.mark.parametrize("make", [lambda: oar.nn.GRU(4, 8), lambda: oar.nn.LSTM(4, 8, direction="bidirect"),
                                  lambda: oar.nn.SimpleRNN(4, 8, num_layers=2, activation="relu"),
                                  lambda: oar.nn.GRU(4, 8, direction="bidirect", time_major=True)],
                         ids=["GRU", "LSTM-bidirect", "SimpleRNN-relu-2layers", "GRU-bidirect-time_major"])
def test_predictor_and_onnx_run_a_dynamic_length_rnn(tmp_path, make):
    # the fused ops export as ONNX's LSTM/GRU/RNN (python/oar/onnx/_ops_nn.py)
    ort = pytest.importorskip("onnxruntime")

    class Tagger(oar.nn.Layer):
        def __init__(self):
            super().__init__()
            self.rnn = make()
            self.head = oar.nn.Linear(self.rnn.hidden_size * self.rnn.num_directions, 3)

        def forward(self, x):
            return self.head(self.rnn(x)[0])

    oar.seed(2)
    net = Tagger()
    net.eval()
    prefix = str(tmp_path / "tagger")
    spec = [InputSpec([-1, -1, 4], "float32", "x")]
    oar.jit.save(net, prefix, input_spec=spec)
    oar.onnx.export(net, prefix, input_spec=spec)
    config = oar.inference.Config(prefix + ".pdmodel", prefix + ".pdiparams")
    predictor = oar.inference.create_predictor(config)
    sess = ort.InferenceSession(prefix + ".onnx", providers=["CPUExecutionProvider"])
    for b, t in ((1, 9), (4, 3)):
        x = seq(b, t, seed=b + t)
        ref = net(x).numpy()
        np.testing.assert_allclose(predictor.run([x])[0].numpy(), ref, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0], ref,
                                   rtol=1e-4, atol=1e-5)


def test_training_signatures_still_unroll():
    # training converts per concrete shape (the backward rules read sizes): no loop, the
    # gradients equal eager
    oar.seed(3)
    net = oar.nn.LSTM(4, 5)
    static = oar.jit.to_static(net)
    x = seq(2, 5)
    out, _ = static(x)
    out.sum().backward()
    grads = [p.grad.numpy().copy() for p in net.parameters()]
    net.clear_gradients()
    ref, _ = oar.nn.LSTM.forward(net, x)
    ref.sum().backward()
    for g, p in zip(grads, net.parameters()):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert "cf.while" not in str(static.forward.concrete_programs[0].program)


def test_cpp_example_runs_a_dynamic_length_gru(tmp_path):
    # the C++ predictor (no Python in the process) runs the cf.while of the time steps
    import subprocess

    from test_jit_save_predictor import run_model_binary
    oar.seed(5)
    net = oar.nn.GRU(4, 6, direction="bidirect")
    net.eval()
    prefix = str(tmp_path / "gru")
    oar.jit.save(net, prefix, input_spec=[InputSpec([-1, -1, 4], "float32", "x")])
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    for b, t in ((2, 5), (1, 9)):
        x = seq(b, t, seed=t).numpy()
        (tmp_path / "in.bin").write_bytes(x.tobytes())
        r = subprocess.run([run_model_binary(), prefix, str(tmp_path / "in.bin"), f"{b},{t},4", str(tmp_path / "out.bin")],
                           capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        out = np.frombuffer((tmp_path / "out.bin").read_bytes(), dtype="float32").reshape(b, t, 12)
        np.testing.assert_allclose(out, net(oar.to_tensor(x))[0].numpy(), rtol=1e-5, atol=1e-6)

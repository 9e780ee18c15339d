"""Saved models: oar.jit.save -> oar.jit.load gives the same outputs and can be
fine-tuned; the Python predictor and the C++ example program (no Python in the process)
give the eager outputs; corrupt or truncated files are rejected with a clear error;
oar.static.nn.cond / while_loop become cf.if / cf.while in converted programs."""
import os
import subprocess

import numpy as np
import pytest

import oar
import oar.nn as nn
import oar.nn.functional as F
from oar.static import InputSpec
from build_tree import built

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))  # the repository


def rand(*shape, seed=0):
    return oar.to_tensor(np.random.default_rng(seed).standard_normal(shape).astype("float32"))


def lenet():
    oar.seed(0)
    net = oar.vision.models.LeNet()
    net.eval()
    return net


@pytest.fixture(scope="module")
def saved_lenet(tmp_path_factory):
    net = lenet()
    path = str(tmp_path_factory.mktemp("lenet") / "model")
    oar.jit.save(net, path, input_spec=[InputSpec([None, 1, 28, 28], "float32", "image")])
    return net, path


def test_save_writes_the_layout(saved_lenet):
    _, path = saved_lenet
    for ext in (".pdmodel", ".pdiparams", ".pdinfo"):
        assert os.path.getsize(path + ext) > 0
    params = oar.load(path + ".pdiparams")
    assert "features.0.weight" in params or any(k.endswith("weight") for k in params)


@pytest.mark.parametrize("batch", [1, 5])
def test_load_gives_the_eager_outputs(saved_lenet, batch):
    net, path = saved_lenet
    loaded = oar.jit.load(path)
    x = rand(batch, 1, 28, 28, seed=batch)
    np.testing.assert_allclose(loaded(x).numpy(), net(x).numpy(), rtol=1e-5, atol=1e-6)
    assert loaded.input_names() == ["image"]


def test_loaded_layer_fine_tunes(saved_lenet):
    _, path = saved_lenet
    loaded = oar.jit.load(path)
    params = loaded.parameters()
    assert params and all(not p.stop_gradient for p in params)
    opt = oar.optimizer.SGD(learning_rate=0.01, parameters=params)
    x, y = rand(8, 1, 28, 28), oar.to_tensor(np.arange(8) % 10)
    losses = []
    for _ in range(5):
        loss = F.cross_entropy(loaded(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
    assert losses[-1] < losses[0]


def test_python_predictor_matches_eager(saved_lenet):
    net, path = saved_lenet
    for ir_optim, mem in [(True, False), (True, True), (False, False)]:
        config = oar.inference.Config(path + ".pdmodel", path + ".pdiparams")
        config.switch_ir_optim(ir_optim)
        config.enable_memory_optim(mem)
        predictor = oar.inference.create_predictor(config)
        x = rand(3, 1, 28, 28, seed=7).numpy()
        h = predictor.get_input_handle(predictor.get_input_names()[0])
        h.reshape(x.shape)
        h.copy_from_cpu(x)
        assert predictor.run() is None
        out = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
        np.testing.assert_allclose(out, net(oar.to_tensor(x)).numpy(), rtol=1e-5, atol=1e-6)
    # list-in, list-out form
    (y,) = predictor.run([x])
    np.testing.assert_allclose(y.numpy(), out, rtol=1e-6)


def test_predictor_bad_inputs(saved_lenet):
    _, path = saved_lenet
    predictor = oar.inference.create_predictor(oar.inference.Config(path + ".pdmodel", path + ".pdiparams"))
    with pytest.raises(ValueError, match="no input 'nope'"):
        predictor.get_input_handle("nope")
    with pytest.raises(RuntimeError, match="no data for input"):
        predictor.run()
    with pytest.raises(ValueError, match="expects"):
        predictor.run([np.zeros((2, 3, 28, 28), "float32")])
    with pytest.raises(TypeError, match="Config"):
        oar.inference.create_predictor("model.pdmodel")


def run_model_binary():
    return built("inference/oar_run_model")


def test_cpp_example_program_matches_eager(saved_lenet, tmp_path):
    net, path = saved_lenet
    x = rand(2, 1, 28, 28, seed=3).numpy()
    (tmp_path / "in.bin").write_bytes(x.tobytes())
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    r = subprocess.run([run_model_binary(), path, str(tmp_path / "in.bin"), "2,1,28,28",
                        str(tmp_path / "out.bin")], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "shape 2 10" in r.stdout
    out = np.frombuffer((tmp_path / "out.bin").read_bytes(), dtype="float32").reshape(2, 10)
    np.testing.assert_allclose(out, net(oar.to_tensor(x)).numpy(), rtol=1e-5, atol=1e-6)
    # the process never loads Python
    maps = subprocess.run(["ldd", run_model_binary()], capture_output=True, text=True).stdout
    assert "libpython" not in maps


def corrupt_copies(path, tmp_path):
    model = open(path + ".pdmodel", "rb").read()
    params = open(path + ".pdiparams", "rb").read()
    cases = {
        "truncated program": (model[: len(model) // 2], params),
        "flipped program byte": (model[:40] + bytes([model[40] ^ 0xFF]) + model[41:], params),
        "truncated params": (model, params[: len(params) - 100]),
        "flipped params byte": (model, params[:-8] + bytes([params[-8] ^ 0x55]) + params[-7:]),
    }
    out = {}
    for name, (m, p) in cases.items():
        prefix = str(tmp_path / name.replace(" ", "_"))
        open(prefix + ".pdmodel", "wb").write(m)
        open(prefix + ".pdiparams", "wb").write(p)
        out[name] = prefix
    return out


def test_corrupt_files_are_rejected(saved_lenet, tmp_path):
    _, path = saved_lenet
    for name, prefix in corrupt_copies(path, tmp_path).items():
        with pytest.raises(ValueError):
            oar.jit.load(prefix)
        with pytest.raises(ValueError):
            oar.inference.create_predictor(oar.inference.Config(prefix + ".pdmodel", prefix + ".pdiparams"))
        x = tmp_path / "x.bin"
        x.write_bytes(np.zeros((1, 1, 28, 28), "float32").tobytes())
        r = subprocess.run([run_model_binary(), prefix, str(x), "1,1,28,28", str(tmp_path / "o.bin")],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 1 and "error:" in r.stderr and "valid" in r.stderr.lower() or \
            "checksum" in r.stderr or "truncated" in r.stderr, (name, r.stderr)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        oar.jit.load(str(tmp_path / "missing"))


def test_save_errors(tmp_path):
    net = lenet()
    with pytest.raises(ValueError, match="input_spec"):
        oar.jit.save(net, str(tmp_path / "m"))
    with pytest.raises(TypeError, match="nn.Layer"):
        oar.jit.save(3, str(tmp_path / "m"))


def test_save_after_calling_to_static_without_spec(tmp_path):
    net = oar.jit.to_static(lenet())
    x = rand(2, 1, 28, 28)
    ref = net(x).numpy()
    oar.jit.save(net, str(tmp_path / "m"))
    np.testing.assert_allclose(oar.jit.load(str(tmp_path / "m"))(x).numpy(), ref, rtol=1e-5, atol=1e-6)


def transformer_encoder():
    oar.seed(0)
    layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0)
    net = nn.TransformerEncoder(layer, 2)
    net.eval()
    return net


@pytest.mark.parametrize("make,shape", [(transformer_encoder, [None, 6, 32]),
                                        (lambda: oar.vision.models.resnet18(num_classes=10).eval(),
                                         [None, 3, 32, 32])])
def test_predictor_matches_eager_on_larger_models(make, shape, tmp_path):
    oar.seed(0)
    net = make()
    oar.jit.save(net, str(tmp_path / "m"), input_spec=[InputSpec(shape, "float32")])
    predictor = oar.inference.create_predictor(oar.inference.Config(str(tmp_path / "m.pdmodel"),
                                                                     str(tmp_path / "m.pdiparams")))
    x = rand(*[2 if d is None else d for d in shape], seed=1)
    (y,) = predictor.run([x])
    # float32 rounding differs: the predictor folds batch norm into the conv filters, and
    # oneDNN picks its conv layout by timing (logits ~20 differ by ~2e-5).
    np.testing.assert_allclose(y.numpy(), net(x).numpy(), rtol=1e-4, atol=1e-4)


# ---- control flow
def test_cond_becomes_cf_if():
    @oar.jit.to_static
    def f(x):
        return oar.static.nn.cond(x.sum() > 0, lambda: x * 2, lambda: x - 1)

    pos, neg = rand(4) .abs(), -rand(4, seed=1).abs()
    np.testing.assert_allclose(f(pos).numpy(), pos.numpy() * 2, rtol=1e-6)
    # same signature: the program decides at run time
    np.testing.assert_allclose(f(neg).numpy(), neg.numpy() - 1, rtol=1e-6)
    assert len(f.concrete_programs) == 1 and "cf.if" in str(f.main_program)


def test_while_loop_becomes_cf_while():
    @oar.jit.to_static
    def f(x, n):
        i = oar.zeros([1], "int64")

        def body(i, x):
            return i + 1, x * 2

        i, x = oar.static.nn.while_loop(lambda i, x: i < n, body, [i, x])
        return x

    x = rand(3)
    np.testing.assert_allclose(f(x, oar.to_tensor([3])).numpy(), x.numpy() * 8, rtol=1e-6)
    np.testing.assert_allclose(f(x, oar.to_tensor([5])).numpy(), x.numpy() * 32, rtol=1e-6)
    assert len(f.concrete_programs) == 1 and "cf.while" in str(f.main_program)


def test_cond_in_a_saved_model_runs_in_the_predictor(tmp_path):
    class Gate(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            h = self.fc(x)
            return oar.static.nn.cond(h.mean() > 0, lambda: F.relu(h), lambda: h * 0.5)

    oar.seed(0)
    net = Gate()
    oar.jit.save(net, str(tmp_path / "g"), input_spec=[InputSpec([None, 4])])
    predictor = oar.inference.create_predictor(oar.inference.Config(str(tmp_path / "g.pdmodel"),
                                                                     str(tmp_path / "g.pdiparams")))
    for seed in range(6):
        x = rand(3, 4, seed=seed) + (2.0 if seed % 2 else -2.0)
        np.testing.assert_allclose(predictor.run([x])[0].numpy(), net(x).numpy(), rtol=1e-5, atol=1e-6)


def test_control_flow_errors():
    @oar.jit.to_static
    def bad(x):
        return oar.static.nn.cond(x.sum() > 0, lambda: x, lambda: x.sum())

    with pytest.raises(ValueError, match="same structure"):
        bad(rand(3))

    @oar.jit.to_static
    def grows(x):
        return oar.static.nn.while_loop(lambda x: x.sum() < 100, lambda x: oar.concat([x, x]), [x])

    with pytest.raises(ValueError, match="keep its shape"):
        grows(rand(3).abs() + 1)
    with pytest.raises(ValueError, match="one element"):
        oar.static.nn.cond(oar.ones([2]), lambda: 1, lambda: 2)
    assert oar.static.nn.cond(True, lambda: 1, lambda: 2) == 1


def test_profiler_reports_ops(saved_lenet):
    _, path = saved_lenet
    loaded = oar.jit.load(path)
    x = rand(2, 1, 28, 28)
    with oar.profiler.Profiler(on_trace_ready=lambda p: None) as prof:
        for _ in range(3):
            loaded(x)
    stats = {n: c for n, c, _ in prof.op_stats()}
    assert stats and all(c % 3 == 0 for c in stats.values())
    assert any("conv2d" in n for n in stats)
    assert "calls" in prof.summary()


def test_config_delete_pass(saved_lenet):
    net, path = saved_lenet
    x = rand(2, 1, 28, 28, seed=4)
    config = oar.inference.Config(path + ".pdmodel", path + ".pdiparams")
    assert "fuse" in config.pass_names()
    config.delete_pass("fuse")
    config.switch_use_feed_fetch_ops(False)   # accepted (no feed/fetch ops here)
    assert "fuse" not in config.pass_names() and "passes: canonicalize" in config.summary()
    with pytest.warns(UserWarning, match="no pass 'fc_fuse_pass' here"):
        config.delete_pass("fc_fuse_pass")     # a Paddle pass name changes nothing
    predictor = oar.inference.create_predictor(config)
    ops = str(predictor.program)
    assert "pd_op.fused_conv2d" not in ops and "pd_op.conv2d" in ops
    np.testing.assert_allclose(predictor.run([x])[0].numpy(), net(x).numpy(), rtol=1e-5, atol=1e-6)


def test_set_code_level_and_verbosity_print_the_conversion(capsys):
    oar.jit.set_code_level(1, also_to_stdout=True)
    oar.jit.set_verbosity(1, also_to_stdout=True)
    try:
        @oar.jit.to_static
        def shown(x):
            if x.sum() > 0:
                x = x + 1
            return x

        shown(rand(3))
    finally:
        oar.jit.set_code_level(0)
        oar.jit.set_verbosity(0)
    out = capsys.readouterr().out
    assert "the converted code of" in out and "convert_ifelse" in out and "converted" in out


def test_scatter_writes_in_place_only_into_memory_nothing_else_holds(tmp_path):
    # Note [Donated inputs]: a program's scatter writes into its input 0 when nothing else
    # holds it (the RNN buffer of a while loop); a buffer, a parameter or a program input
    # is never written, and every run gives the same result
    class Writer(oar.nn.Layer):
        def __init__(self):
            super().__init__()
            self.register_buffer("table", oar.zeros([4, 3]))

        def forward(self, x, idx):
            base = oar.scatter(self.table, idx, x)        # input 0 is a buffer: copied
            fresh = oar.scatter(base * 1, idx, x * 2)     # input 0 is a temporary: in place
            return fresh.sum(0) + oar.scatter(x, oar.to_tensor([0]), x[:1] * 0)  # input 0 is an input

    net = Writer()
    net.eval()
    prefix = str(tmp_path / "writer")
    spec = [InputSpec([2, 3], "float32", "x"), InputSpec([2], "int64", "idx")]
    oar.jit.save(net, prefix, input_spec=spec)
    predictor = oar.inference.create_predictor(oar.inference.Config(prefix + ".pdmodel", prefix + ".pdiparams"))
    x, idx = rand(2, 3, seed=1), oar.to_tensor(np.array([3, 1]))
    kept = x.numpy().copy()
    ref = net(x, idx).numpy()
    for _ in range(3):
        np.testing.assert_allclose(predictor.run([x, idx])[0].numpy(), ref, rtol=1e-6)
    np.testing.assert_array_equal(x.numpy(), kept)
    np.testing.assert_array_equal(net.table.numpy(), np.zeros((4, 3)))
    static = oar.jit.to_static(net)
    for _ in range(2):
        np.testing.assert_allclose(static(x, idx).numpy(), ref, rtol=1e-6)
    np.testing.assert_array_equal(net.table.numpy(), np.zeros((4, 3)))


def test_in_place_scatter_is_seen_through_views():
    x = oar.zeros([4, 3])
    view = x[1:3]
    x.scatter_(oar.to_tensor([1]), oar.ones([1, 3]))
    np.testing.assert_array_equal(view.numpy()[0], np.ones(3))
    y = oar.zeros([5, 2])
    alias = y.reshape([10])
    y[2] = 7.0
    np.testing.assert_array_equal(alias.numpy()[4:6], [7.0, 7.0])

"""The static path on a device (issue 13): programs are lowered for the place they run on
(Note [Lowering for a place] in pir/transforms/inplace_lower.cc): the device's kernels,
the CPU's through the fallback for the rest. to_static training on the device matches
eager training on the CPU; a saved model runs on the device in both predictors (Python
oar.inference and the C++ oar_run_model) with Config.enable_custom_device, equal to the
CPU predictor."""
import os
import subprocess

import numpy as np
import pytest

import oar
from oar import nn
from oar.static import InputSpec
from build_tree import built

from sample_plugin import sample_plugin_path


def run_model_binary():
    return built("inference/oar_run_model")


class MLP(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(nn.functional.relu(self.fc1(x)))


def make_data(steps=8, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((5, 6)).astype("float32"), rng.integers(0, 3, (5, 1)).astype("int64"))
            for _ in range(steps)]


def init_state():
    oar.seed(7)
    return {k: v.numpy() for k, v in MLP().state_dict().items()}


def train(device, state, data, static):
    """Trains an MLP on `device` (to_static or eager); returns the losses, the final
    parameters (as numpy) and the model."""
    model = MLP()
    model.set_state_dict(state)
    model.to(device)
    oar.set_device(device)
    try:
        if static:
            model = oar.jit.to_static(model)
        opt = oar.optimizer.Adam(learning_rate=1e-2, parameters=model.parameters())
        loss_fn = nn.CrossEntropyLoss()
        losses = []
        for x, y in data:
            out = model(oar.to_tensor(x))
            assert out.place.device_str() == device
            loss = loss_fn(out, oar.to_tensor(y))
            loss.backward()
            opt.step()
            opt.clear_grad()
            losses.append(loss.item())
        return np.array(losses), {k: v.numpy() for k, v in model.state_dict().items()}, model
    finally:
        oar.set_device("cpu")


def test_to_static_training_on_the_device_matches_eager_on_the_cpu(device):
    state, data = init_state(), make_data()
    ref_losses, ref_state, _ = train("cpu", state, data, static=False)
    losses, got_state, model = train(device, state, data, static=True)
    assert ref_losses[-1] < ref_losses[0]  # it learned something
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    for k in ref_state:
        np.testing.assert_allclose(got_state[k], ref_state[k], rtol=1e-5, atol=1e-7, err_msg=k)
    # the programs were lowered for the device and run there, forward and backward
    (prog,) = model.forward.concrete_programs
    assert prog.place.device_str() == device
    assert prog.executor.place.device_str() == device
    assert prog.backward_executor.place.device_str() == device


def test_static_graph_programs_built_with_the_device_current(device):
    """Paddle's static-graph API (enable_static, static.nn.fc, Executor) with the device
    current: the startup program's initial values and the captured constants were made on
    the device, and the program builder copies them to the host through the device table
    (it read them as host memory and crashed)."""
    from oar import static
    feed = {"x": np.random.default_rng(2).standard_normal((4, 3)).astype("float32")}
    oar.enable_static()
    try:
        with static.scope_guard(static.Scope()):
            main, startup = static.Program(), static.Program()
            with static.program_guard(main, startup):
                x = static.data("x", [None, 3], "float32")
                y = static.nn.fc(x, 2)
                loss = oar.mean(y * y)
                oar.optimizer.SGD(0.1).minimize(loss)
            exe = static.Executor()
            exe.run(startup)
            w = static.global_scope().find_var(main.all_parameters()[0].name).get_tensor()
            w0, b0 = np.array(w), np.zeros(2)  # fc's bias starts at 0
            got_y, got_loss = exe.run(main, feed=feed, fetch_list=[y, loss])
            w1 = np.array(w)
    finally:
        oar.disable_static()
    want_y = feed["x"].astype("float64") @ w0.astype("float64") + b0
    np.testing.assert_allclose(got_y, want_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_loss, np.mean(want_y ** 2), rtol=1e-5)
    np.testing.assert_allclose(w1, w0 - 0.1 * feed["x"].T.astype("float64") @ (2 * want_y / want_y.size),
                               rtol=1e-4, atol=1e-6)


def _static_train(place, prefix):
    """A static MLP trained 4 steps by Executor(place); saved, loaded and run by it (its
    parameters named after the place)."""
    from oar import static
    rng = np.random.default_rng(3)
    batches = [(rng.standard_normal((6, 5)).astype("float32"), rng.integers(0, 3, (6, 1)).astype("int64"))] * 4
    oar.seed(11)  # the initial values are drawn while the program is built
    oar.enable_static()
    try:
        main, startup = static.Program(), static.Program()
        with oar.utils.unique_name.guard(os.path.basename(prefix) + "_"), static.program_guard(main, startup), \
                static.scope_guard(static.Scope()):
            x = static.data("x", [None, 5], "float32")
            label = static.data("label", [None, 1], "int64")
            logits = static.nn.fc(static.nn.fc(x, 8, activation="relu"), 3)
            loss = oar.mean(oar.nn.functional.cross_entropy(logits, label))
            oar.optimizer.Adam(learning_rate=0.05).minimize(loss)
            exe = static.Executor(place)
            exe.run(startup)
            losses = [float(exe.run(main, feed={"x": xb, "label": yb}, fetch_list=[loss])[0]) for xb, yb in batches]
            static.save_inference_model(prefix, [x], [logits], exe)
            prog, feeds, fetches = static.load_inference_model(prefix, exe)
            (out,) = exe.run(prog, feed={feeds[0]: batches[0][0]}, fetch_list=fetches, return_numpy=False)
    finally:
        oar.disable_static()
    return np.array(losses), out


def test_static_executor_trains_saves_and_loads_on_the_place_it_is_given(sample, tmp_path):
    """static.Executor(place) runs its programs on `place` (Paddle's Executor(paddle.CustomPlace(...))),
    the current device staying the CPU; a program saved and loaded there runs there too."""
    ref_losses, ref_out = _static_train(oar.CPUPlace(), str(tmp_path / "cpu"))
    losses, out = _static_train(oar.CustomPlace("sample", 0), str(tmp_path / "sample"))
    assert ref_losses[-1] < ref_losses[0]
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    assert out.place.device_str() == "sample:0" and ref_out.place.device_str() == "cpu"
    np.testing.assert_allclose(out.numpy(), ref_out.numpy(), rtol=1e-5, atol=1e-6)


def test_executor_runs_a_program_on_the_place_it_is_given(sample):
    def f(x, w):
        return oar.exp(oar.matmul(x, w)) + 1.0

    rng = np.random.default_rng(1)
    xs, ws = rng.standard_normal((4, 3)).astype("float32"), rng.standard_normal((3, 2)).astype("float32")
    prog = oar.jit.to_static(f)
    want = np.exp(xs.astype("float64") @ ws.astype("float64")) + 1.0
    np.testing.assert_allclose(prog(oar.to_tensor(xs), oar.to_tensor(ws)).numpy(), want, rtol=1e-5)
    x, w = oar.to_tensor(xs, place="sample:0"), oar.to_tensor(ws, place="sample:0")
    out = prog(x, w)  # a second signature: the same shapes on another place
    assert out.place.device_str() == "sample:0"
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5)
    assert sorted(p.place.device_str() for p in prog.concrete_programs) == ["cpu", "sample:0"]
    # The binding: a program lowered for the CPU runs on the device through the fallback.
    program = prog.concrete_programs[0].program
    ex = oar._C.pir.Executor(program.run_pipeline("jit-infer", lower_copy=True), oar.CustomPlace("sample", 0))
    (got,) = ex.run([x, w], {})
    assert got.place.device_str() == "sample:0"
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5)


def test_fallback_off_refuses_to_lower_or_run_for_the_device(sample):
    def f(x):
        return oar.tanh(x) * 2.0

    xs = np.array([0.5, -1.0], "float32")
    static = oar.jit.to_static(f)
    static(oar.to_tensor(xs))  # converted (and traced) on the CPU
    program = static.concrete_programs[0].program
    lowered_cpu = program.run_pipeline("jit-infer", lower_copy=True)
    sample0 = oar.CustomPlace("sample", 0)
    oar.set_flags({"FLAGS_enable_api_kernel_fallback": False})
    try:
        with pytest.raises(TypeError, match=r"lower_to_kernel: no sample kernel 'tanh' for dtype float32 "
                                            r"\(op pd_op\.tanh\), and FLAGS_enable_api_kernel_fallback is off"):
            program.run_pipeline("jit-infer", lower_copy=True, place=sample0)
        with pytest.raises(TypeError, match=r"no sample kernel 'tanh'"):
            oar._C.pir.Executor(program, sample0)  # lowers its own copy for the place
        with pytest.raises(TypeError, match=r"Executor: pd_op\.tanh has no sample kernel for dtype float32 and "
                                            r"FLAGS_enable_api_kernel_fallback is off"):
            oar._C.pir.Executor(lowered_cpu, sample0)
        # on the CPU nothing changes
        (y,) = oar._C.pir.Executor(lowered_cpu).run([oar.to_tensor(xs)], {})
        np.testing.assert_allclose(y.numpy(), np.tanh(xs) * 2.0, rtol=1e-6)
    finally:
        oar.set_flags({"FLAGS_enable_api_kernel_fallback": True})
    ex = oar._C.pir.Executor(program.run_pipeline("jit-infer", lower_copy=True, place=sample0), sample0)
    (y,) = ex.run([oar.to_tensor(xs, place="sample:0")], {})
    assert y.place.device_str() == "sample:0"
    np.testing.assert_allclose(y.numpy(), np.tanh(xs) * 2.0, rtol=1e-6)


@pytest.fixture(scope="module")
def saved_mlp(tmp_path_factory, sample):
    """An MLP trained 4 steps under to_static on sample:0, then saved."""
    state, data = init_state(), make_data(steps=4)
    _, _, model = train("sample:0", state, data, static=True)
    path = str(tmp_path_factory.mktemp("static_device") / "mlp")
    model.eval()
    oar.jit.save(model, path, input_spec=[InputSpec([None, 6], "float32", "x")])
    return path


def predict(path, x, device=None):
    config = oar.inference.Config(path + ".pdmodel", path + ".pdiparams")
    if device is not None:
        config.enable_custom_device(*device)
        assert config.use_custom_device() and config.custom_device_type() == device[0]
        assert f"device: {device[0]}:{device[1]}" in config.summary()
    predictor = oar.inference.create_predictor(config)
    h = predictor.get_input_handle(predictor.get_input_names()[0])
    h.reshape(list(x.shape))
    h.copy_from_cpu(x)
    predictor.run()
    out = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
    outs = predictor.run([x])  # the list form returns oar Tensors on the predictor's place
    return out, outs[0]


def test_python_predictor_on_the_device_equals_the_cpu_predictor(saved_mlp):
    x = np.random.default_rng(3).standard_normal((7, 6)).astype("float32")
    cpu_out, cpu_t = predict(saved_mlp, x)
    dev_out, dev_t = predict(saved_mlp, x, ("sample", 0))
    assert cpu_t.place.device_str() == "cpu" and dev_t.place.device_str() == "sample:0"
    np.testing.assert_allclose(dev_out, cpu_out, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(dev_t.numpy(), cpu_out, rtol=1e-6, atol=1e-7)
    # and the CPU predictor equals the loaded layer
    loaded = oar.jit.load(saved_mlp)
    np.testing.assert_allclose(cpu_out, loaded(oar.to_tensor(x)).numpy(), rtol=1e-5, atol=1e-6)


def test_enable_custom_device_checks_its_arguments(saved_mlp):
    config = oar.inference.Config(saved_mlp)
    with pytest.raises(ValueError, match=r"device 'nodev:0' is not available; registered device types"):
        config.enable_custom_device("nodev", 0)
    with pytest.raises(ValueError, match=r"'sample' has 2 device\(s\)"):
        config.enable_custom_device("sample", 5)
    with pytest.raises(TypeError, match="expected \\(str, int\\)"):
        config.enable_custom_device(0, "sample")
    assert not config.use_custom_device() and "device: cpu" in config.summary()
    config.enable_custom_device("sample", 1)
    assert config.custom_device_id() == 1
    config.disable_custom_device()
    assert not config.use_custom_device()


def run_cpp(path, x, tmp_path, device=None, plugin_dir=None):
    (tmp_path / "in.bin").write_bytes(x.tobytes())
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.pop("CUSTOM_DEVICE_ROOT", None)
    if plugin_dir is not None:
        env["CUSTOM_DEVICE_ROOT"] = str(plugin_dir)
    cmd = [run_model_binary(), path, str(tmp_path / "in.bin"), ",".join(map(str, x.shape)), str(tmp_path / "out.bin")]
    if device:
        cmd += ["--device", device]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    out = np.frombuffer((tmp_path / "out.bin").read_bytes(), dtype="float32") if r.returncode == 0 else None
    return r, out


def test_cpp_predictor_on_the_device_equals_the_cpu_predictor(saved_mlp, tmp_path):
    plugin_dir = tmp_path / "plugins"  # CUSTOM_DEVICE_ROOT: the folder the C++ predictor scans
    plugin_dir.mkdir()
    os.symlink(sample_plugin_path(), plugin_dir / "liboar_sample_device.so")
    x = np.random.default_rng(4).standard_normal((3, 6)).astype("float32")
    r_cpu, cpu_out = run_cpp(saved_mlp, x, tmp_path)
    assert r_cpu.returncode == 0, r_cpu.stderr
    r_dev, dev_out = run_cpp(saved_mlp, x, tmp_path, "sample:1", plugin_dir)
    assert r_dev.returncode == 0, r_dev.stderr
    assert "shape 3 3" in r_dev.stdout
    np.testing.assert_allclose(dev_out, cpu_out, rtol=1e-6, atol=1e-7)
    py_out, _ = predict(saved_mlp, x)
    np.testing.assert_allclose(cpu_out.reshape(3, 3), py_out, rtol=1e-6, atol=1e-7)
    # no plugin found: an error naming the device type and what to do
    r_bad, _ = run_cpp(saved_mlp, x, tmp_path, "sample:0")
    assert r_bad.returncode != 0
    assert "no device type 'sample' is registered" in r_bad.stderr and "CUSTOM_DEVICE_ROOT" in r_bad.stderr
    r_id, _ = run_cpp(saved_mlp, x, tmp_path, "sample:7", plugin_dir)
    assert r_id.returncode != 0 and "device id 7 of 'sample' is out of range (it has 2" in r_id.stderr


def test_jit_load_puts_the_layer_on_the_current_device_and_fine_tunes_there(saved_mlp):
    """oar.jit.load with a device current (Paddle loads onto the expected place): the
    state lands there, the program runs there, and a fine-tuning step trains there; after
    .to('cpu') the same layer runs on the CPU."""
    x = np.random.default_rng(4).standard_normal((5, 6)).astype("float32")
    y = np.array([[0], [1], [2], [1], [0]], "int64")
    want = oar.jit.load(saved_mlp)(oar.to_tensor(x)).numpy()
    oar.set_device("sample:0")
    try:
        layer = oar.jit.load(saved_mlp)
        assert {p.place.device_str() for p in layer.parameters()} == {"sample:0"}
        with oar.no_grad():
            out = layer(oar.to_tensor(x))
        assert out.place.device_str() == "sample:0"
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)
        opt = oar.optimizer.SGD(0.5, parameters=layer.parameters())
        losses = []
        for _ in range(3):
            loss = nn.functional.cross_entropy(layer(oar.to_tensor(x)), oar.to_tensor(y))
            loss.backward()
            assert all(p.grad.place.device_str() == "sample:0" for p in layer.parameters())
            opt.step()
            opt.clear_grad()
            losses.append(float(loss))
        assert losses[-1] < losses[0], losses
    finally:
        oar.set_device("cpu")
    layer.to("cpu")
    with oar.no_grad():
        tuned = layer(oar.to_tensor(x))
    assert tuned.place.device_str() == "cpu"
    assert not np.allclose(tuned.numpy(), want)  # the fine-tuned state moved with the layer

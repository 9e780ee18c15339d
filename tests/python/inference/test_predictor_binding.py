"""The named pass pipelines (pir/pass/pipelines.h), the one saved-model loader and the
Python predictor as a binding of the C++ one: the pipelines are named the same from C++
and Python, every program the executor runs has been lowered to kernels (no pd_op op
left) while the programs users see stay in the op dialect, the C++ example program and
the Python predictor give identical outputs, and broken files name the file and the
problem."""
import os
import subprocess

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar.static import InputSpec
from build_tree import built

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
_pir = oar._C.pir


def rand(*shape, seed=0):
    return oar.to_tensor(np.random.default_rng(seed).standard_normal(shape).astype("float32"))


def op_names(program):
    return [op.name for op in program.ops(recursive=True)]


@pytest.fixture(scope="module")
def saved_lenet(tmp_path_factory):
    oar.seed(0)
    net = oar.vision.models.LeNet()
    net.eval()
    path = str(tmp_path_factory.mktemp("lenet") / "model")
    oar.jit.save(net, path, input_spec=[InputSpec([None, 1, 28, 28], "float32", "image")])
    return net, path


def predictor_of(path, **opts):
    config = oar.inference.Config(path + ".pdmodel", path + ".pdiparams")
    for k, v in opts.items():
        getattr(config, k)(v)
    return oar.inference.create_predictor(config)


# ---- pipelines
def test_pipelines_are_registered_and_named_the_same_from_python():
    names = _pir.registered_pipelines()
    for want in ("jit-train", "jit-infer", "predictor"):
        assert want in names
    # the exact lists the C++ test (test_pir_passes.cc, PirPipelines) expects
    assert _pir.pipeline("predictor") == "canonicalize,constant_fold,cse,fuse,fold_parameters,dce,lower_to_kernel"
    assert _pir.pipeline("predictor-memory").split(",")[-2:] == ["inplace", "lower_to_kernel"]
    for name in names:
        assert _pir.pipeline(name).split(",") == _pir.pipeline_passes(name)
        assert _pir.pipeline_passes(name)[-1] == "lower_to_kernel"
    with pytest.raises(RuntimeError, match="unknown pass pipeline 'nope'.*jit-train"):
        _pir.pipeline("nope")


def test_config_pass_names_come_from_the_pipelines():
    config = oar.inference.Config()
    assert config.pass_names() == _pir.pipeline_passes("predictor")
    config.enable_memory_optim()
    assert config.pass_names() == _pir.pipeline_passes("predictor-memory")
    config.switch_ir_optim(False)  # the analysis passes go, in-place rewriting and lowering stay
    assert config.pass_names() == ["inplace", "lower_to_kernel"]
    config.enable_memory_optim(False)
    assert config.pass_names() == ["lower_to_kernel"]
    config.switch_ir_optim(True)
    config.delete_pass("cse")
    assert "cse" not in config.pass_names() and "passes: canonicalize,constant_fold,fuse" in config.summary()
    with pytest.raises(ValueError, match="lower_to_kernel' cannot be left out"):
        config.delete_pass("lower_to_kernel")


def test_run_pipeline_by_name_on_a_program():
    p = _pir.parse("""
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<4xf32>)
  %a = "pd_op.exp"(%x) : (tensor<4xf32>) -> (tensor<4xf32>)
  %b = "pd_op.exp"(%x) : (tensor<4xf32>) -> (tensor<4xf32>)
  %s = "pd_op.add"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>)
  "builtin.output"(%s) {name = "y"} : (tensor<4xf32>) -> ()
}""")
    lowered = p.run_pipeline("jit-infer", lower_copy=True)
    assert op_names(p).count("pd_op.exp") == 1 and "kernel.phi_kernel" not in op_names(p)
    assert not any(n.startswith("pd_op.") for n in op_names(lowered))
    x = rand(4)
    (y,) = _pir.Executor(lowered).run([x])
    np.testing.assert_allclose(y.numpy(), 2 * np.exp(x.numpy()), rtol=1e-6)
    p.run_pipeline("jit-infer")  # in place, lowering included
    assert op_names(p) == op_names(lowered)
    p.run_passes("standard")     # run_passes takes pipeline names too


# ---- every executed program is lowered; the programs users see stay op dialect
def test_jit_programs_run_lowered_and_show_the_op_dialect():
    oar.seed(0)
    net = oar.jit.to_static(oar.vision.models.LeNet())
    x = rand(2, 1, 28, 28)
    loss = F.cross_entropy(net(x), oar.to_tensor(np.array([1, 3])))
    loss.backward()  # a training signature: forward and backward programs
    (entry,) = net.forward.concrete_programs
    for shown, executed in ((entry.program, entry.executed_program),
                            (entry.backward_program, entry.executed_backward_program)):
        text = str(executed)  # the lowered program, printed
        assert "kernel.phi_kernel" in text
        assert not [n for n in op_names(executed) if n.startswith("pd_op.")], text
        assert "pd_op.conv2d" in op_names(shown) + op_names(entry.program)
        assert "kernel.phi_kernel" not in op_names(shown)
    with oar.no_grad():  # a forward-only signature: the jit-infer pipeline
        net(rand(3, 1, 28, 28))
    infer = [e for e in net.forward.concrete_programs if e.backward_program is None][0]
    assert not [n for n in op_names(infer.executed_program) if n.startswith("pd_op.")]
    assert "pd_op.conv2d" in op_names(infer.program)


def test_predictor_and_loaded_layer_programs_are_lowered(saved_lenet):
    net, path = saved_lenet
    for opts in ({}, {"enable_memory_optim": True}, {"switch_ir_optim": False}):
        pred = predictor_of(path, **opts)
        text = str(pred.program)
        assert not [n for n in op_names(pred.program) if n.startswith("pd_op.")], text
        x = rand(2, 1, 28, 28, seed=5)
        np.testing.assert_allclose(pred.run([x])[0].numpy(), net(x).numpy(), rtol=1e-5, atol=1e-5)
    loaded = oar.jit.load(path)
    assert "pd_op.conv2d" in op_names(loaded.program)  # as saved


# ---- one loader; the C++ and Python predictors are one predictor
def run_model_binary():
    return built("inference/oar_run_model")


@pytest.mark.parametrize("batch", [1, 4])
def test_cpp_and_python_predictors_give_identical_outputs(saved_lenet, tmp_path, batch, monkeypatch):
    # Bit-equal only with one convolution algorithm in both processes: each times its
    # candidates once per geometry and keeps the fastest, so under load the two may pick
    # different ones (equal to ~1e-6, summed in another order). As in test_capi.py.
    monkeypatch.setenv("OAR_CONV_ALGO", "onednn")
    _, path = saved_lenet
    x = rand(batch, 1, 28, 28, seed=11).numpy()
    (tmp_path / "in.bin").write_bytes(x.tobytes())
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    r = subprocess.run([run_model_binary(), path, str(tmp_path / "in.bin"), f"{batch},1,28,28",
                        str(tmp_path / "out.bin")], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    cpp = np.frombuffer((tmp_path / "out.bin").read_bytes(), dtype="float32").reshape(batch, 10)
    pred = predictor_of(path)
    h = pred.get_input_handle("image")
    h.reshape(x.shape)
    h.copy_from_cpu(x)
    assert pred.run() is None  # as Paddle's; a failure raises
    np.testing.assert_array_equal(pred.get_output_handle(pred.get_output_names()[0]).copy_to_cpu(), cpp)


def test_handles(saved_lenet):
    net, path = saved_lenet
    pred = predictor_of(path)
    h = pred.get_input_handle("image")
    out = pred.get_output_handle(pred.get_output_names()[0])
    assert h.name() == "image" and h.type() == oar.float32 and out.type() is None
    x = rand(3, 1, 28, 28, seed=2)
    h.share_external_data(x)  # no copy: the input reads x's memory
    assert h.shape() == [3, 1, 28, 28]
    np.testing.assert_array_equal(h.copy_to_cpu(), x.numpy())
    pred.run()
    assert out.shape() == [3, 10] and out.type() == oar.float32
    # the predictor's fused kernels round differently: absolute error relative to outputs ~8
    np.testing.assert_allclose(out.copy_to_cpu(), net(x).numpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(RuntimeError, match="is an output"):
        out.reshape([1])
    with pytest.raises(TypeError, match="numpy.ndarray"):
        h.copy_from_cpu([1.0, 2.0])
    with pytest.raises(TypeError, match="float32, got float64"):
        h.copy_from_cpu(np.zeros((1, 1, 28, 28)))
    del pred  # the handles keep the predictor alive
    np.testing.assert_allclose(out.copy_to_cpu(), net(x).numpy(), rtol=1e-5, atol=1e-5)


def test_profile_threads_and_clone(saved_lenet):
    _, path = saved_lenet
    config = oar.inference.Config(path + ".pdmodel", path + ".pdiparams")
    config.enable_profile()
    config.set_cpu_math_library_num_threads(2)
    assert "cpu_math_threads: 2" in config.summary() and "profile: True" in config.summary()
    with pytest.raises(ValueError, match="positive int"):
        config.set_cpu_math_library_num_threads(0)
    pred = oar.inference.create_predictor(config)
    before = oar._C.get_num_threads()
    x = rand(1, 1, 28, 28)
    for _ in range(3):
        pred.run([x])
    assert oar._C.get_num_threads() == before  # the config's threads hold during run only
    prof = pred.profile()
    assert prof and all(calls % 3 == 0 for _, calls, _ in prof)
    assert any("conv2d" in name for name, _, _ in prof)
    np.testing.assert_array_equal(pred.clone().run([x])[0].numpy(), pred.run([x])[0].numpy())
    with oar.profiler.Profiler(on_trace_ready=lambda prof: None) as p:
        pred.run([x])
    assert p.op_stats()


def test_truncated_or_corrupt_saved_model_names_the_file_and_problem(saved_lenet, tmp_path):
    _, path = saved_lenet
    model = open(path + ".pdmodel", "rb").read()
    params = open(path + ".pdiparams", "rb").read()
    cases = [("short_program", model[:100], params, ".pdmodel", "truncated"),
             ("bad_program", model[:-9] + bytes([model[-9] ^ 0x10]) + model[-8:], params, ".pdmodel", "checksum"),
             ("short_params", model, params[:4], ".pdiparams", r"truncated \(4 bytes, no header\)"),
             ("cut_params", model, params[:-1], ".pdiparams", "truncated|bytes"),
             ("bad_params", model, params[:-4] + bytes([params[-4] ^ 1]) + params[-3:], ".pdiparams", "checksum")]
    for name, m, p, bad, why in cases:
        prefix = str(tmp_path / name)
        open(prefix + ".pdmodel", "wb").write(m)
        open(prefix + ".pdiparams", "wb").write(p)
        for load in (oar.jit.load, lambda q: predictor_of(q)):
            with pytest.raises(ValueError, match=why) as e:
                load(prefix)
            assert prefix + bad in str(e.value), (name, str(e.value))
    os.remove(str(tmp_path / "bad_params.pdiparams"))
    with pytest.raises(FileNotFoundError, match="bad_params.pdiparams' does not exist"):
        predictor_of(str(tmp_path / "bad_params"))
    # a folder in a file's place is named, not read (reading it would see a bogus size)
    os.mkdir(str(tmp_path / "bad_params.pdiparams"))
    with pytest.raises(ValueError, match="bad_params.pdiparams' is a directory"):
        predictor_of(str(tmp_path / "bad_params"))
    prefix = str(tmp_path / "dir_model")
    os.mkdir(prefix + ".pdmodel")
    open(prefix + ".pdiparams", "wb").write(params)
    with pytest.raises(ValueError, match="dir_model.pdmodel' is a directory"):
        predictor_of(prefix)

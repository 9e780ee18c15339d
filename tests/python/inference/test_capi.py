"""The predictor's C API (inference/capi/pd_inference_c.h): the C program
inference/examples/run_model_c.c, built by CMake, loads a saved LeNet through it and must
give the Python predictor's outputs exactly, on the CPU and on the sample device, after
checking its error statuses and messages."""
import os
import shutil
import site
import subprocess
import sys

import numpy as np
import pytest

import oar
from oar.static import InputSpec
from build_tree import built

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def binary():
    return built("inference/oar_run_model_c")


@pytest.fixture(scope="module")
def saved_lenet(tmp_path_factory):
    oar.seed(0)
    net = oar.vision.models.LeNet()
    net.eval()
    path = str(tmp_path_factory.mktemp("lenet_capi") / "model")
    oar.jit.save(net, path, input_spec=[InputSpec([None, 1, 28, 28], "float32", "image")])
    return path


def run_c(path, x, tmp_path, *extra, env=None, exe=None):
    (tmp_path / "in.bin").write_bytes(x.tobytes())
    env = dict({k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}, **(env or {}))
    r = subprocess.run([exe or binary(), path, str(tmp_path / "in.bin"), ",".join(map(str, x.shape)),
                        str(tmp_path / "out.bin"), *extra], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "errors ok" in r.stdout and "inputs: 1 (image)" in r.stdout, r.stdout
    return r.stdout, np.frombuffer((tmp_path / "out.bin").read_bytes(), dtype="float32")


def python_predictor(path, x, device=None):
    config = oar.inference.Config(path + ".pdmodel", path + ".pdiparams")
    if device:
        config.enable_custom_device(*device)
    pred = oar.inference.create_predictor(config)
    h = pred.get_input_handle("image")
    h.reshape(x.shape)
    h.copy_from_cpu(x)
    assert pred.run() is None  # as Paddle's; a failure raises
    return pred.get_output_handle(pred.get_output_names()[0]).copy_to_cpu()


@pytest.mark.parametrize("batch", [1, 3])
def test_c_api_matches_the_python_predictor(saved_lenet, tmp_path, batch, monkeypatch):
    # Bit-equal only with one convolution algorithm on both sides: each process times its
    # candidates once per geometry and keeps the fastest, so under load two processes may
    # pick different ones (equal to ~1e-6, summed in another order).
    monkeypatch.setenv("OAR_CONV_ALGO", "onednn")
    x = np.random.default_rng(batch).standard_normal((batch, 1, 28, 28)).astype("float32")
    out, got = run_c(saved_lenet, x, tmp_path)
    assert f"shape: {batch},10" in out, out
    np.testing.assert_array_equal(got.reshape(batch, 10), python_predictor(saved_lenet, x))


def test_c_api_on_a_plugin_device(saved_lenet, tmp_path):
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "_sample_plugin", os.path.join(ROOT, "tests", "python", "device", "sample_plugin.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    lib = mod.sample_plugin_path()
    if "sample" not in oar.device.get_all_custom_device_type():
        oar.device.load_plugin(lib)
    plugin_dir = tmp_path / "plugins"  # CUSTOM_DEVICE_ROOT: the folder the C++ predictor scans
    plugin_dir.mkdir()
    os.symlink(lib, plugin_dir / "liboar_sample_device.so")
    x = np.random.default_rng(7).standard_normal((2, 1, 28, 28)).astype("float32")
    out, got = run_c(saved_lenet, x, tmp_path, "sample:0", env={"CUSTOM_DEVICE_ROOT": str(plugin_dir)})
    ref = python_predictor(saved_lenet, x, device=("sample", 0))
    np.testing.assert_allclose(got.reshape(2, 10), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ref, python_predictor(saved_lenet, x), rtol=1e-5, atol=1e-5)


def test_sysconfig_names_the_c_api_header_and_libraries():
    inc, lib = oar.sysconfig.get_include(), oar.sysconfig.get_lib()
    for h in ("pd_inference_c.h", "device_ext.h", "kernel_ext.h"):
        assert os.path.isfile(os.path.join(inc, "oar", h)), (inc, h)
    for so in ("liboar_inference_c.so", "liboar_inference.so"):
        assert os.path.isfile(os.path.join(lib, so)), (lib, so)


def test_the_installed_c_api_builds_a_program(saved_lenet, tmp_path, monkeypatch):
    """The wheel's layout: the build installed into <site>/oar (`cmake --install`, what
    scikit-build does for the wheel) with the Python package beside it. A fresh interpreter
    importing that package finds the header and the library through oar.sysconfig; a C
    program compiled against those alone (the C API example) equals the Python predictor."""
    # Bit-equal only with one convolution algorithm in both processes (as above): under
    # load their timings may pick different candidates.
    monkeypatch.setenv("OAR_CONV_ALGO", "onednn")
    build = os.path.dirname(os.path.dirname(binary()))
    pkg_site = tmp_path / "site"
    pkg = pkg_site / "oar"
    r = subprocess.run(["cmake", "--install", build, "--prefix", str(pkg)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    shutil.copytree(os.path.join(ROOT, "python", "oar"), pkg, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    import scipy_openblas32  # the wheel's dependency, a sibling package in site-packages
    os.symlink(os.path.dirname(scipy_openblas32.__file__), pkg_site / "scipy_openblas32")
    # -S: no site hooks, so no editable install redirects `import oar`; NumPy from this
    # interpreter's site-packages after the installed tree.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "OAR_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(pkg_site), *site.getsitepackages()])
    r = subprocess.run([sys.executable, "-S", "-c", "import oar; print(oar.__file__); "
                        "print(oar.sysconfig.get_include()); print(oar.sysconfig.get_lib())"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    init, inc, lib = r.stdout.split()
    assert (init, inc, lib) == (str(pkg / "__init__.py"), str(pkg / "include"), str(pkg / "libs"))
    exe = str(tmp_path / "run_model_c")
    cc = shutil.which("cc") or shutil.which("gcc")
    r = subprocess.run([cc, "-std=c99", "-Wall", "-Werror", os.path.join(ROOT, "inference", "examples", "run_model_c.c"),
                        "-I", inc, "-L", lib, "-loar_inference_c", "-Wl,-rpath," + lib, "-o", exe],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    x = np.random.default_rng(3).standard_normal((2, 1, 28, 28)).astype("float32")
    out, got = run_c(saved_lenet, x, tmp_path, exe=exe)
    assert "shape: 2,10" in out, out
    np.testing.assert_array_equal(got.reshape(2, 10), python_predictor(saved_lenet, x))

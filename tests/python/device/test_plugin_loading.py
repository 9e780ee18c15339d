"""Device plugins at `import oar` (issue 13, Part 2): discovery through CUSTOM_DEVICE_ROOT
and site-packages/oar_custom_device/, one warning per refused library, load_plugin's
errors, and plugin failures as Python exceptions carrying the plugin's message.

The plugins are tests/cpp/backends/testdev_plugin.c compiled here against the public
headers alone (backends/include/oar/), one library per variant; each check runs in a
fresh interpreter so the devices it loads stay out of this process."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SOURCE = os.path.join(REPO, "tests", "cpp", "backends", "testdev_plugin.c")

# library name -> compile definitions (see the top of testdev_plugin.c)
VARIANTS = {
    "testdev": ['TESTDEV_NAME="testdev"'],
    "testdev_v10": ['TESTDEV_NAME="testdev_v10"', "TESTDEV_ABI_10"],
    "testdev_v11": ['TESTDEV_NAME="testdev_v11"', "TESTDEV_ABI_11"],
    "testdev_newer": ['TESTDEV_NAME="testdev_newer"', "TESTDEV_NEWER_MINOR"],
    "testdev_major2": ['TESTDEV_NAME="testdev_major2"', "TESTDEV_ABI_MAJOR=2"],
    "testdev_no_entry": ["TESTDEV_NO_ENTRY"],
    "testdev_short": ['TESTDEV_NAME="testdev_short"', "TESTDEV_SHORT_TABLE"],
    "testdev_missing": ['TESTDEV_NAME="testdev_missing"', "TESTDEV_MISSING_SLOT"],
    "testdev_init_fails": ['TESTDEV_NAME="testdev_init_fails"', "TESTDEV_INIT_FAILS"],
    "testdev_unknown_op": ['TESTDEV_NAME="testdev_unknown_op"', "TESTDEV_BAD_KERNEL=1"],
    "testdev_bad_update": ['TESTDEV_NAME="testdev_bad_update"', "TESTDEV_BAD_KERNEL=4"],
}
# The runtime's minor version, as the header the plugins are built against says.
with open(os.path.join(REPO, "backends", "include", "oar", "device_ext.h")) as _f:
    MINOR = int(next(line.split()[2] for line in _f if line.startswith("#define OAR_DEVICE_ABI_VERSION_MINOR")))
GOOD = {"testdev": f"1.{MINOR}", "testdev_v10": "1.0", "testdev_v11": "1.1", "testdev_newer": f"1.{MINOR + 8}"}
# refused library -> what its warning must say besides the file and the versions
REFUSED = {
    "testdev_major2": f"device 'testdev_major2', plugin ABI 2.{MINOR}",
    "testdev_no_entry": "no device type",
    "testdev_short": "OAR_DeviceInterface.struct_size is 16",
    "testdev_missing": "memory_copy_d2h is null",
    "testdev_init_fails": "no device found (driver not loaded)",
    "testdev_unknown_op": "register_kernel('no_such_op', float32): unknown op",
    "testdev_bad_update": "register_kernel('adam_update', float32): the update kernel's signature is "
                          "(Tensor[] params, Tensor[] grads, Tensor[] state0, Tensor[] state1, float[] lrs",
}


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    """Compiles every variant once; returns {name: path}."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the test plugins")
    out = tmp_path_factory.mktemp("plugins")
    paths = {}
    for name, defs in VARIANTS.items():
        path = out / f"lib{name}.so"
        cmd = [cc, "-shared", "-fPIC", "-O1", "-fvisibility=hidden", "-I", os.path.join(REPO, "backends", "include")]
        cmd += [f"-D{d}" for d in defs] + [SOURCE, "-o", str(path)]
        subprocess.run(cmd, check=True, capture_output=True)
        paths[name] = str(path)
    return paths


def folder(tmp_path, libs, names, sub="root"):
    d = tmp_path / sub
    d.mkdir(parents=True)
    for n in names:
        shutil.copy(libs[n], d / os.path.basename(libs[n]))
    return d


def run(code, root=None, **env):
    """Runs `code` after `import oar` in a fresh interpreter; returns (stdout, stderr)."""
    full_env = {k: v for k, v in os.environ.items() if k != "CUSTOM_DEVICE_ROOT"}
    if root is not None:
        full_env["CUSTOM_DEVICE_ROOT"] = str(root)
    full_env.update(env)
    script = "import warnings\nwarnings.simplefilter('always')\nimport oar\n" + textwrap.dedent(code)
    p = subprocess.run([sys.executable, "-c", script], env=full_env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return p.stdout, p.stderr


def test_discovery_loads_the_good_and_warns_once_per_refused(tmp_path, libs):
    root = folder(tmp_path, libs, VARIANTS)
    empty = tmp_path / "empty"
    empty.mkdir()
    out, err = run("import json; print(json.dumps(sorted(oar._plugins.loaded_plugins().values())))",
                   root=f"{empty}:{root}:/nonexistent/folder")
    assert json.loads(out) == sorted(GOOD)
    warnings = [line for line in err.splitlines() if "device plugin refused" in line]
    assert len(warnings) == len(REFUSED), err
    for name, why in REFUSED.items():
        (line,) = [w for w in warnings if f"lib{name}.so'" in w]
        assert why in line and f"runtime ABI 1.{MINOR}" in line, line


def test_site_packages_folder_is_scanned(tmp_path, libs):
    site_dir = tmp_path / "lib" / "site-packages"
    folder(site_dir, libs, ["testdev"], sub="oar_custom_device")
    pythonpath = os.pathsep.join([str(site_dir)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    out, err = run("print(list(oar._plugins.loaded_plugins().values()))", PYTHONPATH=pythonpath)
    assert out.strip() == "['testdev']", err


def test_load_plugin_errors_name_the_file(tmp_path, libs):
    code = f"""
    import oar._plugins as p
    for path, exc in [("/nonexistent/libnpu.so", RuntimeError), ({libs['testdev_major2']!r}, ValueError)]:
        try:
            p.load_plugin(path)
        except exc as e:
            assert path in str(e), str(e)
            print("refused")
    assert p.load_plugin({libs['testdev']!r}) == "testdev"
    try:
        p.load_plugin({libs['testdev']!r})
    except RuntimeError as e:
        assert "already registered" in str(e) and {libs['testdev']!r} in str(e), str(e)
        print("refused")
    try:
        p.load_plugin(3)
    except TypeError as e:
        print("refused")
    """
    out, _ = run(code)
    assert out.split() == ["refused"] * 4


def test_plugin_kernels_run_and_failures_carry_the_plugins_message(tmp_path, libs):
    root = folder(tmp_path, libs, ["testdev"])
    place = "oar.CustomPlace('testdev', 0)"
    make = f"oar._C.ops.full([2, 3], -1.5, oar.float32, {place})"
    # The C kernels run (add and relu are testdev's own; full falls back to the CPU's).
    out, err = run(f"x = {make}\ny = oar.nn.functional.relu(oar.add(x, x))\nprint(y.place, y.shape)", root=root)
    assert "testdev:0" in out and "[2, 3]" in out, out + err
    # A device allocation the plugin refuses -> MemoryError with its text.
    code = f"""
    try:
        oar._C.ops.full([4096], 1.0, oar.float32, {place})
    except MemoryError as e:
        assert "out of memory on testdev:0" in str(e), str(e)
        assert "(testdev: cannot allocate 16384 bytes: over the test limit of 1024 bytes)" in str(e), str(e)
        print("oom")
    """
    assert run(code, root=root, TESTDEV_MAX_ALLOC="1024")[0].split() == ["oom"]
    # A failed copy and a failed kernel -> exceptions with the plugin's messages.
    code = f"""
    try:
        {make}
    except RuntimeError as e:
        assert "memory_copy_h2d failed with OAR_ERROR_DEVICE (4): testdev: injected copy failure" in str(e), str(e)
        print("copy")
    """
    assert run(code, root=root, TESTDEV_FAIL_COPY="1")[0].split() == ["copy"]
    code = f"""
    x = {make}
    try:
        oar.nn.functional.relu(x)
    except RuntimeError as e:
        assert "relu: the 'testdev' kernel for float32 failed with OAR_ERROR_DEVICE" in str(e), str(e)
        assert "testdev relu: injected kernel failure" in str(e), str(e)
        print("kernel")
    """
    assert run(code, root=root, TESTDEV_FAIL_RELU="1")[0].split() == ["kernel"]


def test_the_22_required_slots_are_enough_to_train(libs, tmp_path):
    """The minimal training-capable plugin (docs/plugin_guide.md, section 2): testdev_v10
    is a 1.0 table with only the 22 required slots filled (no async copies, no
    stream_wait_event, no pinned memory) and no kernels. An MLP still trains on it, every op
    falling back to the CPU's kernel, with the same float64 results as on the CPU."""
    out, err = run("""
        import json
        import numpy as np
        import oar.nn as nn
        oar.device.load_plugin(LIB)
        rng = np.random.default_rng(0)
        xs, ys = rng.standard_normal((4, 8, 6)), rng.integers(0, 3, (4, 8))
        losses = {}
        for dev in ["cpu", "testdev_v10:0"]:
            oar.set_device(dev)
            oar.seed(3)
            model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
            model.to(dtype="float64")
            opt = oar.optimizer.Adam(learning_rate=0.01, parameters=model.parameters())
            losses[dev] = []
            for x, y in zip(xs, ys):
                loss = nn.functional.cross_entropy(model(oar.to_tensor(x)), oar.to_tensor(y))
                loss.backward()
                opt.step()
                opt.clear_grad()
                losses[dev].append(loss.item())
            assert all(p.place.device_str() == dev for p in model.parameters())
        print(json.dumps(losses))
    """.replace("LIB", repr(libs["testdev_v10"])))
    losses = json.loads(out.strip().splitlines()[-1])
    assert losses["cpu"][-1] < losses["cpu"][0]
    same = all(abs(a - b) <= 1e-12 * max(1.0, abs(a)) for a, b in zip(losses["cpu"], losses["testdev_v10:0"]))
    assert same, losses
    assert "running its CPU kernel with copies" in err  # it did fall back

"""The sample device plugin (backends/examples/sample_device) for the device tests: built as its
own CMake project against the Oar build's exported device header and loaded with
oar.device.load_plugin. A plain module, not conftest.py, so that test files import it by a name
of their own: `from conftest import ...` resolves to whichever conftest pytest (or a test that
imports other test modules, like test_harness_coverage.py) imported last."""
import os
import subprocess

import oar
from build_tree import build_dirs

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def sample_plugin_path():
    """The plugin's path: OAR_SAMPLE_DEVICE_LIB, else built (or brought up to date) in the
    Oar build tree next to ctest's copy."""
    lib = os.environ.get("OAR_SAMPLE_DEVICE_LIB")
    if lib:
        return lib
    builds = build_dirs()
    assert builds, "no Oar build tree ($OAR_BUILD or under build/): install oar first (scripts/setup.sh)"
    build = builds[0]
    out = subprocess.run(
        [os.path.join(_ROOT, "backends", "examples", "sample_device", "build.sh"),
         os.path.join(build, "sample_device"), build],
        check=True, capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1]


def load_sample():
    return oar.device.load_plugin(sample_plugin_path())


def run_with_sample(body, timeout=300):
    """Runs `body` (Python source) in a fresh interpreter with the sample device loaded and
    this folder importable: for what a process does once (warnings printed once per
    process). Returns the finished process; its exit status must be 0."""
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    code = ("import sys; sys.path[:0] = [%r, %r]\n"
            "from sample_plugin import load_sample\n"
            "load_sample()\n" % (here, os.path.dirname(here))) + body
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr
    return r

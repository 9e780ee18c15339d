"""The device conformance suite's fixtures: the sample device plugin
(backends/examples/sample_device), built as its own CMake project against the Oar build's
exported device header, loaded with oar.device.load_plugin; and `device`, which runs a
test on each of 'cpu' and 'sample:0' as the current device.

A vendor runs the device-generic tests (those taking `device`: copies, streams, memory
stats, ...) on their own plugin with OAR_TEST_DEVICE=my_dev:0 and the library in
CUSTOM_DEVICE_ROOT (discovered at `import oar`); the sample device is still built for
the tests that exercise its kernels and debug switches (docs/plugin_guide.md, section 6)."""
import os
import subprocess

import pytest

import oar
from build_tree import build_dirs

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TEST_DEVICE = os.environ.get("OAR_TEST_DEVICE") or "sample:0"
DEVICES = ["cpu", TEST_DEVICE]


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


@pytest.fixture(scope="session")
def sample():
    """Loads the sample plugin once; returns its device type."""
    return load_sample()


@pytest.fixture(params=DEVICES)
def device(request, sample):
    """Each test runs with 'cpu' and with the device under test (OAR_TEST_DEVICE, default
    'sample:0') as the current device."""
    if request.param not in oar.device.get_available_device():
        pytest.fail(f"OAR_TEST_DEVICE={request.param} is not available (devices: "
                    f"{oar.device.get_available_device()}); put its plugin in CUSTOM_DEVICE_ROOT")
    oar.set_device(request.param)
    yield request.param
    oar.device.synchronize(request.param)
    oar.set_device("cpu")

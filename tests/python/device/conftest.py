"""The device conformance suite's fixtures: the sample device plugin
(backends/examples/sample_device), built as its own CMake project against the Oar build's
exported device header, loaded with oar.device.load_plugin; and `device`, which runs a
test on each of 'cpu' and 'sample:0' as the current device.

A vendor runs the device-generic tests (those taking `device`: copies, streams, memory
stats, ...) on their own plugin with OAR_TEST_DEVICE=my_dev:0 and the library in
CUSTOM_DEVICE_ROOT (discovered at `import oar`); the sample device is still built for
the tests that exercise its kernels and debug switches (docs/plugin_guide.md, section 6)."""
import os

import pytest

import oar
from sample_plugin import load_sample, sample_plugin_path  # noqa: F401 (re-exported)

TEST_DEVICE = os.environ.get("OAR_TEST_DEVICE") or "sample:0"
DEVICES = ["cpu", TEST_DEVICE]


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


@pytest.fixture
def on_cpu(sample):
    """The sample device loaded and the CPU current: tensors (or a network) live on
    sample:0 while the current device is another one."""
    oar.set_device("cpu")
    yield
    oar.device.synchronize("sample:0")

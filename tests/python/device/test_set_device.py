"""oar.set_device / oar.device.set_device / oar.get_device: what Paddle's example prelude calls."""
import pytest

import oar


@pytest.fixture(autouse=True)
def _restore_device():
    yield
    oar.set_device("cpu")


@pytest.mark.parametrize("name", ["cpu", "CPU", " cpu ", "cpu:0"])
def test_set_cpu_returns_its_place_and_becomes_current(name):
    place = oar.set_device(name)
    assert place.is_cpu_place()
    assert oar.get_device() == "cpu"
    assert oar.device.get_device() == "cpu"
    assert oar.to_tensor([1.0]).place.is_cpu_place()


def test_device_namespace_is_the_same_function():
    assert oar.device.set_device is oar.set_device
    assert oar.device.set_device("cpu").is_cpu_place()
    assert oar.device.get_all_device_type()[0] == "cpu"
    assert "gpu" not in oar.device.get_all_device_type()  # this build compiles no CUDA
    assert oar.device.is_compiled_with_cuda() is False


@pytest.mark.parametrize("name", ["gpu", "gpu:0", "xpu:1", "npu"])
def test_unavailable_device_names_the_registered_ones(name):
    with pytest.raises(ValueError, match=rf"set_device: device '{name}' is not available; "
                                         r"registered device types: \['cpu'.*available devices: "
                                         r"\['cpu'"):
        oar.set_device(name)
    assert oar.get_device() == "cpu"  # a refused device leaves the current one alone


def test_bad_device_arguments():
    with pytest.raises(TypeError, match="device must be a str such as 'cpu', got int"):
        oar.set_device(0)
    with pytest.raises(ValueError, match="empty device string"):
        oar.set_device("")

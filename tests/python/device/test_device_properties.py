"""Device queries after Paddle's paddle.device.get_device_properties / get_device_name /
get_device_capability, read from the plugin's get_device_properties slot (ABI 1.1), and
the peer copy between the sample device's two devices (memory_copy_p2p) behind
Tensor.to."""
import numpy as np
import pytest

import oar


def test_properties_of_the_sample_device(sample):
    props = oar.device.get_device_properties("sample:1")
    assert props.name == "Oar sample device 1 (emulated)"
    assert (props.major, props.minor) == (1, 0)
    assert props.multi_processor_count == 1
    assert props.total_memory == 1 << 30  # SAMPLE_DEVICE_MEMORY_MB's default
    assert props.supports_fp16 is False and props.supports_bf16 is False
    assert repr(props) == ("_customDeviceProperties(name='Oar sample device 1 (emulated)', major=1, minor=0, "
                           "total_memory=1024MB, multi_processor_count=1)")
    assert oar.device.get_device_name(oar.CustomPlace("sample", 0)) == "Oar sample device 0 (emulated)"
    assert oar.device.get_device_capability("custom:sample:1") == (1, 0)


def test_device_argument_forms(sample):
    oar.set_device("sample:1")
    try:
        assert oar.device.get_device_name() == "Oar sample device 1 (emulated)"  # the current device
        assert oar.device.get_device_name(0) == "Oar sample device 0 (emulated)"  # an id of its type
        with pytest.raises(ValueError, match=r"get_device_properties: device 'sample:5' is not available: "
                                             r"'sample' has 2 device"):
            oar.device.get_device_properties(5)
        with pytest.raises(ValueError, match=r"get_device_properties: device id -1"):
            oar.device.get_device_properties(-1)
    finally:
        oar.set_device("cpu")
    with pytest.raises(ValueError, match=r"get_device_properties: device 'nodev:0' is not available"):
        oar.device.get_device_properties("nodev:0")
    with pytest.raises(TypeError, match=r"get_device_properties: device must be"):
        oar.device.get_device_properties(True)
    with pytest.raises(TypeError, match=r"get_device_properties: device must be"):
        oar.device.get_device_properties(1.5)


def test_the_cpu_reports_its_type_and_memory():
    oar.set_device("cpu")
    props = oar.device.get_device_properties()
    assert props.name == "cpu" and props.total_memory > 0
    assert oar.device.get_device_capability(0) == (0, 0)
    with pytest.raises(ValueError, match=r"device id 1 of the current device type 'cpu' does not exist"):
        oar.device.get_device_properties(1)


def test_copies_between_the_two_devices_use_the_peer_copy(sample, monkeypatch):
    a = np.arange(24, dtype="float32").reshape(4, 6)
    x = oar.to_tensor(a, place="sample:0")
    np.testing.assert_array_equal(x.to("sample:1").numpy(), a)
    np.testing.assert_array_equal(x[:, 1:4].to("sample:1").numpy(), a[:, 1:4])  # strided: through the host
    monkeypatch.setenv("SAMPLE_DEVICE_FAIL", "p2p")
    with pytest.raises(RuntimeError, match=r"device 'sample': memory_copy_p2p failed with OAR_ERROR_DEVICE.*"
                                           r"sample device: p2p copy of 96 bytes failed"):
        x.to("sample:1")

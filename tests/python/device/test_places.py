"""Places of a plugin device: set_device, CustomPlace, the device lists, Paddle's
'custom:<type>:<id>' alias, and errors that list what exists."""
import pytest

import oar


@pytest.fixture(autouse=True)
def _restore_device(sample):
    yield
    oar.set_device("cpu")


def test_set_device_selects_the_sample_device(sample):
    assert sample == "sample"
    place = oar.set_device("sample:1")
    assert place.is_custom_place() and place.get_device_id() == 1
    assert oar.get_device() == "sample:1" and oar.device.get_device() == "sample:1"
    assert oar.set_device("SAMPLE").device_str() == "sample:0"  # no id: device 0
    assert oar.set_device("custom:sample:1") == oar.CustomPlace("sample", 1)


def test_device_lists_include_the_plugin():
    assert oar.device.get_all_device_type() == ["cpu", "sample"]
    assert oar.device.get_all_custom_device_type() == ["sample"]
    assert oar.device.get_available_device() == ["cpu", "sample:0", "sample:1"]
    assert oar.device.get_available_custom_device() == ["sample:0", "sample:1"]
    assert oar.device.is_compiled_with_custom_device("sample")
    assert oar.is_compiled_with_custom_device("sample")
    assert not oar.device.is_compiled_with_custom_device("npu")


def test_custom_place_is_a_place_of_the_plugin():
    p = oar.CustomPlace("sample", 1)
    assert p.is_custom_place() and not p.is_cpu_place()
    assert p.device_str() == "sample:1" and p.get_device_id() == 1
    assert p == oar.set_device("sample:1")


@pytest.mark.parametrize("name, why", [
    ("sample:2", r"'sample' has 2 device\(s\); available devices: \['cpu', 'sample:0', 'sample:1'\]"),
    ("custom:sample:7", r"'sample' has 2 device\(s\)"),
    ("npu:0", r"registered device types: \['cpu', 'sample'\], available devices: "
              r"\['cpu', 'sample:0', 'sample:1'\]"),
])
def test_unknown_type_or_id_lists_the_devices(name, why):
    with pytest.raises(ValueError, match=why):
        oar.set_device(name)
    with pytest.raises(ValueError, match=why):
        oar.to_tensor([1.0], place=name)
    assert oar.get_device() == "cpu"


def test_loading_the_plugin_again_is_harmless(sample):
    from sample_plugin import sample_plugin_path
    assert oar.device.load_plugin(sample_plugin_path()) == "sample"


def test_a_missing_plugin_file_is_an_error_naming_it(tmp_path):
    missing = str(tmp_path / "no_such_plugin.so")
    with pytest.raises(Exception, match="no_such_plugin.so"):
        oar.device.load_plugin(missing)

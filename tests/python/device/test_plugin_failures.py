"""Plugin failures become Python exceptions that carry the plugin's own message
(get_last_error_message, or the kernel's set_error): the sample device's debug switch
SAMPLE_DEVICE_FAIL (comma-separated: alloc, h2d, d2h, kernel, kernel:<op>; read at each
call) makes an allocation, a copy or a kernel fail; a too large tensor really runs out
of device memory."""
import numpy as np
import pytest

import oar


@pytest.fixture
def on_sample(sample):
    oar.set_device("sample:0")
    yield
    oar.device.synchronize("sample:0")
    oar.set_device("cpu")


def test_out_of_device_memory(on_sample):
    with pytest.raises(MemoryError, match=r"out of memory on sample:0: cannot allocate 1200000000 bytes.*"
                                          r"sample device: out of device memory: \d+ bytes requested"):
        oar.zeros([300_000_000], dtype="float32")  # 1.2 GB, the arena has 1 GB
    assert oar.ones([3]).numpy().tolist() == [1.0, 1.0, 1.0]  # the device still works


def test_a_refused_allocation(on_sample, monkeypatch):
    oar.device.empty_cache("sample:0")  # a cached block would be reused without asking the device
    monkeypatch.setenv("SAMPLE_DEVICE_FAIL", "alloc")
    with pytest.raises(MemoryError, match=r"full: .*out of memory on sample:0.*"
                                          r"sample device: allocation of \d+ bytes refused \(SAMPLE_DEVICE_FAIL=alloc\)"):
        oar.full([123457], 2.0, dtype="float32")


@pytest.mark.parametrize("direction", ["h2d", "d2h"])
def test_a_failed_copy(on_sample, monkeypatch, direction):
    x = oar.to_tensor(np.arange(3, dtype="float64"))
    monkeypatch.setenv("SAMPLE_DEVICE_FAIL", direction)
    with pytest.raises(RuntimeError, match=rf"device 'sample': memory_copy_{direction} failed with OAR_ERROR_DEVICE"
                                           rf".*sample device: {direction} copy of 24 bytes failed"):
        if direction == "h2d":
            oar.to_tensor(np.arange(3, dtype="float64"))
        else:
            x.numpy()
    monkeypatch.delenv("SAMPLE_DEVICE_FAIL")
    assert x.numpy().tolist() == [0.0, 1.0, 2.0]


def test_a_failing_kernel(on_sample, monkeypatch):
    x = oar.to_tensor(np.ones(4, "float32"))
    monkeypatch.setenv("SAMPLE_DEVICE_FAIL", "kernel:multiply")
    assert (x + x).numpy().tolist() == [2.0] * 4  # only multiply fails
    with pytest.raises(RuntimeError, match=r"multiply: the 'sample' kernel for float32 failed with OAR_ERROR_DEVICE: "
                                           r"sample device: multiply: the kernel failed \(SAMPLE_DEVICE_FAIL\)"):
        x * x
    monkeypatch.setenv("SAMPLE_DEVICE_FAIL", "kernel")
    with pytest.raises(RuntimeError, match=r"add: the 'sample' kernel for float32 failed"):
        x + x

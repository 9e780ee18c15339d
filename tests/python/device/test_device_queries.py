"""paddle.device's queries: device_count / is_available, the random state by device, the
`device` context manager, `paddle.device(...)` values (Device), get_device(tensor),
is_bf16_supported, the build questions, reset_max_memory_reserved, and the cuda/xpu
namespaces of a build without those backends."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import oar


def _fresh(code):
    """Runs `code` in a new interpreter (no plugin loaded: the session's tests load one)."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_only_the_cpu():
    got = _fresh("""
        import os
        os.environ.pop("CUSTOM_DEVICE_ROOT", None)
        import oar
        print(oar.device.device_count(), oar.device.is_available(), oar.device.device_count("gpu"),
              oar.device.device_count("xpu"), oar.get_default_device(), oar.device.current_device(),
              oar.device.is_bf16_supported(), oar.cuda.device_count(), oar.device.cuda.is_available(),
              oar.device.xpu.device_count())
    """)
    assert got == ["0", "False", "0", "0", "cpu", "0", "True", "0", "False", "0"]


def test_counts_with_a_plugin(sample):
    assert oar.device.device_count() == 2  # the first plugin type's devices
    assert oar.device.device_count(sample) == 2
    assert oar.device.device_count("SAMPLE") == 2
    assert oar.device.device_count("gpu") == 0
    assert oar.device.device_count("some_other_chip") == 0
    assert oar.device.is_available()


def test_bad_counts():
    with pytest.raises(TypeError, match="device_count: device_type must be a str.*int"):
        oar.device.device_count(3)
    with pytest.raises(ValueError, match="device_count: device_type 'cpu' is not an accelerator"):
        oar.device.device_count("cpu")


def test_device_context_restores_the_previous_device(sample):
    assert oar.device.get_device() == "cpu"
    with oar.device.device("sample:1"):
        assert oar.device.get_device() == "sample:1"
        x = oar.ones([3])
        assert oar.get_device(x) == 1
        assert oar.device.current_device() == 1
        with oar.cuda.device("cpu"):  # paddle.cuda.device is the same context manager
            assert oar.device.get_device() == "cpu"
            assert oar.get_device(oar.ones([2])) == -1
        assert oar.device.get_device() == "sample:1"
    assert oar.device.get_device() == "cpu"
    with pytest.raises(KeyError):
        with oar.device.device(oar.CustomPlace("sample", 0)):
            assert oar.device.get_device() == "sample:0"
            raise KeyError("inside")
    assert oar.device.get_device() == "cpu"
    with pytest.raises(ValueError, match="device: device 'sample:9' is not available: 'sample' has 2"):
        oar.device.device("sample:9")
    with pytest.raises(TypeError, match="device: device must be None, an int, a str or a Place, got bool"):
        oar.device.device(True)


def test_device_values():
    d = oar.device("cuda", 1)
    assert isinstance(d, str) and d == "cuda:1" and (d.type, d.index) == ("cuda", 1)
    assert oar.device("gpu:2") == "gpu:2" and oar.device("gpu:2").index == 2
    assert oar.device("xpu").index == 0
    assert oar.device(0) == "cuda:0"  # an int is a GPU index, as in Paddle
    cpu = oar.device(oar.CPUPlace())
    assert cpu == "cpu" and cpu.type == "cpu" and cpu.index is None
    assert oar.device(cpu) == "cpu" and oar.device(d) == "cuda:1"
    assert oar.device.Device("CPU") == "cpu"
    assert oar.get_default_device() == "cpu" and isinstance(oar.get_default_device(), oar.device.Device)


@pytest.mark.parametrize("args, exc, msg", [
    (("tpu",), ValueError, "device: unknown device type 'tpu'"),
    (("cuda:x",), ValueError, "device: bad device string 'cuda:x'"),
    (("cuda:1", 2), ValueError, "device: index 2 given twice"),
    (("cuda", -1), ValueError, "device: index must be an int >= 0, got -1"),
    (("custom:sample:0",), ValueError, "device: write the plugin's type directly"),
    ((None, 1), ValueError, "device: a device type must be given with an index"),
    ((True,), TypeError, "device: expected a device string, a Place or an int"),
    ((1.5,), TypeError, "device: expected a device string, a Place or an int, got float"),
])
def test_bad_device_values(args, exc, msg):
    with pytest.raises(exc, match=msg):
        oar.device(*args)


def test_device_value_as_context(sample):
    with oar.device("sample:1"):
        assert oar.device.get_device() == "sample:1"
        with oar.device("cpu"):
            assert oar.device.get_device() == "cpu"
        assert oar.device.get_device() == "sample:1"
    assert oar.device.get_device() == "cpu"


def test_get_device_of_a_tensor(sample):
    assert oar.get_device(oar.to_tensor([1, 2, 3], place=oar.CPUPlace())) == -1
    assert oar.device.get_device(oar.to_tensor([1.0], place="sample:1")) == 1
    with pytest.raises(TypeError, match="get_device: input must be a Tensor or None, got int"):
        oar.get_device(5)


def test_rng_state_round_trip(sample):
    oar.device.manual_seed(7)
    a = oar.randn([4, 3]).numpy()
    oar.seed(7)
    np.testing.assert_array_equal(oar.randn([4, 3]).numpy(), a)  # manual_seed is paddle.seed
    for dev in (None, "cpu", "sample:0", 0):
        state = oar.device.get_rng_state(dev)
        x = oar.randn([5]).numpy()
        oar.device.set_rng_state(state, dev)
        np.testing.assert_array_equal(oar.randn([5]).numpy(), x)
    oar.device.manual_seed_all(11)
    b = oar.rand([3]).numpy()
    oar.cuda.manual_seed(11)
    np.testing.assert_array_equal(oar.rand([3]).numpy(), b)


def test_rng_state_bad_devices(sample):
    with pytest.raises(ValueError, match="get_rng_state: device 'xpu:0' is not available"):
        oar.device.get_rng_state("xpu:0")
    with pytest.raises(ValueError, match="set_rng_state: device 'sample:4' is not available"):
        oar.device.set_rng_state(oar.device.get_rng_state(), "sample:4")
    with pytest.raises(ValueError, match="get_rng_state: device 'xpu:0' is not available"):
        oar.device.xpu.get_rng_state("xpu:0")
    with pytest.raises(TypeError, match=r"manual_seed: seed must be an int, got '7' \(str\)"):
        oar.device.manual_seed("7")
    with pytest.raises(TypeError, match=r"manual_seed: seed must be an int, got nan \(float\)"):
        oar.device.manual_seed(float("nan"))
    with pytest.raises(ValueError, match="seed 1180591620717411303424 does not fit in 64 bits"):
        oar.device.manual_seed(2 ** 70)
    oar.device.manual_seed(3.0)  # a whole float is an int, as Paddle's int(seed)


def test_bf16_support(sample):
    assert oar.device.is_bf16_supported() is True  # the CPU runs every bf16 op
    flags = open("/proc/cpuinfo").read()
    native = "avx512_bf16" in flags or "amx_bf16" in flags
    assert oar.device.is_bf16_supported(including_emulation=False) is native
    with oar.device.device("sample:0"):
        assert oar.device.is_bf16_supported() is False  # the sample device's properties say so
        assert oar.cuda.is_bf16_supported() is False


def test_build_questions():
    assert oar.device.is_compiled_with_cuda() is False and oar.is_compiled_with_xpu() is False
    assert oar.is_compiled_with_rocm() is False and oar.is_compiled_with_ipu() is False
    assert oar.is_compiled_with_distribute() is True and oar.device.is_compiled_with_distribute()
    assert oar.device.get_cudnn_version() is None
    assert oar.device.is_current_stream_capturing() is False
    assert oar.device.is_compiled_with_cinn() == oar.is_compiled_with_cinn()


def test_reset_max_memory_reserved(sample):
    dev = "sample:1"
    oar.device.empty_cache(dev)
    x = oar.zeros([1024, 256], dtype="float32").to(dev)
    del x
    assert oar.device.max_memory_reserved(dev) >= oar.device.memory_reserved(dev) >= 1 << 20
    oar.device.empty_cache(dev)
    oar.device.reset_max_memory_reserved(dev)
    assert oar.device.max_memory_reserved(dev) == oar.device.memory_reserved(dev)
    y = oar.zeros([256], dtype="float32").to(dev)
    oar.device.reset_peak_memory_stats(dev)
    assert oar.device.max_memory_allocated(dev) == oar.device.memory_allocated(dev)
    del y
    with pytest.raises(ValueError, match="reset_max_memory_reserved: device 'npu:0' is not available"):
        oar.device.reset_max_memory_reserved("npu:0")


def test_namespaces():
    assert callable(oar.device)
    assert "__getattr__" not in vars(oar.device)  # attribute reads of oar.device stay plain
    assert oar.device.cuda.device_count() == 0 and oar.device.xpu.is_available() is False
    with pytest.raises(AttributeError, match="module 'oar.device' has no attribute 'no_such_name'"):
        oar.device.no_such_name  # noqa: B018

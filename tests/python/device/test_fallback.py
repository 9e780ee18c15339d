"""Ops without a kernel on the device run their CPU kernel with copies (a warning once per
op and dtype); FLAGS_enable_api_kernel_fallback=0 makes that an error naming the op, the
device and the dtypes it has."""
import numpy as np
import pytest

import oar
from sample_plugin import run_with_sample


def test_fallback_runs_the_cpu_kernel_and_warns_once(sample):
    # In a fresh process: the warning is once per process, and other tests run sqrt too.
    r = run_with_sample(
        "import sys\n"
        "import numpy as np, oar\n"
        "x = oar.to_tensor(np.array([[1.0, 4.0], [9.0, 16.0]]), place='sample:0')  # float64\n"
        "y = oar.sqrt(x)\n"
        "assert y.place.device_str() == 'sample:0'\n"
        "np.testing.assert_array_equal(y.numpy(), [[1, 2], [3, 4]])\n"
        "sys.stderr.write('-- second call --\\n'); sys.stderr.flush()\n"
        "oar.sqrt(x)\n")
    first, second = r.stderr.split("-- second call --")
    assert "sqrt has no sample kernel for float64; running its CPU kernel with copies" in first
    assert "sqrt has no sample kernel" not in second  # once


def test_flag_off_makes_a_missing_kernel_an_error(sample):
    x = oar.to_tensor(np.array([1.0, 2.0], "float32"), place="sample:0")
    oar.set_flags({"FLAGS_enable_api_kernel_fallback": False})
    try:
        with pytest.raises(TypeError, match=r"tanh: no kernel on sample:0 for dtype float32 \(its "
                                            r"kernels there: none\) and "
                                            r"FLAGS_enable_api_kernel_fallback is off"):
            oar.tanh(x)
        # The copy op's kernel is device-generic: copies still work with the flag off.
        np.testing.assert_array_equal(x.cpu().numpy(), [1.0, 2.0])
    finally:
        oar.set_flags({"FLAGS_enable_api_kernel_fallback": True})
    np.testing.assert_allclose(oar.tanh(x).numpy(), np.tanh([1.0, 2.0]), rtol=1e-6)
    assert oar.get_flags("FLAGS_enable_api_kernel_fallback")["FLAGS_enable_api_kernel_fallback"] is True

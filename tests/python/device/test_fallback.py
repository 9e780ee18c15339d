"""Ops without a kernel on the device run their CPU kernel with copies (a warning once per
op and dtype); FLAGS_enable_api_kernel_fallback=0 makes that an error naming the op, the
device and the dtypes it has."""
import numpy as np
import pytest

import oar


def test_fallback_runs_the_cpu_kernel_and_warns_once(sample, capfd):
    x = oar.to_tensor(np.array([[1.0, 4.0], [9.0, 16.0]]), place="sample:0")  # float64
    y = oar.sqrt(x)
    assert y.place.device_str() == "sample:0"
    np.testing.assert_array_equal(y.numpy(), [[1, 2], [3, 4]])
    err = capfd.readouterr().err
    assert "sqrt has no sample kernel for float64; running its CPU kernel with copies" in err
    oar.sqrt(x)
    assert "sqrt has no sample kernel" not in capfd.readouterr().err  # once


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

"""Declined plugin kernels (Note [Declined plugin kernels], backends/runtime/kernel_ext.cc): a
kernel that does not serve a call returns OAR_ERROR_UNIMPLEMENTED and Oar runs the CPU kernel
on host copies, the results written to the device, with one warning quoting the plugin; with
FLAGS_enable_api_kernel_fallback off the call fails with the plugin's message. The sample
device's pooling kernels serve 4-D tensors only: its pooling gradients decline 5-D ones (3-D
pooling), and its 2-D forward kernels never see them (the 3-D ops have kernel names of their
own)."""
import numpy as np
import pytest

import oar
import oar.nn.functional as F
from sample_plugin import run_with_sample

POOLS = {
    "max_pool3d": lambda t: F.max_pool3d(t, 2, 2),
    "max_pool3d_padded": lambda t: F.max_pool3d(t, 3, 2, padding=1, ceil_mode=True),
    "avg_pool3d": lambda t: F.avg_pool3d(t, 2, 2),
    "avg_pool3d_channels_last": lambda t: F.avg_pool3d(t, 2, 1, data_format="NDHWC"),
    "adaptive_avg_pool3d": lambda t: F.adaptive_avg_pool3d(t, [2, 3, 1]),
    "adaptive_max_pool3d": lambda t: F.adaptive_max_pool3d(t, 2),
}


def _run(fn, x, place, static=False):
    t = oar.to_tensor(x, place=place, stop_gradient=False)
    f = oar.jit.to_static(fn) if static else fn
    out = f(t)
    (out * out).sum().backward()
    return out, t.grad


@pytest.mark.parametrize("name", sorted(POOLS))
@pytest.mark.parametrize("static", [False, True], ids=["eager", "to_static"])
def test_3d_pooling_on_the_device_equals_the_cpu(sample, name, static):
    x = np.random.default_rng(5).standard_normal((2, 3, 5, 6, 4))
    want_out, want_grad = _run(POOLS[name], x, "cpu")
    out, grad = _run(POOLS[name], x, "sample:0", static)
    assert out.place.device_str() == "sample:0" and grad.place.device_str() == "sample:0"
    np.testing.assert_allclose(out.numpy(), want_out.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grad.numpy(), want_grad.numpy(), rtol=1e-12, atol=1e-12)


def test_a_declined_call_warns_once_quoting_the_plugin():
    r = run_with_sample(
        "import numpy as np, oar, oar.nn.functional as F\n"
        "x = oar.to_tensor(np.ones((1, 2, 4, 4, 4), 'float32'), place='sample:0', stop_gradient=False)\n"
        "for _ in range(3):\n"
        "    F.avg_pool3d(x, 2).sum().backward()\n"
        "assert float(x.grad.sum()) == 3 * 128 / 8, x.grad\n")
    lines = [line for line in r.stderr.splitlines() if "declined" in line]
    assert lines == ["oar: warning: avg_pool_grad: the sample kernel for float32 declined (sample device: "
                     "avg_pool_grad: data_format must be 'NCHW' or 'NHWC', got 'NCDHW'); running its CPU kernel "
                     "with copies"], r.stderr


def test_without_the_fallback_a_declined_call_fails_with_the_plugins_message(sample):
    x = oar.to_tensor(np.ones((1, 2, 4, 4, 4), "float32"), place="sample:0")
    g = oar.to_tensor(np.ones((1, 2, 2, 2, 2), "float32"), place="sample:0")
    oar.set_flags({"FLAGS_enable_api_kernel_fallback": False})
    try:
        with pytest.raises(NotImplementedError, match=r"avg_pool_grad: the 'sample' kernel for float32 failed with "
                                                      r"OAR_ERROR_UNIMPLEMENTED: .*got 'NCDHW'"):
            oar._C.ops._avg_pool_grad(x, g, [2, 2, 2], [2, 2, 2], [0, 0, 0], False, True, False, "NCDHW")
    finally:
        oar.set_flags({"FLAGS_enable_api_kernel_fallback": True})
    got = oar._C.ops._avg_pool_grad(x, g, [2, 2, 2], [2, 2, 2], [0, 0, 0], False, True, False, "NCDHW")
    assert got.place.device_str() == "sample:0"
    np.testing.assert_array_equal(got.numpy(), np.full((1, 2, 4, 4, 4), 1 / 8, "float32"))

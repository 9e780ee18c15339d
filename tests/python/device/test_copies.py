"""Copies between places, run with 'cpu' and 'sample:0' as the current device: the copy op
both ways (values and gradients), host reads of device tensors, creation ops on the
current device, and the mixed-place error."""
import numpy as np
import pytest

import oar


def test_to_tensor_lands_on_the_current_device(device):
    x = oar.to_tensor([[1.0, 2.0], [3.0, 4.0]])
    assert x.place.device_str() == device
    np.testing.assert_array_equal(x.numpy(), [[1, 2], [3, 4]])
    y = oar.to_tensor(np.arange(6, dtype="int32"), place="cpu")
    assert y.place.is_cpu_place()
    z = oar.to_tensor(np.arange(6, dtype="int32"), place=device)
    assert z.place.device_str() == device and z.dtype == oar.int32


def test_round_trip_through_the_device_keeps_values(device):
    rng = np.random.default_rng(0)
    for dtype in ["float32", "float64", "int64", "int32", "bool", "float16"]:
        a = (rng.standard_normal((3, 5)) * 10).astype(dtype)
        host = oar.to_tensor(a, place="cpu")
        on_dev = host.to(device)
        assert on_dev.place.device_str() == device and on_dev.dtype == host.dtype
        back = on_dev.cpu()
        assert back.place.is_cpu_place()
        np.testing.assert_array_equal(back.numpy(), a)
        np.testing.assert_array_equal(on_dev.numpy(), a)  # numpy() copies to host itself


def test_host_reads_of_a_device_tensor(device):
    x = oar.to_tensor([[1.5, -2.0], [3.25, 4.0]])
    assert x.tolist() == [[1.5, -2.0], [3.25, 4.0]]
    assert x[1, 0].item() == 3.25 and float(x.sum()) == 6.75
    assert bool(x[0, 0] > 1.0)
    assert f"place=Place({device})" in repr(x)
    assert "3.25000000" in repr(x)
    np.testing.assert_array_equal(np.asarray(x), x.numpy())
    np.testing.assert_array_equal(np.from_dlpack(x), x.numpy())


def test_strided_views_copy_to_host(device):
    a = np.arange(24, dtype="float32").reshape(2, 3, 4)
    x = oar.to_tensor(a)
    t = x.transpose([2, 0, 1])
    np.testing.assert_array_equal(t.numpy(), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(t.cpu().numpy(), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(x[:, 1:, ::2].numpy(), a[:, 1:, ::2])


def test_negative_step_views_copy_to_host_and_back(device):
    # Their lowest element is below their offset: on a device the copy once allocated
    # 2^64 - 16 bytes for x[::-1] and read bytes before the view for x[:, ::-1].
    a = np.arange(60, dtype="float32").reshape(3, 4, 5)
    x = oar.to_tensor(a)
    for key in [np.s_[::-1], np.s_[:, ::-1], np.s_[:, :, ::-1], np.s_[::-1, 1:, ::-2], np.s_[1, ::-3, 2:],
                np.s_[::-1, ::-1, ::-1]]:
        v = x[key]
        np.testing.assert_array_equal(v.numpy(), a[key], err_msg=str(key))
        np.testing.assert_array_equal(v.cpu().numpy(), a[key], err_msg=str(key))
        np.testing.assert_array_equal(v.t().numpy() if v.ndim == 2 else v.numpy(),
                                      a[key].T if v.ndim == 2 else a[key], err_msg=str(key))
    # a write through a reversed view lands where numpy's does, and nothing else moves
    y, b = oar.to_tensor(a), a.copy()
    src = np.arange(20, dtype="float32").reshape(4, 5) * -1
    y[1, ::-1] = oar.to_tensor(src)
    b[1, ::-1] = src
    np.testing.assert_array_equal(y.numpy(), b)


def test_creation_ops_use_the_current_device(device):
    for t in [oar.zeros([2, 3]), oar.ones([4]), oar.full([2], 7.0), oar.arange(5),
              oar.eye(3), oar.rand([2, 2])]:
        assert t.place.device_str() == device
    np.testing.assert_array_equal(oar.full([2], 7.0).numpy(), [7.0, 7.0])
    np.testing.assert_array_equal(oar.arange(5).numpy(), np.arange(5))


def test_gradients_flow_back_through_copies(device):
    a = np.array([[1.0, -2.0], [0.5, 3.0]], dtype="float32")
    x = oar.to_tensor(a, place="cpu", stop_gradient=False)
    y = x.to(device)                      # cpu -> device
    z = (y * y + 2.0 * y).sum()           # on the device
    z.backward()
    assert x.grad.place.is_cpu_place()    # the gradient came back to x's place
    np.testing.assert_allclose(x.grad.numpy(), 2 * a + 2, rtol=1e-6)

    w = oar.to_tensor(a, stop_gradient=False)  # on the device
    (w.cpu() * 3.0).sum().backward()           # device -> cpu
    assert w.grad.place.device_str() == device
    np.testing.assert_allclose(w.grad.numpy(), np.full_like(a, 3.0))


def test_copy_to_and_non_blocking_copies(device):
    a = np.arange(1000, dtype="float32")
    host = oar.to_tensor(a, place="cpu")
    x = host._copy_to(device, False)  # may return before the data arrived
    y = x._copy_to("cpu", False)
    oar.device.synchronize(device)
    np.testing.assert_array_equal(y.numpy(), a)
    np.testing.assert_array_equal(x.numpy(), a)
    assert host._copy_to("cpu", True) is host  # already there: no copy


def test_to_accepts_paddle_forms(device):
    x = oar.to_tensor([1, 2, 3], place="cpu")
    y = x.to(device, "float64")
    assert y.place.device_str() == device and y.dtype == oar.float64
    z = x.to(dtype="float32", device=device, blocking=True)
    assert z.dtype == oar.float32 and z.place.device_str() == device
    w = oar.to_tensor([0.5], place="cpu").to(z)
    assert w.place == z.place and w.dtype == z.dtype
    with pytest.raises(ValueError, match="device 'nowhere:0' is not available"):
        x.to("nowhere:0")


def test_mixed_places_name_the_op_argument_and_places(sample):
    x = oar.to_tensor([1.0, 2.0], place="sample:0")
    y = oar.to_tensor([1.0, 2.0], place="cpu")
    with pytest.raises(ValueError, match=r"add: argument 'y' is on cpu but the op runs on sample:0"):
        oar.add(x, y)
    with pytest.raises(ValueError, match=r"multiply: argument 'y' is on sample:1 but the op runs "
                                         r"on sample:0"):
        oar.multiply(x, x.to("sample:1"))
    with pytest.raises(ValueError, match=r"concat: argument 'x' is on sample:0 but the op runs on cpu"):
        oar.concat([y, x])
    # A Python number or list joins the tensor's place.
    np.testing.assert_array_equal((x + 1.0).numpy(), [2.0, 3.0])
    np.testing.assert_array_equal((x * [2.0, 3.0]).numpy(), [2.0, 6.0])


def test_copies_between_two_sample_devices(sample):
    a = np.arange(12, dtype="float64").reshape(3, 4)
    x = oar.to_tensor(a, place="sample:0")
    y = x.to("sample:1")
    assert y.place.device_str() == "sample:1"
    np.testing.assert_array_equal(y.numpy(), a)

"""Inputs the kernels read on the host (issue 13; Note [Host inputs] in docs/notes/devices.md).

dyn_reshape and dyn_expand take their target shape from a 1-D int tensor (what to_static
records for x.reshape([x.shape[0], -1]) with a dynamic batch). Their definitions say
`host_inputs: [shape]`: the shape may be on any place, and every kernel of the op, eager
and in the executor, gets it on the host; x and the result stay on the op's place. The
three shape ops also have device-generic kernels, so a program with dynamic shapes runs
on the sample device with the fallback off."""
import numpy as np
import pytest

import oar
from oar.static import InputSpec

DEV = "sample:0"
ops = oar._C.ops


@pytest.fixture
def no_fallback(sample):
    """The sample device's own or the device-generic kernels only: a missing one raises."""
    oar.set_flags({"FLAGS_enable_api_kernel_fallback": False})
    yield
    oar.set_flags({"FLAGS_enable_api_kernel_fallback": True})


def _t(a, place):
    return oar.to_tensor(np.asarray(a), place=place)


@pytest.mark.parametrize("x_place, shape_place, dtype", [
    (DEV, DEV, "int64"), (DEV, "cpu", "int64"), (DEV, DEV, "int32"), ("cpu", DEV, "int64")])
def test_dyn_reshape_reads_its_shape_on_the_host(no_fallback, x_place, shape_place, dtype):
    xs = np.random.default_rng(0).standard_normal((3, 4)).astype("float32")
    out = ops._dyn_reshape(_t(xs, x_place), _t(np.array([2, -1, 3], dtype), shape_place), [])
    assert out.place.device_str() == x_place  # the op runs where x is; the shape is no mixed place
    np.testing.assert_array_equal(out.numpy(), xs.reshape(2, -1, 3))


@pytest.mark.parametrize("x_place, shape_place", [(DEV, DEV), (DEV, "cpu"), ("cpu", DEV)])
def test_dyn_expand_reads_its_shape_on_the_host(no_fallback, x_place, shape_place):
    xs = np.arange(4, dtype="float64").reshape(1, 4)
    out = ops._dyn_expand(_t(xs, x_place), _t(np.array([3, 4]), shape_place), [])
    assert out.place.device_str() == x_place
    np.testing.assert_array_equal(out.numpy(), np.broadcast_to(xs, (3, 4)))


def test_zero_size_and_non_contiguous_inputs(no_fallback):
    empty = ops._dyn_reshape(_t(np.zeros((0, 6), "float32"), DEV), _t(np.array([0, 2, 3]), DEV), [])
    assert empty.place.device_str() == DEV and empty.shape == [0, 2, 3]
    xs = np.arange(24, dtype="float32").reshape(4, 6)
    xt = _t(xs, DEV).transpose([1, 0])  # a strided view on the device
    out = ops._dyn_reshape(xt, _t(np.array([-1]), DEV), [])
    np.testing.assert_array_equal(out.numpy(), xs.T.reshape(-1))


def test_shape64_on_the_device(no_fallback):
    s = ops.shape(_t(np.zeros((5, 0, 2), "float32"), DEV))
    assert s.place.device_str() == DEV and s.dtype == oar.int64
    np.testing.assert_array_equal(s.numpy(), [5, 0, 2])


def test_the_gradient_reaches_x_on_its_place(sample):
    xs = np.random.default_rng(1).standard_normal((2, 6)).astype("float32")
    x = _t(xs, DEV)
    x.stop_gradient = False
    w = _t(np.arange(12, dtype="float32").reshape(3, 4), DEV)
    (ops._dyn_reshape(x, _t(np.array([3, 4]), DEV), []) * w).sum().backward()
    assert x.grad.place.device_str() == DEV
    np.testing.assert_array_equal(x.grad.numpy(), np.arange(12, dtype="float32").reshape(2, 6))


def test_bad_shapes_name_the_op_and_the_argument(sample):
    x = _t(np.zeros((3, 4), "float32"), DEV)
    with pytest.raises(ValueError, match=r"reshape: .*12.*\[5, -1\]|reshape: .*\[5, -1\].*12"):
        ops._dyn_reshape(x, _t(np.array([5, -1]), DEV), [])
    with pytest.raises(TypeError, match=r"argument 'shape' must be an int32 or int64 tensor, got float32"):
        ops._dyn_reshape(x, _t(np.array([3.0, 4.0], "float32"), DEV), [])
    with pytest.raises(ValueError, match=r"argument 'shape' must be 1-D"):
        ops._dyn_expand(x, _t(np.array([[3, 4]]), DEV), [])


def test_a_program_with_dynamic_shapes_runs_on_the_device(sample):
    """to_static records shape64 + dyn_reshape for x.reshape(paddle.shape(y)) with a
    dynamic batch; lowered for sample:0, every step has a kernel there (no fallback), and
    the executor moves the shape, computed on the device, to the host for dyn_reshape."""
    def f(x, y):
        return x.reshape(oar.shape(y)) * 2.0

    st = oar.jit.to_static(f, input_spec=[InputSpec([None, 6], "float32"), InputSpec([None, 2, 3], "float32")])
    xs = np.arange(24, dtype="float32").reshape(4, 6)
    out = st(_t(xs, DEV), _t(np.zeros((4, 2, 3), "float32"), DEV))
    assert out.place.device_str() == DEV
    np.testing.assert_array_equal(out.numpy(), xs.reshape(4, 2, 3) * 2)
    (prog,) = st.concrete_programs
    names = [op.name() for op in prog.program.global_block().ops] if hasattr(prog.program, "global_block") \
        else str(prog.program)
    assert "pd_op.dyn_reshape" in str(names) and "pd_op.shape64" in str(names)
    oar.set_flags({"FLAGS_enable_api_kernel_fallback": False})
    try:
        x5 = _t(np.arange(30, dtype="float32").reshape(5, 6), DEV)
        y5 = _t(np.zeros((5, 2, 3), "float32"), DEV)
        # lowering for the device refuses any op without a kernel there (the fallback is off)
        ex = oar._C.pir.Executor(prog.program, oar.CustomPlace("sample", 0))
        (got,) = ex.run([x5, y5], {})
        assert got.place.device_str() == DEV and got.shape == [5, 2, 3]
        np.testing.assert_array_equal(got.numpy(), np.arange(30, dtype="float32").reshape(5, 2, 3) * 2)
        np.testing.assert_array_equal(st(x5, y5).numpy(), got.numpy())  # the same through to_static
    finally:
        oar.set_flags({"FLAGS_enable_api_kernel_fallback": True})


def test_a_traced_shape_list_is_built_on_the_tensors_place(sample):
    """x.reshape([x.shape[0], -1]) on the device: the shape's parts (the traced size and
    the constant -1) are built on x's place, then dyn_reshape reads them on the host."""
    def f(x):
        return x.reshape([x.shape[0], -1]) + 1.0

    st = oar.jit.to_static(f, input_spec=[InputSpec([None, 3, 2], "float32")])
    xs = np.arange(24, dtype="float32").reshape(4, 3, 2)
    out = st(_t(xs, DEV))
    assert out.place.device_str() == DEV
    np.testing.assert_array_equal(out.numpy(), xs.reshape(4, 6) + 1)
    np.testing.assert_array_equal(st(oar.to_tensor(xs[:2])).numpy(), xs[:2].reshape(2, 6) + 1)  # and on the CPU

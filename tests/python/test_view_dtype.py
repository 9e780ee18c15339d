"""Tensor.view(dtype) / oar.view: a bit-cast view of x's bytes (Note [Bit-cast views]),
checked against NumPy's ndarray.view, plus view's shape forms and its errors."""
import numpy as np
import pytest

import oar


def np_view(a, dtype):
    return np.ascontiguousarray(a).view(dtype)


@pytest.mark.parametrize("src,dst", [
    ("float32", "uint8"), ("float32", "int32"), ("float32", "int16"), ("float64", "int64"),
    ("float64", "int32"), ("float64", "uint8"), ("int64", "float64"), ("uint8", "float32"),
    ("int16", "float64"), ("float64", "complex128"), ("complex128", "float64"),
    ("complex64", "int32"), ("bool", "uint8"), ("int8", "bool"),
])
@pytest.mark.parametrize("shape", [[2, 4, 8], [3, 8], [16], [0, 8], [5, 0]])
def test_matches_numpy_view(src, dst, shape):
    rng = np.random.default_rng(0)
    n = int(np.prod(shape))
    if src == "bool":
        a = rng.integers(0, 2, n).astype(bool)
    elif src == "int8":  # only 0/1 bytes make valid bools
        a = rng.integers(0, 2, n).astype(np.int8)
    else:
        a = rng.integers(0, 256, n * np.dtype(src).itemsize, dtype=np.uint8).view(src)
        if np.dtype(src).kind in "fc":
            a = rng.standard_normal(n * (2 if src.startswith("complex") else 1)).astype(
                np.float64).view(np.complex128 if src.startswith("complex") else np.float64
                                 ).astype(src)
    a = a.reshape(shape)
    x = oar.to_tensor(a)
    v = x.view(dst)
    ref = np_view(a, dst)
    assert v.dtype == getattr(oar, "bool" if dst == "bool" else dst) or v.dtype.name == dst
    assert list(v.shape) == list(ref.shape)
    np.testing.assert_array_equal(v.numpy().view(np.uint8), ref.view(np.uint8))


def test_docstring_shapes_and_forms():
    x = oar.rand([2, 4, 6], dtype="float32")
    assert oar.view(x, "uint8").shape == [2, 4, 24]
    assert oar.view(x, oar.uint8).shape == [2, 4, 24]
    assert x.view(np.uint8).shape == [2, 4, 24]
    assert x.view(dtype=oar.int16).shape == [2, 4, 12]
    assert x.view(oar.float32) is x  # the same dtype is x itself, as Paddle
    assert oar.view(x, [8, 6]).shape == [8, 6]
    assert x.view(-1, 1, 3).shape == [16, 1, 3]
    assert x.view(size=[8, -1]).shape == [8, 6]
    assert x.view(48).shape == [48]
    np.testing.assert_array_equal(oar.view(x, [8, -1]).numpy(), x.numpy().reshape(8, 6))


def test_shares_memory_both_ways():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    x = oar.to_tensor(a)
    v = x.view("int64")
    x[1, 2] = -0.5
    assert v.numpy()[1, 2] == np.array(-0.5).view(np.int64)
    v[0, 0] = np.array(2.25).view(np.int64).item()
    assert x.numpy()[0, 0] == 2.25
    u = x.view("uint8")  # a wider last dim over the same bytes
    u[2, 0:8] = 0
    assert x.numpy()[2, 0] == 0.0 and x.numpy()[2, 1] == 9.0


def test_strided_inputs():
    a = np.arange(48, dtype=np.float32).reshape(4, 12)
    x = oar.to_tensor(a)
    # rows 1.. and columns 2..: last stride 1, an offset and a row stride to rescale
    np.testing.assert_array_equal(x[1:, 2:].view("uint8").numpy(), np_view(a[1:, 2:], np.uint8))
    np.testing.assert_array_equal(x[::2].view("int16").numpy(), np_view(a[::2], np.int16))
    b = np.arange(64, dtype=np.uint8).reshape(4, 16)
    y = oar.to_tensor(b)
    np.testing.assert_array_equal(y[1:, 4:].view("int32").numpy(), np_view(b[1:, 4:], np.int32))
    np.testing.assert_array_equal(y[::3, 8:].view("float64").numpy(),
                                  np_view(b[::3, 8:], np.float64))
    # a size-1 last dim needs no stride 1
    np.testing.assert_array_equal(x[:, 3:4].view("uint8").numpy(), np_view(a[:, 3:4], np.uint8))


def test_not_differentiable():
    x = oar.rand([2, 4])
    x.stop_gradient = False
    assert x.view("int32").stop_gradient
    assert x.view("float32") is x


def test_errors_name_the_op_and_values():
    x = oar.to_tensor(np.arange(15, dtype=np.int16).reshape(3, 5))
    with pytest.raises(ValueError, match=r"view: .*\[3, 5\].*int16.*int32.*divisible by 2, got 5"):
        x.view("int32")
    with pytest.raises(ValueError, match=r"view: .*last dimension contiguous.*strides"):
        oar.rand([4, 6]).t().view("uint8")
    u = oar.to_tensor(np.arange(32, dtype=np.uint8).reshape(2, 16))
    with pytest.raises(ValueError, match=r"view: .*offset divisible by 4.*got 1"):
        u[:, 1:13].view("float32")
    with pytest.raises(ValueError, match=r"view: .*every stride but the last divisible by 4"):
        oar.to_tensor(np.zeros([3, 6], np.uint8))[:, :4].view("int32")
    with pytest.raises(ValueError, match=r"view: x is 0-D; .*float32.*uint8"):
        oar.to_tensor(np.float32(1.5)).view("uint8")
    assert oar.to_tensor(np.float32(1.5)).view("int32").item() == \
        np.array(1.5, np.float32).view(np.int32).item()
    with pytest.raises(TypeError, match=r"view: dtype 'float7'"):
        oar.rand([2]).view("float7")
    with pytest.raises(TypeError, match=r"view: shape_or_dtype must be a shape"):
        oar.rand([2]).view([1.5, 2])
    with pytest.raises(TypeError, match=r"view: give the shape or dtype once"):
        oar.rand([2]).view([2], dtype="int32")
    with pytest.raises(TypeError, match=r"view: x must be a Tensor, got list"):
        oar.view([1.0], "int32")
    with pytest.raises(ValueError, match="reshape"):
        oar.view(oar.rand([2, 4, 6]), [5, -1])


def test_in_a_static_program():
    a = np.random.default_rng(1).standard_normal([3, 4]).astype(np.float64)
    oar.enable_static()
    try:
        main = oar.static.Program()
        with oar.static.program_guard(main, oar.static.Program()):
            x = oar.static.data("x", [3, 4], "float64")
            y = x.view("int32")
            assert list(y.shape) == [3, 8]
        out, = oar.static.Executor().run(main, feed={"x": a}, fetch_list=[y])
    finally:
        oar.disable_static()
    np.testing.assert_array_equal(out, a.view(np.int32))

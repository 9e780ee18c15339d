"""Tensor.set_ / resize_ / cast_ and assign(x, output) (python/oar/_tensor_storage.py, the
bindings Tensor._set_dense_from and _commit_cast): the memory, shape and dtype a tensor
takes, shared storage, strided/offset views, every dtype, 0-size shapes, cast_'s gradient
and bad inputs."""
import numpy as np
import pytest

import oar

DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float32", "float64",
          "complex64", "complex128"]


def _data(dtype, n, rng):
    if dtype == "bool":
        return rng.random(n) < 0.5
    if dtype.startswith("complex"):
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    if dtype.startswith(("int", "uint")):
        return rng.integers(0, 100, n).astype(dtype)
    return rng.standard_normal(n).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_set_shares_the_source_storage(dtype):
    rng = np.random.default_rng(0)
    src_np = _data(dtype, 6, rng)
    src = oar.to_tensor(src_np.reshape(2, 3))
    x = oar.to_tensor(_data(dtype, 5, rng))
    assert x.set_(src) is x
    assert list(x.shape) == [2, 3] and x.dtype == src.dtype
    np.testing.assert_array_equal(x.numpy(), src_np.reshape(2, 3))
    assert x._is_shared_buffer_with(src)
    src[0, 0] = src_np[5].item()  # a write through src is seen through x
    assert x.numpy()[0, 0] == src_np[5]


def test_set_paddle_examples():
    src = oar.to_tensor([[11., 22., 33.]])
    src2 = oar.to_tensor([11., 22., 33., 44., 55., 66.])
    x = oar.to_tensor([1., 2., 3., 4., 5.])
    x.set_()
    assert list(x.shape) == [0] and x.dtype.name == "float32"
    cases = [((src,), {"shape": [2, 1]}, [[11.], [22.]]),
             ((src2,), {"shape": [3], "stride": [2]}, [11., 33., 55.]),
             ((src2,), {"shape": [5], "offset": 4}, [22., 33., 44., 55., 66.]),
             ((src2,), {"shape": [2, 2], "stride": [1, 2], "offset": 8}, [[33., 55.], [44., 66.]])]
    for args, kwargs, want in cases:
        x = oar.to_tensor([1., 2., 3., 4., 5.])
        x.set_(*args, **kwargs)
        np.testing.assert_array_equal(x.numpy(), want)


def test_set_bad_inputs():
    x = oar.to_tensor([1., 2.])
    with pytest.raises(TypeError, match="set_: source's dtype float64 differs from x's float32"):
        x.set_(oar.to_tensor([1.0], dtype="float64"))
    with pytest.raises(TypeError, match="set_: source must be a Tensor, got list"):
        x.set_([1.0])
    with pytest.raises(ValueError, match="set_: offset 3 is not a multiple of the element size 4"):
        x.set_(oar.to_tensor([1., 2., 3.]), offset=3)
    with pytest.raises(ValueError, match=r"set_: shape \[-1\] has a negative size"):
        x.set_(oar.to_tensor([1., 2., 3.]), shape=[-1])
    with pytest.raises(ValueError, match=r"set_: stride \[1\] must be non-negative, one per dim"):
        x.set_(oar.to_tensor([1., 2., 3.]), shape=[1, 1], stride=[1])
    with pytest.raises(IndexError, match="reach element 3 but the input has only 3 elements"):
        x.set_(oar.to_tensor([1., 2., 3.]), shape=[4])
    leaf = oar.to_tensor([1., 2.], stop_gradient=False)
    with pytest.raises(ValueError, match="set_: x is a leaf tensor that requires grad"):
        leaf.set_(oar.to_tensor([3.]))
    y = leaf * 2
    with pytest.raises(ValueError, match="set_: x is the output of a differentiable op"):
        y.set_(oar.to_tensor([3.]))
    v = oar.to_tensor([1., 2., 3.])[1:]
    with pytest.raises(ValueError, match="set_: x is a view of another tensor"):
        v.set_(oar.to_tensor([3.]))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [[2, 1], [2, 3], [0], [3, 0, 2], [7]], ids=str)
def test_resize_keeps_the_leading_elements(dtype, shape):
    rng = np.random.default_rng(1)
    data = _data(dtype, 3, rng)
    x = oar.to_tensor(data)
    assert x.resize_(shape, fill_zero=True) is x
    n = int(np.prod(shape))
    want = np.zeros(n, dtype)
    want[:min(n, 3)] = data[:min(n, 3)]
    assert list(x.shape) == shape and x.dtype.name == dtype
    np.testing.assert_array_equal(x.numpy(), want.reshape(shape))


def test_resize_bad_inputs():
    x = oar.to_tensor([1., 2., 3.])
    with pytest.raises(ValueError, match=r"resize_: shape \[2, -3\] has a negative size"):
        x.resize_([2, -3])
    with pytest.raises(TypeError, match="resize_: shape must be a list or tuple of ints"):
        x.resize_([2.5])
    with pytest.raises(MemoryError, match="resize_"):
        x.resize_([2 ** 40, 2 ** 20])


@pytest.mark.parametrize("shape, dtype", [((3, 2), "int64"), ((3, 3), "float32"), ((0, 2), "float64")],
                         ids=str)
def test_assign_output_takes_x_shape_and_dtype(shape, dtype):
    rng = np.random.default_rng(2)
    array = rng.integers(0, 9, (3, 2)).astype(np.int64)
    out = oar.zeros(list(shape), dtype)
    assert oar.assign(array, out) is out
    assert list(out.shape) == [3, 2] and out.dtype.name == "int64"
    np.testing.assert_array_equal(out.numpy(), array)
    same = oar.zeros([3, 2], "int64")  # same shape and dtype: a copy into out's memory
    ptr = same.data_ptr()
    oar.assign(array, same)
    assert same.data_ptr() == ptr
    np.testing.assert_array_equal(same.numpy(), array)
    with pytest.raises(TypeError, match="assign: output must be a Tensor, got list"):
        oar.assign(array, [1, 2])


@pytest.mark.parametrize("src", DTYPES)
@pytest.mark.parametrize("dst", ["bool", "int32", "int64", "float32", "float64", "complex64"])
def test_cast_in_place_every_dtype(src, dst):
    """x.cast_(dtype) is x.cast(dtype) held by x itself (also 0-size); paddle.cast_ too."""
    rng = np.random.default_rng(3)
    for shape in [(2, 3), (0, 4)]:
        data = _data(src, int(np.prod(shape)), rng).reshape(shape)
        if np.iscomplexobj(data) and not dst.startswith("complex"):
            continue  # complex -> real casts are the cast op's business (tested there)
        x = oar.to_tensor(data)
        want = x.cast(dst).numpy()
        assert x.cast_(dst) is x
        assert x.dtype.name == dst and list(x.shape) == list(shape)
        np.testing.assert_array_equal(x.numpy(), want)
    y = oar.to_tensor(_data(src, 3, rng))
    if not np.iscomplexobj(y.numpy()):
        assert oar.cast_(y, "float64") is y and y.dtype.name == "float64"


def test_cast_in_place_gradient():
    """A non-leaf cast in place keeps its history (the gradient flows back through the cast,
    against float64 finite differences of the same function); to an integer dtype x keeps
    the out-of-place cast's stop_gradient (False, as in Paddle)."""
    xv = np.random.default_rng(4).standard_normal(5)
    x = oar.to_tensor(xv.astype("float32"), stop_gradient=False)
    z = x * 3.0
    z.cast_("float64")
    assert z.dtype.name == "float64" and not z.stop_gradient
    (z * z).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 18.0 * xv.astype("float32").astype(np.float64), rtol=1e-6)
    eps, f = 1e-6, lambda v: float(np.sum((3.0 * v) ** 2))
    fd = [(f(xv + eps * e) - f(xv - eps * e)) / (2 * eps) for e in np.eye(5)]
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-4)
    w = oar.to_tensor([1.5, 2.5], stop_gradient=False) * 2
    out_of_place = w.cast("int32")
    w.cast_("int32")
    assert w.stop_gradient == out_of_place.stop_gradient and w.numpy().tolist() == [3, 5]


def test_cast_in_place_bad_inputs():
    leaf = oar.to_tensor([1.0, 2.0], stop_gradient=False)
    with pytest.raises(RuntimeError, match="cast_: a leaf tensor that requires grad"):
        leaf.cast_("float64")
    with oar.no_grad():  # allowed there, as other in-place ops
        leaf.cast_("float64")
    assert leaf.dtype.name == "float64" and leaf.is_leaf
    base = oar.to_tensor([1.0, 2.0, 3.0, 4.0])
    with pytest.raises(ValueError, match="cast_: x is a view of another tensor"):
        base[1:3].cast_("int32")
    assert base.dtype.name == "float32"
    with pytest.raises(TypeError, match="foo"):
        oar.to_tensor([1.0]).cast_("foo")
    with pytest.raises(TypeError, match="cast_: x must be a Tensor, got list"):
        oar.cast_([1.0], "float64")

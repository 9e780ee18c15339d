"""paddle.tensor.array helpers, Tensor.fill_diagonal_/fill_diagonal_tensor(_) against NumPy,
and oar.random.initial_seed; bad inputs name the op and the argument."""
import numpy as np
import pytest

import oar


def test_tensor_array_round_trip():
    arr = oar.tensor.create_array(dtype="float32")
    assert arr == [] and oar.tensor.array_length(arr) == 0
    a, b = oar.full([2, 3], 5.0), oar.rand([2, 3])
    i = oar.zeros([1], dtype="int32")
    arr = oar.tensor.array_write(a, i, array=arr)
    oar.tensor.array.array_write(b, i + 1, arr)
    assert oar.tensor.array_length(arr) == 2
    assert oar.tensor.array_read(arr, i + 1) is b and oar.tensor.array_read(arr, 0) is a
    oar.tensor.array_write(b, 0, arr)  # overwrite
    assert arr[0] is b
    out, sizes = oar.tensor.manipulation.tensor_array_to_tensor([a, b, b], axis=1)
    np.testing.assert_array_equal(out.numpy(), np.concatenate([a.numpy(), b.numpy(),
                                                               b.numpy()], 1))
    np.testing.assert_array_equal(sizes.numpy(), [3, 3, 3])
    assert sizes.dtype == oar.int32
    out, sizes = oar.tensor.tensor_array_to_tensor([a, b], axis=0, use_stack=True)
    assert out.shape == [2, 2, 3] and sizes.numpy().tolist() == [1, 1]
    fresh = oar.tensor.array_write(a, oar.to_tensor([0], dtype="int64"))
    assert fresh == [a]
    assert oar.tensor.create_array("float32", [a, b]) == [a, b]


def test_tensor_array_bad_inputs():
    arr = oar.tensor.create_array("float32")
    with pytest.raises(IndexError, match=r"array_write: i \(3\) must be at most"):
        oar.tensor.array_write(oar.ones([1]), 3, arr)
    with pytest.raises(IndexError, match=r"array_read: i \(0\) is out of range"):
        oar.tensor.array_read(arr, 0)
    with pytest.raises(TypeError, match="array_write: i must be an integer Tensor"):
        oar.tensor.array_write(oar.ones([1]), oar.ones([1]), arr)
    with pytest.raises(IndexError, match="array_read: i must be non-negative, got -1"):
        oar.tensor.array_read([oar.ones([1])], -1)
    with pytest.raises(TypeError, match="array_length: array must be a tensor array"):
        oar.tensor.array_length(oar.ones([2]))
    with pytest.raises(ValueError, match="tensor_array_to_tensor: input must hold"):
        oar.tensor.tensor_array_to_tensor([])
    with pytest.raises(TypeError, match=r"create_array: initialized_list\[1\]"):
        oar.tensor.create_array("float32", [oar.ones([1]), 3])


def ref_fill_diagonal(shape, value, offset, wrap):
    """Paddle's flat walk: every (sum of strides)-th element from 0, up to the square part
    (or the whole tensor with wrap or > 2 dims), shifted by offset within its row."""
    a = np.zeros(shape)
    flat = a.reshape(-1)
    w = shape[-1]
    stride = sum(int(np.prod(shape[k + 1:])) for k in range(len(shape)))
    limit = flat.size if (wrap or len(shape) > 2) else min(flat.size, w * w)
    for p in range(0, limit, stride):
        if 0 <= p % w + offset < w and 0 <= p + offset < flat.size:
            flat[p + offset] = value
    return a


@pytest.mark.parametrize("shape,offset,wrap", [((4, 3), 0, False), ((7, 3), 0, True),
                                               ((7, 3), 1, False), ((3, 5), -1, False),
                                               ((3, 5), 2, True), ((3, 3, 3), 0, False),
                                               ((7, 3), -2, True), ((0, 3), 0, False)])
def test_fill_diagonal_inplace_matches_reference(shape, offset, wrap):
    x = oar.zeros(list(shape), dtype="float64")
    out = x.fill_diagonal_(2.5, offset, wrap)
    assert out is x
    ref = ref_fill_diagonal(shape, 2.5, offset, wrap)
    np.testing.assert_array_equal(x.numpy(), ref)
    if offset == 0 and len(shape) == 2 and shape[0]:
        np.fill_diagonal(expect := np.zeros(shape), 2.5, wrap=wrap)
        np.testing.assert_array_equal(ref, expect)
    xi = oar.zeros(list(shape), dtype="int32").fill_diagonal_(3, offset, wrap)
    np.testing.assert_array_equal(xi.numpy(), ref_fill_diagonal(shape, 3, offset, wrap))


@pytest.mark.parametrize("shape,offset,dim1,dim2", [((4, 3), 0, 0, 1), ((5, 4, 6), 1, 1, 2),
                                                    ((3, 4, 5), -1, 2, 0)])
def test_fill_diagonal_tensor_matches_reference_and_gradients(shape, offset, dim1, dim2):
    rng = np.random.default_rng(0)
    x = rng.normal(size=shape)
    diag_shape = np.diagonal(x, offset, dim1, dim2).shape
    y = rng.normal(size=diag_shape)
    ref = x.copy()
    view = np.diagonal(ref, offset, dim1, dim2)
    view.setflags(write=True)
    view[...] = y
    xt, yt = oar.to_tensor(x), oar.to_tensor(y)
    xt.stop_gradient = yt.stop_gradient = False
    out = xt.fill_diagonal_tensor(yt, offset, dim1, dim2)
    np.testing.assert_array_equal(out.numpy(), ref)
    cot = rng.normal(size=shape)
    (out * oar.to_tensor(cot)).sum().backward()
    mask = np.zeros(shape)
    mview = np.diagonal(mask, offset, dim1, dim2)
    mview.setflags(write=True)
    mview[...] = 1
    np.testing.assert_allclose(xt.grad.numpy(), cot * (1 - mask))
    np.testing.assert_allclose(yt.grad.numpy(), np.diagonal(cot, offset, dim1, dim2))
    z = oar.to_tensor(x)
    assert z.fill_diagonal_tensor_(oar.to_tensor(y), offset, dim1, dim2) is z
    np.testing.assert_array_equal(z.numpy(), ref)


def test_fill_diagonal_bad_inputs():
    with pytest.raises(ValueError, match="fill_diagonal_: x must have at least 2 dims"):
        oar.ones([3]).fill_diagonal_(1.0)
    with pytest.raises(ValueError, match=r"fill_diagonal_: all dims of x must be equal"):
        oar.ones([2, 3, 3]).fill_diagonal_(1.0)
    with pytest.raises(TypeError, match="fill_diagonal_: value must be a number"):
        oar.ones([3, 3]).fill_diagonal_("a")
    with pytest.raises(ValueError, match=r"fill_diagonal_tensor: y must have the diagonal's "
                                         r"shape \[3\], got \[4\]"):
        oar.ones([4, 3]).fill_diagonal_tensor(oar.ones([4]))
    with pytest.raises(ValueError, match="fill_diagonal_tensor_: dim1 and dim2 must differ"):
        oar.ones([4, 3]).fill_diagonal_tensor_(oar.ones([3]), dim1=1, dim2=-1)
    with pytest.raises(ValueError, match=r"fill_diagonal_tensor: dim2 must be an int in"):
        oar.ones([4, 3]).fill_diagonal_tensor(oar.ones([3]), dim2=2)


def test_random_namespace():
    oar.seed(1234)
    assert oar.random.initial_seed() == 1234
    oar.random.seed(99)
    assert oar.random.initial_seed() == 99
    state = oar.random.get_rng_state()
    a = oar.rand([3]).numpy()
    oar.random.set_rng_state(state)
    np.testing.assert_array_equal(oar.rand([3]).numpy(), a)


def test_uniform_random_batch_size_like():
    from oar.tensor import random

    x = oar.ones([5, 2])
    out = random.uniform_random_batch_size_like(x, [3, 7], min=2.0, max=3.0, seed=3)
    assert out.shape == [5, 7] and out.dtype == oar.float32
    v = out.numpy()
    assert v.min() >= 2.0 and v.max() < 3.0 and len(np.unique(v)) > 30
    out = random.uniform_random_batch_size_like(x, [3, 7], "float64", 1, 0)
    assert out.shape == [2, 7] and out.dtype == oar.float64
    oar.enable_static()
    try:
        main = oar.static.Program()
        with oar.static.program_guard(main, oar.static.Program()):
            data = oar.static.data(name="ubsl", shape=[1, 3], dtype="float32")
            assert random.uniform_random_batch_size_like(data, [2, 4]).shape == [1, 4]
            # a run-time batch: the program draws the fed size (Note [Run-time random shapes])
            dyn = oar.static.data(name="ubsl_dyn", shape=[-1, 3], dtype="float32")
            u = random.uniform_random_batch_size_like(dyn, [-1, 4], min=2.0, max=3.0)
            exe = oar.static.Executor()
            for b in (3, 6):
                got, = exe.run(main, feed={"ubsl": np.zeros((1, 3), "float32"),
                                           "ubsl_dyn": np.zeros((b, 3), "float32")}, fetch_list=[u])
                assert got.shape == (b, 4) and got.min() >= 2.0 and got.max() < 3.0
    finally:
        oar.disable_static()
    with pytest.raises(ValueError, match=r"uniform_random_batch_size_like: output_dim_idx must "
                                         r"be an int in \[0, 2\), got 2"):
        random.uniform_random_batch_size_like(x, [3, 7], output_dim_idx=2)
    with pytest.raises(TypeError, match="uniform_random_batch_size_like: shape must be"):
        random.uniform_random_batch_size_like(x, [])

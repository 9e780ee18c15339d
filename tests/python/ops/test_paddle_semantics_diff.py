"""Semantics where Oar differed from PaddlePaddle 3.3 (found by a differential run against it):
result dtypes of reductions and creation, NumPy operands, augmented assignment, topk's named
result. Expected values are Paddle 3.3's (and its documentation's), written out here."""
import numpy as np
import pytest

import oar

A = [[1, -2, 3], [-4, 5, 0]]


def _i32():
    return oar.to_tensor(A, dtype="int32")


def test_mean_of_int_and_bool_keeps_dtype_truncated():
    x = _i32()
    r = oar.mean(x)
    assert r.dtype == oar.int32 and r.shape == [] and int(r) == 0  # 3 / 6 truncated
    r = x.mean(axis=0)
    assert r.dtype == oar.int32 and r.tolist() == [-1, 1, 1]  # -1.5, 1.5, 1.5 toward zero
    assert oar.mean(x.astype("int64")).dtype == oar.int64
    b = oar.mean(x > 0)
    assert b.dtype == oar.bool and bool(b)
    assert oar.mean(oar.ones([2])).dtype == oar.float32


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32"])
def test_cumsum_of_narrow_ints_is_int64(dtype):
    x = oar.to_tensor(np.abs(np.array(A))).astype(dtype)
    r = oar.cumsum(x)
    assert r.dtype == oar.int64
    assert oar.cumsum(x, axis=0).dtype == oar.int64
    if dtype != "bool":
        assert oar.cumsum(x, dtype="int32").dtype == oar.int32


def test_median_avg_is_float32_unless_float64():
    for dtype in ("float16", "bfloat16", "int32", "float32"):
        assert oar.median(_i32().astype(dtype)).dtype == oar.float32
    assert oar.median(_i32().astype("float64")).dtype == oar.float64
    assert oar.median(_i32().astype("float16"), mode="min").dtype == oar.float16


def test_trace_keeps_int32_and_atan2_of_ints_is_float64():
    assert oar.trace(_i32()).dtype == oar.int32
    assert int(oar.trace(_i32())) == 6
    r = oar.atan2(_i32(), _i32())
    assert r.dtype == oar.float64
    assert oar.atan2(_i32().astype("float32"), _i32().astype("float32")).dtype == oar.float32


def test_diff_of_bool_marks_changes():
    r = oar.diff(oar.to_tensor([True, False, False]))
    assert r.dtype == oar.bool and r.tolist() == [True, False]


def test_clip_int_with_float_bound_is_float32():
    r = oar.clip(_i32(), -1.5, 2.5)
    assert r.dtype == oar.float32
    np.testing.assert_allclose(r.numpy(), [[1, -1.5, 2.5], [-1.5, 2.5, 0]])
    assert oar.clip(_i32(), oar.to_tensor(-1.5), 2).dtype == oar.float32
    assert oar.clip(_i32(), -1, 2).dtype == oar.int32
    assert _i32().clip(min=0).dtype == oar.int32
    assert _i32().clip(-1.5, 2).dtype == oar.float32


def test_full_without_dtype_is_default_float():
    assert oar.full([2], 3).dtype == oar.float32
    assert oar.full([2], np.int32(3)).dtype == oar.float32
    assert oar.full([2], True).dtype == oar.bool
    assert oar.full([2], 1.5).dtype == oar.float32
    assert oar.full([2], 3, dtype="int64").dtype == oar.int64


def test_to_tensor_of_numpy_scalar_keeps_its_dtype():
    assert oar.to_tensor(np.float64(1.5)).dtype == oar.float64
    assert oar.to_tensor(np.float16(1.0)).dtype == oar.float16
    assert oar.to_tensor(np.int16(3)).dtype == oar.int16
    assert oar.to_tensor(np.bool_(True)).dtype == oar.bool
    assert oar.to_tensor([np.float64(1.5)]).dtype == oar.float32  # a list: Python floats
    oar.set_default_dtype("float64")
    try:
        assert oar.to_tensor(np.float32(1.5)).dtype == oar.float32
    finally:
        oar.set_default_dtype("float32")


def test_numpy_operand_on_the_left_gives_a_tensor():
    x = oar.to_tensor([1.0, -2.0, 3.0]).astype("bfloat16")
    r = np.float64(2.5) - x
    assert isinstance(r, oar.Tensor) and r.dtype == oar.bfloat16
    np.testing.assert_allclose(r.astype("float32").numpy(), [1.5, 4.5, -0.5])
    r = np.array([1.0, 2.0, 3.0]) + oar.to_tensor([1.0, 1.0, 1.0])
    assert isinstance(r, oar.Tensor)
    np.testing.assert_allclose(r.numpy(), [2.0, 3.0, 4.0])


def test_augmented_assignment_is_not_in_place():
    x = _i32()
    y = x
    x += 1
    assert x is not y and y.tolist() == A
    x = oar.to_tensor(A, dtype="int64")
    x /= 2
    assert x.dtype == oar.float32
    np.testing.assert_allclose(x.numpy(), np.array(A) / 2)
    x = _i32()
    x += 1.5
    assert x.dtype == oar.float32
    w = oar.ones([2], dtype="float32")
    w.stop_gradient = False
    w2 = w
    w2 *= 3.0  # a leaf that requires grad: no in-place error
    w2.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [3.0, 3.0])


def test_compare_with_none():
    x = _i32()
    assert (x == None) is False  # noqa: E711
    assert (x != None) is True  # noqa: E711


def test_topk_returns_named_values_indices():
    x = oar.to_tensor([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]])
    r = oar.topk(x, 2)
    assert isinstance(r, tuple) and len(r) == 2
    np.testing.assert_allclose(r.values.numpy(), [[5.0, 3.0], [6.0, 4.0]])
    assert r.indices.tolist() == [[1, 2], [2, 0]]
    v, i = x.topk(1, axis=0, largest=False)
    assert v.tolist() == [[1.0, 2.0, 3.0]] and i.tolist() == [[0, 1, 0]]


def test_tensor_is_floating_point_method():
    assert oar.ones([1]).is_floating_point()
    assert oar.ones([1]).astype("bfloat16").is_floating_point()
    assert not _i32().is_floating_point()


@pytest.mark.parametrize("call", [
    lambda x: x.sum(axis=3), lambda x: x.transpose([0, 2]), lambda x: oar.nn.functional.softmax(x, axis=4),
    lambda x: x.unsqueeze(5), lambda x: x.flip(3), lambda x: oar.concat([x, x], axis=4),
    lambda x: oar.median(x, axis=2), lambda x: oar.nn.functional.gumbel_softmax(x, axis=3),
    lambda x: x[5], lambda x: oar.gather(x, oar.to_tensor([7])),
])
def test_out_of_range_axis_or_index_is_index_and_value_error(call):
    # Paddle raises ValueError for an axis and IndexError for an index: code written for it
    # catches either, so Oar's out-of-range error is both (as NumPy's AxisError)
    x = oar.to_tensor([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(IndexError) as e:
        call(x)
    assert isinstance(e.value, ValueError)
    assert "out of range" in str(e.value) or "out of bounds" in str(e.value)


@pytest.mark.parametrize("expr, dtype, want_dtype, want", [
    (lambda x: x + np.int32(3), "uint8", "uint8", [4, 5]),
    (lambda x: np.int64(3) * x, "int32", "int32", [3, 6]),
    (lambda x: x - np.int16(1), "int8", "int8", [0, 1]),
    (lambda x: x * np.float64(2), "float16", "float16", [2, 4]),
    (lambda x: x * np.float64(0.5), "uint8", "float32", [0.5, 1]),
    (lambda x: x / np.sqrt(np.float64(4)), "float32", "float32", [0.5, 1]),
])
def test_numpy_scalars_are_python_numbers(expr, dtype, want_dtype, want):
    # As in Paddle: a NumPy scalar operand does not widen the tensor (an int32 scalar used to
    # turn a uint8 tensor int32)
    r = expr(oar.to_tensor([1, 2]).astype(dtype))
    assert r.dtype.name == want_dtype
    np.testing.assert_array_equal(r.numpy().astype(np.float64), want)

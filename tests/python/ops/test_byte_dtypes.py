"""Kernels on 1-byte dtypes (bool, int8, uint8) and the copies that stalled on them (Note [Byte
stores and captured pointers], elementwise.h): elementwise ops, a reduction over a column,
expanded and strided copies made dense, logical/bitwise not, and roll along rows (a copy a
few bytes off, cast_kernels.cc / reorder_kernels.cc), against NumPy at lengths around the
vector widths and at 1 and 2 threads."""
import numpy as np
import pytest

import oar


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_byte_elementwise_and_column_reduction(dtype, threads):
    rng = np.random.default_rng(1)
    info = np.iinfo(dtype)
    for shape in [(1,), (31,), (33, 65), (257, 1031)]:
        a = rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
        b = rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
        x, y = oar.to_tensor(a), oar.to_tensor(b)
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal((x + y).numpy(), a + b)  # wraps
            np.testing.assert_array_equal((x * 3).numpy(), a * np.array(3, dtype))
        np.testing.assert_array_equal(oar.maximum(x, y).numpy(), np.maximum(a, b))
        np.testing.assert_array_equal(oar.bitwise_and(x, y).numpy(), a & b)
        np.testing.assert_array_equal(oar.bitwise_not(x).numpy(), ~a)
        for axis in range(a.ndim):
            np.testing.assert_array_equal(oar.max(x, axis=axis).numpy(), a.max(axis=axis))
            np.testing.assert_array_equal(oar.min(x, axis=axis).numpy(), a.min(axis=axis))


def test_bool_not_and_counts(threads):
    rng = np.random.default_rng(2)
    for n in (1, 31, 33, 1025, 100003):
        a = rng.random(n) > 0.5
        x = oar.to_tensor(a)
        np.testing.assert_array_equal(oar.logical_not(x).numpy(), ~a)
        np.testing.assert_array_equal(oar.bitwise_not(x).numpy(), ~a)
        np.testing.assert_array_equal(oar.logical_not(x[::2]).numpy(), ~a[::2])  # strided: the element loop
        assert int(oar.count_nonzero(x)) == int(a.sum())


@pytest.mark.parametrize("dtype", ["bool", "uint8", "float16", "float32", "int64"])
def test_expanded_and_strided_copies(dtype, threads):
    rng = np.random.default_rng(3)
    base = rng.integers(0, 2 if dtype == "bool" else 100, (67, 129)).astype(dtype)
    x = oar.to_tensor(base)
    col, row = x[:, :1], x[:1, :]
    np.testing.assert_array_equal(col.expand([67, 129]).contiguous().numpy(), np.broadcast_to(base[:, :1], (67, 129)))
    np.testing.assert_array_equal(row.expand([67, 129]).contiguous().numpy(), np.broadcast_to(base[:1, :], (67, 129)))
    np.testing.assert_array_equal(x[:, ::2].contiguous().numpy(), base[:, ::2])
    np.testing.assert_array_equal(x[::3, 1::3].contiguous().numpy(), base[::3, 1::3])
    np.testing.assert_array_equal(x.T.contiguous().numpy(), base.T)


@pytest.mark.parametrize("dtype", ["float32", "int32", "float64", "float16", "bool", "uint8"])
def test_roll_along_rows(dtype, threads):
    rng = np.random.default_rng(4)
    a = rng.integers(0, 2 if dtype == "bool" else 1000, (19, 1031)).astype(dtype)
    x = oar.to_tensor(a)
    for shift in (1, 3, 8, -5, 1030, 2063):
        np.testing.assert_array_equal(oar.roll(x, shift, axis=1).numpy(), np.roll(a, shift, axis=1))
        np.testing.assert_array_equal(oar.roll(x, shift).numpy(), np.roll(a, shift))
    np.testing.assert_array_equal(oar.roll(x, [2, -7], axis=[0, 1]).numpy(), np.roll(a, (2, -7), axis=(0, 1)))

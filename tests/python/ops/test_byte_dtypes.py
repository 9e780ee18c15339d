"""Kernels on 1-byte dtypes (bool, int8, uint8) and the copies that stalled on them (Note [Byte
stores and captured pointers], elementwise.h): elementwise ops, a reduction over a column,
expanded and strided copies made dense, logical/bitwise not, and roll along rows (a copy a
few bytes off, cast_kernels.cc / reorder_kernels.cc), sums of bytes (32-bit lanes over
blocks of 65536, reduce.h) and count_nonzero, against NumPy at lengths around the vector
widths and the blocks, at 1 and 2 threads."""
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


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8"])
def test_byte_sums_and_counts(dtype, threads):
    """A sum of bytes into int64 over rows crossing the 65536-element blocks: all 255s (a
    block's uint8 lanes near their limit), all -128s, random bytes; and count_nonzero."""
    rng = np.random.default_rng(5)
    for n in (0, 1, 65535, 65536, 65537, 200003):
        if dtype == "bool":
            arrays = [rng.random(n) > 0.3, np.ones(n, bool)]
        else:
            info = np.iinfo(dtype)
            arrays = [rng.integers(info.min, info.max, n, endpoint=True).astype(dtype),
                      np.full(n, info.max, dtype), np.full(n, info.min, dtype)]
        for a in arrays:
            x = oar.to_tensor(a)
            want = int(a.astype(np.int64).sum())
            assert int(oar.sum(x, dtype="int64")) == want, (dtype, n)
            assert int(oar.count_nonzero(x)) == int(np.count_nonzero(a))
            if n:
                rows = a[: n // 3 * 3].reshape(3, -1)
                np.testing.assert_array_equal(oar.sum(oar.to_tensor(rows), axis=1, dtype="int64").numpy(),
                                              rows.astype(np.int64).sum(axis=1))
                np.testing.assert_array_equal(oar.count_nonzero(oar.to_tensor(rows), axis=1).numpy(),
                                              np.count_nonzero(rows, axis=1))


def test_byte_sum_past_32_bits(threads):
    """17M uint8 255s sum past 2^32: each 32-bit partial sum must stay within its block."""
    n = 17_000_000
    x = oar.full([n], 255, dtype="uint8")
    assert int(oar.sum(x, dtype="int64")) == 255 * n
    assert int(oar.count_nonzero(x)) == n

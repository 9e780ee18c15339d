"""Integer floor_divide and remainder (Python's // and %, the remainder with the divisor's sign)
on their vector lanes (binary_kernels.cc, Note [Integer division through double]): int32 and
int64, a divisor of x's shape or one value, against NumPy, at lengths around the four-lane
vectors, at 1 and 2 threads; int64 values past 2^51 (which take the scalar loop) mixed in,
the type's minimum over -1 (wraps), and the other layouts (broadcast, strided) unchanged."""
import numpy as np
import pytest

import oar


def _reference(a, b, quotient):
    """NumPy's // and % on int64 (exact), with min // -1 wrapping to min as the kernels do."""
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    with np.errstate(over="ignore", divide="ignore"):
        q = np.floor_divide(a64, b64) if quotient else np.remainder(a64, b64)
    if a.dtype == np.int64 and quotient:
        q = np.where((a64 == np.iinfo(np.int64).min) & (b64 == -1), np.iinfo(np.int64).min, q)
    if a.dtype == np.int64 and not quotient:
        q = np.where(b64 == -1, 0, q)
    return q.astype(a.dtype)  # int32: min // -1 = 2^31 wraps to min


def _operands(dtype, n, rng, wide):
    info = np.iinfo(dtype)
    if wide:  # every magnitude, past 2^51 included
        shift = lambda: rng.integers(0, info.bits - 1, n).astype(dtype)  # noqa: E731
        a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True) >> shift()
        b = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True) >> shift()
    else:
        a = rng.integers(-10**6, 10**6, n).astype(dtype)
        b = rng.integers(-1000, 1000, n).astype(dtype)
    b = np.where(b == 0, 3, b).astype(dtype)
    k = min(n, 8)
    a[:k] = np.array([info.min, info.min, info.max, -7, 7, -7, 0, info.min + 1])[:k]
    b[:k] = np.array([-1, 1, -1, 2, -2, -2, -5, 1])[:k]
    return a, b


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("wide", [False, True], ids=["small", "wide"])
def test_floor_divide_and_remainder(dtype, wide, threads):
    rng = np.random.default_rng(9)
    for n in (1, 3, 4, 5, 9, 1001, 100003):
        a, b = _operands(dtype, n, rng, wide)
        x, y = oar.to_tensor(a), oar.to_tensor(b)
        for quotient, got in ((True, oar.floor_divide(x, y)), (False, oar.remainder(x, y))):
            np.testing.assert_array_equal(got.numpy(), _reference(a, b, quotient),
                                          err_msg=f"{'//' if quotient else '%'} {dtype} n={n}")
        for d in (7, -3, 1, -1, 1000003):
            bd = np.full(1, d, dtype)
            np.testing.assert_array_equal((x // d).numpy(), _reference(a, np.broadcast_to(bd, a.shape), True))
            np.testing.assert_array_equal((x % d).numpy(), _reference(a, np.broadcast_to(bd, a.shape), False))


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_other_layouts_keep_the_element_loop(dtype):
    rng = np.random.default_rng(10)
    a, b = _operands(dtype, 600, rng, False)
    x, y = oar.to_tensor(a.reshape(20, 30)), oar.to_tensor(b[:30])
    np.testing.assert_array_equal((x // y).numpy(), _reference(a.reshape(20, 30), np.broadcast_to(b[:30], (20, 30)), True))
    np.testing.assert_array_equal((x[:, ::2] % y[::2]).numpy(),
                                  _reference(a.reshape(20, 30)[:, ::2], np.broadcast_to(b[:30:2], (20, 15)), False))
    with pytest.raises(ValueError, match="floor_divide: integer division by zero"):
        oar.floor_divide(x, oar.zeros([30], dtype))

"""bitwise_and/or/xor/not/invert and the shifts (the bitwise kernels through
python/oar/_bitwise.py) against Python's integer bit operations on every integer dtype
(extremes included), bool, broadcast and 0-size shapes, in-place forms, the operators
& | ^ ~ << >> and bad inputs."""
import numpy as np
import pytest

import oar

DTYPES = ["int8", "uint8", "int16", "int32", "int64"]


def _values(dtype, shape, rng):
    info = np.iinfo(dtype)
    v = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    flat = v.reshape(-1)
    extremes = np.array([info.min, info.max, 0, 1, -1 if info.min else 2], dtype=dtype)
    flat[:min(flat.size, 5)] = extremes[:min(flat.size, 5)]
    return v


def _wrap(v, dtype):
    bits = np.iinfo(dtype).bits
    v &= (1 << bits) - 1
    if np.iinfo(dtype).min < 0 and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def _ref_shift(x, y, dtype, left, arithmetic):
    bits = np.iinfo(dtype).bits
    out = np.empty(np.broadcast(x, y).shape, dtype=dtype)
    for idx, (a, b) in zip(np.ndindex(out.shape), np.broadcast(x, y)):
        a, b = int(a), int(b)
        if not 0 <= b < bits:
            r = (-1 if a < 0 else 0) if (not left and arithmetic) else 0
        elif left:
            r = _wrap(a << b, dtype)
        elif arithmetic:
            r = a >> b
        else:
            r = _wrap((a & ((1 << bits) - 1)) >> b, dtype)
        out[idx] = r
    return out


SHAPES = [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((3, 1), (1, 4)), ((0, 3), (3,)), ((), (5,))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_and_or_xor_not_match_numpy(dtype, shapes):
    rng = np.random.default_rng(7)
    a, b = _values(dtype, shapes[0], rng), _values(dtype, shapes[1], rng)
    ta, tb = oar.to_tensor(a), oar.to_tensor(b)
    for fn, ref in [(oar.bitwise_and, np.bitwise_and), (oar.bitwise_or, np.bitwise_or),
                    (oar.bitwise_xor, np.bitwise_xor)]:
        got = fn(ta, tb)
        assert got.dtype.name == dtype
        np.testing.assert_array_equal(got.numpy(), ref(a, b), err_msg=fn.__name__)
    np.testing.assert_array_equal(oar.bitwise_not(ta).numpy(), np.invert(a))
    np.testing.assert_array_equal(ta.bitwise_invert().numpy(), np.invert(a))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("left, arithmetic", [(True, True), (True, False), (False, True),
                                              (False, False)])
def test_shifts_match_python_integers(dtype, left, arithmetic):
    rng = np.random.default_rng(3)
    bits = np.iinfo(dtype).bits
    x = _values(dtype, (4, 6), rng)
    lo = -2 if np.iinfo(dtype).min < 0 else 0
    y = rng.integers(lo, bits + 2, size=(6,)).astype(dtype)
    fn = oar.bitwise_left_shift if left else oar.bitwise_right_shift
    got = fn(oar.to_tensor(x), oar.to_tensor(y), is_arithmetic=arithmetic)
    assert got.dtype.name == dtype
    np.testing.assert_array_equal(got.numpy(), _ref_shift(x, y, dtype, left, arithmetic))


def test_bool_and_paddle_examples_and_in_place():
    t, f = oar.to_tensor([True, True, False]), oar.to_tensor([True, False, False])
    np.testing.assert_array_equal(oar.bitwise_and(t, f).numpy(), [True, False, False])
    np.testing.assert_array_equal(oar.bitwise_or(t, f).numpy(), [True, True, False])
    np.testing.assert_array_equal(oar.bitwise_xor(t, f).numpy(), [False, True, False])
    np.testing.assert_array_equal(oar.bitwise_not(f).numpy(), [False, True, True])
    x = oar.to_tensor([-5, -1, 1])
    np.testing.assert_array_equal(oar.bitwise_and(x, oar.to_tensor([4, 2, -3])).numpy(), [0, 2, 1])
    x8 = oar.to_tensor([[-10, -20], [-16, -65]], dtype="int8")
    y8 = oar.to_tensor([[1, 2], [2, 1]], dtype="int8")
    np.testing.assert_array_equal(oar.bitwise_right_shift(x8, y8, is_arithmetic=False).numpy(),
                                  [[123, 59], [60, 95]])
    z = oar.to_tensor([1, 2, 3])
    r = z.bitwise_left_shift_(oar.to_tensor([1, 1, 1]))
    assert r is z
    np.testing.assert_array_equal(z.numpy(), [2, 4, 6])
    z.bitwise_xor_(3)
    np.testing.assert_array_equal(z.numpy(), [1, 7, 5])
    out = oar.zeros([3], "int64")
    assert oar.bitwise_or(z, z, out=out) is out


@pytest.mark.parametrize("call, exc, msg", [
    (lambda: oar.bitwise_and(oar.to_tensor([1.0]), oar.to_tensor([1.0])), TypeError,
     "bitwise_and: x must be an integer or bool tensor, got float32"),
    (lambda: oar.bitwise_or(oar.to_tensor([1]), oar.to_tensor([1], "int32")), TypeError,
     "bitwise_or: x and y must have one dtype, got int64 and int32"),
    (lambda: oar.bitwise_xor(oar.to_tensor([1, 2]), oar.to_tensor([1, 2, 3])), ValueError,
     "bitwise_xor: x of shape [2] and y of shape [3]"),
    (lambda: oar.bitwise_left_shift(oar.to_tensor([True]), oar.to_tensor([True])), TypeError,
     "bitwise_left_shift: x must be an integer tensor, got bool"),
    (lambda: oar.bitwise_not([1, 2]), TypeError, "bitwise_not: x must be a Tensor"),
    (lambda: oar.bitwise_right_shift(oar.to_tensor([1]), "2"), TypeError,
     "bitwise_right_shift: y must be a Tensor"),
])
def test_bad_inputs(call, exc, msg):
    with pytest.raises(exc, match=msg.replace("[", r"\[").replace("]", r"\]")):
        call()


@pytest.mark.parametrize("dtype", DTYPES)
def test_operators_are_the_bitwise_ops(dtype):
    rng = np.random.default_rng(11)
    a, b = _values(dtype, (3, 4), rng), _values(dtype, (4,), rng)
    ta, tb = oar.to_tensor(a), oar.to_tensor(b)
    np.testing.assert_array_equal((ta & tb).numpy(), a & b)
    np.testing.assert_array_equal((ta | tb).numpy(), a | b)
    np.testing.assert_array_equal((ta ^ tb).numpy(), a ^ b)
    np.testing.assert_array_equal((~ta).numpy(), ~a)
    np.testing.assert_array_equal((ta & 5).numpy(), a & np.array(5, dtype))
    np.testing.assert_array_equal((5 | ta).numpy(), a | np.array(5, dtype))
    bits = np.iinfo(dtype).bits
    count = np.array(3, dtype)
    np.testing.assert_array_equal((ta << 3).numpy(), _ref_shift(a, count, dtype, True, True))
    np.testing.assert_array_equal((ta >> 3).numpy(), _ref_shift(a, count, dtype, False, True))
    assert bits in (8, 16, 32, 64)


def test_bool_operators_stay_logical():
    t, f = oar.to_tensor([True, False, True]), oar.to_tensor([True, True, False])
    np.testing.assert_array_equal((t & f).numpy(), [True, False, False])
    np.testing.assert_array_equal((t | f).numpy(), [True, True, True])
    np.testing.assert_array_equal((t ^ f).numpy(), [False, True, True])
    np.testing.assert_array_equal((~t).numpy(), [False, True, False])
    assert (t & f).dtype.name == "bool"


def test_zero_size_and_out_of_range_python_int():
    e = oar.zeros([0, 3], "int32")
    assert list(oar.bitwise_and(e, oar.ones([3], "int32")).shape) == [0, 3]
    assert list(oar.bitwise_left_shift(e, 2).shape) == [0, 3]
    with pytest.raises(ValueError, match=r"bitwise_or: y=300 is not a value of x's dtype int8"):
        oar.bitwise_or(oar.to_tensor([1], "int8"), 300)
    with pytest.raises(TypeError, match="bitwise_and: x must be an integer or bool tensor"):
        oar.to_tensor([1.5]) & oar.to_tensor([2.5])


@pytest.mark.parametrize("dtype", DTYPES)
def test_long_strided_and_broadcast_operands(dtype):
    # rows long enough for the vector loops and the thread split, on a strided view (every
    # other column) against a broadcast row and a scalar tensor
    rng = np.random.default_rng(5)
    bits = np.iinfo(dtype).bits
    a = _values(dtype, (97, 2 * 515), rng)
    row = _values(dtype, (1, 515), rng)
    lo = -3 if np.iinfo(dtype).min < 0 else 0
    counts = rng.integers(lo, bits + 3, size=(1, 515)).astype(dtype)
    ta = oar.to_tensor(a)[:, ::2]
    av = a[:, ::2]
    assert not ta.is_contiguous()
    for fn, ref in [(oar.bitwise_and, np.bitwise_and), (oar.bitwise_or, np.bitwise_or),
                    (oar.bitwise_xor, np.bitwise_xor)]:
        np.testing.assert_array_equal(fn(ta, oar.to_tensor(row)).numpy(), ref(av, row))
        np.testing.assert_array_equal(fn(oar.to_tensor(row), ta).numpy(), ref(row, av))
        np.testing.assert_array_equal(fn(ta, 7).numpy(), ref(av, np.array(7, dtype)))
    np.testing.assert_array_equal(oar.bitwise_not(ta).numpy(), np.invert(av))
    tc = oar.to_tensor(counts)
    for left in (True, False):
        fn = oar.bitwise_left_shift if left else oar.bitwise_right_shift
        for arithmetic in (True, False):
            np.testing.assert_array_equal(
                fn(ta, tc, is_arithmetic=arithmetic).numpy(),
                _ref_shift(av, counts, dtype, left, arithmetic), err_msg=f"{left} {arithmetic}")


def test_to_static_traces_one_op_each():
    def f(x, y):
        return (x & y) | (x ^ ~y), x << 3, oar.bitwise_right_shift(x, y % 8, is_arithmetic=False)

    rng = np.random.default_rng(2)
    x = oar.to_tensor(_values("int32", (4, 5), rng))
    y = oar.to_tensor(_values("int32", (5,), rng))
    static = oar.jit.to_static(f)
    for got, want in zip(static(x, y), f(x, y)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    text = str(static.main_program)
    for op in ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
               "bitwise_right_shift"):
        assert f"pd_op.{op}" in text, op
    assert "pd_op.floor_divide" not in text

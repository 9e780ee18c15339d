"""Comparisons, logical ops and where (paddle_core/ops/logic.yaml) against NumPy."""
import numpy as np
import pytest

import oar
from op_test_utils import (BINARY_SHAPES, FLOAT_DTYPES, INT_DTYPES, NARROW_DTYPES, UNARY_SHAPES,
                           OpCase, bools, case_id, check_bad_inputs, check_forward, check_grad,
                           declared_ops, ints, normal, tensor)

ALL = FLOAT_DTYPES + NARROW_DTYPES + INT_DTYPES
COMPARE = {"equal": np.equal, "not_equal": np.not_equal, "less_than": np.less,
           "less_equal": np.less_equal, "greater_than": np.greater,
           "greater_equal": np.greater_equal}
LOGICAL = {"logical_and": np.logical_and, "logical_or": np.logical_or,
           "logical_xor": np.logical_xor}


def _mismatch():
    return tensor(np.ones((2, 3))), tensor(np.ones(4))


CASES = [
    # Small integer values, so that ties (equal elements) are frequent.
    *[OpCase(name, getattr(oar, name), fn, inputs=[ints(-2, 3), ints(-2, 3)],
             shapes=BINARY_SHAPES, dtypes=ALL + ["bool"], grad=False, out_dtype="bool")
      for name, fn in COMPARE.items()],
    *[OpCase(name, getattr(oar, name), fn, inputs=[ints(-1, 2), ints(-1, 2)],
             shapes=BINARY_SHAPES, dtypes=["bool"] + INT_DTYPES + FLOAT_DTYPES, grad=False,
             out_dtype="bool") for name, fn in LOGICAL.items()],
    OpCase("logical_not", oar.logical_not, np.logical_not, inputs=[ints(-1, 2)],
           shapes=UNARY_SHAPES, dtypes=["bool"] + INT_DTYPES + FLOAT_DTYPES, grad=False,
           out_dtype="bool"),
    OpCase("where", oar.where, np.where, inputs=[bools(), normal(), normal()],
           shapes=[[(3, 4)] * 3, [(3, 1), (1, 4), (3, 4)], [(2, 3, 4), (4,), ()],
                   [(0, 3), (3,), (1, 3)], [(4,), (3, 4), (3, 1)]],
           dtypes=ALL,
           bad_inputs=[(lambda: (tensor([1, 0], "int64"), tensor([1.0, 2.0]), tensor([3.0, 4.0])),
                        TypeError, "bool"),
                       (lambda: (tensor([True, False], "bool"), tensor(np.ones((2, 3))),
                                 tensor([3.0, 4.0])), ValueError, "[2, 3]")]),
]

# The bitwise kernels on every shape set (tests/python/ops/test_bitwise.py checks all integer
# dtypes' extremes, the shifts' out-of-range counts and the Python wrappers); nextafter.
def _on_ints(fn, dtype=np.int64):
    """NumPy's bit op on the harness's float64 arrays of whole numbers (int64: the int32
    results are its low bits, as the int32 kernels wrap)."""
    return lambda *arrays: fn(*[a.astype(dtype) for a in arrays])


BITWISE = {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
           "bitwise_xor": np.bitwise_xor}
CASES += [
    *[OpCase(name, getattr(oar, name), _on_ints(fn), inputs=[ints(-50, 50), ints(-50, 50)],
             shapes=BINARY_SHAPES, dtypes=INT_DTYPES, grad=False, out_dtype="same")
      for name, fn in BITWISE.items()],
    *[OpCase(name + "[bool]", getattr(oar, name), _on_ints(fn, bool), inputs=[bools(), bools()],
             shapes=BINARY_SHAPES, dtypes=["bool"], grad=False, out_dtype="bool", op=name)
      for name, fn in BITWISE.items()],
    OpCase("bitwise_not", oar.bitwise_not, _on_ints(np.invert), inputs=[ints(-50, 50)],
           shapes=UNARY_SHAPES, dtypes=INT_DTYPES, grad=False, out_dtype="same"),
    OpCase("bitwise_not[bool]", oar.bitwise_not, _on_ints(np.invert, bool), inputs=[bools()],
           shapes=UNARY_SHAPES, dtypes=["bool"], grad=False, out_dtype="bool", op="bitwise_not"),
    OpCase("bitwise_left_shift", oar.bitwise_left_shift, _on_ints(np.left_shift),
           inputs=[ints(-1000, 1000), ints(0, 20)], shapes=BINARY_SHAPES, dtypes=INT_DTYPES,
           grad=False, out_dtype="same"),
    OpCase("bitwise_right_shift", oar.bitwise_right_shift, _on_ints(np.right_shift),
           inputs=[ints(-1000, 1000), ints(0, 20)], shapes=BINARY_SHAPES, dtypes=INT_DTYPES,
           grad=False, out_dtype="same"),
]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shapes", BINARY_SHAPES, ids=str)
def test_nextafter_matches_numpy(dtype, shapes):
    rng = np.random.default_rng(12)
    x = rng.integers(-2, 3, shapes[0]).astype(dtype)  # ties with y are frequent
    y = np.where(rng.random(shapes[1]) < 0.3, 1.0, rng.standard_normal(shapes[1])).astype(dtype)
    got = oar.nextafter(oar.to_tensor(x), oar.to_tensor(y))
    assert got.dtype.name == dtype and list(got.shape) == list(np.broadcast_shapes(x.shape, y.shape))
    np.testing.assert_array_equal(got.numpy(), np.nextafter(x, y))
    np.testing.assert_array_equal(oar.to_tensor(x).nextafter(oar.to_tensor(y)).numpy(),
                                  np.nextafter(x, y))


@pytest.mark.parametrize("args, exc, msg", [
    (lambda: (tensor([1, 2], "int64"), tensor([1, 2], "int64")), TypeError,
     "nextafter: x must be float32 or float64, got int64"),
    (lambda: (tensor([1.0]), tensor([1.0], "float64")), TypeError,
     "nextafter: x and y must have one dtype, got float32 and float64"),
    (lambda: (tensor(np.ones((2, 3))), tensor(np.ones(4))), ValueError,
     "nextafter: x of shape [2, 3] and y of shape [4] cannot be broadcast"),
    (lambda: ([1.0], tensor([1.0])), TypeError, "nextafter: x must be a Tensor, got list"),
], ids=["int", "dtypes", "shapes", "list"])
def test_nextafter_bad_inputs(args, exc, msg):
    with pytest.raises(exc) as info:
        oar.nextafter(*args())
    assert msg in str(info.value)


def test_nextafter_special_values():
    for dt in ("float32", "float64"):
        x = np.array([0.0, 0.0, 1.0, np.inf, -np.inf, np.nan, 1.0, 2.0], dt)
        y = np.array([1.0, -1.0, 1.0, 0.0, np.inf, 1.0, np.nan, np.inf], dt)
        got = oar.nextafter(oar.to_tensor(x), oar.to_tensor(y)).numpy()
        np.testing.assert_array_equal(got, np.nextafter(x, y))
    # Paddle's example
    out = oar.nextafter(oar.to_tensor([1.0, 2.0]), oar.to_tensor([2.0, 1.0]))
    np.testing.assert_array_equal(out.numpy(), np.nextafter(np.float32([1, 2]), np.float32([2, 1])))


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.grad], ids=case_id)
def test_grad(case):
    check_grad(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.bad_inputs], ids=case_id)
def test_bad_inputs(case):
    check_bad_inputs(case)


def test_every_logic_op_has_a_case():
    assert declared_ops("logic.yaml") - {c.name for c in CASES} == set()


@pytest.mark.parametrize("name", list(COMPARE) + list(LOGICAL))
def test_broadcast_mismatch_names_both_shapes(name):
    with pytest.raises(ValueError, match=r"\[2, 3\] and \[4\] cannot be broadcast"):
        getattr(oar, name)(*_mismatch())


@pytest.mark.parametrize("name", list(COMPARE) + list(LOGICAL))
def test_broadcast_mismatch_names_the_op(name):
    with pytest.raises(ValueError, match=f"^{name}: "):
        getattr(oar, name)(*_mismatch())


def test_comparison_operators_and_scalars():
    x = tensor([1.0, 2.0, 3.0])
    np.testing.assert_array_equal((x == 2).numpy(), [False, True, False])
    np.testing.assert_array_equal((x != 2).numpy(), [True, False, True])
    np.testing.assert_array_equal((x < 2.5).numpy(), [True, True, False])
    np.testing.assert_array_equal((x >= 2).numpy(), [False, True, True])
    np.testing.assert_array_equal((2 < x).numpy(), [False, False, True])
    assert (x > 1).dtype.name == "bool"


def test_comparison_promotes_before_comparing():
    # 0.1 in float32 differs from 0.1 in float64: compare in the common (wider) dtype.
    a, b = tensor([0.1], "float32"), tensor([0.1], "float64")
    assert not oar.equal(a, b).item()
    assert oar.equal(tensor([3], "int32"), tensor([3.0], "float32")).item()
    big = tensor([2 ** 40 + 1], "int64")
    assert not oar.equal(big, tensor([2 ** 40], "int64")).item()


def test_logical_operators():
    a, b = tensor([True, True, False], "bool"), tensor([True, False, False], "bool")
    np.testing.assert_array_equal((a & b).numpy(), [True, False, False])
    np.testing.assert_array_equal((a | b).numpy(), [True, True, False])
    np.testing.assert_array_equal((a ^ b).numpy(), [False, True, False])
    np.testing.assert_array_equal((~a).numpy(), [False, False, True])


def test_where_with_scalars_and_grad():
    c = tensor([True, False, True], "bool")
    x = tensor([1.0, 2.0, 3.0], "float64", stop_gradient=False)
    out = oar.where(c, x, 0.0)
    assert out.dtype.name == "float64"
    np.testing.assert_allclose(out.numpy(), [1.0, 0.0, 3.0])
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 0.0, 1.0])
    y = oar.where(c, -1.0, x)
    np.testing.assert_allclose(y.numpy(), [-1.0, 2.0, -1.0])


def test_where_promotes_branches():
    c = tensor([True, False], "bool")
    out = oar.where(c, tensor([1, 2], "int32"), tensor([0.5, 1.5], "float32"))
    assert out.dtype.name == "float32"
    np.testing.assert_allclose(out.numpy(), [1.0, 1.5])


def test_comparisons_have_no_gradient():
    x = tensor([1.0, 2.0], stop_gradient=False)
    assert (x > 1).stop_gradient
    assert oar.logical_not(x).stop_gradient

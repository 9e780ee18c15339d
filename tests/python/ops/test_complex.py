"""complex64/complex128: creation, printing, type promotion and casts, the elementwise,
reduction and matmul kernels on complex inputs, the ops of complex.yaml (real, imag,
conj, angle, complex, as_complex, as_real) and their gradients (conjugate Wirtinger,
checked by finite differences on the real and imaginary parts)."""
import numpy as np
import pytest

import oar
from complex_test_utils import CxCase, case_id, check_bad_inputs, check_forward, check_grad, ctensor

BINARY_SHAPES = [[(3, 4), (3, 4)], [(2, 3, 4), (4,)], [(3, 1), (1, 4)], [(), (2, 3)],
                 [(0, 3), (3,)]]
UNARY_SHAPES = [[(3, 4)], [()], [(0, 3)], [(2, 3, 2)]]


def _binary(name, fn, ref, kinds="cc", **kw):
    return CxCase(f"{name}[{kinds}]", fn, ref, kinds=kinds, shapes=BINARY_SHAPES, op=name, **kw)


def _unary(name, fn, ref, **kw):
    kw.setdefault("shapes", UNARY_SHAPES)
    return CxCase(name, fn, ref, **kw)


CASES = [
    *[_binary(n, getattr(oar, n), f, kinds=k)
      for n, f in (("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
                   ("divide", np.divide))
      for k in ("cc", "cr", "rc")],
    _binary("pow", oar.pow, np.power, grad_shapes=[[(3, 4), (3, 4)], [(2, 3), (3,)]]),
    _binary("equal", oar.equal, np.equal, grad=False),
    _binary("not_equal", oar.not_equal, np.not_equal, grad=False),
    _unary("neg", oar.neg, np.negative),
    _unary("exp", oar.exp, np.exp),
    _unary("log", oar.log, np.log),
    _unary("sqrt", oar.sqrt, np.sqrt),
    _unary("abs", oar.abs, np.abs),
    _unary("sign", oar.sign, lambda x: np.where(x == 0, 0, x / np.where(x == 0, 1, np.abs(x))),
           grad=False),
    _unary("pow[square]", lambda x: x ** 2, lambda x: x ** 2, op="pow"),
    _unary("pow[0.5]", lambda x: oar.pow(x, 0.5), lambda x: x ** 0.5, op="pow"),
    _unary("scale", lambda x: oar.scale(x, 2.0, 0.5), lambda x: x * 2.0 + 0.5),
    _unary("mul_scalar", lambda x: x * 2.5 + (1 - 2j), lambda x: x * 2.5 + (1 - 2j), op="multiply"),
    _unary("conj", oar.conj, np.conj),
    _unary("real", oar.real, np.real),
    _unary("imag", oar.imag, np.imag),
    _unary("angle", oar.angle, np.angle),
    _unary("real[float]", oar.real, np.real, kinds="r", op="real"),
    _unary("imag[float]", oar.imag, np.imag, kinds="r", op="imag"),
    _unary("conj[float]", oar.conj, np.conj, kinds="r", op="conj"),
    _unary("angle[float]", oar.angle, np.angle, kinds="r", op="angle"),
    CxCase("complex", oar.complex, lambda a, b: a + 1j * b, kinds="rr", shapes=BINARY_SHAPES,
           bad_inputs=[(lambda: (ctensor([1j]), ctensor([1j])), TypeError, "float32 or float64"),
                       (lambda: (oar.to_tensor([1]), oar.to_tensor([2])), TypeError, "int64")]),
    CxCase("as_complex", oar.as_complex, lambda a: a[..., 0] + 1j * a[..., 1], kinds="r",
           shapes=[[(3, 2)], [(2, 3, 2)], [(0, 2)], [(2,)]],
           bad_inputs=[(lambda: (oar.ones([3, 3]),), ValueError, "last dimension of size 2"),
                       (lambda: (ctensor([1j, 2j]),), TypeError, "float32 or float64")]),
    CxCase("as_real", oar.as_real, lambda a: np.stack([a.real, a.imag], -1), shapes=UNARY_SHAPES,
           bad_inputs=[(lambda: (oar.ones([3]),), TypeError, "complex64 or complex128")]),
    _unary("sum", oar.sum, np.sum),
    _unary("sum[axis]", lambda x: oar.sum(x, axis=1), lambda x: np.sum(x, axis=1), op="sum",
           shapes=[[(3, 4)], [(0, 3)], [(2, 3, 2)]]),
    _unary("mean", lambda x: oar.mean(x, axis=-1, keepdim=True),
           lambda x: np.mean(x, axis=-1, keepdims=True), op="mean",
           shapes=[[(3, 4)], [(2, 3, 2)]]),
    _unary("prod", lambda x: oar.prod(x, axis=0), lambda x: np.prod(x, axis=0), op="prod",
           shapes=[[(3, 4)], [(0, 3)], [(2, 3, 2)]]),
    CxCase("matmul", oar.matmul, np.matmul, kinds="cc",
           shapes=[[(3, 4), (4, 5)], [(2, 3, 4), (4, 2)], [(2, 1, 3, 4), (3, 4, 2)], [(0, 4), (4, 3)]]),
    CxCase("matmul[tr]", lambda x, y: oar.matmul(x, y, transpose_x=True, transpose_y=True),
           lambda x, y: np.swapaxes(x, -1, -2) @ np.swapaxes(y, -1, -2), kinds="cc",
           shapes=[[(4, 3), (5, 4)]], op="matmul"),
    CxCase("matmul[cr]", oar.matmul, np.matmul, kinds="cr", shapes=[[(3, 4), (4, 2)]], op="matmul"),
    CxCase("bmm", oar.bmm, np.matmul, kinds="cc", shapes=[[(2, 3, 4), (2, 4, 5)]]),
    _unary("reshape", lambda x: oar.reshape(x, [-1]), lambda x: x.reshape(-1), op="reshape"),
    _unary("transpose", lambda x: oar.transpose(x, [1, 0]), lambda x: x.T, op="transpose",
           shapes=[[(3, 4)], [(0, 3)]]),
    _unary("slice", lambda x: x[1:, ::2], lambda x: x[1:, ::2], op="slice", shapes=[[(3, 4)], [(4, 5)]]),
    CxCase("concat", lambda x, y: oar.concat([x, y], axis=0), lambda x, y: np.concatenate([x, y], 0),
           kinds="cc", shapes=[[(2, 3), (4, 3)], [(0, 3), (2, 3)]]),
    CxCase("stack", lambda x, y: oar.stack([x, y], axis=1), lambda x, y: np.stack([x, y], 1),
           kinds="cc", shapes=[[(2, 3), (2, 3)]]),
    CxCase("where", lambda x, y: oar.where(oar.to_tensor(np.arange(x.shape[-1]) % 2 == 0), x, y),
           lambda x, y: np.where(np.arange(x.shape[-1]) % 2 == 0, x, y), kinds="cc",
           shapes=[[(3, 4), (3, 4)]]),
    _unary("cast[to_real]", lambda x: x.astype(x.real().dtype), np.real, op="cast", shapes=[[(3, 4)]]),
    _unary("cast[to_complex]", lambda x: oar.cast(x, "complex128"), lambda x: x.astype(np.complex128),
           kinds="r", op="cast", dtypes=("complex128",)),
]
GRAD_CASES = [c for c in CASES if c.grad]
BAD_CASES = [c for c in CASES if c.bad_inputs]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", GRAD_CASES, ids=case_id)
def test_grad(case):
    check_grad(case)


@pytest.mark.parametrize("case", BAD_CASES, ids=case_id)
def test_bad_inputs(case):
    check_bad_inputs(case)


# ---- creation, conversion, printing
def test_to_tensor_from_python_complex():
    t = oar.to_tensor([1 + 2j, 3.5 - 1j])
    assert t.dtype == oar.complex64 and t.shape == [2]
    np.testing.assert_array_equal(t.numpy(), np.array([1 + 2j, 3.5 - 1j], np.complex64))
    assert oar.to_tensor(2j).dtype == oar.complex64
    assert oar.to_tensor([1 + 1j], dtype="complex128").dtype == oar.complex128
    assert oar.to_tensor([1.0, 2.0], dtype=oar.complex64).numpy().tolist() == [1 + 0j, 2 + 0j]


@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_numpy_round_trip(dt):
    a = (np.arange(6) - 2.5 + 1j * np.arange(6)[::-1]).astype(dt).reshape(2, 3)
    t = oar.to_tensor(a)
    assert t.dtype.name == dt
    np.testing.assert_array_equal(t.numpy(), a)
    np.testing.assert_array_equal(t.T.numpy(), a.T)  # strided view read back
    assert t[1, 2].item() == complex(a[1, 2])
    assert complex(t[0, 0]) == complex(a[0, 0])
    assert t.tolist() == a.tolist()


def test_print_like_paddle():
    t = oar.to_tensor([1 + 2j, -3.5 - 1j])
    assert repr(t) == ("Tensor(shape=[2], dtype=complex64, place=Place(cpu), stop_gradient=True,\n"
                       "       [ (1.00000000+2.00000000j), (-3.50000000-1.00000000j)])")
    assert repr(oar.to_tensor(0.5j, dtype="complex128")).endswith("(0.00000000+0.50000000j))")


@pytest.mark.parametrize("a, b, out", [
    ("float32", "complex64", "complex64"), ("float64", "complex64", "complex128"),
    ("complex64", "float64", "complex128"), ("int64", "complex64", "complex64"),
    ("int32", "complex128", "complex128"), ("complex64", "complex128", "complex128"),
    ("float16", "complex64", "complex64"), ("bool", "complex64", "complex64"),
])
def test_promotion(a, b, out):
    x = oar.ones([2], dtype=a)
    y = oar.ones([2], dtype=b)
    assert (x + y).dtype.name == out
    assert (y * x).dtype.name == out


def test_python_scalars_with_complex():
    x = oar.ones([2], dtype="float32")
    assert (x + 1j).dtype == oar.complex64
    assert (oar.ones([2], dtype="float64") * 2j).dtype == oar.complex128
    c = ctensor([1 + 1j, 2 - 1j], "complex64")
    assert (c * 2.0).dtype == oar.complex64 and (c + 1).dtype == oar.complex64
    np.testing.assert_allclose((c * (1 + 1j)).numpy(), np.array([2j, 3 + 1j]), rtol=1e-6)
    np.testing.assert_allclose(oar.full([2], 1 - 2j, dtype="complex128").numpy(), [1 - 2j, 1 - 2j])
    np.testing.assert_allclose(oar.zeros([2], dtype="complex64").numpy(), [0, 0])
    np.testing.assert_allclose(oar.ones([2], dtype="complex128").numpy(), [1, 1])


def test_casts():
    c = ctensor([1.5 + 2j, -3 - 0.5j])
    np.testing.assert_array_equal(c.astype("float64").numpy(), [1.5, -3])  # the real part
    np.testing.assert_array_equal(c.astype("int64").numpy(), [1, -3])
    np.testing.assert_array_equal(c.astype("bool").numpy(), [True, True])
    np.testing.assert_array_equal(c.astype("complex64").numpy(), np.array([1.5 + 2j, -3 - 0.5j], "complex64"))
    np.testing.assert_array_equal(oar.to_tensor([1, 2]).astype("complex64").numpy(), [1, 2])


def test_is_complex_and_dtypes():
    assert oar.is_complex(ctensor([1j])) and not oar.is_complex(oar.ones([1]))
    assert ctensor([1j]).is_complex() and not oar.ones([1]).is_complex()
    assert oar.complex64.name == "complex64" and oar.complex128.itemsize == 16
    assert not oar.complex64.is_floating_point
    with pytest.raises(TypeError, match="is_complex: argument 'x'"):
        oar.is_complex(1j)


def test_real_gradient_of_complex_loss():
    # A real input feeding a complex computation gets the real part of its gradient.
    x = oar.to_tensor([0.5, -1.0], dtype="float64", stop_gradient=False)
    y = oar.abs(oar.complex(x, x * 2.0) * (1 + 1j)).sum()
    (g,) = oar.grad([y], [x])
    # |(x + 2xi)(1 + i)| = sqrt(10) |x|
    np.testing.assert_allclose(g.numpy(), np.sqrt(10.0) * np.sign([0.5, -1.0]), rtol=1e-12)


def test_unsupported_op_names_the_op_and_dtype():
    with pytest.raises(TypeError) as info:
        oar.maximum(ctensor([1j]), ctensor([2j]))
    assert "maximum" in str(info.value) and "complex128" in str(info.value)

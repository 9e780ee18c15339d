"""Elementwise math ops (paddle_core/ops/math.yaml) against NumPy: forward, gradients,
dtypes, Python scalars, type promotion and bad inputs."""
import ctypes
import ctypes.util
import math

import numpy as np
import pytest

import oar
from op_test_utils import (BINARY_SHAPES, FLOAT_DTYPES, INT_DTYPES, NARROW_DTYPES, UNARY_SHAPES,
                           OpCase, case_id, check_bad_inputs, check_forward, check_grad,
                           declared_ops, ints, nonzero, normal, tensor, uniform)

ALL_FLOATS = FLOAT_DTYPES + NARROW_DTYPES
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _gelu(x, approximate=False):
    if approximate:
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


def _gelu_d1(x, approximate=False):
    h = 1e-4  # a reference for the fused gradient kernels: 4th-order central differences
    return (-_gelu(x + 2 * h, approximate) + 8 * _gelu(x + h, approximate)
            - 8 * _gelu(x - h, approximate) + _gelu(x - 2 * h, approximate)) / (12 * h)


def _gelu_d2(x, approximate=False):
    h = 1e-3
    return (_gelu_d1(x + h, approximate) - _gelu_d1(x - h, approximate)) / (2 * h)


def _op(name):
    """oar.<name>, or oar._C.ops.<name> for an op that is not a public Paddle name."""
    return getattr(oar, name, None) or getattr(oar._C.ops, name)


def binary(name, fn_np, a=normal(), b=normal(), dtypes=ALL_FLOATS + INT_DTYPES, **kw):
    fn = _op(name)
    return OpCase(name, fn, fn_np, inputs=[a, b], shapes=BINARY_SHAPES, dtypes=dtypes, **kw)


def unary(name, fn_np, gen=normal(), dtypes=ALL_FLOATS, fn=None, **kw):
    return OpCase(name, fn or _op(name), fn_np, inputs=[gen], shapes=UNARY_SHAPES,
                  dtypes=dtypes, **kw)


NARROW_POW_TOL = {"float16": (5e-2, 2e-2), "bfloat16": (2e-1, 5e-2)}

CASES = [
    binary("add", np.add),
    binary("subtract", np.subtract),
    binary("multiply", np.multiply),
    binary("divide", np.divide, b=nonzero(lo=1, hi=4),
           out_dtype=lambda d: "float32" if d.startswith("int") else d),
    binary("floor_divide", np.floor_divide, a=ints(-20, 20), b=nonzero(lo=1, hi=5), grad=False,
           dtypes=FLOAT_DTYPES + INT_DTYPES),
    binary("remainder", np.remainder, a=uniform(-5, 5), b=nonzero(lo=1, hi=3),
           dtypes=FLOAT_DTYPES + INT_DTYPES),
    binary("elementwise_pow", np.power, a=uniform(0.5, 2.0), b=uniform(-2, 2),
           dtypes=ALL_FLOATS, tol=NARROW_POW_TOL),
    binary("maximum", np.maximum),
    binary("minimum", np.minimum),
    OpCase("elementwise_pow[int]", oar._C.ops.elementwise_pow, np.power, inputs=[ints(0, 5), ints(0, 4)],
           shapes=BINARY_SHAPES[:4], dtypes=INT_DTYPES, grad=False),
    unary("scale", lambda x, scale, bias, bias_after_scale: x * scale + bias,
          attrs=dict(scale=2.0, bias=-1.0, bias_after_scale=True), dtypes=ALL_FLOATS + INT_DTYPES),
    OpCase("scale[bias_before]", oar.scale,
           lambda x, scale, bias, bias_after_scale: (x + bias) * scale, inputs=[normal()],
           shapes=UNARY_SHAPES, attrs=dict(scale=-3.0, bias=0.5, bias_after_scale=False),
           op="scale"),
    unary("pow", lambda x, y: np.power(x, y), gen=uniform(0.5, 2.0), attrs=dict(y=3.0),
          tol=NARROW_POW_TOL),
    OpCase("pow[sqrt]", oar.pow, lambda x, y: x ** y, inputs=[uniform(0.5, 2.0)],
           shapes=UNARY_SHAPES, attrs=dict(y=0.5), dtypes=ALL_FLOATS, op="pow"),
    OpCase("pow[square]", oar.pow, lambda x, y: x ** y, inputs=[normal()], shapes=UNARY_SHAPES,
           attrs=dict(y=2), dtypes=ALL_FLOATS + INT_DTYPES, op="pow"),
    OpCase("pow[neg]", oar.pow, lambda x, y: x ** y, inputs=[uniform(0.5, 2.0)],
           shapes=UNARY_SHAPES, attrs=dict(y=-1.5), op="pow"),
    unary("clip", lambda x, min, max: np.clip(x, min, max), attrs=dict(min=-0.5, max=0.7),
          dtypes=ALL_FLOATS,
          bad_inputs=[(lambda: (tensor([1.0]),), ValueError, "min", dict(min=2.0, max=1.0))]),
    OpCase("clip[int]", oar.clip, lambda x, min, max: np.clip(x, min, max),
           inputs=[ints(-5, 5)], shapes=UNARY_SHAPES, attrs=dict(min=-2, max=3),
           dtypes=INT_DTYPES, grad=False),
    unary("cast", lambda x, dtype: x.astype(np.float32), attrs=dict(dtype="float32"),
          dtypes=["float64", "float16", "bfloat16"], out_dtype="float32",
          grad_eps=1e-3, grad_tol=(1e-4, 1e-4)),
    OpCase("cast[to_int]", oar.cast, lambda x, dtype: np.trunc(x), inputs=[uniform(-9, 9)],
           shapes=UNARY_SHAPES, attrs=dict(dtype="int32"), out_dtype="int32", grad=False),
    OpCase("cast[to_bool]", oar.cast, lambda x, dtype: x != 0, inputs=[ints(-1, 2)],
           shapes=UNARY_SHAPES, attrs=dict(dtype="bool"), dtypes=FLOAT_DTYPES + INT_DTYPES,
           out_dtype="bool", grad=False),
    OpCase("cast[int_to_float]", oar.cast, lambda x, dtype: x.astype(np.float64),
           inputs=[ints(-100, 100)], shapes=UNARY_SHAPES, attrs=dict(dtype="float64"),
           dtypes=INT_DTYPES, out_dtype="float64", grad=False),
    unary("assign", lambda x: x, dtypes=ALL_FLOATS + INT_DTYPES),
    unary("exp", np.exp),
    unary("log", np.log, gen=uniform(0.1, 5.0)),
    unary("sqrt", np.sqrt, gen=uniform(0.1, 5.0)),
    unary("rsqrt", lambda x: 1 / np.sqrt(x), gen=uniform(0.1, 5.0)),
    unary("abs", np.abs, gen=nonzero(), dtypes=ALL_FLOATS + INT_DTYPES),
    unary("sign", np.sign, gen=nonzero(), dtypes=ALL_FLOATS + INT_DTYPES),
    unary("neg", np.negative, dtypes=ALL_FLOATS + INT_DTYPES),
    unary("tanh", np.tanh),
    unary("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
    unary("sin", np.sin),
    unary("cos", np.cos),
    unary("relu", lambda x: np.maximum(x, 0), gen=nonzero()),
    OpCase("gelu", lambda x: oar.nn.functional.gelu(x), _gelu, inputs=[normal()], shapes=UNARY_SHAPES,
           dtypes=ALL_FLOATS),
    OpCase("gelu[tanh]", lambda x: oar.nn.functional.gelu(x, approximate=True),
           lambda x: _gelu(x, approximate=True), inputs=[normal()], shapes=UNARY_SHAPES,
           dtypes=ALL_FLOATS, op="gelu"),
    # Fused backward kernels, as ops of their own (double backward goes through them).
    OpCase("tanh_grad", oar._C.ops._tanh_grad, lambda o, g: g * (1 - o * o),
           inputs=[uniform(-1, 1), normal()], shapes=BINARY_SHAPES[:1]),
    OpCase("sigmoid_grad", oar._C.ops._sigmoid_grad, lambda o, g: g * o * (1 - o),
           inputs=[uniform(0, 1), normal()], shapes=BINARY_SHAPES[:1]),
    OpCase("relu_grad", oar._C.ops._relu_grad, lambda o, g: np.where(o > 0, g, 0),
           inputs=[nonzero(), normal()], shapes=BINARY_SHAPES[:1]),
    OpCase("gelu_grad", lambda x, g: oar._C.ops._gelu_grad(x, g, False), lambda x, g: g * _gelu_d1(x),
           inputs=[normal(), normal()], shapes=BINARY_SHAPES[:1], tol={"float64": (1e-8, 1e-8)}),
    OpCase("gelu_grad[tanh]", lambda x, g: oar._C.ops._gelu_grad(x, g, True),
           lambda x, g: g * _gelu_d1(x, True), inputs=[normal(), normal()],
           shapes=BINARY_SHAPES[:1], tol={"float64": (1e-8, 1e-8)}),
    OpCase("gelu_grad2", lambda x: oar._C.ops._gelu_grad2(x, False), _gelu_d2, inputs=[normal()],
           shapes=UNARY_SHAPES[:2], tol={"float64": (1e-5, 1e-5)}),
    OpCase("gelu_grad2[tanh]", lambda x: oar._C.ops._gelu_grad2(x, True), lambda x: _gelu_d2(x, True),
           inputs=[normal()], shapes=UNARY_SHAPES[:2], tol={"float64": (1e-5, 1e-5)}),
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


def test_every_math_op_has_a_case():
    assert declared_ops("math.yaml") - {c.name.split("[")[0] for c in CASES} == set()


# ---- Python scalars (Paddle 3 rules) ----
@pytest.mark.parametrize("expr, dtype, expected_dtype, expected", [
    (lambda x: x + 2, "float32", "float32", [3, 4, 5]),
    (lambda x: 2 - x, "float32", "float32", [1, 0, -1]),
    (lambda x: x * 0.5, "int64", "float32", [0.5, 1, 1.5]),
    (lambda x: 0.5 * x, "int32", "float32", [0.5, 1, 1.5]),
    (lambda x: x + 2, "int64", "int64", [3, 4, 5]),
    (lambda x: x * 3, "int32", "int32", [3, 6, 9]),
    (lambda x: x + 2.5, "float16", "float16", [3.5, 4.5, 5.5]),
    (lambda x: x + 2.5, "float64", "float64", [3.5, 4.5, 5.5]),
    (lambda x: x / 2, "int64", "float32", [0.5, 1, 1.5]),
    (lambda x: 6 / x, "int64", "float32", [6, 3, 2]),
    (lambda x: x // 2, "int64", "int64", [0, 1, 1]),
    (lambda x: 7 // x, "int64", "int64", [7, 3, 2]),
    (lambda x: x % 2, "int64", "int64", [1, 0, 1]),
    (lambda x: -7 % x, "int64", "int64", [0, 1, 2]),
    (lambda x: x ** 2, "float32", "float32", [1, 4, 9]),
    (lambda x: x ** 2, "int64", "int64", [1, 4, 9]),
    (lambda x: x ** 0.5, "int64", "float32", np.sqrt([1, 2, 3])),
    (lambda x: oar.pow(x, 2.0), "int32", "float32", [1, 4, 9]),
    (lambda x: 2 ** x, "float32", "float32", [2, 4, 8]),
    (lambda x: x - True, "int64", "int64", [0, 1, 2]),
    (lambda x: oar.maximum(x, 2), "int32", "int32", [2, 2, 3]),
])
def test_python_scalar_operands(expr, dtype, expected_dtype, expected):
    out = expr(tensor([1, 2, 3], dtype))
    assert out.dtype.name == expected_dtype
    assert out.shape == [3]
    np.testing.assert_allclose(out.numpy().astype(np.float64), expected)


# Note [Python ints out of a tensor's range]: such an int keeps its value (as int64) instead
# of wrapping to the tensor's dtype, so the op gives the mathematical answer
@pytest.mark.parametrize("expr, dtype, expected_dtype, expected", [
    (lambda x: x / 2**40, "int32", "float32", np.array([1, 2, 3]) / 2**40),
    (lambda x: x / -2, "uint8", "float32", [-0.5, -1, -1.5]),
    (lambda x: x < 2**40, "int32", "bool", [True, True, True]),
    (lambda x: x == 2**32 + 1, "int32", "bool", [False, False, False]),
    (lambda x: x > -1, "uint8", "bool", [True, True, True]),
    (lambda x: x * 2**31, "int32", "int64", np.array([1, 2, 3]) * 2**31),
    (lambda x: x * 300, "uint8", "int64", [300, 600, 900]),
    (lambda x: x + 200, "int8", "int64", [201, 202, 203]),
    (lambda x: oar.maximum(x, 2**40), "int32", "int64", [2**40] * 3),
    (lambda x: x + 127, "int8", "int8", [-128, -127, -126]),  # in range: the dtype's own arithmetic
])
def test_python_int_out_of_the_tensors_range(expr, dtype, expected_dtype, expected):
    x = tensor([1, 2, 3], dtype)
    out = expr(x)
    assert out.dtype.name == expected_dtype
    np.testing.assert_array_equal(out.numpy().astype(np.float64), np.asarray(expected, np.float64))


def test_scalar_operand_keeps_0d_and_grad():
    x = tensor([1.0, 2.0], "float64", stop_gradient=False)
    y = (3 - x * 2) / 4
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [-0.5, -0.5])


# ---- type promotion between tensors ----
@pytest.mark.parametrize("a, b, expected", [
    ("int32", "int64", "int64"), ("int32", "float32", "float32"), ("int64", "float64", "float64"),
    ("float16", "float32", "float32"), ("bfloat16", "float32", "float32"),
    ("float16", "bfloat16", "float32"), ("float32", "float64", "float64"),
    ("bool", "int32", "int32"), ("bool", "float32", "float32"), ("int32", "float16", "float16"),
])
def test_tensor_type_promotion(a, b, expected):
    x, y = tensor([1, 0, 1], a), tensor([2, 3, 4], b)
    for out in (x + y, y + x, x * y, oar.maximum(x, y)):
        assert out.dtype.name == expected
    np.testing.assert_allclose((x + y).astype("float64").numpy(), [3, 3, 5])


def test_promotion_is_differentiable():
    x = tensor([1.0, 2.0], "float32", stop_gradient=False)
    y = tensor([3.0, 4.0], "float64", stop_gradient=False)
    (x * y).sum().backward()
    assert x.grad.dtype.name == "float32" and y.grad.dtype.name == "float64"
    np.testing.assert_allclose(x.grad.numpy(), [3, 4])
    np.testing.assert_allclose(y.grad.numpy(), [1, 2])


def test_unary_float_ops_promote_ints():
    x = tensor([1, 4], "int64")
    for fn in (oar.exp, oar.log, oar.sqrt, oar.sin, oar.tanh, oar.sigmoid):
        assert fn(x).dtype.name == "float32", fn
    np.testing.assert_allclose(oar.sqrt(x).numpy(), [1, 2])


# ---- bad inputs ----
BINARY_OPS = ["add", "subtract", "multiply", "divide", "floor_divide", "remainder",
              "elementwise_pow", "maximum", "minimum"]


@pytest.mark.parametrize("name", BINARY_OPS)
def test_broadcast_mismatch_names_both_shapes(name):
    with pytest.raises(ValueError, match=r"\[2, 3\] and \[4\] cannot be broadcast"):
        _op(name)(tensor(np.ones((2, 3))), tensor(np.ones(4)))


@pytest.mark.parametrize("name", BINARY_OPS)
def test_broadcast_mismatch_names_the_op(name):
    with pytest.raises(ValueError, match=f"^{name}: "):
        _op(name)(tensor(np.ones((2, 3))), tensor(np.ones(4)))


@pytest.mark.parametrize("name", ["floor_divide", "remainder"])
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integer_division_by_zero(name, dtype):
    with pytest.raises(ValueError, match=f"{name}: integer division by zero"):
        _op(name)(tensor([1, 2, 3], dtype), tensor([1, 0, 1], dtype))


def test_int_true_division_by_zero_is_inf():
    out = oar.divide(tensor([1, -1, 0], "int64"), tensor([0, 0, 0], "int64"))
    assert out.dtype.name == "float32"
    np.testing.assert_array_equal(out.numpy(), [np.inf, -np.inf, np.nan])


def test_wrong_argument_types():
    with pytest.raises(TypeError, match="add"):
        oar.add(tensor([1.0]), "a")
    with pytest.raises(TypeError, match="exp"):
        oar.exp([1.0, 2.0])


def test_missing_kernel_lists_supported_dtypes():
    with pytest.raises(TypeError,
                       match=r"sign: no CPU kernel for dtype bool \(supported: .*float32"):
        oar.sign(tensor([True], "bool"))


def test_nan_propagates_in_maximum_minimum():
    x, y = tensor([np.nan, 1.0]), tensor([0.0, np.nan])
    assert np.isnan(oar.maximum(x, y).numpy()).all()
    assert np.isnan(oar.minimum(x, y).numpy()).all()


# ---- in-place variants ----
@pytest.mark.parametrize("name, fn_np", [("add_", np.add), ("subtract_", np.subtract),
                                         ("multiply_", np.multiply), ("divide_", np.divide)])
def test_inplace_binary(name, fn_np):
    a = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    x = tensor(a, "float64")
    ptr, version = x.data_ptr(), x._version
    out = getattr(x, name)(tensor([2.0, 4.0, 8.0], "float64"))
    assert out is x and x.data_ptr() == ptr and x._version == version + 1
    np.testing.assert_allclose(x.numpy(), fn_np(a, [2.0, 4.0, 8.0]))


def test_inplace_unary_and_operators():
    x = tensor([0.25, 4.0], "float64")
    x.sqrt_()
    np.testing.assert_allclose(x.numpy(), [0.5, 2.0])
    x.scale_(scale=2.0, bias=1.0)
    np.testing.assert_allclose(x.numpy(), [2.0, 5.0])
    y = x
    x += 1  # as in Paddle, a new tensor bound to x: y keeps its values
    x *= 2
    assert y is not x
    np.testing.assert_allclose(x.numpy(), [6.0, 12.0])
    np.testing.assert_allclose(y.numpy(), [2.0, 5.0])
    x.clip_(min=7.0, max=10.0)
    np.testing.assert_allclose(x.numpy(), [7.0, 10.0])


def test_inplace_cannot_broadcast_destination():
    with pytest.raises(ValueError, match="add_"):
        tensor([1.0, 2.0]).add_(tensor([[1.0, 2.0], [3.0, 4.0]]))


# ---- strided inputs: transposed, offset/stepped slices and expanded views
def _views(a):
    t = tensor(a, "float64")
    sl = oar._C.ops.strided_slice_view
    return [(t.transpose([1, 0]), a.T), (sl(t, [0, 1], [1, 1], [4, 6], [2, 2]), a[1:4:2, 1:6:2]),
            (sl(t, [0], [1], [3], []), a[1:3]),  # contiguous but with an offset
            (oar.expand(sl(t, [0], [2], [3], []), [3, 6]), np.broadcast_to(a[2:3], (3, 6)))]


@pytest.mark.parametrize("name, fn_np", [("exp", np.exp), ("abs", np.abs), ("neg", np.negative),
                                         ("tanh", np.tanh)])
def test_unary_on_views(name, fn_np):
    a = np.random.default_rng(11).standard_normal((4, 6))
    for v, ref in _views(a):
        np.testing.assert_allclose(_op(name)(v).numpy(), fn_np(ref), rtol=1e-12)


@pytest.mark.parametrize("name, fn_np", [("add", np.add), ("multiply", np.multiply),
                                         ("maximum", np.maximum)])
def test_binary_on_views(name, fn_np):
    rng = np.random.default_rng(12)
    a, b = rng.standard_normal((4, 6)), rng.standard_normal((4, 6))
    for (v, ref), (w, ref_w) in zip(_views(a), _views(b)):
        np.testing.assert_allclose(_op(name)(v, w).numpy(), fn_np(ref, ref_w))
        np.testing.assert_allclose(_op(name)(v, tensor(b[0, :ref.shape[1]], "float64"))
                                   .numpy(), fn_np(ref, b[0, :ref.shape[1]]))
        np.testing.assert_allclose(oar.where(v > 0, v, w).numpy(), np.where(ref > 0, ref, ref_w))


def _c_pow(x, y):
    """C's pow (its special values: pow(-0, 0.5) = +0, pow(-inf, 0.5) = +inf, ...)."""
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.pow.restype, libm.pow.argtypes = ctypes.c_double, [ctypes.c_double, ctypes.c_double]
    return libm.pow(x, y)


@pytest.mark.parametrize("y", [3.0, -1.0, -2.0, 0.5, -0.5, 1.7, -2.5, 0.0])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_pow_scalar_exponents_and_special_values(y, dtype):
    """pow's forms for the common exponents (x^3, 1/x, 1/x^2, sqrt, 1/sqrt) and SLEEF's pow on
    float lanes for the others: pow's special values (signed zeros, +-inf, NaN, negative
    bases with fractional exponents) as C's pow gives them, and random values on odd sizes
    (vector tails) within float rounding of float64."""
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -2.0, 2.0, 1.0, -1.0, 1e-20, 3e19])
    rng = np.random.default_rng(int(y * 10) + 100)
    for x in (special, rng.uniform(-3, 3, 37), rng.uniform(0.1, 4, 1001)):
        xt = oar.to_tensor(x.astype("float32")).astype(dtype)
        x64 = xt.astype("float64").numpy()
        got = oar.pow(xt, y).astype("float64").numpy()
        # the exponent is rounded to the dtype's compute type (float for the 16-bit ones), as
        # Paddle casts it
        ye = float(np.float32(y)) if dtype != "float64" else y
        ref = np.array([_c_pow(v, ye) for v in x64])  # NumPy's power takes sqrt for 0.5
        if dtype != "float64":  # rounded to the dtype, subnormals included
            with np.errstate(over="ignore"):
                ref = oar.to_tensor(ref.astype("float32")).astype(dtype).astype("float64").numpy()
        # two roundings (the forms, SLEEF's 1 ulp) against one, and a subnormal step
        rtol, atol = {"float32": (3e-7, 1.5e-45), "float64": (1e-15, 0), "float16": (1e-3, 6e-8),
                      "bfloat16": (8e-3, 1e-40)}[dtype]
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"pow(x, {y}) {dtype}")
        zero = ref == 0
        assert np.array_equal(np.signbit(got[zero]), np.signbit(ref[zero])), f"pow(x, {y}) {dtype}: signed zeros"


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_elementwise_pow_special_values_and_lanes(dtype):
    """x ** y with a tensor y (SLEEF's pow on float lanes): every pair of special values as
    C's pow gives them (signed zeros, +-inf, NaN, negative bases, integer and fractional
    exponents), random pairs on odd sizes, and a one-element base or exponent on either side
    (the broadcast lanes), within float rounding of float64."""
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, -2.0, 0.5, -3.0, 1e-20])
    rng = np.random.default_rng(12)
    xs, ys = [v.ravel() for v in np.meshgrid(special, special)]
    pairs = [(xs, ys), (rng.uniform(-3, 3, 1001), np.round(rng.uniform(-4, 4, 1001))),
             (rng.uniform(0.1, 4, 37), rng.uniform(-5, 5, 37)), (np.array([1.7]), rng.uniform(-3, 3, 33)),
             (rng.uniform(0.1, 4, 33), np.array([-2.5]))]
    rtol, atol = {"float32": (3e-7, 1.5e-45), "float64": (1e-15, 0), "float16": (1e-3, 6e-8),
                  "bfloat16": (8e-3, 1e-40)}[dtype]
    for x, y in pairs:
        xt = oar.to_tensor(x.astype("float32")).astype(dtype)
        yt = oar.to_tensor(y.astype("float32")).astype(dtype)
        x64, y64 = xt.astype("float64").numpy(), yt.astype("float64").numpy()
        got = (xt ** yt).astype("float64").numpy()
        ref = np.array([_c_pow(a, b) for a, b in zip(*np.broadcast_arrays(x64, y64))])
        if dtype != "float64":
            with np.errstate(over="ignore"):
                ref = oar.to_tensor(ref.astype("float32")).astype(dtype).astype("float64").numpy()
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"x ** y {dtype}")
        zero = ref == 0
        assert np.array_equal(np.signbit(got[zero]), np.signbit(ref[zero])), f"x ** y {dtype}: signed zeros"


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_round_remainder_atan2_vector_forms(dtype):
    """round (half away from zero), remainder (Python's sign rule on an exact fmod) and atan2
    on their float lanes: ties, signed zeros, inf and NaN, odd sizes, and a one-element
    operand on either side (the broadcast lanes)."""
    rng = np.random.default_rng(11)
    cast = lambda a: oar.to_tensor(np.asarray(a, "float32")).astype(dtype)
    back = lambda t: t.astype("float64").numpy()
    # a float64 reference rounded to the dtype (float64's own results are not rounded)
    rnd = (lambda a: a) if dtype == "float64" else (lambda a: back(cast(a)))
    ties = np.array([0.5, -0.5, 1.5, 2.5, -2.5, 3.5, -0.0, -0.3, 0.3, 0.49999997, np.inf, -np.inf, np.nan,
                     8388609.0, 1e30, -1e30])
    for x in (ties, rng.uniform(-50, 50, 1001)):
        xt = cast(x)
        xs = back(xt)
        got = back(oar.round(xt))
        with np.errstate(invalid="ignore"):  # inf - inf
            ref = np.where(np.isfinite(xs), np.copysign(np.floor(np.abs(xs) + 0.5), xs), xs)
            ref = np.where(np.abs(xs) - np.floor(np.abs(xs)) < 0.5, np.copysign(np.floor(np.abs(xs)), xs), ref)
        ref = rnd(ref)
        np.testing.assert_array_equal(got, ref, err_msg=f"round {dtype}")
        assert np.array_equal(np.signbit(got), np.signbit(ref)), f"round {dtype}: signed zeros"
    a = rng.uniform(-20, 20, 37)
    b = rng.choice([-3.0, -0.7, 0.7, 3.0, 1e-3], 37)
    a[:6] = [5, -5, 5, -5, 7.5, 1e-30]
    b[:6] = [3, 3, -3, -3, np.inf, -1e-20]
    for xa, xb in ((a, b), (a, np.array([0.7])), (np.array([-7.25]), b)):
        at, bt = cast(xa), cast(xb)
        a64, b64 = back(at), back(bt)
        with np.errstate(all="ignore"):
            r = np.fmod(a64, b64)
            ref = np.where((r != 0) & ((r < 0) != (b64 < 0)), r + b64, r)
        np.testing.assert_allclose(back(oar.remainder(at, bt)), rnd(ref), rtol=0, atol=0,
                                   err_msg=f"remainder {dtype} {xa.shape} {xb.shape}")
        tol = {"float32": 3e-7, "float64": 1e-15}.get(dtype, 8e-3)
        np.testing.assert_allclose(back(oar.atan2(at, bt)), np.arctan2(a64, b64), rtol=tol, atol=tol,
                                   err_msg=f"atan2 {dtype} {xa.shape} {xb.shape}")
    q = np.array([0.0, -0.0, 0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan])
    p = np.array([0.0, 0.0, -0.0, -0.0, -np.inf, -np.inf, np.inf, -np.inf, 1.0])
    np.testing.assert_allclose(back(oar.atan2(cast(q), cast(p))), np.arctan2(q, p), rtol=tol, atol=0,
                               equal_nan=True, err_msg=f"atan2 {dtype} signed zeros and infinities")


def test_square_grad_is_one_op_with_its_own_derivatives():
    """square's backward is square_grad (grad_out x 2 in one pass); its gradients (x: 2 grad
    grad_out, grad_out: square_grad again) against finite differences, and its shape check."""
    rng = np.random.default_rng(5)
    a, v = rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
    x = oar.to_tensor(a, stop_gradient=False)
    (g,) = oar.grad([oar.square(x).sum()], [x], create_graph=True)
    np.testing.assert_allclose(g.numpy(), 2 * a, rtol=1e-15)
    (gg,) = oar.grad([(g * oar.to_tensor(v)).sum()], [x])
    np.testing.assert_allclose(gg.numpy(), 2 * v, rtol=1e-15)
    w = oar.to_tensor(rng.standard_normal((3, 5)), stop_gradient=False)
    out = oar._C.ops._square_grad(oar.to_tensor(a), w)
    (gw,) = oar.grad([(out * oar.to_tensor(v)).sum()], [w])
    np.testing.assert_allclose(gw.numpy(), 2 * a * v, rtol=1e-15)
    with pytest.raises(ValueError, match=r"square_grad: grad_out shape \[5\] must equal x shape \[3, 5\]"):
        oar._C.ops._square_grad(oar.ones([3, 5]), oar.ones([5]))

"""The math functions of python/oar/_math_composites.py (compositions of ops) against NumPy in
float64: forward on plain, 0-D, 0-size and broadcast shapes, gradients by central
differences, bad inputs raising errors that name the function."""
import math

import numpy as np
import pytest

import oar
from op_test_utils import (BINARY_SHAPES, UNARY_SHAPES, Gen, OpCase, case_id, check_bad_inputs, check_case, check_forward, check_grad, ints, nonzero, normal, tensor, uniform)

I64 = lambda a: oar.to_tensor(np.asarray(a, dtype=np.int64))  # noqa: E731
F = lambda a: tensor(np.asarray(a, dtype=np.float64), "float64")  # noqa: E731


def const(gen):
    """gen as an input that is not differentiated (a sign source, a target shape)."""
    return Gen(gen.fn, gen.shape, float_input=False)


def np_frexp_m(x):
    return np.frexp(x)[0]


def np_logaddexp(x, y):
    return np.logaddexp(x, y)


def np_tensordot2(x, y):
    return np.tensordot(x, y, axes=2)


def np_trapz(y, axis=-1, dx=1.0):
    return np.trapezoid(y, dx=dx, axis=axis) if hasattr(np, "trapezoid") else np.trapz(y, dx=dx, axis=axis)


def np_cumtrapz(y):
    return np.cumsum((y[..., 1:] + y[..., :-1]) * 0.5, axis=-1)


def np_cdist(x, y, p=2.0):
    d = np.abs(x[..., :, None, :] - y[..., None, :, :])
    return (d ** p).sum(-1) ** (1.0 / p)


def np_multigammaln(x, p):
    from math import lgamma
    f = np.vectorize(lgamma, otypes=[np.float64])
    return p * (p - 1) / 4 * np.log(np.pi) + sum(f(x - j / 2) for j in range(p))


def np_renorm(x, p, axis, max_norm):
    others = tuple(a for a in range(x.ndim) if a != axis)
    n = (np.abs(x) ** p).sum(axis=others, keepdims=True) ** (1 / p)
    return x * np.where(n > max_norm, max_norm / (n + 1e-7), 1.0)


def np_lgamma(x):
    from math import lgamma
    return np.vectorize(lgamma, otypes=[np.float64])(x)


CASES = [
    OpCase("frac", oar.frac, lambda x: x - np.trunc(x), inputs=[normal(scale=3)],
           shapes=UNARY_SHAPES, grad=True, bad_inputs=[((np.ones(3),), TypeError, "'x'")]),
    OpCase("deg2rad", oar.deg2rad, np.deg2rad, inputs=[normal(scale=90)], shapes=UNARY_SHAPES),
    OpCase("rad2deg", oar.rad2deg, np.rad2deg, inputs=[normal()], shapes=UNARY_SHAPES),
    OpCase("hypot", oar.hypot, np.hypot, inputs=[nonzero(), nonzero()], shapes=BINARY_SHAPES,
           bad_inputs=[((F([1.0]), 2.0), TypeError, "'y'")]),
    OpCase("logaddexp", oar.logaddexp, np_logaddexp, inputs=[normal(scale=3), normal(scale=3)],
           shapes=BINARY_SHAPES),
    OpCase("copysign", oar.copysign, np.copysign, inputs=[nonzero(), const(nonzero())],
           shapes=BINARY_SHAPES, grad_shapes=[[(3, 4), (3, 4)]]),
    OpCase("heaviside", oar.heaviside, np.heaviside, inputs=[ints(-2, 3), normal()],
           shapes=BINARY_SHAPES, grad=False),
    OpCase("sinc", oar.sinc, np.sinc, inputs=[normal()], shapes=UNARY_SHAPES),
    OpCase("stanh", lambda x: oar.stanh(x, 0.5, 2.0), lambda x: 2.0 * np.tanh(0.5 * x),
           inputs=[normal()], shapes=UNARY_SHAPES),
    OpCase("logspace", lambda x: oar.logspace(0.0, 2.0, 5, dtype=x.dtype) + x * 0,
           lambda x: np.logspace(0.0, 2.0, 5) + x * 0, inputs=[(5,)], grad=False),
    OpCase("frexp", lambda x: oar.frexp(x)[0], np_frexp_m, inputs=[normal(scale=100)],
           shapes=UNARY_SHAPES, grad=False,
           bad_inputs=[((I64([1, 2]),), TypeError, "floating")]),
    OpCase("multigammaln", lambda x: oar.multigammaln(x, 3), lambda x: np_multigammaln(x, 3),
           inputs=[uniform(2.0, 5.0)], shapes=UNARY_SHAPES, tol={"float32": (1e-4, 1e-5)}),
    OpCase("trapezoid", lambda y: oar.trapezoid(y, dx=0.5), lambda y: np_trapz(y, dx=0.5),
           inputs=[(3, 5)], shapes=[[(3, 5)], [(0, 5)], [(4,)]]),
    OpCase("trapezoid_x", lambda y, x: oar.trapezoid(y, x=x), lambda y, x: np_trapz_x(y, x),
           inputs=[(3, 5), (5,)], op="trapezoid"),
    OpCase("cumulative_trapezoid", oar.cumulative_trapezoid, np_cumtrapz, inputs=[(3, 5)],
           shapes=[[(3, 5)], [(2, 1)]]),
    OpCase("tensordot", oar.tensordot, np_tensordot2, inputs=[(2, 3, 4), (3, 4, 5)],
           shapes=[[(2, 3, 4), (3, 4, 5)], [(0, 3, 4), (3, 4, 2)]],
           bad_inputs=[((F(np.ones((2, 3))), F(np.ones((4, 3)))), ValueError, "same size")]),
    OpCase("tensordot_lists", lambda x, y: oar.tensordot(x, y, axes=[[0, 2], [2, 0]]),
           lambda x, y: np.tensordot(x, y, axes=[[0, 2], [2, 0]]), inputs=[(2, 3, 4), (4, 5, 2)],
           op="tensordot"),
    OpCase("baddbmm", lambda i, x, y: oar.baddbmm(i, x, y, beta=0.5, alpha=2.0),
           lambda i, x, y: 0.5 * i + 2.0 * (x @ y), inputs=[(2, 3, 4), (2, 3, 5), (2, 5, 4)],
           bad_inputs=[((F(np.ones((3, 4))), F(np.ones((3, 5))), F(np.ones((5, 4)))), ValueError,
                        "3-D")]),
    OpCase("renorm", lambda x: oar.renorm(x, 2.0, 0, 1.0), lambda x: np_renorm(x, 2.0, 0, 1.0),
           inputs=[(3, 4)], shapes=[[(3, 4)], [(2, 3, 2)]]),
    OpCase("vander", lambda x: oar.vander(x, 4), lambda x: np.vander(x, 4), inputs=[(5,)],
           shapes=[[(5,)], [(0,)]], grad_tol=(1e-5, 1e-5),
           bad_inputs=[((F(np.ones((2, 2))),), ValueError, "1-D")]),
    OpCase("vander_increasing", lambda x: oar.vander(x, increasing=True),
           lambda x: np.vander(x, increasing=True), inputs=[(4,)], op="vander"),
    OpCase("cdist", oar.cdist, np_cdist, inputs=[(3, 4), (5, 4)],
           shapes=[[(3, 4), (5, 4)], [(2, 3, 4), (2, 2, 4)], [(0, 4), (2, 4)]],
           bad_inputs=[((F(np.ones((2, 3))), F(np.ones((2, 4)))), ValueError, "last dimension")]),
    OpCase("cdist_p1", lambda x, y: oar.cdist(x, y, p=1.0), lambda x, y: np_cdist(x, y, 1.0),
           inputs=[(3, 4), (5, 4)], op="cdist"),
    # |x|^2 + |y|^2 - 2 x y^T through matmul: forced, and past 25 rows by default (batched,
    # broadcast batch dims, 0-size)
    OpCase("cdist_mm", lambda x, y: oar.cdist(x, y, compute_mode="use_mm_for_euclid_dist"), np_cdist,
           inputs=[(3, 4), (5, 4)], shapes=[[(3, 4), (5, 4)], [(2, 3, 4), (1, 2, 4)], [(0, 4), (2, 4)]],
           op="cdist"),
    OpCase("cdist_mm_default", oar.cdist, np_cdist, inputs=[(30, 6), (7, 6)],
           shapes=[[(30, 6), (7, 6)], [(2, 3, 6), (2, 26, 6)]], op="cdist"),
    OpCase("pdist", oar.pdist, lambda x: np_cdist(x, x)[np.triu_indices(x.shape[0], 1)],
           inputs=[(4, 3)], shapes=[[(4, 3)], [(1, 3)]],
           bad_inputs=[((F(np.ones(3)),), ValueError, "2-D")]),
    OpCase("vecdot", oar.vecdot, lambda x, y: (x * y).sum(-1), inputs=[(3, 4), (3, 4)],
           shapes=[[(3, 4), (3, 4)], [(2, 3, 4), (4,)], [(0, 4), (4,)]]),
    OpCase("reduce_as", oar.reduce_as, lambda x, t: x.sum(0, keepdims=False) + t * 0,
           inputs=[(2, 3, 4), const(normal((3, 4)))], grad_shapes=[[(2, 3, 4), (3, 4)]],
           bad_inputs=[((F(np.ones((2, 3))), F(np.ones((4,)))), ValueError, "cannot be reduced")]),
    OpCase("gammaln", oar.gammaln, np_lgamma, inputs=[uniform(0.5, 4.0)], shapes=UNARY_SHAPES),
    OpCase("add_n", lambda x, y: oar.add_n([x, y, x]), lambda x, y: 2 * x + y,
           inputs=[(3, 4), (3, 4)], shapes=[[(3, 4), (3, 4)], [(0, 2), (0, 2)]]),
]


def np_trapz_x(y, x):
    return np.sum((y[..., 1:] + y[..., :-1]) * 0.5 * np.diff(x), axis=-1)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.grad], ids=case_id)
def test_grad(case):
    check_grad(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.bad_inputs], ids=case_id)
def test_bad_inputs(case):
    check_bad_inputs(case)


def test_signbit_and_infinities():
    x = oar.to_tensor([-1.0, -0.0, 0.0, 2.0, float("inf"), -float("inf")], dtype="float64")
    np.testing.assert_array_equal(oar.signbit(x).numpy(), np.signbit(x.numpy()))
    np.testing.assert_array_equal(oar.isposinf(x).numpy(), np.isposinf(x.numpy()))
    np.testing.assert_array_equal(oar.isneginf(x).numpy(), np.isneginf(x.numpy()))
    np.testing.assert_array_equal(oar.signbit(I64([-3, 0, 4])).numpy(), [True, False, False])
    np.testing.assert_array_equal(oar.copysign(F([1.0, 2.0]), -0.0).numpy(), [-1.0, -2.0])


def test_frexp_roundtrip_and_exponent():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(50) * 10.0 ** rng.integers(-5, 6, 50)
    x[:3] = [0.0, 1.0, -0.5]
    m, e = oar.frexp(F(x))
    em, ee = np.frexp(x)
    np.testing.assert_array_equal(m.numpy(), em)
    np.testing.assert_array_equal(e.numpy(), ee.astype(np.float64))
    np.testing.assert_array_equal(oar.ldexp(m, e.astype("int64")).numpy(), x)


@pytest.mark.parametrize("shape_x, shape_y", [((5,), (5,)), ((3, 1), (1, 4)), ((0,), (1,))])
def test_gcd_lcm(shape_x, shape_y):
    rng = np.random.default_rng(1)
    a, b = rng.integers(-40, 40, shape_x), rng.integers(-40, 40, shape_y)
    np.testing.assert_array_equal(oar.gcd(I64(a), I64(b)).numpy(), np.gcd(a, b))
    np.testing.assert_array_equal(oar.lcm(I64(a), I64(b)).numpy(), np.lcm(a, b))
    with pytest.raises(TypeError, match="gcd.*'x'.*float"):
        oar.gcd(F([1.0]), I64([2]))


def test_ldexp_bad_exponent():
    with pytest.raises(TypeError, match="ldexp.*'y'"):
        oar.ldexp(F([1.0]), F([2.0]))
    np.testing.assert_array_equal(oar.ldexp(F([1.5, -2.0]), I64([3, -1])).numpy(), [12.0, -1.0])


def test_isin_isclose_allclose_equal_all():
    rng = np.random.default_rng(2)
    x, t = rng.integers(0, 6, (3, 4)), rng.integers(0, 6, (5,))
    np.testing.assert_array_equal(oar.isin(I64(x), I64(t)).numpy(), np.isin(x, t))
    np.testing.assert_array_equal(oar.isin(I64(x), I64(t), invert=True).numpy(),
                                  np.isin(x, t, invert=True))
    np.testing.assert_array_equal(oar.isin(I64(x), I64(np.zeros(0))).numpy(), np.zeros((3, 4), bool))
    a = np.array([1.0, np.nan, np.inf, 1e-9])
    b = np.array([1.0 + 1e-7, np.nan, np.inf, 0.0])
    np.testing.assert_array_equal(oar.isclose(F(a), F(b)).numpy(), np.isclose(a, b))
    np.testing.assert_array_equal(oar.isclose(F(a), F(b), equal_nan=True).numpy(),
                                  np.isclose(a, b, equal_nan=True))
    assert bool(oar.allclose(F(a), F(b), equal_nan=True)) == np.allclose(a, b, equal_nan=True)
    assert not bool(oar.allclose(F(a), F(b)))
    assert oar.allclose(F(a), F(a), equal_nan=True).shape == []
    with pytest.raises(ValueError, match="isclose.*rtol"):
        oar.isclose(F(a), F(b), rtol=-1.0)
    with pytest.raises(TypeError, match="isclose.*dtype"):
        oar.isclose(F(a), I64([1, 2, 3, 4]))
    assert bool(oar.equal_all(I64(x), I64(x))) and not bool(oar.equal_all(I64(x), I64(x[:1])))


def test_predicates():
    assert oar.is_integer(I64([1])) and not oar.is_integer(F([1.0]))
    assert not oar.is_complex(F([1.0]))
    assert bool(oar.is_empty(F(np.zeros((0, 2))))) and not bool(oar.is_empty(F([1.0])))
    assert oar.isreal(F([1.0, 2.0])).numpy().all()


def test_multiplex_and_histogram_bin_edges():
    a, b = np.arange(6.0).reshape(3, 2), -np.arange(6.0).reshape(3, 2)
    idx = np.array([[1], [0], [1]])
    out = oar.multiplex([F(a), F(b)], I64(idx))
    np.testing.assert_array_equal(out.numpy(), np.where(idx == 1, b, a))
    with pytest.raises(ValueError, match="multiplex: index"):
        oar.multiplex([F(a), F(b)], I64([[2], [0], [0]]))
    x = F([1.0, 2.0, 5.0])
    np.testing.assert_allclose(oar.histogram_bin_edges(x, bins=4).numpy(),
                               np.histogram_bin_edges(x.numpy(), bins=4))
    np.testing.assert_allclose(oar.histogram_bin_edges(x, 2, 0.0, 10.0).numpy(), [0, 5, 10])


def test_random_like_shapes_and_ranges():
    x = F(np.zeros((3, 4)))
    r = oar.rand_like(x)
    assert r.shape == [3, 4] and r.dtype == x.dtype and 0 <= float(r.min()) and float(r.max()) < 1
    assert oar.randn_like(x, dtype="float32").dtype.name == "float32"
    k = oar.randint_like(x, 2, 5)
    assert k.dtype == x.dtype and set(np.unique(k.numpy())) <= {2.0, 3.0, 4.0}
    ln = oar.log_normal(0.0, 1.0, [1000])
    assert float(ln.min()) > 0 and abs(float(oar.log(ln).mean())) < 0.2
    oar.seed(7)
    a = oar.rand_like(x)
    oar.seed(7)
    np.testing.assert_array_equal(a.numpy(), oar.rand_like(x).numpy())


def test_aliases_and_methods():
    x, y = F([1.0, 2.0, 3.0]), F([2.0, 2.0, 2.0])
    for name, ref in (("ge", np.greater_equal), ("gt", np.greater), ("le", np.less_equal),
                      ("lt", np.less), ("ne", np.not_equal), ("eq", np.equal)):
        np.testing.assert_array_equal(getattr(oar, name)(x, y).numpy(), ref(x.numpy(), y.numpy()))
        np.testing.assert_array_equal(getattr(x, name)(y).numpy(), ref(x.numpy(), y.numpy()))
    np.testing.assert_allclose(x.frac().numpy(), [0.0, 0.0, 0.0])
    np.testing.assert_allclose(oar.sgn(F([-2.0, 0.0, 3.0])).numpy(), [-1.0, 0.0, 1.0])
    assert math.isclose(float(oar.logaddexp(F([1000.0]), F([1000.0]))), 1000.0 + math.log(2))


def test_bad_arguments():
    with pytest.raises(ValueError, match="multigammaln: p must"):
        oar.multigammaln(F([3.0]), 0)
    with pytest.raises(ValueError, match="trapezoid: give x or dx"):
        oar.trapezoid(F([1.0, 2.0]), x=F([0.0, 1.0]), dx=1.0)
    with pytest.raises(ValueError, match="renorm: axis 5"):
        oar.renorm(F(np.ones((2, 2))), 2.0, 5, 1.0)
    with pytest.raises(ValueError, match="add_n: inputs.1. has shape"):
        oar.add_n([F([1.0]), F([1.0, 2.0])])
    with pytest.raises(ValueError, match="add_n: inputs must hold"):
        oar.add_n([])


MORE = [
    OpCase("mm", oar.mm, lambda x, y: x @ y, inputs=[(3, 4), (4, 2)],
           shapes=[[(3, 4), (4, 2)], [(0, 4), (4, 2)], [(2, 3, 4), (4, 5)]]),
    OpCase("negative", oar.negative, np.negative, inputs=[(3, 4)], shapes=UNARY_SHAPES),
    OpCase("positive", oar.positive, lambda x: x, inputs=[(3, 4)], shapes=UNARY_SHAPES, grad=False,
           bad_inputs=[((oar.to_tensor([True]),), TypeError, "bool")]),
    OpCase("logit", lambda x: oar.logit(x, 0.1), lambda x: np.log(np.clip(x, 0.1, 0.9) / (1 - np.clip(x, 0.1, 0.9))),
           inputs=[uniform(0.15, 0.85)], shapes=UNARY_SHAPES),
    OpCase("logit[no eps]", oar.logit, lambda x: np.log(x / (1 - x)), inputs=[uniform(0.05, 0.95)],
           shapes=UNARY_SHAPES, op="logit"),
    OpCase("dist", oar.dist, lambda x, y: np.linalg.norm((x - y).ravel()), inputs=[(3, 4), (4,)],
           shapes=[[(3, 4), (4,)], [(2, 1), (1, 3)]], grad_shapes=[[(3, 4), (4,)]]),
    OpCase("dist_p1", lambda x, y: oar.dist(x, y, 1), lambda x, y: np.abs(x - y).sum(),
           inputs=[(3, 4), (3, 4)], op="dist"),
]


@pytest.mark.parametrize("case", MORE, ids=case_id)
def test_more_forward_grad_bad(case):
    check_case(case)


def test_dist_special_norms():
    x, y = F([[1.0, -4.0], [0.0, 2.0]]), F([0.0, 0.0])
    assert float(oar.dist(x, y, 0)) == 3.0
    assert float(oar.dist(x, y, float("inf"))) == 4.0
    assert float(oar.dist(x, y, float("-inf"))) == 0.0


def test_cdist_compute_modes():
    """The three compute modes give the same distances (the matmul form within its rounding),
    and any other mode is a ValueError naming it."""
    rng = np.random.default_rng(3)
    x, y = oar.to_tensor(rng.standard_normal((40, 16))), oar.to_tensor(rng.standard_normal((30, 16)))
    ref = np_cdist(x.numpy(), y.numpy())
    for mode in ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
        np.testing.assert_allclose(oar.cdist(x, y, compute_mode=mode).numpy(), ref, rtol=1e-10, err_msg=mode)
    with pytest.raises(ValueError, match="compute_mode.*'fast'"):
        oar.cdist(x, y, compute_mode="fast")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_logit_as_paddle_ends_clip_and_gradient(dtype):
    """Paddle's logit op (one pass on float lanes): without eps, NaN outside [0, 1] and +-inf
    at the ends; with eps, x clipped to [eps, 1 - eps] first; the gradient 1 / (x (1 - x))
    inside the clip's range, 0 outside it, NaN at a NaN; vector bodies and tails (n = 37)."""
    rng = np.random.default_rng(4)
    x = np.concatenate([[-0.5, 0.0, 1.0, 1.5, np.nan, 1e-3, 0.999], rng.uniform(-0.2, 1.2, 30)])
    xd = tensor(x, dtype).astype("float64").numpy()  # the values the dtype holds
    tol = {"float32": 2e-6, "float64": 1e-13, "float16": 2e-3, "bfloat16": 2e-2}[dtype]
    for eps in (None, 0.0, 0.05):
        e = 0.0 if eps is None else eps
        lo, hi = np.float64(np.array(e, dtype if dtype != "bfloat16" else "float32")), 1.0 - e
        c = np.clip(xd, lo, hi) if e else xd
        with np.errstate(divide="ignore", invalid="ignore"):
            ref = np.log(c / (1 - c))
            if not e:
                ref[(xd < 0) | (xd > 1)] = np.nan
            dref = np.where((xd < lo) | (xd > hi), 0.0, 1.0 / (xd * (1 - xd)))
        t = tensor(x, dtype, stop_gradient=False)
        got = oar.logit(t, eps)
        got.sum().backward()
        g, d = got.astype("float64").numpy(), t.grad.astype("float64").numpy()
        fin = np.isfinite(ref)
        assert np.array_equal(np.isnan(g), np.isnan(ref)) and np.array_equal(g[np.isinf(ref)], ref[np.isinf(ref)])
        np.testing.assert_allclose(g[fin], ref[fin], rtol=tol, atol=tol, err_msg=f"eps={eps}")
        dfin = np.isfinite(dref)
        assert np.array_equal(np.isnan(d), np.isnan(dref)), f"eps={eps}"
        np.testing.assert_allclose(d[dfin], dref[dfin], rtol=tol * 4, err_msg=f"grad eps={eps}")


def test_logit_second_derivative_and_integer_input():
    x = tensor([0.2, 0.45, 0.7, 0.97], "float64", stop_gradient=False)
    (g,) = oar.grad(oar.logit(x, 0.05).sum(), x, create_graph=True)
    (h,) = oar.grad(g.sum(), x)
    v = x.numpy()
    np.testing.assert_allclose(h.numpy(), np.where(v > 0.95, 0.0, (2 * v - 1) / (v * (1 - v)) ** 2), rtol=1e-12)
    out = oar.logit(tensor([0, 1, 2], "int32"))
    assert out.dtype.name == "float32" and np.isneginf(out.numpy()[0]) and np.isinf(out.numpy()[1])
    assert np.isnan(out.numpy()[2])

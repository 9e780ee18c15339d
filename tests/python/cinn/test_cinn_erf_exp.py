"""Note [erf shares exp] (docs/notes/cinn.md): in GELU's backward group, erf(x / sqrt2)
takes the density's exp(-x^2 / 2) instead of computing its own (the loop IR's `erfe`).
The fused backward against the unfused program, eager and float64 NumPy, float32 and
bfloat16, odd, one-element and 0-size shapes, values out to +-30 and inf/nan; the kernel's
loop IR (OAR_CINN_DUMP_DIR) shows the rewrite."""
import glob
import math

import numpy as np
import pytest

import oar

CINN_FLAGS = ["FLAGS_enable_cinn_accuracy_check"]
SHAPES = [(3, 40, 24), (7, 1000), (5, 17), (1, 1), (0, 5)]


def gelu_and_grad_np(z):
    cdf = 0.5 * (1 + np.vectorize(math.erf, otypes=[np.float64])(z / np.sqrt(2)))
    return z * cdf, cdf + z * np.exp(-z * z / 2) / np.sqrt(2 * np.pi)


def f(x, b):
    return (oar.nn.functional.gelu(x + b) * oar.cos(x)).sum()


def grads(fn, xn, bn, dtype):
    x = oar.to_tensor(xn.astype("float32")).astype(dtype)
    b = oar.to_tensor(bn.astype("float32")).astype(dtype)
    x.stop_gradient = b.stop_gradient = False
    fn(x, b).backward()
    return [t.grad.astype("float32").numpy().astype("float64") for t in (x, b)]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("shape", SHAPES)
def test_fused_gelu_backward_equals_unfused_and_float64(shape, dtype, tmp_path, monkeypatch):
    monkeypatch.setenv("OAR_CINN_DUMP_DIR", str(tmp_path))
    rng = np.random.default_rng(sum(shape) + len(dtype))
    xn = rng.standard_normal(shape) * 3
    if xn.size > 4:  # far tails: erf's and the density's exp at +-30 (both saturate)
        xn.flat[:4] = [30.0, -30.0, 9.5, -9.5]
    bn = rng.standard_normal(shape[-1]) * 0.5
    fused = oar.jit.to_static(f, backend="CINN")
    got, plain, eager = (grads(fn, xn, bn, dtype) for fn in (fused, oar.jit.to_static(f), f))
    if dtype == "bfloat16":  # inputs as bf16 holds them; results within bf16 rounding
        xn = oar.to_tensor(xn.astype("float32")).astype("bfloat16").astype("float32").numpy().astype("float64")
        bn = oar.to_tensor(bn.astype("float32")).astype("bfloat16").astype("float32").numpy().astype("float64")
    z = xn + bn
    y, dy = gelu_and_grad_np(z)
    ref = [dy * np.cos(xn) - y * np.sin(xn), (dy * np.cos(xn)).reshape(-1, shape[-1]).sum(axis=0)]
    tol = 1e-5 if dtype == "float32" else 3e-2
    for a, p, e, r in zip(got, plain, eager, ref):
        np.testing.assert_allclose(a, p, rtol=tol, atol=tol * max(1.0, np.abs(r).max(initial=0)))
        np.testing.assert_allclose(a, e, rtol=tol, atol=tol * max(1.0, np.abs(r).max(initial=0)))
        np.testing.assert_allclose(a, r, rtol=tol * 10, atol=tol * 10 * max(1.0, np.abs(r).max(initial=0)))
    if 0 not in shape:
        loops = [open(p).read() for p in glob.glob(str(tmp_path / "*.loop"))]
        assert any("erfe(" in t for t in loops), loops
        assert not any(" erf(" in t and "exp(" in t for t in loops), loops  # the forward: erf alone


def test_inf_and_nan_propagate_as_unfused():
    xn = np.array([[np.inf, -np.inf, np.nan, 0.0, 1.0, -1.0, 40.0, -40.0]])
    bn = np.zeros(8)
    got = grads(oar.jit.to_static(f, backend="CINN"), xn, bn, "float32")[0]
    want = grads(f, xn, bn, "float32")[0]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=1e-6, atol=1e-7)

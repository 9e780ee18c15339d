"""Column reductions other than sums (docs/notes/cinn.md, Note [Column reductions]): max,
min and mean over every axis but the last join their elementwise producers' group and
come out of the same kernel (blocked partial rows combined in block order; a mean's sum
divided by the row count). Each against float64 NumPy and the unfused program, NaN
propagation and 0 rows as the kernels, independence from the thread count; every kernel's
CUDA C is compiled by NVRTC (cinn_env)."""

import numpy as np
import pytest

import oar
from oar import _C



OPS = {"max": (oar.max, np.max), "min": (oar.min, np.min), "mean": (oar.mean, np.mean)}


def model(op):
    f = OPS[op][0]

    def fn(x, w):
        lead = list(range(len(x.shape) - 1))
        y = x * w + 1.0
        return f(y, axis=lead), f(x, axis=lead, keepdim=True), y * 2.0

    return fn


def model_np(op, x, w):
    f = OPS[op][1]
    lead = tuple(range(x.ndim - 1))
    y = x * w + 1.0
    return f(y, axis=lead), f(x, axis=lead, keepdims=True), y * 2.0


def executed(static_fn):
    return str(static_fn.concrete_programs[-1].executed_program)


SHAPES = [(6, 300), (130, 67), (3, 2, 37), (1, 7), (1, 1)]


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype,tol", [("float32", 2e-6), ("float64", 1e-13)])
def test_column_reductions_fuse_and_equal_numpy_and_the_unfused_program(op, shape, dtype, tol):
    rng = np.random.default_rng(len(op))
    xn, wn = rng.standard_normal(shape) * 3, rng.standard_normal(shape[-1])
    x, w = (oar.to_tensor(a.astype(dtype)) for a in (xn, wn))
    fn = model(op)
    fused, plain = oar.jit.to_static(fn, backend="CINN"), oar.jit.to_static(fn)
    got, ref = fused(x, w), plain(x, w)
    want = model_np(op, *(a.astype(dtype).astype("float64") for a in (xn, wn)))
    for a, b, c in zip(got, ref, want):
        assert a.shape == b.shape == list(c.shape)
        np.testing.assert_allclose(a.numpy(), c, rtol=tol * 10, atol=tol * 10)
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=tol * 10, atol=tol * 10)
    text = executed(fused)
    if shape[0] > 1:
        assert "kernel.compiled_kernel" in text, text
        assert f'"pd_op.{op}"' not in text, text
    assert _C.cinn.cache_stats()["fallbacks"] == 0


@pytest.mark.parametrize("op", ["max", "min"])
def test_nan_propagates_like_the_kernel(op):
    xn = np.random.default_rng(5).standard_normal((200, 9))
    xn[150, 3] = np.nan
    xn[3, 5] = np.nan
    x, w = oar.to_tensor(xn.astype("float32")), oar.ones([9])
    fn = model(op)
    got, want = oar.jit.to_static(fn, backend="CINN")(x, w), fn(x, w)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert np.isnan(got[0].numpy()[[3, 5]]).all() and not np.isnan(got[0].numpy()[[0, 1, 2, 4]]).any()


def test_no_rows_mean_is_nan_and_max_raises_like_the_kernel():
    x, w = oar.zeros([0, 5]), oar.ones([5])
    got = oar.jit.to_static(model("mean"), backend="CINN")(x, w)
    assert np.isnan(got[0].numpy()).all() and got[0].shape == [5]
    fused = oar.jit.to_static(model("max"), backend="CINN")
    fused(oar.ones([4, 5]), w)  # compiled for a dynamic-free [4, 5]: 0 rows is another shape
    with pytest.raises(Exception, match="max"):
        model("max")(x, w)
    with pytest.raises(Exception, match="max"):
        fused(x, w)


def test_sum_max_min_mean_of_one_group_in_one_kernel_independent_of_threads():
    def f(x):
        y = oar.exp(x * 0.5)
        return oar.sum(y, axis=0), oar.max(y, axis=0), oar.min(y, axis=0), oar.mean(y, axis=0)

    rng = np.random.default_rng(3)
    x = oar.to_tensor(rng.standard_normal((1000, 40)).astype("float32"))
    fused = oar.jit.to_static(f, backend="CINN")
    old = oar.get_num_threads()
    try:
        oar.set_num_threads(1)
        one = [t.numpy() for t in fused(x)]
        oar.set_num_threads(2)
        two = [t.numpy() for t in fused(x)]
    finally:
        oar.set_num_threads(old)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)
    y = np.exp(x.numpy().astype("float64") * 0.5)
    for a, b in zip(one, (y.sum(0), y.max(0), y.min(0), y.mean(0))):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    text = executed(fused)
    assert text.count("kernel.compiled_kernel") == 1, text
    for op in ("sum", "max", "min", "mean"):
        assert f'"pd_op.{op}"' not in text, text
